/* dropout.c — dropout's factors, drawn from a counter-based random stream, for float and
 * double.
 *
 *   z_i    = mix(seed + (i + 1) * 0x9E3779B97F4A7C15)     64 bits for elements 2i and 2i + 1
 *   u_j    = the low 32 bits of z_(j/2) for even j, the high 32 bits for odd j
 *   keep_j = scale if u_j >= threshold, else 0
 *
 * z_0, z_1, ... is the splitmix64 stream started at `seed` (splitmix64.h). With threshold =
 * round(p 2^32) each element is dropped with probability p; scale = 1 / (1 - p) keeps the
 * expected value. Why counter-based: element j's draw depends on (seed, j) alone, so threads
 * can make any slice of the mask and a mask is the same on 1 or 2 threads. The caller draws
 * the seed from the global generator, so manual_seed still fixes every mask.
 * The reference body below is the formula, one element at a time; the tuned one (tuned/
 * dropout_tuned.c) makes the same bits in vectors, over threads. This file is its own body,
 * compiled once per element type T (each_dtype.h).
 */
#ifndef T
#define MT_BODY "dropout.c"
#include "each_dtype.h"

#else
#include "tuned/tuned.h"
#include "splitmix64.h"

int F(mt_dropout_keep)(T *keep, int64_t n, uint64_t seed, uint32_t threshold, T scale) {
    if (n < 0 || (n > 0 && !keep)) return MT_ERR_ARGS;
    MT_RUN_TUNED(tuned_dropout_keep, keep, n, seed, threshold, scale);
    for (int64_t j = 0; j < n; ++j) {
        uint64_t z = mt_splitmix64_at(seed, j / 2);
        uint32_t u = (uint32_t)(j % 2 == 0 ? z : z >> 32);
        keep[j] = u >= threshold ? scale : 0;
    }
    return 0;
}
#endif
