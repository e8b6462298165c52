/* tuned/softmax_short_rows.h — AVX-512 softmax forward and backward for rows short enough to
 * sit in registers whole: up to 8 vectors (128 float32, 64 float64), an attention head's keys,
 * unmasked or causal, and masked by a key padding or additive mask (softmax_short_masked_rows).
 *
 * The row loops of fast_exp.c pay per row for what a long row spreads over many vectors: a
 * call, a horizontal max and sum, a division, and the pipeline that overlaps rows through
 * memory. On a 32-column row that was most of the time (softmax 4096 x 32 float32: 88 us,
 * three times the 1024-column rows' time per element). Here a row is loaded once, reduced,
 * exponentiated and stored from registers, and nothing carries from one row to the next, so
 * the core overlaps consecutive rows by itself.
 *
 * Included by fast_exp.c twice, once per element type, with SR_SFX defined (exp_avx512.h: the
 * SR_ names).
 */
#define SR_NAME(name) MT_CAT(MT_CAT(name, avx512), SR_SFX)
#define SR_MAX_VECTORS 8
/* Rows in lockstep: up to 4, as many as keep SR_ROW_REGISTERS vectors of row data in registers
 * beside the exp's (more spilled: float64 rows of 8 vectors two at a time were 15% slower) */
#define SR_MAX_GROUP 4
#define SR_GROUP(vectors) \
    ((vectors) * SR_MAX_GROUP <= SR_ROW_REGISTERS ? SR_MAX_GROUP : SR_ROW_REGISTERS / (vectors))
/* x * scale - shift, as MT_SCALE_SHIFT_512 */
#define SR_SCALE_SHIFT(v, ONE, vs, vh) ((ONE) ? SR_(sub)(v, vh) : SR_(fmsub)(v, vs, vh))

/* The end of a group's rows, loaded into v (excluded columns as -inf) with each row's max
 * among the lanes of m[g]: 0, writing nothing, if a row's max is -inf; else 1, with
 * y = exp(v*scale - max*scale) / its sum (v - max where scale_is_one) stored up to the row's
 * end. */
__attribute__((target("avx512f"))) MT_INLINE static int SR_NAME(normalize_group)(
    SR_VEC (*v)[SR_MAX_VECTORS], const SR_VEC *m, SR_T *y, int64_t r, int64_t n, SR_T scale,
    SR_VEC vs, SR_TABLE_TYPE tab, const int vectors, const int group, const int scale_is_one) {
    SR_VEC sum[SR_MAX_GROUP];
    SR_T row_max[SR_MAX_GROUP];
    int empty = 0;
    for (int g = 0; g < group; ++g) {
        row_max[g] = SR_(reduce_max)(m[g]);
        empty |= row_max[g] == -(SR_T)INFINITY;
    }
    if (empty) return 0;
    for (int g = 0; g < group; ++g) {
        const SR_VEC shift = SR_(set1)(row_max[g] * scale);
        sum[g] = SR_(setzero)();
        for (int i = 0; i < vectors; ++i) {
            v[g][i] = SR_EXP(SR_SCALE_SHIFT(v[g][i], scale_is_one, vs, shift));
            sum[g] = SR_(add)(sum[g], v[g][i]);
        }
    }
    for (int g = 0; g < group; ++g) {
        const SR_VEC factor = SR_(set1)((SR_T)(1.0 / SR_TOTAL(sum[g])));
        for (int i = 0; i < vectors; ++i)
            SR_(mask_storeu)(y + (r + g) * n + i * SR_LANES,
                             SR_NAME(lanes_below)(n - i * SR_LANES),
                             SR_(mul)(v[g][i], factor));
    }
    return 1;
}

/* Rows [r0, r1) with `vectors` vectors each, `group` rows at a time in lockstep (both constants
 * after inlining): see fast_exp.h. A row's steps form one long chain of latencies (max, its
 * horizontal reduction, exp, the sum's, the division), and the scheduler's queues hold only
 * about a row of them; rows side by side in the code fill the wait with each other's work
 * (4096 x 32 float32 rows: 68 -> 50 us a call). A group holding a row with max -inf is done a
 * row at a time, up to that row. */
__attribute__((target("avx512f"))) MT_INLINE static int SR_NAME(softmax_short_group)(
    const SR_T *x, SR_T *y, int64_t r, int64_t n, SR_T scale, int64_t *query_at,
    int64_t causal_lq, SR_VEC vs, SR_TABLE_TYPE tab, const int vectors, const int group,
    const int scale_is_one) {
    const SR_VEC minus_inf = SR_(set1)(-INFINITY);
    int64_t query = *query_at;
    SR_VEC v[SR_MAX_GROUP][SR_MAX_VECTORS], m[SR_MAX_GROUP];
    for (int g = 0; g < group; ++g) {
        int64_t live = n; /* the columns that take part: all, or up to the causal limit */
        if (causal_lq > 0) {
            live = query + 1 < n ? query + 1 : n;
            if (++query == causal_lq) query = 0;
        }
        /* excluded columns load as -inf, whose exp is 0: they add nothing, are stored as 0 */
        m[g] = minus_inf;
        for (int i = 0; i < vectors; ++i) {
            v[g][i] = SR_(mask_loadu)(minus_inf, SR_NAME(lanes_below)(live - i * SR_LANES),
                                      x + (r + g) * n + i * SR_LANES);
            m[g] = SR_(max)(v[g][i], m[g]); /* NaN skipped, as row_max */
        }
    }
    if (!SR_NAME(normalize_group)(v, m, y, r, n, scale, vs, tab, vectors, group, scale_is_one))
        return 0; /* (*query_at unchanged) */
    *query_at = query;
    return 1;
}

__attribute__((target("avx512f"))) MT_INLINE static int64_t SR_NAME(softmax_short_rows_of)(
    const SR_T *x, SR_T *y, int64_t r0, int64_t r1, int64_t n, SR_T scale, int64_t causal_lq,
    const int vectors, const int group, const int scale_is_one) {
    const SR_TABLE_TYPE tab = SR_TABLE();
    const SR_VEC vs = SR_(set1)(scale);
    int64_t query = causal_lq > 0 ? r0 % causal_lq : 0, r = r0;
    for (; r + group <= r1; r += group)
        if (!SR_NAME(softmax_short_group)(x, y, r, n, scale, &query, causal_lq, vs, tab,
                                          vectors, group, scale_is_one))
            break; /* then a row at a time, up to the row with max -inf */
    for (; r < r1; ++r)
        if (!SR_NAME(softmax_short_group)(x, y, r, n, scale, &query, causal_lq, vs, tab,
                                          vectors, 1, scale_is_one))
            return r;
    return r1;
}

__attribute__((target("avx512f"))) int64_t SR_NAME(softmax_short_rows)(
    const SR_T *x, SR_T *y, int64_t r0, int64_t r1, int64_t n, SR_T scale, int64_t causal_lq) {
    const int64_t vectors = (n + SR_LANES - 1) / SR_LANES;
#define SR_ROWS(V, ONE) \
    return SR_NAME(softmax_short_rows_of)(x, y, r0, r1, n, scale, causal_lq, V, SR_GROUP(V), ONE)
#define SR_ROWS_SCALED(V)          \
    do {                           \
        if (scale == 1) SR_ROWS(V, 1); \
        SR_ROWS(V, 0);             \
    } while (0)
    if (vectors <= 1) SR_ROWS_SCALED(1);
    if (vectors <= 2) SR_ROWS_SCALED(2);
    if (vectors <= 4) SR_ROWS_SCALED(4);
    SR_ROWS_SCALED(8);
#undef SR_ROWS_SCALED
#undef SR_ROWS
}

/* Masked rows (a key-padding or additive mask beside the causal limit): rows r0 .. r0+count-1
 * in lockstep, each with its own live columns (j < live[g] take part) and mask row: madd[g]
 * (added to x*scale) or mbool[g] (true excludes), contiguous, as softmax_row_masked scores them
 * (z = x*scale + add, then exp(z - max z)), so that the values are that row body's up to the
 * order of the sum. `group` rows (<= count) go at once; returns how many rows it did, stopping
 * before a group with a row whose max is -inf (all excluded, or NaN), which the caller does
 * through the row body. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) MT_INLINE static int SR_NAME(
    softmax_masked_group)(const SR_T *x, SR_T *y, int64_t r, int64_t n, SR_VEC vs,
                          const int64_t *live, const SR_T *const *madd,
                          const uint8_t *const *mbool, SR_TABLE_TYPE tab, const int vectors,
                          const int group, const int additive) {
    const SR_VEC minus_inf = SR_(set1)(-INFINITY);
    SR_VEC v[SR_MAX_GROUP][SR_MAX_VECTORS], m[SR_MAX_GROUP];
    for (int g = 0; g < group; ++g) {
        m[g] = minus_inf;
        for (int i = 0; i < vectors; ++i) {
            SR_MASK in = SR_NAME(lanes_below)(live[g] - i * SR_LANES);
            const SR_T *xi = x + (r + g) * n + i * SR_LANES;
            SR_VEC z;
            if (additive) {
                z = SR_(fmadd)(SR_(maskz_loadu)(in, xi), vs,
                               SR_(maskz_loadu)(in, madd[g] + i * SR_LANES));
            } else {
                const __m128i bytes = _mm_maskz_loadu_epi8((__mmask16)in,
                                                           mbool[g] + i * SR_LANES);
                in &= (SR_MASK)~_mm_test_epi8_mask(bytes, bytes);
                z = SR_(mul)(SR_(maskz_loadu)(in, xi), vs);
            }
            v[g][i] = SR_(mask_mov)(minus_inf, in, z); /* excluded: -inf, whose exp is 0 */
            m[g] = SR_(max)(v[g][i], m[g]);            /* NaN skipped, as masked_scores */
        }
    }
    /* (z is scaled already: exp(z - max z)) */
    return SR_NAME(normalize_group)(v, m, y, r, n, (SR_T)1, vs, tab, vectors, group, 1);
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) MT_INLINE static int64_t SR_NAME(
    softmax_masked_rows_of)(const SR_T *x, SR_T *y, int64_t r0, int64_t count, int64_t n,
                            SR_T scale, const int64_t *live, const SR_T *const *madd,
                            const uint8_t *const *mbool, const int vectors, const int group,
                            const int additive) {
    const SR_TABLE_TYPE tab = SR_TABLE();
    const SR_VEC vs = SR_(set1)(scale);
    int64_t g = 0;
    for (; g + group <= count; g += group)
        if (!SR_NAME(softmax_masked_group)(x, y, r0 + g, n, vs, live + g, madd + g, mbool + g,
                                           tab, vectors, group, additive))
            break; /* then a row at a time, up to the row with max -inf */
    for (; g < count; ++g)
        if (!SR_NAME(softmax_masked_group)(x, y, r0 + g, n, vs, live + g, madd + g, mbool + g,
                                           tab, vectors, 1, additive))
            return g;
    return count;
}

__attribute__((target("avx512f,avx512bw,avx512vl"))) int64_t SR_NAME(softmax_short_masked_rows)(
    const SR_T *x, SR_T *y, int64_t r0, int64_t count, int64_t n, SR_T scale,
    const int64_t *live, const SR_T *const *madd, const uint8_t *const *mbool) {
    const int64_t vectors = (n + SR_LANES - 1) / SR_LANES;
    const int additive = madd != NULL;
#define SR_MASKED(V)                                                                       \
    return additive ? SR_NAME(softmax_masked_rows_of)(x, y, r0, count, n, scale, live, madd, \
                                                      mbool, V, SR_GROUP(V), 1)             \
                    : SR_NAME(softmax_masked_rows_of)(x, y, r0, count, n, scale, live, madd, \
                                                      mbool, V, SR_GROUP(V), 0)
    if (vectors <= 1) SR_MASKED(1);
    if (vectors <= 2) SR_MASKED(2);
    if (vectors <= 4) SR_MASKED(4);
    SR_MASKED(8);
#undef SR_MASKED
}

/* dx = scale * y * (dy - sum(y * dy)) for rows [r0, r1) with `vectors` vectors each */
__attribute__((target("avx512f"))) MT_INLINE static void SR_NAME(softmax_backward_short_rows_of)(
    const SR_T *y, const SR_T *dy, SR_T *dx, int64_t r0, int64_t r1, int64_t n, SR_T scale,
    const int vectors) {
    const SR_VEC vs = SR_(set1)(scale);
    for (int64_t r = r0; r < r1; ++r) {
        SR_VEC yv[SR_MAX_VECTORS], dv[SR_MAX_VECTORS], dot = SR_(setzero)();
        for (int i = 0; i < vectors; ++i) {
            const SR_MASK k = SR_NAME(lanes_below)(n - i * SR_LANES);
            yv[i] = SR_(maskz_loadu)(k, y + r * n + i * SR_LANES);
            dv[i] = SR_(maskz_loadu)(k, dy + r * n + i * SR_LANES);
            dot = SR_(fmadd)(yv[i], dv[i], dot);
        }
        const SR_VEC total = SR_(set1)((SR_T)SR_TOTAL(dot));
        for (int i = 0; i < vectors; ++i)
            SR_(mask_storeu)(dx + r * n + i * SR_LANES, SR_NAME(lanes_below)(n - i * SR_LANES),
                             SR_(mul)(SR_(mul)(vs, yv[i]), SR_(sub)(dv[i], total)));
    }
}

__attribute__((target("avx512f"))) void SR_NAME(softmax_backward_short_rows)(
    const SR_T *y, const SR_T *dy, SR_T *dx, int64_t r0, int64_t r1, int64_t n, SR_T scale) {
    const int64_t vectors = (n + SR_LANES - 1) / SR_LANES;
    if (vectors <= 1) SR_NAME(softmax_backward_short_rows_of)(y, dy, dx, r0, r1, n, scale, 1);
    else if (vectors <= 2) SR_NAME(softmax_backward_short_rows_of)(y, dy, dx, r0, r1, n, scale, 2);
    else if (vectors <= 4) SR_NAME(softmax_backward_short_rows_of)(y, dy, dx, r0, r1, n, scale, 4);
    else SR_NAME(softmax_backward_short_rows_of)(y, dy, dx, r0, r1, n, scale, 8);
}

#undef SR_MAX_VECTORS
#undef SR_MAX_GROUP
#undef SR_GROUP
#undef SR_SCALE_SHIFT
#undef SR_NAME
