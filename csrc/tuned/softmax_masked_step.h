/* tuned/softmax_masked_step.h — AVX-512: one loop of a masked (or causal) softmax's pipeline
 * across rows, the masked counterpart of fast_exp.c's exp_shifted_sum_pipelined.
 *
 * A masked row used to take three passes and a memset (softmax_rows.h: softmax_row_masked):
 * its scores and their max, its exps and their sum, then the division. Each pass is short on a
 * causal row (half a row on average), and between them sits a chain of latencies (a horizontal
 * max, a horizontal sum, a division) that the core could not overlap with the next row: an
 * unmasked pipelined row, with twice the exps, ran faster. Here one loop over the columns does
 * the current row's exps (scores in place, their sum), the next row's scores (and max) and the
 * previous row's division, each part as far as its own row's width reaches (lane masks), so
 * the three rows' chains overlap. The values are the three passes' bit for bit: the same
 * operations per lane, the sum in the same lanes (the caller adds blocks of MT_SUM_BLOCK,
 * row_ops.h, as the three passes did).
 *
 * Included by softmax_rows.h once per element type, with SR_SFX defined (exp_avx512.h: the SR_
 * names), so that the step inlines into the row loop that calls it once a row: called from
 * another file, its call, arguments and setup cost a causal 1 KiB row 9% of its time.
 */
#define SR_NAME(name) MT_CAT(MT_CAT(name, avx512), SR_SFX)

/* The columns [j0, j1) of three rows (constants after inlining: HAS_PREV; NEXT_KIND, 0: no
 * next row, 1: scored with next->add, 2: with next->madd, 3: excluded by next->mbool; FULL:
 * every part's lanes all in, no lane masks):
 *   current:  cur[j] = exp(cur[j] - shift) for j < n_exp, summed into the lanes of *acc;
 *   next:     next->y[j] = next->x[j] * scale + add (madd[j] for kind 2), -inf where
 *             j >= next->live or mbool[j] (kind 3), for j < next->width, maxed into *best
 *             (NaN skipped);
 *   previous: prev[j] *= factor for j < n_prev; HAS_PREV 2: streamed to prev_out[j] instead
 *             (64-byte aligned), a last partial line's other lanes `fill`.
 * ahead / ahead_out (or NULL): a row ahead's x and y, one line of x and two of y per vector
 * (a causal row's loop is about as long as its live part; the rest of y is zeros). Each
 * vector's loads come before its stores: y starts half a page from x
 * (large_buffers.page_offset_apart), so with 2 KiB rows the next row's x[j] lies 4 KiB from
 * the current row's y[j], and a load of it after that store waits on it (4K aliasing:
 * row_ops.h), as one of the previous row (4 KiB rows) would. The next row's fields are read
 * once (the stores could alias the struct). */
__attribute__((target("avx512f,avx512bw,avx512vl"))) MT_INLINE static void
SR_NAME(masked_step_loop)(
    SR_T *cur, int64_t n_exp, SR_T shift, const MT_CAT(mt_masked_row, SR_SFX) *next, SR_VEC *acc,
    SR_VEC *best, SR_T *prev, int64_t n_prev, SR_T factor, SR_T *prev_out, SR_T fill,
    const SR_T *ahead, SR_T *ahead_out, int64_t j0, int64_t j1, SR_TABLE_TYPE tab,
    const int HAS_PREV, const int NEXT_KIND, const int FULL) {
    const SR_VEC vshift = SR_(set1)(shift), vfactor = SR_(set1)(factor), vfill = SR_(set1)(fill);
    const SR_VEC minus_inf = SR_(set1)(-INFINITY);
    const SR_VEC vscale = SR_(set1)(NEXT_KIND ? next->scale : 0);
    const SR_VEC vadd = SR_(set1)(NEXT_KIND ? next->add : 0);
    const SR_T *nx = NEXT_KIND ? next->x : NULL, *nadd = NEXT_KIND == 2 ? next->madd : NULL;
    const uint8_t *nbool = NEXT_KIND == 3 ? next->mbool : NULL;
    SR_T *ny = NEXT_KIND ? next->y : NULL;
    const int64_t n_width = NEXT_KIND ? next->width : 0, n_live = NEXT_KIND ? next->live : 0;
    const SR_MASK all = (SR_MASK)~(SR_MASK)0;
    SR_VEC sum = *acc, m = *best;
    for (int64_t j = j0; j < j1; j += SR_LANES) {
        if (ahead) _mm_prefetch((const char *)(ahead + j), _MM_HINT_T0);
        if (ahead_out) {
            _mm_prefetch((const char *)(ahead_out + 2 * j), _MM_HINT_ET0);
            _mm_prefetch((const char *)(ahead_out + 2 * j + SR_LANES), _MM_HINT_ET0);
        }
        /* every load before the stores: see above */
        const SR_MASK ke = FULL ? all : SR_NAME(lanes_below)(n_exp - j);
        const SR_VEC z_cur = SR_(maskz_loadu)(ke, cur + j);
        SR_MASK kp = 0, in_row = 0, excluded = 0;
        SR_VEC y_prev = minus_inf, z = minus_inf;
        if (HAS_PREV) {
            kp = FULL ? all : SR_NAME(lanes_below)(n_prev - j);
            y_prev = SR_(maskz_loadu)(kp, prev + j);
        }
        if (NEXT_KIND) {
            in_row = FULL ? all : SR_NAME(lanes_below)(n_width - j);
            excluded = FULL ? 0 : (SR_MASK)~SR_NAME(lanes_below)(n_live - j);
            const SR_VEC addend = NEXT_KIND == 2 ? SR_(maskz_loadu)(in_row, nadd + j) : vadd;
            z = SR_(fmadd)(SR_(maskz_loadu)(in_row, nx + j), vscale, addend);
            if (NEXT_KIND == 3) {
                const __m128i bytes = _mm_maskz_loadu_epi8(in_row, nbool + j);
                excluded |= (SR_MASK)_mm_test_epi8_mask(bytes, bytes);
            }
            z = SR_(mask_mov)(z, excluded, minus_inf);
            m = SR_(mask_max)(m, in_row, z, m); /* NaN z: m kept */
        }
        const SR_VEC e = SR_EXP(SR_(sub)(z_cur, vshift));
        sum = SR_(mask_add)(sum, ke, sum, e);
        if (HAS_PREV == 1) SR_(mask_storeu)(prev + j, kp, SR_(mul)(y_prev, vfactor));
        if (HAS_PREV == 2 && kp) /* (no masked streaming store: a whole line, filled) */
            SR_(stream)(prev_out + j, SR_(mask_mov)(vfill, kp, SR_(mul)(y_prev, vfactor)));
        SR_(mask_storeu)(cur + j, ke, e);
        if (NEXT_KIND) SR_(mask_storeu)(ny + j, in_row, z);
    }
    *acc = sum;
    *best = m;
}

/* Columns [j0, j1) of three rows of a masked softmax in one loop: returns the sum of
 * cur[j] = exp(cur[j] - shift), j < n_exp (the current row, scored in place); scores `next`
 * (NULL for none), maxing its scores into *next_max; multiplies prev[j], j < n_prev, by factor
 * (prev NULL for none), in place or (prev_out not NULL: 64-byte aligned) streamed to prev_out,
 * up to the line n_prev ends in, `fill` after it; prefetches ahead / ahead_out (the row after
 * next's x and y, or NULL).
 * The columns where every part's row goes on (full vectors, all live) take the loop without
 * lane masks, the rest the masked one. */
__attribute__((target("avx512f,avx512bw,avx512vl"))) MT_INLINE static double SR_NAME(
    softmax_masked_step)(
    SR_T *cur, int64_t n_exp, SR_T shift, const MT_CAT(mt_masked_row, SR_SFX) *next,
    SR_T *next_max, SR_T *prev, int64_t n_prev, SR_T factor, SR_T *prev_out, SR_T fill,
    const SR_T *ahead, SR_T *ahead_out, int64_t j0, int64_t j1) {
    const SR_TABLE_TYPE tab = SR_TABLE();
    const int kind = !next ? 0 : next->madd ? 2 : next->mbool ? 3 : 1;
    int64_t full = n_exp;
    if (next) {
        full = next->width < full ? next->width : full;
        full = next->live < full ? next->live : full;
    }
    if (prev && n_prev < full) full = n_prev;
    full = full / SR_LANES * SR_LANES;
    full = full < j0 ? j0 : full > j1 ? j1 : full;
    SR_VEC best = SR_(set1)(next ? *next_max : 0), acc = SR_(setzero)();
#define MT_STEP(PREV, KIND)                                                                   \
    do {                                                                                      \
        SR_NAME(masked_step_loop)(cur, n_exp, shift, next, &acc, &best, prev, n_prev, factor, \
                                  prev_out, fill, ahead, ahead_out, j0, full, tab, PREV,      \
                                  KIND, 1);                                                   \
        SR_NAME(masked_step_loop)(cur, n_exp, shift, next, &acc, &best, prev, n_prev, factor, \
                                  prev_out, fill, ahead, ahead_out, full, j1, tab, PREV,      \
                                  KIND, 0);                                                   \
    } while (0)
#define MT_STEP_KIND(PREV)                    \
    do {                                      \
        if (kind == 0) MT_STEP(PREV, 0);      \
        else if (kind == 1) MT_STEP(PREV, 1); \
        else if (kind == 2) MT_STEP(PREV, 2); \
        else MT_STEP(PREV, 3);                \
    } while (0)
    if (prev && prev_out) MT_STEP_KIND(2);
    else if (prev) MT_STEP_KIND(1);
    else MT_STEP_KIND(0);
#undef MT_STEP_KIND
#undef MT_STEP
    if (next) *next_max = SR_(reduce_max)(best);
    return SR_TOTAL(acc);
}

#undef SR_NAME
