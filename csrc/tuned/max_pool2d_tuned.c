/* tuned/max_pool2d_tuned.c — csrc/max_pool2d.c's forward for its most common window: 2x2,
 * stride 2, no padding, no dilation, every window inside the input.
 *
 * The reference walks each window with bounds checks and a branch per element; here a row of
 * outputs reads its two input rows straight through, each window's four elements compared in the
 * reference's order (the first of equal maxima, a NaN wins) without branches, so that the loop
 * vectorizes. Planes are split over threads as in the reference. Compiled once per ISA level and
 * element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include "mt_internal.h"
#define MT_BODY "tuned/max_pool2d_tuned.c"
#include "each_isa.h"
#else

int V(tuned_max_pool2x2_forward)(const T *x, T *y, int64_t *indices, int64_t planes, int64_t h,
                                 int64_t w, int64_t oh, int64_t ow) {
    int nt = mt_threads_for(planes * oh * ow * 4);
#pragma omp parallel for schedule(static) num_threads(nt)
    for (int64_t p = 0; p < planes; ++p) {
        for (int64_t i = 0; i < oh; ++i) {
            const T *top = x + (p * h + 2 * i) * w, *bottom = top + w;
            T *y_row = y + (p * oh + i) * ow;
            int64_t *index_row = indices + (p * oh + i) * ow;
            const int64_t first = 2 * i * w; /* the window's top-left position in its plane */
#pragma omp simd
            for (int64_t j = 0; j < ow; ++j) {
                T best = top[2 * j], v;
                int64_t where = first + 2 * j;
                v = top[2 * j + 1];
                if (v > best || v != v) {
                    best = v;
                    where = first + 2 * j + 1;
                }
                v = bottom[2 * j];
                if (v > best || v != v) {
                    best = v;
                    where = first + w + 2 * j;
                }
                v = bottom[2 * j + 1];
                if (v > best || v != v) {
                    best = v;
                    where = first + w + 2 * j + 1;
                }
                y_row[j] = best;
                index_row[j] = where;
            }
        }
    }
    return 0;
}
#endif
