/* gemm_microkernels.h — the register-blocked inner kernels of the GEMM and their shapes.
 *
 * A micro-kernel multiplies one packed MR x kc sliver of A by one packed kc x NR sliver of B
 * and writes C[0:MR, 0:NR] = alpha * (A*B) + beta * C (C not read when beta == 0).
 * Packed A: ap[p*MR + r]; packed B: bp[p*NR + j].
 */
#ifndef MT_GEMM_MICROKERNELS_H
#define MT_GEMM_MICROKERNELS_H

#include <stdint.h>

typedef void (*mt_microkernel_f32)(int64_t kc, const float *ap, const float *bp, float *c,
                                   int64_t ldc, float alpha, float beta);
typedef void (*mt_microkernel_f64)(int64_t kc, const double *ap, const double *bp, double *c,
                                   int64_t ldc, double alpha, double beta);

/* Tile shape and cache blocking for one instruction set and dtype. */
typedef struct {
    int mr, nr;          /* register tile */
    int64_t mc, kc, nc;  /* cache blocks: A block mc x kc in L2, B sliver kc x nr in L1 */
    mt_microkernel_f32 kernel;
} mt_gemm_plan_f32;

typedef struct {
    int mr, nr;
    int64_t mc, kc, nc;
    mt_microkernel_f64 kernel;
} mt_gemm_plan_f64;

/* Fill `plan` for `isa` (MT_ISA_GENERIC / AVX2 / AVX512), which must be supported. */
void mt_gemm_plan_for_f32(int isa, mt_gemm_plan_f32 *plan);
void mt_gemm_plan_for_f64(int isa, mt_gemm_plan_f64 *plan);

#endif
