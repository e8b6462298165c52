/* common.cuh — what every CUDA kernel file of minitorch shares: the infinities, a max that
 * lets NaN through, and the sums and maxima over a warp and over a thread block.
 *
 * The kernels are compiled both by nvcc (scripts/check_cuda.py) and at first use by NVRTC
 * (minitorch/backends/cuda_kernels.py), which has no C library headers: so this file and the
 * kernels include nothing else, and write INFINITY and NAN from their bit patterns.
 *
 * Sizes and strides are `long long` (the C API's int64_t) and counted in elements; arrays are
 * row-major, as in csrc/minitorch.h. The row kernels run one block per row, MT_ROW_THREADS
 * threads a block (a multiple of 32: the reductions below need whole warps).
 */
#ifndef MT_CUDA_COMMON_CUH
#define MT_CUDA_COMMON_CUH

#define MT_ROW_THREADS 256

__device__ __forceinline__ float mt_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double mt_inf(double) {
    return __longlong_as_double(0x7ff0000000000000LL);
}
__device__ __forceinline__ float mt_nan(float) { return __int_as_float(0x7fffffff); }
__device__ __forceinline__ double mt_nan(double) {
    return __longlong_as_double(0x7fffffffffffffffLL);
}
template <typename A> __device__ __forceinline__ bool mt_isnan(A v) { return v != v; }

/* exp and log in the element type's own precision (expf for float, exp for double). */
__device__ __forceinline__ float mt_exp(float v) { return expf(v); }
__device__ __forceinline__ double mt_exp(double v) { return exp(v); }

/* max(a, b), but a NaN on either side wins, so that a row holding one comes out NaN (fmax
 * would drop it). */
template <typename A> __device__ __forceinline__ A mt_max_nan(A a, A b) {
    return (a > b || mt_isnan(a)) ? a : b;
}

/* Sum and NaN-passing max over the 32 lanes of a warp; every lane gets the result. */
template <typename A> __device__ __forceinline__ A mt_warp_sum(A v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}
template <typename A> __device__ __forceinline__ A mt_warp_max(A v) {
    for (int offset = 16; offset > 0; offset /= 2)
        v = mt_max_nan(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

/* Sum / max over the whole block; every thread gets the result. Each warp reduces its own
 * values, lane 0 writes the warp's result to scratch (32 slots), and then every warp reduces
 * those: no second broadcast is needed. The first __syncthreads keeps a warp from overwriting
 * scratch while another still reads the previous reduction's values. */
template <typename A> __device__ A mt_block_sum(A v, A *scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = mt_warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return mt_warp_sum(lane < warps ? scratch[lane] : (A)0);
}
template <typename A> __device__ A mt_block_max(A v, A *scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    v = mt_warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return mt_warp_max(lane < warps ? scratch[lane] : -mt_inf(A()));
}

#endif /* MT_CUDA_COMMON_CUH */
