/* rms_norm.c — root-mean-square normalization over the last dim (Zhang & Sennrich, 2019),
 * forward and backward, for float and double.
 *
 *   rstd = 1 / sqrt(sum_j x_j^2 / n + eps),   xhat_j = x_j * rstd,   y_j = xhat_j * w_j
 *   g_j = dy_j * w_j,   dx_j = rstd * (g_j - xhat_j * mean_k (g_k xhat_k))
 *   dw_j = sum_rows dy_j xhat_j
 *
 * weight may be NULL (w = 1); dweight may be NULL (not computed). Sums in double. Only the
 * reference body exists: every ISA level runs it. This file is its own body, compiled once
 * per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "rms_norm.c"
#include "each_dtype.h"

#else

int F(mt_rms_norm_forward)(const T *x, const T *weight, T *y, T *rstd, int64_t rows,
                           int64_t cols, double eps) {
    if (rows < 0 || cols < 0 || (rows > 0 && cols == 0)) return MT_ERR_ARGS;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols;
        double sum_sq = 0;
        for (int64_t j = 0; j < cols; ++j) sum_sq += (double)xr[j] * xr[j];
        double s = 1.0 / sqrt(sum_sq / (double)cols + eps);
        for (int64_t j = 0; j < cols; ++j)
            y[r * cols + j] = (T)(weight ? xr[j] * s * weight[j] : xr[j] * s);
        rstd[r] = (T)s;
    }
    return 0;
}

int F(mt_rms_norm_backward)(const T *dy, const T *x, const T *weight, const T *rstd, T *dx,
                            T *dweight, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols, *dyr = dy + r * cols;
        double sum_gx = 0;
        for (int64_t j = 0; j < cols; ++j) {
            double g = weight ? (double)dyr[j] * weight[j] : dyr[j];
            sum_gx += g * xr[j] * rstd[r];
        }
        for (int64_t j = 0; j < cols; ++j) {
            double g = weight ? (double)dyr[j] * weight[j] : dyr[j];
            double xhat = (double)xr[j] * rstd[r];
            dx[r * cols + j] = (T)(rstd[r] * (g - xhat * sum_gx / (double)cols));
        }
    }
    if (!dweight) return 0;
    /* the weight's gradient sums over rows: one column per iteration, no shared sums */
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t j = 0; j < cols; ++j) {
        double dw = 0;
        for (int64_t r = 0; r < rows; ++r)
            dw += (double)dy[r * cols + j] * x[r * cols + j] * rstd[r];
        dweight[j] = (T)dw;
    }
    return 0;
}
#endif
