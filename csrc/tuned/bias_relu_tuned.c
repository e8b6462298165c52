/* tuned/bias_relu_tuned.c — csrc/bias_relu.c's bias + ReLU over the threads, vectorized.
 *
 * Forward: the rows are shared among the threads, each row one `omp simd` loop. Backward: as
 * in sum_cols.c, the threads take disjoint ranges of whole 16-column units, and each walks the
 * rows for its range in chunks of MT_BIAS_RELU_CHUNK columns, writing dx and adding it into
 * the chunk's accumulators (kept in L1 while the rows stream past); each db_j is one thread's
 * sum in row order, whatever the thread count. Compiled once per ISA level and element type
 * (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include "mt_internal.h"
#define MT_BIAS_RELU_CHUNK 2048
#define MT_BODY "tuned/bias_relu_tuned.c"
#include "each_isa.h"
#else

int V(tuned_bias_relu_forward)(const T *x, const T *bias, T *y, int64_t rows, int64_t cols) {
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t i = 0; i < rows; ++i) {
        const T *xi = x + i * cols;
        T *yi = y + i * cols;
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) {
            T z = xi[j] + bias[j];
            yi[j] = z < 0 ? 0 : z;
        }
    }
    return 0;
}

int V(tuned_bias_relu_backward)(const T *dy, const T *y, T *dx, T *dbias, int64_t rows,
                                int64_t cols) {
#pragma omp parallel num_threads(mt_column_threads(rows, cols))
    {
        int64_t j0, j1;
        mt_my_columns(cols, &j0, &j1);
        T acc[MT_BIAS_RELU_CHUNK];
        for (int64_t c0 = j0; c0 < j1; c0 += MT_BIAS_RELU_CHUNK) {
            const int64_t width = j1 - c0 < MT_BIAS_RELU_CHUNK ? j1 - c0 : MT_BIAS_RELU_CHUNK;
            for (int64_t j = 0; j < width; ++j) acc[j] = 0;
            for (int64_t i = 0; i < rows; ++i) {
                const T *dyi = dy + i * cols + c0, *yi = y + i * cols + c0;
                T *dxi = dx + i * cols + c0;
#pragma omp simd
                for (int64_t j = 0; j < width; ++j) {
                    T d = yi[j] <= 0 ? 0 : dyi[j];
                    dxi[j] = d;
                    acc[j] += d;
                }
            }
            for (int64_t j = 0; j < width; ++j) dbias[c0 + j] = acc[j];
        }
    }
    return 0;
}
#endif
