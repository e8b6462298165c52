/* tuned/reduce_rows_tuned.c — the sums and extremes of csrc/reduce_rows.c at memory speed.
 *
 * The reference bodies add one element at a time into a double (a 4-cycle chain per element)
 * and give each row to one thread, so a reduction over everything (one row) runs on one core.
 * Here a row is summed by row_ops.h's vector blocks (T lanes within blocks of MT_SUM_BLOCK,
 * block sums in double) and its extreme by a vector max/min that also looks for NaN; when
 * there are fewer rows than threads, each row is cut into one piece per thread and the
 * pieces' results are combined in a fixed order (the same result on every run for a given
 * thread count).
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/reduce_rows_tuned.c"
#include "each_isa.h"
#else
#include "row_ops.h"

#ifndef MT_REDUCE_ROWS_ONCE
#define MT_REDUCE_ROWS_ONCE
/* Piece `t` of `team` of a row of n elements: [*begin, *end), cut at multiples of
 * MT_SUM_BLOCK so that the blocks of the sum are those of one thread's. */
static inline void mt_row_piece(int64_t n, int t, int team, int64_t *begin, int64_t *end) {
    int64_t blocks = (n + MT_SUM_BLOCK - 1) / MT_SUM_BLOCK;
    int64_t per = (blocks + team - 1) / team;
    int64_t b = per * t * MT_SUM_BLOCK, e = b + per * MT_SUM_BLOCK;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}
#endif

/* max_j x[j] (largest) or min_j x[j], NaN if some x[j] is; n >= 1 */
MT_INLINE static T V(row_extreme)(const T *x, int64_t n, int largest) {
    T best = x[0];
    int nan = 0;
    if (largest) {
#pragma omp simd reduction(max : best) reduction(| : nan)
        for (int64_t j = 0; j < n; ++j) {
            best = x[j] > best ? x[j] : best;
            nan |= x[j] != x[j];
        }
    } else {
#pragma omp simd reduction(min : best) reduction(| : nan)
        for (int64_t j = 0; j < n; ++j) {
            best = x[j] < best ? x[j] : best;
            nan |= x[j] != x[j];
        }
    }
    return nan ? (T)NAN : best;
}

int V(tuned_sum_rows)(const T *x, T *y, int64_t rows, int64_t cols, double scale) {
    int nt = mt_threads_for(rows * cols);
    if (rows >= nt) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < rows; ++r) y[r] = (T)(scale * V(row_sum)(x + r * cols, cols));
        return 0;
    }
    for (int64_t r = 0; r < rows; ++r) {
        double partial[nt];
        for (int t = 0; t < nt; ++t) partial[t] = 0;
#pragma omp parallel num_threads(nt)
        {
            int64_t begin, end;
            mt_row_piece(cols, mt_thread_num(), mt_team_size(), &begin, &end);
            if (begin < end) partial[mt_thread_num()] = V(row_sum)(x + r * cols + begin, end - begin);
        }
        double sum = 0;
        for (int t = 0; t < nt; ++t) sum += partial[t];
        y[r] = (T)(scale * sum);
    }
    return 0;
}

int V(tuned_amax_rows)(const T *x, T *y, int64_t rows, int64_t cols, int largest) {
    int nt = mt_threads_for(rows * cols);
    if (rows >= nt) {
#pragma omp parallel for schedule(static) num_threads(nt)
        for (int64_t r = 0; r < rows; ++r) y[r] = V(row_extreme)(x + r * cols, cols, largest);
        return 0;
    }
    for (int64_t r = 0; r < rows; ++r) {
        const T *xr = x + r * cols;
        T partial[nt];
        for (int t = 0; t < nt; ++t) partial[t] = xr[0]; /* a piece-less thread changes nothing */
#pragma omp parallel num_threads(nt)
        {
            int64_t begin, end;
            mt_row_piece(cols, mt_thread_num(), mt_team_size(), &begin, &end);
            if (begin < end) partial[mt_thread_num()] = V(row_extreme)(xr + begin, end - begin, largest);
        }
        y[r] = V(row_extreme)(partial, nt, largest);
    }
    return 0;
}
#endif
