/* core_round_trip.c — the yardstick of the 2-thread rows: how long a cache line takes to go
 * from one core to the other and back, the wait every hand-off between two threads pays (a
 * thread team woken for a kernel, a barrier at its end): on a shared VM it changes with where
 * the two vCPUs are placed, and the 2-thread ratios change with it. Not part of the library:
 * bench_kernels.py compiles it on first use.
 *
 * Two threads take turns on one counter: the first writes an odd value and waits for the next
 * even one, which the second writes as soon as it sees the odd one.
 */
#include <stdint.h>
#include <time.h>
#include <omp.h>

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Nanoseconds per round trip over `trips` of them; -1 when OpenMP gave fewer than 2 threads. */
double core_round_trip_ns(int64_t trips) {
    static _Alignas(64) int64_t counter; /* alone on its cache line */
    double elapsed = -1;
    __atomic_store_n(&counter, 0, __ATOMIC_SEQ_CST);
#pragma omp parallel num_threads(2)
    {
        if (omp_get_num_threads() == 2) {
            if (omp_get_thread_num() == 0) {
                const double start = seconds_now();
                for (int64_t i = 0; i < trips; ++i) {
                    __atomic_store_n(&counter, 2 * i + 1, __ATOMIC_RELEASE);
                    while (__atomic_load_n(&counter, __ATOMIC_ACQUIRE) != 2 * i + 2) {
                    }
                }
                elapsed = seconds_now() - start;
            } else {
                for (int64_t i = 0; i < trips; ++i) {
                    while (__atomic_load_n(&counter, __ATOMIC_ACQUIRE) != 2 * i + 1) {
                    }
                    __atomic_store_n(&counter, 2 * i + 2, __ATOMIC_RELEASE);
                }
            }
        }
    }
    return elapsed < 0 ? -1 : elapsed * 1e9 / (double)(trips > 0 ? trips : 1);
}
