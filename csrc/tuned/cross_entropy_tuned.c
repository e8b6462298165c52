/* tuned/cross_entropy_tuned.c — cross-entropy with integer targets and label smoothing, at
 * memory speed.
 *
 * The reference bodies (csrc/cross_entropy.c) call libm's exp per element and walk each row
 * several times; here the log-sum-exp is a vector max and the vector exp of fast_exp.c with its
 * sum (row_ops.h), and the exp pass prefetches the next row: a 32000-class row is read from
 * memory while the previous row's exps are computed. lse stays in double for both dtypes, and
 * float32 gets exp(x - lse) from lse split in hi + lo parts.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/cross_entropy_tuned.c"
#include "each_isa.h"
#else
#include "row_ops.h"

static T V(cross_entropy_row)(const T *x, int64_t n, int64_t t,
                              double smoothing, double *lse_out,
                              const T *ahead) {
    double lse = V(row_logsumexp)(x, NULL, n, ahead);
    *lse_out = lse;
    double loss = (1.0 - smoothing) * (lse - (double)x[t]);
    if (smoothing != 0) /* skipped at eps = 0 so a -inf logit does not give 0 * inf */
        loss += smoothing * (lse - V(row_sum)(x, n) / (double)n);
    return (T)loss;
}

int V(tuned_cross_entropy_forward)(const T *logits, const int64_t *target, int64_t rows,
                                   int64_t cols, int64_t ignore_index,
                                   double label_smoothing, T *loss, double *lse) {
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *x = logits + r * cols;
        int64_t t = target[r];
        if (t == ignore_index) {
            loss[r] = 0;
            lse[r] = V(row_logsumexp)(x, NULL, cols, NULL);
            continue;
        }
        loss[r] = V(cross_entropy_row)(x, cols, t, label_smoothing, &lse[r],
                                       MT_NEXT_ROW(logits, r, rows, cols));
    }
    return 0;
}

static void V(cross_entropy_backward_row)(const T *x, double lse, int64_t t,
                                          T g, double smoothing, T *dx,
                                          int64_t n, const T *ahead) {
    T uniform = (T)(smoothing / (double)n);
    /* exp(x - lse) with lse split hi + lo: x - hi is exact where the probability is large,
     * so float32 keeps the double lse's precision. */
    T lse_hi = (T)lse, lse_lo = (T)(lse - (double)lse_hi);
    V(exp_shifted)(x, dx, n, (T)1, lse_hi, lse_lo, ahead);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dx[j] = g * (dx[j] - uniform);
    dx[t] -= g * (T)(1.0 - smoothing);
}

int V(tuned_cross_entropy_backward)(const T *logits, const int64_t *target, const double *lse,
                                    const T *grad, int64_t grad_stride, double grad_scale,
                                    int64_t rows, int64_t cols, int64_t ignore_index,
                                    double label_smoothing, T *dlogits) {
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        T *dx = dlogits + r * cols;
        int64_t t = target[r];
        if (t == ignore_index) {
            for (int64_t j = 0; j < cols; ++j) dx[j] = 0;
            continue;
        }
        T g = (T)((double)grad[r * grad_stride] * grad_scale);
        V(cross_entropy_backward_row)(logits + r * cols, lse[r], t, g, label_smoothing,
                                      dx, cols, MT_NEXT_ROW(logits, r, rows, cols));
    }
    return 0;
}

#endif
