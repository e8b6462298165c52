/* tuned/dropout_tuned.c — dropout's factors (csrc/dropout.c) at the speed of the stores.
 *
 * The reference makes one 64-bit output per element and keeps half of it. Here each output is
 * made once and gives both of its elements: a loop over the pairs, written so that GCC
 * vectorizes it (the 64-bit multiplies are vpmullq at AVX-512, three 32-bit multiplies at
 * AVX2), split over threads in whole pairs. The bits, and so the factors, are the reference's.
 * Compiled once per ISA level and element type (each_isa.h); this file is its own body.
 */
#ifndef ISA
#include "mt_internal.h"
#include "splitmix64.h"
#define MT_BODY "tuned/dropout_tuned.c"
#include "each_isa.h"
#else

int V(tuned_dropout_keep)(T *keep, int64_t n, uint64_t seed, uint32_t threshold, T scale) {
    const int64_t pairs = n / 2;
    const int nt = mt_threads_for(n);
#pragma omp parallel for simd schedule(static) num_threads(nt)
    for (int64_t i = 0; i < pairs; ++i) {
        const uint64_t z = mt_splitmix64_at(seed, i);
        keep[2 * i] = (uint32_t)z >= threshold ? scale : 0;
        keep[2 * i + 1] = (uint32_t)(z >> 32) >= threshold ? scale : 0;
    }
    if (n % 2) keep[n - 1] = (uint32_t)mt_splitmix64_at(seed, pairs) >= threshold ? scale : 0;
    return 0;
}
#endif
