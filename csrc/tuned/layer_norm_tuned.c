/* tuned/layer_norm_tuned.c — layer normalization over the last dim at memory speed.
 *
 * The reference bodies (csrc/layer_norm.c) take the mean, then the variance, then write y: three
 * passes with double accumulators, one element at a time. Here the statistics come from one
 * pass of vector sums around a shift point (layer_norm_row says why that does not cancel),
 * the next row is prefetched while one is normalized, and the backward's dx pass adds each
 * row into the column sums of dweight and dbias as it goes (no pass of its own). Short
 * rows (a small Transformer's d_model) go one per vector lane, a lane's worth of rows taking
 * each step together (layer_norm_lockstep, backward_short_rows), so that the latencies of
 * their sums overlap and one transpose adds up all their lanes.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 *   y = (x - mean) * rstd * w + b,           rstd = 1 / sqrt(var + eps)
 *   xhat = (x - mean) * rstd,  g = dy * w
 *   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
 *   dw = sum_rows dy * xhat,   db = sum_rows dy
 */
#ifndef ISA
#include <math.h>
#include <string.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/layer_norm_tuned.c"
#include "each_isa.h"
#else
#include "row_ops.h"

/* Two sums at once, on the vector type and with the blocking of row_ops.h (four
 * accumulators per quantity, block sums in double). */
#define LN_LANES ((int64_t)(MT_VEC_BYTES / sizeof(T)))

/* a1 += x - c and a2 += (x - c)^2 for the vector at x */
MT_INLINE static void V(centered_step)(const T *x, T c, V(vec) *a1, V(vec) *a2) {
    V(vec) d;
    MT_VLOAD(d, x);
    d -= c;
    *a1 += d;
    *a2 += d * d;
}

/* Sum of (x[j] - c) and of (x[j] - c)^2. */
MT_INLINE static void V(centered_sums)(const T *x, int64_t n, T c, double *sum,
                                       double *sumsq) {
    double s1 = 0, s2 = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        const int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        V(vec) a1[4] = {{0}}, a2[4] = {{0}};
        T t1 = 0, t2 = 0;
        int64_t j = j0;
        for (; j + 4 * LN_LANES <= j1; j += 4 * LN_LANES)
            for (int u = 0; u < 4; ++u) V(centered_step)(x + j + u * LN_LANES, c, &a1[u], &a2[u]);
        for (; j < j1; ++j) {
            T e = x[j] - c;
            t1 += e;
            t2 += e * e;
        }
        a1[0] = (a1[0] + a1[1]) + (a1[2] + a1[3]);
        a2[0] = (a2[0] + a2[1]) + (a2[2] + a2[3]);
        s1 += V(lanes_total)(&a1[0]) + (double)t1;
        s2 += V(lanes_total)(&a2[0]) + (double)t2;
    }
    *sum = s1;
    *sumsq = s2;
}

/* Sum of g[j] and of g[j] * xhat[j], g = dy * w (w = NULL: 1), xhat = (x - mean) * rstd. */
MT_INLINE static void V(grad_sums)(const T *dy, const T *x, const T *w, T mean, T rstd,
                                   int64_t n, double *sum_g, double *sum_gx) {
    double s1 = 0, s2 = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        const int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        V(vec) a1[4] = {{0}}, a2[4] = {{0}}, g, xv, wv;
        T t1 = 0, t2 = 0;
        int64_t j = j0;
        for (; j + 4 * LN_LANES <= j1; j += 4 * LN_LANES)
            for (int u = 0; u < 4; ++u) {
                MT_VLOAD(g, dy + j + u * LN_LANES);
                if (w) {
                    MT_VLOAD(wv, w + j + u * LN_LANES);
                    g *= wv;
                }
                MT_VLOAD(xv, x + j + u * LN_LANES);
                a1[u] += g;
                a2[u] += g * ((xv - mean) * rstd);
            }
        for (; j < j1; ++j) {
            T gj = w ? dy[j] * w[j] : dy[j];
            t1 += gj;
            t2 += gj * ((x[j] - mean) * rstd);
        }
        a1[0] = (a1[0] + a1[1]) + (a1[2] + a1[3]);
        a2[0] = (a2[0] + a2[1]) + (a2[2] + a2[3]);
        s1 += V(lanes_total)(&a1[0]) + (double)t1;
        s2 += V(lanes_total)(&a2[0]) + (double)t2;
    }
    *sum_g = s1;
    *sum_gx = s2;
}

#define LN_SHIFT_SAMPLE 32
/* Elements per block of a streaming row's last pass, before each of which the block of the
 * next row is asked for (layer_norm_backward_row says why) */
#define LN_AHEAD_BLOCK (512 / (int64_t)sizeof(T))

/* Whether a streaming row asks for the next row during its last pass: rows up to 8 KiB; on a
 * 32 KiB L1d (Zen 4) only those over 4 KiB, since shorter ones ran faster without it there (the
 * hardware prefetcher alone kept DRAM busy), unlike on Zen 5's 48 KiB L1d, which the size tells
 * apart. */
static int V(streaming_asks_ahead)(int64_t cols) {
    const int64_t row_bytes = cols * (int64_t)sizeof(T), l1d = mt_l1d_bytes();
    return row_bytes <= 8192 && (row_bytes > 4096 || l1d == 0 || l1d >= 48 * 1024);
}

/* y[j] = ((x[j] - m_hi) - m_lo) * rs * w[j] + b[j] (w, b NULL: 1, 0), with ordinary stores */
MT_INLINE static void V(normalize)(const T *x, const T *w, const T *b, T *y, int64_t n, T m_hi,
                                   T m_lo, T rs) {
    if (w && b) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - m_hi) - m_lo) * rs * w[j] + b[j];
    } else if (w) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - m_hi) - m_lo) * rs * w[j];
    } else if (b) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - m_hi) - m_lo) * rs + b[j];
    } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) y[j] = ((x[j] - m_hi) - m_lo) * rs;
    }
}

/* normalize with y's whole lines stored around the cache (whole_lines); y must
 * be aligned to its element size. */
static void V(normalize_streaming)(const T *x, const T *w, const T *b, T *y, int64_t n,
                                   T m_hi, T m_lo, T rs) {
    int64_t j = 0, from, to;
    V(whole_lines)(y, n, &from, &to);
#define LN_Y(j) (((x[j] - m_hi) - m_lo) * rs * (w ? w[j] : (T)1) + (b ? b[j] : (T)0))
    for (; j < from; ++j) y[j] = LN_Y(j);
    for (; j + LN_LANES <= to; j += LN_LANES) {
        V(vec) v, wv, bv;
        MT_VLOAD(v, x + j);
        v = ((v - m_hi) - m_lo) * rs;
        if (w) {
            MT_VLOAD(wv, w + j);
            v *= wv;
        }
        if (b) {
            MT_VLOAD(bv, b + j);
            v += bv;
        }
        V(stream_store)(y + j, &v);
    }
    for (; j < n; ++j) y[j] = LN_Y(j);
#undef LN_Y
}

/* Elements of a staged chunk: 4 KiB, so that every chunk sits where the first did modulo
 * 4096 against the row's inputs. */
#define LN_STAGE ((int64_t)(4096 / sizeof(T)))

/* For an output row `out` that lies just above an input row modulo 4096 (4K aliasing: see
 * MT_ALIAS_WINDOW in row_ops.h), where the streaming passes ran at a third of their speed
 * (layer norm forward, 8192 x 512 float64, y 64 bytes above x: 5.7 ms, not 2.0): a place for
 * LN_STAGE elements in `buffer` (2 * LN_STAGE elements, 64-byte aligned) clear of the
 * inputs, and the output clear of it, so that a chunk is computed into it in L1 and streamed
 * from there. NULL where no place is clear. */
static T *V(stage_in)(T *buffer, const T *out, const void *const *ins, int n_ins) {
    static const unsigned shifts[] = {2048, 1024, 3072, 1536, 2560, 512, 3584};
    for (size_t k = 0; k < sizeof(shifts) / sizeof(shifts[0]); ++k) {
        T *s = buffer + (int64_t)(((uintptr_t)out + shifts[k] - (uintptr_t)buffer) % 4096u) /
                            (int64_t)sizeof(T);
        const void *const staged[1] = {s};
        if (!mt_stores_alias_loads(s, ins, n_ins, (int64_t)sizeof(T)) &&
            !mt_stores_alias_loads(out, staged, 1, (int64_t)sizeof(T)))
            return s;
    }
    return NULL;
}

/* normalize_streaming through a stage (see stage_in); ordinary stores where none is clear */
static void V(normalize_staged)(const T *x, const T *w, const T *b, T *y, int64_t n, T m_hi,
                                T m_lo, T rs) {
    T buffer[2 * LN_STAGE] __attribute__((aligned(64)));
    const void *const loads[3] = {x, w, b};
    T *stage = V(stage_in)(buffer, y, loads, 3);
    if (!stage) {
        V(normalize)(x, w, b, y, n, m_hi, m_lo, rs);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += LN_STAGE) {
        const int64_t len = n - j0 < LN_STAGE ? n - j0 : LN_STAGE;
        V(normalize)(x + j0, w ? w + j0 : NULL, b ? b + j0 : NULL, stage, len, m_hi, m_lo, rs);
        V(stream_copy)(stage, y + j0, len);
    }
}

/* Statistics of the data shifted by c, in T at full SIMD width with block sums in double:
 * e = x - c, mean = c + mean(e), var = mean(e^2) - mean(e)^2. This cancels only when the shift
 * is far from the mean: the rounding error of var is amplified by mean(e^2) / var =
 * 1 + mean(e)^2 / var. So the mean of the row's first LN_SHIFT_SAMPLE elements is tried as
 * the shift (one pass over the row); if it lies more than one standard deviation from the
 * mean (amplification > 2), a second pass shifts by the mean just found, which is then
 * accurate to a few units in the last place of T, and leaves nothing to cancel: the two-pass
 * algorithm. (The first element alone is more than one deviation off in a third of the rows
 * of normal data, and each such row cost a second pass; a mean of 32 almost never is.)
 * y = ((x - m_hi) - m_lo) * rstd with m_hi = c, m_lo = mean(e) keeps y accurate even when the
 * mean is not representable in T (x ~ 1000 +- 1 in float32).
 * next_x (streaming rows only, else NULL): the next row, asked for a block at a time during
 * the last pass, which runs from cache, so that DRAM is not idle meanwhile (as it was with the
 * whole row asked for before this one's passes); all at once before a staged pass. */
static void V(layer_norm_row)(const T *x, const T *w, const T *b, T *y,
                              int64_t n, double eps, T *mean_out,
                              T *rstd_out, int streaming, const T *next_x) {
    const int64_t sample = n < LN_SHIFT_SAMPLE ? n : LN_SHIFT_SAMPLE;
    T m_hi = (T)(V(row_sum)(x, sample) / (double)sample);
    double sum_e, sum_e2;
    V(centered_sums)(x, n, m_hi, &sum_e, &sum_e2);
    double mean_e = sum_e / (double)n, mean_e2 = sum_e2 / (double)n;
    if (!(mean_e * mean_e <= 0.5 * mean_e2)) { /* (also when NaN/inf: then it stays NaN) */
        m_hi = (T)((double)m_hi + mean_e);
        V(centered_sums)(x, n, m_hi, &sum_e, &sum_e2);
        mean_e = sum_e / (double)n;
        mean_e2 = sum_e2 / (double)n;
    }
    double mean = (double)m_hi + mean_e;
    const T m_lo = (T)mean_e;
    double var = mean_e2 - mean_e * mean_e;
    if (var < 0) var = 0;
    double rstd = 1.0 / sqrt(var + eps);
    *mean_out = (T)mean;
    *rstd_out = (T)rstd;
    const T rs = (T)rstd;
    const void *const row_in[1] = {x}; /* (w and b, read from L1, matter less) */
    if (!streaming)
        V(normalize)(x, w, b, y, n, m_hi, m_lo, rs);
    else if (mt_stores_alias_loads(y, row_in, 1, (int64_t)sizeof(T))) {
        for (int64_t j = 0; next_x && j < n; j += 64 / (int64_t)sizeof(T))
            __builtin_prefetch(next_x + j, 0, 2);
        V(normalize_staged)(x, w, b, y, n, m_hi, m_lo, rs);
    } else if (!next_x)
        V(normalize_streaming)(x, w, b, y, n, m_hi, m_lo, rs);
    else
        for (int64_t j0 = 0; j0 < n; j0 += LN_AHEAD_BLOCK) {
            const int64_t len = n - j0 < LN_AHEAD_BLOCK ? n - j0 : LN_AHEAD_BLOCK;
            for (int64_t j = j0; j < j0 + len; j += 64 / (int64_t)sizeof(T))
                __builtin_prefetch(next_x + j, 0, 3);
            V(normalize_streaming)(x + j0, w ? w + j0 : NULL, b ? b + j0 : NULL, y + j0, len,
                                   m_hi, m_lo, rs);
        }
}

/* Rows up to this long (a small Transformer's d_model of 128 float32) take the lockstep path
 * below, whose passes cost less than the latency of one row's chain of sums. */
#define LN_SHORT_ROW_BYTES 512
/* Rows up to twice that (d_model 256 float32, 128 float64) too, in arrays up to this size: from
 * memory the row path, which asks for a whole row ahead into L2, is the faster. */
#define LN_SHORT_ROW_ARRAY_BYTES ((int64_t)4 << 20)

/* out[r] = the sum of v[r]'s lanes, for LN_LANES vectors at once: a transpose folded into the
 * adds (hadd, then one swap of halves), a few instructions a row where each row's own sum of
 * lanes was a chain of them. Every lane goes through the same tree of adds, so a row's sum does
 * not depend on its place among the others. */
MT_INLINE static void V(lane_sums)(const V(vec) *v, T *out) {
#if defined(MT_X86) && defined(__AVX__)
    if (sizeof(T) == 4) {
        __m256 r[8], h[4];
        for (int64_t i = 0; i < LN_LANES && i < 8; ++i) __builtin_memcpy(&r[i], &v[i], 32);
        for (int i = 0; i < 4; ++i) h[i] = _mm256_hadd_ps(r[2 * i], r[2 * i + 1]);
        const __m256 lo = _mm256_hadd_ps(h[0], h[1]), hi = _mm256_hadd_ps(h[2], h[3]);
        const __m256 s = _mm256_add_ps(_mm256_permute2f128_ps(lo, hi, 0x20),
                                       _mm256_permute2f128_ps(lo, hi, 0x31));
        __builtin_memcpy(out, &s, 32);
    } else {
        __m256d r[4];
        for (int64_t i = 0; i < LN_LANES && i < 4; ++i) __builtin_memcpy(&r[i], &v[i], 32);
        const __m256d lo = _mm256_hadd_pd(r[0], r[1]), hi = _mm256_hadd_pd(r[2], r[3]);
        const __m256d s = _mm256_add_pd(_mm256_permute2f128_pd(lo, hi, 0x20),
                                        _mm256_permute2f128_pd(lo, hi, 0x31));
        __builtin_memcpy(out, &s, 32);
    }
#else
    for (int64_t r = 0; r < LN_LANES; ++r) out[r] = (T)V(lanes_total)(&v[r]);
#endif
}

/* Sum of x[j] - c (c = 0: of x[j]) and, where sumsq, of (x[j] - c)^2, into a vector each: a
 * short row's sums before their lanes are added (lane_sums). The tail past the last full
 * vector goes into lane 0. */
MT_INLINE static void V(short_row_sums)(const T *x, int64_t n, T c, V(vec) *sum,
                                        V(vec) *sumsq) {
    V(vec) a1[2] = {{0}}, a2[2] = {{0}};
    int64_t j = 0;
    for (; j + 2 * LN_LANES <= n; j += 2 * LN_LANES)
        for (int u = 0; u < 2; ++u) V(centered_step)(x + j + u * LN_LANES, c, &a1[u], &a2[u]);
    for (; j + LN_LANES <= n; j += LN_LANES) V(centered_step)(x + j, c, &a1[0], &a2[0]);
    T t1 = 0, t2 = 0;
    for (; j < n; ++j) {
        const T e = x[j] - c;
        t1 += e;
        t2 += e * e;
    }
    a1[0] += a1[1];
    a1[0][0] += t1;
    *sum = a1[0];
    if (sumsq) {
        a2[0] += a2[1];
        a2[0][0] += t2;
        *sumsq = a2[0];
    }
}

/* mean, rstd and y of LN_LANES rows of n (each no longer than 2 * LN_SHORT_ROW_BYTES), rows r0
 * to r1 - 1 of x (fewer than LN_LANES at the end: the last row stands in for the missing ones,
 * and only the real rows are written). A short row's work is one chain: sums, square root, y;
 * one row at a time its latency is exposed (1024 x 128 float32 ran at a quarter of the copy
 * speed), so the rows take each step in lockstep, one per lane: their sums end as one vector
 * (lane_sums), and one square root and one division serve them all. The sums are taken around
 * a shift, the mean of the first LN_SHIFT_SAMPLE elements (a fraction f >= 1/8 of a short row):
 * however the sample sits, the squares' mean is at most 1/f times the variance, so the
 * subtraction loses at most 3 bits (a full pass for the row's own mean cost a fifth of the
 * time). A row's arithmetic is the same wherever it falls. */
MT_INLINE static void V(layer_norm_lockstep)(const T *x, const T *w, const T *b, T *y,
                                             T *mean, T *rstd, int64_t r0, int64_t r1,
                                             int64_t n, double eps) {
    const int64_t sample = n < LN_SHIFT_SAMPLE ? n : LN_SHIFT_SAMPLE;
    const T inv_n = (T)(1.0 / (double)n), inv_sample = (T)(1.0 / (double)sample);
    const T *row[LN_LANES];
    V(vec) s1[LN_LANES], s2[LN_LANES];
    T shift[LN_LANES], mean_e[LN_LANES], mean_e2[LN_LANES], rs[LN_LANES];
    for (int64_t l = 0; l < LN_LANES; ++l) row[l] = x + (r0 + l < r1 ? r0 + l : r1 - 1) * n;
    for (int64_t l = 0; l < LN_LANES; ++l) V(short_row_sums)(row[l], sample, 0, &s1[l], NULL);
    V(lane_sums)(s1, shift);
    for (int64_t l = 0; l < LN_LANES; ++l) shift[l] *= inv_sample;
    for (int64_t l = 0; l < LN_LANES; ++l)
        V(short_row_sums)(row[l], n, shift[l], &s1[l], &s2[l]);
    V(lane_sums)(s1, mean_e);
    V(lane_sums)(s2, mean_e2);
#pragma omp simd
    for (int64_t l = 0; l < LN_LANES; ++l) {
        mean_e[l] *= inv_n;
        T var = mean_e2[l] * inv_n - mean_e[l] * mean_e[l];
        var = var < 0 ? 0 : var; /* (NaN stays NaN) */
        const T v = var + (T)eps;
        rs[l] = (T)1 / (sizeof(T) == 4 ? (T)sqrtf((float)v) : (T)sqrt(v));
    }
    for (int64_t l = 0; l < r1 - r0 && l < LN_LANES; ++l) {
        mean[r0 + l] = shift[l] + mean_e[l];
        rstd[r0 + l] = rs[l];
        V(normalize)(row[l], w, b, y + (r0 + l) * n, n, shift[l], mean_e[l], rs[l]);
    }
}

/* layer_norm_lockstep over rows [r0, r1), LN_LANES at a time */
MT_INLINE static void V(short_rows_of)(const T *x, const T *w, const T *b, T *y, T *mean,
                                       T *rstd, int64_t r0, int64_t r1, int64_t n, double eps) {
    for (int64_t r = r0; r < r1; r += LN_LANES) {
        for (int64_t j = 0; j < LN_LANES * n && r + LN_LANES < r1; j += 64 / (int64_t)sizeof(T))
            __builtin_prefetch(x + (r + LN_LANES) * n + j); /* the next group's rows */
        V(layer_norm_lockstep)(x, w, b, y, mean, rstd, r, r1 - r < LN_LANES ? r1 : r + LN_LANES,
                               n, eps);
    }
}

/* short_rows_of, with its own copy for rows of exactly the two limits (d_model 128 or 256 in
 * float32, 64 or 128 in float64), where the row length is a constant and the passes unroll:
 * about a quarter less time a row than with the length known only at run time. */
static void V(layer_norm_short_rows)(const T *x, const T *w, const T *b, T *y, T *mean,
                                     T *rstd, int64_t r0, int64_t r1, int64_t n, double eps) {
    if (n * (int64_t)sizeof(T) == LN_SHORT_ROW_BYTES)
        V(short_rows_of)(x, w, b, y, mean, rstd, r0, r1, LN_SHORT_ROW_BYTES / sizeof(T), eps);
    else if (n * (int64_t)sizeof(T) == 2 * LN_SHORT_ROW_BYTES)
        V(short_rows_of)(x, w, b, y, mean, rstd, r0, r1, 2 * LN_SHORT_ROW_BYTES / sizeof(T),
                         eps);
    else
        V(short_rows_of)(x, w, b, y, mean, rstd, r0, r1, n, eps);
}

/* Whether rows x cols take the short-row paths (layer_norm_short_rows, backward_short_rows) */
static int V(is_short)(int64_t rows, int64_t cols) {
    const int64_t row_bytes = cols * (int64_t)sizeof(T);
    return row_bytes <= LN_SHORT_ROW_BYTES ||
           (row_bytes <= 2 * LN_SHORT_ROW_BYTES && rows * row_bytes <= LN_SHORT_ROW_ARRAY_BYTES);
}

int V(tuned_layer_norm_forward)(const T *x, const T *weight, const T *bias, T *y, T *mean,
                                T *rstd, int64_t rows, int64_t cols, double eps) {
    int nt = mt_threads_for(rows * cols);
    if (V(is_short)(rows, cols)) {
#pragma omp parallel num_threads(nt)
        {
            const int64_t tid = mt_thread_num(), team = mt_team_size();
            V(layer_norm_short_rows)(x, weight, bias, y, mean, rstd, rows * tid / team,
                                     rows * (tid + 1) / team, cols, eps);
        }
        return 0;
    }
    const int streaming = sizeof(T) == 8 && rows * cols * (int64_t)sizeof(T) >= MT_STREAM_BYTES &&
                          (uintptr_t)y % sizeof(T) == 0;
    const int streaming_asks = streaming && V(streaming_asks_ahead)(cols);
#pragma omp parallel num_threads(nt)
    {
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            /* Ask for the whole next row while this one is worked on: one core keeps DRAM
             * busy only with many misses in flight. Into L2 (locality 2): in L1 it would evict
             * the row whose passes run there. Streaming rows ask during their last pass, where
             * streaming_asks_ahead. */
            const int ahead = r + 1 < rows && cols * (int64_t)sizeof(T) <= 8192;
            if (ahead && !streaming)
                for (int64_t j = 0; j < cols; j += 64 / (int64_t)sizeof(T))
                    __builtin_prefetch(x + (r + 1) * cols + j, 0, 2);
            const int asks = streaming_asks && r + 1 < rows;
            V(layer_norm_row)(x + r * cols, weight, bias, y + r * cols, cols, eps, &mean[r],
                              &rstd[r], streaming, asks ? x + (r + 1) * cols : NULL);
        }
#ifdef MT_X86
        /* streaming stores are weakly ordered: each thread's are done before the region ends */
        if (streaming) _mm_sfence();
#endif
    }
    return 0;
}

/* dx[j] = rstd * (g[j] - a - xhat[j] * c) for one row and, in the same pass over dy and x,
 * its dy * xhat and dy added into the partial column sums dw_acc / db_acc.
 * One row per pass: two rows per pass (which loaded and stored each column sum once for
 * both) put eight or more lines in one 8-way L1 set wherever a row is 4 KiB (float64 x 512,
 * float32 x 1024: dy, x, dx of both rows and the two sums can share an address modulo 4096),
 * so the pass evicted its own lines, and rows that come from DRAM ran at half speed. */
MT_INLINE static void V(dx_pass)(const T *dy, const T *x, const T *w, T mean, T rstd, T a,
                                 T c, T *dx, int64_t n, T *dw_acc, T *db_acc,
                                 const int has_w, const int has_acc) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
        /* Loads first, stores last: a load issued after a store that matches it modulo 4096
         * waits for that store (4K aliasing), and dx may sit there for dw_acc. */
        const T dyj = dy[j], xj = x[j], g = has_w ? dyj * w[j] : dyj;
        const T dw_old = has_acc ? dw_acc[j] : 0, db_old = has_acc ? db_acc[j] : 0;
        const T xhat = (xj - mean) * rstd;
        dx[j] = rstd * (g - a - xhat * c);
        if (has_acc) {
            dw_acc[j] = dw_old + dyj * xhat;
            db_acc[j] = db_old + dyj;
        }
    }
}

/* dx_pass with dx's whole lines written around the cache (MT_STREAM_BYTES, whole_lines); w,
 * dw_acc, db_acc may be NULL; dx aligned to its element size. */
static void V(dx_pass_streaming)(const T *dy, const T *x, const T *w, T mean, T rstd, T a,
                                 T c, T *dx, int64_t n, T *dw_acc, T *db_acc) {
    int64_t j = 0, from, to;
    V(whole_lines)(dx, n, &from, &to);
    /* the line this row's end shares with the next row's start, stored through the cache: asked
     * for now, its read from DRAM no longer holds up the stores at the row's end */
    if (to < n) __builtin_prefetch(dx + n - 1, 1, 3);
#define LN_DX(j)                                                                          \
    do {                                                                                  \
        const T xhat_ = (x[j] - mean) * rstd;                                             \
        dx[j] = rstd * ((w ? dy[j] * w[j] : dy[j]) - a - xhat_ * c);                     \
        if (dw_acc) {                                                                     \
            dw_acc[j] += dy[j] * xhat_;                                                   \
            db_acc[j] += dy[j];                                                           \
        }                                                                                 \
    } while (0)
    for (; j < from; ++j) LN_DX(j);
    for (; j + LN_LANES <= to; j += LN_LANES) {
        V(vec) dyv, xv, g, acc;
        MT_VLOAD(dyv, dy + j);
        MT_VLOAD(xv, x + j);
        g = dyv;
        if (w) {
            V(vec) wv;
            MT_VLOAD(wv, w + j);
            g *= wv;
        }
        const V(vec) xhat = (xv - mean) * rstd;
        const V(vec) dxv = rstd * (g - a - xhat * c);
        if (dw_acc) {
            MT_VLOAD(acc, dw_acc + j);
            acc += dyv * xhat;
            __builtin_memcpy(dw_acc + j, &acc, sizeof(acc));
            MT_VLOAD(acc, db_acc + j);
            acc += dyv;
            __builtin_memcpy(db_acc + j, &acc, sizeof(acc));
        }
        V(stream_store)(dx + j, &dxv);
    }
    for (; j < n; ++j) LN_DX(j);
#undef LN_DX
}

/* dx_pass with constant flags: each call below is inlined into a loop without the tests */
static void V(dx_pass_any)(const T *dy, const T *x, const T *w, T mean, T rstd, T a, T c,
                           T *dx, int64_t n, T *dw_acc, T *db_acc) {
    if (w && dw_acc)
        V(dx_pass)(dy, x, w, mean, rstd, a, c, dx, n, dw_acc, db_acc, 1, 1);
    else if (w)
        V(dx_pass)(dy, x, w, mean, rstd, a, c, dx, n, NULL, NULL, 1, 0);
    else if (dw_acc)
        V(dx_pass)(dy, x, NULL, mean, rstd, a, c, dx, n, dw_acc, db_acc, 0, 1);
    else
        V(dx_pass)(dy, x, NULL, mean, rstd, a, c, dx, n, NULL, NULL, 0, 0);
}

/* dx for one row; adds its dy*xhat and dy into the partial column sums dw_acc / db_acc (T,
 * flushed to double by the caller every few rows), if given. With next_dy and next_x (streaming
 * rows only), the dx pass, which runs from cache, asks for the next row a block at a time:
 * otherwise nothing is read from DRAM while it runs. (Asked for in one burst before the row,
 * or for rows that are not streamed, it was slower.) */
static void V(layer_norm_backward_row)(const T *dy, const T *x, const T *w, T mean, T rstd,
                                       T *dx, int64_t n, T *dw_acc, T *db_acc,
                                       int streaming, const T *next_dy, const T *next_x) {
    double sum_g, sum_gx;
    V(grad_sums)(dy, x, w, mean, rstd, n, &sum_g, &sum_gx);
    const T a = (T)(sum_g / (double)n), c = (T)(sum_gx / (double)n);
    if (!streaming) {
        V(dx_pass_any)(dy, x, w, mean, rstd, a, c, dx, n, dw_acc, db_acc);
        return;
    }
    const int64_t block = next_dy ? LN_AHEAD_BLOCK : n;
    for (int64_t j0 = 0; j0 < n; j0 += block) {
        const int64_t len = n - j0 < block ? n - j0 : block;
        for (int64_t j = j0; next_dy && j < j0 + len; j += 64 / (int64_t)sizeof(T)) {
            __builtin_prefetch(next_dy + j, 0, 3);
            __builtin_prefetch(next_x + j, 0, 3);
        }
        V(dx_pass_streaming)(dy + j0, x + j0, w ? w + j0 : NULL, mean, rstd, a, c, dx + j0, len,
                             dw_acc ? dw_acc + j0 : NULL, db_acc ? db_acc + j0 : NULL);
    }
}

/* Rows are added into T partial sums in groups of this many, then into double: full SIMD
 * speed, and float32 column sums over 10^5 rows still good to ~1e-6. */
#define LN_FLUSH_ROWS 64

/* The column sums of a thread's last rows (T) added into its double ones, and zeroed */
static void V(flush_column_sums)(T *dw_group, T *db_group, double *dw_sum, double *db_sum,
                                 int64_t cols) {
    for (int64_t j = 0; j < cols; ++j) {
        dw_sum[j] += (double)dw_group[j];
        db_sum[j] += (double)db_group[j];
        dw_group[j] = db_group[j] = 0;
    }
}

/* a1 += g and a2 += g * xhat for the vector at j (g = dy * w, w NULL: 1; xhat = (x - mean) *
 * rstd) */
MT_INLINE static void V(grad_step)(const T *dy, const T *x, const T *w, T mean, T rstd,
                                   int64_t j, V(vec) *a1, V(vec) *a2) {
    V(vec) g, xv, wv;
    MT_VLOAD(g, dy + j);
    if (w) {
        MT_VLOAD(wv, w + j);
        g *= wv;
    }
    MT_VLOAD(xv, x + j);
    *a1 += g;
    *a2 += g * ((xv - mean) * rstd);
}

/* Sum of g[j] and of g[j] * xhat[j] into a vector each, the tail past the last full vector in
 * lane 0: grad_sums for a short row. */
MT_INLINE static void V(short_grad_sums)(const T *dy, const T *x, const T *w, T mean, T rstd,
                                         int64_t n, V(vec) *sum_g, V(vec) *sum_gx) {
    V(vec) a1[2] = {{0}}, a2[2] = {{0}};
    int64_t j = 0;
    for (; j + 2 * LN_LANES <= n; j += 2 * LN_LANES)
        for (int u = 0; u < 2; ++u)
            V(grad_step)(dy, x, w, mean, rstd, j + u * LN_LANES, &a1[u], &a2[u]);
    for (; j + LN_LANES <= n; j += LN_LANES)
        V(grad_step)(dy, x, w, mean, rstd, j, &a1[0], &a2[0]);
    T t1 = 0, t2 = 0;
    for (; j < n; ++j) {
        const T gj = w ? dy[j] * w[j] : dy[j];
        t1 += gj;
        t2 += gj * ((x[j] - mean) * rstd);
    }
    a1[0] += a1[1];
    a2[0] += a2[1];
    a1[0][0] += t1;
    a2[0][0] += t2;
    *sum_g = a1[0];
    *sum_gx = a2[0];
}

/* dx of rows [r0, r1) (short ones, whose passes run from L1), LN_LANES at a time in lockstep as in
 * layer_norm_lockstep: each row's two sums end in one vector for all (lane_sums). The rows' dy
 * * xhat and dy go into the column sums dw_group / db_group (when not NULL), flushed into
 * dw_sum / db_sum every LN_FLUSH_ROWS rows from r0 and at r1, as the row path does.
 * Rows up to LN_SHORT_ROW_BYTES long: each row's dx pass, which runs from L1, asks for one row
 * of the next group (dy and x), since in a training step x comes from memory and with nothing
 * asked for ahead the group's sums waited on it. (One burst of asks per group, or asks into
 * L2, were slower; so were any asks for rows twice that long.) */
MT_INLINE static void V(backward_short_rows_of)(const T *dy, const T *x, const T *w,
                                                const T *mean, const T *rstd, T *dx,
                                                int64_t r0, int64_t r1, int64_t n,
                                                T *dw_group, T *db_group, double *dw_sum,
                                                double *db_sum) {
    const T inv_n = (T)(1.0 / (double)n);
    const int ask_ahead = n * (int64_t)sizeof(T) <= LN_SHORT_ROW_BYTES;
    for (int64_t r = r0; r < r1; r += LN_LANES) {
        const int64_t real = r1 - r < LN_LANES ? r1 - r : LN_LANES;
        V(vec) s1[LN_LANES], s2[LN_LANES];
        T a[LN_LANES], c[LN_LANES];
        for (int64_t l = 0; l < LN_LANES; ++l) {
            const int64_t i = r + (l < real ? l : real - 1);
            V(short_grad_sums)(dy + i * n, x + i * n, w, mean[i], rstd[i], n, &s1[l], &s2[l]);
        }
        V(lane_sums)(s1, a);
        V(lane_sums)(s2, c);
        for (int64_t l = 0; l < real; ++l) {
            if (ask_ahead && r + LN_LANES + l < r1) /* the next group's row l: see above */
                for (int64_t j = 0; j < n; j += 64 / (int64_t)sizeof(T)) {
                    __builtin_prefetch(dy + (r + LN_LANES + l) * n + j);
                    __builtin_prefetch(x + (r + LN_LANES + l) * n + j);
                }
            V(dx_pass_any)(dy + (r + l) * n, x + (r + l) * n, w, mean[r + l], rstd[r + l],
                           a[l] * inv_n, c[l] * inv_n, dx + (r + l) * n, n, dw_group, db_group);
        }
        if (dw_group && ((r + real - r0) % LN_FLUSH_ROWS == 0 || r + real == r1))
            V(flush_column_sums)(dw_group, db_group, dw_sum, db_sum, n);
    }
}

/* backward_short_rows_of, with copies for rows of exactly the two limits (as
 * layer_norm_short_rows) */
static void V(backward_short_rows)(const T *dy, const T *x, const T *w, const T *mean,
                                   const T *rstd, T *dx, int64_t r0, int64_t r1, int64_t n,
                                   T *dw_group, T *db_group, double *dw_sum, double *db_sum) {
    if (n * (int64_t)sizeof(T) == LN_SHORT_ROW_BYTES)
        V(backward_short_rows_of)(dy, x, w, mean, rstd, dx, r0, r1,
                                  LN_SHORT_ROW_BYTES / sizeof(T), dw_group, db_group, dw_sum,
                                  db_sum);
    else if (n * (int64_t)sizeof(T) == 2 * LN_SHORT_ROW_BYTES)
        V(backward_short_rows_of)(dy, x, w, mean, rstd, dx, r0, r1,
                                  2 * LN_SHORT_ROW_BYTES / sizeof(T), dw_group, db_group,
                                  dw_sum, db_sum);
    else
        V(backward_short_rows_of)(dy, x, w, mean, rstd, dx, r0, r1, n, dw_group, db_group,
                                  dw_sum, db_sum);
}

int V(tuned_layer_norm_backward)(const T *dy, const T *x, const T *weight, const T *mean,
                                 const T *rstd, T *dx, T *dweight, T *dbias, int64_t rows,
                                 int64_t cols) {
    const int want_params = dweight != NULL || dbias != NULL;
    int nt = mt_threads_for(rows * cols);
    const int streaming = sizeof(T) == 8 && rows * cols * (int64_t)sizeof(T) >= MT_STREAM_BYTES &&
                          (uintptr_t)dx % sizeof(T) == 0;
    const int streaming_asks = streaming && V(streaming_asks_ahead)(cols);
    /* Per thread: double column sums (dw, db) and T group sums (dw, db); reduced below, no
     * atomics, deterministic for a given thread count. Where dx streams, each group sum starts
     * where dx does within a 64-byte line: the dx pass, aligned to dx's lines, read and wrote
     * the sums across two lines a vector otherwise, and ran up to 1.7x slower. */
    const int64_t group_shift =
        streaming ? (int64_t)((uintptr_t)dx % 64) / (int64_t)sizeof(T) : 0;
    const int64_t sums_bytes = (2 * cols * (int64_t)sizeof(double) + 63) / 64 * 64;
    const int64_t group_bytes = 2 * cols * (int64_t)sizeof(T) + (group_shift ? 64 : 0);
    const int64_t per_thread = sums_bytes + (group_bytes + 63) / 64 * 64;
    char *scratch = NULL;
    if (want_params) {
        scratch = (char *)mt_scratch_alloc((int64_t)nt * per_thread);
        if (!scratch) return MT_ERR_NOMEM;
        /* zeroed up front: the runtime may start fewer than nt threads */
        memset(scratch, 0, (size_t)nt * (size_t)per_thread);
    }
#pragma omp parallel num_threads(nt)
    {
        const int tid = mt_thread_num(), nthr = mt_team_size();
        int64_t r0 = rows * tid / nthr, r1 = rows * (tid + 1) / nthr;
        double *dw_sum = NULL, *db_sum = NULL;
        T *dw_group = NULL, *db_group = NULL;
        if (scratch) {
            dw_sum = (double *)(scratch + tid * per_thread);
            db_sum = dw_sum + cols;
            dw_group = (T *)(scratch + tid * per_thread + sums_bytes) + group_shift;
            db_group = dw_group + cols;
        }
        if (V(is_short)(rows, cols) && !streaming)
            V(backward_short_rows)(dy, x, weight, mean, rstd, dx, r0, r1, cols, dw_group,
                                   db_group, dw_sum, db_sum);
        else
            for (int64_t r = r0; r < r1; ++r) {
                const int ahead = streaming_asks && r + 1 < r1;
                V(layer_norm_backward_row)(dy + r * cols, x + r * cols, weight, mean[r],
                                           rstd[r], dx + r * cols, cols, dw_group, db_group,
                                           streaming, ahead ? dy + (r + 1) * cols : NULL,
                                           ahead ? x + (r + 1) * cols : NULL);
                if (scratch && ((r + 1 - r0) % LN_FLUSH_ROWS == 0 || r + 1 == r1))
                    V(flush_column_sums)(dw_group, db_group, dw_sum, db_sum, cols);
            }
#ifdef MT_X86
        if (streaming) _mm_sfence(); /* this thread's streaming stores done before the end */
#endif
    }
    if (want_params) {
        for (int64_t j = 0; j < cols; ++j) {
            double dw = 0, db = 0;
            for (int t = 0; t < nt; ++t) {
                const double *dw_sum = (const double *)(scratch + t * per_thread);
                dw += dw_sum[j];
                db += dw_sum[cols + j];
            }
            if (dweight) dweight[j] = (T)dw;
            if (dbias) dbias[j] = (T)db;
        }
        free(scratch);
    }
    return 0;
}

#undef LN_SHIFT_SAMPLE
#undef LN_AHEAD_BLOCK
#undef LN_SHORT_ROW_BYTES
#undef LN_SHORT_ROW_ARRAY_BYTES
#undef LN_STAGE
#undef LN_FLUSH_ROWS
#undef LN_LANES
#endif
