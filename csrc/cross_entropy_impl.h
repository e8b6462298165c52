/* cross_entropy_impl.h — cross-entropy with integer targets and label smoothing, one dtype.
 *
 * Included by cross_entropy.c with T, SFX defined (after row_ops_impl.h).
 * Per row (PyTorch semantics): lse = log sum_c exp(x_c) (max-subtracted, never log(softmax))
 *   loss = (1-eps)*(lse - x[t]) + eps*(lse - mean_c x_c),   0 when t == ignore_index
 * lse is kept in double for both dtypes (backward needs exp(x - lse) exact for |x| ~ 1e4).
 *   dloss/dx_c = g * (exp(x_c - lse) - (1-eps)*[c == t] - eps/C)
 */
#define CE_(a, b) a##_##b
#define CE(a, b) CE_(a, b)

MT_ROW_KERNEL static T CE(cross_entropy_row, SFX)(const T *x, int64_t n, int64_t t,
                                                 double smoothing, double *lse_out,
                                                 const T *ahead) {
    double lse = CE(row_logsumexp, SFX)(x, NULL, n, ahead);
    *lse_out = lse;
    double loss = (1.0 - smoothing) * (lse - (double)x[t]);
    if (smoothing != 0) /* skipped at eps = 0 so a -inf logit does not give 0 * inf */
        loss += smoothing * (lse - CE(row_sum, SFX)(x, n) / (double)n);
    return (T)loss;
}

int CE(mt_cross_entropy_forward, SFX)(const T *logits, const int64_t *target, int64_t rows,
                                      int64_t cols, int64_t ignore_index,
                                      double label_smoothing, T *loss, double *lse) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    int bad = 0;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt) reduction(| : bad)
    for (int64_t r = 0; r < rows; ++r) {
        const T *x = logits + r * cols;
        int64_t t = target[r];
        if (t == ignore_index || t < 0 || t >= cols) {
            bad |= t != ignore_index;
            loss[r] = 0;
            lse[r] = CE(row_logsumexp, SFX)(x, NULL, cols, NULL);
            continue;
        }
        loss[r] = CE(cross_entropy_row, SFX)(x, cols, t, label_smoothing, &lse[r],
                                             MT_NEXT_ROW(logits, r, rows, cols));
    }
    return bad ? MT_ERR_ARGS : 0;
}

MT_ROW_KERNEL static void CE(cross_entropy_backward_row, SFX)(const T *x, double lse, int64_t t,
                                                             T g, double smoothing, T *dx,
                                                             int64_t n, const T *ahead) {
    T uniform = (T)(smoothing / (double)n);
    /* exp(x - lse) with lse split hi + lo: x - hi is exact where the probability is large,
     * so float32 keeps the double lse's precision. */
    T lse_hi = (T)lse, lse_lo = (T)(lse - (double)lse_hi);
    CE(mt_exp_shifted, SFX)(x, dx, n, (T)1, lse_hi, lse_lo, ahead);
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) dx[j] = g * (dx[j] - uniform);
    dx[t] -= g * (T)(1.0 - smoothing);
}

int CE(mt_cross_entropy_backward, SFX)(const T *logits, const int64_t *target, const double *lse,
                                       const T *grad, int64_t grad_stride, double grad_scale,
                                       int64_t rows, int64_t cols, int64_t ignore_index,
                                       double label_smoothing, T *dlogits) {
    if (rows < 0 || cols < 0) return MT_ERR_ARGS;
    int bad = 0;
    int nt = mt_threads_for(rows * cols);
#pragma omp parallel for schedule(static) num_threads(nt) reduction(| : bad)
    for (int64_t r = 0; r < rows; ++r) {
        T *dx = dlogits + r * cols;
        int64_t t = target[r];
        if (t == ignore_index || t < 0 || t >= cols) {
            bad |= t != ignore_index;
            for (int64_t j = 0; j < cols; ++j) dx[j] = 0;
            continue;
        }
        T g = (T)((double)grad[r * grad_stride] * grad_scale);
        CE(cross_entropy_backward_row, SFX)(logits + r * cols, lse[r], t, g, label_smoothing,
                                            dx, cols, MT_NEXT_ROW(logits, r, rows, cols));
    }
    return bad ? MT_ERR_ARGS : 0;
}

#undef CE
#undef CE_
