/* max_pool2d.c — max pooling over the last two dims, forward and backward, for float and
 * double.
 *
 *   y[p, i, j]     = max_{a, b} x[p, i sh - ph + a dh, j sw - pw + b dw]   (inside the input)
 *   index[p, i, j] = h W + w, the position of that maximum in plane p
 *   dx[p, index[p, i, j]] += dy[p, i, j]
 *
 * for every plane p (image and channel) and output (i, j), the window's elements a < kh,
 * b < kw. As PyTorch's CPU kernel: the running maximum starts at -inf at the window's first
 * element inside the input and an element replaces it if greater, or if NaN (so equal maxima
 * give the first one's index, and a NaN wins). Planes are independent: OpenMP splits them.
 * The forward's most common window (2x2, stride 2, no padding or dilation, inside the input) has
 * a tuned body (tuned/max_pool2d_tuned.c); the backward is this file's only. This file is its
 * own body, compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "max_pool2d.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"

int F(mt_max_pool2d_forward)(const T *x, T *y, int64_t *indices, int64_t planes, int64_t h,
                             int64_t w, int64_t oh, int64_t ow, int64_t kh, int64_t kw,
                             int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                             int64_t dw) {
    if (planes < 0 || h < 1 || w < 1 || oh < 1 || ow < 1 || kh < 1 || kw < 1 || sh < 1 ||
        sw < 1 || ph < 0 || pw < 0 || dh < 1 || dw < 1)
        return MT_ERR_ARGS;
    /* every window must start inside the input or its left padding, and padding is at most
     * half a window, so each holds an element of the input */
    if ((oh - 1) * sh - ph >= h || (ow - 1) * sw - pw >= w || 2 * ph > dh * (kh - 1) + 1 ||
        2 * pw > dw * (kw - 1) + 1)
        return MT_ERR_ARGS;
    if (kh == 2 && kw == 2 && sh == 2 && sw == 2 && ph == 0 && pw == 0 && dh == 1 && dw == 1 &&
        2 * oh <= h && 2 * ow <= w)
        MT_RUN_TUNED(tuned_max_pool2x2_forward, x, y, indices, planes, h, w, oh, ow);
    int nt = mt_threads_for(planes * oh * ow * kh * kw);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t p = 0; p < planes; ++p) {
        const T *xp = x + p * h * w;
        for (int64_t i = 0; i < oh; ++i) {
            int64_t h0 = i * sh - ph;
            while (h0 < 0) h0 += dh;                       /* the first row inside */
            for (int64_t j = 0; j < ow; ++j) {
                int64_t w0 = j * sw - pw;
                while (w0 < 0) w0 += dw;
                T best = -(T)INFINITY;
                int64_t where = h0 * w + w0;
                for (int64_t a = 0; a < kh; ++a) {
                    int64_t r = i * sh - ph + a * dh;
                    if (r < 0 || r >= h) continue;
                    for (int64_t b = 0; b < kw; ++b) {
                        int64_t c = j * sw - pw + b * dw;
                        if (c < 0 || c >= w) continue;
                        T v = xp[r * w + c];
                        if (v > best || isnan(v)) {
                            best = v;
                            where = r * w + c;
                        }
                    }
                }
                y[(p * oh + i) * ow + j] = best;
                indices[(p * oh + i) * ow + j] = where;
            }
        }
    }
    return 0;
}

int F(mt_max_pool2d_backward)(const T *dy, const int64_t *indices, T *dx, int64_t planes,
                              int64_t hw, int64_t ohw) {
    if (planes < 0 || hw < 1 || ohw < 0) return MT_ERR_ARGS;
    for (int64_t k = 0; k < planes * ohw; ++k) /* checked before anything is written */
        if (indices[k] < 0 || indices[k] >= hw) return MT_ERR_ARGS;
    int nt = mt_threads_for(planes * (hw + ohw));
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t p = 0; p < planes; ++p) {
        T *dxp = dx + p * hw;
        for (int64_t k = 0; k < hw; ++k) dxp[k] = 0;
        for (int64_t k = 0; k < ohw; ++k) dxp[indices[p * ohw + k]] += dy[p * ohw + k];
    }
    return 0;
}
#endif
