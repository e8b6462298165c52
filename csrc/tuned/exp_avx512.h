/* tuned/exp_avx512.h — the AVX-512 vector exps, exp(x) for 16 floats or 8 doubles, and what
 * the loops built on them share: the lane sum in double, the lane masks of a row's end, and the
 * SR_ names (SR_T, SR_VEC, SR_(op), ...) by which softmax_short_rows.h and
 * softmax_masked_step.h are written once for both element types: an includer defines SR_SFX
 * (f32 or f64) around its #include of them. Included by fast_exp.c and, so that the masked
 * softmax's step inlines into its row loop, by softmax_rows.h.
 */
#ifndef MT_EXP_AVX512_H
#define MT_EXP_AVX512_H
#ifdef MT_X86
#include <immintrin.h>
#include "fast_exp.h"

/* exp(x) = 2^n * 2^(j/N) * exp(r), f = n + j/N = round(x N / ln2) / N, r = x - f ln2, with the
 * N values 2^(j/N) held in registers (N = 32 floats in two, N = 16 doubles in two) and picked
 * by a permute, not a gather from memory: |r| <= ln2/(2N), so the polynomial is of degree 2
 * (f32) or 6 (f64) instead of 5 or 11 (fast_exp.h) at the same accuracy. The loops are bound by
 * the two FMA pipes (Zen 4: also max, mul and scalef), and the table takes that count from 11
 * to 8 per vector in float32, from 19 to 12 in float64.
 * 2^n comes from vscalefps/pd, which multiplies by 2^floor(f) = 2^n (no integer subtract, add
 * and shift), and rounds what is below the smallest normal to a subnormal by itself, so no
 * compare selects that range either. Results below FLT_MIN / DBL_MIN are then subnormal,
 * not 0 as in the AVX2 loops (both are within the stated accuracy). Lanes at or below
 * MT_EXP_F32_ZERO_SCALEF, whose exp rounds to +0 (-inf among them, a mask's excluded scores),
 * are set to +0 by scalef's zero mask, not scaled: an underflow to 0 costs an Intel core a
 * microcode assist, as much as a row of exps (in those lanes r may be inf - inf = NaN). */
#define MT_EXP_F32_ZERO_SCALEF (-110.0f)
#define MT_EXP_F64_ZERO_SCALEF (-750.0)

/* 2^(j/32), j = 0 .. 31, correctly rounded */
static const float MT_EXP2_32THS_F32[32] __attribute__((aligned(64))) = {
    0x1.0p+0f, 0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f,
    0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f, 0x1.29e9ep+0f,
    0x1.306fep+0f, 0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f,
    0x1.4bfdaep+0f, 0x1.5342b6p+0f, 0x1.5ab07ep+0f, 0x1.6247ecp+0f,
    0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f,
    0x1.8ace54p+0f, 0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f,
    0x1.ae89fap+0f, 0x1.b7f77p+0f, 0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f};
/* exp(r) ~ 1 + r (C1 + C2 r) on |r| <= ln2/64: the minimax relative fit (Lawson's iteration,
 * mpmath), max relative error 5.3e-8 before rounding. */
#define MT_EXP32_F32_C1 0x1.0000f6p+0f
#define MT_EXP32_F32_C2 0x1.000026p-1f

/* 2^(j/16), j = 0 .. 15, correctly rounded */
static const double MT_EXP2_16THS_F64[16] __attribute__((aligned(64))) = {
    0x1.0p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0,
    0x1.2387a6e756238p+0, 0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0,
    0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0, 0x1.6a09e667f3bcdp+0,
    0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f09p+0,
    0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0,
    0x1.ea4afa2a490dap+0};
/* exp(r) ~ 1 + r (C[0] + C[1] r + ... + C[5] r^5) on |r| <= ln2/32: as above, max relative
 * error 7e-18 before rounding. */
static const double MT_EXP16_F64_C[6] = {
    0x1.000000000000ap+0, 0x1.fffffffffffcdp-2, 0x1.5555555405bb6p-3,
    0x1.555555578f45ep-5, 0x1.11126eb58b82dp-7, 0x1.6c15fdd6a575bp-10};

/* The tables, loaded once per loop into registers (two each) */
typedef struct { __m512 lo, hi; } mt_exp_table_f32;
typedef struct { __m512d lo, hi; } mt_exp_table_f64;

__attribute__((target("avx512f"))) static inline mt_exp_table_f32 exp_table_f32(void) {
    mt_exp_table_f32 t = {_mm512_load_ps(MT_EXP2_32THS_F32), _mm512_load_ps(MT_EXP2_32THS_F32 + 16)};
    return t;
}

__attribute__((target("avx512f"))) static inline mt_exp_table_f64 exp_table_f64(void) {
    mt_exp_table_f64 t = {_mm512_load_pd(MT_EXP2_16THS_F64), _mm512_load_pd(MT_EXP2_16THS_F64 + 8)};
    return t;
}

__attribute__((target("avx512f"))) static inline __m512 exp16_avx512(__m512 x,
                                                                     mt_exp_table_f32 tab) {
    /* Adding 1.5*2^18 rounds x/ln2 to a multiple of 1/32 (the magic's ulp): f = n + j/32, and
     * the low 5 bits of `shifted` hold j, which the permute reads as the table index. */
    const __m512 magic = _mm512_set1_ps(393216.0f);
    /* NaN is not at or below the bound: it passes through */
    const __mmask16 above = _mm512_cmp_ps_mask(x, _mm512_set1_ps(MT_EXP_F32_ZERO_SCALEF),
                                               _CMP_NLE_UQ);
    __m512 shifted = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 f = _mm512_sub_ps(shifted, magic);
    /* f has at most 13 significant bits and ln2's high part 9: f * HI is exact */
    __m512 r = _mm512_fnmadd_ps(f, _mm512_set1_ps(MT_LN2_F32_HI), x);
    r = _mm512_fnmadd_ps(f, _mm512_set1_ps(MT_LN2_F32_LO), r);
    __m512 t = _mm512_permutex2var_ps(tab.lo, _mm512_castps_si512(shifted), tab.hi);
    /* t exp(r) = t + (t r)(C1 + C2 r): t r is ready before the polynomial */
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(MT_EXP32_F32_C2), r, _mm512_set1_ps(MT_EXP32_F32_C1));
    __m512 e = _mm512_fmadd_ps(_mm512_mul_ps(t, r), p, t);
    return _mm512_maskz_scalef_ps(above, e, f); /* e * 2^floor(f) = e * 2^n */
}

__attribute__((target("avx512f"))) static inline __m512d exp8_avx512(__m512d x,
                                                                     mt_exp_table_f64 tab) {
    /* as exp16_avx512, with 1.5*2^48: f = n + j/16, j in the low 4 bits */
    const __m512d magic = _mm512_set1_pd(422212465065984.0);
    const __mmask8 above = _mm512_cmp_pd_mask(x, _mm512_set1_pd(MT_EXP_F64_ZERO_SCALEF),
                                              _CMP_NLE_UQ);
    __m512d shifted = _mm512_fmadd_pd(x, _mm512_set1_pd(1.4426950408889634), magic);
    __m512d f = _mm512_sub_pd(shifted, magic);
    __m512d r = _mm512_fnmadd_pd(f, _mm512_set1_pd(6.93145751953125e-1), x);
    r = _mm512_fnmadd_pd(f, _mm512_set1_pd(1.42860682030941723212e-6), r);
    __m512d t = _mm512_permutex2var_pd(tab.lo, _mm512_castpd_si512(shifted), tab.hi);
#define C(i) _mm512_set1_pd(MT_EXP16_F64_C[i])
    __m512d p = _mm512_fmadd_pd(C(5), r, C(4));
    for (int i = 3; i >= 0; --i) p = _mm512_fmadd_pd(p, r, C(i));
#undef C
    __m512d e = _mm512_fmadd_pd(_mm512_mul_pd(t, r), p, t);
    return _mm512_maskz_scalef_pd(above, e, f);
}

/* Lanes 8-15 of v */
__attribute__((target("avx512f"))) MT_INLINE static __m256 upper_half_f32(__m512 v) {
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* The sum of v's 16 lanes in double, as a tree: the lanes widened to two vectors of 8 doubles,
 * added, then halved three times. (A chain of 16 dependent scalar adds cost more than the exps
 * of a 32-column attention row.) */
__attribute__((target("avx512f"))) MT_INLINE static double lanes_total_f32(__m512 v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(upper_half_f32(v));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* x * scale - shift: one subtract where scale is 1 (the same bits: the FMA's product is exact),
 * which runs beside the FMA pipes instead of on them. ONE is a constant after inlining. */
#define MT_SCALE_SHIFT_512(suffix, v, ONE, vs, vh) \
    ((ONE) ? _mm512_sub_##suffix(v, vh) : _mm512_fmsub_##suffix(v, vs, vh))

/* The lanes of a vector holding elements [0, count) of a row: all lanes for count >= the
 * vector's, none for count <= 0. */
__attribute__((target("avx512f"))) MT_INLINE static __mmask16 lanes_below_avx512_f32(
    int64_t count) {
    if (count >= 16) return (__mmask16)0xffff;
    return count <= 0 ? (__mmask16)0 : (__mmask16)((1u << count) - 1);
}
__attribute__((target("avx512f"))) MT_INLINE static __mmask8 lanes_below_avx512_f64(
    int64_t count) {
    if (count >= 8) return (__mmask8)0xff;
    return count <= 0 ? (__mmask8)0 : (__mmask8)((1u << count) - 1);
}

/* The SR_ names for element type SR_SFX: SR_T, its __m512 type SR_VEC, SR_LANES, SR_MASK (its
 * __mmask type), SR_(op) (the _mm512_ op of the type), SR_EXP(v) (the table exp of v with
 * table `tab`), SR_TABLE_TYPE and SR_TABLE() (that table's type and loader), SR_TOTAL(v) (the
 * sum of v's lanes in double), SR_ROW_REGISTERS (vectors of row data the exp leaves room for) */
#define SR_T MT_CAT(SR_TYPE, SR_SFX)
#define SR_VEC MT_CAT(SR_VECTOR, SR_SFX)
#define SR_LANES MT_CAT(SR_LANE_COUNT, SR_SFX)
#define SR_MASK MT_CAT(SR_MASK_TYPE, SR_SFX)
#define SR_(op) MT_CAT(_mm512_##op, MT_CAT(SR_OP, SR_SFX))
#define SR_EXP(v) MT_CAT(SR_EXP_OF, SR_SFX)(v, tab)
#define SR_TABLE_TYPE MT_CAT(mt_exp_table, SR_SFX)
#define SR_TABLE MT_CAT(exp_table, SR_SFX)
#define SR_TOTAL(v) MT_CAT(SR_TOTAL_OF, SR_SFX)(v)
#define SR_ROW_REGISTERS MT_CAT(SR_REGISTERS_FOR, SR_SFX)
#define SR_TYPE_f32 float
#define SR_TYPE_f64 double
#define SR_VECTOR_f32 __m512
#define SR_VECTOR_f64 __m512d
#define SR_LANE_COUNT_f32 16
#define SR_LANE_COUNT_f64 8
#define SR_MASK_TYPE_f32 __mmask16
#define SR_MASK_TYPE_f64 __mmask8
#define SR_OP_f32 ps
#define SR_OP_f64 pd
#define SR_EXP_OF_f32 exp16_avx512
#define SR_EXP_OF_f64 exp8_avx512
#define SR_TOTAL_OF_f32 lanes_total_f32
#define SR_TOTAL_OF_f64 _mm512_reduce_add_pd
#define SR_REGISTERS_FOR_f32 16
#define SR_REGISTERS_FOR_f64 8

#endif /* MT_X86 */
#endif /* MT_EXP_AVX512_H */
