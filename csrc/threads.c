/* threads.c — the one piece of global state: how many threads kernels may use.
 *
 * Default: what OpenMP reports as available (OMP_NUM_THREADS or the core count). Without
 * OpenMP the number is stored and reported but every kernel runs on one thread.
 */
#include <unistd.h>
#include "mt_internal.h"

/* 0 = not set yet; resolved lazily so OMP_NUM_THREADS is honoured at first use. */
static int mt_num_threads = 0;

static int mt_default_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}

void mt_set_num_threads(int n) {
    mt_num_threads = n < 1 ? 1 : n;
}

int mt_get_num_threads(void) {
    int n = __atomic_load_n(&mt_num_threads, __ATOMIC_RELAXED);
    if (n < 1) {
        n = mt_default_threads();
        __atomic_store_n(&mt_num_threads, n, __ATOMIC_RELAXED);
    }
#ifndef _OPENMP
    (void)0;
#endif
    return n;
}

int mt_has_openmp(void) {
#ifdef _OPENMP
    return 1;
#else
    return 0;
#endif
}
