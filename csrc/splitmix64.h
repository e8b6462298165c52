/* splitmix64.h — splitmix64's output for a position of its stream, the random bits of dropout
 * (dropout.c, tuned/dropout_tuned.c): output i of the stream started at `seed` is
 * mix(seed + (i + 1) * gamma), with mix a bijection of 64-bit words that spreads every input
 * bit (Steele, Lea and Flood's SplittableRandom; the stream passes BigCrush).
 */
#ifndef MT_SPLITMIX64_H
#define MT_SPLITMIX64_H
#include <stdint.h>

static inline uint64_t mt_splitmix64_at(uint64_t seed, int64_t i) {
    uint64_t z = seed + (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
#endif
