/* mt_internal.h — helpers shared by the kernel files (not part of the public API).
 *
 * Holds: the OpenMP guard, the thread number and team size, how many threads a kernel of a
 * given size should use, the name pasting of bodies written once for an element type T, the
 * row offset of a broadcast mask, and aligned scratch allocation.
 */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include "minitorch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* x86 with GCC-style target attributes: the AVX2 / AVX-512 levels exist. */
#if defined(__GNUC__) && defined(__x86_64__)
#define MT_X86 1
#endif

/* A body written once for element type T (float or double) names its functions F(name),
 * which becomes name_f32 or name_f64 by the suffix SFX defined with T. */
#define MT_CAT_(a, b) a##_##b
#define MT_CAT(a, b) MT_CAT_(a, b)
#define F(name) MT_CAT(name, SFX)

/* Below this many elements a row kernel runs on one thread: waking a team costs more
 * than the work (a few microseconds). */
#define MT_PARALLEL_MIN_ELEMENTS 32768

/* This thread's number and its team's size inside a parallel region (0 and 1 without OpenMP). */
static inline int mt_thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int mt_team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* The L1 data cache's size in bytes, 0 if unknown (runtime.c). */
int64_t mt_l1d_bytes(void);

/* Threads to use for `work` elements of streaming work. */
static inline int mt_threads_for(int64_t work) {
    return work < MT_PARALLEL_MIN_ELEMENTS ? 1 : mt_get_num_threads();
}

/* Column sums split among threads (sum_cols, bias_relu's backward): each thread takes whole
 * units of 16 columns (a cache line of float), so no two write one line, and sums its columns
 * alone in row order, so the thread count never changes a result. mt_column_threads: the team
 * size (no more threads than units); mt_my_columns: this thread's columns [*j0, *j1). */
#define MT_COLUMN_UNIT 16
static inline int mt_column_threads(int64_t rows, int64_t cols) {
    const int64_t units = (cols + MT_COLUMN_UNIT - 1) / MT_COLUMN_UNIT;
    int nt = mt_threads_for(rows * cols);
    return nt > units ? (units > 0 ? (int)units : 1) : nt;
}

static inline void mt_my_columns(int64_t cols, int64_t *j0, int64_t *j1) {
    const int64_t units = (cols + MT_COLUMN_UNIT - 1) / MT_COLUMN_UNIT;
    const int tid = mt_thread_num(), nthr = mt_team_size();
    *j0 = units * tid / nthr * MT_COLUMN_UNIT;
    *j1 = units * (tid + 1) / nthr * MT_COLUMN_UNIT;
    if (*j1 > cols) *j1 = cols;
}

/* Offset of row `row`'s mask in elements: unravel the row index over shape (C order) and dot
 * it with the mask's strides (0 where the mask broadcasts). */
static inline int64_t mt_mask_row_offset(int64_t row, int64_t ndim, const int64_t *shape,
                                         const int64_t *strides) {
    int64_t offset = 0;
    for (int64_t d = ndim - 1; d >= 0; --d) {
        offset += (row % shape[d]) * strides[d];
        row /= shape[d];
    }
    return offset;
}

/* 64-byte aligned scratch (cache line / AVX-512 vector); NULL on failure or overflow. */
static inline void *mt_scratch_alloc(int64_t bytes) {
    if (bytes <= 0) bytes = 64;
    size_t rounded = ((size_t)bytes + 63u) & ~(size_t)63u;
    if ((int64_t)rounded < bytes) return NULL;
    return aligned_alloc(64, rounded);
}

/* Memory asked for ahead (ask_ahead.c): a GEMM on one thread calls mt_ahead_begin(tiles)
 * once, mt_ahead_step() after each tile, and mt_ahead_forget() when it is done. */
#define MT_AHEAD_MAX 32
void mt_ahead_begin(int64_t steps);
void mt_ahead_step(void);
void mt_ahead_forget(void);

#endif /* MT_INTERNAL_H */
