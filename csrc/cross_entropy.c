/* cross_entropy.c — cross-entropy loss over rows of logits with int64 targets and label
 * smoothing eps (PyTorch's semantics), forward and backward, for float and double.
 *
 *   lse_i  = max_c x_ic + log sum_c exp(x_ic - max_c x_ic)
 *   loss_i = (1 - eps) * (lse_i - x_i,t_i) + eps * (lse_i - mean_c x_ic)
 *   dx_ic  = g_i * (exp(x_ic - lse_i) - (1 - eps) * [c == t_i] - eps / C)
 *
 * Rows whose target is ignore_index have loss 0 and gradient 0. lse is kept in double for both
 * dtypes: the backward needs exp(x - lse) exact for |x| ~ 1e4. The reference bodies below use
 * libm's exp and double sums; the tuned ones are in tuned/cross_entropy_tuned.c. This file is
 * its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#include "mt_internal.h"

/* 0 if every target is in [0, cols) or ignore_index: the kernels index rows by them. */
static int mt_check_targets(const int64_t *target, int64_t rows, int64_t cols,
                            int64_t ignore_index) {
    for (int64_t r = 0; r < rows; ++r)
        if (target[r] != ignore_index && (target[r] < 0 || target[r] >= cols)) return MT_ERR_ARGS;
    return 0;
}

#define MT_BODY "cross_entropy.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

static double F(logsumexp)(const T *x, int64_t n) {
    double max = -INFINITY;
    for (int64_t c = 0; c < n; ++c)
        if (x[c] > max) max = x[c];
    if (max == -INFINITY) return -INFINITY;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += exp(x[c] - max);
    return max + log(sum);
}

int F(mt_cross_entropy_forward)(const T *logits, const int64_t *target, int64_t rows,
                                int64_t cols, int64_t ignore_index, double label_smoothing,
                                T *loss, double *lse) {
    if (rows < 0 || cols < 0 || mt_check_targets(target, rows, cols, ignore_index))
        return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_cross_entropy_forward, logits, target, rows, cols, ignore_index,
                 label_smoothing, loss, lse);
    const double eps = label_smoothing;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *x = logits + r * cols;
        lse[r] = F(logsumexp)(x, cols);
        loss[r] = 0;
        if (target[r] == ignore_index) continue;
        double l = (1 - eps) * (lse[r] - x[target[r]]);
        if (eps != 0) { /* skipped at eps = 0, where a -inf logit would give 0 * inf */
            double sum = 0;
            for (int64_t c = 0; c < cols; ++c) sum += x[c];
            l += eps * (lse[r] - sum / (double)cols);
        }
        loss[r] = (T)l;
    }
    return 0;
}

int F(mt_cross_entropy_backward)(const T *logits, const int64_t *target, const double *lse,
                                 const T *grad, int64_t grad_stride, double grad_scale,
                                 int64_t rows, int64_t cols, int64_t ignore_index,
                                 double label_smoothing, T *dlogits) {
    if (rows < 0 || cols < 0 || grad_stride < 0 ||
        mt_check_targets(target, rows, cols, ignore_index))
        return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_cross_entropy_backward, logits, target, lse, grad, grad_stride, grad_scale,
                 rows, cols, ignore_index, label_smoothing, dlogits);
    const double eps = label_smoothing;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t r = 0; r < rows; ++r) {
        const T *x = logits + r * cols;
        T *dx = dlogits + r * cols;
        const int ignored = target[r] == ignore_index;
        const double g = ignored ? 0 : grad[r * grad_stride] * grad_scale;
        for (int64_t c = 0; c < cols; ++c) {
            double d = exp(x[c] - lse[r]) - eps / (double)cols - (c == target[r] ? 1 - eps : 0);
            dx[c] = ignored ? 0 : (T)(g * d);
        }
    }
    return 0;
}
#endif
