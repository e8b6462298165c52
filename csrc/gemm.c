/* gemm.c — strided-batched GEMM entry points for float and double.
 *
 * The driver body lives in gemm_impl.h (included once per dtype); the micro-kernels in
 * gemm_microkernels.c. This file also decides which instruction set a call uses.
 */
#include "mt_internal.h"
#include "gemm_microkernels.h"

/* The instruction set a request resolves to: the request itself when the CPU has it, else
 * the best one below it. */
int mt_gemm_used_isa(int isa) {
    int best = mt_best_isa();
    if (isa == MT_ISA_AUTO || isa > best) return best;
    if (isa < MT_ISA_GENERIC) return MT_ISA_GENERIC;
    return isa;
}

#define T float
#define SFX f32
#include "gemm_impl.h"
#undef T
#undef SFX

#define T double
#define SFX f64
#include "gemm_impl.h"
#undef T
#undef SFX
