/* tuned/cross_entropy_tuned.c — cross-entropy with integer targets and label smoothing, at
 * memory speed.
 *
 * The reference bodies (csrc/cross_entropy.c) call libm's exp per element and walk each row
 * several times; here the log-sum-exp is a vector max and the vector exp of fast_exp.c with its
 * sum (row_ops.h), and the exp pass takes the next row's max (row_log_sum_exp_known_max) and
 * prefetches the one after. Long float32 rows streaming from memory (a vocabulary's logits) are
 * read once instead, at the AVX-512 level (fast_exp.h: log_sum_exp_one_pass). The backward's
 * exp and its combination are one loop (row_exp_axpy), whose output, where too big for the
 * cache, goes around it at that level (exp_axpy_streamed). lse is the pair (max, log of the
 * shifted sum), in double for both dtypes, and every formula subtracts the max first
 * (cross_entropy.c).
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

/* sum_j (m - x[j]), the row's distance below its max, in T blocks added in double; redone in
 * double where T overflowed (a float32 row spanning [-3e38, 3e38]). Summed as distances from m,
 * not as x, whose sum overflows float32 near 3e38 and cancels against m. */
static double V(row_sum_below)(const T *x, int64_t n, T m) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        const int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        T block = 0;
#pragma omp simd reduction(+ : block)
        for (int64_t j = j0; j < j1; ++j) block += m - x[j];
        total += (double)block;
    }
    if (!isfinite(total)) {
        total = 0;
        for (int64_t j = 0; j < n; ++j) total += (double)m - (double)x[j];
    }
    return total;
}

/* Long rows' log-sum-exp in one pass where the level and type have it (fast_exp.h) */
#if MT_CAT(MT_ONE_PASS, MT_CAT(ISA, SFX))
#define CE_ONE_PASS(x, n, m) log_sum_exp_one_pass_avx512_f32(x, n, m)
#define CE_ONE_PASS_MIN_BYTES MT_ONE_PASS_MIN_BYTES
#define CE_ONE_PASS_FROM MT_ONE_PASS_FROM
#else
#define CE_ONE_PASS(x, n, m) (*(m) = 0, 0.0) /* (never taken) */
#define CE_ONE_PASS_MIN_BYTES INT64_MAX
#define CE_ONE_PASS_FROM INT64_MAX
#endif

/* The backward's output streamed around the cache where the level has it (fast_exp.h) */
#if MT_CAT(MT_LANE_MASKS, ISA)
#define CE_STREAMED_AXPY V(exp_axpy_streamed)
#define CE_STREAM_FROM (sizeof(T) == 8 ? MT_STREAM_BYTES : 2 * MT_STREAM_BYTES)
#else
#define CE_STREAMED_AXPY(...) (void)0 /* (never taken) */
#define CE_STREAM_FROM INT64_MAX
#endif

/* Rows [r0, r1): lse = (m, log sum exp(x - m)) (see cross_entropy.c) and the loss; each row's
 * exp loop also takes the next row's max (row_log_sum_exp_known_max), or, where one_pass,
 * each row is read once (CE_ONE_PASS). */
static void V(cross_entropy_rows)(const T *logits, const int64_t *target, int64_t r0,
                                  int64_t r1, int64_t n, int64_t ignore_index,
                                  double smoothing, T *loss, double *lse, int one_pass) {
    const int to_l2 = MT_AHEAD_TO_L2((r1 - r0) * n * (int64_t)sizeof(T));
    T m = r0 < r1 && !one_pass ? V(row_max)(logits + r0 * n, n) : 0;
    for (int64_t r = r0; r < r1; ++r) {
        const T *x = logits + r * n;
        T next_max = 0;
        double log_sum;
        if (one_pass) {
            log_sum = CE_ONE_PASS(x, n, &m);
            if (m == -(T)INFINITY) m = V(row_nan_or_minus_inf)(x, n, (T)1);
            if (m != m) log_sum = NAN; /* NaN behind an all -inf max */
        } else {
            log_sum = V(row_log_sum_exp_known_max)(x, NULL, n, &m, r + 1 < r1 ? x + n : NULL,
                                                   &next_max, NULL,
                                                   MT_ROW_AFTER_NEXT(logits, r, r1, n), to_l2);
        }
        lse[2 * r] = (double)m;
        lse[2 * r + 1] = log_sum;
        const int64_t t = target[r];
        loss[r] = 0;
        if (t != ignore_index) {
            double l = (1.0 - smoothing) * (((double)m - (double)x[t]) + log_sum);
            if (smoothing != 0) /* skipped at eps = 0 so a -inf logit does not give 0 * inf */
                l += smoothing * (V(row_sum_below)(x, n, m) / (double)n + log_sum);
            loss[r] = (T)l;
        }
        if (!one_pass) m = next_max;
    }
}

int V(tuned_cross_entropy_forward)(const T *logits, const int64_t *target, int64_t rows,
                                   int64_t cols, int64_t ignore_index,
                                   double label_smoothing, T *loss, double *lse) {
    int nt = mt_threads_for(rows * cols);
    /* long rows, all of them from memory (in cache the two-read loop is faster) */
    const int64_t row_bytes = cols * (int64_t)sizeof(T);
    const int one_pass =
        row_bytes >= CE_ONE_PASS_MIN_BYTES && rows * row_bytes >= CE_ONE_PASS_FROM;
#pragma omp parallel num_threads(nt)
    {
        const int64_t tid = mt_thread_num(), team = mt_team_size();
        V(cross_entropy_rows)(logits, target, rows * tid / team, rows * (tid + 1) / team, cols,
                              ignore_index, label_smoothing, loss, lse, one_pass);
    }
    return 0;
}

static void V(cross_entropy_backward_row)(const T *x, const double *lse, int64_t t,
                                          T g, double smoothing, T *dx,
                                          int64_t n, const T *ahead, int stream) {
    T uniform = (T)(smoothing / (double)n);
    /* exp((x - m) - log_sum): x - m is exact where the probability is large, and m is a value
     * of the row, so only log_sum's rounding to T is added. */
    const T at_target = -g * (T)(1.0 - smoothing);
    if (stream) {
        CE_STREAMED_AXPY(x, dx, n, (T)lse[0], (T)lse[1], g, -g * uniform, ahead, t, at_target);
        return;
    }
    V(row_exp_axpy)(x, dx, n, (T)lse[0], (T)lse[1], g, NULL, -g * uniform, ahead);
    dx[t] += at_target;
}

int V(tuned_cross_entropy_backward)(const T *logits, const int64_t *target, const double *lse,
                                    const T *grad, int64_t grad_stride, double grad_scale,
                                    int64_t rows, int64_t cols, int64_t ignore_index,
                                    double label_smoothing, T *dlogits) {
    int nt = mt_threads_for(rows * cols);
    /* an output that would not stay in cache, stored around it (fast_exp.h) */
    const int stream = rows * cols * (int64_t)sizeof(T) >= CE_STREAM_FROM;
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            T *dx = dlogits + r * cols;
            int64_t t = target[r];
            if (t == ignore_index) {
                for (int64_t j = 0; j < cols; ++j) dx[j] = 0;
                continue;
            }
            T g = (T)((double)grad[r * grad_stride] * grad_scale);
            V(cross_entropy_backward_row)(logits + r * cols, lse + 2 * r, t, g,
                                          label_smoothing, dx, cols,
                                          MT_NEXT_ROW(logits, r, rows, cols), stream);
        }
#ifdef MT_X86
        if (stream) _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
    }
    return 0;
}

#undef CE_ONE_PASS
#undef CE_ONE_PASS_MIN_BYTES
#undef CE_ONE_PASS_FROM
#undef CE_STREAMED_AXPY
#undef CE_STREAM_FROM

#endif
