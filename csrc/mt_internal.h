/* mt_internal.h — helpers shared by the kernel files (not part of the public API).
 *
 * Holds: the OpenMP guard, the thread number and team size, how many threads a kernel of a
 * given size should use, the run-time multi-versioning attribute for row kernels, and aligned
 * scratch allocation.
 */
#ifndef MT_INTERNAL_H
#define MT_INTERNAL_H

#include <stdint.h>
#include <stdlib.h>
#include "minitorch.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* Below this many elements a row kernel runs on one thread: waking a team costs more
 * than the work (a few microseconds). */
#define MT_PARALLEL_MIN_ELEMENTS 32768

/* This thread's number and its team's size inside a parallel region (0 and 1 without OpenMP). */
static inline int mt_thread_num(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

static inline int mt_team_size(void) {
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}

/* Threads to use for `work` elements of streaming work. */
static inline int mt_threads_for(int64_t work) {
    int nt = mt_get_num_threads();
    if (work < MT_PARALLEL_MIN_ELEMENTS) return 1;
    return nt < 1 ? 1 : nt;
}

/* Row kernels are plain C written so that GCC vectorizes them; target_clones compiles each
 * one for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and baseline x86-64 and picks at load
 * time (ifunc). The ISA levels matter: a plain "avx2" clone has no FMA, and "arch=haswell" is
 * matched by CPU model, i.e. never on AMD. GCC < 12 knows no ISA levels and gets "avx2".
 * Their hot exp loop dispatches on its own (fast_exp.c). Non-GCC or non-x86 compilers get the
 * single portable version. */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__)) && \
    !defined(MT_NO_TARGET_CLONES) && !defined(__clang__)
#if __GNUC__ >= 12
#define MT_ROW_KERNEL \
    __attribute__((noinline, target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MT_ROW_KERNEL __attribute__((noinline, target_clones("avx512f", "avx2", "default")))
#endif
#else
#define MT_ROW_KERNEL __attribute__((noinline))
#endif

/* Helpers called from MT_ROW_KERNEL functions must be inlined into each clone, or they are
 * compiled once for baseline x86-64 and the clone's AVX2/AVX-512 code never runs them. */
#if defined(__GNUC__)
#define MT_INLINE inline __attribute__((always_inline))
#else
#define MT_INLINE inline
#endif

/* Row sums use GCC vector types of this many bytes (one AVX2 register; the baseline clone
 * lowers them to SSE pairs). MT_VLOAD is an unaligned load into one. */
#define MT_VEC_BYTES 32
#define MT_VLOAD(v, p) __builtin_memcpy(&(v), (p), sizeof(v))

/* Row `r + 1` of a rows x cols array, for a row kernel to prefetch while it computes row r:
 * a row's first pass reads memory and its later passes run from cache, and one core keeps
 * DRAM busy only with many misses in flight, so the next row is asked for a line at a time
 * during the exp pass (C harness, builds alternating: softmax, log-softmax and cross-entropy
 * forward 11-28% faster on 16 MB inputs, log-softmax backward 5-40%, cross-entropy backward
 * ~5-20%; masked softmax 15% (float64) or the same (float32) as asking for the whole next row
 * up front, which layer norm, whose passes are short, still does). Rows longer than L1 gain
 * too: the prefetched lines wait in L2 (a 32000-class float32 cross-entropy row, 125 KiB, is
 * read from memory while the previous row's exps are computed: forward 25-33% faster,
 * backward 3-12%; float64 log-softmax on 32 KiB rows 20%). NULL after the last row, and for
 * rows above MT_PREFETCH_ROW_BYTES, two of which would crowd a 512 KiB L2. */
#define MT_PREFETCH_ROW_BYTES 131072
#define MT_NEXT_ROW(base, r, rows, cols)                                                   \
    ((r) + 1 < (rows) && (cols) * (int64_t)sizeof(*(base)) <= MT_PREFETCH_ROW_BYTES        \
         ? (base) + ((r) + 1) * (cols)                                                     \
         : NULL)

/* 64-byte aligned scratch (cache line / AVX-512 vector); NULL on failure or overflow. */
static inline void *mt_scratch_alloc(int64_t bytes) {
    if (bytes <= 0) bytes = 64;
    size_t rounded = ((size_t)bytes + 63u) & ~(size_t)63u;
    if ((int64_t)rounded < bytes) return NULL;
    return aligned_alloc(64, rounded);
}

#endif /* MT_INTERNAL_H */
