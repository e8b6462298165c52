/* row_ops_impl.h — vectorizable loops over one row, shared by softmax, log-softmax and
 * cross-entropy. Included once per dtype with T, SFX defined.
 * `#pragma omp simd` lets GCC vectorize the reductions (max, sum) without -ffast-math.
 */
#define RC_(a, b) a##_##b
#define RC(a, b) RC_(a, b)

/* max_j x[j]*scale ; -inf for an empty row */
MT_INLINE static T RC(row_max_scaled, SFX)(const T *x, int64_t n, T scale) {
    T m = -(T)INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < n; ++j) {
        T v = x[j] * scale;
        m = v > m ? v : m;
    }
    return m;
}

/* Sums run on a 32-byte GCC vector type with four independent accumulators: an add waits 3-4
 * cycles for the one before it, so a single accumulator (what `omp simd reduction` gives)
 * leaves the adders idle most of the time. Partial sums are in T within blocks of
 * MT_SUM_BLOCK elements and the block sums added in double: float32 rows of 10^4-10^5 terms
 * stay at ~1e-7 relative accuracy at the speed of a plain float loop, without -ffast-math. In
 * the baseline clone the vector type is lowered to SSE pairs; in the AVX2 one it is a ymm. */
#ifndef MT_SUM_BLOCK
#define MT_SUM_BLOCK 1024
#endif
typedef T RC(vec, SFX) __attribute__((vector_size(MT_VEC_BYTES)));
#define RC_LANES ((int64_t)(MT_VEC_BYTES / sizeof(T)))

/* The sum of a vector's lanes (by pointer: a vector argument's ABI depends on the clone). */
MT_INLINE static double RC(lanes_total, SFX)(const RC(vec, SFX) *v) {
    T lanes[RC_LANES];
    __builtin_memcpy(lanes, v, sizeof(*v));
    T s = 0;
    for (int64_t l = 0; l < RC_LANES; ++l) s += lanes[l];
    return (double)s;
}

/* sum_j x[j] * y[j], or sum_j x[j] when y is NULL */
MT_INLINE static double RC(row_dot, SFX)(const T *x, const T *y, int64_t n) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        const int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        RC(vec, SFX) acc[4] = {{0}}, a, b;
        T tail = 0;
        int64_t j = j0;
        for (; j + 4 * RC_LANES <= j1; j += 4 * RC_LANES)
            for (int u = 0; u < 4; ++u) {
                MT_VLOAD(a, x + j + u * RC_LANES);
                if (y) {
                    MT_VLOAD(b, y + j + u * RC_LANES);
                    a *= b;
                }
                acc[u] += a;
            }
        for (; j < j1; ++j) tail += y ? x[j] * y[j] : x[j];
        acc[0] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        total += RC(lanes_total, SFX)(&acc[0]) + (double)tail;
    }
    return total;
}

MT_INLINE static double RC(row_sum, SFX)(const T *x, int64_t n) {
    return RC(row_dot, SFX)(x, NULL, n);
}

/* out[j] = exp(x[j]*scale - shift); returns the sum. The exp is vectorized by hand in
 * fast_exp.c; block sums (T lanes) are added in double. `ahead` (n elements, or NULL) is
 * prefetched meanwhile: see MT_NEXT_ROW. */
MT_INLINE static double RC(row_exp_sum, SFX)(const T *x, T *out, int64_t n, T scale, T shift,
                                             const T *ahead) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
        total += RC(mt_exp_shifted_sum, SFX)(x + j0, out + j0, len, scale, shift,
                                             ahead ? ahead + j0 : NULL);
    }
    return total;
}

/* sum_j exp(x[j] - shift). The exps go to out (n elements) or, if out is NULL, to a block of
 * scratch on the stack: a caller that overwrites a row of its own afterwards passes that row,
 * so its lines are fetched for writing while the exps are computed, not in a later pass. */
MT_INLINE static double RC(row_sum_exp, SFX)(const T *x, T *out, int64_t n, T shift,
                                             const T *ahead) {
    T buffer[MT_SUM_BLOCK] __attribute__((aligned(64)));
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
        total += RC(mt_exp_shifted_sum, SFX)(x + j0, out ? out + j0 : buffer, len, (T)1, shift,
                                             ahead ? ahead + j0 : NULL);
    }
    return total;
}

MT_INLINE static void RC(row_scale, SFX)(T *y, int64_t n, T factor) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] *= factor;
}

/* log(sum(exp(x))) with max subtraction, in double (a float32 lse near 1e4 would be off by
 * 5e-4, and exp(x - lse) by as much); -inf for an empty or all -inf row. out and ahead as in
 * row_sum_exp. */
MT_INLINE static double RC(row_logsumexp, SFX)(const T *x, T *out, int64_t n, const T *ahead) {
    T m = RC(row_max_scaled, SFX)(x, n, (T)1);
    if (m == -(T)INFINITY) return -INFINITY;
    return (double)m + log(RC(row_sum_exp, SFX)(x, out, n, m, ahead));
}

#undef RC_LANES
#undef RC
#undef RC_
