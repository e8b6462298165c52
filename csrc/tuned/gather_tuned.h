/* tuned/gather_tuned.h — the vector gathers of one row, for gather.c's case of the last dim.
 *
 * A row gather sets out[j] = row[index[j]] for j < count, an index below 0 counting from the
 * end of the row's `size` elements; it checks every index before it reads and returns 1 if one
 * was outside [-size, size) (its out[j] is then 0), else 0. The element width is the caller's
 * (the pointers are untyped: a gather only moves bits).
 */
#ifndef MT_GATHER_TUNED_H
#define MT_GATHER_TUNED_H

#include <stdint.h>

typedef int (*mt_gather_row_fn)(const void *row, const int64_t *index, void *out, int64_t count,
                                int64_t size);

/* The tuned row gather for ISA level `isa` and elements of `itemsize` bytes, or NULL where that
 * level has none (gather.c then runs its plain loop). */
mt_gather_row_fn mt_tuned_gather_row(int isa, int64_t itemsize);

#endif
