/* gemm.cu — strided-batched matrix product on the GPU, for float and double: csrc/gemm.c's
 * mt_gemm, with the same arguments.
 *
 *   C_b = alpha * op(A_b) op(B_b) + beta * C_b          for b = 0 .. batch-1
 *   (op(A) op(B))[i][j] = sum_p op(A)[i][p] * op(B)[p][j]
 *
 * op(A)[i][p] is A[i*lda + p], or A[p*lda + i] with trans_a; op(B)[p][j] is B[p*ldb + j], or
 * B[j*ldb + p] with trans_b; X_b = x + b*stride_x (a stride of 0 broadcasts X). beta == 0
 * means C is not read; alpha == 0 (or k == 0) that A and B are not.
 *
 * The classic shared-memory tiled GEMM. Each block of 256 threads computes one 128 x 128 tile
 * of C. It walks k in steps of 8: the block copies the 128 x 8 slice of op(A) and the 8 x 128
 * slice of op(B) into shared memory (zeros outside the matrices, so that no size needs to be a
 * multiple of a tile), then each thread multiplies them into its 8 x 8 accumulators, which
 * live in registers. A thread (tx, ty) of the 16 x 16 grid owns rows ty + 16 i and columns
 * tx + 16 j: the 16 lanes that share a ty read 16 consecutive words of the B slice (no bank
 * conflict) and one word of the A slice (a broadcast). Each value read from shared memory
 * then serves 8 multiply-adds, the point of the register tile. Sums run in the element type,
 * as cuBLAS's.
 *
 * Launch: block (256), grid (ceil(m / 128), min(ceil(n / 128), 65535), min(batch, 65535));
 * the kernel loops over the column tiles and batches a smaller grid leaves.
 */
#include "common.cuh"

#define MT_GEMM_TILE 128 /* rows and columns of C per block */
#define MT_GEMM_STEP 8   /* k per pass through shared memory */
#define MT_GEMM_THREADS 256
#define MT_GEMM_SIDE 16 /* the threads as a 16 x 16 grid */
#define MT_GEMM_PER_THREAD (MT_GEMM_TILE / MT_GEMM_SIDE) /* 8 rows and 8 columns each */
#define MT_GEMM_PAD 4   /* shared rows 132 long: the loads of the A slice hit 32 banks */

template <typename T>
__device__ void gemm_tiled(int trans_a, int trans_b, long long m, long long n, long long k,
                           T alpha, const T *a, long long lda, long long stride_a, const T *b,
                           long long ldb, long long stride_b, T beta, T *c, long long ldc,
                           long long stride_c, long long batch) {
    /* the slices, stored p-major: As[p][i] = op(A)[row0 + i][p0 + p], Bs[p][j] likewise */
    __shared__ T As[MT_GEMM_STEP][MT_GEMM_TILE + MT_GEMM_PAD];
    __shared__ T Bs[MT_GEMM_STEP][MT_GEMM_TILE + MT_GEMM_PAD];
    const int tid = threadIdx.x, tx = tid % MT_GEMM_SIDE, ty = tid / MT_GEMM_SIDE;
    const long long row0 = (long long)blockIdx.x * MT_GEMM_TILE;

    for (long long bi = blockIdx.z; bi < batch; bi += gridDim.z) {
        const T *A = a + bi * stride_a, *B = b + bi * stride_b;
        T *C = c + bi * stride_c;
        for (long long col0 = (long long)blockIdx.y * MT_GEMM_TILE; col0 < n;
             col0 += (long long)gridDim.y * MT_GEMM_TILE) {
            T acc[MT_GEMM_PER_THREAD][MT_GEMM_PER_THREAD];
            for (int i = 0; i < MT_GEMM_PER_THREAD; ++i)
                for (int j = 0; j < MT_GEMM_PER_THREAD; ++j) acc[i][j] = 0;

            for (long long p0 = 0; alpha != 0 && p0 < k; p0 += MT_GEMM_STEP) {
                /* 128 x 8 = 1024 values per slice, 4 per thread. Consecutive threads take
                 * consecutive addresses in memory: along p where a row is contiguous, along
                 * i (or j) where the matrix is stored transposed. */
                for (int l = 0; l < MT_GEMM_TILE * MT_GEMM_STEP / MT_GEMM_THREADS; ++l) {
                    const int idx = tid + l * MT_GEMM_THREADS;
                    int i, j, p;
                    if (trans_a) { i = idx % MT_GEMM_TILE; p = idx / MT_GEMM_TILE; }
                    else { p = idx % MT_GEMM_STEP; i = idx / MT_GEMM_STEP; }
                    long long gi = row0 + i, gp = p0 + p;
                    As[p][i] = (gi < m && gp < k) ? (trans_a ? A[gp * lda + gi] : A[gi * lda + gp])
                                                  : (T)0;
                    if (trans_b) { p = idx % MT_GEMM_STEP; j = idx / MT_GEMM_STEP; }
                    else { j = idx % MT_GEMM_TILE; p = idx / MT_GEMM_TILE; }
                    long long gj = col0 + j;
                    gp = p0 + p;
                    Bs[p][j] = (gj < n && gp < k) ? (trans_b ? B[gj * ldb + gp] : B[gp * ldb + gj])
                                                  : (T)0;
                }
                __syncthreads();
                for (int p = 0; p < MT_GEMM_STEP; ++p) {
                    T a_col[MT_GEMM_PER_THREAD], b_row[MT_GEMM_PER_THREAD];
                    for (int i = 0; i < MT_GEMM_PER_THREAD; ++i)
                        a_col[i] = As[p][ty + MT_GEMM_SIDE * i];
                    for (int j = 0; j < MT_GEMM_PER_THREAD; ++j)
                        b_row[j] = Bs[p][tx + MT_GEMM_SIDE * j];
                    for (int i = 0; i < MT_GEMM_PER_THREAD; ++i)
                        for (int j = 0; j < MT_GEMM_PER_THREAD; ++j) acc[i][j] += a_col[i] * b_row[j];
                }
                __syncthreads(); /* before the next pass overwrites the slices */
            }

            for (int i = 0; i < MT_GEMM_PER_THREAD; ++i) {
                const long long gi = row0 + ty + MT_GEMM_SIDE * i;
                for (int j = 0; j < MT_GEMM_PER_THREAD; ++j) {
                    const long long gj = col0 + tx + MT_GEMM_SIDE * j;
                    if (gi < m && gj < n) {
                        T *cij = C + gi * ldc + gj;
                        *cij = beta == 0 ? alpha * acc[i][j] : alpha * acc[i][j] + beta * *cij;
                    }
                }
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(MT_GEMM_THREADS)
mt_gemm_f32(int trans_a, int trans_b, long long m, long long n, long long k, float alpha,
            const float *a, long long lda, long long stride_a, const float *b, long long ldb,
            long long stride_b, float beta, float *c, long long ldc, long long stride_c,
            long long batch) {
    gemm_tiled<float>(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta,
                      c, ldc, stride_c, batch);
}

extern "C" __global__ void __launch_bounds__(MT_GEMM_THREADS)
mt_gemm_f64(int trans_a, int trans_b, long long m, long long n, long long k, double alpha,
            const double *a, long long lda, long long stride_a, const double *b, long long ldb,
            long long stride_b, double beta, double *c, long long ldc, long long stride_c,
            long long batch) {
    gemm_tiled<double>(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b,
                       beta, c, ldc, stride_c, batch);
}
