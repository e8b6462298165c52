/* tuned/exp_avx2.h — the AVX2+FMA vector exps, exp(x) for 8 floats or 4 doubles: fast_exp.h's
 * algorithm and constants in intrinsics, inlined into the AVX2 loops of fast_exp.c,
 * row_pipeline_avx2.c and softmax_short_rows_avx2.c; and the lane sum and max those rows end on.
 */
#ifndef MT_EXP_AVX2_H
#define MT_EXP_AVX2_H
#ifdef MT_X86
#include <immintrin.h>
#include "fast_exp.h"

__attribute__((target("avx2,fma"))) static inline __m256 exp8_avx2(__m256 x) {
    /* Clamping at MT_EXP_F32_ZERO (not ln FLT_MIN) makes k = -127, whose biased exponent bits
     * k + 127 are all zero: exp(-inf) and every x below come out exactly 0 without a compare
     * and a mask. There is no upper clamp: every caller passes x - max <= 0 (see fast_exp.h).
     * NaN passes through max (it returns its second operand, x, when that is NaN). */
    __m256 xc = _mm256_max_ps(_mm256_set1_ps(MT_EXP_F32_ZERO), x);
    /* Adding 1.5*2^23 rounds to an integer held in the low mantissa bits; adding 127 more puts
     * the biased exponent k + 127 there, so shifting the bits left by 23 builds 2^k directly
     * (the magic's own bits shift out). */
    const __m256 magic = _mm256_set1_ps(12582912.0f + 127.0f);
    __m256 shifted = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
    __m256 k = _mm256_sub_ps(shifted, magic);
    __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(MT_LN2_F32_HI), xc);
    r = _mm256_fnmadd_ps(k, _mm256_set1_ps(MT_LN2_F32_LO), r);
    /* exp(r) = 1 + r p(r), p of degree 4 by Horner (MT_EXP_F32_C*, fast_exp.h). The result is
     * s + (r s) p with s = 2^k: r s is ready before p, so the chain ends in one FMA and the
     * "1 +" costs nothing. Ten FMA-pipe operations per vector: the throughput limit. */
    __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(shifted), 23));
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(MT_EXP_F32_C5), r, _mm256_set1_ps(MT_EXP_F32_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MT_EXP_F32_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MT_EXP_F32_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(MT_EXP_F32_C1));
    return _mm256_fmadd_ps(_mm256_mul_ps(r, s), p, s);
}

__attribute__((target("avx2,fma"))) static inline __m256d exp4_avx2(__m256d x) {
    /* As exp8_avx2: clamped at -709, k = -1023 and the biased exponent bits are zero, so x
     * below (and -inf) give exactly 0 (results below ~1.4e-308, subnormal, are flushed). */
    __m256d xc = _mm256_max_pd(_mm256_set1_pd(-709.0), x);
    const __m256d magic = _mm256_set1_pd(6755399441055744.0 + 1023.0); /* 1.5*2^52 + bias */
    __m256d shifted = _mm256_fmadd_pd(xc, _mm256_set1_pd(1.4426950408889634), magic);
    __m256d k = _mm256_sub_pd(shifted, magic);
    __m256d r = _mm256_fnmadd_pd(k, _mm256_set1_pd(6.93145751953125e-1), xc);
    r = _mm256_fnmadd_pd(k, _mm256_set1_pd(1.42860682030941723212e-6), r);
    /* 1 + r p(r), p of degree 10 (MT_EXP_F64_C) by Horner's rule. Estrin's scheme has half the
     * dependent FMAs but three more multiplies; with ~4 loop iterations in flight the chain's
     * length mostly costs nothing, and Horner is the more accurate (0.9 instead of 1.3 ulp).
     * As in the f32 version the result is s + (r s) p, s = 2^k. */
#define C(i) _mm256_set1_pd(MT_EXP_F64_C[i])
    __m256d p = _mm256_fmadd_pd(C(10), r, C(9));
    for (int i = 8; i >= 0; --i) p = _mm256_fmadd_pd(p, r, C(i));
#undef C
    __m256d s = _mm256_castsi256_pd(_mm256_slli_epi64(_mm256_castpd_si256(shifted), 52));
    return _mm256_fmadd_pd(_mm256_mul_pd(r, s), p, s);
}

/* The sum of a vector's lanes in double, and their max, as trees in registers: a short row
 * (an attention head's 32 keys) waits on these chains once per row. */
__attribute__((target("avx2,fma"))) MT_INLINE static double lanes_total_avx2_f32(__m256 v) {
    const __m256d wide = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)),
                                       _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(wide), _mm256_extractf128_pd(wide, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
__attribute__((target("avx2,fma"))) MT_INLINE static double lanes_total_avx2_f64(__m256d v) {
    const __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}
__attribute__((target("avx2,fma"))) MT_INLINE static float lanes_max_avx2_f32(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}
__attribute__((target("avx2,fma"))) MT_INLINE static double lanes_max_avx2_f64(__m256d v) {
    const __m128d m = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_max_sd(m, _mm_unpackhi_pd(m, m)));
}

#endif /* MT_X86 */
#endif /* MT_EXP_AVX2_H */
