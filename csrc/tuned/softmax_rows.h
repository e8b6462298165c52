/* tuned/softmax_rows.h — the tuned softmax's row bodies, forward and backward: shared by
 * tuned/softmax_tuned.c (rows split among threads) and tuned/attention_tuned.c (the rows of
 * one head's scores at a time), so that the fused attention's weights are the softmax
 * kernel's, bit for bit.
 *
 * Included by each tuned body once per ISA level and element type, after row_ops.h. Each row:
 * z = x*scale (+ mask), m = max z, e = exp(z - m), y = e / sum e; y may be x (in place).
 */
#if defined(MT_X86) && !defined(MT_SOFTMAX_MASKED_STEPS)
/* The AVX-512 masked rows' step (softmax_masked_step.h), once per file for both types */
#define MT_SOFTMAX_MASKED_STEPS
#include "exp_avx512.h"
#define SR_SFX f32
#include "softmax_masked_step.h"
#undef SR_SFX
#define SR_SFX f64
#include "softmax_masked_step.h"
#undef SR_SFX
#endif
/* Unmasked row: scale only. `ahead`: the next row of x (MT_NEXT_ROW), or NULL. */
static void V(softmax_row_plain)(const T *x, T *y, int64_t n, T scale,
                                 const T *ahead) {
    T m = V(row_max_scaled)(x, n, scale);
    if (m == -(T)INFINITY) m = V(row_nan_or_minus_inf)(x, n, scale);
    if (m == -(T)INFINITY) { /* every entry -inf: nothing to normalize */
        for (int64_t j = 0; j < n; ++j) y[j] = 0;
        return;
    }
    double s = V(row_exp_sum)(x, y, n, scale, m, ahead);
    V(row_scale)(y, n, (T)(1.0 / s));
}

/* Rows [r0, r1) of an unmasked softmax, in one pass each: a row's exp loop also takes the
 * next row's max and divides the previous row by its sum (row_exp_sum_pipelined). Where
 * `stream` (streams_rows), the exps go to a ring of two rows and the quotients around the cache
 * to y (NULL if no ring could be had: in y). */
static void V(softmax_rows_plain)(const T *x, T *y, int64_t r0, int64_t r1, int64_t n,
                                  T scale, int stream) {
    /* the previous row: its exps, still to be divided by their sum */
    F(mt_row_finish) pending = {0};
    const int to_l2 = MT_AHEAD_TO_L2(2 * (r1 - r0) * n * (int64_t)sizeof(T)); /* x and y */
    T *ring = stream && r0 < r1 ? (T *)mt_scratch_alloc(2 * n * (int64_t)sizeof(T)) : NULL;
    T m = r0 < r1 ? V(row_max_scaled)(x + r0 * n, n, scale) : 0;
    for (int64_t r = r0; r < r1; ++r) {
        const T *xr = x + r * n;
        T *yr = y + r * n, *exps = ring ? ring + r % 2 * n : yr;
        const T *next = r + 1 < r1 ? xr + n : NULL;
        if (m == -(T)INFINITY) m = V(row_nan_or_minus_inf)(xr, n, scale);
        if (m == -(T)INFINITY) { /* every entry -inf: nothing to normalize */
            for (int64_t j = 0; j < n; ++j) yr[j] = 0;
            V(row_finish)(&pending, n);
            pending.y = NULL;
            if (next) m = V(row_max_scaled)(next, n, scale);
            continue;
        }
        /* the loop's max is max(x): row_max_scaled multiplies it by scale only where > 0 */
        const int max_in_loop = next && scale > 0;
        T next_max = -(T)INFINITY;
        double s = V(row_exp_sum_pipelined)(xr, exps, n, scale, m, max_in_loop ? next : NULL,
                                            &next_max, &pending, MT_ROW_AFTER_NEXT(x, r, r1, n),
                                            next && !ring ? yr + n : NULL, to_l2);
        pending.y = exps;
        pending.factor = (T)(1.0 / s);
        pending.stream_to = ring ? yr : NULL;
        if (next) m = max_in_loop ? next_max * scale : V(row_max_scaled)(next, n, scale);
    }
    V(row_finish)(&pending, n);
#ifdef MT_X86
    if (ring) _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
    free(ring);
}

/* y[j] = x[j]*scale + add (add: madd[j] where madd is not NULL), or -inf where j >= live or
 * mbool[j] (mbool not NULL), for j < width; returns max_j y[j], NaN skipped. */
#if MT_CAT(MT_LANE_MASKS, ISA)
/* AVX-512: whole vectors, the row's end and the causal limit as lane masks. GCC's loops left
 * the last (up to 63) columns of a row scalar, a serial max chain, and a causal row ends in a
 * different column every row. */
MT_INLINE static T V(masked_scores)(const T *x, T *y, int64_t width, int64_t live, T scale,
                                   T add, const T *madd, const uint8_t *mbool) {
    const int64_t lanes = 64 / (int64_t)sizeof(T);
    const uint32_t all = (1u << lanes) - 1;
#define MT_LANES_BELOW(count) ((count) >= lanes ? all : (count) <= 0 ? 0u : (1u << (count)) - 1)
/* the loop for one element type: VEC its __m512 type, MASK its __mmask, S ps or pd */
#define MT_MASKED_SCORES(E, VEC, MASK, S)                                                     \
    const VEC vscale = _mm512_set1_##S((E)scale), vadd = _mm512_set1_##S((E)add);              \
    const VEC ninf = _mm512_set1_##S(-INFINITY);                                              \
    VEC best = ninf;                                                                          \
    for (int64_t j = 0; j < width; j += lanes) {                                              \
        const MASK in_row = (MASK)MT_LANES_BELOW(width - j);                                  \
        MASK excluded = (MASK)~MT_LANES_BELOW(live - j);                                      \
        const VEC addend = madd ? _mm512_maskz_loadu_##S(in_row, (const E *)madd + j) : vadd; \
        VEC z = _mm512_fmadd_##S(_mm512_maskz_loadu_##S(in_row, (const E *)x + j), vscale,    \
                                 addend);                                                     \
        if (mbool) {                                                                          \
            const __m128i bytes = _mm_maskz_loadu_epi8(in_row, mbool + j);                    \
            excluded |= (MASK)_mm_test_epi8_mask(bytes, bytes);                               \
        }                                                                                     \
        z = _mm512_mask_mov_##S(z, excluded, ninf);                                           \
        _mm512_mask_storeu_##S((E *)y + j, in_row, z);                                        \
        best = _mm512_mask_max_##S(best, in_row, z, best); /* NaN z: best kept */             \
    }                                                                                         \
    return (T)_mm512_reduce_max_##S(best);
    if (sizeof(T) == 4) {
        MT_MASKED_SCORES(float, __m512, __mmask16, ps)
    } else {
        MT_MASKED_SCORES(double, __m512d, __mmask8, pd)
    }
#undef MT_MASKED_SCORES
#undef MT_LANES_BELOW
}
#elif MT_CAT(MT_AVX2_SCORES, ISA)
/* AVX2: whole vectors, the live limit and the bool mask as blend masks, the row's last partial
 * vector scalar. GCC 12 left the bool-mask loop scalar, with a branch per column. */
MT_INLINE static T V(masked_scores)(const T *x, T *y, int64_t width, int64_t live, T scale,
                                   T add, const T *madd, const uint8_t *mbool) {
/* the loop for one element type: VEC its __m256 type, S ps or pd, LANES its lane count;
 * EXCLUDED_AT(d) the lanes >= d (d in [0, LANES]), BOOL_SET(p) the lanes whose byte p[l] != 0 */
#define MT_MASKED_SCORES_AVX2(E, VEC, S, LANES, EXCLUDED_AT, BOOL_SET)                        \
    const VEC vscale = _mm256_set1_##S((E)scale), vadd = _mm256_set1_##S((E)add);           \
    const VEC ninf = _mm256_set1_##S(-INFINITY);                                            \
    VEC best = ninf;                                                                        \
    int64_t j = 0;                                                                          \
    for (; j + (LANES) <= width; j += (LANES)) {                                            \
        int64_t d = live - j;                                                               \
        d = d < 0 ? 0 : d > (LANES) ? (LANES) : d;                                          \
        VEC excluded = EXCLUDED_AT(d);                                                      \
        if (mbool) excluded = _mm256_or_##S(excluded, BOOL_SET(mbool + j));                 \
        const VEC addend = madd ? _mm256_loadu_##S((const E *)madd + j) : vadd;             \
        VEC z = _mm256_fmadd_##S(_mm256_loadu_##S((const E *)x + j), vscale, addend);       \
        z = _mm256_blendv_##S(z, ninf, excluded);                                           \
        _mm256_storeu_##S((E *)y + j, z);                                                   \
        best = _mm256_max_##S(z, best); /* NaN z: best kept */                              \
    }                                                                                       \
    E lanes[LANES], m = -(E)INFINITY;                                                       \
    _mm256_storeu_##S(lanes, best);                                                         \
    for (int l = 0; l < (LANES); ++l) m = lanes[l] > m ? lanes[l] : m;                      \
    for (; j < width; ++j) {                                                                \
        const int out = j >= live || (mbool && mbool[j]);                                   \
        const E z = out ? -(E)INFINITY : (E)x[j] * (E)scale + (madd ? (E)madd[j] : (E)add);  \
        y[j] = z;                                                                           \
        m = z > m ? z : m;                                                                  \
    }                                                                                       \
    return (T)m;
#define MT_EXCLUDED_AT_F32(d)                                                                  \
    _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),          \
                                           _mm256_set1_epi32((int)(d) - 1)))
#define MT_BOOL_SET_F32(p)                                                                     \
    _mm256_castsi256_ps(_mm256_cmpgt_epi32(                                                    \
        _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p))), _mm256_setzero_si256()))
#define MT_EXCLUDED_AT_F64(d)                                                                  \
    _mm256_castsi256_pd(_mm256_cmpgt_epi64(_mm256_setr_epi64x(0, 1, 2, 3),                     \
                                           _mm256_set1_epi64x((d) - 1)))
#define MT_BOOL_SET_F64(p)                                                                     \
    _mm256_castsi256_pd(_mm256_cmpgt_epi64(                                                    \
        _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(({                                              \
            int four_;                                                                         \
            __builtin_memcpy(&four_, (p), 4);                                                  \
            four_;                                                                             \
        }))),                                                                                  \
        _mm256_setzero_si256()))
    if (sizeof(T) == 4) {
        MT_MASKED_SCORES_AVX2(float, __m256, ps, 8, MT_EXCLUDED_AT_F32, MT_BOOL_SET_F32)
    } else {
        MT_MASKED_SCORES_AVX2(double, __m256d, pd, 4, MT_EXCLUDED_AT_F64, MT_BOOL_SET_F64)
    }
#undef MT_MASKED_SCORES_AVX2
#undef MT_EXCLUDED_AT_F32
#undef MT_BOOL_SET_F32
#undef MT_EXCLUDED_AT_F64
#undef MT_BOOL_SET_F64
}
#else
MT_INLINE static T V(masked_scores)(const T *x, T *y, int64_t width, int64_t live, T scale,
                                   T add, const T *madd, const uint8_t *mbool) {
    T m = -(T)INFINITY;
    if (madd) {
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < live; ++j) {
            T z = x[j] * scale + madd[j];
            y[j] = z;
            m = z > m ? z : m;
        }
    } else if (mbool) {
        /* (GCC 12 vectorizes this select, with the max, at every level) */
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < live; ++j) {
            T z = mbool[j] ? -(T)INFINITY : x[j] * scale;
            y[j] = z;
            m = z > m ? z : m;
        }
    } else {
#pragma omp simd reduction(max : m)
        for (int64_t j = 0; j < live; ++j) {
            T z = x[j] * scale + add;
            y[j] = z;
            m = z > m ? z : m;
        }
    }
    for (int64_t j = live; j < width; ++j) y[j] = -(T)INFINITY;
    return m;
}
#endif

/* A masked row's scoring (mt_masked_row): the first `live` columns take part (causal limit),
 * beyond are excluded. madd / mbool point at this row's mask (stride mstride = 0 or 1); at most
 * one is non-NULL. A broadcast (stride-0) mask is one value for the whole row. The row is
 * scored up to the end of live's last vector: those past live are -inf, their exps 0. */
static F(mt_masked_row) V(masked_row)(const T *x, T *y, int64_t n, T scale, const T *madd,
                                      const uint8_t *mbool, int64_t mstride, int64_t live) {
    const T add = madd && mstride == 0 ? madd[0] : 0;
    if (mbool && mstride == 0 && mbool[0]) live = 0;
    const int64_t lanes = (int64_t)(MT_VEC_BYTES / sizeof(T));
    int64_t width = (live + lanes - 1) / lanes * lanes;
    if (width > n) width = n;
    return (F(mt_masked_row)){x, y, width, live, scale, add, mstride == 1 ? madd : NULL,
                              mstride == 1 ? mbool : NULL};
}

/* The columns [width, n) of a masked row whose exps summed to s: zeros, or NaN where s is
 * (a NaN or +inf score makes the whole row NaN, as the reference level's and PyTorch's). */
static void V(row_tail)(T *y, int64_t width, int64_t n, double s) {
    if (s != s) {
        for (int64_t j = width; j < n; ++j) y[j] = (T)NAN;
        return;
    }
#if MT_CAT(MT_LANE_MASKS, ISA)
    /* (vector stores: memset's call and size dispatch cost a causal row 4% of its time) */
    int64_t j = width;
    for (; j + (int64_t)(64 / sizeof(T)) <= n; j += (int64_t)(64 / sizeof(T)))
        _mm512_storeu_si512((void *)(y + j), _mm512_setzero_si512());
    for (; j < n; ++j) y[j] = 0;
#else
    /* (memset: GCC left this loop scalar) */
    if (width < n) memset(y + width, 0, (size_t)(n - width) * sizeof(T));
#endif
}

/* Masked row (see masked_row). ahead: the next row of x (MT_NEXT_ROW), or NULL. */
static void V(softmax_row_masked)(const T *x, T *y, int64_t n, T scale,
                                  const T *madd, const uint8_t *mbool,
                                  int64_t mstride, int64_t live,
                                  const T *ahead) {
    const F(mt_masked_row) row = V(masked_row)(x, y, n, scale, madd, mbool, mstride, live);
    int64_t width = row.width;
    T m = V(masked_scores)(x, y, width, row.live, scale, row.add, row.madd, row.mbool);
    if (m == -(T)INFINITY) m = V(row_nan_or_minus_inf)(y, width, (T)1);
    if (m == -(T)INFINITY) width = 0; /* fully masked: all zeros, never 0/0 */
    double s = 0;
    if (width > 0) {
        /* (prefetches the next row's first `width` elements: the causal next row needs one
         * more, which the hardware prefetcher adds) */
        s = V(row_exp_sum)(y, y, width, (T)1, m, ahead);
        V(row_scale)(y, width, (T)(1.0 / s));
    }
    V(row_tail)(y, width, n, s);
}

/* Rows up to this long have their next row prefetched whole before their own work (64 lines
 * of x and of y at most) */
#define MT_SHORT_ROW_BYTES 4096

#if MT_CAT(MT_SHORT_MASKED_ROWS, ISA)
/* Short rows taken together by softmax_short_masked_rows (fast_exp.h) */
#define MT_MASKED_ROWS_TOGETHER 16

/* Rows first .. first+count-1 with contiguous mask rows, in registers (fast_exp.h); a row whose
 * max is -inf through the row body. madd / mbool: one of them is NULL. */
static void V(softmax_masked_short_rows)(const T *x, T *y, int64_t first, int64_t count,
                                         int64_t cols, T scale, const int64_t *live,
                                         const T *const *madd, const uint8_t *const *mbool) {
    int64_t g = 0;
    while (g < count) {
        g += V(softmax_short_masked_rows)(x, y, first + g, count - g, cols, scale, live + g,
                                          madd ? madd + g : NULL, mbool ? mbool + g : NULL);
        if (g < count) {
            V(softmax_row_masked)(x + (first + g) * cols, y + (first + g) * cols, cols, scale,
                                  madd ? madd[g] : NULL, mbool ? mbool[g] : NULL, 1, live[g],
                                  NULL);
            ++g;
        }
    }
}
#endif

/* The causal limit and mask row of consecutive rows, counted along rather than divided out
 * per row: mt_mask_row_offset's divisions cost as much as the exps of a short attention row. */
typedef struct {
    const T *mask_add;
    const uint8_t *mask_bool;
    int64_t mask_ndim;
    const int64_t *row_shape, *mask_row_strides;
    int64_t causal_lq, cols;
    /* offset(r) = offset(r - inner_index) + inner_index * stride of the mask's last row dim */
    int64_t inner, inner_stride, inner_index, base, query;
    /* A bool mask row shared by consecutive rows (stride 0 along the last row dim, 1 along
     * the columns: a key padding mask): the columns up to its last one not excluded, found
     * once per row of the mask (`scanned`: its offset, -1 before the first) */
    int clip;
    int64_t scanned, mask_live;
} V(row_cursor);

static V(row_cursor) V(row_cursor_from)(int64_t r0, int64_t cols, const T *mask_add,
                                        const uint8_t *mask_bool, int64_t mask_ndim,
                                        const int64_t *row_shape,
                                        const int64_t *mask_row_strides,
                                        int64_t mask_col_stride, int64_t causal_lq) {
    const int has_mask = mask_add != NULL || mask_bool != NULL;
    const int64_t inner_stride = has_mask && mask_ndim > 0 ? mask_row_strides[mask_ndim - 1] : 0;
    return (V(row_cursor)){mask_add, mask_bool, mask_ndim, row_shape, mask_row_strides,
                           causal_lq, cols,
                           has_mask && mask_ndim > 0 ? row_shape[mask_ndim - 1] : 1,
                           inner_stride, -1, 0, causal_lq > 0 ? r0 % causal_lq : 0,
                           mask_bool && inner_stride == 0 && mask_col_stride == 1, -1, cols};
}

/* 1 + the last column of a bool mask row (stride 1) not excluded, 0 if none: past it a row's
 * exps are all 0, whatever x holds there, so a padded row is exponentiated only up to there.
 * (Not a float mask's -inf: x = inf or NaN under it makes the row NaN.) */
static int64_t V(mask_row_live)(const uint8_t *mbool, int64_t cols) {
    int64_t live = cols;
    while (live > 0 && mbool[live - 1]) --live;
    return live;
}

/* Row r's live columns and mask row (madd or mbool, the other NULL); r is the row after the
 * one asked before (r0 first). Inlined: a call per row cost a causal 1 KiB row 6% of its time. */
MT_INLINE static void V(row_cursor_next)(V(row_cursor) *c, int64_t r, int64_t *live,
                                         const T **madd, const uint8_t **mbool) {
    *live = c->cols;
    if (c->causal_lq > 0) {
        *live = c->query + 1 < c->cols ? c->query + 1 : c->cols;
        if (++c->query == c->causal_lq) c->query = 0;
    }
    *madd = NULL;
    *mbool = NULL;
    if (c->mask_add || c->mask_bool) {
        if (c->inner_index < 0 || ++c->inner_index == c->inner) {
            c->inner_index = r % c->inner;
            c->base = mt_mask_row_offset(r - c->inner_index, c->mask_ndim, c->row_shape,
                                         c->mask_row_strides);
        }
        const int64_t off = c->base + c->inner_index * c->inner_stride;
        if (c->mask_add) *madd = c->mask_add + off;
        else *mbool = c->mask_bool + off;
        if (c->clip) {
            if (off != c->scanned) {
                c->mask_live = V(mask_row_live)(*mbool, c->cols);
                c->scanned = off;
            }
            if (c->mask_live < *live) *live = c->mask_live;
        }
    }
}

#if MT_CAT(MT_LANE_MASKS, ISA)
/* A ring row (below) streamed to y: its first `width` values, then row_tail's zeros (or NaN,
 * where its exps summed to NaN) written straight to y, not first into the ring and copied. */
MT_INLINE static void V(stream_row_out)(const T *ring_row, T *y_row, int64_t width,
                                        int64_t cols, double sum) {
    V(stream_copy)(ring_row, y_row, width);
    V(stream_fill)(y_row + width, cols - width, sum != sum ? (T)NAN : (T)0);
}

/* Rows [r0, r1) of a masked softmax as a pipeline: each step is one loop (fast_exp.h:
 * softmax_masked_step) that exponentiates row r's scores, scores row r + 1 and divides row
 * r - 1 by its sum, each up to its own width. A row whose max is -inf is zeros (all excluded)
 * or NaN (a NaN behind it), as softmax_row_masked's. The rows are worked in y itself, or, with
 * a ring (3 rows of scratch), in the ring, each row streamed to y once done: y's lines are then
 * written without first being read (MT_STREAM_BYTES). in_loop (y's rows whole lines:
 * streams_rows): streamed as the next row's loop divides it instead (a line shared by two rows
 * must not take both kinds of store). */
static void V(softmax_masked_rows_pipelined)(const T *x, T *y, int64_t r0, int64_t r1,
                                             int64_t cols, T scale, V(row_cursor) *cursor,
                                             int64_t mask_col_stride, T *ring, int in_loop) {
#define MT_WORK_ROW(r) (ring ? ring + (r) % 3 * cols : y + (r) * cols)
    int64_t live;
    const T *madd;
    const uint8_t *mbool;
    V(row_cursor_next)(cursor, r0, &live, &madd, &mbool);
    F(mt_masked_row) row = V(masked_row)(x + r0 * cols, MT_WORK_ROW(r0), cols, scale, madd,
                                         mbool, mask_col_stride, live);
    T m = V(masked_scores)(row.x, row.y, row.width, row.live, scale, row.add, row.madd,
                           row.mbool);
    /* how far ahead rows are prefetched: 2 rows, or 6 KiB of shorter ones (3 KiB left DRAM idle
     * at times; much more, with two lines of y asked for a line of x, would crowd L1) */
    const int64_t row_bytes = cols * (int64_t)sizeof(T);
    const int64_t ahead_rows = 6144 / row_bytes > 2 ? 6144 / row_bytes : 2;
    T *prev = NULL; /* the row before, still to be divided by its sum */
    int64_t prev_width = 0;
    T prev_factor = 0;
    double prev_sum = 0;
    for (int64_t r = r0; r < r1; ++r) {
        T *yr = MT_WORK_ROW(r);
        int64_t width = row.width;
        if (m == -(T)INFINITY) m = V(row_nan_or_minus_inf)(yr, width, (T)1);
        if (m == -(T)INFINITY) width = 0; /* fully masked: all zeros, never 0/0 */
        F(mt_masked_row) next = {0};
        if (r + 1 < r1) {
            V(row_cursor_next)(cursor, r + 1, &live, &madd, &mbool);
            next = V(masked_row)(x + (r + 1) * cols, MT_WORK_ROW(r + 1), cols, scale, madd,
                                 mbool, mask_col_stride, live);
        }
        const int has_next = r + 1 < r1;
        T next_max = -(T)INFINITY;
        double s = 0;
        int64_t end = width > next.width ? width : next.width;
        if (prev && prev_width > end) end = prev_width;
        const T *ahead = r + ahead_rows < r1 ? x + (r + ahead_rows) * cols : NULL;
        T *ahead_out = !ring && r + ahead_rows < r1 ? y + (r + ahead_rows) * cols : NULL;
        T *prev_out = in_loop && prev ? y + (r - 1) * cols : NULL;
        const T prev_fill = prev_sum != prev_sum ? (T)NAN : (T)0;
        for (int64_t j0 = 0; j0 < end; j0 += MT_SUM_BLOCK) { /* see MT_SUM_BLOCK */
            const int64_t j1 = j0 + MT_SUM_BLOCK < end ? j0 + MT_SUM_BLOCK : end;
            /* (a block past this row's width adds an exact 0) */
            s += V(softmax_masked_step)(yr, width, m, has_next ? &next : NULL, &next_max, prev,
                                        prev_width, prev_factor, prev_out, prev_fill, ahead,
                                        ahead_out, j0, j1);
        }
        /* what the loop's prefetches (one line of x, two of y a 64-byte vector) did not reach:
         * the rest of that row's y, whose zeros are written without a read (row_tail), each a
         * miss otherwise, and the two lines of x past `end` that its causal limit may add.
         * (x beyond them is never read: from DRAM, fetching it cost more than the misses.) */
        const int64_t line = 64 / (int64_t)sizeof(T), end_line = (end + line - 1) / line * line;
        if (ahead_out)
            for (int64_t j = 2 * end_line; j < cols; j += line)
                __builtin_prefetch(ahead_out + j, 1, 3);
        if (ahead)
            for (int64_t j = end_line; j < cols && j < end_line + 2 * line; j += line)
                __builtin_prefetch(ahead + j, 0, 3);
        if (prev_out) { /* its lines after the one its width ends in */
            const int64_t done = (prev_width + line - 1) / line * line;
            if (done < cols) V(stream_fill)(prev_out + done, cols - done, prev_fill);
        } else if (ring && r > r0) { /* (row r - 1 was divided in this step) */
            V(stream_row_out)(MT_WORK_ROW(r - 1), y + (r - 1) * cols, prev_width, cols,
                              prev_sum);
        }
        if (!ring) V(row_tail)(yr, width, cols, s);
        prev = width > 0 ? yr : NULL;
        prev_width = width;
        prev_factor = width > 0 ? (T)(1.0 / s) : 0;
        prev_sum = s;
        m = next_max;
        row = next;
    }
    if (prev) V(row_scale)(prev, prev_width, prev_factor);
    if (ring)
        V(stream_row_out)(MT_WORK_ROW(r1 - 1), y + (r1 - 1) * cols, prev_width, cols, prev_sum);
#undef MT_WORK_ROW
}
#endif

/* Rows [r0, r1) of a masked or causal softmax. */
static void V(softmax_rows_masked)(const T *x, T *y, int64_t rows, int64_t r0, int64_t r1,
                                   int64_t cols, T scale, const T *mask_add,
                                   const uint8_t *mask_bool, int64_t mask_ndim,
                                   const int64_t *row_shape, const int64_t *mask_row_strides,
                                   int64_t mask_col_stride, int64_t causal_lq) {
    V(row_cursor) cursor = V(row_cursor_from)(r0, cols, mask_add, mask_bool, mask_ndim,
                                              row_shape, mask_row_strides, mask_col_stride,
                                              causal_lq);
#if MT_CAT(MT_SHORT_MASKED_ROWS, ISA)
    /* Short rows with a mask row of their own: a row's chain of reductions is most of its
     * time there (32 keys with a padding mask: 3x an unmasked row's), so they go in registers,
     * several side by side. */
    const int has_mask = mask_add != NULL || mask_bool != NULL;
    const int together = has_mask && mask_col_stride == 1 &&
                         cols * (int64_t)sizeof(T) <= MT_SHORT_SOFTMAX_ROW_BYTES;
    int64_t live_of[MT_MASKED_ROWS_TOGETHER], first = r0, count = 0;
    const T *madd_of[MT_MASKED_ROWS_TOGETHER];
    const uint8_t *mbool_of[MT_MASKED_ROWS_TOGETHER];
    if (together) {
        for (int64_t r = r0; r < r1; ++r) {
            if (count == 0) first = r;
            V(row_cursor_next)(&cursor, r, &live_of[count], &madd_of[count], &mbool_of[count]);
            if (++count == MT_MASKED_ROWS_TOGETHER || r + 1 == r1) {
                V(softmax_masked_short_rows)(x, y, first, count, cols, scale, live_of,
                                             mask_add ? madd_of : NULL,
                                             mask_add ? NULL : mbool_of);
                count = 0;
            }
        }
        return;
    }
#endif
#if MT_CAT(MT_LANE_MASKS, ISA)
    if (cols * (int64_t)sizeof(T) <= MT_PREFETCH_ROW_BYTES) {
        if (r0 == r1) return;
        /* outputs of MT_STREAM_BYTES or more go through a ring (NULL if none could be had: in
         * place) */
        const int streaming = rows * cols * (int64_t)sizeof(T) >= MT_STREAM_BYTES &&
                              (uintptr_t)y % sizeof(T) == 0;
        T *ring = streaming ? (T *)mt_scratch_alloc(3 * cols * (int64_t)sizeof(T)) : NULL;
        V(softmax_masked_rows_pipelined)(x, y, r0, r1, cols, scale, &cursor, mask_col_stride,
                                         ring, ring && V(streams_rows)(y, rows, cols));
#ifdef MT_X86
        if (ring) _mm_sfence(); /* this thread's streaming stores done before the region ends */
#endif
        free(ring);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; ++r) {
        int64_t live;
        const T *madd;
        const uint8_t *mbool;
        V(row_cursor_next)(&cursor, r, &live, &madd, &mbool);
        if (r + 1 < r1 && cols * (int64_t)sizeof(T) <= MT_SHORT_ROW_BYTES) {
            /* the next row's x, and its y for writing: all of them, at once (a causal row's
             * exp pass prefetches only its `live` part, and the zeros after it are written
             * without a read) */
            for (int64_t j = 0; j < cols; j += 64 / (int64_t)sizeof(T)) {
                __builtin_prefetch(x + (r + 1) * cols + j, 0, 3);
                __builtin_prefetch(y + (r + 1) * cols + j, 1, 3);
            }
        }
        V(softmax_row_masked)(x + r * cols, y + r * cols, cols, scale, madd, mbool,
                              mask_col_stride, live, MT_NEXT_ROW(x, r, rows, cols));
    }
}

/* softmax_rows by the row bodies above */
static void V(softmax_rows_general)(const T *x, T *y, int64_t rows, int64_t r0, int64_t r1,
                                    int64_t cols, T scale, const T *mask_add,
                                    const uint8_t *mask_bool, int64_t mask_ndim,
                                    const int64_t *row_shape, const int64_t *mask_row_strides,
                                    int64_t mask_col_stride, int64_t causal_lq) {
    if (mask_add || mask_bool || causal_lq > 0)
        V(softmax_rows_masked)(x, y, rows, r0, r1, cols, scale, mask_add, mask_bool, mask_ndim,
                               row_shape, mask_row_strides, mask_col_stride, causal_lq);
    else if (cols * (int64_t)sizeof(T) > MT_PREFETCH_ROW_BYTES)
        /* rows too long for the pipeline (the previous row would be scaled from L3) */
        for (int64_t r = r0; r < r1; ++r)
            V(softmax_row_plain)(x + r * cols, y + r * cols, cols, scale,
                                 MT_NEXT_ROW(x, r, rows, cols));
    else
        V(softmax_rows_plain)(x, y, r0, r1, cols, scale, V(streams_rows)(y, rows, cols));
}

/* Rows [r0, r1) of a softmax on the calling thread (x and y: the whole rows x cols array; y
 * may be x, in place), as tuned_softmax_forward splits rows among its threads and as the fused
 * attention runs them on the scores of one head. Unmasked short rows (an attention head's
 * keys) are held in registers whole at the AVX2 and AVX-512 levels (MT_SHORT_ROWS); a row there
 * whose max is -inf, and every other row, take the row bodies above. */
static void V(softmax_rows)(const T *x, T *y, int64_t rows, int64_t r0, int64_t r1,
                            int64_t cols, T scale, const T *mask_add, const uint8_t *mask_bool,
                            int64_t mask_ndim, const int64_t *row_shape,
                            const int64_t *mask_row_strides, int64_t mask_col_stride,
                            int64_t causal_lq) {
#if MT_CAT(MT_SHORT_ROWS, ISA)
    if (!mask_add && !mask_bool && scale > 0 &&
        cols * (int64_t)sizeof(T) <= MT_CAT(MT_SHORT_ROWS, ISA)) {
        for (int64_t r = V(softmax_short_rows)(x, y, r0, r1, cols, scale, causal_lq); r < r1;
             r = V(softmax_short_rows)(x, y, r + 1, r1, cols, scale, causal_lq))
            V(softmax_rows_general)(x, y, rows, r, r + 1, cols, scale, NULL, NULL, 0, row_shape,
                                    mask_row_strides, 0, causal_lq);
        return;
    }
#endif
    V(softmax_rows_general)(x, y, rows, r0, r1, cols, scale, mask_add, mask_bool, mask_ndim,
                            row_shape, mask_row_strides, mask_col_stride, causal_lq);
}

/* Rows [r0, r1) of the softmax backward, dx = scale * y * (dy - sum(y * dy)), on a rows x n
 * array (dx may be dy) */
static void V(softmax_backward_rows)(const T *y, const T *dy, T *dx, int64_t r0, int64_t r1,
                                     int64_t n, T scale) {
#if MT_CAT(MT_LANE_MASKS, ISA)
    if (n * (int64_t)sizeof(T) <= MT_SHORT_SOFTMAX_ROW_BYTES) {
        V(softmax_backward_short_rows)(y, dy, dx, r0, r1, n, scale);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; ++r) {
        const T *yr = y + r * n, *dyr = dy + r * n;
        T *dxr = dx + r * n;
        T dot = (T)V(row_dot)(dyr, yr, n);
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) dxr[j] = scale * yr[j] * (dyr[j] - dot);
    }
}
