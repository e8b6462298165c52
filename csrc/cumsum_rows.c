/* cumsum_rows.c — the running sum along each row, for float and double: cumsum's kernel.
 *
 *   y[r, j] = x[r, 0] + x[r, 1] + ... + x[r, j]      summed in double, as PyTorch's CPU cumsum
 *
 * x and y are rows x cols, contiguous; y may be x (in place). numpy's cumsum along the last
 * axis is a scalar loop with a per-row setup and float32 sums. The threads split the rows;
 * each row is summed in its order, so the result is the same for any thread count. Only this
 * plain body exists: every ISA level runs it. This file is its own body, compiled once per
 * element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "cumsum_rows.c"
#include "each_dtype.h"

#else

int F(mt_cumsum_rows)(const T *x, T *y, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *in = x + r * cols;
        T *out = y + r * cols;
        double total = 0;
        for (int64_t j = 0; j < cols; ++j) {
            total += in[j];
            out[j] = (T)total;
        }
    }
    return 0;
}
#endif
