/* exp_floor.c — the yardstick of the exp-bound row kernels (softmax, log-softmax, cross-entropy
 * forward): their vector exp alone, out[j] = exp(x[j]), the loop of csrc/tuned/fast_exp.c they
 * spend their time in, at the ISA level they run, over the same threads. A row kernel does that
 * and more (the max, the sum, the scaling), so it cannot take less time than this pass: where the
 * exp alone is slower than a copy of the same bytes, the copy bandwidth is out of its reach. Not
 * part of the library: bench_kernels.py compiles it (with fast_exp.c itself) on first use.
 */
#include <omp.h>
#include "fast_exp.c"

#ifdef MT_X86
#define SIMD_PASS(call) call
#else /* (only x86 has the SIMD levels: the library never runs them elsewhere) */
#define SIMD_PASS(call) (void)0
#endif

/* isa: MT_ISA_PORTABLE, MT_ISA_AVX2 or MT_ISA_AVX512 (the level the row kernels run at) */
#define EXP_PASS(T, SFX)                                                                  \
    void exp_pass_##SFX(int isa, int threads, const T *x, T *out, int64_t n) {            \
        _Pragma("omp parallel num_threads(threads)") {                                    \
            const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();         \
            const int64_t j0 = n * t / team, j1 = n * (t + 1) / team;                      \
            if (isa == MT_ISA_AVX512)                                                     \
                SIMD_PASS(exp_shifted_avx512_##SFX(x + j0, out + j0, j1 - j0, 1, 0, 0, NULL)); \
            else if (isa == MT_ISA_AVX2)                                                  \
                SIMD_PASS(exp_shifted_avx2_##SFX(x + j0, out + j0, j1 - j0, 1, 0, 0, NULL)); \
            else                                                                          \
                exp_shifted_portable_##SFX(x + j0, out + j0, j1 - j0, 1, 0, 0, NULL);     \
        }                                                                                 \
    }
EXP_PASS(float, f32)
EXP_PASS(double, f64)
