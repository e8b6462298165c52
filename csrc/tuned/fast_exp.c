/* fast_exp.c — out[j] = exp(x[j]*scale - shift_hi - shift_lo) over an array, in AVX-512,
 * AVX2+FMA (intrinsics) or portable C: one set of functions per ISA level, each row-kernel
 * copy calling its own level's.
 *
 * This is the one loop the tuned row kernels (softmax, log-softmax, cross-entropy) spend their
 * time in. GCC does not reliably vectorize the branch-free scalar exp of fast_exp.h when it is
 * inlined into bigger loops, so the vector versions are written out here; the algorithm and
 * constants are the same (see fast_exp.h). The shift comes in two parts so that callers with a
 * double log-sum-exp (cross-entropy near |x| ~ 1e4) keep its precision in float32.
 */
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#include "exp_avx2.h"

#ifdef MT_X86
#include <immintrin.h>
#endif

/* Every variant prefetches ahead[0 .. n) (the caller's next row; NULL for none) along the way,
 * so that the row's next pass over memory overlaps this one's arithmetic; the portable ones
 * leave that to the hardware. */
void exp_shifted_portable_f32(const float *x, float *out, int64_t n, float scale,
                                    float hi, float lo, const float *ahead) {
    (void)ahead;
    for (int64_t j = 0; j < n; ++j) out[j] = mt_exp_f32(x[j] * scale - hi - lo);
}

void exp_shifted_portable_f64(const double *x, double *out, int64_t n, double scale,
                                    double hi, double lo, const double *ahead) {
    (void)ahead;
    for (int64_t j = 0; j < n; ++j) out[j] = mt_exp_f64(x[j] * scale - hi - lo);
}

double exp_shifted_sum_portable_f32(const float *x, float *out, int64_t n, float scale,
                                          float shift, const float *ahead) {
    (void)ahead;
    /* in double: one float accumulator over a block of ~1000 terms drifts by tens of ulps */
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += out[j] = mt_exp_f32(x[j] * scale - shift);
    return s;
}

double exp_shifted_sum_portable_f64(const double *x, double *out, int64_t n,
                                          double scale, double shift, const double *ahead) {
    (void)ahead;
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += out[j] = mt_exp_f64(x[j] * scale - shift);
    return s;
}

#ifdef MT_X86
/* ---------------- AVX2 + FMA ---------------- */
__attribute__((target("avx2,fma"))) void exp_shifted_avx2_f32(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead) {
    const __m256 vs = _mm256_set1_ps(scale), vh = _mm256_set1_ps(hi), vl = _mm256_set1_ps(lo);
    int64_t j = 0;
    /* One vector per iteration: the out-of-order core overlaps iterations by itself, and an
     * unrolled body needs more than the 16 ymm registers (constants get spilled). So `ahead`
     * gets two prefetches per cache line: the second finds the line on its way, almost free.
     * (GCC takes the loop-invariant `if (ahead)` out of the loop.) (The tail stays scalar: a
     * -inf padded vector measured slower, its buffer round trip stalls.) */
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256 a = _mm256_sub_ps(_mm256_fmsub_ps(_mm256_loadu_ps(x + j), vs, vh), vl);
        _mm256_storeu_ps(out + j, exp8_avx2(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f32(x[j] * scale - hi - lo);
}

__attribute__((target("avx2,fma"))) double exp_shifted_sum_avx2_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead) {
    const __m256 vs = _mm256_set1_ps(scale), vh = _mm256_set1_ps(shift);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256 e = exp8_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(x + j), vs, vh));
        _mm256_storeu_ps(out + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    double s = 0;
    for (int l = 0; l < 8; ++l) s += lanes[l];
    for (; j < n; ++j) s += out[j] = mt_exp_f32(x[j] * scale - shift);
    return s;
}

__attribute__((target("avx2,fma"))) void exp_shifted_avx2_f64(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead) {
    const __m256d vs = _mm256_set1_pd(scale), vh = _mm256_set1_pd(hi), vl = _mm256_set1_pd(lo);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256d a = _mm256_sub_pd(_mm256_fmsub_pd(_mm256_loadu_pd(x + j), vs, vh), vl);
        _mm256_storeu_pd(out + j, exp4_avx2(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f64(x[j] * scale - hi - lo);
}

__attribute__((target("avx2,fma"))) double exp_shifted_sum_avx2_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead) {
    const __m256d vs = _mm256_set1_pd(scale), vh = _mm256_set1_pd(shift);
    __m256d acc = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256d e = exp4_avx2(_mm256_fmsub_pd(_mm256_loadu_pd(x + j), vs, vh));
        _mm256_storeu_pd(out + j, e);
        acc = _mm256_add_pd(acc, e);
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, acc);
    double s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; j < n; ++j) s += out[j] = mt_exp_f64(x[j] * scale - shift);
    return s;
}

/* ---------------- AVX-512F ---------------- */
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

/* The sum of v's 16 lanes in double, as a tree: the lanes widened to two vectors of 8 doubles,
 * added, then halved three times. (A chain of 16 dependent scalar adds cost more than the exps
 * of a 32-column attention row.) */
__attribute__((target("avx512f"))) MT_INLINE static double lanes_total_f32(__m512 v) {
    const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    const __m512d hi = _mm512_cvtps_pd(
        _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

/* x * scale - shift: one subtract where scale is 1 (the same bits: the FMA's product is exact),
 * which runs beside the FMA pipes instead of on them. ONE is a constant after inlining. */
#define MT_SCALE_SHIFT_512(suffix, v, ONE, vs, vh) \
    ((ONE) ? _mm512_sub_##suffix(v, vh) : _mm512_fmsub_##suffix(v, vs, vh))

__attribute__((target("avx512f"))) MT_INLINE static void exp_shifted_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead,
    const int scale_is_one) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(hi), vl = _mm512_set1_ps(lo);
    const mt_exp_table_f32 tab = exp_table_f32();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 a = _mm512_sub_ps(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), vl);
        _mm512_storeu_ps(out + j, exp16_avx512(a, tab));
    }
    if (j < n) { /* the tail as one masked vector: up to 15 scalar exps cost more than it */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 a = _mm512_sub_ps(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), vl);
        _mm512_mask_storeu_ps(out + j, k, exp16_avx512(a, tab));
    }
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead) {
    if (scale == 1.0f) exp_shifted_avx512_f32_loop(x, out, n, scale, hi, lo, ahead, 1);
    else exp_shifted_avx512_f32_loop(x, out, n, scale, hi, lo, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static void exp_shifted_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead, const int scale_is_one) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(hi), vl = _mm512_set1_pd(lo);
    const mt_exp_table_f64 tab = exp_table_f64();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d a = _mm512_sub_pd(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), vl);
        _mm512_storeu_pd(out + j, exp8_avx512(a, tab));
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d a = _mm512_sub_pd(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), vl);
        _mm512_mask_storeu_pd(out + j, k, exp8_avx512(a, tab));
    }
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead) {
    if (scale == 1.0) exp_shifted_avx512_f64_loop(x, out, n, scale, hi, lo, ahead, 1);
    else exp_shifted_avx512_f64_loop(x, out, n, scale, hi, lo, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_shifted_sum_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead,
    const int scale_is_one) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(shift);
    const mt_exp_table_f32 tab = exp_table_f32();
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        _mm512_storeu_ps(out + j, e);
        acc = _mm512_add_ps(acc, e);
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop; the lanes past n add nothing */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        _mm512_mask_storeu_ps(out + j, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
    }
    return lanes_total_f32(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead) {
    if (scale == 1.0f) return exp_shifted_sum_avx512_f32_loop(x, out, n, scale, shift, ahead, 1);
    return exp_shifted_sum_avx512_f32_loop(x, out, n, scale, shift, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_shifted_sum_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead,
    const int scale_is_one) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(shift);
    const mt_exp_table_f64 tab = exp_table_f64();
    __m512d acc = _mm512_setzero_pd();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        _mm512_storeu_pd(out + j, e);
        acc = _mm512_add_pd(acc, e);
    }
    if (j < n) { /* as exp_shifted_sum_avx512_f32_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        _mm512_mask_storeu_pd(out + j, k, e);
        acc = _mm512_mask_add_pd(acc, k, acc, e);
    }
    return _mm512_reduce_add_pd(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead) {
    if (scale == 1.0) return exp_shifted_sum_avx512_f64_loop(x, out, n, scale, shift, ahead, 1);
    return exp_shifted_sum_avx512_f64_loop(x, out, n, scale, shift, ahead, 0);
}

/* exp_shifted_sum, pipelined across rows: besides out[j] = exp(x[j]*scale - shift) and their
 * sum, the same loop takes the max of the next row (`next`, or NULL) into *next_max (NaN
 * skipped, as row_max), finishes the previous row (`prev`: see mt_row_finish in fast_exp.h),
 * and prefetches `ahead` (the row after next, or NULL), whose max the next row's loop loads,
 * and `ahead_out` for writing (the next row's output, or NULL): rows from DRAM keep more misses
 * in flight (float32 softmax 4096x1000, 1 thread: 20 -> 28 GB/s with it). Both go to L1, or
 * to L2 only where `to_l2` (row_ops.h: MT_AHEAD_TO_L2): rows streamed from beyond L2 then
 * stop evicting the lines that the loop is still reading and writing in L1.
 * The exp keeps the FMA pipes busy while loads and stores are idle, so a row's max pass and
 * its finishing pass (a zmm store every 2 cycles on Zen 4) ride along for free: a softmax or
 * log-softmax row costs one pass instead of three. ONE (scale is 1), HAS_NEXT and FINISH (0:
 * none, 1: scale, 2: log-softmax's) are constants after inlining. out NULL: the exps are only
 * summed (a log-sum-exp's row from cache, where their stores were a pass of their own). */

__attribute__((target("avx512f"))) MT_INLINE static __m512 finish_f32(
    __m512 y, __m512 x, __m512 factor, __m512 shift, __m512 hi, __m512 lo, const int finish) {
    if (finish == 1) return _mm512_mul_ps(y, factor);
    return _mm512_sub_ps(_mm512_sub_ps(_mm512_sub_ps(x, shift), hi), lo);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_sum_pipelined_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float shift, const float *next, float *next_max,
    const mt_row_finish_f32 *prev, const float *ahead, float *ahead_out, const int to_l2,
    const int scale_is_one, const int has_next, const int finish) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(shift);
    float *py = finish ? prev->y : NULL;
    const float *px = finish == 2 ? prev->x : NULL;
    const __m512 pf = _mm512_set1_ps(finish ? prev->factor : 0), ps = _mm512_set1_ps(finish ? prev->shift : 0);
    const __m512 phi = _mm512_set1_ps(finish ? prev->hi : 0), plo = _mm512_set1_ps(finish ? prev->lo : 0);
    const mt_exp_table_f32 tab = exp_table_f32();
    __m512 acc = _mm512_setzero_ps(), m = _mm512_set1_ps(has_next ? *next_max : 0);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        MT_PREFETCH_AHEAD(ahead + j, ahead_out + j, ahead, ahead_out, to_l2);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        /* (the previous row before out: its y[j] lies n elements below out[j], a multiple of
         * 4 KiB for 1024 floats, and a load after the store would wait on it: see
         * MT_ALIAS_WINDOW) */
        if (finish) {
            __m512 pyv = finish == 1 ? _mm512_loadu_ps(py + j) : vs;
            __m512 pxv = finish == 2 ? _mm512_loadu_ps(px + j) : vs;
            _mm512_storeu_ps(py + j, finish_f32(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_storeu_ps(out + j, e);
        acc = _mm512_add_ps(acc, e);
        /* max(v, m) is m where v is NaN: NaN skipped */
        if (has_next) m = _mm512_max_ps(_mm512_loadu_ps(next + j), m);
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        if (finish) {
            __m512 pyv = finish == 1 ? _mm512_maskz_loadu_ps(k, py + j) : vs;
            __m512 pxv = finish == 2 ? _mm512_maskz_loadu_ps(k, px + j) : vs;
            _mm512_mask_storeu_ps(py + j, k, finish_f32(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_mask_storeu_ps(out + j, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
        if (has_next) m = _mm512_mask_max_ps(m, k, _mm512_maskz_loadu_ps(k, next + j), m);
    }
    if (has_next) *next_max = _mm512_reduce_max_ps(m);
    return lanes_total_f32(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_pipelined_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *next, float *next_max,
    const mt_row_finish_f32 *prev, const float *ahead, float *ahead_out, int to_l2) {
    const int finish = !prev || !prev->y ? 0 : prev->x ? 2 : 1;
#define MT_LOOP(TO_L2, ONE, NEXT, FINISH)                                               \
    return exp_sum_pipelined_avx512_f32_loop(x, out, n, scale, shift, next, next_max, prev, \
                                             ahead, ahead_out, TO_L2, ONE, NEXT, FINISH)
    MT_PIPELINED_DISPATCH(MT_LOOP, scale, next, finish, to_l2);
#undef MT_LOOP
}

__attribute__((target("avx512f"))) MT_INLINE static __m512d finish_f64(
    __m512d y, __m512d x, __m512d factor, __m512d shift, __m512d hi, __m512d lo, const int finish) {
    if (finish == 1) return _mm512_mul_pd(y, factor);
    return _mm512_sub_pd(_mm512_sub_pd(_mm512_sub_pd(x, shift), hi), lo);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_sum_pipelined_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double shift, const double *next, double *next_max,
    const mt_row_finish_f64 *prev, const double *ahead, double *ahead_out, const int to_l2,
    const int scale_is_one, const int has_next, const int finish) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(shift);
    double *py = finish ? prev->y : NULL;
    const double *px = finish == 2 ? prev->x : NULL;
    const __m512d pf = _mm512_set1_pd(finish ? prev->factor : 0), ps = _mm512_set1_pd(finish ? prev->shift : 0);
    const __m512d phi = _mm512_set1_pd(finish ? prev->hi : 0), plo = _mm512_set1_pd(finish ? prev->lo : 0);
    const mt_exp_table_f64 tab = exp_table_f64();
    __m512d acc = _mm512_setzero_pd(), m = _mm512_set1_pd(has_next ? *next_max : 0);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        MT_PREFETCH_AHEAD(ahead + j, ahead_out + j, ahead, ahead_out, to_l2);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        /* (the previous row before out: its y[j] lies n elements below out[j], a multiple of
         * 4 KiB for 1024 floats, and a load after the store would wait on it: see
         * MT_ALIAS_WINDOW) */
        if (finish) {
            __m512d pyv = finish == 1 ? _mm512_loadu_pd(py + j) : vs;
            __m512d pxv = finish == 2 ? _mm512_loadu_pd(px + j) : vs;
            _mm512_storeu_pd(py + j, finish_f64(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_storeu_pd(out + j, e);
        acc = _mm512_add_pd(acc, e);
        /* max(v, m) is m where v is NaN: NaN skipped */
        if (has_next) m = _mm512_max_pd(_mm512_loadu_pd(next + j), m);
    }
    if (j < n) { /* as exp_shifted_avx512_f64_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        if (finish) {
            __m512d pyv = finish == 1 ? _mm512_maskz_loadu_pd(k, py + j) : vs;
            __m512d pxv = finish == 2 ? _mm512_maskz_loadu_pd(k, px + j) : vs;
            _mm512_mask_storeu_pd(py + j, k, finish_f64(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_mask_storeu_pd(out + j, k, e);
        acc = _mm512_mask_add_pd(acc, k, acc, e);
        if (has_next) m = _mm512_mask_max_pd(m, k, _mm512_maskz_loadu_pd(k, next + j), m);
    }
    if (has_next) *next_max = _mm512_reduce_max_pd(m);
    return _mm512_reduce_add_pd(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_pipelined_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *next, double *next_max,
    const mt_row_finish_f64 *prev, const double *ahead, double *ahead_out, int to_l2) {
    const int finish = !prev || !prev->y ? 0 : prev->x ? 2 : 1;
#define MT_LOOP(TO_L2, ONE, NEXT, FINISH)                                               \
    return exp_sum_pipelined_avx512_f64_loop(x, out, n, scale, shift, next, next_max, prev, \
                                             ahead, ahead_out, TO_L2, ONE, NEXT, FINISH)
    MT_PIPELINED_DISPATCH(MT_LOOP, scale, next, finish, to_l2);
#undef MT_LOOP
}

/* out[j] = add[j] + mul * exp(x[j] - hi - lo) (add_const in place of add[j] where add is NULL),
 * prefetching ahead[0 .. n) meanwhile: a backward's exp and its combination in one loop
 * (log-softmax: dy - sum(dy) exp(y); cross-entropy: g exp(x - lse) - g eps/C), where a second
 * pass over the row would store every element twice. HAS_ADD is a constant after inlining. */
__attribute__((target("avx512f"))) MT_INLINE static void exp_axpy_avx512_f32_loop(
    const float *x, float *out, int64_t n, float hi, float lo, float mul, const float *add,
    float add_const, const float *ahead, const int has_add) {
    const __m512 vh = _mm512_set1_ps(hi), vl = _mm512_set1_ps(lo), vm = _mm512_set1_ps(mul);
    const __m512 vc = _mm512_set1_ps(add_const);
    const mt_exp_table_f32 tab = exp_table_f32();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 a = _mm512_sub_ps(_mm512_sub_ps(_mm512_loadu_ps(x + j), vh), vl);
        __m512 b = has_add ? _mm512_loadu_ps(add + j) : vc;
        _mm512_storeu_ps(out + j, _mm512_fmadd_ps(exp16_avx512(a, tab), vm, b));
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 a = _mm512_sub_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + j), vh), vl);
        __m512 b = has_add ? _mm512_maskz_loadu_ps(k, add + j) : vc;
        _mm512_mask_storeu_ps(out + j, k, _mm512_fmadd_ps(exp16_avx512(a, tab), vm, b));
    }
}

__attribute__((target("avx512f"))) void exp_axpy_avx512_f32(const float *x, float *out,
                                                            int64_t n, float hi, float lo,
                                                            float mul, const float *add,
                                                            float add_const, const float *ahead) {
    if (add) exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 1);
    else exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static void exp_axpy_avx512_f64_loop(
    const double *x, double *out, int64_t n, double hi, double lo, double mul,
    const double *add, double add_const, const double *ahead, const int has_add) {
    const __m512d vh = _mm512_set1_pd(hi), vl = _mm512_set1_pd(lo), vm = _mm512_set1_pd(mul);
    const __m512d vc = _mm512_set1_pd(add_const);
    const mt_exp_table_f64 tab = exp_table_f64();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d a = _mm512_sub_pd(_mm512_sub_pd(_mm512_loadu_pd(x + j), vh), vl);
        __m512d b = has_add ? _mm512_loadu_pd(add + j) : vc;
        _mm512_storeu_pd(out + j, _mm512_fmadd_pd(exp8_avx512(a, tab), vm, b));
    }
    if (j < n) {
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d a = _mm512_sub_pd(_mm512_sub_pd(_mm512_maskz_loadu_pd(k, x + j), vh), vl);
        __m512d b = has_add ? _mm512_maskz_loadu_pd(k, add + j) : vc;
        _mm512_mask_storeu_pd(out + j, k, _mm512_fmadd_pd(exp8_avx512(a, tab), vm, b));
    }
}

__attribute__((target("avx512f"))) void exp_axpy_avx512_f64(const double *x, double *out,
                                                            int64_t n, double hi, double lo,
                                                            double mul, const double *add,
                                                            double add_const,
                                                            const double *ahead) {
    if (add) exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 1);
    else exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 0);
}

/* softmax rows held in registers whole (softmax_short_rows.h), for each element type */
#define SR_T float
#define SR_SFX f32
#define SR_LANES 16
#define SR_MASK __mmask16
#define SR_(op) _mm512_##op##_ps
#define SR_VEC __m512
#define SR_TABLE_TYPE mt_exp_table_f32
#define SR_TABLE exp_table_f32
#define SR_EXP(v) exp16_avx512(v, tab)
#define SR_TOTAL(v) lanes_total_f32(v)
#define SR_ROW_REGISTERS 16
#include "softmax_short_rows.h"
#include "softmax_masked_step.h"
#undef SR_T
#undef SR_SFX
#undef SR_LANES
#undef SR_MASK
#undef SR_
#undef SR_VEC
#undef SR_TABLE
#undef SR_TABLE_TYPE
#undef SR_EXP
#undef SR_TOTAL
#undef SR_ROW_REGISTERS

#define SR_T double
#define SR_SFX f64
#define SR_LANES 8
#define SR_MASK __mmask8
#define SR_(op) _mm512_##op##_pd
#define SR_VEC __m512d
#define SR_TABLE_TYPE mt_exp_table_f64
#define SR_TABLE exp_table_f64
#define SR_EXP(v) exp8_avx512(v, tab)
#define SR_TOTAL(v) _mm512_reduce_add_pd(v)
#define SR_ROW_REGISTERS 8
#include "softmax_short_rows.h"
#include "softmax_masked_step.h"
#endif /* MT_X86 */
