/* tuned/copy_rows_tuned.c — csrc/copy_rows.c's copy in vector loads and stores, over threads.
 *
 * Why not memcpy per row, as numpy does: inside a training step's stream of fresh arrays,
 * glibc's memcpy of 2 KiB rows ran at 0.6-0.8x of this loop on one thread (AVX2 Zen 3), and
 * numpy runs it on one core only. The rows (or, for long rows, 64 KiB pieces of them) are split
 * into one contiguous range per thread, so a thread copies the same part of a buffer from call
 * to call and finds it in its own caches. Compiled once per ISA level (the loop's vector width:
 * 16 bytes through memcpy at the portable level, 32 at AVX2, 64 at AVX-512); this file is its
 * own body.
 */
#ifndef COPY_ISA
#include <string.h>
#include "mt_internal.h"
#ifdef MT_X86
#include <immintrin.h>
#endif

#define MT_COPY_PIECE (64 << 10) /* bytes: a long row is split into pieces of this size */

/* mt_copy_strided's tuned body, one for every level (its loads are scalar, strided): the
 * rows of dst (its last dim) split into one range per thread, the start of a thread's first
 * row in src unravelled once and each next one's stepped to (an index per dim, carried as an
 * odometer: unravelling every row took a division per dim, a quarter of a 2 MiB fill's time);
 * a row's elements moved as integers of the item's size (a row contiguous in src: one memcpy;
 * a row of one value, src's last stride 0 as in an expanded gradient: a fill, in vectors). */
#define MT_COPY_STRIDED_ROW(TYPE)                                                   \
    if (step == 0) {                                                                \
        const TYPE value = *(const TYPE *)in;                                       \
        for (int64_t j = 0; j < cols; ++j) ((TYPE *)out)[j] = value;                \
    } else                                                                          \
        for (int64_t j = 0; j < cols; ++j)                                          \
            ((TYPE *)out)[j] = *(const TYPE *)(in + j * step)

int tuned_copy_strided(const unsigned char *src, unsigned char *dst, int64_t ndim,
                       const int64_t *shape, const int64_t *src_strides, int64_t itemsize) {
    const int64_t cols = ndim ? shape[ndim - 1] : 1, step = ndim ? src_strides[ndim - 1] : 0;
    const int64_t outer = ndim ? ndim - 1 : 0; /* the dims that number the rows */
    int64_t rows = 1;
    for (int64_t d = 0; d < outer; ++d) rows *= shape[d];
    int nt = mt_threads_for(rows * cols * itemsize / 4); /* bytes as float elements */
    if (nt > rows) nt = (int)rows;
#pragma omp parallel num_threads(nt)
    {
        const int64_t team = mt_team_size(), tid = mt_thread_num();
        const int64_t r0 = rows * tid / team, r1 = rows * (tid + 1) / team;
        int64_t index[MT_COPY_MAX_DIMS], offset = 0, rest = r0;
        for (int64_t d = outer - 1; d >= 0; --d) {
            index[d] = rest % shape[d];
            offset += index[d] * src_strides[d];
            rest /= shape[d];
        }
        for (int64_t i = r0; i < r1; ++i) {
            const unsigned char *in = src + offset;
            unsigned char *out = dst + i * cols * itemsize;
            if (step == itemsize) {
                memcpy(out, in, (size_t)(cols * itemsize));
            } else {
                switch (itemsize) {
                case 1: MT_COPY_STRIDED_ROW(uint8_t); break;
                case 2: MT_COPY_STRIDED_ROW(uint16_t); break;
                case 4: MT_COPY_STRIDED_ROW(uint32_t); break;
                case 8: MT_COPY_STRIDED_ROW(uint64_t); break;
                default:
                    for (int64_t j = 0; j < cols; ++j)
                        memcpy(out + j * itemsize, in + j * step, (size_t)itemsize);
                }
            }
            for (int64_t d = outer - 1; d >= 0; --d) { /* the next row's start */
                offset += src_strides[d];
                if (++index[d] < shape[d]) break;
                offset -= shape[d] * src_strides[d];
                index[d] = 0;
            }
        }
    }
    return 0;
}

#define COPY_ISA portable
#include "tuned/copy_rows_tuned.c"
#undef COPY_ISA

#ifdef MT_X86
#pragma GCC push_options
#pragma GCC target("arch=x86-64-v3")
#define COPY_ISA avx2
#include "tuned/copy_rows_tuned.c"
#undef COPY_ISA
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("arch=x86-64-v4")
#define COPY_ISA avx512
#include "tuned/copy_rows_tuned.c"
#undef COPY_ISA
#pragma GCC pop_options
#endif

#else
#define COPY_NAME(name) MT_CAT(name, COPY_ISA)

/* d[0 .. n) = s[0 .. n): four vectors a step, the rest by memcpy */
static inline void COPY_NAME(copy_span)(unsigned char *d, const unsigned char *s, int64_t n) {
#if defined(__AVX512F__)
    for (; n >= 256; n -= 256, s += 256, d += 256) {
        const __m512i v0 = _mm512_loadu_si512(s), v1 = _mm512_loadu_si512(s + 64),
                      v2 = _mm512_loadu_si512(s + 128), v3 = _mm512_loadu_si512(s + 192);
        _mm512_storeu_si512(d, v0);
        _mm512_storeu_si512(d + 64, v1);
        _mm512_storeu_si512(d + 128, v2);
        _mm512_storeu_si512(d + 192, v3);
    }
#elif defined(__AVX2__)
    for (; n >= 128; n -= 128, s += 128, d += 128) {
        const __m256i v0 = _mm256_loadu_si256((const __m256i *)s),
                      v1 = _mm256_loadu_si256((const __m256i *)(s + 32)),
                      v2 = _mm256_loadu_si256((const __m256i *)(s + 64)),
                      v3 = _mm256_loadu_si256((const __m256i *)(s + 96));
        _mm256_storeu_si256((__m256i *)d, v0);
        _mm256_storeu_si256((__m256i *)(d + 32), v1);
        _mm256_storeu_si256((__m256i *)(d + 64), v2);
        _mm256_storeu_si256((__m256i *)(d + 96), v3);
    }
#endif
    memcpy(d, s, (size_t)n);
}

int COPY_NAME(tuned_copy_rows)(const unsigned char *src, int64_t src_stride, unsigned char *dst,
                               int64_t dst_stride, int64_t rows, int64_t row_bytes) {
    const int64_t pieces = (row_bytes + MT_COPY_PIECE - 1) / MT_COPY_PIECE; /* per row */
    const int64_t units = rows * pieces;
    int nt = mt_threads_for(rows * row_bytes / 4); /* bytes as float elements */
    if (nt > units) nt = (int)units;
#pragma omp parallel num_threads(nt)
    {
        const int64_t team = mt_team_size(), tid = mt_thread_num();
        const int64_t u1 = units * (tid + 1) / team;
        for (int64_t u = units * tid / team; u < u1; ++u) {
            const int64_t i = u / pieces, k = u % pieces * MT_COPY_PIECE;
            const int64_t n = row_bytes - k < MT_COPY_PIECE ? row_bytes - k : MT_COPY_PIECE;
            COPY_NAME(copy_span)(dst + i * dst_stride + k, src + i * src_stride + k, n);
        }
    }
    return 0;
}
#undef COPY_NAME
#endif
