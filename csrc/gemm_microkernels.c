/* gemm_microkernels.c — GEMM micro-kernels for AVX-512, AVX2+FMA and portable C.
 *
 * The SIMD kernels are one macro body instantiated per instruction set: MR = 6 rows, NR = two
 * vectors, so 12 accumulators live in registers (of 16 ymm / 32 zmm) and every k step does
 * 2 vector loads of B, 6 broadcasts of A and 12 FMAs — enough independent FMAs to cover the
 * FMA latency (4 cycles x 2 pipes on Zen3 = 8 in flight). Each kernel is compiled with a
 * target attribute so the file builds with baseline flags; the driver picks one at run time.
 */
#include "gemm_microkernels.h"
#include "minitorch.h"

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define MT_HAVE_X86_KERNELS 1
#include <immintrin.h>
#endif

/* ---- portable kernel: a 4 x 8 tile the compiler keeps in registers ---- */
#define MT_GENERIC_MR 4
#define MT_GENERIC_NR 8

#define DEFINE_GENERIC_KERNEL(NAME, T)                                                        \
    static void NAME(int64_t kc, const T *ap, const T *bp, T *c, int64_t ldc, T alpha,       \
                     T beta) {                                                                \
        T acc[MT_GENERIC_MR][MT_GENERIC_NR] = {{0}};                                          \
        for (int64_t p = 0; p < kc; ++p) {                                                    \
            for (int r = 0; r < MT_GENERIC_MR; ++r)                                           \
                for (int j = 0; j < MT_GENERIC_NR; ++j)                                       \
                    acc[r][j] += ap[r] * bp[j];                                               \
            ap += MT_GENERIC_MR;                                                              \
            bp += MT_GENERIC_NR;                                                              \
        }                                                                                     \
        for (int r = 0; r < MT_GENERIC_MR; ++r)                                               \
            for (int j = 0; j < MT_GENERIC_NR; ++j)                                           \
                c[r * ldc + j] = beta == 0 ? alpha * acc[r][j]                                \
                                           : alpha * acc[r][j] + beta * c[r * ldc + j];       \
    }

DEFINE_GENERIC_KERNEL(microkernel_generic_f32, float)
DEFINE_GENERIC_KERNEL(microkernel_generic_f64, double)

#ifdef MT_HAVE_X86_KERNELS
/* One row of the 6 x (2 vectors) tile: broadcast A[r], two FMAs. */
#define MT_UK_ROW(r)                                   \
    a = BCAST(ap + (r));                               \
    acc##r##a = FMADD(a, b0, acc##r##a);               \
    acc##r##b = FMADD(a, b1, acc##r##b);

/* C row r = alpha*acc + beta*C, skipping the read of C when beta == 0. */
#define MT_UK_STORE_ROW(r)                                                              \
    if (beta == 0) {                                                                    \
        STOREU(c + (r) * ldc, MUL(va, acc##r##a));                                      \
        STOREU(c + (r) * ldc + VL, MUL(va, acc##r##b));                                 \
    } else {                                                                            \
        STOREU(c + (r) * ldc, FMADD(vb, LOADU(c + (r) * ldc), MUL(va, acc##r##a)));     \
        STOREU(c + (r) * ldc + VL, FMADD(vb, LOADU(c + (r) * ldc + VL), MUL(va, acc##r##b))); \
    }

#define DEFINE_SIMD_KERNEL(NAME, TARGET, T, V)                                          \
    __attribute__((target(TARGET))) static void NAME(int64_t kc, const T *ap,          \
                                                     const T *bp, T *c, int64_t ldc,    \
                                                     T alpha, T beta) {                 \
        V acc0a = SETZERO(), acc0b = SETZERO(), acc1a = SETZERO(), acc1b = SETZERO();   \
        V acc2a = SETZERO(), acc2b = SETZERO(), acc3a = SETZERO(), acc3b = SETZERO();   \
        V acc4a = SETZERO(), acc4b = SETZERO(), acc5a = SETZERO(), acc5b = SETZERO();   \
        for (int r = 0; r < 6; ++r) {                                                   \
            _mm_prefetch((const char *)(c + r * ldc), _MM_HINT_T0);                     \
            _mm_prefetch((const char *)(c + r * ldc + 2 * VL - 1), _MM_HINT_T0);        \
        }                                                                               \
        _Pragma("GCC unroll 4")                                                         \
        for (int64_t p = 0; p < kc; ++p) {                                              \
            V b0 = LOADU(bp), b1 = LOADU(bp + VL), a;                                   \
            MT_UK_ROW(0) MT_UK_ROW(1) MT_UK_ROW(2) MT_UK_ROW(3) MT_UK_ROW(4) MT_UK_ROW(5) \
            ap += 6;                                                                    \
            bp += 2 * VL;                                                               \
        }                                                                               \
        V va = SET1(alpha), vb = SET1(beta);                                            \
        MT_UK_STORE_ROW(0) MT_UK_STORE_ROW(1) MT_UK_STORE_ROW(2)                        \
        MT_UK_STORE_ROW(3) MT_UK_STORE_ROW(4) MT_UK_STORE_ROW(5)                        \
    }

/* AVX2 + FMA, float: 6 x 16 */
#define VL 8
#define SETZERO _mm256_setzero_ps
#define LOADU _mm256_loadu_ps
#define STOREU _mm256_storeu_ps
#define BCAST _mm256_broadcast_ss
#define FMADD _mm256_fmadd_ps
#define MUL _mm256_mul_ps
#define SET1 _mm256_set1_ps
DEFINE_SIMD_KERNEL(microkernel_avx2_f32, "avx2,fma", float, __m256)
#undef VL
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1

/* AVX2 + FMA, double: 6 x 8 */
#define VL 4
#define SETZERO _mm256_setzero_pd
#define LOADU _mm256_loadu_pd
#define STOREU _mm256_storeu_pd
#define BCAST _mm256_broadcast_sd
#define FMADD _mm256_fmadd_pd
#define MUL _mm256_mul_pd
#define SET1 _mm256_set1_pd
DEFINE_SIMD_KERNEL(microkernel_avx2_f64, "avx2,fma", double, __m256d)
#undef VL
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1

/* AVX-512F, float: 6 x 32 */
#define VL 16
#define SETZERO _mm512_setzero_ps
#define LOADU _mm512_loadu_ps
#define STOREU _mm512_storeu_ps
#define BCAST(p) _mm512_set1_ps(*(p))
#define FMADD _mm512_fmadd_ps
#define MUL _mm512_mul_ps
#define SET1 _mm512_set1_ps
DEFINE_SIMD_KERNEL(microkernel_avx512_f32, "avx512f", float, __m512)
#undef VL
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1

/* AVX-512F, double: 6 x 16 */
#define VL 8
#define SETZERO _mm512_setzero_pd
#define LOADU _mm512_loadu_pd
#define STOREU _mm512_storeu_pd
#define BCAST(p) _mm512_set1_pd(*(p))
#define FMADD _mm512_fmadd_pd
#define MUL _mm512_mul_pd
#define SET1 _mm512_set1_pd
DEFINE_SIMD_KERNEL(microkernel_avx512_f64, "avx512f", double, __m512d)
#undef VL
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1
#endif /* MT_HAVE_X86_KERNELS */

/* Block sizes: B sliver kc*NR*sizeof(T) = 16 KiB (half of the 32 KiB L1d), A block
 * mc*kc*sizeof(T) ~ 144-288 KiB (within the 512 KiB L2), B panel kc*nc in L3. */
void mt_gemm_plan_for_f32(int isa, mt_gemm_plan_f32 *plan) {
#ifdef MT_HAVE_X86_KERNELS
    if (isa == MT_ISA_AVX512) {
        *plan = (mt_gemm_plan_f32){6, 32, 144, 256, 4064, microkernel_avx512_f32};
        return;
    }
    if (isa == MT_ISA_AVX2) {
        *plan = (mt_gemm_plan_f32){6, 16, 144, 256, 4080, microkernel_avx2_f32};
        return;
    }
#endif
    (void)isa;
    *plan = (mt_gemm_plan_f32){MT_GENERIC_MR, MT_GENERIC_NR, 128, 256, 4096,
                               microkernel_generic_f32};
}

void mt_gemm_plan_for_f64(int isa, mt_gemm_plan_f64 *plan) {
#ifdef MT_HAVE_X86_KERNELS
    if (isa == MT_ISA_AVX512) {
        *plan = (mt_gemm_plan_f64){6, 16, 72, 256, 4080, microkernel_avx512_f64};
        return;
    }
    if (isa == MT_ISA_AVX2) {
        *plan = (mt_gemm_plan_f64){6, 8, 72, 256, 4080, microkernel_avx2_f64};
        return;
    }
#endif
    (void)isa;
    *plan = (mt_gemm_plan_f64){MT_GENERIC_MR, MT_GENERIC_NR, 64, 256, 4096,
                               microkernel_generic_f64};
}
