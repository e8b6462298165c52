/* tuned/pointwise_tuned.c — the activations, clamp and where of csrc/pointwise.c at memory speed.
 *
 * The reference bodies call libm's exp, erfc and tanh once per element, in double. Here each
 * formula is written with branch-free inline functions of T (fast_exp.h's exp, an erfc and the
 * selects below) in loops marked `omp simd`, so that GCC vectorizes the whole map at every ISA
 * level: a (32, 32, 512) float32 GELU is ~0.1 ms on one core instead of ~5 ms. The float64
 * exact GELU still calls libm's erfc (this erfc is accurate to float32 only).
 * Accuracy (float32): exp ~2.5 ulp; erfc, Numerical Recipes' Chebyshev fit (erfcc), 1.2e-7
 * relative in exact arithmetic, ~1e-5 relative in float32 where erfc(x) < 1e-30 (the rounding
 * of -x^2), so GELU is within ~2e-7 of the exact value (relatively, above |x| ~ 1e-6); PyTorch's
 * float32 GELU takes erf from Abramowitz-Stegun 7.1.26 (1.5e-7 absolute).
 * The tanh form of GELU uses (1 + tanh u) / 2 = sigmoid(2u): no cancellation, one exp.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
/* Comparisons may then be turned into selects: with traps assumed possible, GCC 12 left the
 * clamps and selects of these loops as branches, and so the loops scalar, at every level but
 * AVX-512's. No value changes: only floating-point exception flags may. */
#pragma GCC optimize("no-trapping-math")
#include <float.h>
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/pointwise_tuned.c"
#include "each_isa.h"
#else

/* exp in T: fast_exp.h's mt_exp_f32 or mt_exp_f64, and inf above the overflow threshold
 * (sigmoid(-inf) = 0 and silu(-inf) = -inf * 0 = NaN, as in PyTorch). Those build 2^n in the
 * exponent bits, so they clamp their argument where n would pass the largest exponent (~88.38
 * in float32, 709 in float64); from just below there up to the threshold, exp(x) = exp(x/2)^2,
 * within twice their ulps. The square is e times a select, not a select of e * e and e: GCC
 * carried that select through a caller's division, so that sigmoid divided twice. */
#define EXP_T MT_CAT(mt_exp, SFX)
MT_INLINE static T V(exp)(T x) {
    const T overflow = sizeof(T) == sizeof(float) ? (T)88.7228394 : (T)709.782712893384;
    const T top = sizeof(T) == sizeof(float) ? (T)88 : (T)708;
    const int squared = x > top;
    const T e = EXP_T(squared ? x * (T)0.5 : x);
    return x > overflow ? (T)INFINITY : e * (squared ? e : (T)1);
}

#ifndef MT_POINTWISE_SCALARS_ONCE
#define MT_POINTWISE_SCALARS_ONCE
MT_INLINE static float mt_sqrt_f32(float x) { return __builtin_sqrtf(x); }
MT_INLINE static double mt_sqrt_f64(double x) { return __builtin_sqrt(x); }
/* |x| as one AND (x < 0 ? -x : x is a compare and a blend: it must keep -0.0) */
MT_INLINE static float mt_abs_f32(float x) { return __builtin_fabsf(x); }
MT_INLINE static double mt_abs_f64(double x) { return __builtin_fabs(x); }
#endif

MT_INLINE static T V(sigmoid)(T x) { return (T)1 / ((T)1 + V(exp)(-x)); }

/* exp of x <= 0 (at most a rounding above): fast_exp.h's, without the clamp above in float32 */
MT_INLINE static T V(exp_nonpositive)(T x) {
    return sizeof(T) == sizeof(float) ? (T)mt_exp_nonpositive_f32((float)x) : EXP_T(x);
}

/* erfc(z) for z >= 0: Numerical Recipes' erfcc, t exp(-z^2 + poly(t)), t = 1 / (1 + z/2).
 * The polynomial by Estrin's scheme, not Horner's: its chain of dependent FMAs is 4 long, not
 * 9, and the maps built on it are bound by their chains' latency, not by their operations.
 * The exp's argument is at most ~3e-8 (at z = 0): V(exp_nonpositive). */
MT_INLINE static T V(erfc_nonneg)(T z) {
    const T t = (T)1 / ((T)1 + (T)0.5 * z), t2 = t * t, t4 = t2 * t2;
    const T p01 = (T)1.00002368 + (T)0.37409196 * t, p23 = (T)0.09678418 + (T)-0.18628806 * t;
    const T p45 = (T)0.27886807 + (T)-1.13520398 * t, p67 = (T)1.48851587 + (T)-0.82215223 * t;
    const T p = (p01 + p23 * t2) + ((p45 + p67 * t2) + (T)0.17087277 * t4) * t4;
    return t * V(exp_nonpositive)(-z * z + ((T)-1.26551223 + t * p));
}

/* The normal CDF: erfc(-x / sqrt 2) / 2 */
MT_INLINE static T V(normal_cdf)(T x) {
    const T z = x * (T)-0.70710678118654752440;
    if (sizeof(T) == sizeof(double)) return (T)(0.5 * erfc((double)z)); /* float64: libm */
    const T half_tail = (T)0.5 * V(erfc_nonneg)(MT_CAT(mt_abs, SFX)(z));
    return z >= 0 ? half_tail : (T)1 - half_tail;
}

int V(tuned_relu_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] < 0 ? 0 : x[j];
    return 0;
}

int V(tuned_relu_backward)(const T *dy, const T *y, T *dx, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) dx[j] = y[j] <= 0 ? 0 : dy[j];
    return 0;
}

int V(tuned_sigmoid_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = V(sigmoid)(x[j]);
    return 0;
}

int V(tuned_sigmoid_backward)(const T *dy, const T *y, T *dx, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) dx[j] = dy[j] * y[j] * ((T)1 - y[j]);
    return 0;
}

int V(tuned_silu_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] * V(sigmoid)(x[j]);
    return 0;
}

int V(tuned_silu_backward)(const T *dy, const T *x, T *dx, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) {
        const T s = V(sigmoid)(x[j]);
        dx[j] = dy[j] * s * ((T)1 + x[j] * ((T)1 - s));
    }
    return 0;
}

/* sqrt(2/pi) and 0.044715: u = SQRT_2_PI * (x + KAPPA x^3) */
#define SQRT_2_PI ((T)0.79788456080286535588)
#define KAPPA ((T)0.044715)

int V(tuned_gelu_forward)(const T *x, T *y, int64_t n, int approximate) {
    int nt = mt_threads_for(n);
    if (approximate) {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) {
            const T v = x[j], u = SQRT_2_PI * (v + KAPPA * v * v * v);
            y[j] = v * V(sigmoid)((T)2 * u);
        }
    } else {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) y[j] = x[j] * V(normal_cdf)(x[j]);
    }
    return 0;
}

int V(tuned_gelu_backward)(const T *dy, const T *x, T *dx, int64_t n, int approximate) {
    int nt = mt_threads_for(n);
    if (approximate) {
        /* with s = sigmoid(2u): (1 + tanh u) / 2 = s and 1 - tanh^2 u = 4 s (1 - s) */
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) {
            const T v = x[j], u = SQRT_2_PI * (v + KAPPA * v * v * v);
            const T s = V(sigmoid)((T)2 * u);
            const T du = SQRT_2_PI * ((T)1 + (T)3 * KAPPA * v * v);
            dx[j] = dy[j] * (s + (T)2 * v * s * ((T)1 - s) * du);
        }
    } else {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) {
            const T v = x[j];
            const T pdf = V(exp_nonpositive)((T)-0.5 * v * v) * (T)0.39894228040143267794;
            dx[j] = dy[j] * (V(normal_cdf)(v) + v * pdf);
        }
    }
    return 0;
}

#undef SQRT_2_PI
#undef KAPPA

int V(tuned_sqrt_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = MT_CAT(mt_sqrt, SFX)(x[j]);
    return 0;
}

int V(tuned_rsqrt_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = (T)1 / MT_CAT(mt_sqrt, SFX)(x[j]); /* -fno-math-errno: a vector sqrt */
    return 0;
}

/* erf for float32: x * poly(x^2) below |x| = 1 (Cephes' erff, 1.9e-7 relative), 1 - erfc(|x|)
 * above it (erfc < 0.16 there, so its 1.2e-7 relative error is far below erf's ulp); float64
 * calls libm's erf, as the exact GELU calls its erfc. */
MT_INLINE static T V(erf)(T x) {
    if (sizeof(T) == sizeof(double)) return (T)erf((double)x);
    const T a = MT_CAT(mt_abs, SFX)(x), z = x * x;
    T p = (T)7.853861353153693e-5;
    p = p * z + (T)-8.010193625184903e-4;
    p = p * z + (T)5.188327685732524e-3;
    p = p * z + (T)-2.685381193529856e-2;
    p = p * z + (T)1.128358514861418e-1;
    p = p * z + (T)-3.761262582423300e-1;
    p = p * z + (T)1.128379165726710;
    const T tail = (T)1 - V(erfc_nonneg)(a);
    return a < 1 ? x * p : (x < 0 ? -tail : tail);
}

int V(tuned_erf_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = V(erf)(x[j]);
    return 0;
}

int V(tuned_exp_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = V(exp)(x[j]);
    return 0;
}

/* 2 atanh(s) for |s| <= 1/3, by atanh's series to s^15 (the next term is below 1.5e-8 of the
 * sum): the float32 log and log1p below */
MT_INLINE static T V(two_atanh)(T s) {
    const T s2 = s * s;
    T p = (T)(1.0 / 15);
    p = p * s2 + (T)(1.0 / 13);
    p = p * s2 + (T)(1.0 / 11);
    p = p * s2 + (T)(1.0 / 9);
    p = p * s2 + (T)(1.0 / 7);
    p = p * s2 + (T)(1.0 / 5);
    p = p * s2 + (T)(1.0 / 3);
    return (T)2 * s + (T)2 * s * s2 * p;
}

/* log(1 + t) for t in [0, 1]: 2 atanh(t / (2 + t)); float64: libm's log1p */
MT_INLINE static T V(log1p_unit)(T t) {
    if (sizeof(T) == sizeof(double)) return (T)log1p((double)t);
    return V(two_atanh)(t / ((T)2 + t));
}

/* ln x for float32: x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormal x scaled by 2^23
 * first), ln x = e ln2 + 2 atanh((m - 1) / (m + 1)), e ln2 in two parts, the first exact. NaN
 * below 0 and for NaN, -inf at 0, inf at inf. float64: libm's log. */
MT_INLINE static T V(log)(T x) {
    if (sizeof(T) == sizeof(double)) return (T)log((double)x);
    const int subnormal = x < (T)1.17549435e-38f;
    const float scaled = subnormal ? (float)x * 8388608.0f : (float)x;
    uint32_t bits;
    __builtin_memcpy(&bits, &scaled, 4);
    /* the exponent that puts m in [sqrt(1/2), sqrt(2)): 0x3f3504f3 is sqrt(1/2)'s bits */
    const int32_t e = (int32_t)(bits - 0x3f3504f3u) >> 23;
    const uint32_t m_bits = bits - ((uint32_t)e << 23);
    float m;
    __builtin_memcpy(&m, &m_bits, 4);
    const float k = (float)(e - (subnormal ? 23 : 0));
    const float ln = k * MT_LN2_F32_HI +
                     (k * MT_LN2_F32_LO + (float)V(two_atanh)((m - 1.0f) / (m + 1.0f)));
    return x > 0 ? (x == (T)INFINITY ? x : (T)ln) : (x == 0 ? -(T)INFINITY : (T)NAN);
}

int V(tuned_log_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = V(log)(x[j]);
    return 0;
}

int V(tuned_softplus_forward)(const T *x, T *y, int64_t n, T beta, T threshold) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) {
        const T z = x[j] * beta, magnitude = z < 0 ? -z : z;
        const T smooth = ((z > 0 ? z : (T)0) + V(log1p_unit)(V(exp)(-magnitude))) / beta;
        y[j] = z > threshold ? x[j] : smooth;
    }
    return 0;
}

/* x^k for |k| <= 4 in one expression, 1 / that for k < 0 (0^-k = inf, as 1 / 0) */
#define MT_POW_SMALL(K, EXPR)                                                          \
    case K: {                                                                          \
        _Pragma("omp parallel for simd schedule(static) num_threads(nt)")             \
        for (int64_t j = 0; j < n; ++j) {                                              \
            const T v = x[j], p = EXPR;                                                \
            y[j] = exponent < 0 ? (T)1 / p : p;                                        \
        }                                                                              \
        return 0;                                                                      \
    }

/* x^k for |k| <= 64: up to 4 in one expression (the common cases), beyond by repeated
 * squaring a block of elements at a time, each squaring and multiplication a vector loop over
 * a block that stays in L1 (GCC does not vectorize a loop over the exponent's bits inside the
 * loop over elements), so that memory is still read and written once. */
#ifndef MT_POW_INT_BLOCK
#define MT_POW_INT_BLOCK 512
#endif
int V(tuned_pow_int_forward)(const T *x, T *y, int64_t n, int exponent) {
    const int k = exponent < 0 ? -exponent : exponent;
    int nt = mt_threads_for(n);
    switch (k) {
        MT_POW_SMALL(0, ((void)v, (T)1)) /* 1 for every x, NaN included */
        MT_POW_SMALL(1, v)
        MT_POW_SMALL(2, v * v)
        MT_POW_SMALL(3, v * v * v)
        MT_POW_SMALL(4, (v * v) * (v * v))
    default: break;
    }
    const int64_t blocks = (n + MT_POW_INT_BLOCK - 1) / MT_POW_INT_BLOCK;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t j0 = b * MT_POW_INT_BLOCK;
        const int64_t len = n - j0 < MT_POW_INT_BLOCK ? n - j0 : MT_POW_INT_BLOCK;
        T square[MT_POW_INT_BLOCK] __attribute__((aligned(64)));
        T *out = y + j0;
#pragma omp simd
        for (int64_t j = 0; j < len; ++j) {
            square[j] = x[j0 + j];
            out[j] = 1;
        }
        for (int bits = k; bits; bits >>= 1) {
            if (bits & 1) {
#pragma omp simd
                for (int64_t j = 0; j < len; ++j) out[j] *= square[j];
            }
            if (bits > 1) {
#pragma omp simd
                for (int64_t j = 0; j < len; ++j) square[j] *= square[j];
            }
        }
        if (exponent < 0) {
#pragma omp simd
            for (int64_t j = 0; j < len; ++j) out[j] = (T)1 / out[j];
        }
    }
    return 0;
}

#ifndef MT_LOG_POSITIVE_DEFINED /* (once: an inline function of no ISA level, as fast_exp.h's) */
#define MT_LOG_POSITIVE_DEFINED
/* log(x) for a positive, finite double, as plain arithmetic on its bits (so that a loop of it
 * vectorizes): x = m 2^k with m in [sqrt(1/2), sqrt(2)), log x = k ln2 + 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| <= 0.172, by the series of atanh to s^17 (the next term is 3e-16).
 * ln2 is split hi + lo (fdlibm's) so that k * hi is exact. */
MT_INLINE static double mt_log_positive_f64(double x) {
    uint64_t bits;
    __builtin_memcpy(&bits, &x, 8);
    /* Subtracting sqrt(1/2)'s bits borrows from the exponent exactly where m < sqrt(1/2); the
     * 1024 added keeps it positive (k + 1024 >= 2), so the shift is a logical one. */
    const uint64_t k_biased = (bits - 0x3FE6A09E667F3BCDull + (1024ull << 52)) >> 52;
    const uint64_t m_bits = bits - ((k_biased - 1024) << 52);
    /* k as a double without an int64 conversion (AVX2 has none): the double 2^52 + k_biased */
    const uint64_t k_bits = k_biased | 0x4330000000000000ull;
    double m, k;
    __builtin_memcpy(&m, &m_bits, 8);
    __builtin_memcpy(&k, &k_bits, 8);
    k -= 4503599627370496.0 + 1024.0;
    const double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double p = 1.0 / 17;
    p = p * s2 + 1.0 / 15;
    p = p * s2 + 1.0 / 13;
    p = p * s2 + 1.0 / 11;
    p = p * s2 + 1.0 / 9;
    p = p * s2 + 1.0 / 7;
    p = p * s2 + 1.0 / 5;
    p = p * s2 + 1.0 / 3;
    return k * 6.93147180369123816490e-01 +
           (k * 1.90821492927058770002e-10 + 2.0 * s * (p * s2 + 1.0));
}
#endif

/* Elements per block of the float32 pow: its vector pass, then libm for the block's special
 * bases if it has any */
#ifndef MT_POW_F32_BLOCK
#define MT_POW_F32_BLOCK 1024
#endif

/* x^e for float32 as exp(e log x) in double (the method of glibc's powf, here a vector loop):
 * the double's ~1e-16 relative error is far below float32's rounding, so the result is within
 * 1 ulp of the exact x^e. The vector pass is right for positive finite x (every float32 is a
 * normal double), and gives NaN for finite negative x where e is not an integer. The rest (zeros,
 * infinities, NaN, negative bases to integer powers) take libm's powf, which knows their rules
 * (0^-e = inf, NaN^0 = 1, (-2)^3 = -8...), as do non-finite exponents for the whole array. */
static void V(pow_scalar_f32)(const float *x, float *y, int64_t n, float exponent, int nt) {
    const int64_t blocks = (n + MT_POW_F32_BLOCK - 1) / MT_POW_F32_BLOCK;
    const double e = (double)exponent;
    const int finite_exponent = isfinite(exponent), integer_exponent = exponent == rintf(exponent);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t j0 = b * MT_POW_F32_BLOCK;
        const int64_t len = n - j0 < MT_POW_F32_BLOCK ? n - j0 : MT_POW_F32_BLOCK;
        const float *xb = x + j0;
        float *yb = y + j0;
        int special = !finite_exponent;
        if (finite_exponent) {
#pragma omp simd reduction(| : special)
            for (int64_t j = 0; j < len; ++j) {
                const float xj = xb[j];
                const int usual = xj > 0.0f && xj <= FLT_MAX;
                const int nan = xj < 0.0f && xj >= -FLT_MAX && !integer_exponent;
                special |= !(usual || nan);
                const double r = mt_exp_f64(e * mt_log_positive_f64(usual ? (double)xj : 1.0));
                /* from FLT_MAX and half its ulp up, float32 rounds to inf (a conversion out of
                 * float's range is undefined in C) */
                yb[j] = nan ? NAN : r >= 0x1.ffffffp127 ? INFINITY : (float)r;
            }
        }
        if (special)
            for (int64_t j = 0; j < len; ++j) {
                const float xj = xb[j];
                const int usual = xj > 0.0f && xj <= FLT_MAX;
                const int nan = xj < 0.0f && xj >= -FLT_MAX && !integer_exponent;
                if (!finite_exponent || !(usual || nan)) yb[j] = powf(xj, exponent);
            }
    }
}

/* libm's pow for float64, on the threads (numpy's power runs on one core); float32 by the
 * vector loop above. */
int V(tuned_pow_scalar_forward)(const T *x, T *y, int64_t n, T exponent) {
    int nt = mt_threads_for(n / 8); /* a pow costs ~8 streamed elements */
    if (sizeof(T) == sizeof(float)) {
        V(pow_scalar_f32)((const float *)x, (float *)y, n, (float)exponent, nt);
        return 0;
    }
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = (T)pow((double)x[j], (double)exponent);
    return 0;
}

int V(tuned_abs_forward)(const T *x, T *y, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) y[j] = MT_CAT(mt_abs, SFX)(x[j]);
    return 0;
}

int V(tuned_abs_backward)(const T *dy, const T *x, T *dx, int64_t n) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) dx[j] = x[j] > 0 ? dy[j] : x[j] < 0 ? -dy[j] : 0;
    return 0;
}

/* where: the four layouts of a and b (array or one value) as loops of their own, each a
 * compare and a blend per vector: numpy's np.where branches on each element, and on a random
 * condition mispredicts half of them (3 ns an element). */
int V(tuned_where)(const uint8_t *condition, const T *a, const T *b, T *y, int64_t n,
                   int64_t a_step, int64_t b_step) {
    int nt = mt_threads_for(n);
    const T a0 = n ? a[0] : 0, b0 = n ? b[0] : 0;
    if (a_step && b_step) {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) y[j] = condition[j] ? a[j] : b[j];
    } else if (a_step) {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) y[j] = condition[j] ? a[j] : b0;
    } else if (b_step) {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) y[j] = condition[j] ? a0 : b[j];
    } else {
#pragma omp parallel for simd schedule(static) num_threads(nt)
        for (int64_t j = 0; j < n; ++j) y[j] = condition[j] ? a0 : b0;
    }
    return 0;
}

int V(tuned_clamp_forward)(const T *x, T *y, int64_t n, T lo, T hi) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) {
        const T v = x[j] < lo ? lo : x[j];
        y[j] = v > hi ? hi : v;
    }
    return 0;
}

int V(tuned_clamp_backward)(const T *dy, const T *x, T *dx, int64_t n, T lo, T hi) {
    int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t j = 0; j < n; ++j) dx[j] = x[j] >= lo && x[j] <= hi ? dy[j] : 0;
    return 0;
}

#undef EXP_T
#endif
