/* softmax.c — softmax (scaled, masked, causal) and log-softmax over the last dim, forward and
 * backward, for float and double.
 *
 *   softmax       z_j = x_j * scale + mask_j   (-inf where excluded)
 *                 y_j = exp(z_j - max z) / sum_k exp(z_k - max z)
 *                 dx_j = scale * y_j * (dy_j - sum_k dy_k y_k)
 *   log-softmax   y_j = (x_j - max x) - log sum_k exp(x_k - max x)
 *                 dx_j = dy_j - exp(y_j) * sum_k dy_k
 *
 * Excluded: where the bool mask is set, and with causal_lq > 0 every column j > row % causal_lq.
 * A row with nothing left (or all -inf) is all zeros, never 0/0; a NaN or +inf score makes its
 * row NaN, as in PyTorch. Log-softmax subtracts the max before the log of the sum: x - (max +
 * log sum) would lose the log where |max| >> 1 ([1e17, 1e17] gives -log 2). The reference
 * bodies go over a row a few times with libm's exp and double sums; the tuned ones are in
 * tuned/softmax_tuned.c. This file is its own body, compiled once per element type T
 * (each_dtype.h).
 */
#ifndef T
#define MT_BODY "softmax.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

/* One row of n scores, of which the first `live` may take part. madd / mbool: this row's
 * additive or bool mask (at most one non-NULL), mstride 1, or 0 for one value per row. */
static void F(softmax_row)(const T *x, T *y, int64_t n, T scale, const T *madd,
                           const uint8_t *mbool, int64_t mstride, int64_t live) {
    double max = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
        int excluded = j >= live || (mbool && mbool[j * mstride]);
        T z = excluded ? -(T)INFINITY : x[j] * scale + (madd ? madd[j * mstride] : 0);
        y[j] = z;
        if (z > max || isnan(z)) max = z; /* a NaN wins, so that its row is NaN */
    }
    if (max == -INFINITY) { /* nothing left */
        for (int64_t j = 0; j < n; ++j) y[j] = 0;
        return;
    }
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) {
        double e = exp((double)y[j] - max);
        y[j] = (T)e;
        sum += e;
    }
    for (int64_t j = 0; j < n; ++j) y[j] = (T)((double)y[j] / sum);
}

int F(mt_softmax_forward)(const T *x, T *y, int64_t rows, int64_t cols, T scale,
                          const T *mask_add, const uint8_t *mask_bool, int64_t mask_ndim,
                          const int64_t *row_shape, const int64_t *mask_row_strides,
                          int64_t mask_col_stride, int64_t causal_lq) {
    const int has_mask = mask_add != NULL || mask_bool != NULL;
    if (rows < 0 || cols < 0 || causal_lq < 0 || mask_ndim < 0) return MT_ERR_ARGS;
    if (mask_add && mask_bool) return MT_ERR_ARGS;
    if (mask_col_stride != 0 && mask_col_stride != 1) return MT_ERR_ARGS;
    if (has_mask && mask_ndim > 0 && (!row_shape || !mask_row_strides)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_softmax_forward, x, y, rows, cols, scale, mask_add, mask_bool, mask_ndim,
                 row_shape, mask_row_strides, mask_col_stride, causal_lq);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        int64_t live = cols;
        if (causal_lq > 0 && r % causal_lq + 1 < cols) live = r % causal_lq + 1;
        int64_t off = has_mask ? mt_mask_row_offset(r, mask_ndim, row_shape, mask_row_strides) : 0;
        F(softmax_row)(x + r * cols, y + r * cols, cols, scale, mask_add ? mask_add + off : NULL,
                       mask_bool ? mask_bool + off : NULL, mask_col_stride, live);
    }
    return 0;
}

int F(mt_softmax_backward)(const T *y, const T *dy, T *dx, int64_t rows, int64_t cols,
                           T scale) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_softmax_backward, y, dy, dx, rows, cols, scale);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *yr = y + r * cols, *dyr = dy + r * cols;
        double dot = 0;
        for (int64_t j = 0; j < cols; ++j) dot += (double)dyr[j] * yr[j];
        for (int64_t j = 0; j < cols; ++j)
            dx[r * cols + j] = (T)(scale * yr[j] * ((double)dyr[j] - dot));
    }
    return 0;
}

int F(mt_log_softmax_forward)(const T *x, T *y, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_log_softmax_forward, x, y, rows, cols);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols;
        double max = -INFINITY;
        for (int64_t j = 0; j < cols; ++j)
            if (xr[j] > max || isnan(xr[j])) max = xr[j];
        if (max == -INFINITY) { /* all -inf: the log of softmax's zeros */
            for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = -(T)INFINITY;
            continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < cols; ++j) sum += exp(xr[j] - max);
        double log_sum = log(sum);
        for (int64_t j = 0; j < cols; ++j) y[r * cols + j] = (T)((xr[j] - max) - log_sum);
    }
    return 0;
}

int F(mt_log_softmax_backward)(const T *y, const T *dy, T *dx, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_log_softmax_backward, y, dy, dx, rows, cols);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *yr = y + r * cols, *dyr = dy + r * cols;
        double total = 0;
        for (int64_t j = 0; j < cols; ++j) total += dyr[j];
        for (int64_t j = 0; j < cols; ++j) dx[r * cols + j] = (T)(dyr[j] - exp(yr[j]) * total);
    }
    return 0;
}
#endif
