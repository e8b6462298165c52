/* reduce_rows.c — sums and extremes over the last dim, for float and double:
 *
 *   sum_rows    y_r = scale * sum_j x_rj        (sum: scale 1; mean: scale 1/cols)
 *   amax_rows   y_r = max_j x_rj  (largest)  or  min_j x_rj  (!largest); NaN if the row has one
 *
 * x is rows x cols, contiguous: a reduction over the trailing dims of a contiguous tensor, or
 * over all of it (rows = 1). numpy reduces on one core, over the last axis with a scalar
 * pairwise loop; PyTorch on every thread. An empty row sums to 0 (times scale); amax_rows needs
 * cols >= 1. The reference bodies sum in double, one row per thread; the tuned ones
 * (tuned/reduce_rows_tuned.c) sum in vector blocks and split long rows over the threads. This
 * file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "reduce_rows.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

int F(mt_sum_rows)(const T *x, T *y, int64_t rows, int64_t cols, double scale) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_sum_rows, x, y, rows, cols, scale);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < cols; ++j) sum += x[r * cols + j];
        y[r] = (T)(scale * sum);
    }
    return 0;
}

int F(mt_amax_rows)(const T *x, T *y, int64_t rows, int64_t cols, int largest) {
    if (rows < 0 || cols < 0 || (rows > 0 && cols == 0)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_amax_rows, x, y, rows, cols, largest);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols;
        T best = xr[0];
        for (int64_t j = 0; j < cols && !isnan(best); ++j)
            if (isnan(xr[j]) || (largest ? xr[j] > best : xr[j] < best)) best = xr[j];
        y[r] = best;
    }
    return 0;
}
#endif
