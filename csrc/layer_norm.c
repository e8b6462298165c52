/* layer_norm.c — layer normalization over the last dim, forward and backward, for float and
 * double. Body: layer_norm_impl.h; vector row sums: row_ops_impl.h. */
#include <math.h>
#include <string.h>
#include "mt_internal.h"
#include "fast_exp.h"

#define T float
#define SFX f32
#include "row_ops_impl.h"
#include "layer_norm_impl.h"
#undef T
#undef SFX

#define T double
#define SFX f64
#include "row_ops_impl.h"
#include "layer_norm_impl.h"
#undef T
#undef SFX
