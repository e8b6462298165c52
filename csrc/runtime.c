/* runtime.c — the global state: how many threads kernels may use, and which ISA level runs.
 *
 * Threads default to what OpenMP reports as available (OMP_NUM_THREADS or the core count);
 * without OpenMP the number is stored and reported but every kernel runs on one thread.
 * A count must be at most mt_max_threads() and its team must be startable: libgomp ends the
 * process when it cannot create a thread (exit 1, or SIGSEGV for tens of thousands), so a new
 * count is tried first with plain threads, and refused (MT_ERR_THREADS) if they cannot all
 * exist at once.
 * The ISA level defaults to the best the CPU supports; mt_set_isa caps it, so that tests and
 * benchmarks can run every body (MT_ISA_REFERENCE: the plain loops) on one machine.
 * mt_l1d_bytes reports the L1 data cache's size, for the kernels whose prefetching depends on it.
 */
#include <unistd.h>
#include "mt_internal.h"
#ifdef _OPENMP
#include <pthread.h>
#endif

/* 0 = not set yet; resolved lazily so OMP_NUM_THREADS is honoured at first use. */
static int mt_num_threads = 0;
/* -1 = no cap: the best level. */
static int mt_isa_cap = -1;

static int mt_cpu_count(void) {
#ifdef _OPENMP
    return omp_get_num_procs(); /* the CPUs this process may run on */
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
#endif
}

/* 256, or 4 per CPU on machines with more than 64 (more threads than CPUs only adds
 * switching; the default, one per CPU, always fits), and never above OMP_THREAD_LIMIT. */
int mt_max_threads(void) {
    int cpus = mt_cpu_count();
    int bound = 4 * cpus > 256 ? 4 * cpus : 256;
#ifdef _OPENMP
    int limit = omp_get_thread_limit();
    if (limit >= 1 && limit < bound) bound = limit;
#endif
    return bound;
}

#ifdef _OPENMP
/* The probe's threads wait until the probe has made all it wanted, so they exist at once. */
struct mt_probe {
    pthread_mutex_t lock;
    pthread_cond_t go;
    int released;
};

static void *mt_probe_wait(void *arg) {
    struct mt_probe *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->released) pthread_cond_wait(&p->go, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Whether a team of n (the caller and n - 1 more threads) can exist now. The threads get the
 * default attributes, as libgomp's do unless OMP_STACKSIZE is set; the caller's idle libgomp
 * threads stay alive meanwhile, so the answer errs on the side of no. */
static int mt_team_startable(int n) {
    struct mt_probe p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t *ids = malloc(sizeof(pthread_t) * (size_t)n);
    if (!ids) return 0;
    int started = 0;
    while (started < n - 1 && pthread_create(&ids[started], NULL, mt_probe_wait, &p) == 0)
        started++;
    pthread_mutex_lock(&p.lock);
    p.released = 1;
    pthread_cond_broadcast(&p.go);
    pthread_mutex_unlock(&p.lock);
    for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
    free(ids);
    return started == n - 1;
}
#else
static int mt_team_startable(int n) { (void)n; return 1; } /* kernels run on one thread */
#endif

int mt_set_num_threads(int n) {
    if (n < 1 || n > mt_max_threads()) return MT_ERR_ARGS;
    if (!mt_team_startable(n)) return MT_ERR_THREADS;
    __atomic_store_n(&mt_num_threads, n, __ATOMIC_RELAXED);
    return 0;
}

int mt_get_num_threads(void) {
    int n = __atomic_load_n(&mt_num_threads, __ATOMIC_RELAXED);
    if (n < 1) {
#ifdef _OPENMP
        n = omp_get_max_threads();
#else
        n = mt_cpu_count();
#endif
        int bound = mt_max_threads();
        if (n > bound) n = bound;
        if (!mt_team_startable(n)) n = 1; /* a process or memory limit: run on the caller */
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

/* The L1 data cache's size in bytes, 0 where the C library does not say (detected once). */
int64_t mt_l1d_bytes(void) {
    static int64_t known = -1;
    int64_t bytes = __atomic_load_n(&known, __ATOMIC_RELAXED);
    if (bytes < 0) {
        bytes = 0;
#ifdef _SC_LEVEL1_DCACHE_SIZE
        const long n = sysconf(_SC_LEVEL1_DCACHE_SIZE);
        if (n > 0) bytes = n;
#endif
        __atomic_store_n(&known, bytes, __ATOMIC_RELAXED);
    }
    return bytes;
}
