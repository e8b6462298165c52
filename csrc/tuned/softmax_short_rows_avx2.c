/* tuned/softmax_short_rows_avx2.c — the AVX2 level's softmax forward for rows short enough to
 * sit in registers whole: up to 4 vectors (32 float32, 16 float64), an attention head's keys.
 * What softmax_short_rows.h is to the AVX-512 level, without its mask registers.
 *
 * The general row path pays per row for a max pass, a call of the exp loop with its sum of
 * lanes through memory, and a scaling pass: on a 32-column row that is most of the time. Here
 * a row is loaded once, reduced, exponentiated and stored from registers. The arithmetic is the
 * general path's (z = x*scale - max*scale, the same vector exp, the sum in double, y = e times
 * 1/sum), so a row gets the same values either way, up to the order of the sum's terms.
 * Columns past the row's end or the causal limit load as -inf (exp 0) and are stored as 0.
 * Compiled once per element type: this file includes itself with SR_T defined.
 */
#ifndef SR_T
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#ifdef MT_X86
#include "exp_avx2.h"

#define SR_T float
#define SR_SFX f32
#define SR_LANES 8
#define SR_VEC __m256
#define SR_(op) _mm256_##op##_ps
#define SR_EXP(v) exp8_avx2(v)
/* lanes as 32-bit integers, for the live-column masks */
#define SR_IOTA _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)
#define SR_MASK_OF(count) \
    _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count)), SR_IOTA))
#define SR_STORE_MASK(count) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(count)), SR_IOTA)
#include "softmax_short_rows_avx2.c"
#undef SR_T
#undef SR_SFX
#undef SR_LANES
#undef SR_VEC
#undef SR_
#undef SR_EXP
#undef SR_IOTA
#undef SR_MASK_OF
#undef SR_STORE_MASK

#define SR_T double
#define SR_SFX f64
#define SR_LANES 4
#define SR_VEC __m256d
#define SR_(op) _mm256_##op##_pd
#define SR_EXP(v) exp4_avx2(v)
#define SR_IOTA _mm256_setr_epi64x(0, 1, 2, 3)
#define SR_MASK_OF(count) \
    _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_set1_epi64x(count), SR_IOTA))
#define SR_STORE_MASK(count) _mm256_cmpgt_epi64(_mm256_set1_epi64x(count), SR_IOTA)
#include "softmax_short_rows_avx2.c"
#endif /* MT_X86 */

#else
#define SR(name) MT_CAT(MT_CAT(name, avx2), SR_SFX)
#define SR_MAX_VECTORS 4

/* Row r (`vectors` vectors, a constant after inlining; `live` columns take part): 0, with
 * nothing stored, where its max is -inf (every column excluded, or a NaN the general path
 * finds); else 1. The max skips NaN (max(v, m) is m where v is NaN), as row_max. */
__attribute__((target("avx2,fma"))) MT_INLINE static int SR(softmax_short_row)(
    const SR_T *x, SR_T *y, int64_t n, int64_t live, SR_VEC vs, const int scale_is_one,
    SR_T scale, const int vectors) {
    const SR_VEC minus_inf = SR_(set1)(-INFINITY);
    SR_VEC v[SR_MAX_VECTORS], m = minus_inf;
    for (int i = 0; i < vectors; ++i) {
        const int64_t first = i * SR_LANES;
        if (live - first >= SR_LANES) {
            v[i] = SR_(loadu)(x + first);
        } else if (n - first >= SR_LANES) { /* a whole vector in the row, partly excluded */
            v[i] = SR_(blendv)(minus_inf, SR_(loadu)(x + first), SR_MASK_OF(live - first));
        } else { /* the row's last, partial vector: nothing read past its end */
            v[i] = SR_(blendv)(minus_inf, SR_(maskload)(x + first, SR_STORE_MASK(n - first)),
                               SR_MASK_OF(live - first));
        }
        m = SR_(max)(v[i], m);
    }
    const SR_T row_max = MT_CAT(lanes_max_avx2, SR_SFX)(m);
    if (row_max == -(SR_T)INFINITY) return 0;
    const SR_VEC shift = SR_(set1)(row_max * scale);
    SR_VEC sum = SR_(setzero)();
    for (int i = 0; i < vectors; ++i) {
        v[i] = SR_EXP(scale_is_one ? SR_(sub)(v[i], shift) : SR_(fmsub)(v[i], vs, shift));
        sum = SR_(add)(sum, v[i]);
    }
    const SR_VEC factor = SR_(set1)((SR_T)(1.0 / MT_CAT(lanes_total_avx2, SR_SFX)(sum)));
    for (int i = 0; i < vectors; ++i) {
        const int64_t first = i * SR_LANES;
        if (n - first >= SR_LANES) SR_(storeu)(y + first, SR_(mul)(v[i], factor));
        else SR_(maskstore)(y + first, SR_STORE_MASK(n - first), SR_(mul)(v[i], factor));
    }
    return 1;
}

__attribute__((target("avx2,fma"))) MT_INLINE static int64_t SR(softmax_short_rows_of)(
    const SR_T *x, SR_T *y, int64_t r0, int64_t r1, int64_t n, SR_T scale, int64_t causal_lq,
    const int vectors, const int scale_is_one) {
    const SR_VEC vs = SR_(set1)(scale);
    int64_t query = causal_lq > 0 ? r0 % causal_lq : 0;
    for (int64_t r = r0; r < r1; ++r) {
        int64_t live = n;
        if (causal_lq > 0) {
            live = query + 1 < n ? query + 1 : n;
            if (++query == causal_lq) query = 0;
        }
        if (!SR(softmax_short_row)(x + r * n, y + r * n, n, live, vs, scale_is_one, scale,
                                   vectors))
            return r;
    }
    return r1;
}

/* Rows [r0, r1) of y = softmax(x * scale) (scale > 0; y may be x), n up to 4 vectors,
 * causal_lq > 0 excluding column j > r % causal_lq: returns the first row left undone (its
 * max -inf: the general path's), or r1. */
__attribute__((target("avx2,fma"))) int64_t SR(softmax_short_rows)(
    const SR_T *x, SR_T *y, int64_t r0, int64_t r1, int64_t n, SR_T scale, int64_t causal_lq) {
    const int64_t vectors = (n + SR_LANES - 1) / SR_LANES;
#define SR_ROWS(V)                                                                          \
    do {                                                                                    \
        if (scale == 1) return SR(softmax_short_rows_of)(x, y, r0, r1, n, scale, causal_lq, \
                                                         V, 1);                             \
        return SR(softmax_short_rows_of)(x, y, r0, r1, n, scale, causal_lq, V, 0);          \
    } while (0)
    if (vectors <= 1) SR_ROWS(1);
    if (vectors <= 2) SR_ROWS(2);
    SR_ROWS(4);
#undef SR_ROWS
}

#undef SR_MAX_VECTORS
#undef SR
#endif
