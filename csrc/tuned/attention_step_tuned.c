/* tuned/attention_step_tuned.c — one attention step of incremental decoding (csrc/
 * attention_step.c), vectorized.
 *
 * It exists because the reference body sums in double and calls libm's exp per key: at the
 * sizes of a decoding step (128 heads of 32 features over 1 to 64 keys) its short loops run
 * at about one multiply-add a cycle, slower than the batched GEMMs it replaces. Here the two
 * products are `omp simd` updates in T over the keys (q_e times a row of K^T) and over the
 * features (w_j times a row of V), with `restrict` pointers so that GCC vectorizes them without
 * overlap checks, and the exp is fast_exp.h's; the sums of 16 keys (or features) at a time stay
 * in registers over the whole inner loop. Same formula, same exclusions, same zero rows;
 * sums in T, as the GEMM of the unfused path.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
/* So that the exp loop's clamps become selects: with traps assumed possible, GCC 12 left that
 * loop scalar at every level but AVX-512's (as in pointwise_tuned.c). Values do not change. */
#pragma GCC optimize("no-trapping-math")
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/attention_step_tuned.c"
#include "each_isa.h"
#else

#define EXP_T MT_CAT(mt_exp, SFX)
/* Keys (or features) per block of sums kept in registers across the inner loop: one AVX-512
 * vector of floats; storing the sums to memory after each term made every update wait on the
 * previous store. */
#define MT_STEP_BLOCK 16

static void V(attend_one)(const T *restrict q, const T *restrict kt, int64_t kt_row,
                          const T *restrict v, int64_t v_row, const uint8_t *restrict mask,
                          int64_t mask_col, int64_t live, int64_t s, int64_t d, int64_t dv,
                          T scale, T *restrict z, T *restrict acc, T *restrict w,
                          T *restrict o) {
    int64_t j0 = 0;
    for (; j0 + MT_STEP_BLOCK <= s; j0 += MT_STEP_BLOCK) { /* a block of scores in registers */
        /* even and odd features in two sums: two chains of dependent multiply-adds, not one */
        T even[MT_STEP_BLOCK] = {0}, odd[MT_STEP_BLOCK] = {0};
        int64_t e = 0;
        for (; e + 1 < d; e += 2) {
            const T qe = q[e], qo = q[e + 1];
            const T *restrict row = kt + e * kt_row + j0;
            const T *restrict next = row + kt_row;
#pragma omp simd
            for (int64_t u = 0; u < MT_STEP_BLOCK; ++u) {
                even[u] += qe * row[u];
                odd[u] += qo * next[u];
            }
        }
        if (e < d) {
            const T qe = q[e];
            const T *restrict row = kt + e * kt_row + j0;
#pragma omp simd
            for (int64_t u = 0; u < MT_STEP_BLOCK; ++u) even[u] += qe * row[u];
        }
        for (int64_t u = 0; u < MT_STEP_BLOCK; ++u) z[j0 + u] = even[u] + odd[u];
    }
    if (j0 < s) { /* the last, partial block: the same sums over fewer keys */
        const int64_t r = s - j0;
        T even[MT_STEP_BLOCK] = {0}, odd[MT_STEP_BLOCK] = {0};
        int64_t e = 0;
        for (; e + 1 < d; e += 2) {
            const T qe = q[e], qo = q[e + 1];
            const T *restrict row = kt + e * kt_row + j0;
            const T *restrict next = row + kt_row;
#pragma omp simd
            for (int64_t u = 0; u < r; ++u) {
                even[u] += qe * row[u];
                odd[u] += qo * next[u];
            }
        }
        if (e < d) {
            const T qe = q[e];
            const T *restrict row = kt + e * kt_row + j0;
            for (int64_t u = 0; u < r; ++u) even[u] += qe * row[u];
        }
        for (int64_t u = 0; u < r; ++u) z[j0 + u] = even[u] + odd[u];
    }
    T max = -(T)INFINITY;
    for (int64_t j = 0; j < s; ++j) {
        int excluded = j >= live || (mask && mask[j * mask_col]);
        z[j] = excluded ? -(T)INFINITY : z[j] * scale;
        if (z[j] > max || isnan(z[j])) max = z[j];
    }
    if (max == -(T)INFINITY) {
        for (int64_t j = 0; j < s; ++j) w[j] = 0;
        for (int64_t e = 0; e < dv; ++e) o[e] = 0;
        return;
    }
    T sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < s; ++j) {
        z[j] = EXP_T(z[j] - max); /* -inf - max: clamped, exactly 0 */
        sum += z[j];
    }
    const T inv = (T)1 / sum;
    for (int64_t j = 0; j < s; ++j) w[j] = z[j] * inv;
    int64_t e0 = 0;
    /* a block of 2 x 16 outputs in registers: independent chains over the keys */
    for (; e0 + 2 * MT_STEP_BLOCK <= dv; e0 += 2 * MT_STEP_BLOCK) {
        T block[2 * MT_STEP_BLOCK] = {0};
        for (int64_t j = 0; j < s; ++j) {
            const T wj = w[j];
            const T *restrict row = v + j * v_row + e0;
#pragma omp simd
            for (int64_t u = 0; u < 2 * MT_STEP_BLOCK; ++u) block[u] += wj * row[u];
        }
        for (int64_t u = 0; u < 2 * MT_STEP_BLOCK; ++u) o[e0 + u] = block[u];
    }
    for (; e0 + MT_STEP_BLOCK <= dv; e0 += MT_STEP_BLOCK) {
        T block[MT_STEP_BLOCK] = {0};
        for (int64_t j = 0; j < s; ++j) {
            const T wj = w[j];
            const T *restrict row = v + j * v_row + e0;
#pragma omp simd
            for (int64_t u = 0; u < MT_STEP_BLOCK; ++u) block[u] += wj * row[u];
        }
        for (int64_t u = 0; u < MT_STEP_BLOCK; ++u) o[e0 + u] = block[u];
    }
    if (e0 < dv) {
        for (int64_t e = e0; e < dv; ++e) acc[e] = 0;
        for (int64_t j = 0; j < s; ++j) {
            const T wj = w[j];
            const T *restrict row = v + j * v_row;
            for (int64_t e = e0; e < dv; ++e) acc[e] += wj * row[e];
        }
        for (int64_t e = e0; e < dv; ++e) o[e] = acc[e];
    }
}

int V(tuned_attention_step_forward)(const T *q, const T *kt, const T *v, const uint8_t *mask,
                                    T *out, T *weights, int64_t n, int64_t h, int64_t l,
                                    int64_t s, int64_t d, int64_t dv, const int64_t *q_strides,
                                    const int64_t *kt_strides, const int64_t *v_strides,
                                    const int64_t *mask_strides, double scale,
                                    int64_t causal_offset) {
    int nt = mt_threads_for(n * h * l * s * (d + dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        T *z = mt_scratch_alloc((s + dv + 16) * (int64_t)sizeof(T));
        if (!z) failed = 1;
        /* acc starts on its own 64-byte line after z */
        T *acc = z ? z + ((s + 15) / 16) * 16 : NULL;
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
                V(attend_one)(q + nb * q_strides[0] + hb * q_strides[1] + i * q_strides[2],
                              kt + nb * kt_strides[0] + hb * kt_strides[1], kt_strides[2],
                              v + nb * v_strides[0] + hb * v_strides[1], v_strides[2], m,
                              mask ? mask_strides[3] : 0, live, s, d, dv, (T)scale, z, acc,
                              weights + (b * l + i) * s, out + ((nb * l + i) * h + hb) * dv);
            }
        }
        free(z);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

#undef EXP_T
#undef MT_STEP_BLOCK
#endif
