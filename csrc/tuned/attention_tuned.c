/* tuned/attention_tuned.c — multi-head attention over whole sequences, forward and backward
 * (csrc/attention.c), one head at a time while its scores are in L1.
 *
 * Each thread takes whole heads. A head's products are the GEMM driver's own (tuned_gemm_one:
 * the tiles tuned_gemm computes for one matrix of a batch, on the operands where they lie) and
 * its softmax rows are the softmax kernel's (softmax_rows.h), so the values equal those of the
 * unfused chain, batched GEMM, softmax, batched GEMM, bit for bit. What goes is the chain's
 * traffic and overhead: the scores of all heads written to memory and read back by the next
 * kernel (512 KiB at the benchmark's small size, 4 MiB at its big one), and a kernel call
 * with its own loop over the heads per step.
 *   forward, per head:  w = q k^T (into weights), softmax of w in place, out = w v
 *   backward, per head: p = dout v^T, p = softmax backward of (w, p) in place,
 *                       dq = p k, dk = p^T q, dv = w^T dout
 * With dropout (keep), w v and w^T dout read w keep, made in a scratch square per head, and p
 * is multiplied by keep before the softmax backward: dropout's own products, so the values
 * stay those of the chain with the dropout node in it.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"
#define MT_BODY "tuned/attention_tuned.c"
#include "each_isa.h"
#else
#include "tuned.h"
#include "row_ops.h"
#include "softmax_rows.h"

#define MT_AHEAD 2
#define MT_HEAD(ptr, st, b, h) ((ptr) + ((b) / (h)) * (st)[0] + ((b) % (h)) * (st)[1])

/* Ask for a head's rows x cols operand (rows ld apart) in L2, MT_AHEAD heads ahead of its
 * products: read in place from a projection, its rows are KiBs apart, and each line the
 * micro-kernel misses stalls it (with gemm_small's packing of such rows, the heads ran faster:
 * 8f0a06b). In a training step every operand of a small head comes from memory, so the asks
 * are spread between the current head's products (each with the product that reads the same
 * operand) rather than made at once: a head's every line at once came too late for the next. */
static void V(prefetch_head)(const T *x, int64_t rows, int64_t cols, int64_t ld) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; j += 64 / (int64_t)sizeof(T))
            __builtin_prefetch(x + r * ld + j, 0, 2);
}

/* The same for an operand the head's products will write (the backward's gradients; not the
 * forward's weights, which its first product writes whole: asked for, the big heads ran slower). */
static void V(prefetch_head_for_writing)(const T *x, int64_t rows, int64_t cols, int64_t ld) {
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; j += 64 / (int64_t)sizeof(T))
            __builtin_prefetch(x + r * ld + j, 1, 2);
}

/* c = op(a) op(b) (m x n, inner dim k) on this thread; an empty sum is 0, as in mt_gemm. */
static void V(product)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       const T *a, int64_t lda, const T *b, int64_t ldb, T *c, int64_t ldc,
                       T *scratch) {
    if (m == 0 || n == 0) return;
    if (k == 0) {
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = 0;
        return;
    }
    F(tuned_gemm_one)(isa, trans_a, trans_b, m, n, k, (T)1, a, lda, b, ldb, (T)0, c, ldc,
                      scratch);
}

/* kept = w keep over a head's n scores: the weights after dropout, or w itself without it. */
static const T *V(kept_weights)(const T *w, const T *keep, T *kept, int64_t n) {
    if (!keep) return w;
    for (int64_t i = 0; i < n; ++i) kept[i] = w[i] * keep[i];
    return kept;
}

/* Scratch elements for the largest of the products (m, n, k) listed in `shapes`. */
static int64_t V(product_scratch)(int isa, const int64_t (*shapes)[3], int count) {
    int64_t most = 0;
    for (int i = 0; i < count; ++i) {
        if (shapes[i][0] == 0 || shapes[i][1] == 0 || shapes[i][2] == 0) continue;
        int64_t need = F(tuned_gemm_one_scratch)(isa, shapes[i][0], shapes[i][1], shapes[i][2]);
        if (need > most) most = need;
    }
    return most;
}

int V(tuned_attention_forward)(const T *q, const T *k, const T *v, T *out, T *weights,
                               int64_t n, int64_t h, int64_t l, int64_t s, int64_t d,
                               int64_t dv, const int64_t *strides, T scale, const T *mask_add,
                               const uint8_t *mask_bool, const int64_t *mask_row_strides,
                               int64_t mask_col_stride, int causal, const T *keep) {
    const int isa = mt_get_isa();
    const int64_t *qs = strides, *ks = strides + 3, *vs = strides + 6, *os = strides + 9;
    const int64_t row_shape[3] = {n, h, l};
    const int64_t shapes[2][3] = {{l, s, d}, {l, dv, s}};
    /* the scratch of the products, then (with keep) the head's kept weights, 64-byte aligned */
    const int64_t gemm_elems = (V(product_scratch)(isa, shapes, 2) + 63) / 64 * 64;
    const int64_t scratch_elems = gemm_elems + (keep ? l * s : 0);
    int nt = mt_threads_for(n * h * l * s * (d + dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        T *scratch = mt_scratch_alloc(scratch_elems * (int64_t)sizeof(T));
        if (!scratch) failed = 1;
        T *kept = scratch ? scratch + gemm_elems : NULL;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n * h; ++b) {
            if (!scratch) continue;
            T *w = weights + b * l * s;
            const int64_t a = b + MT_AHEAD < n * h ? b + MT_AHEAD : -1; /* the head to prefetch */
            if (a >= 0) {
                V(prefetch_head)(MT_HEAD(q, qs, a, h), l, d, qs[2]);
                V(prefetch_head)(MT_HEAD(k, ks, a, h), s, d, ks[2]);
            }
            V(product)(isa, 0, 1, l, s, d, MT_HEAD(q, qs, b, h), qs[2], MT_HEAD(k, ks, b, h),
                       ks[2], w, s, scratch);
            if (s > 0)
                V(softmax_rows)(weights, weights, n * h * l, b * l, (b + 1) * l, s, scale,
                                mask_add, mask_bool, 3, row_shape, mask_row_strides,
                                mask_col_stride, causal ? l : 0);
            const T *wk = V(kept_weights)(w, keep ? keep + b * l * s : NULL, kept, l * s);
            if (a >= 0) {
                V(prefetch_head)(MT_HEAD(v, vs, a, h), s, dv, vs[2]);
                V(prefetch_head_for_writing)(MT_HEAD(out, os, a, h), l, dv, os[2]);
            }
            V(product)(isa, 0, 0, l, dv, s, wk, s, MT_HEAD(v, vs, b, h), vs[2],
                       MT_HEAD(out, os, b, h), os[2], scratch);
        }
        free(scratch);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

int V(tuned_attention_backward)(const T *q, const T *k, const T *v, const T *weights,
                                const T *dout, T *dq, T *dk, T *dv_out, int64_t n, int64_t h,
                                int64_t l, int64_t s, int64_t d, int64_t dv,
                                const int64_t *strides, T scale, const T *keep) {
    const int isa = mt_get_isa();
    const int64_t *qs = strides, *ks = strides + 3, *vs = strides + 6, *gs = strides + 9;
    const int64_t *dqs = strides + 12, *dks = strides + 15, *dvs = strides + 18;
    const int64_t shapes[4][3] = {{l, s, dv}, {l, d, s}, {s, d, l}, {s, dv, l}};
    /* the scratch of the products, the head's score gradients, then (with keep) its kept
     * weights, each 64-byte aligned */
    const int64_t gemm_elems = (V(product_scratch)(isa, shapes, 4) + 63) / 64 * 64;
    const int64_t square = (l * s + 63) / 64 * 64;
    int nt = mt_threads_for(n * h * l * s * (2 * d + 2 * dv));
    int failed = 0;
#pragma omp parallel num_threads(nt) reduction(| : failed)
    {
        T *scratch = mt_scratch_alloc((gemm_elems + (keep ? 2 : 1) * square) *
                                      (int64_t)sizeof(T));
        if (!scratch) failed = 1;
        T *p = scratch ? scratch + gemm_elems : NULL;
        T *kept = scratch ? p + square : NULL;
#pragma omp for schedule(static)
        for (int64_t b = 0; b < n * h; ++b) {
            if (!scratch) continue;
            const T *qh = MT_HEAD(q, qs, b, h), *kh = MT_HEAD(k, ks, b, h);
            const T *vh = MT_HEAD(v, vs, b, h), *g = MT_HEAD(dout, gs, b, h);
            const T *w = weights + b * l * s, *kp = keep ? keep + b * l * s : NULL;
            const int64_t a = b + MT_AHEAD < n * h ? b + MT_AHEAD : -1; /* the head to prefetch */
            if (a >= 0) {
                V(prefetch_head)(MT_HEAD(dout, gs, a, h), l, dv, gs[2]);
                V(prefetch_head)(MT_HEAD(v, vs, a, h), s, dv, vs[2]);
            }
            V(product)(isa, 0, 1, l, s, dv, g, gs[2], vh, vs[2], p, s, scratch);
            if (kp)
                for (int64_t i = 0; i < l * s; ++i) p[i] *= kp[i];
            if (a >= 0) V(prefetch_head)(weights + a * l * s, 1, l * s, 0);
            V(softmax_backward_rows)(w, p, p, 0, l, s, scale);
            if (a >= 0) {
                V(prefetch_head)(MT_HEAD(k, ks, a, h), s, d, ks[2]);
                V(prefetch_head_for_writing)(MT_HEAD(dq, dqs, a, h), l, d, dqs[2]);
            }
            V(product)(isa, 0, 0, l, d, s, p, s, kh, ks[2], MT_HEAD(dq, dqs, b, h), dqs[2],
                       scratch);
            if (a >= 0) {
                V(prefetch_head)(MT_HEAD(q, qs, a, h), l, d, qs[2]);
                V(prefetch_head_for_writing)(MT_HEAD(dk, dks, a, h), s, d, dks[2]);
            }
            V(product)(isa, 1, 0, s, d, l, p, s, qh, qs[2], MT_HEAD(dk, dks, b, h), dks[2],
                       scratch);
            if (a >= 0) V(prefetch_head_for_writing)(MT_HEAD(dv_out, dvs, a, h), s, dv, dvs[2]);
            V(product)(isa, 1, 0, s, dv, l, V(kept_weights)(w, kp, kept, l * s), s, g, gs[2],
                       MT_HEAD(dv_out, dvs, b, h), dvs[2], scratch);
        }
        free(scratch);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

#undef MT_HEAD
#undef MT_AHEAD
#endif
