/* gather.c — picking elements along one dim at integer indices (torch.gather), for elements of
 * any dtype:
 *
 *   out[a, j, b] = x[a, index[a, j, b], b]      a < outer, j < n, b < inner
 *
 * x is (outer, size, inner) and index and out (outer, n, inner), all contiguous: the caller
 * folds the dims before the gathered one into outer and those after it into inner. An index
 * below 0 counts from the end (index + size); every index must lie in [-size, size): the
 * loop checks each one before it reads, and returns MT_ERR_ARGS if any is outside (the
 * output then holds zeros there and is the caller's to discard).
 *
 * A gather only moves elements, so the body is written once for an unsigned integer type of
 * each width (1, 2, 4, 8 bytes), which copies the bits of any dtype exactly (NaN payloads
 * included), and the entry point picks it by itemsize. The threads split the output into
 * contiguous ranges: every output element depends on its own index only, so they never
 * meet. Along the last dim (inner == 1) a row at a time goes to gather_row, whose tuned
 * version (tuned/gather_tuned.c: AVX-512 vector gathers, 4- and 8-byte elements) runs at that
 * ISA level; every other case runs the plain loops here at every level. This
 * file is its own body, compiled once per element width T.
 */
#ifndef T
#include "mt_internal.h"
#include "tuned/gather_tuned.h"

#define T uint8_t
#define SFX w8
#include "gather.c"
#undef T
#undef SFX
#define T uint16_t
#define SFX w16
#include "gather.c"
#undef T
#undef SFX
#define T uint32_t
#define SFX w32
#include "gather.c"
#undef T
#undef SFX
#define T uint64_t
#define SFX w64
#include "gather.c"
#undef T
#undef SFX

int mt_gather_forward(const void *x, const int64_t *index, void *out, int64_t itemsize,
                      int64_t outer, int64_t size, int64_t n, int64_t inner) {
    if (outer < 0 || size < 0 || n < 0 || inner < 0) return MT_ERR_ARGS;
    switch (itemsize) {
    case 1: return gather_w8(x, index, out, outer, size, n, inner);
    case 2: return gather_w16(x, index, out, outer, size, n, inner);
    case 4: return gather_w32(x, index, out, outer, size, n, inner);
    case 8: return gather_w64(x, index, out, outer, size, n, inner);
    default: return MT_ERR_ARGS;
    }
}

#else

/* out[e] for the flat output positions e in [begin, end); 1 if an index was out of range. */
static int F(gather_range)(const T *x, const int64_t *index, T *out, int64_t size, int64_t n,
                           int64_t inner, int64_t begin, int64_t end) {
    int bad = 0;
    int64_t b = begin % inner, j = (begin / inner) % n;  /* where e sits in out (a, j, b) */
    const T *xa = x + begin / (inner * n) * size * inner;  /* x[a, 0, 0] */
    for (int64_t e = begin; e < end; ++e) {
        int64_t k = index[e];
        if (k < 0) k += size;
        if (k < 0 || k >= size) {
            bad = 1;
            out[e] = 0;
        } else {
            out[e] = xa[k * inner + b];
        }
        if (++b == inner) {  /* next line along j, and after the last, the next a */
            b = 0;
            if (++j == n) {
                j = 0;
                xa += size * inner;
            }
        }
    }
    return bad;
}

/* out[j] = row[index[j]] for j < count: one row along the last dim; 1 if an index was out of
 * range. (The signature of tuned/gather_tuned.h's row gathers.) */
static int F(gather_row)(const void *row_, const int64_t *index, void *out_, int64_t count,
                         int64_t size) {
    const T *row = row_;
    T *out = out_;
    int bad = 0;
    for (int64_t j = 0; j < count; ++j) {
        int64_t k = index[j];
        if (k < 0) k += size;
        if (k < 0 || k >= size) {
            bad = 1;
            out[j] = 0;
        } else {
            out[j] = row[k];
        }
    }
    return bad;
}

/* gather_range for inner == 1, the parts of rows in [begin, end) one at a time. */
static int F(gather_rows)(mt_gather_row_fn gather_row, const T *x, const int64_t *index, T *out,
                          int64_t size, int64_t n, int64_t begin, int64_t end) {
    int bad = 0;
    for (int64_t e = begin; e < end;) {
        const int64_t a = e / n, stop = (a + 1) * n < end ? (a + 1) * n : end;
        bad |= gather_row(x + a * size, index + e, out + e, stop - e, size);
        e = stop;
    }
    return bad;
}

static int F(gather)(const T *x, const int64_t *index, T *out, int64_t outer, int64_t size,
                     int64_t n, int64_t inner) {
    const int64_t total = outer * n * inner;
    if (total == 0) return 0;
    mt_gather_row_fn gather_row = NULL;
    if (inner == 1) {
        const int level = mt_get_isa();
        gather_row = level > MT_ISA_REFERENCE ? mt_tuned_gather_row(level, sizeof(T)) : NULL;
        if (gather_row == NULL) gather_row = F(gather_row);
    }
    int bad = 0;
#pragma omp parallel num_threads(mt_threads_for(total)) reduction(| : bad)
    {
        const int64_t team = mt_team_size(), t = mt_thread_num();
        const int64_t begin = total / team * t + (t < total % team ? t : total % team);
        const int64_t end = begin + total / team + (t < total % team);
        if (begin < end)
            bad |= gather_row ? F(gather_rows)(gather_row, x, index, out, size, n, begin, end)
                              : F(gather_range)(x, index, out, size, n, inner, begin, end);
    }
    return bad ? MT_ERR_ARGS : 0;
}
#endif
