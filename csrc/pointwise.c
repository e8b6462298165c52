/* pointwise.c — elementwise activations and clamp, forward and backward, for float and double:
 * the maps numpy computes slowly (a Python erf per element for GELU, several passes and
 * temporaries for sigmoid, a scalar loop for max(x, 0) and clip, two passes for 1 / sqrt, a
 * pass per multiplication for x^k, four for a sign) and on one core.
 *
 *   relu      y = max(x, 0) (NaN stays NaN)            dx = 0 if y <= 0 else dy
 *   sigmoid   y = s(x) = 1 / (1 + exp(-x))             dx = dy * y * (1 - y)
 *   silu      y = x * s(x)                             dx = dy * s * (1 + x * (1 - s))
 *   gelu      y = x * P(x), P(x) = erfc(-x / sqrt 2) / 2 (the normal CDF)
 *                                                      dx = dy * (P(x) + x * p(x)),
 *                                                      p(x) = exp(-x^2 / 2) / sqrt(2 pi)
 *   gelu_tanh y = x / 2 * (1 + tanh(u)), u = sqrt(2/pi) * (x + 0.044715 x^3)
 *                                                      dx = dy * ((1 + tanh u) / 2
 *                                                           + x / 2 * (1 - tanh^2 u) * du/dx)
 *   clamp     y = min(max(x, lo), hi) (NaN stays NaN)  dx = dy if lo <= x <= hi else 0
 *   sqrt      y = sqrt(x) (NaN below 0)                (its backward is Tensor ops)
 *   rsqrt     y = 1 / sqrt(x)                          (its backward is Tensor ops)
 *   erf       y = 2/sqrt(pi) * integral_0^x exp(-t^2) dt (its backward is Tensor ops)
 *   exp       y = e^x                                  (its backward is Tensor ops)
 *   log       y = ln x (NaN below 0, -inf at 0)        (its backward is Tensor ops)
 *   softplus  y = x if z = beta x > threshold, else    (its backward is sigmoid's kernel)
 *             (max(z, 0) + log(1 + e^-|z|)) / beta
 *   pow_int   y = x^k, k an integer in [-64, 64]       (its backward is pow_int again)
 *   pow       y = x^e, e any other number (rounded to T first; NaN for x < 0 but for integer e)
 *                                                      (its backward is pow again)
 *   abs       y = |x| (the sign bit cleared)           dx = dy * sign(x), 0 at 0 and NaN
 *   where     y = a if condition else b (a or b may be one value)
 *                                                      (its backward is where again)
 *
 * (PyTorch's formulas, with its names: F.relu, torch.sigmoid, F.silu, F.gelu and its
 * approximate="tanh", torch.clamp, torch.rsqrt, torch.erf, torch.exp, torch.log, F.softplus,
 * torch.pow, torch.abs, torch.where; lo and hi are rounded to T first, as PyTorch casts its
 * scalars to the tensor's dtype; relu's gradient passes where y is NaN, as PyTorch's does.)
 * Arrays are n contiguous elements; an output may be the input it is computed from (in
 * place). The reference bodies below evaluate each formula in double with libm; the tuned ones
 * (tuned/pointwise_tuned.c) vectorize them. This file is its own body, compiled once per
 * element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "pointwise.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

#ifndef MT_POINTWISE_ONCE
#define MT_POINTWISE_ONCE
/* The loop every entry point runs: the statement after n computes element j, over a team of
 * threads when the array is big enough to pay for waking one. */
#define MT_POINTWISE_LOOP(n, ...)                                       \
    do {                                                                \
        int nt_ = mt_threads_for(n);                                    \
        _Pragma("omp parallel for schedule(static) num_threads(nt_)")   \
        for (int64_t j = 0; j < (n); ++j) __VA_ARGS__                   \
    } while (0)

#define MT_SQRT1_2 0.70710678118654752440      /* 1 / sqrt 2 */
#define MT_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */
#define MT_SQRT_2_PI 0.79788456080286535588    /* sqrt(2 / pi) */
#define MT_GELU_KAPPA 0.044715
#endif

int F(mt_relu_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_relu_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = x[j] < 0 ? 0 : x[j]; });
    return 0;
}

int F(mt_relu_backward)(const T *dy, const T *y, T *dx, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_relu_backward, dy, y, dx, n);
    MT_POINTWISE_LOOP(n, { dx[j] = y[j] <= 0 ? 0 : dy[j]; });
    return 0;
}

static double F(sigmoid_ref)(double x) { return 1.0 / (1.0 + exp(-x)); }

int F(mt_sigmoid_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_sigmoid_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)F(sigmoid_ref)(x[j]); });
    return 0;
}

int F(mt_sigmoid_backward)(const T *dy, const T *y, T *dx, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_sigmoid_backward, dy, y, dx, n);
    MT_POINTWISE_LOOP(n, { dx[j] = (T)((double)dy[j] * y[j] * (1.0 - y[j])); });
    return 0;
}

int F(mt_silu_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_silu_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)(x[j] * F(sigmoid_ref)(x[j])); });
    return 0;
}

int F(mt_silu_backward)(const T *dy, const T *x, T *dx, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_silu_backward, dy, x, dx, n);
    MT_POINTWISE_LOOP(n, {
        double s = F(sigmoid_ref)(x[j]);
        dx[j] = (T)(dy[j] * s * (1.0 + x[j] * (1.0 - s)));
    });
    return 0;
}

int F(mt_gelu_forward)(const T *x, T *y, int64_t n, int approximate) {
    if (n < 0 || (approximate != 0 && approximate != 1)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_gelu_forward, x, y, n, approximate);
    if (approximate) {
        MT_POINTWISE_LOOP(n, {
            double v = x[j], u = MT_SQRT_2_PI * (v + MT_GELU_KAPPA * v * v * v);
            y[j] = (T)(0.5 * v * (1.0 + tanh(u)));
        });
    } else {
        /* erfc(-x / sqrt 2) / 2 rather than (1 + erf(x / sqrt 2)) / 2: no cancellation in the
         * left tail, where the CDF is tiny */
        MT_POINTWISE_LOOP(n, { y[j] = (T)(x[j] * 0.5 * erfc(-x[j] * MT_SQRT1_2)); });
    }
    return 0;
}

int F(mt_gelu_backward)(const T *dy, const T *x, T *dx, int64_t n, int approximate) {
    if (n < 0 || (approximate != 0 && approximate != 1)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_gelu_backward, dy, x, dx, n, approximate);
    if (approximate) {
        MT_POINTWISE_LOOP(n, {
            /* x^2 in T, as PyTorch's: du is inf where it overflows, and dx NaN (0 * inf) */
            const T square = x[j] * x[j];
            double v = x[j], u = MT_SQRT_2_PI * (v + MT_GELU_KAPPA * v * v * v);
            double th = tanh(u), du = MT_SQRT_2_PI * (1.0 + 3.0 * MT_GELU_KAPPA * square);
            dx[j] = (T)(dy[j] * (0.5 * (1.0 + th) + 0.5 * v * (1.0 - th * th) * du));
        });
    } else {
        MT_POINTWISE_LOOP(n, {
            double v = x[j];
            double cdf = 0.5 * erfc(-v * MT_SQRT1_2), pdf = exp(-0.5 * v * v) * MT_INV_SQRT_2PI;
            dx[j] = (T)(dy[j] * (cdf + v * pdf));
        });
    }
    return 0;
}

int F(mt_sqrt_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_sqrt_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)sqrt((double)x[j]); });
    return 0;
}

int F(mt_rsqrt_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_rsqrt_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)(1.0 / sqrt((double)x[j])); });
    return 0;
}

int F(mt_erf_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_erf_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)erf((double)x[j]); });
    return 0;
}

int F(mt_exp_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_exp_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)exp((double)x[j]); });
    return 0;
}

int F(mt_log_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_log_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)log((double)x[j]); });
    return 0;
}

int F(mt_softplus_forward)(const T *x, T *y, int64_t n, T beta, T threshold) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_softplus_forward, x, y, n, beta, threshold);
    MT_POINTWISE_LOOP(n, {
        const T z = x[j] * beta;
        const double smooth = ((z > 0 ? (double)z : 0.0) + log1p(exp(-fabs((double)z)))) / beta;
        y[j] = z > threshold ? x[j] : (T)smooth;
    });
    return 0;
}

int F(mt_pow_int_forward)(const T *x, T *y, int64_t n, int exponent) {
    if (n < 0 || exponent < -64 || exponent > 64) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_pow_int_forward, x, y, n, exponent);
    MT_POINTWISE_LOOP(n, { y[j] = (T)pow((double)x[j], (double)exponent); });
    return 0;
}

int F(mt_pow_scalar_forward)(const T *x, T *y, int64_t n, double exponent) {
    if (n < 0) return MT_ERR_ARGS;
    const T e = (T)exponent;
    MT_RUN_TUNED(tuned_pow_scalar_forward, x, y, n, e);
    MT_POINTWISE_LOOP(n, { y[j] = (T)pow((double)x[j], (double)e); });
    return 0;
}

int F(mt_abs_forward)(const T *x, T *y, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_abs_forward, x, y, n);
    MT_POINTWISE_LOOP(n, { y[j] = (T)fabs((double)x[j]); });
    return 0;
}

int F(mt_abs_backward)(const T *dy, const T *x, T *dx, int64_t n) {
    if (n < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_abs_backward, dy, x, dx, n);
    MT_POINTWISE_LOOP(n, { dx[j] = x[j] > 0 ? dy[j] : x[j] < 0 ? -dy[j] : 0; });
    return 0;
}

int F(mt_where)(const uint8_t *condition, const T *a, const T *b, T *y, int64_t n,
                int64_t a_step, int64_t b_step) {
    if (n < 0 || (a_step != 0 && a_step != 1) || (b_step != 0 && b_step != 1)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_where, condition, a, b, y, n, a_step, b_step);
    MT_POINTWISE_LOOP(n, { y[j] = condition[j] ? a[j * a_step] : b[j * b_step]; });
    return 0;
}

int F(mt_clamp_forward)(const T *x, T *y, int64_t n, double min, double max) {
    if (n < 0 || isnan(min) || isnan(max)) return MT_ERR_ARGS;
    const T lo = (T)min, hi = (T)max;
    MT_RUN_TUNED(tuned_clamp_forward, x, y, n, lo, hi);
    MT_POINTWISE_LOOP(n, {
        T v = x[j] < lo ? lo : x[j];
        y[j] = v > hi ? hi : v;
    });
    return 0;
}

int F(mt_clamp_backward)(const T *dy, const T *x, T *dx, int64_t n, double min, double max) {
    if (n < 0 || isnan(min) || isnan(max)) return MT_ERR_ARGS;
    const T lo = (T)min, hi = (T)max;
    MT_RUN_TUNED(tuned_clamp_backward, dy, x, dx, n, lo, hi);
    MT_POINTWISE_LOOP(n, { dx[j] = x[j] >= lo && x[j] <= hi ? dy[j] : 0; });
    return 0;
}
#endif
