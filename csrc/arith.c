/* arith.c — the four arithmetic operations on two arrays, on every thread, for float and double:
 *
 *   y = a + b,  a - b,  a * b,  a / b      (op 0, 1, 2, 3), elementwise over rows x cols
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

int F(mt_arith)(int op, const T *a, int a_layout, const T *b, int b_layout, T *y, int64_t rows,
                int64_t cols) {
    if (op < 0 || op > 3 || rows < 0 || cols < 0) return MT_ERR_ARGS;
    if (a_layout < 0 || a_layout > 2 || b_layout < 0 || b_layout > 2) return MT_ERR_ARGS;
    if (a_layout != 0 && b_layout != 0) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_arith, op, a, a_layout, b, b_layout, y, rows, cols);
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) {
            const T u = F(arith_element)(a, a_layout, r, j, cols);
            const T v = F(arith_element)(b, b_layout, r, j, cols);
            y[r * cols + j] = op == 0 ? u + v : op == 1 ? u - v : op == 2 ? u * v : u / v;
        }
    return 0;
}
#endif
