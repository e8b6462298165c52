/* tuned/arith_tuned.c — the arithmetic of csrc/arith.c in vector loops.
 *
 * The reference body picks both operands' elements by their layouts at every element, which
 * keeps GCC from vectorizing it. Here the work is cut into spans over which each operand is
 * either contiguous or one value, and each (op, layout) pair runs its own plain loop, which GCC
 * vectorizes with the level's registers: equal layouts and scalars as one span of rows x cols
 * split over the threads, a row operand one span per row.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include "mt_internal.h"
#define MT_BODY "tuned/arith_tuned.c"
#include "each_isa.h"
#else

#ifndef MT_ARITH_TUNED_ONCE
#define MT_ARITH_TUNED_ONCE
/* y[j] = OP(a[j], b[j]) for j in [0, n), an operand with step 0 being one value */
#define MT_ARITH_SPAN(OP)                                                   \
    do {                                                                    \
        if (a_step && b_step) {                                             \
            _Pragma("GCC unroll 4")                                         \
            for (int64_t j = 0; j < n; ++j) y[j] = OP(a[j], b[j]);          \
        } else if (a_step) {                                                \
            const T b0 = b[0];                                              \
            _Pragma("GCC unroll 4")                                         \
            for (int64_t j = 0; j < n; ++j) y[j] = OP(a[j], b0);            \
        } else {                                                            \
            const T a0 = a[0];                                              \
            _Pragma("GCC unroll 4")                                         \
            for (int64_t j = 0; j < n; ++j) y[j] = OP(a0, b[j]);            \
        }                                                                   \
    } while (0)
#define MT_ADD(u, v) ((u) + (v))
#define MT_SUB(u, v) ((u) - (v))
#define MT_MUL(u, v) ((u) * (v))
#define MT_DIV(u, v) ((u) / (v))
/* csrc/arith.c's max and min: NaN from either side, b on a tie; a select GCC vectorizes */
#define MT_MAX(u, v) ((u) > (v) || (u) != (u) ? (u) : (v))
#define MT_MIN(u, v) ((u) < (v) || (u) != (u) ? (u) : (v))
#endif

static void V(arith_span)(int op, const T *a, int a_step, const T *b, int b_step, T *y,
                          int64_t n) {
    switch (op) {
    case 0: MT_ARITH_SPAN(MT_ADD); break;
    case 1: MT_ARITH_SPAN(MT_SUB); break;
    case 2: MT_ARITH_SPAN(MT_MUL); break;
    case 3: MT_ARITH_SPAN(MT_DIV); break;
    case 4: MT_ARITH_SPAN(MT_MAX); break;
    default: MT_ARITH_SPAN(MT_MIN); break;
    }
}

int V(tuned_arith)(int op, const T *a, int a_layout, const T *b, int b_layout, T *y,
                   int64_t rows, int64_t cols) {
    const int64_t n = rows * cols;
    int nt = mt_threads_for(n);
    if (a_layout != 1 && b_layout != 1) { /* one span of n elements, a piece per thread */
#pragma omp parallel num_threads(nt)
        {
            const int64_t team = mt_team_size(), line = 64 / (int64_t)sizeof(T);
            const int64_t per = ((n + team - 1) / team + line - 1) / line * line;
            const int64_t j0 = mt_thread_num() * per, j1 = j0 + per < n ? j0 + per : n;
            const int a_full = a_layout == 0, b_full = b_layout == 0;
            if (j0 < j1)
                V(arith_span)(op, a + (a_full ? j0 : 0), a_full, b + (b_full ? j0 : 0), b_full,
                              y + j0, j1 - j0);
        }
        return 0;
    }
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t offset = r * cols;
        V(arith_span)(op, a + (a_layout == 0 ? offset : 0), a_layout != 2,
                      b + (b_layout == 0 ? offset : 0), b_layout != 2, y + offset, cols);
    }
    return 0;
}
#endif
