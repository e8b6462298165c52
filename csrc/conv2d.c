/* conv2d.c — 2-d convolution (cross-correlation) as im2col + GEMM: the forward, the input's
 * gradient and the weight's gradient, for float and double.
 *
 *   y[n, o, i, j] = bias[o] + sum_{c, p, q} w[o, c, p, q] x[n, g Cg + c, i sh - ph + p dh,
 *                                                            j sw - pw + q dw]
 *
 * with x zero outside the image, g = o / Og the group of output channel o, Cg = C / groups
 * and Og = O / groups. im2col lays out group g's receptive fields of image n as the matrix
 *
 *   col[(c, p, q), (i, j)] = x[n, g Cg + c, i sh - ph + p dh, j sw - pw + q dw]
 *
 * of Cg kh kw rows and OH OW columns, and then every product is one GEMM (gemm.c, so it runs
 * at the ISA level in force):
 *
 *   forward        y[n, g]  (Og x OH OW)     = W_g (Og x Cg kh kw) . col
 *   input grad     dcol     (Cg kh kw x OH OW) = W_g^T . dy[n, g],  then col2im adds each
 *                                               element of dcol back onto its x position
 *   weight grad    dW_g                     += dy[n, g] . col^T,     summed over n
 *
 * A 1x1 kernel with stride 1 and no padding needs no im2col: col is x[n, g] itself. Large
 * images are done a band of output rows at a time, so col stays a few hundred KiB.
 *
 * Threads: with at least as many images as threads, each thread takes whole images with col
 * scratch of its own (and, for the weight's gradient, a sum of its own, added up at the end);
 * the GEMMs it calls then run on that thread alone (OpenMP runs no nested team unless asked
 * to with OMP_MAX_ACTIVE_LEVELS). With fewer images, images go one at a time and each GEMM
 * uses every thread.
 * This file is its own body, compiled once per element type T (each_dtype.h).
 */
#ifndef MT_CONV2D_SHARED
#define MT_CONV2D_SHARED
#include <string.h>
#include "mt_internal.h"

/* Everything about one call's geometry, in elements. */
typedef struct {
    int64_t n, c, h, w, o, kh, kw;   /* input (N, C, H, W), weight (O, C/groups, kh, kw) */
    int64_t sh, sw, ph, pw, dh, dw;  /* stride, padding, dilation */
    int64_t groups, cg, og, oh, ow;  /* channels per group; output size */
    int64_t rows;                    /* Cg kh kw: the rows of col */
    int64_t band;                    /* output rows per im2col band */
    int direct;                      /* 1x1, stride 1, no padding: col is x itself */
} mt_conv2d_shape;

/* col of at most this many bytes per band: it stays in L2 between im2col and the GEMM. */
#define MT_CONV2D_BAND_BYTES (512 * 1024)

/* 0 and the filled shape, or MT_ERR_ARGS for a geometry the Python layer rejects. */
static int mt_conv2d_plan(mt_conv2d_shape *s, int64_t item, int64_t n, int64_t c, int64_t h, int64_t w,
                          int64_t o, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                          int64_t pw, int64_t dh, int64_t dw, int64_t groups) {
    const int64_t big = (int64_t)1 << 31;
    if (n < 0 || c < 1 || h < 1 || w < 1 || o < 1 || kh < 1 || kw < 1 || sh < 1 || sw < 1 ||
        ph < 0 || pw < 0 || dh < 1 || dw < 1 || groups < 1)
        return MT_ERR_ARGS;
    if (n >= big || c >= big || h >= big || w >= big || o >= big || kh >= big || kw >= big ||
        sh >= big || sw >= big || ph >= big || pw >= big || dh >= big || dw >= big)
        return MT_ERR_ARGS;
    if (c % groups || o % groups) return MT_ERR_ARGS;
    s->n = n; s->c = c; s->h = h; s->w = w; s->o = o; s->kh = kh; s->kw = kw;
    s->sh = sh; s->sw = sw; s->ph = ph; s->pw = pw; s->dh = dh; s->dw = dw;
    s->groups = groups; s->cg = c / groups; s->og = o / groups;
    s->oh = (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1;
    s->ow = (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1;
    if (h + 2 * ph < dh * (kh - 1) + 1 || w + 2 * pw < dw * (kw - 1) + 1) return MT_ERR_ARGS;
    s->rows = s->cg * kh * kw;
    s->direct = kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0;
    /* bands of equal height (a thin last band would make a thin GEMM) */
    int64_t band = MT_CONV2D_BAND_BYTES / (item * s->rows * s->ow);
    band = band < 1 ? 1 : band > s->oh ? s->oh : band;
    int64_t bands = (s->oh + band - 1) / band;
    s->band = s->direct ? s->oh : (s->oh + bands - 1) / bands;
    return 0;
}

/* The output columns j whose input column j sw - pad + offset lies in [0, size): [*j0, *j1). */
static void mt_conv2d_valid_range(int64_t out, int64_t size, int64_t stride, int64_t pad,
                                  int64_t offset, int64_t *j0, int64_t *j1) {
    int64_t first = pad - offset <= 0 ? 0 : (pad - offset + stride - 1) / stride;
    int64_t last = size - 1 + pad - offset < 0 ? 0 : (size - 1 + pad - offset) / stride + 1;
    if (last > out) last = out;
    *j0 = first < last ? first : last;
    *j1 = last;
}

/* Threads for `flops` of work over `images` images: 0 = images one at a time (the GEMMs use
 * every thread), else that many threads taking whole images. */
static int mt_conv2d_image_threads(int64_t images, double flops) {
    int nt = mt_get_num_threads();
    if (nt <= 1 || flops < 4e6) return 1;
    return images >= nt ? nt : 0;
}
#endif /* MT_CONV2D_SHARED */

#ifndef T
#define MT_BODY "conv2d.c"
#include "each_dtype.h"

#else

/* col[(c, p, q), (i - i0, j)] for output rows [i0, i1) of one image's group (x: its channel
 * g Cg): the receptive fields, zero where they reach into the padding. */
static void F(im2col)(const mt_conv2d_shape *s, const T *restrict x, T *restrict col,
                      int64_t i0, int64_t i1) {
    const int64_t cols = (i1 - i0) * s->ow;
    for (int64_t c = 0; c < s->cg; ++c)
        for (int64_t p = 0; p < s->kh; ++p)
            for (int64_t q = 0; q < s->kw; ++q) {
                T *row = col + ((c * s->kh + p) * s->kw + q) * cols;
                int64_t j0, j1;
                mt_conv2d_valid_range(s->ow, s->w, s->sw, s->pw, q * s->dw, &j0, &j1);
                for (int64_t i = i0; i < i1; ++i) {
                    T *dst = row + (i - i0) * s->ow;
                    int64_t y = i * s->sh - s->ph + p * s->dh;
                    if (y < 0 || y >= s->h) {
                        memset(dst, 0, (size_t)s->ow * sizeof(T));
                        continue;
                    }
                    const T *src = x + (c * s->h + y) * s->w;
                    const int64_t shift = q * s->dw - s->pw; /* x column of output column 0 */
                    for (int64_t j = 0; j < j0; ++j) dst[j] = 0;
                    if (s->sw == 1) /* a loop, not memcpy: rows are short (tens of elements) */
                        for (int64_t j = j0; j < j1; ++j) dst[j] = src[j + shift];
                    else
                        for (int64_t j = j0; j < j1; ++j) dst[j] = src[j * s->sw + shift];
                    for (int64_t j = j1; j < s->ow; ++j) dst[j] = 0;
                }
            }
}

/* The adjoint of im2col: dx[position of col element] += col element (padding dropped). */
static void F(col2im)(const mt_conv2d_shape *s, const T *restrict col, T *restrict dx,
                      int64_t i0, int64_t i1) {
    const int64_t cols = (i1 - i0) * s->ow;
    for (int64_t c = 0; c < s->cg; ++c)
        for (int64_t p = 0; p < s->kh; ++p)
            for (int64_t q = 0; q < s->kw; ++q) {
                const T *row = col + ((c * s->kh + p) * s->kw + q) * cols;
                int64_t j0, j1;
                mt_conv2d_valid_range(s->ow, s->w, s->sw, s->pw, q * s->dw, &j0, &j1);
                for (int64_t i = i0; i < i1; ++i) {
                    int64_t y = i * s->sh - s->ph + p * s->dh;
                    if (y < 0 || y >= s->h) continue;
                    const T *src = row + (i - i0) * s->ow;
                    T *dst = dx + (c * s->h + y) * s->w;
                    const int64_t shift = q * s->dw - s->pw;
                    for (int64_t j = j0; j < j1; ++j) dst[j * s->sw + shift] += src[j];
                }
            }
}

/* ---- forward: y[n] = W . im2col(x[n]) + bias, group by group, band by band ---- */
static int F(conv2d_forward_image)(const mt_conv2d_shape *s, const T *x, const T *weight,
                                   const T *bias, T *y, T *col) {
    const int64_t ohw = s->oh * s->ow;
    int status = 0;
    for (int64_t g = 0; g < s->groups && !status; ++g) {
        const T *xg = x + g * s->cg * s->h * s->w, *wg = weight + g * s->og * s->rows;
        T *yg = y + g * s->og * ohw;
        for (int64_t i0 = 0; i0 < s->oh && !status; i0 += s->band) {
            int64_t i1 = i0 + s->band < s->oh ? i0 + s->band : s->oh, cols = (i1 - i0) * s->ow;
            if (!s->direct) F(im2col)(s, xg, col, i0, i1);
            status = F(mt_gemm)(0, 0, s->og, cols, s->rows, 1, wg, s->rows, 0,
                                s->direct ? xg : col, s->direct ? ohw : cols, 0, 0,
                                yg + i0 * s->ow, ohw, 0, 1);
        }
    }
    if (bias)
        for (int64_t o = 0; o < s->o; ++o)
            for (int64_t k = 0; k < ohw; ++k) y[o * ohw + k] += bias[o];
    return status;
}

/* ---- input gradient: dx[n] = col2im(W^T . dy[n]) ---- */
static int F(conv2d_backward_input_image)(const mt_conv2d_shape *s, const T *dy,
                                          const T *weight, T *dx, T *col) {
    const int64_t ohw = s->oh * s->ow, hw = s->h * s->w;
    int status = 0;
    if (!s->direct) memset(dx, 0, (size_t)(s->c * hw) * sizeof(T));
    for (int64_t g = 0; g < s->groups && !status; ++g) {
        const T *dyg = dy + g * s->og * ohw, *wg = weight + g * s->og * s->rows;
        T *dxg = dx + g * s->cg * hw;
        for (int64_t i0 = 0; i0 < s->oh && !status; i0 += s->band) {
            int64_t i1 = i0 + s->band < s->oh ? i0 + s->band : s->oh, cols = (i1 - i0) * s->ow;
            status = F(mt_gemm)(1, 0, s->rows, cols, s->og, 1, wg, s->rows, 0, dyg + i0 * s->ow,
                                ohw, 0, 0, s->direct ? dxg : col, s->direct ? hw : cols, 0, 1);
            if (!s->direct && !status) F(col2im)(s, col, dxg, i0, i1);
        }
    }
    return status;
}

/* ---- weight gradient: dw += dy[n] . im2col(x[n])^T (dw must hold the sum so far) ---- */
static int F(conv2d_backward_weight_image)(const mt_conv2d_shape *s, const T *dy, const T *x,
                                           T *dw, T *col) {
    const int64_t ohw = s->oh * s->ow;
    int status = 0;
    for (int64_t g = 0; g < s->groups && !status; ++g) {
        const T *xg = x + g * s->cg * s->h * s->w, *dyg = dy + g * s->og * ohw;
        T *dwg = dw + g * s->og * s->rows;
        for (int64_t i0 = 0; i0 < s->oh && !status; i0 += s->band) {
            int64_t i1 = i0 + s->band < s->oh ? i0 + s->band : s->oh, cols = (i1 - i0) * s->ow;
            if (!s->direct) F(im2col)(s, xg, col, i0, i1);
            status = F(mt_gemm)(0, 1, s->og, s->rows, cols, 1, dyg + i0 * s->ow, ohw, 0,
                                s->direct ? xg : col, s->direct ? ohw : cols, 0, 1, dwg,
                                s->rows, 0, 1);
        }
    }
    return status;
}

/* The three directions share one driver: which per-image step, and on which arrays. */
enum { F(FORWARD), F(BACKWARD_INPUT), F(BACKWARD_WEIGHT) };

static int F(conv2d_image)(int direction, const mt_conv2d_shape *s, int64_t n, const T *a,
                           const T *b, const T *bias, T *out, T *col) {
    const int64_t in = s->c * s->h * s->w, outs = s->o * s->oh * s->ow;
    if (direction == F(FORWARD))
        return F(conv2d_forward_image)(s, a + n * in, b, bias, out + n * outs, col);
    if (direction == F(BACKWARD_INPUT))
        return F(conv2d_backward_input_image)(s, a + n * outs, b, out + n * in, col);
    return F(conv2d_backward_weight_image)(s, a + n * outs, b + n * in, out, col);
}

static int F(conv2d_run)(int direction, const mt_conv2d_shape *s, const T *a, const T *b,
                         const T *bias, T *out) {
    const int64_t col_elems = s->direct ? 1 : s->rows * s->band * s->ow;
    const int64_t weight_elems = s->o * s->rows;
    const int sums = direction == F(BACKWARD_WEIGHT);
    if (sums) memset(out, 0, (size_t)weight_elems * sizeof(T));
    if (s->n == 0) return 0;
    double flops = 2.0 * (double)s->n * (double)s->o * (double)(s->oh * s->ow) * (double)s->rows;
    int nt = mt_conv2d_image_threads(s->n, flops);
    if (nt <= 1) { /* images one at a time: the GEMMs use the threads there are */
        T *col = (T *)mt_scratch_alloc(col_elems * (int64_t)sizeof(T));
        if (!col) return MT_ERR_NOMEM;
        int status = 0;
        for (int64_t n = 0; n < s->n && !status; ++n)
            status = F(conv2d_image)(direction, s, n, a, b, bias, out, col);
        free(col);
        return status;
    }
    /* whole images per thread; the weight's gradient: a sum per thread, added up after */
    T *partial = NULL;
    if (sums) {
        partial = (T *)mt_scratch_alloc((int64_t)nt * weight_elems * (int64_t)sizeof(T));
        if (!partial) return MT_ERR_NOMEM;
        memset(partial, 0, (size_t)(nt * weight_elems) * sizeof(T));
    }
    int failed = 0;
#pragma omp parallel num_threads(nt)
    {
        const int tid = mt_thread_num();
        T *col = (T *)mt_scratch_alloc(col_elems * (int64_t)sizeof(T));
        T *mine = sums ? partial + tid * weight_elems : out;
        int status = col ? 0 : MT_ERR_NOMEM;
#pragma omp for schedule(static)
        for (int64_t n = 0; n < s->n; ++n)
            if (!status) status = F(conv2d_image)(direction, s, n, a, b, bias, mine, col);
        if (status) {
#pragma omp atomic write
            failed = status;
        }
        free(col);
    }
    if (sums && !failed)
        for (int t = 0; t < nt; ++t)
            for (int64_t k = 0; k < weight_elems; ++k) out[k] += partial[t * weight_elems + k];
    free(partial);
    return failed;
}

int F(mt_conv2d_forward)(const T *x, const T *weight, const T *bias, T *y, int64_t n,
                         int64_t c, int64_t h, int64_t w, int64_t o, int64_t kh, int64_t kw,
                         int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                         int64_t dilation_h, int64_t dilation_w, int64_t groups) {
    mt_conv2d_shape s;
    if (!x || !weight || !y || mt_conv2d_plan(&s, sizeof(T), n, c, h, w, o, kh, kw, stride_h, stride_w,
                                              pad_h, pad_w, dilation_h, dilation_w, groups))
        return MT_ERR_ARGS;
    return F(conv2d_run)(F(FORWARD), &s, x, weight, bias, y);
}

int F(mt_conv2d_backward_input)(const T *dy, const T *weight, T *dx, int64_t n, int64_t c,
                                int64_t h, int64_t w, int64_t o, int64_t kh, int64_t kw,
                                int64_t stride_h, int64_t stride_w, int64_t pad_h, int64_t pad_w,
                                int64_t dilation_h, int64_t dilation_w, int64_t groups) {
    mt_conv2d_shape s;
    if (!dy || !weight || !dx || mt_conv2d_plan(&s, sizeof(T), n, c, h, w, o, kh, kw, stride_h, stride_w,
                                                pad_h, pad_w, dilation_h, dilation_w, groups))
        return MT_ERR_ARGS;
    return F(conv2d_run)(F(BACKWARD_INPUT), &s, dy, weight, NULL, dx);
}

int F(mt_conv2d_backward_weight)(const T *dy, const T *x, T *dweight, int64_t n, int64_t c,
                                 int64_t h, int64_t w, int64_t o, int64_t kh, int64_t kw,
                                 int64_t stride_h, int64_t stride_w, int64_t pad_h,
                                 int64_t pad_w, int64_t dilation_h, int64_t dilation_w,
                                 int64_t groups) {
    mt_conv2d_shape s;
    if (!dy || !x || !dweight || mt_conv2d_plan(&s, sizeof(T), n, c, h, w, o, kh, kw, stride_h, stride_w,
                                                pad_h, pad_w, dilation_h, dilation_w, groups))
        return MT_ERR_ARGS;
    return F(conv2d_run)(F(BACKWARD_WEIGHT), &s, dy, x, NULL, dweight);
}
#endif
