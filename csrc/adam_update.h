/* adam_update.h — the loop of one Adam / AdamW step (the formula in adam.c) over a list of
 * parameters, split over the threads by element count.
 *
 * Included twice, each time inside a body for T: by adam.c, where it is the reference body,
 * compiled for baseline x86-64, and by tuned/adam_tuned.c once per ISA level, where GCC
 * vectorizes the same loop with that level's registers. The includer names this copy's
 * functions through ADAM_NAME(name), and turns off FMA contraction for the whole file.
 */

/* sqrt rounded to T (sqrtf for float), as numpy's np.sqrt of a float32 array */
#undef MT_SQRT
#define MT_SQRT(x) _Generic((x), float: sqrtf, default: sqrt)(x)

/* Elements [lo, hi) of one parameter. Every flag is a select on loaded values, and amsgrad a
 * compile-time constant of each copy (adam_span), so the compiler vectorizes the loop. */
static inline __attribute__((always_inline)) void ADAM_NAME(adam_span_body)(
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

static void ADAM_NAME(adam_span)(T *p, const T *grad, T *m, T *v, T *v_max, int64_t lo,
                                 int64_t hi, T step, T bc2_sqrt, T eps, T beta2,
                                 T one_minus_beta2, T lerp_w, int lerp_from_end, T wd, int l2,
                                 T decay, int decoupled, int maximize) {
    if (v_max)
        ADAM_NAME(adam_span_body)(p, grad, m, v, v_max, lo, hi, step, bc2_sqrt, eps,
                                  beta2,
                                  one_minus_beta2, lerp_w, lerp_from_end, wd, l2, decay,
                                  decoupled, maximize, 1);
    else
        ADAM_NAME(adam_span_body)(p, grad, m, v, NULL, lo, hi, step, bc2_sqrt, eps,
                                  beta2,
                                  one_minus_beta2, lerp_w, lerp_from_end, wd, l2, decay,
                                  decoupled, maximize, 0);
}

/* Parameters [0, count), `total` elements in all; the per-parameter and derived scalars as
 * mt_adam_step computes them from its arguments. Returns 0. */
int ADAM_NAME(adam_run)(int64_t count, T *const *params, const T *const *grads,
                        T *const *exp_avgs, T *const *exp_avg_sqs, T *const *max_exp_avg_sqs,
                        const int64_t *sizes, int64_t total, const double *step_sizes,
                        const double *bias_correction2_sqrts, double eps, double beta2,
                        T lerp_w, int lerp_from_end, double weight_decay, int l2, T decay,
                        int decoupled, int maximize) {
    const int nt = mt_threads_for(total);
#pragma omp parallel num_threads(nt)
    {
        const int tid = mt_thread_num(), nthr = mt_team_size();
        const int64_t lo = total * tid / nthr, hi = total * (tid + 1) / nthr;
        int64_t start = 0; /* of parameter t in the concatenation */
        for (int64_t t = 0; t < count && start < hi; start += sizes[t], ++t) {
            int64_t a = lo > start ? lo - start : 0;
            int64_t b = hi < start + sizes[t] ? hi - start : sizes[t];
            if (a >= b) continue;
            ADAM_NAME(adam_span)(params[t], grads[t], exp_avgs[t], exp_avg_sqs[t],
                                 max_exp_avg_sqs ? max_exp_avg_sqs[t] : NULL, a, b,
                                 (T)(-step_sizes[t]), (T)bias_correction2_sqrts[t], (T)eps,
                                 (T)beta2, (T)(1 - beta2), lerp_w, lerp_from_end,
                                 (T)weight_decay, l2, decay, decoupled, maximize);
        }
    }
    return 0;
}
