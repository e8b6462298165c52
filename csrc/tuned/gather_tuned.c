/* tuned/gather_tuned.c — gathering along the last dim with the CPU's vector gathers.
 *
 * Why it exists: gather.c's plain loop loads one 8-byte index, checks it and moves one element
 * per iteration; along the last dim (torch.gather(x, -1, index), the common case) the indices
 * are contiguous, so AVX-512 can check 8 of them at once with vector compares and fetch their
 * elements with one gather instruction, masked so that an index outside the row is never
 * read: about 10% less time than the plain loop on Zen 4 at 1 and 2 threads (the loop is
 * near the memory's pace, 12 bytes of index and element per element). Only 4- and 8-byte
 * elements have one (the gather instructions' widths); AVX2's 4-lane gathers did not beat the
 * plain loop, so the portable and AVX2 levels and other widths run gather.c's loop.
 */
#include "mt_internal.h"
#include "gather_tuned.h"

#ifdef MT_X86
#include <immintrin.h>

/* The elements [j, count) one at a time, as gather.c's plain loop does. */
#define MT_GATHER_TAIL                                         \
    for (; j < count; ++j) {                                   \
        int64_t k = index[j];                                  \
        if (k < 0) k += size;                                  \
        if (k < 0 || k >= size) {                              \
            bad = 1;                                           \
            out[j] = 0;                                        \
        } else {                                               \
            out[j] = row[k];                                   \
        }                                                      \
    }

__attribute__((target("avx512f"))) static int gather_row_avx512_w32(
        const void *row_, const int64_t *index, void *out_, int64_t count, int64_t size) {
    const uint32_t *row = row_;
    uint32_t *out = out_;
    const __m512i vsize = _mm512_set1_epi64(size), zero = _mm512_setzero_si512();
    int bad = 0;
    int64_t j = 0;
    for (; j + 8 <= count; j += 8) {
        __m512i k = _mm512_loadu_si512(index + j);
        k = _mm512_mask_add_epi64(k, _mm512_cmplt_epi64_mask(k, zero), k, vsize);
        const __mmask8 inside = _mm512_cmplt_epu64_mask(k, vsize);  /* unsigned: k < 0 fails */
        bad |= inside != 0xFF;
        _mm256_storeu_si256((__m256i *)(out + j),
                            _mm512_mask_i64gather_epi32(_mm256_setzero_si256(), inside, k,
                                                        (const void *)row, 4));
    }
    MT_GATHER_TAIL
    return bad;
}

__attribute__((target("avx512f"))) static int gather_row_avx512_w64(
        const void *row_, const int64_t *index, void *out_, int64_t count, int64_t size) {
    const uint64_t *row = row_;
    uint64_t *out = out_;
    const __m512i vsize = _mm512_set1_epi64(size), zero = _mm512_setzero_si512();
    int bad = 0;
    int64_t j = 0;
    for (; j + 8 <= count; j += 8) {
        __m512i k = _mm512_loadu_si512(index + j);
        k = _mm512_mask_add_epi64(k, _mm512_cmplt_epi64_mask(k, zero), k, vsize);
        const __mmask8 inside = _mm512_cmplt_epu64_mask(k, vsize);
        bad |= inside != 0xFF;
        _mm512_storeu_si512(out + j, _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), inside,
                                                                 k, (const void *)row, 8));
    }
    MT_GATHER_TAIL
    return bad;
}

#endif

mt_gather_row_fn mt_tuned_gather_row(int isa, int64_t itemsize) {
#ifdef MT_X86
    if (isa >= MT_ISA_AVX512 && itemsize == 4) return gather_row_avx512_w32;
    if (isa >= MT_ISA_AVX512 && itemsize == 8) return gather_row_avx512_w64;
#endif
    (void)isa;
    (void)itemsize;
    return NULL;
}
