/* tuned/softmax_tuned.c — softmax and log-softmax over the last dim, forward and backward, at
 * memory speed.
 *
 * The reference bodies (csrc/softmax.c) call libm's exp once per element and walk each row
 * three times; here the exp is the vector one of fast_exp.c, the max and sums are vector
 * reductions (row_ops.h), the masked row builds its scores in one pass, and each row's exp pass
 * prefetches the next row, so that a row costs about one read and one write of memory.
 * Each row: z = x*scale (+ mask), m = max z, e = exp(z - m), y = e / sum e. The row is at most a
 * few hundred KiB, so the passes after the first hit L1/L2. Unmasked rows go further: each
 * thread's rows are a pipeline in which one loop computes row r's exps, row r + 1's max and
 * row r - 1's final values (row_exp_sum_pipelined), since the exp alone keeps the FMA pipes
 * busy and the other passes would cost their loads and stores on top. A float64 backward, or
 * masked forward, of at least MT_STREAM_BYTES writes its output around the cache (row_ops.h).
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/softmax_tuned.c"
#include "each_isa.h"
#else
#include "row_ops.h"
#include "softmax_rows.h"

int V(tuned_softmax_forward)(const T *x, T *y, int64_t rows, int64_t cols, T scale,
                             const T *mask_add, const uint8_t *mask_bool, int64_t mask_ndim,
                             const int64_t *row_shape, const int64_t *mask_row_strides,
                             int64_t mask_col_stride, int64_t causal_lq) {
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel num_threads(nt)
    {
        const int64_t tid = mt_thread_num(), team = mt_team_size();
        V(softmax_rows)(x, y, rows, rows * tid / team, rows * (tid + 1) / team, cols, scale,
                        mask_add, mask_bool, mask_ndim, row_shape, mask_row_strides,
                        mask_col_stride, causal_lq);
    }
    return 0;
}

/* softmax_backward_rows with each row's whole lines of dx written around the cache
 * (MT_STREAM_BYTES, whole_lines), the same values; dx aligned to its element size. */
static void V(softmax_backward_rows_streaming)(const T *y, const T *dy, T *dx, int64_t r0,
                                               int64_t r1, int64_t n, T scale) {
    for (int64_t r = r0; r < r1; ++r) {
        const T *yr = y + r * n, *dyr = dy + r * n;
        T *dxr = dx + r * n;
        const T dot = (T)V(row_dot)(dyr, yr, n);
        int64_t j = 0, from, to;
        V(whole_lines)(dxr, n, &from, &to);
        for (; j < from; ++j) dxr[j] = scale * yr[j] * (dyr[j] - dot);
        for (; j + (int64_t)(MT_VEC_BYTES / sizeof(T)) <= to;
             j += (int64_t)(MT_VEC_BYTES / sizeof(T))) {
            V(vec) yv, dyv;
            MT_VLOAD(yv, yr + j);
            MT_VLOAD(dyv, dyr + j);
            const V(vec) dxv = scale * yv * (dyv - dot);
            V(stream_store)(dxr + j, &dxv);
        }
        for (; j < n; ++j) dxr[j] = scale * yr[j] * (dyr[j] - dot);
    }
}

int V(tuned_softmax_backward)(const T *y, const T *dy, T *dx, int64_t rows, int64_t cols,
                              T scale) {
    int nt = mt_threads_for(rows * cols);
    const int streaming = rows * cols * (int64_t)sizeof(T) >= MT_STREAM_BYTES &&
                          (uintptr_t)dx % sizeof(T) == 0;
#pragma omp parallel num_threads(nt)
    {
        const int64_t tid = mt_thread_num(), team = mt_team_size();
        const int64_t r0 = rows * tid / team, r1 = rows * (tid + 1) / team;
        if (streaming) {
            V(softmax_backward_rows_streaming)(y, dy, dx, r0, r1, cols, scale);
#ifdef MT_X86
            _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
        } else {
            V(softmax_backward_rows)(y, dy, dx, r0, r1, cols, scale);
        }
    }
    return 0;
}

/* Rows [r0, r1) of log-softmax in one pass each: a row's exp loop also takes the next row's
 * max and writes the previous row's y = (x - m) - log_sum (row_exp_sum_pipelined), around the
 * cache where `stream` (see MT_STREAM_BYTES). */
static void V(log_softmax_rows)(const T *x, T *y, int64_t r0, int64_t r1, int64_t n,
                                int stream) {
    F(mt_row_finish) pending = {0}; /* the previous row, its y still to write */
    const int to_l2 = MT_AHEAD_TO_L2(2 * (r1 - r0) * n * (int64_t)sizeof(T)); /* x and y */
    T m = r0 < r1 ? V(row_max)(x + r0 * n, n) : 0;
    for (int64_t r = r0; r < r1; ++r) {
        const T *xr = x + r * n;
        T *yr = y + r * n;
        T next_max;
        /* (out, for rows from beyond L2 not streamed: y's lines are fetched for writing now, a
         * row ahead of its values; from cache the exps are only summed, those stores a pass of
         * their own) */
        double log_sum = V(row_log_sum_exp_known_max)(xr, to_l2 && !stream ? yr : NULL, n, &m,
                                                      r + 1 < r1 ? xr + n : NULL,
                                                      &next_max, &pending,
                                                      MT_ROW_AFTER_NEXT(x, r, r1, n), to_l2);
        if (log_sum == -INFINITY) { /* all -inf: log of softmax's zeros, not NaN */
            for (int64_t j = 0; j < n; ++j) yr[j] = -(T)INFINITY;
            pending.y = NULL;
        } else {
            /* (x - m) - log_sum with log_sum split hi + lo: x - m is exact near the max
             * (Sterbenz), so T keeps the double log_sum's precision without converting every
             * element to double. */
            pending.y = yr;
            pending.x = xr;
            pending.shift = m;
            pending.hi = (T)log_sum;
            pending.lo = (T)(log_sum - (double)pending.hi);
            pending.stream_to = stream ? yr : NULL;
        }
        m = next_max;
    }
    V(row_finish)(&pending, n);
}

int V(tuned_log_softmax_forward)(const T *x, T *y, int64_t rows, int64_t cols) {
    int nt = mt_threads_for(rows * cols);
    const int stream = V(streams_rows)(y, rows, cols);
#pragma omp parallel num_threads(nt)
    {
        const int64_t tid = mt_thread_num(), team = mt_team_size();
        V(log_softmax_rows)(x, y, rows * tid / team, rows * (tid + 1) / team, cols, stream);
#ifdef MT_X86
        if (stream) _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
    }
    return 0;
}

/* The log-softmax backward's output streamed around the cache where the level has it */
#if MT_CAT(MT_LANE_MASKS, ISA)
#define LSM_STREAMED_AXPY V(exp_axpy_add_streamed)
#define LSM_STREAM_FROM MT_STREAM_BYTES
#else
#define LSM_STREAMED_AXPY(...) (void)0 /* (never taken) */
#define LSM_STREAM_FROM INT64_MAX
#endif

/* dy_ahead: the next row of dy (MT_NEXT_ROW), whose sum is that row's first pass; this row's
 * y, read by the second, is asked for during the first */
static void V(log_softmax_backward_row)(const T *y, const T *dy, T *dx,
                                        int64_t n, const T *dy_ahead, int stream) {
    T total = (T)V(row_dot_ahead)(dy, NULL, n, dy_ahead ? y : NULL);
    if (stream) /* dy - total exp(y) */
        LSM_STREAMED_AXPY(y, dx, n, (T)0, (T)0, -total, dy, dy_ahead);
    else
        V(row_exp_axpy)(y, dx, n, (T)0, (T)0, -total, dy, (T)0, dy_ahead);
}

int V(tuned_log_softmax_backward)(const T *y, const T *dy, T *dx, int64_t rows,
                                  int64_t cols) {
    int nt = mt_threads_for(rows * cols);
    /* (float32 below twice that only where dx, y and dy lie at one offset in a line: from
     * another, every vector load of y and dy straddles two lines, and streaming 16 MiB ran at
     * 0.74x ordinary stores on 1 thread; float64's exps hide that, and from 32 MiB ordinary
     * stores lose more) */
    const int64_t bytes = rows * cols * (int64_t)sizeof(T);
    const uintptr_t offset = (uintptr_t)dx % 64;
    const int congruent = (uintptr_t)y % 64 == offset && (uintptr_t)dy % 64 == offset;
    const int stream = bytes >= LSM_STREAM_FROM && (uintptr_t)dx % sizeof(T) == 0 &&
                       (sizeof(T) == 8 || congruent || bytes / 2 >= LSM_STREAM_FROM);
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r)
            V(log_softmax_backward_row)(y + r * cols, dy + r * cols, dx + r * cols, cols,
                                        MT_NEXT_ROW(dy, r, rows, cols), stream);
#ifdef MT_X86
        if (stream) _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
    }
    return 0;
}

#undef LSM_STREAMED_AXPY
#undef LSM_STREAM_FROM

#endif
