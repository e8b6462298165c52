/* tuned/bias_relu_tuned.c — csrc/bias_relu.c's bias + ReLU over the threads, vectorized.
 *
 * Forward: the rows are shared among the threads, each row one `omp simd` loop. Backward: each
 * thread owns a range of whole 16-column units (as in sum_cols.c) and sums its columns in row
 * order, so each db_j is one thread's sum in row order, whatever the thread count. One thread
 * walks the rows once, writing dx and adding it into accumulators kept in L1; a team (for 6 MiB
 * of dy and more) writes dx a block of rows at a time (rows shared out), then each thread adds
 * the block's rows into its columns' sums while the block is still in cache. Compiled once per
 * ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include "mt_internal.h"
#define MT_BIAS_RELU_CHUNK 2048
#define MT_BIAS_RELU_BLOCK_BYTES (128 * 1024) /* a block of dx, in L2 until its sums are taken */
/* Smaller dy go to one thread: a team's threads read back each block's rows that the other
 * wrote (for their columns' sums), which costs more than the second thread saves */
#define MT_BIAS_RELU_TEAM_BYTES (6 << 20)
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

/* Columns [j0, j1) of all rows in one pass: dx written and added into the chunk's sums (kept
 * in L1 while the rows stream past), each db_j in row order. */
static void V(column_range_backward)(const T *dy, const T *y, T *dx, T *dbias, int64_t rows,
                                     int64_t cols, int64_t j0, int64_t j1) {
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

int V(tuned_bias_relu_backward)(const T *dy, const T *y, T *dx, T *dbias, int64_t rows,
                                int64_t cols) {
    const int nt = rows * cols * (int64_t)sizeof(T) < MT_BIAS_RELU_TEAM_BYTES
                       ? 1 : mt_column_threads(rows, cols);
    if (nt == 1 || cols > MT_BIAS_RELU_CHUNK) {
#pragma omp parallel num_threads(nt)
        {
            int64_t j0, j1;
            mt_my_columns(cols, &j0, &j1);
            V(column_range_backward)(dy, y, dx, dbias, rows, cols, j0, j1);
        }
        return 0;
    }
    /* A team writes dx a block of rows at a time, the rows shared out, then each thread adds the
     * block into its columns' sums (row order still) while the block is in cache: a team
     * splitting every row into column ranges ran slower than 1 thread in a training step. */
    const int64_t block = MT_BIAS_RELU_BLOCK_BYTES / ((int64_t)sizeof(T) * cols) + 1;
#pragma omp parallel num_threads(nt)
    {
        const int64_t tid = mt_thread_num(), team = mt_team_size();
        int64_t j0, j1;
        mt_my_columns(cols, &j0, &j1);
        T acc[MT_BIAS_RELU_CHUNK];
        for (int64_t j = 0; j < j1 - j0; ++j) acc[j] = 0;
        for (int64_t b0 = 0; b0 < rows; b0 += block) {
            const int64_t b1 = b0 + block < rows ? b0 + block : rows;
            for (int64_t i = b0 + (b1 - b0) * tid / team; i < b0 + (b1 - b0) * (tid + 1) / team;
                 ++i) {
                const T *dyi = dy + i * cols, *yi = y + i * cols;
                T *dxi = dx + i * cols;
#pragma omp simd
                for (int64_t j = 0; j < cols; ++j) dxi[j] = yi[j] <= 0 ? 0 : dyi[j];
            }
#pragma omp barrier
            for (int64_t i = b0; i < b1; ++i) {
                const T *dxi = dx + i * cols + j0;
#pragma omp simd
                for (int64_t j = 0; j < j1 - j0; ++j) acc[j] += dxi[j];
            }
        }
        for (int64_t j = 0; j < j1 - j0; ++j) dbias[j0 + j] = acc[j];
    }
    return 0;
}
#endif
