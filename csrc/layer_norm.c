/* layer_norm.c — layer normalization over the last dim, forward and backward, for float and
 * double.
 *
 *   mean = sum_j x_j / n,   var = sum_j (x_j - mean)^2 / n,   rstd = 1 / sqrt(var + eps)
 *   xhat_j = (x_j - mean) * rstd,   y_j = xhat_j * w_j + b_j
 *   g_j = dy_j * w_j,   dx_j = rstd * (g_j - mean_k g_k - xhat_j * mean_k (g_k xhat_k))
 *   dw_j = sum_rows dy_j xhat_j,   db_j = sum_rows dy_j
 *
 * weight / bias may be NULL (w = 1, b = 0); dweight / dbias may be NULL (not computed). The
 * reference bodies below sum in double, the variance around the mean (two passes: never
 * E[x^2] - E[x]^2, which cancels); the tuned ones are in tuned/layer_norm_tuned.c. This file is
 * its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "layer_norm.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

int F(mt_layer_norm_forward)(const T *x, const T *weight, const T *bias, T *y, T *mean,
                             T *rstd, int64_t rows, int64_t cols, double eps) {
    if (rows < 0 || cols < 0 || (rows > 0 && cols == 0)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_layer_norm_forward, x, weight, bias, y, mean, rstd, rows, cols, eps);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols;
        double m = 0, v = 0;
        for (int64_t j = 0; j < cols; ++j) m += xr[j];
        m /= (double)cols;
        for (int64_t j = 0; j < cols; ++j) v += (xr[j] - m) * (xr[j] - m);
        v /= (double)cols;
        double s = 1.0 / sqrt(v + eps);
        for (int64_t j = 0; j < cols; ++j) {
            double out = (xr[j] - m) * s;
            if (weight) out *= weight[j];
            if (bias) out += bias[j];
            y[r * cols + j] = (T)out;
        }
        mean[r] = (T)(isnan(s) ? NAN : m); /* a row with NaN or inf: NaN mean, as PyTorch's */
        rstd[r] = (T)s;
    }
    return 0;
}

int F(mt_layer_norm_backward)(const T *dy, const T *x, const T *weight, const T *mean,
                              const T *rstd, T *dx, T *dweight, T *dbias, int64_t rows,
                              int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_layer_norm_backward, dy, x, weight, mean, rstd, dx, dweight, dbias, rows,
                 cols);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols, *dyr = dy + r * cols;
        double sum_g = 0, sum_gx = 0;
        for (int64_t j = 0; j < cols; ++j) {
            double g = weight ? (double)dyr[j] * weight[j] : dyr[j];
            sum_g += g;
            sum_gx += g * (xr[j] - mean[r]) * rstd[r];
        }
        for (int64_t j = 0; j < cols; ++j) {
            double g = weight ? (double)dyr[j] * weight[j] : dyr[j];
            double xhat = (xr[j] - mean[r]) * rstd[r];
            dx[r * cols + j] = (T)(rstd[r] * (g - sum_g / cols - xhat * sum_gx / cols));
        }
    }
    /* the parameter gradients sum over rows: one column per iteration, no shared sums */
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t j = 0; j < cols; ++j) {
        double dw = 0, db = 0;
        for (int64_t r = 0; r < rows; ++r) {
            dw += (double)dy[r * cols + j] * (x[r * cols + j] - mean[r]) * rstd[r];
            db += dy[r * cols + j];
        }
        if (dweight) dweight[j] = (T)dw;
        if (dbias) dbias[j] = (T)db;
    }
    return 0;
}
#endif
