/* softmax.cu — softmax (scaled, masked, causal) and log-softmax over the last dim on the GPU,
 * forward and backward, for float and double: csrc/softmax.c's entry points, same arguments.
 *
 *   softmax       z_j = x_j * scale + mask_j   (-inf where excluded)
 *                 y_j = exp(z_j - max z) / sum_k exp(z_k - max z)
 *                 dx_j = scale * y_j * (dy_j - sum_k dy_k y_k)
 *   log-softmax   y_j = (x_j - max x) - log sum_k exp(x_k - max x)
 *                 dx_j = dy_j - exp(y_j) * sum_k dy_k
 *
 * Excluded: where the bool mask is set, and with causal_lq > 0 every column j > row % causal_lq.
 * The mask (additive or bool, at most one) is addressed by strides: the row index unravelled
 * over row_shape[0..mask_ndim) and dotted with mask_row_strides (device arrays), column j at
 * j * mask_col_stride (0 or 1). A row with nothing left (or all -inf) is all zeros; a NaN or
 * +inf score makes its row NaN; a log-softmax row of all -inf stays -inf.
 *
 * One block of MT_ROW_THREADS threads per row (the grid may be smaller than rows: a block then
 * takes every gridDim.x-th row). Thread t handles columns t, t + 256, ...: neighbouring threads
 * read neighbouring addresses. Each pass over the row ends in a block reduction (common.cuh);
 * the passes read x again rather than keep it, which comes from the L1/L2 caches for rows of
 * the usual lengths. exp runs in the element type, sums in double, as the C reference's.
 */
#include "common.cuh"

/* Offset of row r's mask in elements: csrc/mt_internal.h's mt_mask_row_offset. */
__device__ long long mask_row_offset(long long r, long long ndim, const long long *shape,
                                     const long long *strides) {
    long long offset = 0;
    for (long long d = ndim - 1; d >= 0; --d) {
        offset += (r % shape[d]) * strides[d];
        r /= shape[d];
    }
    return offset;
}

template <typename T>
__device__ void softmax_forward(const T *x, T *y, long long rows, long long cols, T scale,
                                const T *mask_add, const unsigned char *mask_bool,
                                long long mask_ndim, const long long *row_shape,
                                const long long *mask_row_strides, long long mask_col_stride,
                                long long causal_lq) {
    __shared__ double scratch[32];
    const T neg_inf = -mt_inf(T());
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        long long live = cols; /* columns the causal mask leaves */
        if (causal_lq > 0 && r % causal_lq + 1 < cols) live = r % causal_lq + 1;
        const long long off = (mask_add || mask_bool)
                                  ? mask_row_offset(r, mask_ndim, row_shape, mask_row_strides)
                                  : 0;
        const T *madd = mask_add ? mask_add + off : nullptr;
        const unsigned char *mbool = mask_bool ? mask_bool + off : nullptr;
        auto score = [&](long long j) -> T { /* z_j, -inf where excluded */
            if (j >= live || (mbool && mbool[j * mask_col_stride])) return neg_inf;
            return xr[j] * scale + (madd ? madd[j * mask_col_stride] : (T)0);
        };
        T local_max = neg_inf;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local_max = mt_max_nan(local_max, score(j));
        const T max = (T)mt_block_max((double)local_max, scratch);
        if (max == neg_inf) { /* nothing left: zeros (the same branch for the whole block) */
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = 0;
            continue;
        }
        double local_sum = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local_sum += (double)mt_exp(score(j) - max);
        const double inv_sum = 1.0 / mt_block_sum(local_sum, scratch);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            yr[j] = (T)((double)mt_exp(score(j) - max) * inv_sum);
    }
}

template <typename T>
__device__ void softmax_backward(const T *y, const T *dy, T *dx, long long rows, long long cols,
                                 T scale) {
    __shared__ double scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *yr = y + r * cols, *dyr = dy + r * cols;
        double local_dot = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local_dot += (double)dyr[j] * (double)yr[j];
        const double dot = mt_block_sum(local_dot, scratch);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            dx[r * cols + j] = (T)((double)scale * (double)yr[j] * ((double)dyr[j] - dot));
    }
}

template <typename T>
__device__ void log_softmax_forward(const T *x, T *y, long long rows, long long cols) {
    __shared__ double scratch[32];
    const T neg_inf = -mt_inf(T());
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        T *yr = y + r * cols;
        T local_max = neg_inf;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local_max = mt_max_nan(local_max, xr[j]);
        const T max = (T)mt_block_max((double)local_max, scratch);
        if (max == neg_inf) { /* all -inf: the log of softmax's zeros */
            for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = neg_inf;
            continue;
        }
        double local_sum = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local_sum += (double)mt_exp(xr[j] - max);
        const double log_sum = log(mt_block_sum(local_sum, scratch));
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            yr[j] = (T)(((double)xr[j] - (double)max) - log_sum);
    }
}

template <typename T>
__device__ void log_softmax_backward(const T *y, const T *dy, T *dx, long long rows,
                                     long long cols) {
    __shared__ double scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *yr = y + r * cols, *dyr = dy + r * cols;
        double local_total = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) local_total += (double)dyr[j];
        const double total = mt_block_sum(local_total, scratch);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            dx[r * cols + j] = (T)((double)dyr[j] - exp((double)yr[j]) * total);
    }
}

/* The entry points, one per element type: names and arguments of csrc/minitorch.h. */
#define MT_SOFTMAX_ENTRY_POINTS(T, SFX)                                                         \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_softmax_forward_##SFX(       \
        const T *x, T *y, long long rows, long long cols, T scale, const T *mask_add,           \
        const unsigned char *mask_bool, long long mask_ndim, const long long *row_shape,       \
        const long long *mask_row_strides, long long mask_col_stride, long long causal_lq) {   \
        softmax_forward<T>(x, y, rows, cols, scale, mask_add, mask_bool, mask_ndim, row_shape, \
                           mask_row_strides, mask_col_stride, causal_lq);                      \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_softmax_backward_##SFX(      \
        const T *y, const T *dy, T *dx, long long rows, long long cols, T scale) {             \
        softmax_backward<T>(y, dy, dx, rows, cols, scale);                                     \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS)                               \
        mt_log_softmax_forward_##SFX(const T *x, T *y, long long rows, long long cols) {       \
        log_softmax_forward<T>(x, y, rows, cols);                                              \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_log_softmax_backward_##SFX( \
        const T *y, const T *dy, T *dx, long long rows, long long cols) {                      \
        log_softmax_backward<T>(y, dy, dx, rows, cols);                                        \
    }

MT_SOFTMAX_ENTRY_POINTS(float, f32)
MT_SOFTMAX_ENTRY_POINTS(double, f64)
