/* fast_exp.h — branch-free exp for float and double that GCC can vectorize.
 *
 * libm's exp is a function call per element, which stops the vectorizer; these are plain
 * arithmetic on bits, so a `#pragma omp simd` loop around them becomes AVX2/AVX-512 code.
 *
 * exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n*ln2 (ln2 split in hi+lo parts so r is
 * exact), |r| <= ln2/2; exp(r) by a polynomial; 2^n built directly in the exponent bits.
 * Accuracy: ~1 ulp (f32, Cephes coefficients), ~2 ulp (f64, degree-13 Taylor).
 * Range: f32 inputs <= MT_EXP_F32_ZERO (and f64 below the smallest normal result) return
 * exactly 0 (so exp(-inf) = 0, which masked softmax relies on; f32 results between that and
 * FLT_MIN are subnormal, or 0 in the vector loops). Every caller passes x - max <= 0 (plus at
 * most a rounding error), so the AVX2 loops do not clamp above; these scalar versions clamp
 * at ~88.3 (f32) / ~709 (f64).
 */
#ifndef MT_FAST_EXP_H
#define MT_FAST_EXP_H

#include <stdint.h>
#include "mt_internal.h"

/* Rounds to k = -127 in exp(x) = 2^k exp(r): the 2^k built in the exponent bits is then +0. */
#define MT_EXP_F32_ZERO (-88.0f)

MT_INLINE static float mt_exp_f32(float x) {
    const float lo = MT_EXP_F32_ZERO, hi = 88.3762626647949f;
    float xc = x < lo ? lo : (x > hi ? hi : x);
    /* Adding 1.5*2^23 rounds t to an integer held in the low mantissa bits. */
    const float magic = 12582912.0f;
    float shifted = xc * 1.44269504088896341f + magic;
    float n = shifted - magic;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500E-4f;
    p = p * r + 1.3981999507E-3f;
    p = p * r + 8.3334519073E-3f;
    p = p * r + 4.1665795894E-2f;
    p = p * r + 1.6666665459E-1f;
    p = p * r + 5.0000001201E-1f;
    p = p * r * r + r + 1.0f;
    /* Bit casts by memcpy (folded into register moves). Callers must not put this inside an
     * `omp simd` loop: there an address-taken local becomes a per-lane array in memory and
     * the loop is no longer vectorized; plain -O3 auto-vectorization handles it. */
    int32_t shifted_bits, magic_bits;
    __builtin_memcpy(&shifted_bits, &shifted, 4);
    __builtin_memcpy(&magic_bits, &magic, 4);
    int32_t scale_bits = (shifted_bits - magic_bits + 127) << 23;
    float scale;
    __builtin_memcpy(&scale, &scale_bits, 4);
    return p * scale; /* 0 for x <= lo: see MT_EXP_F32_ZERO */
}

MT_INLINE static double mt_exp_f64(double x) {
    const double lo = -708.3964185322641, hi = 709.0;
    double xc = x < lo ? lo : (x > hi ? hi : x);
    const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
    double shifted = xc * 1.4426950408889634 + magic;
    double n = shifted - magic;
    double r = xc - n * 6.93145751953125e-1;
    r = r - n * 1.42860682030941723212e-6;
    /* Taylor series of exp(r) to r^13 / 13!: truncation error < 1e-17 for |r| <= ln2/2. */
    double p = 1.0 / 6227020800.0;
    p = p * r + 1.0 / 479001600.0;
    p = p * r + 1.0 / 39916800.0;
    p = p * r + 1.0 / 3628800.0;
    p = p * r + 1.0 / 362880.0;
    p = p * r + 1.0 / 40320.0;
    p = p * r + 1.0 / 5040.0;
    p = p * r + 1.0 / 720.0;
    p = p * r + 1.0 / 120.0;
    p = p * r + 1.0 / 24.0;
    p = p * r + 1.0 / 6.0;
    p = p * r + 0.5;
    p = p * r + 1.0;
    p = p * r + 1.0;
    int64_t shifted_bits, magic_bits;
    __builtin_memcpy(&shifted_bits, &shifted, 8);
    __builtin_memcpy(&magic_bits, &magic, 8);
    int64_t scale_bits = (int64_t)((uint64_t)(shifted_bits - magic_bits + 1023) << 52);
    double scale;
    __builtin_memcpy(&scale, &scale_bits, 8);
    double result = p * scale;
    return x < lo ? 0.0 : result;
}

/* out[j] = exp(x[j]*scale - shift_hi - shift_lo), vectorized for the CPU (fast_exp.c).
 * out may equal x. */
void mt_exp_shifted_f32(const float *x, float *out, int64_t n, float scale, float shift_hi,
                        float shift_lo);
void mt_exp_shifted_f64(const double *x, double *out, int64_t n, double scale, double shift_hi,
                        double shift_lo);
/* out[j] = exp(x[j]*scale - shift), returning sum(out) too (T lanes; meant for blocks of a few
 * hundred elements). */
double mt_exp_shifted_sum_f32(const float *x, float *out, int64_t n, float scale, float shift);
double mt_exp_shifted_sum_f64(const double *x, double *out, int64_t n, double scale,
                              double shift);

#endif /* MT_FAST_EXP_H */
