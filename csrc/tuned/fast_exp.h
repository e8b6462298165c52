/* fast_exp.h — exp for float and double as plain arithmetic on bits, and the vector loops
 * built on it (fast_exp.c).
 *
 * It exists because libm's exp is a function call per element: the exp-bound row kernels
 * (softmax, log-softmax, cross-entropy) would spend most of their time in it, one element at a
 * time. The scalar versions here finish the vector loops' tails and are the portable level.
 *
 * exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n*ln2 (ln2 split in hi+lo parts so r is
 * exact), |r| <= ln2/2; exp(r) by a polynomial; 2^n built directly in the exponent bits.
 * Accuracy: ~2.5 ulp (f32, degree-5 minimax), ~2 ulp (f64, degree 11). The AVX-512 loops take
 * one table step more (exp_avx512.h): 1.7 ulp (f32), 1 ulp (f64) measured
 * (tests/test_kernels_fast_exp.py holds each level to its bound).
 * Range: f32 inputs <= MT_EXP_F32_ZERO (and f64 below the smallest normal result) return
 * exactly 0 (so exp(-inf) = 0, which masked softmax relies on; f32 results between that and
 * FLT_MIN are subnormal, or 0 in the AVX2 loops; the AVX-512 loops give subnormals down to
 * their own zero, see exp_avx512.h). Every caller passes x - max <= 0 (plus at
 * most a rounding error), so the AVX2 loops do not clamp above; these scalar versions clamp
 * at ~88.3 (f32) / ~709 (f64).
 */
#ifndef MT_FAST_EXP_H
#define MT_FAST_EXP_H

#include <stdint.h>
#include "mt_internal.h"

#if defined(__GNUC__)
#define MT_INLINE inline __attribute__((always_inline))
#else
#define MT_INLINE inline
#endif

/* Rounds to k = -127 in exp(x) = 2^k exp(r): the 2^k built in the exponent bits is then +0. */
#define MT_EXP_F32_ZERO (-88.0f)
/* ln 2 = HI + LO, HI with 9 significant bits so that k * HI is exact for any k in range */
#define MT_LN2_F32_HI 0.693359375f
#define MT_LN2_F32_LO (-2.12194440e-4f)
/* exp(r) ~ 1 + r (C1 + C2 r + C3 r^2 + C4 r^3 + C5 r^4) on |r| <= ln2/2: the minimax
 * coefficients of XNNPACK's f32 exp (max error ~2.5 ulp). One degree less than Cephes's
 * 1 ulp polynomial, which costs a fifth more time in every exp-bound row kernel. */
#define MT_EXP_F32_C1 0x1.FFFFF6p-1f
#define MT_EXP_F32_C2 0x1.FFFDC6p-2f
#define MT_EXP_F32_C3 0x1.555A80p-3f
#define MT_EXP_F32_C4 0x1.573A1Ap-5f
#define MT_EXP_F32_C5 0x1.0F9F9Cp-7f

/* exp(xc) for xc in [MT_EXP_F32_ZERO, MT_EXP_F32_TOP], clamped by the callers below */
#define MT_EXP_F32_TOP 88.3762626647949f
MT_INLINE static float mt_exp_f32_in_range(float xc) {
    /* Adding 1.5*2^23 rounds t to an integer held in the low mantissa bits. */
    const float magic = 12582912.0f;
    float shifted = xc * 1.44269504088896341f + magic;
    float n = shifted - magic;
    float r = xc - n * MT_LN2_F32_HI;
    r = r - n * MT_LN2_F32_LO;
    float p = MT_EXP_F32_C5;
    p = p * r + MT_EXP_F32_C4;
    p = p * r + MT_EXP_F32_C3;
    p = p * r + MT_EXP_F32_C2;
    p = p * r + MT_EXP_F32_C1;
    p = p * r + 1.0f;
    /* Bit casts by memcpy (folded into register moves), in unsigned arithmetic: a NaN's bits
     * would overflow a signed shift. */
    uint32_t shifted_bits, magic_bits;
    __builtin_memcpy(&shifted_bits, &shifted, 4);
    __builtin_memcpy(&magic_bits, &magic, 4);
    uint32_t scale_bits = (shifted_bits - magic_bits + 127u) << 23;
    float scale;
    __builtin_memcpy(&scale, &scale_bits, 4);
    return p * scale; /* 0 for xc = MT_EXP_F32_ZERO */
}

MT_INLINE static float mt_exp_f32(float x) {
    const float lo = MT_EXP_F32_ZERO, hi = MT_EXP_F32_TOP;
    return mt_exp_f32_in_range(x < lo ? lo : (x > hi ? hi : x));
}

/* mt_exp_f32 for x <= MT_EXP_F32_TOP (no clamp above): where the argument cannot be positive
 * (the exact GELU's erfc), the second select cost 18% of that map's time. */
MT_INLINE static float mt_exp_nonpositive_f32(float x) {
    return mt_exp_f32_in_range(x < MT_EXP_F32_ZERO ? MT_EXP_F32_ZERO : x);
}

/* exp(r) ~ 1 + r (C[0] + C[1] r + ... + C[10] r^10) on |r| <= ln2/2: a Chebyshev fit of
 * (exp(r) - 1)/r (mpmath.chebyfit), max relative error 1e-17 before rounding. Two FMAs fewer
 * than the Taylor series of the same accuracy (degree 13). */
static const double MT_EXP_F64_C[11] = {
    1.0, 0.5000000000000006, 0.1666666666666667, 0.04166666666657314, 0.008333333333326141,
    0.0013888888932488599, 0.00019841269874800493, 2.4801504346997686e-05,
    2.7557255425746435e-06, 2.7626357241447223e-07, 2.510520637395701e-08};

MT_INLINE static double mt_exp_f64(double x) {
    const double lo = -708.3964185322641, hi = 709.0;
    double xc = x < lo ? lo : (x > hi ? hi : x);
    const double magic = 6755399441055744.0; /* 1.5 * 2^52 */
    double shifted = xc * 1.4426950408889634 + magic;
    double n = shifted - magic;
    double r = xc - n * 6.93145751953125e-1;
    r = r - n * 1.42860682030941723212e-6;
    double p = MT_EXP_F64_C[10];
    for (int i = 9; i >= 0; --i) p = p * r + MT_EXP_F64_C[i];
    p = p * r + 1.0;
    uint64_t shifted_bits, magic_bits;
    __builtin_memcpy(&shifted_bits, &shifted, 8);
    __builtin_memcpy(&magic_bits, &magic, 8);
    uint64_t scale_bits = (shifted_bits - magic_bits + 1023u) << 52;
    double scale;
    __builtin_memcpy(&scale, &scale_bits, 8);
    double result = p * scale;
    return x < lo ? 0.0 : result;
}

/* out[j] = exp(x[j]*scale - shift_hi - shift_lo) for one ISA level (fast_exp.c), while
 * prefetching ahead[0 .. n) (the caller's next row, or NULL). out may equal x. The *_sum
 * variants take one shift and also return sum(out), added in T lanes: callers pass blocks of a
 * few hundred elements and add the block sums in double. */
#define MT_DECLARE_EXP(ISA)                                                                   \
    void exp_shifted_##ISA##_f32(const float *x, float *out, int64_t n, float scale,          \
                                 float shift_hi, float shift_lo, const float *ahead);         \
    void exp_shifted_##ISA##_f64(const double *x, double *out, int64_t n, double scale,       \
                                 double shift_hi, double shift_lo, const double *ahead);      \
    double exp_shifted_sum_##ISA##_f32(const float *x, float *out, int64_t n, float scale,    \
                                       float shift, const float *ahead);                      \
    double exp_shifted_sum_##ISA##_f64(const double *x, double *out, int64_t n, double scale, \
                                       double shift, const double *ahead);
MT_DECLARE_EXP(portable)
MT_DECLARE_EXP(avx2)
MT_DECLARE_EXP(avx512)
#undef MT_DECLARE_EXP

/* How a pipelined loop (below) finishes the previous row, y[0 .. n): y[j] *= factor
 * (softmax), or where x is not NULL, y[j] = ((x[j] - shift) - hi) - lo (log-softmax, lse split
 * in T parts). y NULL: there is none. stream_to not NULL (the AVX-512 level only): the values
 * go there instead, stored around the cache (64-byte aligned, n a multiple of 64 bytes). */
typedef struct {
    float *y;
    const float *x;
    float factor, shift, hi, lo;
    float *stream_to;
} mt_row_finish_f32;
typedef struct {
    double *y;
    const double *x;
    double factor, shift, hi, lo;
    double *stream_to;
} mt_row_finish_f64;

/* AVX2 and AVX-512 (fast_exp.c, row_pipeline_avx2.c): exp_shifted_sum that also maxes
 * next[0 .. n) into *next_max, finishes the previous row (prev, or NULL), prefetches
 * ahead[0 .. n) and, for writing, ahead_out[0 .. n) in the same loop (next, ahead, ahead_out:
 * NULL for none), into L1, or L2 where to_l2. The portable level does the passes apart
 * (row_ops.h: row_exp_sum_pipelined). */
#define MT_DECLARE_PIPELINED(ISA)                                                              \
    double exp_shifted_sum_pipelined_##ISA##_f32(                                              \
        const float *x, float *out, int64_t n, float scale, float shift, const float *next,   \
        float *next_max, const mt_row_finish_f32 *prev, const float *ahead, float *ahead_out,  \
        int to_l2);                                                                            \
    double exp_shifted_sum_pipelined_##ISA##_f64(                                              \
        const double *x, double *out, int64_t n, double scale, double shift,                  \
        const double *next, double *next_max, const mt_row_finish_f64 *prev,                  \
        const double *ahead, double *ahead_out, int to_l2);                                    \
    /* out[j] = add[j] + mul * exp(x[j] - hi - lo), add_const where add is NULL (row_ops.h: \
     * row_exp_axpy; the portable level runs exp_shifted and a second pass) */              \
    void exp_axpy_##ISA##_f32(const float *x, float *out, int64_t n, float hi, float lo,      \
                              float mul, const float *add, float add_const,                   \
                              const float *ahead);                                             \
    void exp_axpy_##ISA##_f64(const double *x, double *out, int64_t n, double hi, double lo,  \
                              double mul, const double *add, double add_const,                \
                              const double *ahead);
MT_DECLARE_PIPELINED(avx2)
MT_DECLARE_PIPELINED(avx512)
#undef MT_DECLARE_PIPELINED

/* The pipelined loops' prefetches of ahead[j] (reading) and ahead_out[j] (writing), each where
 * its row is given: into L1, or into L2 where to_l2 (the hint must be a constant). */
#define MT_PREFETCH_AHEAD(in_j, out_j, in_row, out_row, to_l2)                   \
    do {                                                                        \
        if (to_l2) {                                                            \
            if (in_row) _mm_prefetch((const char *)(in_j), _MM_HINT_T1);        \
            if (out_row) _mm_prefetch((const char *)(out_j), _MM_HINT_T1);      \
        } else {                                                                \
            if (in_row) _mm_prefetch((const char *)(in_j), _MM_HINT_T0);        \
            if (out_row) _mm_prefetch((const char *)(out_j), _MM_HINT_ET0);     \
        }                                                                       \
    } while (0)

/* How an exp_shifted_sum_pipelined runs the copy of its loop with its run-time flags as
 * constants: LOOP(TO_L2, ONE, NEXT, FINISH) is a macro that returns that copy's result; scale,
 * next, finish (0, 1, 2) and to_l2 are the call's values. */
#define MT_PIPELINED_BY_L2(LOOP, to_l2, ONE, NEXT, FINISH) \
    do {                                                   \
        if (to_l2) LOOP(1, ONE, NEXT, FINISH);             \
        LOOP(0, ONE, NEXT, FINISH);                        \
    } while (0)
#define MT_PIPELINED_BY_FINISH(LOOP, to_l2, finish, ONE, NEXT)                  \
    do {                                                                        \
        if ((finish) == 0) MT_PIPELINED_BY_L2(LOOP, to_l2, ONE, NEXT, 0);       \
        if ((finish) == 1) MT_PIPELINED_BY_L2(LOOP, to_l2, ONE, NEXT, 1);       \
        MT_PIPELINED_BY_L2(LOOP, to_l2, ONE, NEXT, 2);                          \
    } while (0)
#define MT_PIPELINED_DISPATCH(LOOP, scale, next, finish, to_l2)                 \
    do {                                                                        \
        if ((scale) == 1) {                                                     \
            if (next) MT_PIPELINED_BY_FINISH(LOOP, to_l2, finish, 1, 1);        \
            MT_PIPELINED_BY_FINISH(LOOP, to_l2, finish, 1, 0);                  \
        }                                                                       \
        if (next) MT_PIPELINED_BY_FINISH(LOOP, to_l2, finish, 0, 1);            \
        MT_PIPELINED_BY_FINISH(LOOP, to_l2, finish, 0, 0);                      \
    } while (0)

/* AVX-512 only (softmax_short_rows.h): softmax of rows [r0, r1) of a rows x n array, n up to
 * 8 vectors (128 float32, 64 float64), y = x allowed: y = softmax(x * scale) (scale > 0),
 * causal_lq > 0 excluding column j > r % causal_lq. Returns the first row it left undone, one
 * whose max is -inf (all excluded, or a NaN that the general path finds), or r1. The backward:
 * dx = scale * y * (dy - sum(y * dy)) on such rows. */
int64_t softmax_short_rows_avx512_f32(const float *x, float *y, int64_t r0, int64_t r1,
                                      int64_t n, float scale, int64_t causal_lq);
int64_t softmax_short_rows_avx512_f64(const double *x, double *y, int64_t r0, int64_t r1,
                                      int64_t n, double scale, int64_t causal_lq);
void softmax_backward_short_rows_avx512_f32(const float *y, const float *dy, float *dx,
                                            int64_t r0, int64_t r1, int64_t n, float scale);
void softmax_backward_short_rows_avx512_f64(const double *y, const double *dy, double *dx,
                                            int64_t r0, int64_t r1, int64_t n, double scale);
/* The forward on masked rows (AVX-512 level, rows of up to MT_SHORT_SOFTMAX_ROW_BYTES): rows
 * r0 .. r0+count-1, row g's columns j < live[g] taking part, with the contiguous mask row
 * madd[g] (added to x*scale: madd not NULL) or mbool[g] (true excludes). Returns how many rows
 * it did: count, or up to a row whose max is -inf, left to the general row body. */
int64_t softmax_short_masked_rows_avx512_f32(const float *x, float *y, int64_t r0, int64_t count,
                                             int64_t n, float scale, const int64_t *live,
                                             const float *const *madd,
                                             const uint8_t *const *mbool);
int64_t softmax_short_masked_rows_avx512_f64(const double *x, double *y, int64_t r0,
                                             int64_t count, int64_t n, double scale,
                                             const int64_t *live, const double *const *madd,
                                             const uint8_t *const *mbool);
/* The longest rows they take, in bytes */
#define MT_SHORT_SOFTMAX_ROW_BYTES 512
/* A masked softmax row to be scored (softmax_rows.h): y[j] = x[j] * scale + add (madd[j] where
 * madd is not NULL), -inf where j >= live or mbool[j] (mbool not NULL), for j < width. */
#define MT_MASKED_ROW(T, SFX) \
    typedef struct {          \
        const T *x;           \
        T *y;                 \
        int64_t width, live;  \
        T scale, add;         \
        const T *madd;        \
        const uint8_t *mbool; \
    } mt_masked_row_##SFX;
MT_MASKED_ROW(float, f32)
MT_MASKED_ROW(double, f64)
#undef MT_MASKED_ROW
/* AVX-512 (fast_exp.c): exp_axpy with add NULL, spike added to out[spike_at], and out's
 * 64-byte aligned vectors stored around the cache (non-temporal; the caller fences): a
 * cross-entropy backward's output too big to stay in cache anyway (cross_entropy_tuned.c). */
void exp_axpy_streamed_avx512_f32(const float *x, float *out, int64_t n, float hi, float lo,
                                  float mul, float add_const, const float *ahead,
                                  int64_t spike_at, float spike);
void exp_axpy_streamed_avx512_f64(const double *x, double *out, int64_t n, double hi,
                                  double lo, double mul, double add_const, const double *ahead,
                                  int64_t spike_at, double spike);
/* AVX-512 (fast_exp.c): exp_axpy with an add array, out streamed as above: a log-softmax
 * backward's output too big for the cache (softmax_tuned.c). */
void exp_axpy_add_streamed_avx512_f32(const float *x, float *out, int64_t n, float hi, float lo,
                                      float mul, const float *add, const float *ahead);
void exp_axpy_add_streamed_avx512_f64(const double *x, double *out, int64_t n, double hi,
                                      double lo, double mul, const double *add,
                                      const double *ahead);
/* AVX-512 float32 (fast_exp.c): log sum_j exp(x[j] - *m) of a row read once, *m its max;
 * -inf for an all -inf row. A cross-entropy forward takes it for rows of MT_ONE_PASS_MIN_BYTES
 * or more in logits of MT_ONE_PASS_FROM bytes or more, which stream from memory; its loads are
 * prefetched MT_ONE_PASS_AHEAD bytes ahead. */
double log_sum_exp_one_pass_avx512_f32(const float *x, int64_t n, float *m);
#define MT_ONE_PASS_avx512_f32 1 /* the level and type that have it */
#define MT_ONE_PASS_MIN_BYTES 32768
#define MT_ONE_PASS_FROM ((int64_t)32 << 20)
#define MT_ONE_PASS_AHEAD 16384
/* AVX2 (softmax_short_rows_avx2.c): the forward above for rows of up to 4 vectors (32
 * float32, 16 float64) */
int64_t softmax_short_rows_avx2_f32(const float *x, float *y, int64_t r0, int64_t r1, int64_t n,
                                    float scale, int64_t causal_lq);
int64_t softmax_short_rows_avx2_f64(const double *x, double *y, int64_t r0, int64_t r1,
                                    int64_t n, double scale, int64_t causal_lq);

#endif /* MT_FAST_EXP_H */
