/* layer_norm.cu — layer normalization over the last dim on the GPU, forward and backward, for
 * float and double: csrc/layer_norm.c's entry points, same arguments, the backward in two
 * parts (below).
 *
 *   mean = sum_j x_j / n,   var = sum_j (x_j - mean)^2 / n,   rstd = 1 / sqrt(var + eps)
 *   xhat_j = (x_j - mean) * rstd,   y_j = xhat_j * w_j + b_j
 *   g_j = dy_j * w_j,   dx_j = rstd * (g_j - mean_k g_k - xhat_j * mean_k (g_k xhat_k))
 *   dw_j = sum_rows dy_j xhat_j,   db_j = sum_rows dy_j
 *
 * weight / bias may be NULL (w = 1, b = 0); dweight / dbias may be NULL (not computed).
 * Statistics are summed in double, the variance around the mean (two passes: never
 * E[x^2] - E[x]^2, which cancels). A row holding NaN or inf gets a NaN mean, as PyTorch's.
 *
 * The row parts (forward; mt_layer_norm_backward_*, which writes dx) run one block of
 * MT_ROW_THREADS threads per row, as softmax.cu. dw and db sum down the columns instead, so
 * they have kernels of their own, in two steps that keep the sums deterministic (no atomics):
 *   mt_layer_norm_param_partials_*  block (32, 8), grid (ceil(cols / 32), chunks): the block
 *       sums rows [chunk * rows_per_chunk, ...) of 32 neighbouring columns, each of its 8 rows
 *       of threads every 8th row, then adds up its 8 rows in shared memory, and writes one
 *       double per column and chunk to partial_w / partial_b (chunks x cols);
 *   mt_layer_norm_param_grads_*  one thread per column sums its chunks into dweight / dbias.
 */
#include "common.cuh"

#define MT_LN_COLS 32 /* columns per block of the partial sums */
#define MT_LN_ROWS 8  /* rows of threads per block of the partial sums */

template <typename T>
__device__ void layer_norm_forward(const T *x, const T *weight, const T *bias, T *y, T *mean,
                                   T *rstd, long long rows, long long cols, double eps) {
    __shared__ double scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols;
        double local = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) local += (double)xr[j];
        const double m = mt_block_sum(local, scratch) / (double)cols;
        local = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x)
            local += ((double)xr[j] - m) * ((double)xr[j] - m);
        const double s = 1.0 / sqrt(mt_block_sum(local, scratch) / (double)cols + eps);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            double out = ((double)xr[j] - m) * s;
            if (weight) out *= (double)weight[j];
            if (bias) out += (double)bias[j];
            y[r * cols + j] = (T)out;
        }
        if (threadIdx.x == 0) {
            mean[r] = (T)(mt_isnan(s) ? s : m);
            rstd[r] = (T)s;
        }
    }
}

template <typename T>
__device__ void layer_norm_backward(const T *dy, const T *x, const T *weight, const T *mean,
                                    const T *rstd, T *dx, long long rows, long long cols) {
    __shared__ double scratch[32];
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T *xr = x + r * cols, *dyr = dy + r * cols;
        const double mu = (double)mean[r], s = (double)rstd[r];
        double local_g = 0, local_gx = 0;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const double g = weight ? (double)dyr[j] * (double)weight[j] : (double)dyr[j];
            local_g += g;
            local_gx += g * ((double)xr[j] - mu) * s;
        }
        const double mean_g = mt_block_sum(local_g, scratch) / (double)cols;
        const double mean_gx = mt_block_sum(local_gx, scratch) / (double)cols;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
            const double g = weight ? (double)dyr[j] * (double)weight[j] : (double)dyr[j];
            const double xhat = ((double)xr[j] - mu) * s;
            dx[r * cols + j] = (T)(s * (g - mean_g - xhat * mean_gx));
        }
    }
}

template <typename T>
__device__ void layer_norm_param_partials(const T *dy, const T *x, const T *mean, const T *rstd,
                                          double *partial_w, double *partial_b, long long rows,
                                          long long cols, long long rows_per_chunk) {
    __shared__ double sum_w[MT_LN_ROWS][MT_LN_COLS + 1], sum_b[MT_LN_ROWS][MT_LN_COLS + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long j = (long long)blockIdx.x * MT_LN_COLS + tx, chunk = blockIdx.y;
    const long long first = chunk * rows_per_chunk;
    const long long last = first + rows_per_chunk < rows ? first + rows_per_chunk : rows;
    double dw = 0, db = 0;
    if (j < cols) {
        for (long long r = first + ty; r < last; r += MT_LN_ROWS) {
            const double d = (double)dy[r * cols + j];
            dw += d * ((double)x[r * cols + j] - (double)mean[r]) * (double)rstd[r];
            db += d;
        }
    }
    sum_w[ty][tx] = dw;
    sum_b[ty][tx] = db;
    __syncthreads();
    if (ty == 0 && j < cols) {
        for (int k = 1; k < MT_LN_ROWS; ++k) {
            dw += sum_w[k][tx];
            db += sum_b[k][tx];
        }
        partial_w[chunk * cols + j] = dw;
        partial_b[chunk * cols + j] = db;
    }
}

template <typename T>
__device__ void layer_norm_param_grads(const double *partial_w, const double *partial_b,
                                       long long chunks, long long cols, T *dweight, T *dbias) {
    for (long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x; j < cols;
         j += (long long)gridDim.x * blockDim.x) {
        double dw = 0, db = 0;
        for (long long chunk = 0; chunk < chunks; ++chunk) {
            dw += partial_w[chunk * cols + j];
            db += partial_b[chunk * cols + j];
        }
        if (dweight) dweight[j] = (T)dw;
        if (dbias) dbias[j] = (T)db;
    }
}

/* The entry points, one per element type: names and arguments of csrc/minitorch.h, but for
 * the backward's dweight / dbias, which the two kernels after it compute. */
#define MT_LAYER_NORM_ENTRY_POINTS(T, SFX)                                                     \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_layer_norm_forward_##SFX(   \
        const T *x, const T *weight, const T *bias, T *y, T *mean, T *rstd, long long rows,    \
        long long cols, double eps) {                                                          \
        layer_norm_forward<T>(x, weight, bias, y, mean, rstd, rows, cols, eps);                \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(MT_ROW_THREADS) mt_layer_norm_backward_##SFX(  \
        const T *dy, const T *x, const T *weight, const T *mean, const T *rstd, T *dx,         \
        long long rows, long long cols) {                                                      \
        layer_norm_backward<T>(dy, x, weight, mean, rstd, dx, rows, cols);                     \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(MT_LN_COLS * MT_LN_ROWS)                      \
        mt_layer_norm_param_partials_##SFX(const T *dy, const T *x, const T *mean,             \
                                           const T *rstd, double *partial_w,                   \
                                           double *partial_b, long long rows, long long cols,  \
                                           long long rows_per_chunk) {                         \
        layer_norm_param_partials<T>(dy, x, mean, rstd, partial_w, partial_b, rows, cols,      \
                                     rows_per_chunk);                                          \
    }                                                                                          \
    extern "C" __global__ void mt_layer_norm_param_grads_##SFX(                                \
        const double *partial_w, const double *partial_b, long long chunks, long long cols,    \
        T *dweight, T *dbias) {                                                                \
        layer_norm_param_grads<T>(partial_w, partial_b, chunks, cols, dweight, dbias);         \
    }

MT_LAYER_NORM_ENTRY_POINTS(float, f32)
MT_LAYER_NORM_ENTRY_POINTS(double, f64)
