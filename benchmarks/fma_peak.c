/* fma_peak.c — the benchmark's yardstick for GEMM: how many FLOP/s this machine's FMA units
 * deliver, so that bench_kernels.py can print GEMM speed as % of peak. Not part of the library:
 * bench_kernels.py compiles it on first use.
 *
 * The peak loop runs 12 independent accumulator chains (enough to hide FMA latency on two
 * pipes), with the widest vectors the CPU supports.
 */
#include <stdint.h>
#include <time.h>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define MT_X86 1
#endif

/* 3: AVX-512F, 2: AVX2 + FMA, 1: neither */
static int widest_fma(void) {
#ifdef MT_X86
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 2;
#endif
    return 1;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define FMA12(FMA, x, y)                                                                \
    a0 = FMA(a0, x, y); a1 = FMA(a1, x, y); a2 = FMA(a2, x, y); a3 = FMA(a3, x, y);     \
    a4 = FMA(a4, x, y); a5 = FMA(a5, x, y); a6 = FMA(a6, x, y); a7 = FMA(a7, x, y);     \
    a8 = FMA(a8, x, y); a9 = FMA(a9, x, y); a10 = FMA(a10, x, y); a11 = FMA(a11, x, y);

/* Returns FLOPs done (2 per lane per FMA); the sink keeps the loop from being removed. */
#define DEFINE_PEAK_LOOP(NAME, TARGET, V, LANES, SET1, FMA, ADD, TOSCALAR, T)           \
    __attribute__((target(TARGET))) static double NAME(int64_t iters, volatile T *sink) { \
        V a0 = SET1(0.1), a1 = SET1(0.2), a2 = SET1(0.3), a3 = SET1(0.4), a4 = SET1(0.5); \
        V a5 = SET1(0.6), a6 = SET1(0.7), a7 = SET1(0.8), a8 = SET1(0.9), a9 = SET1(1.0); \
        V a10 = SET1(1.1), a11 = SET1(1.2), x = SET1(0.999999), y = SET1(1e-7);          \
        for (int64_t i = 0; i < iters; ++i) {                                            \
            FMA12(FMA, x, y)                                                             \
            __asm__ volatile("" : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3));               \
        }                                                                                \
        V s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));         \
        s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));                                      \
        *sink = TOSCALAR(s);                                                             \
        return 2.0 * LANES * 12.0 * (double)iters;                                       \
    }

#ifdef MT_X86
DEFINE_PEAK_LOOP(peak_avx2_f32, "avx2,fma", __m256, 8, _mm256_set1_ps, _mm256_fmadd_ps,
                 _mm256_add_ps, _mm256_cvtss_f32, float)
DEFINE_PEAK_LOOP(peak_avx2_f64, "avx2,fma", __m256d, 4, _mm256_set1_pd, _mm256_fmadd_pd,
                 _mm256_add_pd, _mm256_cvtsd_f64, double)
DEFINE_PEAK_LOOP(peak_avx512_f32, "avx512f", __m512, 16, _mm512_set1_ps, _mm512_fmadd_ps,
                 _mm512_add_ps, _mm512_cvtss_f32, float)
DEFINE_PEAK_LOOP(peak_avx512_f64, "avx512f", __m512d, 8, _mm512_set1_pd, _mm512_fmadd_pd,
                 _mm512_add_pd, _mm512_cvtsd_f64, double)
#endif

static double peak_generic(int64_t iters, volatile double *sink) {
    double a[8] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8};
    for (int64_t i = 0; i < iters; ++i)
        for (int j = 0; j < 8; ++j) a[j] = a[j] * 0.999999 + 1e-7;
    *sink = a[0] + a[7];
    return 2.0 * 8.0 * (double)iters;
}

static double run_peak(int is_f64, int64_t iters) {
    volatile float sink32;
    volatile double sink64;
    int isa = widest_fma();
#ifdef MT_X86
    if (isa == 3)
        return is_f64 ? peak_avx512_f64(iters, &sink64) : peak_avx512_f32(iters, &sink32);
    if (isa == 2)
        return is_f64 ? peak_avx2_f64(iters, &sink64) : peak_avx2_f32(iters, &sink32);
#endif
    (void)isa; (void)sink32;
    return peak_generic(iters, &sink64);
}

/* GFLOP/s of `num_threads` threads each running `iterations` rounds of 12 vector FMAs. */
static double fma_peak(int is_f64, int num_threads, int64_t iterations) {
    if (num_threads < 1) num_threads = 1;
    if (iterations < 1) iterations = 1;
    run_peak(is_f64, iterations / 10 + 1); /* warm up clocks and page in the code */
    double flops = 0;
    double t0 = seconds_now();
#pragma omp parallel num_threads(num_threads) reduction(+ : flops)
    flops += run_peak(is_f64, iterations);
    double t1 = seconds_now();
    return flops / (t1 - t0) * 1e-9;
}

double fma_peak_gflops_f32(int num_threads, int64_t iterations) {
    return fma_peak(0, num_threads, iterations);
}

double fma_peak_gflops_f64(int num_threads, int64_t iterations) {
    return fma_peak(1, num_threads, iterations);
}
