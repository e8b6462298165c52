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
 * elementwise, so the thread count never changes a result.
 * The loop is in adam_update.h. Here it is the reference body, compiled for baseline x86-64:
 * 4 floats a vector, and the square root and division of every element take most of its time
 * (a compute-bound 3 cycles an element). The tuned body (tuned/adam_tuned.c) is the same loop
 * compiled per ISA level, 16 floats a vector at AVX-512, so that the update runs at the speed
 * of its 7 streams of memory. This file is its own body, compiled once per element type T
 * (each_dtype.h).
 */
#ifndef T
/* Contracting a * b + c into one FMA would round once where PyTorch rounds twice. */
#pragma GCC optimize("fp-contract=off")
#define MT_BODY "adam.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"
#define ADAM_NAME F
#include "adam_update.h"
#undef ADAM_NAME

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
    MT_RUN_TUNED(tuned_adam_run, count, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs,
                 sizes, total, step_sizes, bias_correction2_sqrts, eps, beta2, lerp_w,
                 lerp_from_end, weight_decay, l2, decay, decoupled, maximize);
    return F(adam_run)(count, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, sizes,
                       total, step_sizes, bias_correction2_sqrts, eps, beta2, lerp_w,
                       lerp_from_end, weight_decay, l2, decay, decoupled, maximize);
}
#endif
