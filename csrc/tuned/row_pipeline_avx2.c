/* tuned/row_pipeline_avx2.c — the AVX2 level's one-loop rows: exp_shifted_sum_pipelined and
 * exp_axpy (fast_exp.h) for float and double, as fast_exp.c's AVX-512 loops of those names.
 *
 * Without them the AVX2 level ran a softmax row as three passes (its max, its exps and sum,
 * its scaling) and a backward's exp and its combination as two, each pass a function call
 * and a loop over the row. The exp keeps the FMA pipes busy while the load and store ports
 * are idle, so the row's other passes ride along in the exp's loop for free: the next row's
 * max, the previous row's finishing pass, the prefetches of the rows ahead.
 * Tails are scalar (fast_exp.h's exps), as in fast_exp.c's AVX2 loops.
 * Compiled once per element type: this file includes itself with RP_T defined.
 */
#ifndef RP_T
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#ifdef MT_X86
#include "exp_avx2.h"

#define RP_T float
#define RP_SFX f32
#define RP_LANES 8
#define RP_VEC __m256
#define RP_(op) _mm256_##op##_ps
#define RP_EXP(v) exp8_avx2(v)
#define RP_SCALAR_EXP(v) mt_exp_f32(v)
#include "row_pipeline_avx2.c"
#undef RP_T
#undef RP_SFX
#undef RP_LANES
#undef RP_VEC
#undef RP_
#undef RP_EXP
#undef RP_SCALAR_EXP

#define RP_T double
#define RP_SFX f64
#define RP_LANES 4
#define RP_VEC __m256d
#define RP_(op) _mm256_##op##_pd
#define RP_EXP(v) exp4_avx2(v)
#define RP_SCALAR_EXP(v) mt_exp_f64(v)
#include "row_pipeline_avx2.c"
#endif /* MT_X86 */

#else
#define RP(name) MT_CAT(MT_CAT(name, avx2), RP_SFX)
#define RP_ROW_FINISH MT_CAT(mt_row_finish, RP_SFX)

/* The previous row's vector, finished: y * factor (FINISH 1, softmax) or
 * ((x - shift) - hi) - lo (FINISH 2, log-softmax) */
__attribute__((target("avx2,fma"))) MT_INLINE static RP_VEC RP(finish)(
    RP_VEC y, RP_VEC x, RP_VEC factor, RP_VEC shift, RP_VEC hi, RP_VEC lo, const int finish) {
    if (finish == 1) return RP_(mul)(y, factor);
    /* lo is 0 in double, whose log-sum needs no split (softmax_tuned.c) */
    if (sizeof(RP_T) == 8) return RP_(sub)(RP_(sub)(x, shift), hi);
    return RP_(sub)(RP_(sub)(RP_(sub)(x, shift), hi), lo);
}

/* ONE (scale is 1), HAS_NEXT and FINISH (0: none, 1: softmax's, 2: log-softmax's) are
 * constants after inlining. */
__attribute__((target("avx2,fma"))) MT_INLINE static double RP(exp_sum_pipelined_loop)(
    const RP_T *x, RP_T *out, int64_t n, RP_T scale, RP_T shift, const RP_T *next,
    RP_T *next_max, const RP_ROW_FINISH *prev, const RP_T *ahead, RP_T *ahead_out,
    const int to_l2, const int scale_is_one, const int has_next, const int finish) {
    const RP_VEC vs = RP_(set1)(scale), vh = RP_(set1)(shift);
    RP_T *py = finish ? prev->y : NULL;
    const RP_T *px = finish == 2 ? prev->x : NULL;
    const RP_T f = finish ? prev->factor : 0, fs = finish ? prev->shift : 0;
    const RP_T fhi = finish ? prev->hi : 0, flo = finish ? prev->lo : 0;
    const RP_VEC pf = RP_(set1)(f), ps = RP_(set1)(fs), phi = RP_(set1)(fhi), plo = RP_(set1)(flo);
    RP_VEC acc = RP_(setzero)(), m = RP_(set1)(has_next ? *next_max : 0);
    int64_t j = 0;
    for (; j + RP_LANES <= n; j += RP_LANES) {
        MT_PREFETCH_AHEAD(ahead + j, ahead_out + j, ahead, ahead_out, to_l2);
        const RP_VEC v = RP_(loadu)(x + j);
        const RP_VEC e = RP_EXP(scale_is_one ? RP_(sub)(v, vh) : RP_(fmsub)(v, vs, vh));
        /* (the previous row before out: a load after the store to out[j] could wait on it,
         * their addresses equal modulo 4 KiB: see MT_ALIAS_WINDOW in row_ops.h) */
        if (finish) {
            const RP_VEC pyv = finish == 1 ? RP_(loadu)(py + j) : vs;
            const RP_VEC pxv = finish == 2 ? RP_(loadu)(px + j) : vs;
            RP_(storeu)(py + j, RP(finish)(pyv, pxv, pf, ps, phi, plo, finish));
        }
        if (out) RP_(storeu)(out + j, e);
        acc = RP_(add)(acc, e);
        /* max(v, m) is m where v is NaN: NaN skipped, as row_max */
        if (has_next) m = RP_(max)(RP_(loadu)(next + j), m);
    }
    double total = MT_CAT(lanes_total_avx2, RP_SFX)(acc);
    /* (no lane is NaN: the loop's max skips them) */
    RP_T tail_max = has_next ? MT_CAT(lanes_max_avx2, RP_SFX)(m) : 0;
    for (; j < n; ++j) {
        const RP_T e = RP_SCALAR_EXP(scale_is_one ? x[j] - shift : x[j] * scale - shift);
        if (finish == 1) py[j] *= f;
        if (finish == 2) py[j] = ((px[j] - fs) - fhi) - flo;
        if (out) out[j] = e;
        total += e;
        if (has_next) tail_max = next[j] > tail_max ? next[j] : tail_max;
    }
    if (has_next) *next_max = tail_max;
    return total;
}

__attribute__((target("avx2,fma"))) double RP(exp_shifted_sum_pipelined)(
    const RP_T *x, RP_T *out, int64_t n, RP_T scale, RP_T shift, const RP_T *next,
    RP_T *next_max, const RP_ROW_FINISH *prev, const RP_T *ahead, RP_T *ahead_out, int to_l2) {
    const int finish = !prev || !prev->y ? 0 : prev->x ? 2 : 1;
#define RP_LOOP(TO_L2, ONE, NEXT, FINISH)                                                   \
    return RP(exp_sum_pipelined_loop)(x, out, n, scale, shift, next, next_max, prev, ahead, \
                                      ahead_out, TO_L2, ONE, NEXT, FINISH)
    MT_PIPELINED_DISPATCH(RP_LOOP, scale, next, finish, to_l2);
#undef RP_LOOP
}

/* out[j] = add[j] + mul * exp(x[j] - hi - lo), add_const in place of add[j] where add is
 * NULL: a backward's exp and its combination in one loop (fast_exp.h). HAS_ADD is a constant
 * after inlining. */
__attribute__((target("avx2,fma"))) MT_INLINE static void RP(exp_axpy_loop)(
    const RP_T *x, RP_T *out, int64_t n, RP_T hi, RP_T lo, RP_T mul, const RP_T *add,
    RP_T add_const, const RP_T *ahead, const int has_add) {
    const RP_VEC vh = RP_(set1)(hi), vl = RP_(set1)(lo), vm = RP_(set1)(mul);
    const RP_VEC vc = RP_(set1)(add_const);
    int64_t j = 0;
    for (; j + RP_LANES <= n; j += RP_LANES) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        const RP_VEC a = RP_(sub)(RP_(sub)(RP_(loadu)(x + j), vh), vl);
        const RP_VEC b = has_add ? RP_(loadu)(add + j) : vc;
        RP_(storeu)(out + j, RP_(fmadd)(RP_EXP(a), vm, b));
    }
    for (; j < n; ++j) out[j] = (has_add ? add[j] : add_const) + mul * RP_SCALAR_EXP(x[j] - hi - lo);
}

__attribute__((target("avx2,fma"))) void RP(exp_axpy)(const RP_T *x, RP_T *out, int64_t n,
                                                      RP_T hi, RP_T lo, RP_T mul,
                                                      const RP_T *add, RP_T add_const,
                                                      const RP_T *ahead) {
    if (add) RP(exp_axpy_loop)(x, out, n, hi, lo, mul, add, add_const, ahead, 1);
    else RP(exp_axpy_loop)(x, out, n, hi, lo, mul, add, add_const, ahead, 0);
}

#undef RP_ROW_FINISH
#undef RP
#endif
