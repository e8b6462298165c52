/* cross_entropy.cu — cross-entropy loss over rows of logits with int64 targets and label
 * smoothing eps on the GPU, forward and backward, for float and double: csrc/cross_entropy.c's
 * entry points, same arguments.
 *
 *   m_i    = max_c x_ic,   s_i = log sum_c exp(x_ic - m_i)     (lse_i = m_i + s_i)
 *   loss_i = (1 - eps) * ((m_i - x_i,t_i) + s_i) + eps * (mean_c (m_i - x_ic) + s_i)
 *   dx_ic  = g_i * (exp((x_ic - m_i) - s_i) - (1 - eps) * [c == t_i] - eps / C)
 *   g_i    = grad[i * grad_stride] * grad_scale
 *
 * Rows whose target is ignore_index have loss 0 and gradient 0. The forward writes lse as the
 * pair (m_i, s_i), 2 doubles per row for both dtypes, and every formula keeps the shift by m:
 * m + s would lose s where |m| >> 1. The caller checks the targets first (the C entry point
 * returns MT_ERR_ARGS); a target outside [0, C) that slips through is never used as an index:
 * its loss is NaN and its row's gradient holds no one-hot term.
 *
 * One block of MT_ROW_THREADS threads per row, columns strided over the threads, sums in double
 * through block reductions (common.cuh); thread 0 writes the row's loss and lse.
 */
#include "common.cuh"

template <typename T>
__device__ void cross_entropy_forward(const T *logits, const long long *target, long long rows,
                                      long long cols, long long ignore_index,
                                      double label_smoothing, T *loss, double *lse) {
    __shared__ double scratch[32];
    const double eps = label_smoothing, neg_inf = -mt_inf(0.0);
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = logits + r * cols;
        double local_max = neg_inf;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x)
            local_max = mt_max_nan(local_max, (double)x[c]);
        const double m = mt_block_max(local_max, scratch); /* NaN if the row holds one */
        double log_sum = neg_inf;                          /* an all -inf row: both -inf */
        if (m != neg_inf) {
            double local_sum = 0;
            for (long long c = threadIdx.x; c < cols; c += blockDim.x)
                local_sum += exp((double)x[c] - m);
            log_sum = log(mt_block_sum(local_sum, scratch));
        }
        const long long t = target[r];
        double below = 0; /* sum of m - x: the mean of x itself overflows float32 near 3e38 */
        if (eps != 0 && t != ignore_index) { /* skipped at eps = 0, where a -inf logit would
                                                give 0 * inf */
            double local_below = 0;
            for (long long c = threadIdx.x; c < cols; c += blockDim.x) local_below += m - x[c];
            below = mt_block_sum(local_below, scratch);
        }
        if (threadIdx.x == 0) {
            lse[2 * r] = m;
            lse[2 * r + 1] = log_sum;
            double l = 0;
            if (t != ignore_index) {
                if (t < 0 || t >= cols) {
                    l = mt_nan(0.0);
                } else {
                    l = (1 - eps) * ((m - x[t]) + log_sum);
                    if (eps != 0) l += eps * (below / (double)cols + log_sum);
                }
            }
            loss[r] = (T)l;
        }
    }
}

template <typename T>
__device__ void cross_entropy_backward(const T *logits, const long long *target,
                                       const double *lse, const T *grad, long long grad_stride,
                                       double grad_scale, long long rows, long long cols,
                                       long long ignore_index, double label_smoothing,
                                       T *dlogits) {
    const double eps = label_smoothing;
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *x = logits + r * cols;
        T *dx = dlogits + r * cols;
        const long long t = target[r];
        const bool ignored = t == ignore_index;
        const double g = ignored ? 0 : (double)grad[r * grad_stride] * grad_scale;
        const double m = lse[2 * r], log_sum = lse[2 * r + 1];
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
            const double d = exp(((double)x[c] - m) - log_sum) - eps / (double)cols -
                             (c == t ? 1 - eps : 0);
            dx[c] = ignored ? (T)0 : (T)(g * d);
        }
    }
}

/* The entry points, one per element type: names and arguments of csrc/minitorch.h. */
#define MT_CROSS_ENTROPY_ENTRY_POINTS(T, SFX)                                                    \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS)                                \
        mt_cross_entropy_forward_##SFX(const T *logits, const long long *target, long long rows, \
                                       long long cols, long long ignore_index,                  \
                                       double label_smoothing, T *loss, double *lse) {          \
        cross_entropy_forward<T>(logits, target, rows, cols, ignore_index, label_smoothing,     \
                                 loss, lse);                                                    \
    }                                                                                           \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_cross_entropy_backward_##SFX( \
        const T *logits, const long long *target, const double *lse, const T *grad,             \
        long long grad_stride, double grad_scale, long long rows, long long cols,               \
        long long ignore_index, double label_smoothing, T *dlogits) {                           \
        cross_entropy_backward<T>(logits, target, lse, grad, grad_stride, grad_scale, rows,     \
                                  cols, ignore_index, label_smoothing, dlogits);                \
    }

MT_CROSS_ENTROPY_ENTRY_POINTS(float, f32)
MT_CROSS_ENTROPY_ENTRY_POINTS(double, f64)
