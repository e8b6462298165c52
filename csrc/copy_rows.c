/* copy_rows.c — copies a block of rows from one strided layout to another, byte for byte:
 *
 *   dst[i * dst_stride + k] = src[i * src_stride + k]      for i < rows, k < row_bytes
 *
 * (strides in bytes), and any other layout into a C-contiguous dst, element by element:
 *
 *   dst[n] = src[sum_d index_d(n) * src_strides[d]]     n in C order over shape[0 .. ndim)
 *
 * (mt_copy_strided: a transpose or permute made contiguous). The copies that numpy makes on one
 * core: cat and stack writing each input into its slice of the output, a slice of a gradient
 * becoming a leaf's .grad, contiguous(). One body for every dtype, a copy only moving bytes;
 * src and dst must not overlap (the Python layer copies only into arrays it has just made).
 * The reference bodies below are the formulas; the tuned ones (tuned/copy_rows_tuned.c) move
 * vectors or typed elements, their rows split over the threads.
 */
#include "mt_internal.h"

int tuned_copy_rows_portable(const unsigned char *src, int64_t src_stride, unsigned char *dst,
                             int64_t dst_stride, int64_t rows, int64_t row_bytes);
#ifdef MT_X86
int tuned_copy_rows_avx2(const unsigned char *src, int64_t src_stride, unsigned char *dst,
                         int64_t dst_stride, int64_t rows, int64_t row_bytes);
int tuned_copy_rows_avx512(const unsigned char *src, int64_t src_stride, unsigned char *dst,
                           int64_t dst_stride, int64_t rows, int64_t row_bytes);
#endif

int tuned_copy_strided(const unsigned char *src, unsigned char *dst, int64_t ndim,
                       const int64_t *shape, const int64_t *src_strides, int64_t itemsize);

int mt_copy_rows(const void *src, int64_t src_stride, void *dst, int64_t dst_stride,
                 int64_t rows, int64_t row_bytes) {
    if (rows < 0 || row_bytes < 0) return MT_ERR_ARGS;
    if (rows == 0 || row_bytes == 0) return 0;
    if (!src || !dst) return MT_ERR_ARGS;
    const unsigned char *s = src;
    unsigned char *d = dst;
    const int level = mt_get_isa();
#ifdef MT_X86
    if (level >= MT_ISA_AVX512)
        return tuned_copy_rows_avx512(s, src_stride, d, dst_stride, rows, row_bytes);
    if (level == MT_ISA_AVX2)
        return tuned_copy_rows_avx2(s, src_stride, d, dst_stride, rows, row_bytes);
#endif
    if (level > MT_ISA_REFERENCE)
        return tuned_copy_rows_portable(s, src_stride, d, dst_stride, rows, row_bytes);
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t k = 0; k < row_bytes; ++k) d[i * dst_stride + k] = s[i * src_stride + k];
    return 0;
}

int mt_copy_strided(const void *src, void *dst, int64_t ndim, const int64_t *shape,
                    const int64_t *src_strides, int64_t itemsize) {
    if (ndim < 0 || ndim > MT_COPY_MAX_DIMS || itemsize <= 0 || (ndim > 0 && (!shape || !src_strides)))
        return MT_ERR_ARGS;
    int64_t count = 1;
    for (int64_t d = 0; d < ndim; ++d) {
        if (shape[d] < 0) return MT_ERR_ARGS;
        count *= shape[d];
    }
    if (count == 0) return 0;
    if (!src || !dst) return MT_ERR_ARGS;
    if (mt_get_isa() > MT_ISA_REFERENCE)
        return tuned_copy_strided(src, dst, ndim, shape, src_strides, itemsize);
    const unsigned char *s = src;
    unsigned char *d = dst;
    for (int64_t n = 0; n < count; ++n) {
        int64_t offset = 0, rest = n;
        for (int64_t k = ndim - 1; k >= 0; --k) {
            offset += rest % shape[k] * src_strides[k];
            rest /= shape[k];
        }
        for (int64_t b = 0; b < itemsize; ++b) d[n * itemsize + b] = s[offset + b];
    }
    return 0;
}
