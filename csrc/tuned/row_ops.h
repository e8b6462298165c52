/* tuned/row_ops.h — the vectorized loops over one row that the tuned softmax, log-softmax,
 * cross-entropy and layer-norm bodies share.
 *
 * Included by each tuned body once per ISA level and element type (T, SFX, ISA and V defined:
 * see each_isa.h), after fast_exp.h. `#pragma omp simd` lets GCC vectorize the reductions
 * (max, sum) without -ffast-math; the sums run on GCC vector types with several accumulators.
 */
#ifndef MT_ROW_OPS_ONCE
#define MT_ROW_OPS_ONCE
#include <string.h>
#ifdef MT_X86
#include <immintrin.h> /* (SSE2's streaming stores and sfence: baseline x86-64, every level) */
#endif

/* Row sums use GCC vector types of this many bytes (one AVX2 register; the portable level
 * lowers them to SSE pairs). MT_VLOAD is an unaligned load into one. */
#define MT_VEC_BYTES 32
#define MT_VLOAD(v, p) __builtin_memcpy(&(v), (p), sizeof(v))

/* Partial sums are in T within blocks of this many elements and the block sums are added in
 * double: float32 rows of 10^4-10^5 terms stay at ~1e-7 relative accuracy at the speed of a
 * plain float loop, without -ffast-math. */
#define MT_SUM_BLOCK 1024

/* Row outputs of at least this many bytes are written around the cache (non-temporal stores,
 * stream_store): they would not stay in it anyway, and an ordinary store first reads its line
 * from DRAM, where layer norm's forward stalled at 60% of the copy bandwidth. float64 ones of
 * every row kernel; float32 ones of softmax (forward, masked, backward) and log-softmax
 * (forward; backward where dx, y and dy share a line offset, else from twice this), and of
 * cross-entropy's backward from twice this. (float32 layer norm keeps ordinary stores: it
 * already ran at the copy bandwidth, and streaming made it slower.)
 * A kernel that streams ends each thread's part with _mm_sfence: the stores are weakly
 * ordered. */
#ifndef MT_STREAM_BYTES
#define MT_STREAM_BYTES ((int64_t)16 << 20)
#endif

/* Row `r + 1` of a rows x cols array, for a row kernel to prefetch while it computes row r:
 * a row's first pass reads memory and its later passes run from cache, and one core keeps
 * DRAM busy only with many misses in flight, so the next row is asked for a line at a time
 * during the exp pass. NULL after the last row, and for rows above MT_PREFETCH_ROW_BYTES, two
 * of which would crowd a 512 KiB L2. */
#define MT_PREFETCH_ROW_BYTES 131072
#define MT_NEXT_ROW(base, r, rows, cols)                                                   \
    ((r) + 1 < (rows) && (cols) * (int64_t)sizeof(*(base)) <= MT_PREFETCH_ROW_BYTES        \
         ? (base) + ((r) + 1) * (cols)                                                     \
         : NULL)

/* Row r + 2 of the rows [.., r1) a thread works on, or NULL: what a pipelined row kernel
 * (row_exp_sum_pipelined) prefetches while its loop over row r reads row r + 1. */
#define MT_ROW_AFTER_NEXT(base, r, r1, cols)                                               \
    ((r) + 2 < (r1) && (cols) * (int64_t)sizeof(*(base)) <= MT_PREFETCH_ROW_BYTES          \
         ? (base) + ((r) + 2) * (cols)                                                     \
         : NULL)

/* Whether a pipelined row loop prefetches its rows ahead into L2 rather than L1: where one
 * thread's rows, `bytes` of input and output, stream from beyond L2, so that the prefetched
 * lines stop evicting from L1 the rows the loop works on; rows that stay in L2 are best
 * fetched into L1. */
#define MT_L2_BYTES (1 << 20)
#define MT_AHEAD_TO_L2(bytes) ((bytes) > MT_L2_BYTES)

/* 4K aliasing: a load whose address equals a pending store's in its low 12 bits waits for
 * that store, as if it read the stored bytes. A pass that stores out[j] and then loads in[j']
 * for j' a little above j meets it on every vector when out lies up to MT_ALIAS_WINDOW bytes
 * above in, modulo 4096; streaming stores stay pending longest. */
#define MT_ALIAS_WINDOW 128

/* The levels with a one-loop row_exp_sum_pipelined and row_exp_axpy (fast_exp.h). 2: the
 * one loop only for long rows (MT_PIPELINE_MIN_BYTES) that stream from beyond L2
 * (MT_AHEAD_TO_L2), since elsewhere AVX2's separate passes measured as fast or faster: its
 * vector exp alone fills the 16 ymm registers and the scheduler, and a short row's prefetches
 * ahead come too late. */
#define MT_PIPELINED_avx2 2
#define MT_PIPELINED_avx512 1
#define MT_PIPELINE_MIN_BYTES 2048
/* The levels whose softmax rows are scored in vectors with lane masks for the row's end and
 * the causal limit, and whose backward holds short rows in registers (softmax_rows.h) */
#define MT_LANE_MASKS_avx512 1
/* The level whose masked softmax rows are scored in AVX2 vectors (softmax_rows.h) */
#define MT_AVX2_SCORES_avx2 1
/* The levels whose softmax forward holds short rows in registers whole (fast_exp.h), and the
 * longest such row, in bytes */
#define MT_SHORT_ROWS_avx2 128
#define MT_SHORT_ROWS_avx512 MT_SHORT_SOFTMAX_ROW_BYTES
/* The level whose masked softmax rows of up to MT_SHORT_SOFTMAX_ROW_BYTES are held in registers
 * too (fast_exp.h) */
#define MT_SHORT_MASKED_ROWS_avx512 1

/* Whether a forward pass that loads ins[k][j] (NULL: none) and stores out[j], elements of
 * `size` bytes, has a store just below a later load modulo 4096 (see MT_ALIAS_WINDOW). */
static inline int mt_stores_alias_loads(const void *out, const void *const *ins, int n_ins,
                                        int64_t size) {
    for (int k = 0; k < n_ins; ++k) {
        if (!ins[k]) continue;
        const int64_t d = (int64_t)(((uintptr_t)out - (uintptr_t)ins[k]) % 4096u);
        if (d > 0 && d < MT_ALIAS_WINDOW + size) return 1;
    }
    return 0;
}
#endif

/* max_j x[j] ; -inf for an empty row. The vector max skips NaN: a caller that finds -inf asks
 * row_nan_or_minus_inf whether a NaN hid there. Four strips of the row, each its own vector
 * accumulator: one accumulator waits on the max's latency every vector (2 cycles per 8 doubles
 * on Zen 4), four keep up with the loads. */
MT_INLINE static T V(row_max)(const T *x, int64_t n) {
    const int64_t q = n / 4;
    const T *x1 = x + q, *x2 = x + 2 * q, *x3 = x + 3 * q;
    T m0 = -(T)INFINITY, m1 = -(T)INFINITY, m2 = -(T)INFINITY, m3 = -(T)INFINITY;
#pragma omp simd reduction(max : m0, m1, m2, m3)
    for (int64_t j = 0; j < q; ++j) {
        m0 = x[j] > m0 ? x[j] : m0;
        m1 = x1[j] > m1 ? x1[j] : m1;
        m2 = x2[j] > m2 ? x2[j] : m2;
        m3 = x3[j] > m3 ? x3[j] : m3;
    }
    for (int64_t j = 4 * q; j < n; ++j) m0 = x[j] > m0 ? x[j] : m0;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return m2 > m0 ? m2 : m0;
}

/* max_j x[j]*scale ; -inf for an empty row (NaN skipped, as row_max). For scale > 0 it is
 * max_j x[j] times scale, the same number: rounding is monotonic. */
MT_INLINE static T V(row_max_scaled)(const T *x, int64_t n, T scale) {
    if (scale > 0) return V(row_max)(x, n) * scale;
    T m = -(T)INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; ++j) {
        T v = x[j] * scale;
        m = v > m ? v : m;
    }
    return m;
}

/* NaN if some x[j]*scale is NaN, else -inf: the true max of a row whose row_max_scaled is -inf
 * (a NaN makes its row NaN, as in PyTorch, not an empty row's zeros). Runs on that rare path
 * only. */
static T V(row_nan_or_minus_inf)(const T *x, int64_t n, T scale) {
    for (int64_t j = 0; j < n; ++j)
        if (isnan(x[j] * scale)) return x[j] * scale;
    return -(T)INFINITY;
}

/* Four independent vector accumulators: an add waits 3-4 cycles for the one before it, so a
 * single accumulator (what `omp simd reduction` gives) leaves the adders idle most of the
 * time. */
typedef T V(vec) __attribute__((vector_size(MT_VEC_BYTES)));
#define LANES ((int64_t)(MT_VEC_BYTES / sizeof(T)))

/* The sum of a vector's lanes (by pointer: a vector argument's ABI depends on the level), as
 * a tree: halves added until one lane is left, not a chain of dependent adds, whose latency
 * a short row (an attention head's 32 keys) waited on. */
MT_INLINE static double V(lanes_total)(const V(vec) *v) {
#if defined(MT_X86) && defined(__AVX__)
    /* float32: the same tree in registers (through the array below, the compiler stored the
     * vector and loaded its lanes back one by one, and a short row's chain waited on that) */
    if (sizeof(T) == 4) {
        __m256 w;
        __builtin_memcpy(&w, v, sizeof(w));
        __m128 s = _mm_add_ps(_mm256_castps256_ps128(w), _mm256_extractf128_ps(w, 1));
        s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        return (double)_mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
    }
#endif
    T lanes[LANES];
    __builtin_memcpy(lanes, v, sizeof(*v));
    for (int64_t half = LANES / 2; half > 0; half /= 2)
        for (int64_t l = 0; l < half; ++l) lanes[l] += lanes[l + half];
    return (double)lanes[0];
}

/* *v to p (32-byte aligned) with non-temporal stores (see MT_STREAM_BYTES) */
MT_INLINE static void V(stream_store)(T *p, const V(vec) *v) {
#if defined(MT_X86) && defined(__AVX__)
    /* one 32-byte store, not two halves: half the store-buffer entries, which streaming
     * stores hold longest */
    if (sizeof(T) == 4) {
        __m256 v8;
        __builtin_memcpy(&v8, v, 32);
        _mm256_stream_ps((float *)p, v8);
    } else {
        __m256d v4;
        __builtin_memcpy(&v4, v, 32);
        _mm256_stream_pd((double *)p, v4);
    }
#elif defined(MT_X86)
    if (sizeof(T) == 4) {
        __m128 lo, hi;
        __builtin_memcpy(&lo, v, 16);
        __builtin_memcpy(&hi, (const char *)v + 16, 16);
        _mm_stream_ps((float *)p, lo);
        _mm_stream_ps((float *)p + 4, hi);
    } else {
        __m128d lo, hi;
        __builtin_memcpy(&lo, v, 16);
        __builtin_memcpy(&hi, (const char *)v + 16, 16);
        _mm_stream_pd((double *)p, lo);
        _mm_stream_pd((double *)p + 2, hi);
    }
#else
    __builtin_memcpy(p, v, sizeof(*v));
#endif
}

/* The whole 64-byte lines of p[0, n) (p aligned to its element size), as elements [*from, *to):
 * the part of a row that stream_store writes, the rest going through the cache. A line written
 * partly around the cache and partly through it stalls: float64 layer norm forward on rows 48
 * bytes into a line ran at a quarter to a half of its speed on aligned rows. */
MT_INLINE static void V(whole_lines)(const T *p, int64_t n, int64_t *from, int64_t *to) {
    const int64_t head = (int64_t)((64 - (uintptr_t)p % 64) % 64) / (int64_t)sizeof(T);
    const int64_t tail = (int64_t)((uintptr_t)(p + n) % 64) / (int64_t)sizeof(T);
    *from = head < n ? head : n;
    *to = n - tail > *from ? n - tail : *from;
}

/* Whether the pipelined row loops (fast_exp.h: mt_row_finish's stream_to) store y, rows x cols,
 * around the cache: at the AVX-512 level, from MT_STREAM_BYTES, on rows of whole lines. */
MT_INLINE static int V(streams_rows)(const T *y, int64_t rows, int64_t cols) {
#if MT_CAT(MT_LANE_MASKS, ISA)
    const int64_t row_bytes = cols * (int64_t)sizeof(T);
    return rows * row_bytes >= MT_STREAM_BYTES && row_bytes % 64 == 0 && (uintptr_t)y % 64 == 0;
#else
    (void)y, (void)rows, (void)cols;
    return 0;
#endif
}

/* dst[0, n) = src[0, n), non-temporal on dst's whole lines (dst aligned to its element size) */
MT_INLINE static void V(stream_copy)(const T *src, T *dst, int64_t n) {
    int64_t j = 0, from, to;
    V(whole_lines)(dst, n, &from, &to);
    for (; j < from; ++j) dst[j] = src[j];
    for (; j + LANES <= to; j += LANES) {
        V(vec) v;
        MT_VLOAD(v, src + j);
        V(stream_store)(dst + j, &v);
    }
    for (; j < n; ++j) dst[j] = src[j];
}

/* dst[0 .. n) = value with streaming stores (as stream_copy) */
MT_INLINE static void V(stream_fill)(T *dst, int64_t n, T value) {
    int64_t j = 0, from, to;
    V(whole_lines)(dst, n, &from, &to);
    for (; j < from; ++j) dst[j] = value;
    const V(vec) v = (V(vec)){0} + value;
    for (; j + LANES <= to; j += LANES) V(stream_store)(dst + j, &v);
    for (; j < n; ++j) dst[j] = value;
}

/* sum_j x[j] * y[j], or sum_j x[j] when y is NULL; ahead[0 .. n) (or NULL) is prefetched
 * meanwhile, two lines a step */
MT_INLINE static double V(row_dot_ahead)(const T *x, const T *y, int64_t n, const T *ahead) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        const int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        V(vec) acc[4] = {{0}}, a, b;
        T tail = 0;
        int64_t j = j0;
        for (; j + 4 * LANES <= j1; j += 4 * LANES) {
            if (ahead) { /* (4 * LANES elements are 128 bytes) */
                __builtin_prefetch(ahead + j);
                __builtin_prefetch(ahead + j + 2 * LANES);
            }
            for (int u = 0; u < 4; ++u) {
                MT_VLOAD(a, x + j + u * LANES);
                if (y) {
                    MT_VLOAD(b, y + j + u * LANES);
                    a *= b;
                }
                acc[u] += a;
            }
        }
        for (; j < j1; ++j) tail += y ? x[j] * y[j] : x[j];
        acc[0] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        total += V(lanes_total)(&acc[0]) + (double)tail;
    }
    return total;
}

MT_INLINE static double V(row_dot)(const T *x, const T *y, int64_t n) {
    return V(row_dot_ahead)(x, y, n, NULL);
}

MT_INLINE static double V(row_sum)(const T *x, int64_t n) { return V(row_dot)(x, NULL, n); }

/* out[j] = exp(x[j]*scale - shift); returns the sum. `out` (n elements) may be NULL: the exps
 * then go to a block of scratch on the stack (a caller that overwrites a row of its own
 * afterwards passes that row, so that its lines are fetched for writing now, not in a later
 * pass). `ahead` (n elements, or NULL) is prefetched meanwhile: see MT_NEXT_ROW. */
MT_INLINE static double V(row_exp_sum)(const T *x, T *out, int64_t n, T scale, T shift,
                                       const T *ahead) {
    T buffer[MT_SUM_BLOCK] __attribute__((aligned(64)));
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
        total += V(exp_shifted_sum)(x + j0, out ? out + j0 : buffer, len, scale, shift,
                                    ahead ? ahead + j0 : NULL);
    }
    return total;
}

MT_INLINE static void V(row_scale)(T *y, int64_t n, T factor) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] *= factor;
}

/* Finishes a row: see mt_row_finish (fast_exp.h); nothing where f->y is NULL. */
MT_INLINE static void V(row_finish)(const F(mt_row_finish) *f, int64_t n) {
    T *y = f->y;
    const T *x = f->x;
    if (!y) return;
    T *to = f->stream_to ? f->stream_to : y; /* (a row's last: ordinary stores) */
    if (!x) {
        const T factor = f->factor;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) to[j] = y[j] * factor;
        return;
    }
    const T shift = f->shift, hi = f->hi, lo = f->lo;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) to[j] = ((x[j] - shift) - hi) - lo;
}

/* row_exp_sum(x, out, n, scale, shift) (out may be NULL), and meanwhile
 * *next_max = max(*next_max, row_max(next)) (next: NULL for none) and row_finish(prev) (prev:
 * NULL for none), with `ahead` prefetched (MT_ROW_AFTER_NEXT; into L2 where to_l2:
 * MT_AHEAD_TO_L2), all n long: a row kernel passes
 * the next row's input and the previous row's output, so that one loop does what three passes
 * did (fast_exp.c). The levels without that loop run the three passes. */
MT_INLINE static double V(row_exp_sum_pipelined)(const T *x, T *out, int64_t n, T scale,
                                                 T shift, const T *next, T *next_max,
                                                 const F(mt_row_finish) *prev, const T *ahead,
                                                 T *ahead_out, int to_l2) {
#if MT_CAT(MT_PIPELINED, ISA)
    if (MT_CAT(MT_PIPELINED, ISA) == 1 ||
        (to_l2 && n * (int64_t)sizeof(T) >= MT_PIPELINE_MIN_BYTES)) { /* see MT_PIPELINED_avx2 */
        F(mt_row_finish) block_prev = prev ? *prev : (F(mt_row_finish)){0};
        double total = 0;
        for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) { /* blocks: see MT_SUM_BLOCK */
            int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
            if (prev) {
                block_prev.y = prev->y ? prev->y + j0 : NULL;
                block_prev.x = prev->x ? prev->x + j0 : NULL;
                block_prev.stream_to = prev->stream_to ? prev->stream_to + j0 : NULL;
            }
            total += V(exp_shifted_sum_pipelined)(x + j0, out ? out + j0 : NULL, len, scale, shift,
                                                  next ? next + j0 : NULL, next_max,
                                                  prev ? &block_prev : NULL,
                                                  ahead ? ahead + j0 : NULL,
                                                  ahead_out ? ahead_out + j0 : NULL, to_l2);
        }
        return total;
    }
#endif
    /* (the exp pass prefetches the next row, which the max then reads from cache) */
    (void)ahead, (void)ahead_out, (void)to_l2;
    const double total = V(row_exp_sum)(x, out, n, scale, shift, next);
    if (next) {
        T m = V(row_max)(next, n);
        *next_max = m > *next_max ? m : *next_max;
    }
    if (prev) V(row_finish)(prev, n);
    return total;
}

/* out[j] = add[j] + mul * exp(x[j] - hi - lo), or add_const + ... where add is NULL; ahead
 * (n elements, or NULL) prefetched meanwhile. One loop at the levels that have it (fast_exp.h),
 * else the exps then a second pass. */
MT_INLINE static void V(row_exp_axpy)(const T *x, T *out, int64_t n, T hi, T lo, T mul,
                                      const T *add, T add_const, const T *ahead) {
#if MT_CAT(MT_PIPELINED, ISA)
    V(exp_axpy)(x, out, n, hi, lo, mul, add, add_const, ahead);
#else
    V(exp_shifted)(x, out, n, (T)1, hi, lo, ahead);
    if (add) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) out[j] = add[j] + mul * out[j];
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) out[j] = add_const + mul * out[j];
    }
#endif
}

/* log sum_j exp(x[j] - m) in double for a row whose max m = row_max(x) is known (from the
 * row before's loop): -inf for an empty or all -inf row, and *m becomes NaN where a NaN hid
 * behind a -inf max. The two stay apart: m + log(sum) would lose the log where |m| >> 1, so
 * callers subtract m first. out as in row_exp_sum; meanwhile *next_max = row_max(next) (next:
 * NULL for none), row_finish(prev) (prev: NULL for none) and ahead is prefetched
 * (MT_ROW_AFTER_NEXT); where out and next are given, out's next row (out + n) is prefetched for
 * writing (into L2 where to_l2). */
MT_INLINE static double V(row_log_sum_exp_known_max)(const T *x, T *out, int64_t n, T *m,
                                                     const T *next, T *next_max,
                                                     const F(mt_row_finish) *prev,
                                                     const T *ahead, int to_l2) {
    *next_max = -(T)INFINITY;
    if (*m == -(T)INFINITY) *m = V(row_nan_or_minus_inf)(x, n, (T)1);
    if (*m == -(T)INFINITY) {
        if (next) *next_max = V(row_max)(next, n);
        if (prev) V(row_finish)(prev, n);
        return -INFINITY;
    }
    return log(V(row_exp_sum_pipelined)(x, out, n, (T)1, *m, next, next_max, prev, ahead,
                                        next && out ? out + n : NULL, to_l2));
}

#undef LANES
