/* gemm.c — strided-batched matrix product, for float and double.
 *
 *   C_b = alpha * op(A_b) op(B_b) + beta * C_b          for b = 0 .. batch-1
 *   (op(A) op(B))[i][j] = sum_p op(A)[i][p] * op(B)[p][j]
 *
 * op(X) is X or its transpose, X_b = x + b*stride_x (a stride of 0 broadcasts X), rows ld
 * elements apart. beta == 0 means C is not read; alpha == 0 (or k == 0) that A and B are not.
 * mt_gemm_bias is the same product (batch 1, alpha 1, beta 0) with a bias row added to C's
 * rows and an optional ReLU: a Linear layer's forward; mt_linear_param_grads its backward's
 * weight and bias gradients (the product dYᵀ X and dY's column sums) from one pass over dY.
 * The reference body is the triple loop, summing in double. The tuned body
 * (tuned/gemm_tuned.c) blocks and packs the operands for the caches and SIMD micro-kernels.
 * This file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "gemm.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

static void F(gemm_reference)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                              T alpha, const T *a, int64_t lda, int64_t stride_a, const T *b,
                              int64_t ldb, int64_t stride_b, T beta, T *c, int64_t ldc,
                              int64_t stride_c, int64_t batch) {
    int nt = mt_threads_for(batch * m * n * k);
#pragma omp parallel for collapse(2) schedule(static) num_threads(nt)
    for (int64_t bi = 0; bi < batch; ++bi) {
        for (int64_t i = 0; i < m; ++i) {
            const T *A = a + bi * stride_a, *B = b + bi * stride_b;
            T *C = c + bi * stride_c + i * ldc;
            for (int64_t j = 0; j < n; ++j) {
                double sum = 0;
                for (int64_t p = 0; p < k; ++p) {
                    T a_ip = trans_a ? A[p * lda + i] : A[i * lda + p];
                    T b_pj = trans_b ? B[j * ldb + p] : B[p * ldb + j];
                    sum += (double)a_ip * (double)b_pj;
                }
                C[j] = beta == 0 ? (T)(alpha * sum) : (T)(alpha * sum + beta * C[j]);
            }
        }
    }
}

int F(mt_gemm)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, T alpha, const T *a,
               int64_t lda, int64_t stride_a, const T *b, int64_t ldb, int64_t stride_b, T beta,
               T *c, int64_t ldc, int64_t stride_c, int64_t batch) {
    if (m < 0 || n < 0 || k < 0 || batch < 0) return MT_ERR_ARGS;
    if (m == 0 || n == 0 || batch == 0) return 0;
    if (ldc < n || (batch > 1 && stride_c == 0)) return MT_ERR_ARGS;
    if (lda < (trans_a ? m : k) || ldb < (trans_b ? k : n)) return MT_ERR_ARGS;
    if (k == 0 || alpha == 0) { /* C = beta * C */
        for (int64_t bi = 0; bi < batch; ++bi)
            for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) {
                    T *cij = c + bi * stride_c + i * ldc + j;
                    *cij = beta == 0 ? 0 : beta * *cij;
                }
        return 0;
    }
    int isa = mt_get_isa();
    if (isa > MT_ISA_REFERENCE)
        return F(tuned_gemm)(isa, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                             stride_b, beta, c, ldc, stride_c, batch);
    F(gemm_reference)(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b,
                      beta, c, ldc, stride_c, batch);
    return 0;
}

/* C = op(A) op(B) + bias, the bias (n values) added to every row, then C = max(C, 0) if relu
 * (z < 0 ? 0 : z: NaN and -0 stay): a Linear layer's forward, and with relu the feed-forward
 * block's first one. The tuned body adds the bias to each tile of C as soon as its sums are
 * done, while the tile is in L1, instead of in another pass over C; the values are those of
 * mt_gemm then arith's add (then bias_relu_forward's ReLU), bit for bit. */
int F(mt_gemm_bias)(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, const T *a,
                    int64_t lda, const T *b, int64_t ldb, const T *bias, int relu, T *c,
                    int64_t ldc) {
    if (m < 0 || n < 0 || k < 0) return MT_ERR_ARGS;
    if (m == 0 || n == 0) return 0;
    if (ldc < n || lda < (trans_a ? m : k) || ldb < (trans_b ? k : n)) return MT_ERR_ARGS;
    int isa = mt_get_isa();
    if (k > 0 && isa > MT_ISA_REFERENCE)
        return F(tuned_gemm_bias)(isa, trans_a, trans_b, m, n, k, a, lda, b, ldb, bias, relu, c,
                                  ldc);
    if (k > 0)
        F(gemm_reference)(trans_a, trans_b, m, n, k, 1, a, lda, 0, b, ldb, 0, 0, c, ldc, 0, 1);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
            T z = (k > 0 ? c[i * ldc + j] : (T)0) + bias[j];
            c[i * ldc + j] = relu && z < 0 ? 0 : z;
        }
    return 0;
}

/* dW = dYᵀ X and db = dY's column sums (minitorch.h): Linear's weight and bias gradients. The
 * tuned body adds each column of dY into db as it packs dY for the product, rows in order in
 * T, as mt_sum_cols adds them; the reference body makes the product, then that sum. */
int F(mt_linear_param_grads)(const T *dy, int64_t ldy, const T *x, int64_t ldx, int64_t rows,
                             int64_t out, int64_t in, T *dw, int64_t ldw, T *db) {
    if (rows < 0 || out < 0 || in < 0 || ldy < out || ldx < in || ldw < in) return MT_ERR_ARGS;
    if (out == 0) return 0;
    for (int64_t j = 0; j < out; ++j) db[j] = 0;
    int isa = mt_get_isa();
    if (rows > 0 && in > 0 && isa > MT_ISA_REFERENCE)
        return F(tuned_gemm_a_sums)(isa, out, in, rows, dy, ldy, x, ldx, dw, ldw, db);
    int status = F(mt_gemm)(1, 0, out, in, rows, 1, dy, ldy, 0, x, ldx, 0, 0, dw, ldw, 0, 1);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < out; ++j) db[j] += dy[i * ldy + j];
    return status;
}
#endif
