/* gemm_microkernels.c — GEMM micro-kernels for AVX-512, AVX2+FMA and portable C.
 *
 * They exist because the FMA units are the GEMM's limit once the driver (gemm_tuned.c) keeps
 * the operands in cache: a kernel holds a whole tile of C in registers and streams packed A and
 * B through it, which compilers do not derive from a plain loop nest.
 *
 * The SIMD kernels are one macro body instantiated per instruction set: MR rows, NR = two
 * vectors, so 2*MR accumulators live in registers and every k step does 2 vector loads of B,
 * MR broadcasts of A and 2*MR FMAs — enough independent FMAs to cover the FMA latency (4
 * cycles x 2 pipes on Zen3 = 8 in flight). MR is 6 where registers are short (16 ymm: 12
 * accumulators) and 8 for float on AVX-512 (32 zmm: 16 accumulators), where the longer tile
 * reads each B sliver for 8 rows instead of 6 and the step's row counts (64, 512, 1000, 2048)
 * fill whole tiles. Each kernel is compiled with a target attribute so the file builds with
 * baseline flags; the driver picks one at run time.
 */
#include "mt_internal.h"
#include "gemm_microkernels.h"

#ifdef MT_X86
#include <immintrin.h>
#endif

/* ---- portable kernel: a 4 x 8 tile the compiler keeps in registers ---- */
#define MT_PORTABLE_MR 4
#define MT_PORTABLE_NR 8

#define DEFINE_PORTABLE_KERNEL(NAME, T)                                                        \
    static void NAME(int64_t kc, const T *ap, const T *bp, T *c, int64_t ldc, T alpha,       \
                     T beta, const T *bias, int relu) {                                       \
        NAME##_strided(kc, ap, 1, MT_PORTABLE_MR, bp, MT_PORTABLE_NR, c, ldc, alpha, beta,     \
                       bias, relu);                                                           \
    }

/* The same tile with A(r, p) = a[r*rs_a + p*cs_a] and B rows ldb apart (unpacked operands). */
#define DEFINE_PORTABLE_STRIDED_KERNEL(NAME, T)                                                \
    static void NAME(int64_t kc, const T *a, int64_t rs_a, int64_t cs_a, const T *bp,        \
                     int64_t ldb, T *c, int64_t ldc, T alpha, T beta, const T *bias,          \
                     int relu) {                                                              \
        T acc[MT_PORTABLE_MR][MT_PORTABLE_NR] = {{0}};                                          \
        for (int64_t p = 0; p < kc; ++p) {                                                    \
            for (int r = 0; r < MT_PORTABLE_MR; ++r)                                           \
                for (int j = 0; j < MT_PORTABLE_NR; ++j)                                       \
                    acc[r][j] += a[r * rs_a] * bp[j];                                         \
            a += cs_a;                                                                        \
            bp += ldb;                                                                        \
        }                                                                                     \
        for (int r = 0; r < MT_PORTABLE_MR; ++r)                                               \
            for (int j = 0; j < MT_PORTABLE_NR; ++j) {                                         \
                T v = beta == 0 ? alpha * acc[r][j]                                           \
                                : alpha * acc[r][j] + beta * c[r * ldc + j];                  \
                if (bias) {                                                                   \
                    v = v + bias[j];                                                          \
                    if (relu && v < 0) v = 0;                                                 \
                }                                                                             \
                c[r * ldc + j] = v;                                                           \
            }                                                                                 \
    }

DEFINE_PORTABLE_STRIDED_KERNEL(microkernel_portable_f32_strided, float)
DEFINE_PORTABLE_STRIDED_KERNEL(microkernel_portable_f64_strided, double)
/* Columns [j0, nr) of a transposed-B sliver, one packed row at a time: stored rows j0 .. cols
 * (op(B)'s columns), zeros past cols. */
#define DEFINE_PACK_BT_REST(T)                                                                \
    static inline void mt_pack_bt_rest_##T(int64_t kc, const T *b, int64_t ldb, T *bp,        \
                                           int nr, int j0, int cols) {                        \
        for (int64_t p = 0; p < kc; ++p) {                                                    \
            for (int j = j0; j < cols; ++j) bp[p * nr + j] = b[j * ldb + p];                  \
            for (int j = cols > j0 ? cols : j0; j < nr; ++j) bp[p * nr + j] = 0;              \
        }                                                                                     \
    }
DEFINE_PACK_BT_REST(float)
DEFINE_PACK_BT_REST(double)
#undef DEFINE_PACK_BT_REST

/* An NR-column sliver of a transposed B, its first `cols` columns present:
 * bp[p*NR + j] = b[j*ldb + p], zero-padded. */
#define DEFINE_PORTABLE_PACK_BT(NAME, T)                                                      \
    static void NAME(int64_t kc, const T *b, int64_t ldb, T *bp, int cols) {                \
        mt_pack_bt_rest_##T(kc, b, ldb, bp, MT_PORTABLE_NR, 0, cols);                         \
    }
DEFINE_PORTABLE_PACK_BT(pack_bt_portable_f32, float)
DEFINE_PORTABLE_PACK_BT(pack_bt_portable_f64, double)

DEFINE_PORTABLE_KERNEL(microkernel_portable_f32, float)
DEFINE_PORTABLE_KERNEL(microkernel_portable_f64, double)

#ifdef MT_X86
/* The tile's rows as X-macro lists: MT_ROWS_6(X) is X(0) X(1) .. X(5). */
#define MT_ROWS_6(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define MT_ROWS_8(X) MT_ROWS_6(X) X(6) X(7)

/* Row r's two accumulators, the prefetch of its C row, and one k step of it: broadcast
 * A(r, p) (at ap + r*rs_a: rs_a is 1 for a packed sliver), two FMAs. */
#define MT_UK_DECLARE_ROW(r) VEC acc##r##a = SETZERO(), acc##r##b = SETZERO();
#define MT_UK_PREFETCH_C_ROW(r)                                               \
    _mm_prefetch((const char *)(c + (r) * ldc), _MM_HINT_T0);                 \
    _mm_prefetch((const char *)(c + (r) * ldc + 2 * VL - 1), _MM_HINT_T0);
#define MT_UK_ROW(r)                                   \
    a = BCAST(ap + (r) * rs_a);                        \
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

/* The same, then the bias (bias_lo, bias_hi) added and, if relu, z < 0 ? 0 : z (RELU: NaN and
 * -0 stay). */
#define MT_UK_STORE_ROW_BIAS(r)                                                         \
    {                                                                                   \
        VEC lo = MUL(va, acc##r##a), hi = MUL(va, acc##r##b);                           \
        if (beta != 0) {                                                                \
            lo = FMADD(vb, LOADU(c + (r) * ldc), lo);                                   \
            hi = FMADD(vb, LOADU(c + (r) * ldc + VL), hi);                              \
        }                                                                               \
        lo = ADD(lo, bias_lo);                                                          \
        hi = ADD(hi, bias_hi);                                                          \
        if (relu) {                                                                     \
            lo = RELU(lo);                                                              \
            hi = RELU(hi);                                                              \
        }                                                                               \
        STOREU(c + (r) * ldc, lo);                                                      \
        STOREU(c + (r) * ldc + VL, hi);                                                 \
    }

/* The loop and the store of one MR x (2 vectors) tile, its rows listed by ROWS. After each
 * step A advances by A_STEP elements and B by B_STEP (a packed sliver: MR and 2*VL). */
#define MT_UK_BODY(ROWS, A_STEP, B_STEP)                                                \
    ROWS(MT_UK_DECLARE_ROW)                                                             \
    ROWS(MT_UK_PREFETCH_C_ROW)                                                          \
    _Pragma("GCC unroll 4")                                                             \
    for (int64_t p = 0; p < kc; ++p) {                                                  \
        VEC b0 = LOADU(bp), b1 = LOADU(bp + VL), a;                                     \
        ROWS(MT_UK_ROW)                                                                 \
        ap += (A_STEP);                                                                 \
        bp += (B_STEP);                                                                 \
    }                                                                                   \
    VEC va = SET1(alpha), vb = SET1(beta);                                              \
    if (bias) {                                                                         \
        VEC bias_lo = LOADU(bias), bias_hi = LOADU(bias + VL);                          \
        ROWS(MT_UK_STORE_ROW_BIAS)                                                      \
    } else {                                                                            \
        ROWS(MT_UK_STORE_ROW)                                                           \
    }

/* NAME works on packed slivers; NAME##_strided reads A(r, p) = a[r*rs_a + p*cs_a] and B rows
 * ldb apart, so small products can skip packing (a transposed A is rs_a = 1, cs_a = lda). */
#define DEFINE_SIMD_KERNEL(NAME, TARGET, T, MR)                                         \
    __attribute__((target(TARGET))) static void NAME(int64_t kc, const T *ap,          \
                                                     const T *bp, T *c, int64_t ldc,    \
                                                     T alpha, T beta, const T *bias,    \
                                                     int relu) {                        \
        const int64_t rs_a = 1;                                                         \
        MT_UK_BODY(MT_ROWS_##MR, MR, 2 * VL)                                            \
    }                                                                                   \
    __attribute__((target(TARGET))) static void NAME##_strided(                         \
        int64_t kc, const T *ap, int64_t rs_a, int64_t cs_a, const T *bp, int64_t ldb,  \
        T *c, int64_t ldc, T alpha, T beta, const T *bias, int relu) {                  \
        MT_UK_BODY(MT_ROWS_##MR, cs_a, ldb)                                             \
    }

/* AVX2 + FMA, float: 6 x 16 */
#define VL 8
#define VEC __m256
#define SETZERO _mm256_setzero_ps
#define LOADU _mm256_loadu_ps
#define STOREU _mm256_storeu_ps
#define BCAST _mm256_broadcast_ss
#define FMADD _mm256_fmadd_ps
#define MUL _mm256_mul_ps
#define SET1 _mm256_set1_ps
#define ADD _mm256_add_ps
#define RELU(v) \
    _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_LT_OQ))
DEFINE_SIMD_KERNEL(microkernel_avx2_f32, "avx2,fma", float, 6)
#undef VL
#undef VEC
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1
#undef ADD
#undef RELU

/* AVX2 + FMA, double: 6 x 8 */
#define VL 4
#define VEC __m256d
#define SETZERO _mm256_setzero_pd
#define LOADU _mm256_loadu_pd
#define STOREU _mm256_storeu_pd
#define BCAST _mm256_broadcast_sd
#define FMADD _mm256_fmadd_pd
#define MUL _mm256_mul_pd
#define SET1 _mm256_set1_pd
#define ADD _mm256_add_pd
#define RELU(v) \
    _mm256_blendv_pd(v, _mm256_setzero_pd(), _mm256_cmp_pd(v, _mm256_setzero_pd(), _CMP_LT_OQ))
DEFINE_SIMD_KERNEL(microkernel_avx2_f64, "avx2,fma", double, 6)
#undef VL
#undef VEC
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1
#undef ADD
#undef RELU

/* AVX-512F, float: 8 x 32 */
#define VL 16
#define VEC __m512
#define SETZERO _mm512_setzero_ps
#define LOADU _mm512_loadu_ps
#define STOREU _mm512_storeu_ps
#define BCAST(p) _mm512_set1_ps(*(p))
#define FMADD _mm512_fmadd_ps
#define MUL _mm512_mul_ps
#define SET1 _mm512_set1_ps
#define ADD _mm512_add_ps
#define RELU(v) \
    _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ), \
                        _mm512_setzero_ps())
DEFINE_SIMD_KERNEL(microkernel_avx512_f32, "avx512f", float, 8)
#undef VL
#undef VEC
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1
#undef ADD
#undef RELU

/* AVX-512F, double: 6 x 16 */
#define VL 8
#define VEC __m512d
#define SETZERO _mm512_setzero_pd
#define LOADU _mm512_loadu_pd
#define STOREU _mm512_storeu_pd
#define BCAST(p) _mm512_set1_pd(*(p))
#define FMADD _mm512_fmadd_pd
#define MUL _mm512_mul_pd
#define SET1 _mm512_set1_pd
#define ADD _mm512_add_pd
#define RELU(v) \
    _mm512_mask_mov_pd(v, _mm512_cmp_pd_mask(v, _mm512_setzero_pd(), _CMP_LT_OQ), \
                        _mm512_setzero_pd())
DEFINE_SIMD_KERNEL(microkernel_avx512_f64, "avx512f", double, 6)
#undef VL
#undef VEC
#undef SETZERO
#undef LOADU
#undef STOREU
#undef BCAST
#undef FMADD
#undef MUL
#undef SET1
#undef ADD
#undef RELU
/* ---- packing a transposed B (e.g. the Kᵀ of attention scores): 8x8 / 4x4 register
 * transposes. Each op(B) column is a contiguous stored row, so a full sliver is NR stored rows
 * turned on their side, which element by element costs a small product much of its time. ---- */
__attribute__((target("avx2,fma"))) static void pack_bt_avx2_f32(int64_t kc, const float *b,
                                                                  int64_t ldb, float *bp,
                                                                  int nr, int cols) {
    int j0 = 0;
    for (; j0 + 8 <= cols; j0 += 8) {
        const float *src = b + j0 * ldb;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 r0 = _mm256_loadu_ps(src + 0 * ldb + p), r1 = _mm256_loadu_ps(src + 1 * ldb + p);
            __m256 r2 = _mm256_loadu_ps(src + 2 * ldb + p), r3 = _mm256_loadu_ps(src + 3 * ldb + p);
            __m256 r4 = _mm256_loadu_ps(src + 4 * ldb + p), r5 = _mm256_loadu_ps(src + 5 * ldb + p);
            __m256 r6 = _mm256_loadu_ps(src + 6 * ldb + p), r7 = _mm256_loadu_ps(src + 7 * ldb + p);
            __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
            __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
            __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
            __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
            __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
            __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
            __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
            __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
            float *dst = bp + p * nr + j0;
            _mm256_storeu_ps(dst + 0 * nr, _mm256_permute2f128_ps(s0, s4, 0x20));
            _mm256_storeu_ps(dst + 1 * nr, _mm256_permute2f128_ps(s1, s5, 0x20));
            _mm256_storeu_ps(dst + 2 * nr, _mm256_permute2f128_ps(s2, s6, 0x20));
            _mm256_storeu_ps(dst + 3 * nr, _mm256_permute2f128_ps(s3, s7, 0x20));
            _mm256_storeu_ps(dst + 4 * nr, _mm256_permute2f128_ps(s0, s4, 0x31));
            _mm256_storeu_ps(dst + 5 * nr, _mm256_permute2f128_ps(s1, s5, 0x31));
            _mm256_storeu_ps(dst + 6 * nr, _mm256_permute2f128_ps(s2, s6, 0x31));
            _mm256_storeu_ps(dst + 7 * nr, _mm256_permute2f128_ps(s3, s7, 0x31));
        }
        for (; p < kc; ++p)
            for (int j = 0; j < 8; ++j) bp[p * nr + j0 + j] = src[j * ldb + p];
    }
    if (j0 < nr) mt_pack_bt_rest_float(kc, b, ldb, bp, nr, j0, cols);
}

__attribute__((target("avx2,fma"))) static void pack_bt_avx2_f64(int64_t kc, const double *b,
                                                                  int64_t ldb, double *bp,
                                                                  int nr, int cols) {
    int j0 = 0;
    for (; j0 + 4 <= cols; j0 += 4) {
        const double *src = b + j0 * ldb;
        int64_t p = 0;
        for (; p + 4 <= kc; p += 4) {
            __m256d r0 = _mm256_loadu_pd(src + 0 * ldb + p), r1 = _mm256_loadu_pd(src + 1 * ldb + p);
            __m256d r2 = _mm256_loadu_pd(src + 2 * ldb + p), r3 = _mm256_loadu_pd(src + 3 * ldb + p);
            __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
            __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
            double *dst = bp + p * nr + j0;
            _mm256_storeu_pd(dst + 0 * nr, _mm256_permute2f128_pd(t0, t2, 0x20));
            _mm256_storeu_pd(dst + 1 * nr, _mm256_permute2f128_pd(t1, t3, 0x20));
            _mm256_storeu_pd(dst + 2 * nr, _mm256_permute2f128_pd(t0, t2, 0x31));
            _mm256_storeu_pd(dst + 3 * nr, _mm256_permute2f128_pd(t1, t3, 0x31));
        }
        for (; p < kc; ++p)
            for (int j = 0; j < 4; ++j) bp[p * nr + j0 + j] = src[j * ldb + p];
    }
    if (j0 < nr) mt_pack_bt_rest_double(kc, b, ldb, bp, nr, j0, cols);
}

/* The AVX-512 plans reuse the AVX2 transposes (every AVX-512 CPU has AVX2; packing is not
 * where the time goes). */
#define DEFINE_PACK_BT(NAME, IMPL, T, NR)                                                   \
    static void NAME(int64_t kc, const T *b, int64_t ldb, T *bp, int cols) {                \
        IMPL(kc, b, ldb, bp, NR, cols);                                                       \
    }
DEFINE_PACK_BT(pack_bt_avx2_f32_nr16, pack_bt_avx2_f32, float, 16)
DEFINE_PACK_BT(pack_bt_avx512_f32_nr32, pack_bt_avx2_f32, float, 32)
DEFINE_PACK_BT(pack_bt_avx2_f64_nr8, pack_bt_avx2_f64, double, 8)
DEFINE_PACK_BT(pack_bt_avx512_f64_nr16, pack_bt_avx2_f64, double, 16)
#endif /* MT_X86 */

/* ---- packing row-major operands. Copying a B sliver row by row with a fixed length left the
 * compiler a libc memcpy call per 128-byte row, and gathering a 6-row A sliver element by
 * element a scalar load and store per value: together a tenth of a training step's time.
 * These copy B rows with full vector loads and turn A's rows on their side with 8x8 register
 * transposes, as pack_bt does for a transposed B. ---- */
#define DEFINE_PACK_B_ROWS(NAME, TARGET, T, V, LOADU, STOREU, VL, NR)                       \
    __attribute__((target(TARGET))) static void NAME(int64_t kc, const T *b, int64_t ldb,  \
                                                     T *bp) {                              \
        for (int64_t p = 0; p < kc; ++p) {                                                 \
            V v0 = LOADU(b + p * ldb), v1 = LOADU(b + p * ldb + VL);                       \
            STOREU(bp + p * NR, v0);                                                       \
            STOREU(bp + p * NR + VL, v1);                                                  \
        }                                                                                  \
    }
DEFINE_PACK_B_ROWS(pack_b_rows_avx2_f32, "avx2,fma", float, __m256, _mm256_loadu_ps,
                   _mm256_storeu_ps, 8, 16)
DEFINE_PACK_B_ROWS(pack_b_rows_avx2_f64, "avx2,fma", double, __m256d, _mm256_loadu_pd,
                   _mm256_storeu_pd, 4, 8)
DEFINE_PACK_B_ROWS(pack_b_rows_avx512_f32, "avx512f", float, __m512, _mm512_loadu_ps,
                   _mm512_storeu_ps, 16, 32)
DEFINE_PACK_B_ROWS(pack_b_rows_avx512_f64, "avx512f", double, __m512d, _mm512_loadu_pd,
                   _mm512_storeu_pd, 8, 16)
#undef DEFINE_PACK_B_ROWS

/* ---- a transposed A's row sums, as it is packed or (small products) read in place (a weight
 * gradient's bias sums beside its product, tuned_gemm_a_sums): sums[0:cols] += each of `rows`
 * stored rows (ld apart) in turn. Eight vectors of columns are summed down all the rows in
 * registers, so each column's sum is still added row after row; adding each row into sums in
 * memory loaded and stored every sum per row, 16 bytes at a time at the baseline: 5% of a weight
 * gradient's product of 1000 columns. ---- */
#define DEFINE_SUM_ROWS(NAME, ATTRIBUTES, T, V, LOADU, STOREU, ADD, VL)                       \
    ATTRIBUTES static void NAME(const T *a, int64_t ld, int64_t rows, int64_t cols,          \
                                T *restrict sums) {                                          \
        int64_t i0 = 0;                                                                      \
        for (; i0 + 8 * (VL) <= cols; i0 += 8 * (VL)) {                                      \
            V acc[8];                                                                        \
            for (int u = 0; u < 8; ++u) acc[u] = LOADU(sums + i0 + u * (VL));                \
            for (int64_t p = 0; p < rows; ++p)                                               \
                for (int u = 0; u < 8; ++u)                                                  \
                    acc[u] = ADD(acc[u], LOADU(a + p * ld + i0 + u * (VL)));                 \
            for (int u = 0; u < 8; ++u) STOREU(sums + i0 + u * (VL), acc[u]);                \
        }                                                                                    \
        for (int64_t p = 0; p < rows && i0 < cols; ++p)                                      \
            for (int64_t i = i0; i < cols; ++i) sums[i] += a[p * ld + i];                     \
    }
#define MT_PORTABLE_LOADU(x) (*(x))
#define MT_PORTABLE_STOREU(x, v) (*(x) = (v))
#define MT_PORTABLE_ADD(x, y) ((x) + (y))
DEFINE_SUM_ROWS(sum_rows_portable_f32, , float, float, MT_PORTABLE_LOADU,
                MT_PORTABLE_STOREU, MT_PORTABLE_ADD, 1)
DEFINE_SUM_ROWS(sum_rows_portable_f64, , double, double, MT_PORTABLE_LOADU,
                MT_PORTABLE_STOREU, MT_PORTABLE_ADD, 1)
#undef MT_PORTABLE_LOADU
#undef MT_PORTABLE_STOREU
#undef MT_PORTABLE_ADD
#ifdef MT_X86
#define MT_AVX2 __attribute__((target("avx2,fma")))
#define MT_AVX512 __attribute__((target("avx512f")))
DEFINE_SUM_ROWS(sum_rows_avx2_f32, MT_AVX2, float, __m256, _mm256_loadu_ps, _mm256_storeu_ps,
                _mm256_add_ps, 8)
DEFINE_SUM_ROWS(sum_rows_avx2_f64, MT_AVX2, double, __m256d, _mm256_loadu_pd, _mm256_storeu_pd,
                _mm256_add_pd, 4)
DEFINE_SUM_ROWS(sum_rows_avx512_f32, MT_AVX512, float, __m512, _mm512_loadu_ps,
                _mm512_storeu_ps, _mm512_add_ps, 16)
DEFINE_SUM_ROWS(sum_rows_avx512_f64, MT_AVX512, double, __m512d, _mm512_loadu_pd,
                _mm512_storeu_pd, _mm512_add_pd, 8)
#undef MT_AVX2
#undef MT_AVX512
#endif
#undef DEFINE_SUM_ROWS

/* Turn eight 8-float rows r[0..7] on their side in place: afterwards r[j] holds column j. */
__attribute__((target("avx2,fma"))) static inline void transpose_8x8_avx2_f32(__m256 r[8]) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20);
    r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20);
    r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31);
    r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31);
    r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* A full 6-row sliver of a row-major float A: eight columns at a time, the 6 rows (and two
 * zero rows) go through an 8x8 transpose, and column p's 6 values land at ap[6p .. 6p+5]. Each
 * 8-wide store also writes two spare lanes, which the next column's store overwrites; the last
 * column of a block is stored as 4 + 2 values so that nothing is written past its end. */
__attribute__((target("avx2,fma"))) static void pack_a_rows_avx2_f32(int64_t kc,
                                                                      const float *a,
                                                                      int64_t lda, float *ap) {
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (int i = 0; i < 6; ++i) r[i] = _mm256_loadu_ps(a + i * lda + p);
        r[6] = r[7] = _mm256_setzero_ps();
        transpose_8x8_avx2_f32(r);
        float *dst = ap + p * 6;
        for (int j = 0; j < 7; ++j) _mm256_storeu_ps(dst + j * 6, r[j]);
        _mm_storeu_ps(dst + 7 * 6, _mm256_castps256_ps128(r[7]));
        _mm_storel_pi((__m64 *)(dst + 7 * 6 + 4), _mm256_extractf128_ps(r[7], 1));
    }
    for (; p < kc; ++p)
        for (int r = 0; r < 6; ++r) ap[p * 6 + r] = a[r * lda + p];
}

/* A full 8-row sliver (the AVX-512 float tile): each 8x8 block of A is one transpose, and
 * column p's 8 values land at ap[8p .. 8p+7]. */
__attribute__((target("avx2,fma"))) static void pack_a_8rows_avx2_f32(int64_t kc,
                                                                       const float *a,
                                                                       int64_t lda, float *ap) {
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
        __m256 r[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(a + i * lda + p);
        transpose_8x8_avx2_f32(r);
        for (int j = 0; j < 8; ++j) _mm256_storeu_ps(ap + (p + j) * 8, r[j]);
    }
    for (; p < kc; ++p)
        for (int r = 0; r < 8; ++r) ap[p * 8 + r] = a[r * lda + p];
}

/* Block sizes. AVX2: B sliver kc*NR*sizeof(T) = 16 KiB (half of the 32 KiB L1d), A block
 * mc*kc*sizeof(T) ~ 144 KiB (within a 512 KiB L2), B panel kc*nc in L3. AVX-512: kc = 512, so
 * that C is read and written back once per 512 steps of k rather than 256 (a k of 512, the
 * model width, is then one K block); the 64 KiB B sliver is read from L2 (at 128 bytes per 16
 * FMAs, far below L2's bandwidth) while the A sliver (16 KiB for float) stays in L1, and the A
 * block mc*kc (256 KiB for float, 288 KiB for double) leaves room in a 1 MiB L2. */
void mt_gemm_plan_for_f32(int isa, mt_gemm_plan_f32 *plan) {
#ifdef MT_X86
    if (isa == MT_ISA_AVX512) {
        *plan = (mt_gemm_plan_f32){8, 32, 128, 512, 4064, microkernel_avx512_f32,
                                     microkernel_avx512_f32_strided, pack_bt_avx512_f32_nr32,
                                     pack_b_rows_avx512_f32, pack_a_8rows_avx2_f32,
                                     sum_rows_avx512_f32, 1, 1};
        return;
    }
    if (isa == MT_ISA_AVX2) {
        *plan = (mt_gemm_plan_f32){6, 16, 144, 256, 4080, microkernel_avx2_f32,
                                     microkernel_avx2_f32_strided, pack_bt_avx2_f32_nr16,
                                     pack_b_rows_avx2_f32, pack_a_rows_avx2_f32,
                                     sum_rows_avx2_f32, 0, 0};
        return;
    }
#endif
    (void)isa;
    *plan = (mt_gemm_plan_f32){MT_PORTABLE_MR, MT_PORTABLE_NR, 128, 256, 4096,
                               microkernel_portable_f32, microkernel_portable_f32_strided,
                               pack_bt_portable_f32, NULL, NULL, sum_rows_portable_f32, 0, 0};
}

void mt_gemm_plan_for_f64(int isa, mt_gemm_plan_f64 *plan) {
#ifdef MT_X86
    if (isa == MT_ISA_AVX512) {
        *plan = (mt_gemm_plan_f64){6, 16, 72, 512, 4080, microkernel_avx512_f64,
                                     microkernel_avx512_f64_strided, pack_bt_avx512_f64_nr16,
                                     pack_b_rows_avx512_f64, NULL, sum_rows_avx512_f64, 1,
                                     1};
        return;
    }
    if (isa == MT_ISA_AVX2) {
        *plan = (mt_gemm_plan_f64){6, 8, 72, 256, 4080, microkernel_avx2_f64,
                                     microkernel_avx2_f64_strided, pack_bt_avx2_f64_nr8,
                                     pack_b_rows_avx2_f64, NULL, sum_rows_avx2_f64, 0, 0};
        return;
    }
#endif
    (void)isa;
    *plan = (mt_gemm_plan_f64){MT_PORTABLE_MR, MT_PORTABLE_NR, 64, 256, 4096,
                               microkernel_portable_f64, microkernel_portable_f64_strided,
                               pack_bt_portable_f64, NULL, NULL, sum_rows_portable_f64, 0, 0};
}
