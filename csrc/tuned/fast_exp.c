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
#include "mt_internal.h"
#include "fast_exp.h"

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
    float s = 0;
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
/* The AVX-512 versions build 2^k * p with vscalefps/pd, one instruction in place of the
 * integer subtract, add, shift and the multiply, and scalef rounds what is below the smallest
 * normal to a subnormal or to +0 by itself, so there is no compare and mask either: with the
 * clamp, 11 vector operations per exp instead of 17 (f32), 20 instead of 25 (f64), in the
 * loop the exp-bound row kernels spend most of their time in. Results below FLT_MIN / DBL_MIN
 * are then subnormal, not 0 as in the AVX2 loops (both are within the stated accuracy).
 * The clamp at MT_EXP_F32_ZERO_SCALEF keeps -inf from becoming inf - inf = NaN in r; there
 * k = -159, and 2^-159 * p (p < 2) rounds to +0, so exp(-inf) = 0 exactly. */
#define MT_EXP_F32_ZERO_SCALEF (-110.0f)
#define MT_EXP_F64_ZERO_SCALEF (-750.0)

__attribute__((target("avx512f"))) static inline __m512 exp16_avx512(__m512 x) {
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    /* NaN passes through max (it returns its second operand, x, when that is NaN) */
    __m512 xc = _mm512_max_ps(_mm512_set1_ps(MT_EXP_F32_ZERO_SCALEF), x);
    __m512 shifted = _mm512_fmadd_ps(xc, _mm512_set1_ps(1.44269504088896341f), magic);
    __m512 k = _mm512_sub_ps(shifted, magic);
    __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(MT_LN2_F32_HI), xc);
    r = _mm512_fnmadd_ps(k, _mm512_set1_ps(MT_LN2_F32_LO), r);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(MT_EXP_F32_C5), r, _mm512_set1_ps(MT_EXP_F32_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MT_EXP_F32_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MT_EXP_F32_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(MT_EXP_F32_C1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, k);
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(hi), vl = _mm512_set1_ps(lo);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 a = _mm512_sub_ps(_mm512_fmsub_ps(_mm512_loadu_ps(x + j), vs, vh), vl);
        _mm512_storeu_ps(out + j, exp16_avx512(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f32(x[j] * scale - hi - lo);
}

__attribute__((target("avx512f"))) static inline __m512d exp8_avx512(__m512d x) {
    const __m512d magic = _mm512_set1_pd(6755399441055744.0);
    __m512d xc = _mm512_max_pd(_mm512_set1_pd(MT_EXP_F64_ZERO_SCALEF), x);
    __m512d shifted = _mm512_fmadd_pd(xc, _mm512_set1_pd(1.4426950408889634), magic);
    __m512d k = _mm512_sub_pd(shifted, magic);
    __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(6.93145751953125e-1), xc);
    r = _mm512_fnmadd_pd(k, _mm512_set1_pd(1.42860682030941723212e-6), r);
#define C(i) _mm512_set1_pd(MT_EXP_F64_C[i])
    __m512d r2 = _mm512_mul_pd(r, r), r4 = _mm512_mul_pd(r2, r2), r8 = _mm512_mul_pd(r4, r4);
    __m512d p01 = _mm512_fmadd_pd(C(1), r, C(0)), p23 = _mm512_fmadd_pd(C(3), r, C(2));
    __m512d p45 = _mm512_fmadd_pd(C(5), r, C(4)), p67 = _mm512_fmadd_pd(C(7), r, C(6));
    __m512d p89 = _mm512_fmadd_pd(C(9), r, C(8));
    __m512d q0 = _mm512_fmadd_pd(p23, r2, p01), q1 = _mm512_fmadd_pd(p67, r2, p45);
    __m512d q2 = _mm512_fmadd_pd(C(10), r2, p89);
    __m512d p = _mm512_fmadd_pd(q2, r8, _mm512_fmadd_pd(q1, r4, q0));
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(1.0));
#undef C
    return _mm512_scalef_pd(p, k);
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(hi), vl = _mm512_set1_pd(lo);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d a = _mm512_sub_pd(_mm512_fmsub_pd(_mm512_loadu_pd(x + j), vs, vh), vl);
        _mm512_storeu_pd(out + j, exp8_avx512(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f64(x[j] * scale - hi - lo);
}
__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(shift);
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 e = exp16_avx512(_mm512_fmsub_ps(_mm512_loadu_ps(x + j), vs, vh));
        _mm512_storeu_ps(out + j, e);
        acc = _mm512_add_ps(acc, e);
    }
    float lanes[16];
    _mm512_storeu_ps(lanes, acc);
    double s = 0;
    for (int l = 0; l < 16; ++l) s += lanes[l];
    for (; j < n; ++j) s += out[j] = mt_exp_f32(x[j] * scale - shift);
    return s;
}

__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(shift);
    __m512d acc = _mm512_setzero_pd();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d e = exp8_avx512(_mm512_fmsub_pd(_mm512_loadu_pd(x + j), vs, vh));
        _mm512_storeu_pd(out + j, e);
        acc = _mm512_add_pd(acc, e);
    }
    double lanes[8];
    _mm512_storeu_pd(lanes, acc);
    double s = 0;
    for (int l = 0; l < 8; ++l) s += lanes[l];
    for (; j < n; ++j) s += out[j] = mt_exp_f64(x[j] * scale - shift);
    return s;
}
#endif /* MT_X86 */
