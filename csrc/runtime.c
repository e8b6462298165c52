/* runtime.c — the global state: how many threads kernels may use, and which ISA level runs.
 *
 * Threads default to what OpenMP reports as available (OMP_NUM_THREADS or the core count);
 * without OpenMP the number is stored and reported but every kernel runs on one thread.
 * The ISA level defaults to the best the CPU supports; mt_set_isa caps it, so that tests and
 * benchmarks can run every body (MT_ISA_REFERENCE: the plain loops) on one machine.
 */
#include <unistd.h>
#include "mt_internal.h"

/* 0 = not set yet; resolved lazily so OMP_NUM_THREADS is honoured at first use. */
static int mt_num_threads = 0;
/* -1 = no cap: the best level. */
static int mt_isa_cap = -1;

static int mt_default_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}

void mt_set_num_threads(int n) {
    __atomic_store_n(&mt_num_threads, n < 1 ? 1 : n, __ATOMIC_RELAXED);
}

int mt_get_num_threads(void) {
    int n = __atomic_load_n(&mt_num_threads, __ATOMIC_RELAXED);
    if (n < 1) {
        n = mt_default_threads();
        __atomic_store_n(&mt_num_threads, n, __ATOMIC_RELAXED);
    }
    return n;
}

int mt_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}

/* The levels are the x86-64 psABI's: the tuned row kernels are compiled for the whole of
 * x86-64-v3 / -v4, not only for the AVX2 / AVX-512F their intrinsics name. */
int mt_best_isa(void) {
#ifdef MT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("x86-64-v4")) return MT_ISA_AVX512;
    if (__builtin_cpu_supports("x86-64-v3")) return MT_ISA_AVX2;
#endif
    return MT_ISA_PORTABLE;
}

void mt_set_isa(int level) {
    __atomic_store_n(&mt_isa_cap, level < MT_ISA_REFERENCE ? MT_ISA_REFERENCE : level,
                     __ATOMIC_RELAXED);
}

int mt_get_isa(void) {
    static int best_known = -1; /* the CPU does not change: detected once */
    int best = __atomic_load_n(&best_known, __ATOMIC_RELAXED);
    if (best < 0) {
        best = mt_best_isa();
        __atomic_store_n(&best_known, best, __ATOMIC_RELAXED);
    }
    int cap = __atomic_load_n(&mt_isa_cap, __ATOMIC_RELAXED);
    return cap < 0 || cap > best ? best : cap;
}
