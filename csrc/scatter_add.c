/* scatter_add.c — adding values along one dim at integer indices (torch.scatter_add), for
 * float and double: the adjoint of gather (gather.c), so the gradient of gather too.
 *
 *   out = base (or zeros);  out[a, index[a, j, b], b] += src[a, j, b]    a < outer, j < n,
 *                                                                          b < inner
 *
 * out and base are (outer, size, inner), index and src (outer, n, inner), all contiguous; an
 * index below 0 counts from the end, and indices may repeat (their values add up). Every
 * index must lie in [-size, size): each is checked before it is used, and MT_ERR_ARGS comes
 * back if any was outside (nothing written at it; the output is the caller's to discard).
 *
 * Threads: the additions into out[a, :, b] all come from src[a, :, b], so the columns (a, b)
 * are independent. Each thread takes a range of them (whole cache lines of b where inner > 1),
 * sets them to base and then adds its src values in the order of j: no two threads write one
 * element, no atomics are needed, and each element gets its additions in the same order on any
 * thread count (the same order as numpy's np.add.at), so the result is the same bit for bit.
 * Only this plain body exists: every ISA level runs it. This file is its own body, compiled
 * once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "scatter_add.c"
#include "each_dtype.h"

#else

/* Rows a in [a0, a1) of the case inner == 1 (the last dim): out[a, index[a, j]] += src[a, j].
 * A loop of its own, since the general one's b loop of one trip runs 5x slower. */
static int F(scatter_add_rows)(const T *base, const T *src, const int64_t *index, T *out,
                               int64_t size, int64_t n, int64_t a0, int64_t a1) {
    int bad = 0;
    for (int64_t a = a0; a < a1; ++a) {
        T *o = out + a * size;
        for (int64_t i = 0; i < size; ++i) o[i] = base ? base[a * size + i] : (T)0;
        for (int64_t j = a * n; j < (a + 1) * n; ++j) {
            int64_t k = index[j];
            if (k < 0) k += size;
            if (k < 0 || k >= size) bad = 1;
            else o[k] += src[j];
        }
    }
    return bad;
}

/* The columns (a, b) with a * inner + b in [c0, c1), walked one a at a time, b contiguous. */
static int F(scatter_add_columns)(const T *base, const T *src, const int64_t *index, T *out,
                                  int64_t size, int64_t n, int64_t inner, int64_t c0,
                                  int64_t c1) {
    if (inner == 1) return F(scatter_add_rows)(base, src, index, out, size, n, c0, c1);
    int bad = 0;
    for (int64_t a = c0 / inner; a * inner < c1; ++a) {
        const int64_t b0 = c0 > a * inner ? c0 - a * inner : 0;
        const int64_t b1 = c1 < (a + 1) * inner ? c1 - a * inner : inner;
        T *o = out + a * size * inner;
        for (int64_t i = 0; i < size; ++i)
            for (int64_t b = b0; b < b1; ++b)
                o[i * inner + b] = base ? base[a * size * inner + i * inner + b] : (T)0;
        const int64_t *ix = index + a * n * inner;
        const T *s = src + a * n * inner;
        for (int64_t j = 0; j < n; ++j)
            for (int64_t b = b0; b < b1; ++b) {
                int64_t k = ix[j * inner + b];
                if (k < 0) k += size;
                if (k < 0 || k >= size) bad = 1;
                else o[k * inner + b] += s[j * inner + b];
            }
    }
    return bad;
}

int F(mt_scatter_add)(const T *base, const T *src, const int64_t *index, T *out, int64_t outer,
                      int64_t size, int64_t n, int64_t inner) {
    if (outer < 0 || size < 0 || n < 0 || inner < 0) return MT_ERR_ARGS;
    const int64_t columns = outer * inner;
    if (columns == 0 || (size == 0 && n == 0)) return 0;
    int bad = 0;
#pragma omp parallel num_threads(mt_threads_for(columns * (size + n))) reduction(| : bad)
    {
        /* this thread's columns [c0, c1): whole 64-byte lines of b where a line holds several */
        const int64_t team = mt_team_size(), line = inner > 1 ? 64 / (int64_t)sizeof(T) : 1;
        const int64_t per = ((columns + team - 1) / team + line - 1) / line * line;
        const int64_t c0 = mt_thread_num() * per, c1 = c0 + per < columns ? c0 + per : columns;
        if (c0 < c1)
            bad |= F(scatter_add_columns)(base, src, index, out, size, n, inner, c0, c1);
    }
    return bad ? MT_ERR_ARGS : 0;
}
#endif
