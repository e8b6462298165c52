/* adam.c — one Adam / AdamW step over a list of parameters, in place, for float and double.
 *
 * For each parameter p with gradient g, moments m and v (and v_max with amsgrad), as
 * torch.optim.Adam / AdamW, every operation rounded to the element type T as PyTorch's (and
 * minitorch's numpy) update rounds it:
 *
 *   g = -g                                  if maximize
 *   g = g + wd * p                          if wd != 0 and not decoupled  (Adam's L2 penalty)
 *   p = p * (1 - lr * wd)                   if wd != 0 and decoupled      (AdamW)
 *   m = m + (1 - beta1) * (g - m)           (torch.lerp: for a weight w >= 0.5 it computes
 *                                            g - (1 - w) * (g - m) instead)
 *   v = v * beta2 + (g * (1 - beta2)) * g
 *   v_max = max(v_max, v), and v_max replaces v below       if amsgrad (v_max not NULL)
 *   p = p + (m / (sqrt(v) / bias_correction2_sqrt + eps)) * (-step_size)
 *
 * step_size = lr / (1 - beta1^t) and bias_correction2_sqrt = sqrt(1 - beta2^t) depend on each
 * parameter's own step count t, so the caller gives one of each per parameter. The Python
 * scalars (1 - beta1, beta2, wd, ...) are computed in double and rounded to T once, as numpy
 * rounds a Python float that meets a float32 array.
 *
 * One call updates all `count` parameters, so a model's many small tensors cost one call and
 * one wake-up of the thread team: the threads split the total element count evenly, each
 * walking the stretch of the concatenated parameters that falls to it. The update is
 * elementwise, so the thread count never changes a result. This file has only the reference
 * body (the compiler vectorizes its loop); the update is memory-bound, 7 streams per element.
 * It is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
/* Contracting a * b + c into one FMA would round once where PyTorch rounds twice. */
#pragma GCC optimize("fp-contract=off")
#define MT_BODY "adam.c"
#include "each_dtype.h"

#else
/* sqrt rounded to T (sqrtf for float), as numpy's np.sqrt of a float32 array */
#undef MT_SQRT
#define MT_SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)

/* Elements [lo, hi) of one parameter. Every flag is a select on loaded values, and amsgrad a
 * compile-time constant of each copy (adam_span), so the compiler vectorizes the loop. */
static inline __attribute__((always_inline)) void F(adam_span_body)(
    T *restrict p, const T *restrict grad, T *restrict m, T *restrict v, T *restrict v_max,
    int64_t lo, int64_t hi, T step, T bc2_sqrt, T eps, T beta2, T one_minus_beta2, T lerp_w,
    int lerp_from_end, T wd, int l2, T decay, int decoupled, int maximize, const int amsgrad) {
    for (int64_t i = lo; i < hi; ++i) {
        T pi = p[i], mi = m[i], vi = v[i], g = grad[i];
        g = maximize ? -g : g;
        g = l2 ? g + wd * pi : g;
        pi = decoupled ? pi * decay : pi;
        T d = g - mi;
        mi = lerp_from_end ? g - d * lerp_w : mi + d * lerp_w;
        vi = vi * beta2 + (g * one_minus_beta2) * g;
        T second = vi;
        if (amsgrad) {
            T old = v_max[i];
            second = (old > vi || old != old) ? old : vi; /* np.maximum: a NaN wins */
            v_max[i] = second;
        }
        m[i] = mi;
        v[i] = vi;
        p[i] = pi + (mi / (MT_SQRT(second) / bc2_sqrt + eps)) * step;
    }
}

static void F(adam_span)(T *p, const T *grad, T *m, T *v, T *v_max, int64_t lo, int64_t hi,
                         T step, T bc2_sqrt, T eps, T beta2, T one_minus_beta2, T lerp_w,
                         int lerp_from_end, T wd, int l2, T decay, int decoupled, int maximize) {
    if (v_max)
        F(adam_span_body)(p, grad, m, v, v_max, lo, hi, step, bc2_sqrt, eps, beta2,
                          one_minus_beta2, lerp_w, lerp_from_end, wd, l2, decay, decoupled,
                          maximize, 1);
    else
        F(adam_span_body)(p, grad, m, v, NULL, lo, hi, step, bc2_sqrt, eps, beta2,
                          one_minus_beta2, lerp_w, lerp_from_end, wd, l2, decay, decoupled,
                          maximize, 0);
}

int F(mt_adam_step)(int64_t count, T *const *params, const T *const *grads, T *const *exp_avgs,
                    T *const *exp_avg_sqs, T *const *max_exp_avg_sqs, const int64_t *sizes,
                    const double *step_sizes, const double *bias_correction2_sqrts, double lr,
                    double beta1, double beta2, double eps, double weight_decay,
                    int decoupled_weight_decay, int maximize) {
    if (count < 0 || (count > 0 && (!params || !grads || !exp_avgs || !exp_avg_sqs || !sizes
                                    || !step_sizes || !bias_correction2_sqrts)))
        return MT_ERR_ARGS;
    int64_t total = 0;
    for (int64_t t = 0; t < count; ++t) {
        if (sizes[t] < 0 || (sizes[t] > 0 && (!params[t] || !grads[t] || !exp_avgs[t]
                                               || !exp_avg_sqs[t]
                                               || (max_exp_avg_sqs && !max_exp_avg_sqs[t]))))
            return MT_ERR_ARGS;
        total += sizes[t];
    }
    const double w = 1 - beta1; /* torch.lerp's weight */
    const int lerp_from_end = !(fabs(w) < 0.5);
    const T lerp_w = (T)(lerp_from_end ? 1 - w : w);
    const int l2 = weight_decay != 0 && !decoupled_weight_decay;
    const int decoupled = weight_decay != 0 && decoupled_weight_decay;
    const T decay = (T)(1 - lr * weight_decay);
    int nt = mt_threads_for(total);
#pragma omp parallel num_threads(nt)
    {
        const int tid = mt_thread_num(), nthr = mt_team_size();
        const int64_t lo = total * tid / nthr, hi = total * (tid + 1) / nthr;
        int64_t start = 0; /* of parameter t in the concatenation */
        for (int64_t t = 0; t < count && start < hi; start += sizes[t], ++t) {
            int64_t a = lo > start ? lo - start : 0;
            int64_t b = hi < start + sizes[t] ? hi - start : sizes[t];
            if (a >= b) continue;
            F(adam_span)(params[t], grads[t], exp_avgs[t], exp_avg_sqs[t],
                         max_exp_avg_sqs ? max_exp_avg_sqs[t] : NULL, a, b,
                         (T)(-step_sizes[t]), (T)bias_correction2_sqrts[t], (T)eps, (T)beta2,
                         (T)(1 - beta2), lerp_w, lerp_from_end, (T)weight_decay, l2, decay,
                         decoupled, maximize);
        }
    }
    return 0;
}
#endif
