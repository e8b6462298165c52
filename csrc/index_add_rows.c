/* index_add_rows.c — summing rows of src into rows of out picked by integer indices, for float
 * and double: the gradient of picking rows (x[idx] along dim 0, F.embedding's weight).
 *
 *   out = 0;  out[rows[i], :] += src[i, :]      for i in [0, n)
 *
 * out is out_rows x cols and src n x cols, both contiguous; an index may repeat (its rows add
 * up). numpy has no fast form of this: np.add.at is an unbuffered loop, and a sort followed by
 * np.add.reduceat over dim 0 reads each row with the row length as stride (~2.5 ms for 32
 * rows of 16384 floats). Every rows[i] must lie in [0, out_rows): the entry point checks them
 * all before writing anything. The threads split the columns, so that no two of them add into
 * one element and each element gets its additions in the order of i (the same result for any
 * thread count). Each thread zeroes its own columns of out before adding into them: zeroed by
 * the caller's thread, half of out sat in the other core's cache, and fetching it from there
 * made 2 threads slower than 1. Only this plain body exists: every ISA level runs it (GCC
 * vectorizes the row loop). This file is its own body, compiled once per element type T
 * (each_dtype.h).
 */
#ifndef T
#define MT_BODY "index_add_rows.c"
#include "each_dtype.h"

#else

int F(mt_index_add_rows)(const T *src, const int64_t *rows, T *out, int64_t n, int64_t cols,
                         int64_t out_rows) {
    if (n < 0 || cols < 0 || out_rows < 0) return MT_ERR_ARGS;
    for (int64_t i = 0; i < n; ++i)
        if (rows[i] < 0 || rows[i] >= out_rows) return MT_ERR_ARGS;
    /* a thread per 2 KiB of a row at most: with shorter shares (an embedding of 128 floats),
     * 2 threads ran slower than 1 */
    const int64_t most = cols * (int64_t)sizeof(T) / 2048;
    int nt = mt_threads_for((n + out_rows) * cols);
    if (nt > most) nt = most > 1 ? (int)most : 1;
#pragma omp parallel num_threads(nt)
    {
        /* this thread's columns [j0, j1): whole 64-byte lines, so no line is shared */
        const int64_t team = mt_team_size(), line = 64 / (int64_t)sizeof(T);
        const int64_t per = ((cols + team - 1) / team + line - 1) / line * line;
        const int64_t j0 = mt_thread_num() * per, j1 = j0 + per < cols ? j0 + per : cols;
        for (int64_t r = 0; r < out_rows && j0 < j1; ++r)
            for (int64_t j = j0; j < j1; ++j) out[r * cols + j] = 0;
        for (int64_t i = 0; i < n && j0 < j1; ++i) {
            T *o = out + rows[i] * cols;
            const T *s = src + i * cols;
            for (int64_t j = j0; j < j1; ++j) o[j] += s[j];
        }
    }
    return 0;
}
#endif
