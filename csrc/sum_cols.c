/* sum_cols.c — sums down the columns of a matrix, for float and double:
 *
 *   y_j = sum_i x_ij        (x rows x cols, contiguous)
 *
 * The gradient of a bias added to every row (nn.Linear's b in y = x Wᵀ + b): dy summed over
 * the rows. numpy reduces over the first axis on one core, adding row after row in the
 * element type; so does this kernel, so that its sums are numpy's to the bit, but the threads
 * take disjoint column ranges (each column is summed by one thread, in row order: the thread
 * count never changes a result). Columns go in chunks of MT_SUM_COLS_CHUNK so that a chunk's
 * accumulators stay in L1 while the rows stream past. Only the reference body exists (the
 * compiler vectorizes the inner loop; the sum is memory-bound). An empty column (rows 0) sums
 * to 0. This file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_SUM_COLS_CHUNK 2048
#define MT_BODY "sum_cols.c"
#include "each_dtype.h"

#else

int F(mt_sum_cols)(const T *x, T *y, int64_t rows, int64_t cols) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
#pragma omp parallel num_threads(mt_column_threads(rows, cols))
    {
        int64_t j0, j1;
        mt_my_columns(cols, &j0, &j1);
        T acc[MT_SUM_COLS_CHUNK];
        for (int64_t c0 = j0; c0 < j1; c0 += MT_SUM_COLS_CHUNK) {
            const int64_t width = j1 - c0 < MT_SUM_COLS_CHUNK ? j1 - c0 : MT_SUM_COLS_CHUNK;
            for (int64_t j = 0; j < width; ++j) acc[j] = 0;
            int64_t i = 0;
            /* four rows per pass over the accumulators, still added one after another */
            for (; i + 4 <= rows; i += 4) {
                const T *r0 = x + i * cols + c0, *r1 = r0 + cols, *r2 = r1 + cols, *r3 = r2 + cols;
                for (int64_t j = 0; j < width; ++j) acc[j] = acc[j] + r0[j] + r1[j] + r2[j] + r3[j];
            }
            for (; i < rows; ++i) {
                const T *row = x + i * cols + c0;
                for (int64_t j = 0; j < width; ++j) acc[j] += row[j];
            }
            for (int64_t j = 0; j < width; ++j) y[c0 + j] = acc[j];
        }
    }
    return 0;
}
#endif
