/* ask_ahead.c — memory the next kernels will read, asked for while a GEMM computes (1 thread).
 *
 * A GEMM of a training step runs at the FMA units' peak with the memory bus idle, and the
 * memory-bound kernels after it (a residual add, a layer norm, the ReLU mask's backward) then
 * wait for operands last touched long before, and for their fresh outputs' reads for
 * ownership. A captured step knows those operands (backends/tape_prefetch.py): before a GEMM
 * it hands them to mt_ask_ahead, and the GEMM spreads prefetches of them between its tiles
 * (mt_ahead_step), the lines in order, a share after each tile. A prefetch never faults and
 * changes no value; the ranges are forgotten when the GEMM returns. Only on one thread: with
 * a team, a line prefetched into one core's cache is then wanted by the other core, and the
 * kernels after the GEMM ran slower, not faster.
 */
#include "mt_internal.h"

static const char *ahead_first[MT_AHEAD_MAX]; /* each range's first cache line */
static int64_t ahead_lines[MT_AHEAD_MAX];
static int64_t ahead_ranges, ahead_total; /* ranges, and their lines in all */

/* The lines not yet asked for: from line `line` of range `range`, per_step after each tile. */
static struct {
    int64_t range, line, left, per_step;
} cursor;

int mt_ask_ahead(const void *const *starts, const int64_t *bytes, int64_t n) {
    if (n < 0 || n > MT_AHEAD_MAX || (n > 0 && (!starts || !bytes))) return MT_ERR_ARGS;
    for (int64_t i = 0; i < n; ++i)
        if (bytes[i] < 0 || (bytes[i] > 0 && !starts[i])) return MT_ERR_ARGS;
    mt_ahead_forget();
    if (mt_get_num_threads() > 1) return 0;
    for (int64_t i = 0; i < n; ++i) {
        if (bytes[i] == 0) continue;
        const uintptr_t first = (uintptr_t)starts[i] & ~(uintptr_t)63;
        const uintptr_t end = (uintptr_t)starts[i] + (uintptr_t)bytes[i];
        ahead_first[ahead_ranges] = (const char *)first;
        ahead_lines[ahead_ranges] = (int64_t)((end - first + 63) / 64);
        ahead_total += ahead_lines[ahead_ranges++];
    }
    return 0;
}

void mt_ahead_begin(int64_t steps) {
    cursor.range = cursor.line = 0;
    cursor.left = ahead_total;
    cursor.per_step = steps > 0 ? (ahead_total + steps - 1) / steps : ahead_total;
}

void mt_ahead_step(void) {
    if (cursor.left <= 0) return; /* (nothing asked: no write, so teams may call it too) */
    int64_t count = cursor.per_step < cursor.left ? cursor.per_step : cursor.left;
    cursor.left -= count;
    while (count > 0) {
        const char *first = ahead_first[cursor.range];
        int64_t here = ahead_lines[cursor.range] - cursor.line;
        if (here > count) here = count;
        for (int64_t q = 0; q < here; ++q)
            __builtin_prefetch(first + (cursor.line + q) * 64, 0, 2); /* T1: into L2 */
        cursor.line += here;
        count -= here;
        if (cursor.line == ahead_lines[cursor.range]) {
            cursor.range++;
            cursor.line = 0;
        }
    }
}

void mt_ahead_forget(void) {
    ahead_ranges = ahead_total = 0;
    cursor.left = 0;
}
