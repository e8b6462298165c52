/* batch_norm.c — batch normalization with the batch's statistics (training), forward and
 * backward, for float and double, over an (N, C, L) array (L: the product of the dims after
 * the channel dim C; 1 for (N, C) input). Every channel c is normalized over its N * L values:
 *
 *   mean_c = sum_{n,l} x / (N L),   var_c = sum_{n,l} (x - mean_c)^2 / (N L)   (biased)
 *   rstd_c = 1 / sqrt(var_c + eps),  xhat = (x - mean_c) * rstd_c,  y = xhat * w_c + b_c
 *   dbias_c = sum_{n,l} dy,  dweight_c = sum_{n,l} dy * xhat
 *   dx = rstd_c * w_c * (dy - dbias_c / (N L) - xhat * dweight_c / (N L))
 *
 * weight / bias may be NULL (w = 1, b = 0). Sums are in double, the variance around the mean
 * (two passes, never E[x^2] - E[x]^2, which cancels). Channels are independent: OpenMP splits
 * them, and each channel is summed by one thread in one order, so the thread count never
 * changes a result. Only the reference body exists: every ISA level runs it. This file is its
 * own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "batch_norm.c"
#include "each_dtype.h"

#else

/* The sums below keep BN_PARTS partial sums, a vector's worth or two, so that each add need not
 * wait for the one before it: one running sum would make a pass four times slower. */
#define BN_PARTS 8

/* *total += the sum of x[l] - c (squared: of (x[l] - c)^2) for l < len */
static void F(bn_add_sum)(const T *x, int64_t len, double c, int squared, double *total) {
    double s[BN_PARTS] = {0};
    int64_t l = 0;
    for (; l + BN_PARTS <= len; l += BN_PARTS)
        for (int k = 0; k < BN_PARTS; ++k) {
            const double d = x[l + k] - c;
            s[k] += squared ? d * d : d;
        }
    for (; l < len; ++l) {
        const double d = x[l] - c;
        s[0] += squared ? d * d : d;
    }
    for (int k = 0; k < BN_PARTS; ++k) *total += s[k];
}

int F(mt_batch_norm_forward)(const T *x, const T *weight, const T *bias, T *y, T *mean, T *var,
                             T *rstd, int64_t n, int64_t channels, int64_t inner, double eps) {
    if (n < 1 || channels < 1 || inner < 1 || !(eps >= 0)) return MT_ERR_ARGS;
    const int64_t count = n * inner, plane = channels * inner;
    int nt = mt_threads_for(n * plane);
    if (nt > channels) nt = (int)channels;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t c = 0; c < channels; ++c) {
        double sum = 0, squares = 0;
        for (int64_t b = 0; b < n; ++b) F(bn_add_sum)(x + b * plane + c * inner, inner, 0, 0, &sum);
        const double m = sum / (double)count;
        for (int64_t b = 0; b < n; ++b)
            F(bn_add_sum)(x + b * plane + c * inner, inner, m, 1, &squares);
        const double v = squares / (double)count, s = 1.0 / sqrt(v + eps);
        const double scale = weight ? s * weight[c] : s, shift = bias ? bias[c] : 0.0;
        for (int64_t b = 0; b < n; ++b) {
            const T *xc = x + b * plane + c * inner;
            T *yc = y + b * plane + c * inner;
            for (int64_t l = 0; l < inner; ++l) yc[l] = (T)((xc[l] - m) * scale + shift);
        }
        mean[c] = (T)m;
        var[c] = (T)v;
        rstd[c] = (T)s;
    }
    return 0;
}

int F(mt_batch_norm_backward)(const T *dy, const T *x, const T *weight, const T *mean,
                              const T *rstd, T *dx, T *dweight, T *dbias, int64_t n,
                              int64_t channels, int64_t inner) {
    if (n < 1 || channels < 1 || inner < 1) return MT_ERR_ARGS;
    const int64_t count = n * inner, plane = channels * inner;
    int nt = mt_threads_for(n * plane);
    if (nt > channels) nt = (int)channels;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t c = 0; c < channels; ++c) {
        const double m = mean[c], s = rstd[c];
        double sum_dy = 0, sum_dy_xhat = 0;
        for (int64_t b = 0; b < n; ++b) {
            const T *xc = x + b * plane + c * inner, *dyc = dy + b * plane + c * inner;
            double g[BN_PARTS] = {0}, gx[BN_PARTS] = {0};
            int64_t l = 0;
            for (; l + BN_PARTS <= inner; l += BN_PARTS)
                for (int k = 0; k < BN_PARTS; ++k) {
                    g[k] += dyc[l + k];
                    gx[k] += dyc[l + k] * ((xc[l + k] - m) * s);
                }
            for (; l < inner; ++l) {
                g[0] += dyc[l];
                gx[0] += dyc[l] * ((xc[l] - m) * s);
            }
            for (int k = 0; k < BN_PARTS; ++k) {
                sum_dy += g[k];
                sum_dy_xhat += gx[k];
            }
        }
        const double scale = weight ? s * weight[c] : s;
        const double mean_dy = sum_dy / (double)count, mean_dy_xhat = sum_dy_xhat / (double)count;
        for (int64_t b = 0; b < n; ++b) {
            const T *xc = x + b * plane + c * inner, *dyc = dy + b * plane + c * inner;
            T *dxc = dx + b * plane + c * inner;
            for (int64_t l = 0; l < inner; ++l)
                dxc[l] = (T)(scale * (dyc[l] - mean_dy - (xc[l] - m) * s * mean_dy_xhat));
        }
        dweight[c] = (T)sum_dy_xhat;
        dbias[c] = (T)sum_dy;
    }
    return 0;
}
#endif
