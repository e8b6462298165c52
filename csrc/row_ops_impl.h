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

/* Sums: vectorized in T within blocks of MT_SUM_BLOCK elements (omp simd reduction: 8-16
 * partial sums), the block sums added in double. This keeps float32 rows of 10^4-10^5 terms at
 * ~1e-7 relative accuracy at the speed of a plain float loop, and needs no -ffast-math. */
#ifndef MT_SUM_BLOCK
#define MT_SUM_BLOCK 512
#endif

/* out[j] = exp(x[j]*scale - shift); returns the sum. The exp is vectorized by hand in
 * fast_exp.c; block sums (T lanes) are added in double. */
MT_INLINE static double RC(row_exp_sum, SFX)(const T *x, T *out, int64_t n, T scale, T shift) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
        total += RC(mt_exp_shifted_sum, SFX)(x + j0, out + j0, len, scale, shift, (T)0);
    }
    return total;
}

/* sum_j exp(x[j] - shift) without touching the caller's memory */
MT_INLINE static double RC(row_sum_exp, SFX)(const T *x, int64_t n, T shift) {
    T buffer[MT_SUM_BLOCK] __attribute__((aligned(64)));
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t len = n - j0 < MT_SUM_BLOCK ? n - j0 : MT_SUM_BLOCK;
        total += RC(mt_exp_shifted_sum, SFX)(x + j0, buffer, len, (T)1, shift, (T)0);
    }
    return total;
}

MT_INLINE static void RC(row_scale, SFX)(T *y, int64_t n, T factor) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] *= factor;
}

MT_INLINE static double RC(row_sum, SFX)(const T *x, int64_t n) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        T s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = j0; j < j1; ++j) s += x[j];
        total += (double)s;
    }
    return total;
}

MT_INLINE static double RC(row_dot, SFX)(const T *x, const T *y, int64_t n) {
    double total = 0;
    for (int64_t j0 = 0; j0 < n; j0 += MT_SUM_BLOCK) {
        int64_t j1 = j0 + MT_SUM_BLOCK < n ? j0 + MT_SUM_BLOCK : n;
        T s = 0;
#pragma omp simd reduction(+ : s)
        for (int64_t j = j0; j < j1; ++j) s += x[j] * y[j];
        total += (double)s;
    }
    return total;
}

/* log(sum(exp(x))) with max subtraction, in double (a float32 lse near 1e4 would be off by
 * 5e-4, and exp(x - lse) by as much); -inf for an empty or all -inf row */
MT_INLINE static double RC(row_logsumexp, SFX)(const T *x, int64_t n) {
    T m = RC(row_max_scaled, SFX)(x, n, (T)1);
    if (m == -(T)INFINITY) return -INFINITY;
    return (double)m + log(RC(row_sum_exp, SFX)(x, n, m));
}

#undef RC
#undef RC_
