/* bias_relu.c — a bias added to every row, then ReLU, forward and backward, for float and
 * double: the feed-forward block's linear1 + ReLU after its GEMM, as one pass each way.
 *
 *   forward   y_ij  = max(x_ij + b_j, 0)     (x + b rounded to T first; NaN stays NaN)
 *   backward  dx_ij = 0 if y_ij <= 0 else dy_ij
 *             db_j  = sum_i dx_ij            (in T, in row order)
 *
 * Unfused, that is the bias add (arith), relu_forward, and in the backward relu_backward then
 * sum_cols: an intermediate the size of the GEMM's output written and read once more each way.
 * The results are those kernels' to the bit: the same roundings, and db summed as sum_cols
 * (and numpy over axis 0) sums, row after row. x, y, dy, dx: rows x cols contiguous; y may be
 * x (in place: the GEMM's fresh output) and dx may be dy. The reference bodies below are the
 * formulas as loops; the tuned ones (tuned/bias_relu_tuned.c) run them over the threads
 * (forward: rows; backward: disjoint column ranges, so each db_j is still one thread's sum in
 * row order: the thread count never changes a result). This file is its own body, compiled
 * once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "bias_relu.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

MT_DECLARE_TUNED(tuned_bias_relu_forward,
                 (const T *x, const T *bias, T *y, int64_t rows, int64_t cols))
MT_DECLARE_TUNED(tuned_bias_relu_backward,
                 (const T *dy, const T *y, T *dx, T *dbias, int64_t rows, int64_t cols))

int F(mt_bias_relu_forward)(const T *x, const T *bias, T *y, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_bias_relu_forward, x, bias, y, rows, cols);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            T z = x[i * cols + j] + bias[j];
            y[i * cols + j] = z < 0 ? 0 : z;
        }
    return 0;
}

int F(mt_bias_relu_backward)(const T *dy, const T *y, T *dx, T *dbias, int64_t rows,
                             int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_bias_relu_backward, dy, y, dx, dbias, rows, cols);
    for (int64_t j = 0; j < cols; ++j) dbias[j] = 0;
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
            T d = y[i * cols + j] <= 0 ? 0 : dy[i * cols + j];
            dx[i * cols + j] = d;
            dbias[j] += d;
        }
    return 0;
}
#endif
