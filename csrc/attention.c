/* attention.c — multi-head attention over whole sequences, forward and backward, one head at a
 * time in one call, for float and double.
 *
 *   for every batch row b and head g, with q (l x d), k (s x d), v (s x dv) of that head:
 *     z_ij  = scale * sum_e q_ie k_je + mask_ij        (-inf where excluded)
 *     w_ij  = exp(z_ij - max_j z_ij) / sum_j exp(...)  (weights[b,g,i,j])
 *     out_i = sum_j w_ij keep_ij v_j
 *   and, given dout:
 *     p_ij  = keep_ij sum_e dout_ie v_je ;  dz_ij = scale * w_ij (p_ij - sum_j' p_ij' w_ij')
 *     dq_i  = sum_j dz_ij k_j ;  dk_j = sum_i dz_ij q_i ;  dv_j = sum_i w_ij keep_ij dout_i
 *
 * keep is dropout on the weights (0 for a dropped weight, 1/(1-p) for a kept one; NULL: all
 * 1): the output and the gradients are those of dropout's product between the softmax and v,
 * while weights[] holds the softmax itself, which the backward needs.
 *
 * Excluded: where the bool mask is set, and with causal every key j > i. A query with nothing
 * left gets zero weights (so a zero output and zero gradients), never 0/0.
 *
 * Why one call: in a Transformer each head's products are small (32 x 32 x 32 in the benchmark's
 * model), so as three batched kernels (a GEMM, the softmax, a GEMM; five in the backward) every
 * head's scores make a round trip through L2 and every kernel pays its call and its loop over
 * the heads. Here a head's scores are made, normalized and used while they are in L1. The
 * reference body below sums in double with plain loops; the tuned body (tuned/
 * attention_tuned.c) runs the GEMM's and the softmax kernel's own tuned bodies on each head, so
 * its values are those of the unfused kernels, bit for bit.
 * This file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "attention.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

/* the tuned bodies (tuned/attention_tuned.c), declared here: only this file calls them */
MT_DECLARE_TUNED(tuned_attention_forward,
                 (const T *q, const T *k, const T *v, T *out, T *weights, int64_t n, int64_t h,
                  int64_t l, int64_t s, int64_t d, int64_t dv, const int64_t *strides, T scale,
                  const T *mask_add, const uint8_t *mask_bool, const int64_t *mask_row_strides,
                  int64_t mask_col_stride, int causal, const T *keep))
MT_DECLARE_TUNED(tuned_attention_backward,
                 (const T *q, const T *k, const T *v, const T *weights, const T *dout, T *dq,
                  T *dk, T *dv_out, int64_t n, int64_t h, int64_t l, int64_t s, int64_t d,
                  int64_t dv, const int64_t *strides, T scale, const T *keep))

/* The first element of head (b / h, b % h) of an array with strides st (batch, head, row). */
#define MT_HEAD(ptr, st, b, h) ((ptr) + ((b) / (h)) * (st)[0] + ((b) % (h)) * (st)[1])

/* Head b's weights: scores into z (double, l x s), then each row's softmax into w. */
static void F(head_weights)(const T *q, const int64_t *qs, const T *k, const int64_t *ks,
                            int64_t l, int64_t s, int64_t d, double scale, const T *madd,
                            const uint8_t *mbool, int64_t mrow, int64_t mcol, int causal,
                            double *z, T *w) {
    for (int64_t i = 0; i < l; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < s; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e) dot += (double)q[i * qs[2] + e] * k[j * ks[2] + e];
            int excluded = (causal && j > i) || (mbool && mbool[i * mrow + j * mcol]);
            double zij = excluded ? -INFINITY
                                  : dot * scale + (madd ? madd[i * mrow + j * mcol] : 0);
            z[i * s + j] = zij;
            if (zij > max || isnan(zij)) max = zij; /* a NaN wins, so that its row is NaN */
        }
        double sum = 0;
        for (int64_t j = 0; j < s; ++j) {
            z[i * s + j] = max == -INFINITY ? 0 : exp(z[i * s + j] - max);
            sum += z[i * s + j];
        }
        for (int64_t j = 0; j < s; ++j) w[i * s + j] = sum == 0 ? 0 : (T)(z[i * s + j] / sum);
    }
}

int F(mt_attention_forward)(const T *q, const T *k, const T *v, T *out, T *weights, int64_t n,
                            int64_t h, int64_t l, int64_t s, int64_t d, int64_t dv,
                            const int64_t *strides, T scale, const T *mask_add,
                            const uint8_t *mask_bool, const int64_t *mask_row_strides,
                            int64_t mask_col_stride, int causal, const T *keep) {
    if (n < 0 || h < 0 || l < 0 || s < 0 || d < 0 || dv < 0 || !strides) return MT_ERR_ARGS;
    if ((mask_add || mask_bool) && (!mask_row_strides || (mask_add && mask_bool)))
        return MT_ERR_ARGS;
    if (mask_col_stride != 0 && mask_col_stride != 1) return MT_ERR_ARGS;
    for (int i = 0; i < 12; ++i)
        if (strides[i] < 0) return MT_ERR_ARGS;
    if (n * h * l == 0) return 0;
    MT_RUN_TUNED(tuned_attention_forward, q, k, v, out, weights, n, h, l, s, d, dv, strides,
                 scale, mask_add, mask_bool, mask_row_strides, mask_col_stride, causal, keep);
    const int64_t *qs = strides, *ks = strides + 3, *vs = strides + 6, *os = strides + 9;
    int nt = mt_threads_for(n * h * l * s * (d + dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *z = mt_scratch_alloc(l * s * (int64_t)sizeof(double));
        if (!z) failed = 1;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n * h; ++b) {
            if (!z) continue;
            const int64_t mask_at = mask_add || mask_bool
                                        ? (b / h) * mask_row_strides[0] +
                                              (b % h) * mask_row_strides[1]
                                        : 0;
            T *w = weights + b * l * s;
            F(head_weights)(MT_HEAD(q, qs, b, h), qs, MT_HEAD(k, ks, b, h), ks, l, s, d, scale,
                            mask_add ? mask_add + mask_at : NULL,
                            mask_bool ? mask_bool + mask_at : NULL,
                            mask_add || mask_bool ? mask_row_strides[2] : 0, mask_col_stride,
                            causal, z, w);
            const T *vh = MT_HEAD(v, vs, b, h);
            const T *kp = keep ? keep + b * l * s : NULL;
            T *o = MT_HEAD(out, os, b, h);
            for (int64_t i = 0; i < l; ++i)
                for (int64_t e = 0; e < dv; ++e) {
                    double acc = 0;
                    for (int64_t j = 0; j < s; ++j) {
                        double kept = (double)w[i * s + j] * (kp ? kp[i * s + j] : 1);
                        acc += kept * vh[j * vs[2] + e];
                    }
                    o[i * os[2] + e] = (T)acc;
                }
        }
        free(z);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

int F(mt_attention_backward)(const T *q, const T *k, const T *v, const T *weights,
                             const T *dout, T *dq, T *dk, T *dv_out, int64_t n, int64_t h,
                             int64_t l, int64_t s, int64_t d, int64_t dv,
                             const int64_t *strides, T scale, const T *keep) {
    if (n < 0 || h < 0 || l < 0 || s < 0 || d < 0 || dv < 0 || !strides) return MT_ERR_ARGS;
    for (int i = 0; i < 21; ++i)
        if (strides[i] < 0) return MT_ERR_ARGS;
    if (n * h == 0) return 0;
    MT_RUN_TUNED(tuned_attention_backward, q, k, v, weights, dout, dq, dk, dv_out, n, h, l, s, d,
                 dv, strides, scale, keep);
    const int64_t *qs = strides, *ks = strides + 3, *vs = strides + 6, *gs = strides + 9;
    const int64_t *dqs = strides + 12, *dks = strides + 15, *dvs = strides + 18;
    int nt = mt_threads_for(n * h * l * s * (2 * d + 2 * dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        double *dz = mt_scratch_alloc(l * s * (int64_t)sizeof(double));
        if (!dz) failed = 1;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n * h; ++b) {
            if (!dz) continue;
            const T *qh = MT_HEAD(q, qs, b, h), *kh = MT_HEAD(k, ks, b, h);
            const T *vh = MT_HEAD(v, vs, b, h), *g = MT_HEAD(dout, gs, b, h);
            const T *w = weights + b * l * s;
            const T *kp = keep ? keep + b * l * s : NULL;
            for (int64_t i = 0; i < l; ++i) { /* dz = scale * w (p - rowsum(p w)) */
                double dot = 0;
                for (int64_t j = 0; j < s; ++j) {
                    double p = 0;
                    for (int64_t e = 0; e < dv; ++e) p += (double)g[i * gs[2] + e] * vh[j * vs[2] + e];
                    p *= kp ? kp[i * s + j] : 1;
                    dz[i * s + j] = p;
                    dot += p * w[i * s + j];
                }
                for (int64_t j = 0; j < s; ++j)
                    dz[i * s + j] = scale * w[i * s + j] * (dz[i * s + j] - dot);
            }
            T *dqh = MT_HEAD(dq, dqs, b, h), *dkh = MT_HEAD(dk, dks, b, h);
            T *dvh = MT_HEAD(dv_out, dvs, b, h);
            for (int64_t i = 0; i < l; ++i)
                for (int64_t e = 0; e < d; ++e) {
                    double acc = 0;
                    for (int64_t j = 0; j < s; ++j) acc += dz[i * s + j] * kh[j * ks[2] + e];
                    dqh[i * dqs[2] + e] = (T)acc;
                }
            for (int64_t j = 0; j < s; ++j) {
                for (int64_t e = 0; e < d; ++e) {
                    double acc = 0;
                    for (int64_t i = 0; i < l; ++i) acc += dz[i * s + j] * qh[i * qs[2] + e];
                    dkh[j * dks[2] + e] = (T)acc;
                }
                for (int64_t e = 0; e < dv; ++e) {
                    double acc = 0;
                    for (int64_t i = 0; i < l; ++i) {
                        double kept = (double)w[i * s + j] * (kp ? kp[i * s + j] : 1);
                        acc += kept * g[i * gs[2] + e];
                    }
                    dvh[j * dvs[2] + e] = (T)acc;
                }
            }
        }
        free(dz);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

#undef MT_HEAD
#endif
