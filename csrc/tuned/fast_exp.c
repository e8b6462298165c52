/* fast_exp.c — out[j] = exp(x[j]*scale - shift_hi - shift_lo) over an array, in AVX-512,
 * AVX2+FMA (intrinsics) or portable C: one set of functions per ISA level, each row-kernel
 * copy calling its own level's.
 *
 * This is the one loop the tuned row kernels (softmax, log-softmax, cross-entropy) spend their
 * time in. GCC does not reliably vectorize the branch-free scalar exp of fast_exp.h when it is
 * inlined into bigger loops, so the vector versions are written out here; the algorithm and
 * constants are the same (see fast_exp.h). The shift comes in two parts so that callers with a
 * double log-sum-exp (cross-entropy near |x| ~ 1e4) keep its precision in float32.
 */
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#include "exp_avx2.h"
#include "exp_avx512.h"

#ifdef MT_X86
#include <immintrin.h>
#endif

/* Every variant prefetches ahead[0 .. n) (the caller's next row; NULL for none) along the way,
 * so that the row's next pass over memory overlaps this one's arithmetic; the portable ones
 * leave that to the hardware. */
void exp_shifted_portable_f32(const float *x, float *out, int64_t n, float scale,
                                    float hi, float lo, const float *ahead) {
    (void)ahead;
    for (int64_t j = 0; j < n; ++j) out[j] = mt_exp_f32(x[j] * scale - hi - lo);
}

void exp_shifted_portable_f64(const double *x, double *out, int64_t n, double scale,
                                    double hi, double lo, const double *ahead) {
    (void)ahead;
    for (int64_t j = 0; j < n; ++j) out[j] = mt_exp_f64(x[j] * scale - hi - lo);
}

double exp_shifted_sum_portable_f32(const float *x, float *out, int64_t n, float scale,
                                          float shift, const float *ahead) {
    (void)ahead;
    /* in double: one float accumulator over a block of ~1000 terms drifts by tens of ulps */
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += out[j] = mt_exp_f32(x[j] * scale - shift);
    return s;
}

double exp_shifted_sum_portable_f64(const double *x, double *out, int64_t n,
                                          double scale, double shift, const double *ahead) {
    (void)ahead;
    double s = 0;
    for (int64_t j = 0; j < n; ++j) s += out[j] = mt_exp_f64(x[j] * scale - shift);
    return s;
}

#ifdef MT_X86
/* ---------------- AVX2 + FMA ---------------- */
__attribute__((target("avx2,fma"))) void exp_shifted_avx2_f32(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead) {
    const __m256 vs = _mm256_set1_ps(scale), vh = _mm256_set1_ps(hi), vl = _mm256_set1_ps(lo);
    int64_t j = 0;
    /* One vector per iteration: the out-of-order core overlaps iterations by itself, and an
     * unrolled body needs more than the 16 ymm registers (constants get spilled). So `ahead`
     * gets two prefetches per cache line: the second finds the line on its way, almost free.
     * (GCC takes the loop-invariant `if (ahead)` out of the loop.) (The tail stays scalar: a
     * -inf padded vector measured slower, its buffer round trip stalls.) */
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256 a = _mm256_sub_ps(_mm256_fmsub_ps(_mm256_loadu_ps(x + j), vs, vh), vl);
        _mm256_storeu_ps(out + j, exp8_avx2(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f32(x[j] * scale - hi - lo);
}

__attribute__((target("avx2,fma"))) double exp_shifted_sum_avx2_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead) {
    const __m256 vs = _mm256_set1_ps(scale), vh = _mm256_set1_ps(shift);
    __m256 acc = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256 e = exp8_avx2(_mm256_fmsub_ps(_mm256_loadu_ps(x + j), vs, vh));
        _mm256_storeu_ps(out + j, e);
        acc = _mm256_add_ps(acc, e);
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, acc);
    double s = 0;
    for (int l = 0; l < 8; ++l) s += lanes[l];
    for (; j < n; ++j) s += out[j] = mt_exp_f32(x[j] * scale - shift);
    return s;
}

__attribute__((target("avx2,fma"))) void exp_shifted_avx2_f64(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead) {
    const __m256d vs = _mm256_set1_pd(scale), vh = _mm256_set1_pd(hi), vl = _mm256_set1_pd(lo);
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256d a = _mm256_sub_pd(_mm256_fmsub_pd(_mm256_loadu_pd(x + j), vs, vh), vl);
        _mm256_storeu_pd(out + j, exp4_avx2(a));
    }
    for (; j < n; ++j) out[j] = mt_exp_f64(x[j] * scale - hi - lo);
}

__attribute__((target("avx2,fma"))) double exp_shifted_sum_avx2_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead) {
    const __m256d vs = _mm256_set1_pd(scale), vh = _mm256_set1_pd(shift);
    __m256d acc = _mm256_setzero_pd();
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) { /* as exp_shifted_avx2_f32 */
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m256d e = exp4_avx2(_mm256_fmsub_pd(_mm256_loadu_pd(x + j), vs, vh));
        _mm256_storeu_pd(out + j, e);
        acc = _mm256_add_pd(acc, e);
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, acc);
    double s = lanes[0] + lanes[1] + lanes[2] + lanes[3];
    for (; j < n; ++j) s += out[j] = mt_exp_f64(x[j] * scale - shift);
    return s;
}

/* ---------------- AVX-512F (its exps: exp_avx512.h) ---------------- */
__attribute__((target("avx512f"))) MT_INLINE static void exp_shifted_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead,
    const int scale_is_one) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(hi), vl = _mm512_set1_ps(lo);
    const mt_exp_table_f32 tab = exp_table_f32();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 a = _mm512_sub_ps(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), vl);
        _mm512_storeu_ps(out + j, exp16_avx512(a, tab));
    }
    if (j < n) { /* the tail as one masked vector: up to 15 scalar exps cost more than it */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 a = _mm512_sub_ps(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), vl);
        _mm512_mask_storeu_ps(out + j, k, exp16_avx512(a, tab));
    }
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float hi, float lo, const float *ahead) {
    if (scale == 1.0f) exp_shifted_avx512_f32_loop(x, out, n, scale, hi, lo, ahead, 1);
    else exp_shifted_avx512_f32_loop(x, out, n, scale, hi, lo, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static void exp_shifted_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead, const int scale_is_one) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(hi), vl = _mm512_set1_pd(lo);
    const mt_exp_table_f64 tab = exp_table_f64();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d a = _mm512_sub_pd(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), vl);
        _mm512_storeu_pd(out + j, exp8_avx512(a, tab));
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d a = _mm512_sub_pd(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), vl);
        _mm512_mask_storeu_pd(out + j, k, exp8_avx512(a, tab));
    }
}

__attribute__((target("avx512f"))) void exp_shifted_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double hi, double lo,
    const double *ahead) {
    if (scale == 1.0) exp_shifted_avx512_f64_loop(x, out, n, scale, hi, lo, ahead, 1);
    else exp_shifted_avx512_f64_loop(x, out, n, scale, hi, lo, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_shifted_sum_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead,
    const int scale_is_one) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(shift);
    const mt_exp_table_f32 tab = exp_table_f32();
    __m512 acc = _mm512_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        _mm512_storeu_ps(out + j, e);
        acc = _mm512_add_ps(acc, e);
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop; the lanes past n add nothing */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        _mm512_mask_storeu_ps(out + j, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
    }
    return lanes_total_f32(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *ahead) {
    if (scale == 1.0f) return exp_shifted_sum_avx512_f32_loop(x, out, n, scale, shift, ahead, 1);
    return exp_shifted_sum_avx512_f32_loop(x, out, n, scale, shift, ahead, 0);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_shifted_sum_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead,
    const int scale_is_one) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(shift);
    const mt_exp_table_f64 tab = exp_table_f64();
    __m512d acc = _mm512_setzero_pd();
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        _mm512_storeu_pd(out + j, e);
        acc = _mm512_add_pd(acc, e);
    }
    if (j < n) { /* as exp_shifted_sum_avx512_f32_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        _mm512_mask_storeu_pd(out + j, k, e);
        acc = _mm512_mask_add_pd(acc, k, acc, e);
    }
    return _mm512_reduce_add_pd(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *ahead) {
    if (scale == 1.0) return exp_shifted_sum_avx512_f64_loop(x, out, n, scale, shift, ahead, 1);
    return exp_shifted_sum_avx512_f64_loop(x, out, n, scale, shift, ahead, 0);
}

/* exp_shifted_sum, pipelined across rows: besides out[j] = exp(x[j]*scale - shift) and their
 * sum, the same loop takes the max of the next row (`next`, or NULL) into *next_max (NaN
 * skipped, as row_max), finishes the previous row (`prev`: see mt_row_finish in fast_exp.h),
 * and prefetches `ahead` (the row after next, or NULL), whose max the next row's loop loads,
 * and `ahead_out` for writing (the next row's output, or NULL): rows from DRAM keep more misses
 * in flight (float32 softmax 4096x1000, 1 thread: 20 -> 28 GB/s with it). Both go to L1, or
 * to L2 only where `to_l2` (row_ops.h: MT_AHEAD_TO_L2): rows streamed from beyond L2 then
 * stop evicting the lines that the loop is still reading and writing in L1.
 * The exp keeps the FMA pipes busy while loads and stores are idle, so a row's max pass and
 * its finishing pass (a zmm store every 2 cycles on Zen 4) ride along for free: a softmax or
 * log-softmax row costs one pass instead of three. ONE (scale is 1), HAS_NEXT and FINISH (0:
 * none, 1: scale, 2: log-softmax's) are constants after inlining. out NULL: the exps are only
 * summed (a log-sum-exp's row from cache, where their stores were a pass of their own). */

__attribute__((target("avx512f"))) MT_INLINE static __m512 finish_f32(
    __m512 y, __m512 x, __m512 factor, __m512 shift, __m512 hi, __m512 lo, const int finish) {
    if (finish == 1) return _mm512_mul_ps(y, factor);
    return _mm512_sub_ps(_mm512_sub_ps(_mm512_sub_ps(x, shift), hi), lo);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_sum_pipelined_avx512_f32_loop(
    const float *x, float *out, int64_t n, float scale, float shift, const float *next, float *next_max,
    const mt_row_finish_f32 *prev, const float *ahead, float *ahead_out, const int to_l2,
    const int scale_is_one, const int has_next, const int finish) {
    const __m512 vs = _mm512_set1_ps(scale), vh = _mm512_set1_ps(shift);
    float *py = finish ? prev->y : NULL;
    const float *px = finish == 2 ? prev->x : NULL;
    float *streamed = finish ? prev->stream_to : NULL; /* (else the values go back to py) */
    const __m512 pf = _mm512_set1_ps(finish ? prev->factor : 0), ps = _mm512_set1_ps(finish ? prev->shift : 0);
    const __m512 phi = _mm512_set1_ps(finish ? prev->hi : 0), plo = _mm512_set1_ps(finish ? prev->lo : 0);
    const mt_exp_table_f32 tab = exp_table_f32();
    __m512 acc = _mm512_setzero_ps(), m = _mm512_set1_ps(has_next ? *next_max : 0);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        MT_PREFETCH_AHEAD(ahead + j, ahead_out + j, ahead, ahead_out, to_l2);
        __m512 v = _mm512_loadu_ps(x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        /* (the previous row before out: its y[j] lies n elements below out[j], a multiple of
         * 4 KiB for 1024 floats, and a load after the store would wait on it: see
         * MT_ALIAS_WINDOW) */
        if (finish) {
            __m512 pyv = finish == 1 ? _mm512_loadu_ps(py + j) : vs;
            __m512 pxv = finish == 2 ? _mm512_loadu_ps(px + j) : vs;
            const __m512 done = finish_f32(pyv, pxv, pf, ps, phi, plo, finish);
            if (streamed) _mm512_stream_ps(streamed + j, done);
            else _mm512_storeu_ps(py + j, done);
        }
        if (out) _mm512_storeu_ps(out + j, e);
        acc = _mm512_add_ps(acc, e);
        /* max(v, m) is m where v is NaN: NaN skipped */
        if (has_next) m = _mm512_max_ps(_mm512_loadu_ps(next + j), m);
    }
    if (j < n) { /* as exp_shifted_avx512_f32_loop */
        const __mmask16 k = (__mmask16)((1u << (n - j)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(k, x + j);
        __m512 e = exp16_avx512(MT_SCALE_SHIFT_512(ps, v, scale_is_one, vs, vh), tab);
        if (finish) {
            __m512 pyv = finish == 1 ? _mm512_maskz_loadu_ps(k, py + j) : vs;
            __m512 pxv = finish == 2 ? _mm512_maskz_loadu_ps(k, px + j) : vs;
            _mm512_mask_storeu_ps(streamed ? streamed + j : py + j, k,
                                  finish_f32(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_mask_storeu_ps(out + j, k, e);
        acc = _mm512_mask_add_ps(acc, k, acc, e);
        if (has_next) m = _mm512_mask_max_ps(m, k, _mm512_maskz_loadu_ps(k, next + j), m);
    }
    if (has_next) *next_max = _mm512_reduce_max_ps(m);
    return lanes_total_f32(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_pipelined_avx512_f32(
    const float *x, float *out, int64_t n, float scale, float shift, const float *next, float *next_max,
    const mt_row_finish_f32 *prev, const float *ahead, float *ahead_out, int to_l2) {
    const int finish = !prev || !prev->y ? 0 : prev->x ? 2 : 1;
#define MT_LOOP(TO_L2, ONE, NEXT, FINISH)                                               \
    return exp_sum_pipelined_avx512_f32_loop(x, out, n, scale, shift, next, next_max, prev, \
                                             ahead, ahead_out, TO_L2, ONE, NEXT, FINISH)
    MT_PIPELINED_DISPATCH(MT_LOOP, scale, next, finish, to_l2);
#undef MT_LOOP
}

__attribute__((target("avx512f"))) MT_INLINE static __m512d finish_f64(
    __m512d y, __m512d x, __m512d factor, __m512d shift, __m512d hi, __m512d lo, const int finish) {
    if (finish == 1) return _mm512_mul_pd(y, factor);
    (void)lo; /* 0 in double, whose log-sum needs no split (softmax_tuned.c) */
    return _mm512_sub_pd(_mm512_sub_pd(x, shift), hi);
}

__attribute__((target("avx512f"))) MT_INLINE static double exp_sum_pipelined_avx512_f64_loop(
    const double *x, double *out, int64_t n, double scale, double shift, const double *next, double *next_max,
    const mt_row_finish_f64 *prev, const double *ahead, double *ahead_out, const int to_l2,
    const int scale_is_one, const int has_next, const int finish) {
    const __m512d vs = _mm512_set1_pd(scale), vh = _mm512_set1_pd(shift);
    double *py = finish ? prev->y : NULL;
    const double *px = finish == 2 ? prev->x : NULL;
    double *streamed = finish ? prev->stream_to : NULL; /* (else the values go back to py) */
    const __m512d pf = _mm512_set1_pd(finish ? prev->factor : 0), ps = _mm512_set1_pd(finish ? prev->shift : 0);
    const __m512d phi = _mm512_set1_pd(finish ? prev->hi : 0), plo = _mm512_set1_pd(finish ? prev->lo : 0);
    const mt_exp_table_f64 tab = exp_table_f64();
    __m512d acc = _mm512_setzero_pd(), m = _mm512_set1_pd(has_next ? *next_max : 0);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        MT_PREFETCH_AHEAD(ahead + j, ahead_out + j, ahead, ahead_out, to_l2);
        __m512d v = _mm512_loadu_pd(x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        /* (the previous row before out: its y[j] lies n elements below out[j], a multiple of
         * 4 KiB for 1024 floats, and a load after the store would wait on it: see
         * MT_ALIAS_WINDOW) */
        if (finish) {
            __m512d pyv = finish == 1 ? _mm512_loadu_pd(py + j) : vs;
            __m512d pxv = finish == 2 ? _mm512_loadu_pd(px + j) : vs;
            const __m512d done = finish_f64(pyv, pxv, pf, ps, phi, plo, finish);
            if (streamed) _mm512_stream_pd(streamed + j, done);
            else _mm512_storeu_pd(py + j, done);
        }
        if (out) _mm512_storeu_pd(out + j, e);
        acc = _mm512_add_pd(acc, e);
        /* max(v, m) is m where v is NaN: NaN skipped */
        if (has_next) m = _mm512_max_pd(_mm512_loadu_pd(next + j), m);
    }
    if (j < n) { /* as exp_shifted_avx512_f64_loop */
        const __mmask8 k = (__mmask8)((1u << (n - j)) - 1);
        __m512d v = _mm512_maskz_loadu_pd(k, x + j);
        __m512d e = exp8_avx512(MT_SCALE_SHIFT_512(pd, v, scale_is_one, vs, vh), tab);
        if (finish) {
            __m512d pyv = finish == 1 ? _mm512_maskz_loadu_pd(k, py + j) : vs;
            __m512d pxv = finish == 2 ? _mm512_maskz_loadu_pd(k, px + j) : vs;
            _mm512_mask_storeu_pd(streamed ? streamed + j : py + j, k,
                                  finish_f64(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) _mm512_mask_storeu_pd(out + j, k, e);
        acc = _mm512_mask_add_pd(acc, k, acc, e);
        if (has_next) m = _mm512_mask_max_pd(m, k, _mm512_maskz_loadu_pd(k, next + j), m);
    }
    if (has_next) *next_max = _mm512_reduce_max_pd(m);
    return _mm512_reduce_add_pd(acc);
}

__attribute__((target("avx512f"))) double exp_shifted_sum_pipelined_avx512_f64(
    const double *x, double *out, int64_t n, double scale, double shift, const double *next, double *next_max,
    const mt_row_finish_f64 *prev, const double *ahead, double *ahead_out, int to_l2) {
    const int finish = !prev || !prev->y ? 0 : prev->x ? 2 : 1;
#define MT_LOOP(TO_L2, ONE, NEXT, FINISH)                                               \
    return exp_sum_pipelined_avx512_f64_loop(x, out, n, scale, shift, next, next_max, prev, \
                                             ahead, ahead_out, TO_L2, ONE, NEXT, FINISH)
    MT_PIPELINED_DISPATCH(MT_LOOP, scale, next, finish, to_l2);
#undef MT_LOOP
}

/* out[j] = add[j] + mul * exp(x[j] - hi - lo) (add_const in place of add[j] where add is NULL),
 * prefetching ahead[0 .. n) meanwhile: a backward's exp and its combination in one loop
 * (log-softmax: dy - sum(dy) exp(y); cross-entropy: g exp(x - lse) - g eps/C), where a second
 * pass over the row would store every element twice. Where STREAM, out's 64-byte aligned
 * vectors are stored around the cache (MT_STREAM_BYTES; the caller fences), and `spike` is
 * added to out[spike_at] (a cross-entropy's -g at its target) on the way: added after the
 * loop, it would read back a line just written to memory. HAS_ADD and STREAM are constants
 * after inlining. */
#define MT_EXP_AXPY_LOOP(SFX, T, VEC, LANES, MASK, OP, EXP, TABLE)                              \
    /* y plus spike in the lane of element spike_at, for the vector of elements j .. */        \
    __attribute__((target("avx512f"))) MT_INLINE static VEC spiked_##SFX(VEC y, int64_t j,    \
                                                                      int64_t spike_at,      \
                                                                      T spike) {             \
        if ((uint64_t)(spike_at - j) >= LANES) return y;                                      \
        return _mm512_mask_add_##OP(y, (MASK)(1u << (spike_at - j)), y,                      \
                                    _mm512_set1_##OP(spike));                                 \
    }                                                                                         \
    /* the lanes k of out[j ..] */                                                            \
    __attribute__((target("avx512f"))) MT_INLINE static void exp_axpy_lanes_##SFX(            \
        const T *x, T *out, int64_t j, MASK k, VEC vh, VEC vl, VEC vm, const T *add, VEC vc,  \
        TABLE tab, const int has_add, int64_t spike_at, T spike) {                            \
        VEC a = _mm512_sub_##OP(_mm512_sub_##OP(_mm512_maskz_loadu_##OP(k, x + j), vh), vl);  \
        VEC b = has_add ? _mm512_maskz_loadu_##OP(k, add + j) : vc;                           \
        VEC y = spiked_##SFX(_mm512_fmadd_##OP(EXP(a, tab), vm, b), j, spike_at, spike);      \
        _mm512_mask_storeu_##OP(out + j, k, y);                                               \
    }                                                                                         \
    __attribute__((target("avx512f"))) MT_INLINE static void exp_axpy_avx512_##SFX##_loop(    \
        const T *x, T *out, int64_t n, T hi, T lo, T mul, const T *add, T add_const,          \
        const T *ahead, const int has_add, const int stream, int64_t spike_at, T spike) {     \
        const VEC vh = _mm512_set1_##OP(hi), vl = _mm512_set1_##OP(lo);                       \
        const VEC vm = _mm512_set1_##OP(mul), vc = _mm512_set1_##OP(add_const);               \
        const TABLE tab = exp_table_##SFX();                                                  \
        int64_t j = 0;                                                                        \
        if (stream && ((uintptr_t)out & 63)) { /* up to out's first aligned vector */         \
            j = (int64_t)(64 - ((uintptr_t)out & 63)) / (int64_t)sizeof(T);                   \
            j = j < n ? j : n;                                                                \
            exp_axpy_lanes_##SFX(x, out, 0, lanes_below_avx512_##SFX(j), vh, vl, vm, add, vc, \
                                 tab, has_add, spike_at, spike);                              \
        }                                                                                     \
        for (; j + LANES <= n; j += LANES) {                                                  \
            if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);                  \
            VEC a = _mm512_sub_##OP(_mm512_sub_##OP(_mm512_loadu_##OP(x + j), vh), vl);       \
            VEC b = has_add ? _mm512_loadu_##OP(add + j) : vc;                                \
            VEC y = _mm512_fmadd_##OP(EXP(a, tab), vm, b);                                    \
            if (stream) _mm512_stream_##OP(out + j, spiked_##SFX(y, j, spike_at, spike));     \
            else _mm512_storeu_##OP(out + j, y);                                              \
        }                                                                                     \
        if (j < n)                                                                            \
            exp_axpy_lanes_##SFX(x, out, j, lanes_below_avx512_##SFX(n - j), vh, vl, vm, add, \
                                 vc, tab, has_add, spike_at, spike);                          \
    }
MT_EXP_AXPY_LOOP(f32, float, __m512, 16, __mmask16, ps, exp16_avx512, mt_exp_table_f32)
MT_EXP_AXPY_LOOP(f64, double, __m512d, 8, __mmask8, pd, exp8_avx512, mt_exp_table_f64)
#undef MT_EXP_AXPY_LOOP

__attribute__((target("avx512f"))) void exp_axpy_avx512_f32(const float *x, float *out,
                                                            int64_t n, float hi, float lo,
                                                            float mul, const float *add,
                                                            float add_const, const float *ahead) {
    if (add) exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 1, 0, -1, 0);
    else exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 0, 0, -1, 0);
}

__attribute__((target("avx512f"))) void exp_axpy_avx512_f64(const double *x, double *out,
                                                            int64_t n, double hi, double lo,
                                                            double mul, const double *add,
                                                            double add_const,
                                                            const double *ahead) {
    if (add) exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 1, 0, -1, 0);
    else exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, add, add_const, ahead, 0, 0, -1, 0);
}

/* exp_axpy with add NULL, out stored around the cache and spike added to out[spike_at] (see
 * the loop above) */
__attribute__((target("avx512f"))) void exp_axpy_streamed_avx512_f32(
    const float *x, float *out, int64_t n, float hi, float lo, float mul, float add_const,
    const float *ahead, int64_t spike_at, float spike) {
    exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, NULL, add_const, ahead, 0, 1, spike_at,
                             spike);
}

__attribute__((target("avx512f"))) void exp_axpy_streamed_avx512_f64(
    const double *x, double *out, int64_t n, double hi, double lo, double mul,
    double add_const, const double *ahead, int64_t spike_at, double spike) {
    exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, NULL, add_const, ahead, 0, 1, spike_at,
                             spike);
}

__attribute__((target("avx512f"))) void exp_axpy_add_streamed_avx512_f32(
    const float *x, float *out, int64_t n, float hi, float lo, float mul, const float *add,
    const float *ahead) {
    exp_axpy_avx512_f32_loop(x, out, n, hi, lo, mul, add, 0, ahead, 1, 1, -1, 0);
}

__attribute__((target("avx512f"))) void exp_axpy_add_streamed_avx512_f64(
    const double *x, double *out, int64_t n, double hi, double lo, double mul,
    const double *add, const double *ahead) {
    exp_axpy_avx512_f64_loop(x, out, n, hi, lo, mul, add, 0, ahead, 1, 1, -1, 0);
}

/* lo, hi (lanes 0-7, 8-15 of a sum kept below the maxes `from`) times exp(from - to) in the
 * lanes of `lanes`, in double: a row that keeps rising rescales its sums at every block, and
 * float32 factors' roundings would add up. */
__attribute__((target("avx512f"))) MT_INLINE static void lse_rescale_avx512(
    __m512d *lo, __m512d *hi, __m512 from, __m512 to, __mmask16 lanes) {
    const mt_exp_table_f64 tab = exp_table_f64();
    const __m512d d_lo = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(from)),
                                       _mm512_cvtps_pd(_mm512_castps512_ps256(to)));
    const __m512d d_hi = _mm512_sub_pd(_mm512_cvtps_pd(upper_half_f32(from)),
                                       _mm512_cvtps_pd(upper_half_f32(to)));
    *lo = _mm512_mask_mul_pd(*lo, (__mmask8)lanes, *lo, exp8_avx512(d_lo, tab));
    *hi = _mm512_mask_mul_pd(*hi, (__mmask8)(lanes >> 8), *hi, exp8_avx512(d_hi, tab));
}

/* One vector-block step of log_sum_exp_one_pass_avx512_f32 (below): COUNT vectors v (1 or 8,
 * a constant after inlining) raise the lanes' maxes *M (NaN skipped: max(v, M) is M there),
 * the raised lanes' sums *lo, *hi (lanes 0-7, 8-15, in double) are scaled by exp(old - new),
 * and the block's exps, shifted by the new maxes (0 in a lane still at -inf, whose exps are
 * 0), are summed in float and added in double. */
#define LSE_TREE8(op, a) op(op(op(a[0], a[1]), op(a[2], a[3])), op(op(a[4], a[5]), op(a[6], a[7])))
__attribute__((target("avx512f"))) MT_INLINE static void lse_block_avx512_f32(
    const __m512 *v, const int count, __m512 *M, __m512d *lo, __m512d *hi,
    mt_exp_table_f32 tab) {
    __m512 t[8] = {0}, e[8] = {0};
#pragma GCC unroll 8
    for (int k = 0; k < count; ++k) t[k] = _mm512_max_ps(v[k], *M);
    const __m512 top = count == 1 ? t[0] : LSE_TREE8(_mm512_max_ps, t);
    const __mmask16 raised = _mm512_cmp_ps_mask(top, *M, _CMP_GT_OQ);
    if (raised) { /* (a row's first blocks; later ones where the row keeps rising) */
        lse_rescale_avx512(lo, hi, *M, top, raised);
        *M = top;
    }
    const __m512 shift = _mm512_mask_mov_ps(
        *M, _mm512_cmp_ps_mask(*M, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ), _mm512_setzero_ps());
#pragma GCC unroll 8
    for (int k = 0; k < count; ++k) e[k] = exp16_avx512(_mm512_sub_ps(v[k], shift), tab);
    const __m512 sum = count == 1 ? e[0] : LSE_TREE8(_mm512_add_ps, e);
    *lo = _mm512_add_pd(*lo, _mm512_cvtps_pd(_mm512_castps512_ps256(sum)));
    *hi = _mm512_add_pd(*hi, _mm512_cvtps_pd(upper_half_f32(sum)));
}
#undef LSE_TREE8

/* log sum_j exp(x[j] - m) in double, with *m = max_j x[j] (NaN skipped), for a float32 row
 * read once: each lane keeps its own max and its own sum of exps below that max, and the
 * lanes are put together at the end, scaled to the row's max. A cross-entropy forward over a
 * long row from memory (a vocabulary's logits) takes it: row_log_sum_exp_known_max reads
 * every row twice (for the max, as the row before's next row, then for the exps), and its
 * rows prefetched into L2 came slower than this one stream prefetched into L1, as fast as a
 * vector max alone. In cache the two reads are faster (fewer operations a vector). An all
 * -inf (or empty) row gives -inf and *m = -inf; a NaN makes the sum NaN. */
__attribute__((target("avx512f"))) double log_sum_exp_one_pass_avx512_f32(
    const float *x, int64_t n, float *m) {
    const mt_exp_table_f32 tab = exp_table_f32();
    const __m512 minus_inf = _mm512_set1_ps(-INFINITY);
    __m512 M = minus_inf;
    __m512d lo = _mm512_setzero_pd(), hi = _mm512_setzero_pd();
    int64_t j = 0;
    for (; j + 128 <= n; j += 128) {
        __m512 v[8];
        for (int k = 0; k < 8; ++k) {
            _mm_prefetch((const char *)(x + j + 16 * k) + MT_ONE_PASS_AHEAD, _MM_HINT_T0);
            v[k] = _mm512_loadu_ps(x + j + 16 * k);
        }
        lse_block_avx512_f32(v, 8, &M, &lo, &hi, tab);
    }
    for (; j < n; j += 16) {
        const __m512 v = _mm512_mask_loadu_ps(minus_inf, lanes_below_avx512_f32(n - j), x + j);
        lse_block_avx512_f32(&v, 1, &M, &lo, &hi, tab);
    }
    *m = _mm512_reduce_max_ps(M);
    if (*m == -INFINITY) return -INFINITY;
    /* each lane's sum brought to the row's max (0 for a lane of -inf only) */
    lse_rescale_avx512(&lo, &hi, M, _mm512_set1_ps(*m), (__mmask16)0xffff);
    return log(_mm512_reduce_add_pd(_mm512_add_pd(lo, hi)));
}

/* softmax rows held in registers whole (softmax_short_rows.h), for each element type */
#define SR_SFX f32
#include "softmax_short_rows.h"
#undef SR_SFX
#define SR_SFX f64
#include "softmax_short_rows.h"
#undef SR_SFX
#endif /* MT_X86 */
