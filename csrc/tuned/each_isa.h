/* tuned/each_isa.h — compiles a tuned body once per ISA level, and for each once per element
 * type (each_dtype.h).
 *
 * The including file defines MT_BODY, its own path from csrc/ (the body is the part of it that
 * runs when ISA is defined). The body names its functions V(name), i.e. name_<isa>_<f32|f64>,
 * and calls the vector exp of its own level, V(exp_shifted). Each level's copy is compiled for the whole
 * of its x86-64 psABI level (#pragma GCC target), so that GCC vectorizes the plain loops with
 * that level's registers and FMAs: unlike target_clones, which picks once at load time, the
 * caller picks a copy at every call, so that a test can force each level (mt_set_isa).
 */
#define V(name) MT_CAT(MT_CAT(name, ISA), SFX)

#define ISA portable
#include "each_dtype.h"
#undef ISA

#ifdef MT_X86
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define ISA avx2
#include "each_dtype.h"
#undef ISA
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define ISA avx512
#include "each_dtype.h"
#undef ISA
#pragma GCC pop_options
#endif

#undef V
