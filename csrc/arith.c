/* arith.c — the four arithmetic operations and the elementwise max and min of two arrays, on
 * every thread, for float and double:
 *
 *   y = a + b,  a - b,  a * b,  a / b      (op 0, 1, 2, 3), elementwise over rows x cols
 *   y = maximum(a, b),  minimum(a, b)      (op 4, 5): NaN if either is NaN, b on a tie (so
 *                                           max(-0, +0) is +0), as numpy's maximum and minimum
 *
 * Each operand is laid out as "full" (layout 0: rows x cols, contiguous), a "row" (layout 1:
 * cols values, the same for every row, as a bias broadcast over a batch) or a "scalar"
 * (layout 2: one value); at least one of them is full. y is full and may be a full operand (in
 * place). numpy's loops are as fast on one core, but numpy stays on one: on two threads
 * PyTorch's arithmetic took half numpy's time. IEEE results (x / 0 is inf or NaN, no error).
 * The reference body below picks each operand's element by its layout, one element at a time;
 * the tuned one (tuned/arith_tuned.c) runs vector loops over spans. This file is its own body,
 * compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "arith.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

/* operand element (r, j) by its layout: full, row, scalar */
static inline T F(arith_element)(const T *x, int layout, int64_t r, int64_t j, int64_t cols) {
    return layout == 0 ? x[r * cols + j] : layout == 1 ? x[j] : x[0];
}

static inline T F(arith_apply)(int op, T u, T v) {
    switch (op) {
    case 0: return u + v;
    case 1: return u - v;
    case 2: return u * v;
    case 3: return u / v;
    case 4: return u > v || u != u ? u : v;
    default: return u < v || u != u ? u : v;
    }
}

int F(mt_arith)(int op, const T *a, int a_layout, const T *b, int b_layout, T *y, int64_t rows,
                int64_t cols) {
    if (op < 0 || op > 5 || rows < 0 || cols < 0) return MT_ERR_ARGS;
    if (a_layout < 0 || a_layout > 2 || b_layout < 0 || b_layout > 2) return MT_ERR_ARGS;
    if (a_layout != 0 && b_layout != 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_arith, op, a, a_layout, b, b_layout, y, rows, cols);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
            const T u = F(arith_element)(a, a_layout, r, j, cols);
            const T v = F(arith_element)(b, b_layout, r, j, cols);
            y[r * cols + j] = F(arith_apply)(op, u, v);
        }
    return 0;
}
#endif
