/* attention_step.c — one attention step of incremental decoding, softmax(q K^T * scale + mask) V,
 * in one call, for float and double.
 *
 *   for every batch row n, head h and new query i:
 *     z_j   = scale * sum_e q[n,h,i,e] kt[n,h,e,j]      (-inf where excluded)
 *     w_j   = exp(z_j - max z) / sum_k exp(z_k - max z)  (weights[n,h,i,j])
 *     out_e = sum_j w_j v[n,h,j,e]                       (out[n,i,h,e])
 *
 * Excluded: where the bool mask is set (mask[n,h,i,j] through its strides, 0 where it
 * broadcasts), and with causal_offset >= 0 every key j > i + causal_offset (the new queries
 * are the last positions of the keys: a cached self-attention). A query with every key
 * excluded gets zero weights and a zero output, never 0/0.
 *
 * Why one call: a decoding step's attention is a few thousand multiply-adds per head; as a
 * batched GEMM, a softmax and a second batched GEMM it costs three kernel launches and two
 * packings per head, more than the arithmetic. The keys come transposed (kt: head dim by key),
 * as the decoder's KV cache stores them, so that both products are unit-stride updates over
 * the keys and the features. Sums in double, libm's exp; the tuned body (tuned/
 * attention_step_tuned.c) sums in T with the vector exp. out is (n, l, h, dv), the layout the
 * output projection reads.
 * This file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "attention_step.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

/* the tuned body (tuned/attention_step_tuned.c), declared here: only this file calls it */
MT_DECLARE_TUNED(tuned_attention_step_forward,
                 (const T *q, const T *kt, const T *v, const uint8_t *mask, T *out, T *weights,
                  int64_t n, int64_t h, int64_t l, int64_t s, int64_t d, int64_t dv,
                  const int64_t *q_strides, const int64_t *kt_strides, const int64_t *v_strides,
                  const int64_t *mask_strides, double scale, int64_t causal_offset))

/* One query: scores into z (double, s entries), weights into w (T), output into o (T). */
static void F(attend_one)(const T *q, const T *kt, int64_t kt_row, const T *v, int64_t v_row,
                          const uint8_t *mask, int64_t mask_col, int64_t live, int64_t s,
                          int64_t d, int64_t dv, double scale, double *z, double *acc, T *w,
                          T *o) {
    for (int64_t j = 0; j < s; ++j) z[j] = 0;
    for (int64_t e = 0; e < d; ++e) { /* z += q_e * (row e of K^T): unit stride over keys */
        const double qe = q[e];
        const T *row = kt + e * kt_row;
        for (int64_t j = 0; j < s; ++j) z[j] += qe * row[j];
    }
    double max = -INFINITY;
    for (int64_t j = 0; j < s; ++j) {
        int excluded = j >= live || (mask && mask[j * mask_col]);
        z[j] = excluded ? -INFINITY : z[j] * scale;
        if (z[j] > max || isnan(z[j])) max = z[j]; /* a NaN wins, so that its row is NaN */
    }
    for (int64_t e = 0; e < dv; ++e) acc[e] = 0;
    if (max == -INFINITY) { /* nothing left: zero weights, zero output */
        for (int64_t j = 0; j < s; ++j) w[j] = 0;
        for (int64_t e = 0; e < dv; ++e) o[e] = 0;
        return;
    }
    double sum = 0;
    for (int64_t j = 0; j < s; ++j) {
        z[j] = exp(z[j] - max);
        sum += z[j];
    }
    for (int64_t j = 0; j < s; ++j) {
        const double wj = z[j] / sum;
        const T *row = v + j * v_row;
        w[j] = (T)wj;
        for (int64_t e = 0; e < dv; ++e) acc[e] += wj * row[e]; /* unit stride over features */
    }
    for (int64_t e = 0; e < dv; ++e) o[e] = (T)acc[e];
}

int F(mt_attention_step_forward)(const T *q, const T *kt, const T *v, const uint8_t *mask,
                                 T *out, T *weights, int64_t n, int64_t h, int64_t l, int64_t s,
                                 int64_t d, int64_t dv, const int64_t *q_strides,
                                 const int64_t *kt_strides, const int64_t *v_strides,
                                 const int64_t *mask_strides, double scale,
                                 int64_t causal_offset) {
    if (n < 0 || h < 0 || l < 0 || s < 0 || d < 0 || dv < 0) return MT_ERR_ARGS;
    if (!q_strides || !kt_strides || !v_strides || (mask && !mask_strides)) return MT_ERR_ARGS;
    for (int k = 0; k < 3; ++k)
        if (q_strides[k] < 0 || kt_strides[k] < 0 || v_strides[k] < 0) return MT_ERR_ARGS;
    if (mask)
        for (int k = 0; k < 4; ++k)
            if (mask_strides[k] < 0) return MT_ERR_ARGS;
    if (n * h * l == 0) return 0;
    MT_RUN_TUNED(tuned_attention_step_forward, q, kt, v, mask, out, weights, n, h, l, s, d, dv,
                 q_strides, kt_strides, v_strides, mask_strides, scale, causal_offset);
    int nt = mt_threads_for(n * h * l * s * (d + dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *z = mt_scratch_alloc((s + dv) * (int64_t)sizeof(double));
        if (!z) failed = 1;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n * h; ++b) {
            if (!z) continue;
            const int64_t nb = b / h, hb = b % h;
            for (int64_t i = 0; i < l; ++i) {
                int64_t live = s;
                if (causal_offset >= 0 && i + causal_offset + 1 < s) live = i + causal_offset + 1;
                const uint8_t *m = mask ? mask + nb * mask_strides[0] + hb * mask_strides[1] +
                                              i * mask_strides[2]
                                        : NULL;
                F(attend_one)(q + nb * q_strides[0] + hb * q_strides[1] + i * q_strides[2],
                              kt + nb * kt_strides[0] + hb * kt_strides[1], kt_strides[2],
                              v + nb * v_strides[0] + hb * v_strides[1], v_strides[2], m,
                              mask ? mask_strides[3] : 0, live, s, d, dv, scale, z, z + s,
                              weights + (b * l + i) * s, out + ((nb * l + i) * h + hb) * dv);
            }
        }
        free(z);
    }
    return failed ? MT_ERR_NOMEM : 0;
}
#endif
