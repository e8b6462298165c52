/* each_dtype.h — compiles a kernel file's body once for float and once for double.
 *
 * A kernel file written once for the element type T reads
 *
 *     #ifndef T
 *     #define MT_BODY "softmax.c"
 *     #include "each_dtype.h"
 *     #else
 *     ... the body, naming its functions F(name) ...
 *     #endif
 *
 * and this header includes it again with T = float, SFX = f32, then T = double, SFX = f64,
 * so F(name) becomes name_f32 and name_f64 (mt_internal.h).
 */
#include <math.h>
#include "mt_internal.h"

#define T float
#define SFX f32
#include MT_BODY
#undef T
#undef SFX

#define T double
#define SFX f64
#include MT_BODY
#undef T
#undef SFX
