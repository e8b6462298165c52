/* triangle.c — keeping the lower or upper triangle of a batch of matrices (torch.tril /
 * torch.triu, and their gradients, which are the same op on the gradient), for elements of any
 * dtype:
 *
 *   lower: out[m, i, j] = x[m, i, j] if j - i <= diagonal, else 0
 *   upper: out[m, i, j] = x[m, i, j] if j - i >= diagonal, else 0
 *
 * x and out are (matrices, rows, cols), contiguous, of elements of itemsize bytes; zero is
 * all-zero bytes in every dtype, so each row is one copy of its kept columns and one fill of
 * the rest: the output is written once, and only the kept part of x is read. The threads split
 * the rows. Only this plain body exists: every ISA level runs it (memcpy and memset are
 * libc's vector loops already).
 */
#include <string.h>
#include "mt_internal.h"

/* The first column of row i that a lower triangle drops (an upper one: the first it keeps),
 * in [0, cols]: i + diagonal + 1 (lower) or i + diagonal (upper), clamped, without overflow
 * for any diagonal. */
static int64_t triangle_split(int64_t i, int64_t cols, int64_t diagonal, int upper) {
    if (diagonal >= cols) return cols;
    if (diagonal < -i - 1) return 0;
    const int64_t split = i + diagonal + (upper ? 0 : 1);
    return split < 0 ? 0 : split < cols ? split : cols;
}

int mt_keep_triangle(const void *x, void *out, int64_t itemsize, int64_t matrices, int64_t rows,
                     int64_t cols, int64_t diagonal, int upper) {
    if (itemsize < 1 || matrices < 0 || rows < 0 || cols < 0) return MT_ERR_ARGS;
    const int64_t total_rows = matrices * rows, row_bytes = cols * itemsize;
    const char *src = x;
    char *dst = out;
#pragma omp parallel for schedule(static) num_threads(mt_threads_for(total_rows * cols))
    for (int64_t r = 0; r < total_rows; ++r) {
        const int64_t split = triangle_split(r % rows, cols, diagonal, upper) * itemsize;
        const char *s = src + r * row_bytes;
        char *d = dst + r * row_bytes;
        if (upper) {
            memset(d, 0, (size_t)split);
            memcpy(d + split, s + split, (size_t)(row_bytes - split));
        } else {
            memcpy(d, s, (size_t)split);
            memset(d + split, 0, (size_t)(row_bytes - split));
        }
    }
    return 0;
}
