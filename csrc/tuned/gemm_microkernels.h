/* gemm_microkernels.h — the register-blocked inner kernels of the GEMM and their shapes.
 *
 * A micro-kernel multiplies one packed MR x kc sliver of A by one packed kc x NR sliver of B
 * and writes C[0:MR, 0:NR] = alpha * (A*B) + beta * C (C not read when beta == 0), then, with a
 * bias (NR values, or NULL), C[r][j] += bias[j] and, if relu, C = C < 0 ? 0 : C: a Linear
 * layer's bias and activation while the tile is in registers (rounded as a separate pass would).
 * Packed A: ap[p*MR + r]; packed B: bp[p*NR + j].
 * Each also has a strided twin for small products that are not worth packing.
 */
#ifndef MT_GEMM_MICROKERNELS_H
#define MT_GEMM_MICROKERNELS_H

#include <stdint.h>

/* The largest register tile of any plan (AVX-512 float: 8 x 32), for edge-tile scratch. */
#define MT_GEMM_MAX_MR 8
#define MT_GEMM_MAX_NR 32

typedef void (*mt_microkernel_f32)(int64_t kc, const float *ap, const float *bp, float *c,
                                   int64_t ldc, float alpha, float beta, const float *bias,
                                   int relu);
typedef void (*mt_microkernel_f64)(int64_t kc, const double *ap, const double *bp, double *c,
                                   int64_t ldc, double alpha, double beta, const double *bias,
                                   int relu);

/* The same tile on unpacked operands: A(r, p) = a[r*rs_a + p*cs_a], B(p, j) = b[p*ldb + j].
 * B's NR columns must all exist (the caller pads edge slivers); A's MR rows too. */
typedef void (*mt_strided_microkernel_f32)(int64_t kc, const float *a, int64_t rs_a,
                                           int64_t cs_a, const float *b, int64_t ldb, float *c,
                                           int64_t ldc, float alpha, float beta,
                                           const float *bias, int relu);
typedef void (*mt_strided_microkernel_f64)(int64_t kc, const double *a, int64_t rs_a,
                                           int64_t cs_a, const double *b, int64_t ldb,
                                           double *c, int64_t ldc, double alpha, double beta,
                                           const double *bias, int relu);

/* Tile shape and cache blocking for one instruction set and dtype. */
typedef struct {
    int mr, nr;          /* register tile */
    int64_t mc, kc, nc;  /* cache blocks: A block mc x kc in L2, B sliver kc x nr in L1
                          * (AVX2) or L2 (AVX-512, where kc is 512), B panel kc x nc in L3 */
    mt_microkernel_f32 kernel;
    mt_strided_microkernel_f32 strided_kernel; /* for small products: no packing */
    /* Pack an NR-column sliver of a transposed B whose first `cols` (<= NR) columns exist:
     * bp[p*NR + j] = b[j*ldb + p] for j < cols, 0 beyond. */
    void (*pack_b_transposed)(int64_t kc, const float *b, int64_t ldb, float *bp, int cols);
    /* Pack a full NR-column sliver of a row-major B: bp[p*NR + j] = b[p*ldb + j]. */
    void (*pack_b_rows)(int64_t kc, const float *b, int64_t ldb, float *bp);
    /* Pack a full MR-row sliver of a row-major A: ap[p*MR + r] = a[r*lda + p]. */
    void (*pack_a_rows)(int64_t kc, const float *a, int64_t lda, float *ap);
    /* sums[0:cols] += each of `rows` stored rows (ld apart) in turn, row after row: a
     * transposed A's row sums, as it is packed or (small products) read in place. */
    void (*sum_rows)(const float *a, int64_t ld, int64_t rows, int64_t cols, float *sums);
    /* Whether the blocked path reads a row-major A's full MR-row tiles where they lie, through
     * strided_kernel, instead of packing them (AVX-512: the packing was a few percent of
     * products with few B slivers per A block; on AVX2 it did not pay). */
    int a_rows_in_place;
    /* Whether the blocked path asks for the next tile's C with PREFETCHW while a tile runs:
     * an output fresh from memory (a forward activation's, last touched a step ago) then
     * costs no read for ownership in the middle of the tile stores (every AVX-512 CPU has the
     * instruction). */
    int prefetch_c;
} mt_gemm_plan_f32;

typedef struct {
    int mr, nr;
    int64_t mc, kc, nc;
    mt_microkernel_f64 kernel;
    mt_strided_microkernel_f64 strided_kernel;
    void (*pack_b_transposed)(int64_t kc, const double *b, int64_t ldb, double *bp, int cols);
    void (*pack_b_rows)(int64_t kc, const double *b, int64_t ldb, double *bp);
    void (*pack_a_rows)(int64_t kc, const double *a, int64_t lda, double *ap);
    void (*sum_rows)(const double *a, int64_t ld, int64_t rows, int64_t cols, double *sums);
    int a_rows_in_place, prefetch_c;
} mt_gemm_plan_f64;

/* Fill `plan` for `isa` (MT_ISA_PORTABLE / AVX2 / AVX512), which must be supported. */
void mt_gemm_plan_for_f32(int isa, mt_gemm_plan_f32 *plan);
void mt_gemm_plan_for_f64(int isa, mt_gemm_plan_f64 *plan);

#endif
