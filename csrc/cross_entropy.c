/* cross_entropy.c — cross-entropy loss over rows of logits with int64 targets and label
 * smoothing eps (PyTorch's semantics), forward and backward, for float and double.
 *
 *   m_i    = max_c x_ic,   s_i = log sum_c exp(x_ic - m_i)     (lse_i = m_i + s_i)
 *   loss_i = (1 - eps) * ((m_i - x_i,t_i) + s_i) + eps * (mean_c (m_i - x_ic) + s_i)
 *   dx_ic  = g_i * (exp((x_ic - m_i) - s_i) - (1 - eps) * [c == t_i] - eps / C)
 *
 * Rows whose target is ignore_index have loss 0 and gradient 0. The forward hands the backward
 * lse as the pair (m_i, s_i), in double for both dtypes, and every formula keeps the shift by
 * m: m + s would lose s where |m| >> 1 (log-softmax of [1e17, 1e17] is -log 2, not 0), and
 * the mean of x itself overflows float32 near 3e38. The reference bodies below use libm's exp
 * and double sums; the tuned ones are in tuned/cross_entropy_tuned.c. This file is its own
 * body, compiled once per element type T (each_dtype.h).
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

/* lse[0] = m = max x (NaN if x has one), lse[1] = log sum exp(x - m); both -inf for an empty
 * or all -inf row. */
static void F(logsumexp)(const T *x, int64_t n, double *lse) {
    double max = -INFINITY;
    for (int64_t c = 0; c < n; ++c)
        if (x[c] > max || isnan(x[c])) max = x[c];
    lse[0] = max;
    lse[1] = -INFINITY;
    if (max == -INFINITY) return;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += exp(x[c] - max);
    lse[1] = log(sum);
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
        F(logsumexp)(x, cols, lse + 2 * r);
        const double m = lse[2 * r], log_sum = lse[2 * r + 1];
        loss[r] = 0;
        if (target[r] == ignore_index) continue;
        double l = (1 - eps) * ((m - x[target[r]]) + log_sum);
        if (eps != 0) { /* skipped at eps = 0, where a -inf logit would give 0 * inf */
            double below = 0; /* sum of m - x: the mean of x overflows float32 near 3e38 */
            for (int64_t c = 0; c < cols; ++c) below += m - x[c];
            l += eps * (below / (double)cols + log_sum);
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
        const double m = lse[2 * r], log_sum = lse[2 * r + 1];
        for (int64_t c = 0; c < cols; ++c) {
            double d = exp((x[c] - m) - log_sum) - eps / (double)cols -
                       (c == target[r] ? 1 - eps : 0);
            dx[c] = ignored ? 0 : (T)(g * d);
        }
    }
    return 0;
}
#endif
