/* tuned/each_isa.h — compiles a tuned body once per ISA level and element type.
 *
 * The including file defines MT_BODY (its own name: the body is the part of it that runs when
 * ISA is defined). The body names its functions V(name), i.e. name_<isa>_<f32|f64>, and calls
 * the vector exp of its own level, V(exp_shifted). Each level's copy is compiled for the whole
 * of its x86-64 psABI level (#pragma GCC target), so that GCC vectorizes the plain loops with
 * that level's registers and FMAs: unlike target_clones, which picks once at load time, the
 * caller picks a copy at every call, so that a test can force each level (mt_set_isa).
 */
#define V(name) MT_CAT(MT_CAT(name, ISA), SFX)

#define ISA portable
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
#undef ISA

#ifdef MT_X86
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define ISA avx2
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
#undef ISA
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define ISA avx512
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
#undef ISA
#pragma GCC pop_options
#endif

#undef V
