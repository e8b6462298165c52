/* cross_entropy.c — cross-entropy loss over rows of logits with int64 targets, forward and
 * backward, for float and double. Body: cross_entropy_impl.h; row loops: row_ops_impl.h. */
#include <math.h>
#include "mt_internal.h"
#include "fast_exp.h"

#define T float
#define SFX f32
#include "row_ops_impl.h"
#include "cross_entropy_impl.h"
#undef T
#undef SFX

#define T double
#define SFX f64
#include "row_ops_impl.h"
#include "cross_entropy_impl.h"
#undef T
#undef SFX
