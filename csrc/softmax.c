/* softmax.c — softmax (optionally scaled, masked, causal) and log-softmax, forward and
 * backward, for float and double. Bodies: softmax_impl.h; row loops: row_ops_impl.h. */
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"

/* Offset of row `row`'s mask in elements: unravel the row index over row_shape (C order)
 * and dot it with the mask's strides (0 where the mask broadcasts). */
static inline int64_t mask_row_offset(int64_t row, int64_t ndim, const int64_t *shape,
                                      const int64_t *strides) {
    int64_t offset = 0;
    for (int64_t d = ndim - 1; d >= 0; --d) {
        offset += (row % shape[d]) * strides[d];
        row /= shape[d];
    }
    return offset;
}

#define T float
#define UT uint32_t
#define SFX f32
#include "row_ops_impl.h"
#include "softmax_impl.h"
#undef T
#undef UT
#undef SFX

#define T double
#define UT uint64_t
#define SFX f64
#include "row_ops_impl.h"
#include "softmax_impl.h"
#undef T
#undef UT
#undef SFX
