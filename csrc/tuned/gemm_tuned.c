/* tuned/gemm_tuned.c — the GotoBLAS/BLIS GEMM driver, written once for T = float and double.
 *
 * The reference triple loop (csrc/gemm.c) reads B down its columns and runs at a few percent
 * of the FMA units' peak; this driver packs blocks of A and B so that each level of the cache
 * holds what the level below reuses, and hands register tiles to the SIMD micro-kernels of
 * gemm_microkernels.c (chosen by the ISA level). Loop nest, outermost first:
 *   jc over N in NC columns       (B panel kc x nc lives in L3)
 *     pc over K in KC             (pack B panel into NR-column slivers, shared by threads;
 *                                  a thread alone packs each as its first A block reaches it)
 *       ic over M in MC rows      (each thread packs its own A block into MR-row slivers, L2;
 *                                  on AVX-512 a row-major A's full slivers are read in place,
 *                                  and in float a transposed A's of at least N rows)
 *         jr over NR slivers      (B sliver stays in L1)
 *           ir over MR slivers    -> micro-kernel on a MR x NR tile of C
 * Threads take the (ic block x group of jr slivers) work items first come, first served; they
 * share the packed B, packed into two buffers in turn (one barrier per panel).
 * Tiles at the M/N edges are computed into a small temporary tile and copied out, so the
 * micro-kernel never touches memory outside C.
 * Products small enough for L1 (e.g. 32x32x32 attention heads) skip the blocking and most of
 * the packing: gemm_small runs the strided micro-kernel on the operands where they lie. A few
 * rows times a transposed, wide B (a decoding step's x Wᵀ) run as their transpose, W in place.
 * This file is its own body, compiled once per element type (each_dtype.h).
 */
#ifndef T
#include <string.h>
#include "gemm_microkernels.h"
#define MT_BODY "tuned/gemm_tuned.c"
#include "each_dtype.h"

#else
#define PLAN F(mt_gemm_plan)

/* Everything one GEMM call needs, except the per-thread scratch. */
typedef struct {
    PLAN plan;
    int trans_a, trans_b;
    int64_t m, n, k;
    T alpha, beta;
    int64_t lda, ldb, ldc;
    int64_t mc, kc;   /* block sizes balanced for this problem (mc: the largest A block) */
    int64_t blocks_m; /* A blocks per K block: each gets an equal share (+-1) of MR slivers */
    const T *bias;    /* NULL, or a row added to every row of C once its sums are done */
    int relu;         /* with bias: then C = max(C, 0) */
    T *a_sums;        /* NULL, or (transposed A) where op(A)'s row sums are added as A is packed */
    int whole_k;      /* gemm_small's tiles over all of K, though not small (whole_k_in_place) */
} F(gemm_problem);
#define PROBLEM F(gemm_problem)

/* Pack op(A)[i0:i0+mc, p0:p0+kc] into MR-row slivers, zero-padding the last sliver.
 * Full slivers of row-major A read MR rows side by side and write each k step's MR values
 * contiguously; MR is a compile-time constant there (6 or 4) so the copy is unrolled. */
#define MT_PACK_A_FULL_SLIVER(MR)                                                   \
    do {                                                                            \
        const T *src[MR];                                                           \
        for (int r = 0; r < MR; ++r) src[r] = a + (i0 + s + r) * pr->lda + p0;      \
        for (int64_t p = 0; p < kc; ++p)                                            \
            for (int r = 0; r < MR; ++r) ap[p * MR + r] = src[r][p];                \
    } while (0)

/* Transposed A (stored k x m, e.g. the xᵀ of a weight gradient): op(A)'s column p is the
 * stored row p. Walking sliver by sliver reads MR values per stored row with a stride of lda: for
 * lda = 512 floats (2 KiB) all those lines fall into 2 of the 64 L1 sets, which starves the kernel.
 * Walking row by row instead scatters every row over all the slivers, kc*MR elements apart: one
 * store per page. So take 8 stored rows at a time (at most a few KiB, L1-resident) and write each
 * sliver's 8*MR contiguous values from them. sums not NULL: each stored row is also added into
 * sums[0:mc] while in L1, rows in order (op(A)'s row sums: a Linear's bias gradient). */
#define MT_PACK_A_T_ROWS 8
static void F(pack_a_transposed)(const PROBLEM *pr, const T *a, int64_t i0,
                                 int64_t mc, int64_t p0, int64_t kc,
                                 T *restrict ap, T *restrict sums) {
    const int mr = pr->plan.mr;
    const int64_t full = mc / mr, tail = mc - full * mr;
    for (int64_t q0 = 0; q0 < kc; q0 += MT_PACK_A_T_ROWS) {
        const int64_t q1 = q0 + MT_PACK_A_T_ROWS < kc ? q0 + MT_PACK_A_T_ROWS : kc;
        const T *src = a + (p0 + q0) * pr->lda + i0;
        for (int64_t s = 0; s < full; ++s) {
            T *dst = ap + s * mr * kc + q0 * mr;
            if (mr == 6) {
                for (int64_t q = 0; q < q1 - q0; ++q)
                    for (int r = 0; r < 6; ++r) dst[q * 6 + r] = src[q * pr->lda + s * 6 + r];
            } else if (mr == 8) { /* one vector move per stored row */
                for (int64_t q = 0; q < q1 - q0; ++q)
                    for (int r = 0; r < 8; ++r) dst[q * 8 + r] = src[q * pr->lda + s * 8 + r];
            } else {
                for (int64_t q = 0; q < q1 - q0; ++q)
                    for (int r = 0; r < mr; ++r) dst[q * mr + r] = src[q * pr->lda + s * mr + r];
            }
        }
        if (tail) {
            T *dst = ap + full * mr * kc + q0 * mr;
            for (int64_t q = 0; q < q1 - q0; ++q) {
                int64_t r = 0;
                for (; r < tail; ++r) dst[q * mr + r] = src[q * pr->lda + full * mr + r];
                for (; r < mr; ++r) dst[q * mr + r] = 0;
            }
        }
        if (sums)
            pr->plan.sum_rows(src, pr->lda, q1 - q0, mc, sums);
    }
}
#undef MT_PACK_A_T_ROWS

static void F(pack_a)(const PROBLEM *pr, const T *a, int64_t i0, int64_t mc,
                      int64_t p0, int64_t kc, T *restrict ap, T *restrict sums) {
    const int mr = pr->plan.mr;
    if (pr->trans_a) {
        F(pack_a_transposed)(pr, a, i0, mc, p0, kc, ap, sums);
        return;
    }
    for (int64_t s = 0; s < mc; s += mr) {
        int64_t rows = mc - s < mr ? mc - s : mr;
        if (rows == mr && pr->plan.pack_a_rows) {
            pr->plan.pack_a_rows(kc, a + (i0 + s) * pr->lda + p0, pr->lda, ap);
        } else if (rows == 6 && mr == 6) {
            MT_PACK_A_FULL_SLIVER(6);
        } else if (rows == 8 && mr == 8) {
            MT_PACK_A_FULL_SLIVER(8);
        } else if (rows == 4 && mr == 4) {
            MT_PACK_A_FULL_SLIVER(4);
        } else {
            for (int64_t r = 0; r < rows; ++r) {
                const T *src = a + (i0 + s + r) * pr->lda + p0;
                for (int64_t p = 0; p < kc; ++p) ap[p * mr + r] = src[p];
            }
        }
        for (int64_t r = rows; r < mr; ++r)
            for (int64_t p = 0; p < kc; ++p) ap[p * mr + r] = 0;
        ap += (int64_t)mr * kc;
    }
}
#undef MT_PACK_A_FULL_SLIVER

/* Pack sliver `s` (columns j0+s*NR ..) of op(B)[p0:p0+kc, j0:j0+nc], zero-padded. */
static void F(pack_b_sliver)(const PROBLEM *pr, const T *b, int64_t p0, int64_t kc,
                             int64_t j0, int64_t nc, int64_t s, T *restrict bp) {
    const int nr = pr->plan.nr;
    int64_t col0 = s * nr;
    int64_t cols = nc - col0 < nr ? nc - col0 : nr;
    bp += col0 * kc;
    if (!pr->trans_b && cols == nr && pr->plan.pack_b_rows) {
        pr->plan.pack_b_rows(kc, b + p0 * pr->ldb + j0 + col0, pr->ldb, bp);
    } else if (!pr->trans_b && cols == nr && (nr == 8 || nr == 16 || nr == 32)) {
        /* full sliver: fixed-length row copies the compiler turns into vector moves */
        const T *src = b + p0 * pr->ldb + j0 + col0;
        const int64_t ldb = pr->ldb;
#define MT_COPY_ROWS(NR)                                                          \
        for (int64_t p = 0; p < kc; ++p)                                          \
            for (int j = 0; j < NR; ++j) bp[p * NR + j] = src[p * ldb + j];
        if (nr == 8) { MT_COPY_ROWS(8) } else if (nr == 16) { MT_COPY_ROWS(16) } else { MT_COPY_ROWS(32) }
#undef MT_COPY_ROWS
    } else if (!pr->trans_b) {
        for (int64_t p = 0; p < kc; ++p) {
            const T *src = b + (p0 + p) * pr->ldb + j0 + col0;
            for (int64_t j = 0; j < cols; ++j) bp[p * nr + j] = src[j];
            for (int64_t j = cols; j < nr; ++j) bp[p * nr + j] = 0;
        }
    } else { /* transposed; cols < nr: e.g. attention scores' Kᵀ with fewer keys than NR */
        pr->plan.pack_b_transposed(kc, b + (j0 + col0) * pr->ldb + p0, pr->ldb, bp, (int)cols);
    }
}

/* Ask for rows [r0, r1) of `width` values, ld apart from `first`, in L2. */
static void F(prefetch_rows)(const T *first, int64_t r0, int64_t r1, int64_t ld,
                             int64_t width) {
    for (int64_t r = r0; r < r1; ++r) {
        const T *row = first + r * ld;
        for (int64_t j = 0; j < width; j += 64 / (int64_t)sizeof(T))
            __builtin_prefetch(row + j, 0, 2);
        __builtin_prefetch(row + width - 1, 0, 2);
    }
}

/* Ask for part `part` of `parts` of sliver s's source in op(B)[p0:p0+kc, j0:j0+nc], so that
 * packing the sliver finds it in L2: while the sliver before it is multiplied, a B fresh from
 * memory (a weight gradient's forward activation) then costs no wait of its own. */
static void F(prefetch_b_sliver)(const PROBLEM *pr, const T *b, int64_t p0, int64_t kc,
                                 int64_t j0, int64_t nc, int64_t s, int64_t part,
                                 int64_t parts) {
    const int64_t col0 = s * pr->plan.nr;
    const int64_t cols = nc - col0 < pr->plan.nr ? nc - col0 : pr->plan.nr;
    /* stored rows: kc rows of cols values, or (transposed) cols rows of kc values */
    const int64_t rows = pr->trans_b ? cols : kc, width = pr->trans_b ? kc : cols;
    const T *first = pr->trans_b ? b + (j0 + col0) * pr->ldb + p0 : b + p0 * pr->ldb + j0 + col0;
    F(prefetch_rows)(first, rows * part / parts, rows * (part + 1) / parts, pr->ldb, width);
}

/* Ask for C[0:rows, 0:cols] (rows ldc apart) with intent to write (plan.prefetch_c). */
static void F(prefetch_c_tile)(const T *c, int64_t ldc, int64_t rows, int64_t cols) {
#ifdef MT_X86
    for (int64_t r = 0; r < rows; ++r) {
        const T *row = c + r * ldc;
        for (int64_t q = 0; q < cols; q += 64 / (int64_t)sizeof(T))
            __asm__ volatile("prefetchw (%0)" ::"r"(row + q));
        __asm__ volatile("prefetchw (%0)" ::"r"(row + cols - 1));
    }
#else
    (void)c, (void)ldc, (void)rows, (void)cols;
#endif
}

/* C[0:rows, 0:cols] = alpha * edge + beta * C (C not read when beta is 0): an edge tile the
 * micro-kernel wrote to `edge` (rows nr apart), a row at a time in vectors (the attention
 * scores of fewer keys than NR are all edge tiles). */
static void F(store_edge)(const T *restrict edge, int nr, T *restrict c, int64_t ldc,
                          int64_t rows, int64_t cols, T alpha, T beta) {
    for (int64_t r = 0; r < rows; ++r) {
        const T *e = edge + r * nr;
        T *cr = c + r * ldc;
        if (beta == 0) {
#pragma omp simd
            for (int64_t q = 0; q < cols; ++q) cr[q] = alpha * e[q];
        } else {
#pragma omp simd
            for (int64_t q = 0; q < cols; ++q) cr[q] = alpha * e[q] + beta * cr[q];
        }
    }
}

/* C[0:rows, 0:cols] += bias[0:cols] on every row, then ReLU if relu, for an edge tile (a full
 * one gets them in the micro-kernel's registers): rounded as the passes of arith's add and
 * bias_relu.c would round them (the product in T, then the sum, then z < 0 ? 0 : z, which keeps
 * NaN and -0). */
static void F(add_bias_tile)(T *c, int64_t ldc, int64_t rows, int64_t cols, const T *bias,
                             int relu) {
    for (int64_t r = 0; r < rows; ++r) {
        T *cr = c + r * ldc;
        if (relu) {
#pragma omp simd
            for (int64_t q = 0; q < cols; ++q) {
                T z = cr[q] + bias[q];
                cr[q] = z < 0 ? 0 : z;
            }
        } else {
#pragma omp simd
            for (int64_t q = 0; q < cols; ++q) cr[q] = cr[q] + bias[q];
        }
    }
}

/* C[ic:ic+mc, jc+s0*NR : ...] for B slivers [s0, s1) of the packed panel. A's full row tiles
 * are read from a_rows (a row-major A's [ic:, pc:] where it lies, rows lda apart) when it is
 * not NULL, else from the packed block ap; a last partial row tile is always packed, at the
 * start of ap.
 * b_src not NULL: the panel is not packed yet; each sliver is packed from b_src (op(B)'s
 * [pc:pc+kc, jc:jc+nc]) as its tiles come, the next one's source asked for meanwhile.
 * last_k: this is the last K block, so C's tiles are done (the bias goes in). */
static void F(macro_kernel)(const PROBLEM *pr, const T *a_rows, const T *ap, T *bp,
                            const T *b_src, T *c, int64_t ic, int64_t mc, int64_t jc,
                            int64_t nc, int64_t pc, int64_t kc, int64_t s0, int64_t s1, T beta,
                            int last_k) {
    const int mr = pr->plan.mr, nr = pr->plan.nr;
    const int64_t ldc = pr->ldc, full_rows = mc / mr * mr, tiles = (mc + mr - 1) / mr;
    T edge[MT_GEMM_MAX_MR * MT_GEMM_MAX_NR] __attribute__((aligned(64)));
    for (int64_t s = s0; s < s1; ++s) {
        int64_t j = s * nr;
        int64_t cols = nc - j < nr ? nc - j : nr;
        const T *bs = bp + j * kc;
        if (b_src) F(pack_b_sliver)(pr, b_src, pc, kc, jc, nc, s, bp);
        for (int64_t i = 0; i < mc; i += mr) {
            if (b_src && s + 1 < s1)
                F(prefetch_b_sliver)(pr, b_src, pc, kc, jc, nc, s + 1, i / mr, tiles);
            if (a_rows && s == s0 && i + 2 * mr <= full_rows) /* next row tile */
                F(prefetch_rows)(a_rows, i + mr, i + 2 * mr, pr->lda, kc);
            int64_t rows = mc - i < mr ? mc - i : mr;
            T *ct = c + (ic + i) * ldc + jc + j;
            if (pr->plan.prefetch_c && i + mr < mc) /* the next tile's C */
                F(prefetch_c_tile)(ct + mr * ldc, ldc, mc - i - mr < mr ? mc - i - mr : mr, cols);
            else if (pr->plan.prefetch_c && s + 1 < s1)
                F(prefetch_c_tile)(c + ic * ldc + jc + j + nr, ldc, mc < mr ? mc : mr,
                                   nc - j - nr < nr ? nc - j - nr : nr);
            int full = rows == mr && cols == nr;
            T *dst = full ? ct : edge;
            int64_t ld_dst = full ? ldc : nr;
            T alpha = full ? pr->alpha : (T)1, beta_dst = full ? beta : (T)0;
            const T *bias = last_k && pr->bias ? pr->bias + jc + j : NULL;
            const T *tile_bias = full ? bias : NULL;
            if (a_rows && i < full_rows)
                pr->plan.strided_kernel(kc, a_rows + i * pr->lda, pr->lda, 1, bs, nr, dst,
                                        ld_dst, alpha, beta_dst, tile_bias, pr->relu);
            else
                pr->plan.kernel(kc, ap + (a_rows ? 0 : i * kc), bs, dst, ld_dst, alpha,
                                beta_dst, tile_bias, pr->relu);
            if (!full) {
                F(store_edge)(edge, nr, ct, ldc, rows, cols, pr->alpha, beta);
                if (bias) F(add_bias_tile)(ct, ldc, rows, cols, bias, pr->relu);
            }
            mt_ahead_step(); /* (a share of the next kernels' memory: ask_ahead.c) */
        }
    }
}

/* What one thread of a team (or a thread alone, nthr 1) keeps to share out the work of its
 * GEMM calls. The team packs B panels into bpack[0] and bpack[1] in turn, so that one barrier
 * per panel suffices: a thread packing panel t+1 has passed panel t's barrier, which every
 * thread reached after it was done with panel t-1, the one whose buffer it overwrites. */
typedef struct {
    T *bpack[2];           /* shared packed B panels (alone: the same buffer twice) */
    int64_t *next_item;    /* two shared work counters: [MT_PACKING] and [MT_MULTIPLYING] */
    int64_t panels;        /* B panels packed so far, over the calls */
    int64_t items_before[2]; /* claims on each counter made before the current phase */
    int nthr;
} F(gemm_team);
#define TEAM F(gemm_team)

/* Item i of a phase of `count` work items for this thread, or -1 once all are taken. Items go
 * first come, first served, so that a thread the OS sets aside for a while (two threads on a
 * busy 2-core machine) holds up the other by at most one item at the next barrier, not by half
 * the phase. Every thread stops after its first claim past the end, so a phase takes exactly
 * count + nthr claims and all threads agree where the next phase's items start. Packing panel
 * t+1 may overlap multiplying panel t (no barrier between them), so each kind of phase has its
 * own counter. */
#define MT_PACKING 0
#define MT_MULTIPLYING 1
static int64_t F(take_item)(TEAM *team, int phase, int64_t count) {
    int64_t claim, *next = team->next_item + phase;
    if (team->nthr == 1) {
        claim = (*next)++;
    } else {
#pragma omp atomic capture
        claim = (*next)++;
    }
    int64_t i = claim - team->items_before[phase];
    if (i < count) return i;
    team->items_before[phase] += count + team->nthr;
    return -1;
}

/* One matrix product, run by every thread of a team with the same arguments (a thread alone,
 * nthr 1, waits at no barrier). */
static void F(gemm_tiles)(const PROBLEM *pr, const T *a, const T *b, T *c, T *apack,
                          TEAM *team) {
    const int nr = pr->plan.nr;
    const int64_t m = pr->m, n = pr->n, k = pr->k;
    const int64_t n_ic = pr->blocks_m, slivers_m = (m + pr->plan.mr - 1) / pr->plan.mr;
    /* (A transposed is always packed: its in-place tiles, MR values per stored row, miss
     * L1 where the rows are a multiple of 4 KiB apart, one cache set for the whole sliver) */
    const int in_place = !pr->trans_a && pr->plan.a_rows_in_place;
    for (int64_t jc = 0; jc < n; jc += pr->plan.nc) {
        int64_t nc = n - jc < pr->plan.nc ? n - jc : pr->plan.nc;
        int64_t slivers = (nc + nr - 1) / nr;
        /* With fewer A blocks than threads (or an uneven count), threads also split the
         * B slivers; re-packing A per split is cheap next to the FMAs it feeds. */
        int64_t n_js = (n_ic % team->nthr == 0) ? 1 : team->nthr;
        if (n_js > slivers) n_js = slivers;
        for (int64_t pc = 0; pc < k; pc += pr->kc) {
            int64_t kc = k - pc < pr->kc ? k - pc : pr->kc;
            T beta = pc == 0 ? pr->beta : (T)1;
            T *bpack = team->bpack[team->panels++ & 1];
            /* A thread alone packs B's slivers as its first A block reaches them (below). */
            const T *b_unpacked = team->nthr == 1 ? b : NULL;
            if (team->nthr > 1) {
                for (int64_t s; (s = F(take_item)(team, MT_PACKING, slivers)) >= 0;)
                    F(pack_b_sliver)(pr, b, pc, kc, jc, nc, s, bpack);
#pragma omp barrier
            }
            for (int64_t w; (w = F(take_item)(team, MT_MULTIPLYING, n_ic * n_js)) >= 0;) {
                int64_t ib = w / n_js, js = w % n_js;
                /* Equal sliver counts per block, so that threads finish together at the
                 * barrier (blocks of mc rows and a short last one left one thread idle). */
                int64_t ic = slivers_m * ib / n_ic * pr->plan.mr;
                int64_t i_end = slivers_m * (ib + 1) / n_ic * pr->plan.mr;
                int64_t mc = (i_end < m ? i_end : m) - ic;
                const T *a_rows = NULL;
                if (!in_place) {
                    /* op(A)'s row sums: each block's once, by whoever packs it first */
                    F(pack_a)(pr, a, ic, mc, pc, kc, apack,
                              pr->a_sums && js == 0 ? pr->a_sums + ic : NULL);
                } else { /* A's full row tiles are read where they lie, the last one packed */
                    const int64_t full_rows = mc / pr->plan.mr * pr->plan.mr;
                    a_rows = a + ic * pr->lda + pc;
                    if (full_rows < mc)
                        F(pack_a)(pr, a, ic + full_rows, mc - full_rows, pc, kc, apack, NULL);
                }
                F(macro_kernel)(pr, a_rows, apack, bpack, b_unpacked, c, ic, mc, jc, nc, pc, kc,
                                slivers * js / n_js, slivers * (js + 1) / n_js, beta,
                                pc + kc >= k);
                b_unpacked = NULL;
            }
        }
    }
}

/* Small products (all of A and B fit in L1, one K block): packing would copy as many values as
 * the tile kernel multiplies (e.g. the 32x32x32 per-head attention products), so the strided kernel
 * reads A where it lies and B rows in place when they are contiguous. Only the pieces the kernel
 * cannot read directly are packed, zero-padded: B slivers of a transposed B or past the last full
 * sliver, or of a B whose rows would crowd L1 (rows_crowd_l1), and the last partial A row tile. */
static int F(is_small)(const PROBLEM *pr) {
    const int64_t l1_elems = 32 * 1024 / (int64_t)sizeof(T);
    return pr->k <= pr->plan.kc && pr->m * pr->k + pr->k * pr->n <= l1_elems;
}

/* Whether `rows` rows `stride` elements apart crowd into a few of the 64 sets of a 32 KiB,
 * 8-way L1 (64-byte lines): more than half the ways of each set they use. A head of attention
 * read in place from a (batch, length, 3 x heads x 64) projection has rows 6 KiB apart, all in
 * 2 sets, so a kernel walking down its columns would miss L1 at every step. */
static int F(rows_crowd_l1)(int64_t stride, int64_t rows) {
    const int64_t bytes = stride * (int64_t)sizeof(T);
    uint64_t sets = 0;
    for (int64_t p = 0; p < rows && p < 64; ++p) sets |= (uint64_t)1 << (p * bytes / 64 % 64);
    return rows > 4 * __builtin_popcountll(sets);
}

/* Whether a product runs as gemm_small does although K is longer than one block: each tile
 * over all of K in registers, A read where it lies, B a sliver at a time. A small model's weight
 * gradient dYᵀ X (M, N of a few hundred, K the ~1000 rows of a batch) then skips packing all of
 * A and B for each K block, waiting on operands from memory, and a second pass over C. Beyond
 * MT_WHOLE_K_BYTES of A and B, each tile's stream of them costs more than the packing saves.
 * The shape alone decides, not the layout, so that a product's values never depend on an
 * operand being passed transposed; the AVX-512 plans only (a_rows_in_place: those whose tile
 * kernel reads strided operands at speed). */
#define MT_WHOLE_K_BYTES (5 << 19)
static int F(whole_k_in_place)(const PROBLEM *pr) {
    return pr->plan.a_rows_in_place && pr->k > pr->plan.kc &&
           pr->m + pr->n <= MT_WHOLE_K_BYTES / (int64_t)sizeof(T) / pr->k;
}

static void F(gemm_small)(const PROBLEM *pr, const T *a, const T *b, T *c,
                          T *apack, T *bpack) {
    const int mr = pr->plan.mr, nr = pr->plan.nr;
    const int64_t m = pr->m, n = pr->n, k = pr->k, ldc = pr->ldc;
    /* op(A)(r, p): row-major A is a[r*lda + p], transposed A is a[p*lda + r]. */
    const int64_t rs_a = pr->trans_a ? 1 : pr->lda, cs_a = pr->trans_a ? pr->lda : 1;
    const int64_t full_rows = m / mr * mr;
    /* A last partial row tile is, when C is not read (beta 0) and there are MR rows at all,
     * the full tile of the last MR rows: the rows it repeats get the same values again (each
     * row's sums run alone, in the same order), and the tail needs no packing and no copy. */
    const int overlap_tail = full_rows < m && m >= mr && pr->beta == 0;
    const int pack_b = pr->trans_b || F(rows_crowd_l1)(pr->ldb, k);
    T edge[MT_GEMM_MAX_MR * MT_GEMM_MAX_NR] __attribute__((aligned(64)));
    if (full_rows < m && !overlap_tail) /* the last row tile, zero-padded, packed (rs 1, cs MR) */
        F(pack_a)(pr, a, full_rows, m - full_rows, 0, k, apack, NULL);
    for (int64_t j = 0; j < n; j += nr) {
        int64_t cols = n - j < nr ? n - j : nr;
        const T *bs = b + j;
        int64_t ldb = pr->ldb;
        if (pack_b || cols < nr) {
            F(pack_b_sliver)(pr, b, 0, k, j, cols, 0, bpack);
            bs = bpack;
            ldb = nr;
        }
        for (int64_t i = 0; i < m; i += mr) {
            if (overlap_tail && i == full_rows) i = m - mr;
            int64_t rows = m - i < mr ? m - i : mr;
            const T *as = i < full_rows ? a + i * rs_a : apack;
            int64_t rs = i < full_rows ? rs_a : 1, cs = i < full_rows ? cs_a : mr;
            T *ct = c + i * ldc + j;
            /* (a repeated overlap-tail row is overwritten first: its bias goes in once) */
            const T *bias = pr->bias ? pr->bias + j : NULL;
            if (rows == mr && cols == nr) {
                pr->plan.strided_kernel(k, as, rs, cs, bs, ldb, ct, ldc, pr->alpha, pr->beta,
                                        bias, pr->relu);
            } else {
                pr->plan.strided_kernel(k, as, rs, cs, bs, ldb, edge, nr, (T)1, (T)0, NULL, 0);
                F(store_edge)(edge, nr, ct, ldc, rows, cols, pr->alpha, pr->beta);
                if (bias) F(add_bias_tile)(ct, ldc, rows, cols, bias, pr->relu);
            }
            if (pr->whole_k) mt_ahead_step(); /* (as gemm_tiles: ask_ahead.c) */
        }
    }
    if (pr->a_sums) /* op(A)'s row sums (A transposed), A in cache now */
        pr->plan.sum_rows(a, pr->lda, k, m, pr->a_sums);
}

/* One matrix of a batch on one thread: the small path or the blocked algorithm. */
static void F(gemm_one)(const PROBLEM *pr, const T *a, const T *b, T *c, T *apack,
                        T *bpack) {
    if (pr->whole_k || F(is_small)(pr)) {
        F(gemm_small)(pr, a, b, c, apack, bpack);
    } else {
        int64_t next_item[2] = {0, 0};
        TEAM alone = {{bpack, bpack}, next_item, 0, {0, 0}, 1};
        F(gemm_tiles)(pr, a, b, c, apack, &alone);
    }
}

static int64_t F(round_up)(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

/* The plan and the blocks of one product for a team of `team` threads: A blocks of equal sliver
 * counts, a multiple of `team` of them when that keeps them near MC, and no thin last K block. */
static void F(problem_init)(PROBLEM *pr, int isa, int trans_a, int trans_b, int64_t m,
                            int64_t n, int64_t k, T alpha, int64_t lda, int64_t ldb, T beta,
                            int64_t ldc, int team) {
    F(mt_gemm_plan_for)(isa, &pr->plan);
    pr->trans_a = trans_a; pr->trans_b = trans_b;
    pr->m = m; pr->n = n; pr->k = k;
    pr->alpha = alpha; pr->beta = beta;
    pr->lda = lda; pr->ldb = ldb; pr->ldc = ldc;
    pr->bias = NULL; pr->relu = 0; pr->a_sums = NULL;
    int64_t blocks_m = (m + pr->plan.mc - 1) / pr->plan.mc;
    if (team > 1) blocks_m = (blocks_m + team - 1) / team * team;
    int64_t slivers_m = (m + pr->plan.mr - 1) / pr->plan.mr;
    if (blocks_m > slivers_m) blocks_m = slivers_m;
    if (blocks_m < 1) blocks_m = 1;
    pr->blocks_m = blocks_m;
    pr->mc = (slivers_m + blocks_m - 1) / blocks_m * pr->plan.mr;
    int64_t blocks_k = (k + pr->plan.kc - 1) / pr->plan.kc;
    pr->kc = (k + blocks_k - 1) / blocks_k;
    pr->whole_k = F(whole_k_in_place)(pr);
    if (pr->whole_k) pr->kc = k; /* (the scratch then holds gemm_small's slivers of all of K) */
}

/* Elements of packed A (one block) and of packed B (one panel) that a thread needs. */
static int64_t F(a_pack_elems)(const PROBLEM *pr) { return pr->mc * pr->kc; }
static int64_t F(b_pack_elems)(const PROBLEM *pr) {
    return pr->kc * F(round_up)(pr->n < pr->plan.nc ? pr->n : pr->plan.nc, pr->plan.nr);
}

/* One product on the calling thread, for kernels that run many small products inside their
 * own parallel loop (the fused attention): the tiles tuned_gemm computes for one matrix of a
 * batch, so the same values. scratch: tuned_gemm_one_scratch(isa, m, n, k) elements, 64-byte
 * aligned. m, n, k > 0; alpha != 0. */
int64_t F(tuned_gemm_one_scratch)(int isa, int64_t m, int64_t n, int64_t k) {
    PROBLEM pr;
    F(problem_init)(&pr, isa, 0, 0, m, n, k, 1, k, n, 0, n, 1);
    return F(round_up)(F(a_pack_elems)(&pr), 64) + F(b_pack_elems)(&pr);
}

void F(tuned_gemm_one)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       T alpha, const T *a, int64_t lda, const T *b, int64_t ldb, T beta, T *c,
                       int64_t ldc, T *scratch) {
    PROBLEM pr;
    F(problem_init)(&pr, isa, trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, 1);
    F(gemm_one)(&pr, a, b, c, scratch, scratch + F(round_up)(F(a_pack_elems)(&pr), 64));
}

/* The whole-K path (whole_k_in_place) on a team of threads: each runs gemm_small on its own
 * slice of C, whole NR slivers of columns where there are enough for all, else whole MR tiles
 * of rows, so that every tile and every sum is the one-thread product's. A column slice reads
 * all of op(A), so one thread sums op(A)'s rows; a row slice sums its own. */
static int F(gemm_whole_k_team)(const PROBLEM *pr, int team, const T *a, int64_t stride_a,
                                const T *b, int64_t stride_b, T *c, int64_t stride_c,
                                int64_t batch, int64_t a_elems, int64_t b_elems) {
    const int by_columns = pr->n >= pr->plan.nr * team;
    const int64_t unit = by_columns ? pr->plan.nr : pr->plan.mr;
    const int64_t extent = by_columns ? pr->n : pr->m, units = (extent + unit - 1) / unit;
    int failed = 0;
#pragma omp parallel num_threads(team) reduction(| : failed)
    {
        const int tid = mt_thread_num(), nthr = mt_team_size();
        const int64_t s0 = units * tid / nthr * unit;
        const int64_t s1 = units * (tid + 1) / nthr * unit < extent
                               ? units * (tid + 1) / nthr * unit : extent;
        PROBLEM slice = *pr;
        const T *a_slice = a, *b_slice = b;
        T *c_slice = c;
        if (by_columns) {
            slice.n = s1 - s0;
            if (pr->bias) slice.bias = pr->bias + s0;
            if (tid > 0) slice.a_sums = NULL;
            b_slice = b + (pr->trans_b ? s0 * pr->ldb : s0);
            c_slice = c + s0;
        } else {
            slice.m = s1 - s0;
            if (pr->a_sums) slice.a_sums = pr->a_sums + s0;
            a_slice = a + (pr->trans_a ? s0 : s0 * pr->lda);
            c_slice = c + s0 * pr->ldc;
        }
        T *apack = s0 < s1 ? (T *)mt_scratch_alloc(a_elems * (int64_t)sizeof(T)) : NULL;
        T *bpack = s0 < s1 ? (T *)mt_scratch_alloc(b_elems * (int64_t)sizeof(T)) : NULL;
        if (s0 < s1 && (!apack || !bpack)) failed = 1;
        else if (s0 < s1)
            for (int64_t bi = 0; bi < batch; ++bi)
                F(gemm_small)(&slice, a_slice + bi * stride_a, b_slice + bi * stride_b,
                              c_slice + bi * stride_c, apack, bpack);
        free(apack);
        free(bpack);
    }
    return failed ? MT_ERR_NOMEM : 0;
}

/* C_b = alpha * op(A_b) op(B_b) + beta * C_b for every b, then (bias not NULL) the bias added
 * to every row and (relu) the ReLU; the caller has checked the arguments and handled m, n, k or
 * alpha of 0. */
static int F(gemm_run_tiles)(int isa, int trans_a, int trans_b, int64_t m, int64_t n,
                             int64_t k, T alpha, const T *a, int64_t lda, int64_t stride_a,
                             const T *b, int64_t ldb, int64_t stride_b, T beta, T *c,
                             int64_t ldc, int64_t stride_c, int64_t batch, const T *bias,
                             int relu, T *a_sums) {
    int nt = mt_get_num_threads();
    double flops_per_matrix = 2.0 * (double)m * (double)n * (double)k;
    if (flops_per_matrix * (double)batch < 4e6) nt = 1; /* waking a team costs more than
                                                          * ~2M FMAs save */
    /* Many matrices: give whole matrices to threads (no barriers, no shared packing). This
     * is attention's case: 128 heads of 32x32x32 are too small to split, but not to share. */
    int batch_parallel = nt > 1 && batch >= nt &&
                         (batch % nt == 0 || batch >= 4 * nt || flops_per_matrix < 8e6);
    if (!batch_parallel && flops_per_matrix < 4e6) nt = 1; /* too small to split one */
    int team = batch_parallel ? 1 : nt;
    PROBLEM pr;
    F(problem_init)(&pr, isa, trans_a, trans_b, m, n, k, alpha, lda, ldb, beta, ldc, team);
    pr.bias = bias;
    pr.relu = relu;
    pr.a_sums = a_sums; /* (batch 1, trans_a: tuned_gemm_a_sums) */

    int64_t a_elems = F(a_pack_elems)(&pr), b_elems = F(b_pack_elems)(&pr);
    int failed = 0;

    if (batch_parallel) {
#pragma omp parallel num_threads(nt)
        {
            T *apack = (T *)mt_scratch_alloc(a_elems * (int64_t)sizeof(T));
            T *bpack = (T *)mt_scratch_alloc(b_elems * (int64_t)sizeof(T));
            if (!apack || !bpack) {
#pragma omp atomic write
                failed = 1;
            }
#pragma omp for schedule(static)
            for (int64_t bi = 0; bi < batch; ++bi) {
                if (apack && bpack)
                    F(gemm_one)(&pr, a + bi * stride_a, b + bi * stride_b,
                                c + bi * stride_c, apack, bpack);
            }
            free(apack);
            free(bpack);
        }
        return failed ? MT_ERR_NOMEM : 0;
    }

    if (pr.whole_k && team > 1 && (n >= pr.plan.nr * team || m >= pr.plan.mr * team))
        return F(gemm_whole_k_team)(&pr, team, a, stride_a, b, stride_b, c, stride_c, batch,
                                    a_elems, b_elems);
    if (pr.whole_k) team = 1; /* (too few tiles to share) */
    if (team > 1 && (m + pr.plan.mc - 1) / pr.plan.mc < team && n >= 2 * pr.plan.nr * team) {
        /* Too few rows for every thread to own A blocks: give each thread its own slice of
         * columns instead and let it run the whole serial algorithm on it. No shared packing,
         * no barriers (which cost a scheduler tick each on a busy machine). */
#pragma omp parallel num_threads(team)
        {
            const int tid = mt_thread_num(), nthr = mt_team_size();
            int64_t slivers = (n + pr.plan.nr - 1) / pr.plan.nr;
            int64_t j0 = slivers * tid / nthr * pr.plan.nr;
            int64_t j1 = slivers * (tid + 1) / nthr * pr.plan.nr;
            if (j1 > n) j1 = n;
            if (j0 < j1) {
                PROBLEM slice = pr;
                slice.n = j1 - j0;
                if (bias) slice.bias = bias + j0;
                if (tid > 0) slice.a_sums = NULL; /* every slice packs all of A: one sums it */
                int64_t slice_b = slice.kc * F(round_up)(
                    slice.n < pr.plan.nc ? slice.n : pr.plan.nc, pr.plan.nr);
                T *apack = (T *)mt_scratch_alloc(a_elems * (int64_t)sizeof(T));
                T *bpack = (T *)mt_scratch_alloc(slice_b * (int64_t)sizeof(T));
                if (apack && bpack) {
                    const T *b_slice = b + (trans_b ? j0 * ldb : j0);
                    int64_t next_item[2] = {0, 0};
                    TEAM alone = {{bpack, bpack}, next_item, 0, {0, 0}, 1};
                    for (int64_t bi = 0; bi < batch; ++bi)
                        F(gemm_tiles)(&slice, a + bi * stride_a,
                                      b_slice + bi * stride_b, c + bi * stride_c + j0,
                                      apack, &alone);
                } else {
#pragma omp atomic write
                    failed = 1;
                }
                free(apack);
                free(bpack);
            }
        }
        return failed ? MT_ERR_NOMEM : 0;
    }

    T *bpack = (T *)mt_scratch_alloc(b_elems * (int64_t)sizeof(T));
    if (!bpack) return MT_ERR_NOMEM;
    if (team == 1) {
        T *apack = (T *)mt_scratch_alloc(a_elems * (int64_t)sizeof(T));
        if (!apack) { free(bpack); return MT_ERR_NOMEM; }
        mt_ahead_begin(batch * ((m + pr.plan.mr - 1) / pr.plan.mr) *
                       ((n + pr.plan.nr - 1) / pr.plan.nr) * ((k + pr.kc - 1) / pr.kc));
        for (int64_t bi = 0; bi < batch; ++bi)
            F(gemm_one)(&pr, a + bi * stride_a, b + bi * stride_b,
                        c + bi * stride_c, apack, bpack);
        free(apack);
        free(bpack);
        return 0;
    }
    /* A second panel buffer only where there is a second panel: a fresh multi-MiB buffer
     * costs a page fault per 4 KiB touched. */
    int64_t panels = batch * ((n + pr.plan.nc - 1) / pr.plan.nc) * ((k + pr.kc - 1) / pr.kc);
    T *bpack2 = panels > 1 ? (T *)mt_scratch_alloc(b_elems * (int64_t)sizeof(T)) : NULL;
    if (panels > 1 && !bpack2) { free(bpack); return MT_ERR_NOMEM; }
    int64_t next_item[2] = {0, 0};
#pragma omp parallel num_threads(team)
    {
        TEAM mine = {{bpack, bpack2 ? bpack2 : bpack}, next_item, 0, {0, 0}, mt_team_size()};
        T *apack = (T *)mt_scratch_alloc(a_elems * (int64_t)sizeof(T));
        int my_failed = apack == NULL;
        /* Every thread must agree before anyone waits at a barrier inside gemm_tiles. */
#pragma omp atomic update
        failed += my_failed;
#pragma omp barrier
        if (!failed) {
            for (int64_t bi = 0; bi < batch; ++bi)
                F(gemm_tiles)(&pr, a + bi * stride_a, b + bi * stride_b,
                              c + bi * stride_c, apack, &mine);
        }
        free(apack);
    }
    free(bpack);
    free(bpack2);
    return failed ? MT_ERR_NOMEM : 0;
}

/* Whether C = op(A) Bᵀ (+ bias) of few rows (a Linear layer's y = x Wᵀ in a decoding step, M
 * the batch) is cheaper as its transpose: packing a transposed B turns all N x K weights on
 * their side for M rows of use, while Cᵀ = W op(A)ᵀ reads W where it lies (a plan whose row
 * tiles are read in place) and packs only op(A)'s M x K values, then C's M x N are copied out.
 * Only for alpha 1 and beta 0, where the two give the same values: each element is the same
 * FMAs in the same order, then the bias and the ReLU as the tile would add them. */
static int F(few_rows_by_transposed)(int isa, int trans_b, int64_t m, int64_t n, int64_t k,
                                     T alpha, int64_t batch, T beta, const T *a_sums) {
    if (!trans_b || batch != 1 || alpha != (T)1 || beta != (T)0 || a_sums) return 0;
    PROBLEM pr; /* (gemm_small packs nothing: it keeps those) */
    F(problem_init)(&pr, isa, 0, 1, m, n, k, alpha, k, k, beta, n, 1);
    return pr.plan.a_rows_in_place && !F(is_small)(&pr) && m <= pr.plan.nr &&
           2 * (m * k + m * n) < n * k;
}

static int F(gemm_run_tiles_transposed)(int isa, int trans_a, int64_t m, int64_t n,
                                        int64_t k, const T *a, int64_t lda, const T *b,
                                        int64_t ldb, T *c, int64_t ldc, const T *bias,
                                        int relu) {
    T *ct = (T *)mt_scratch_alloc(n * m * (int64_t)sizeof(T)); /* Cᵀ, n x m */
    if (!ct) return MT_ERR_NOMEM;
    /* Cᵀ = B op(A)ᵀ: A' = B (n x k, row-major); op(B') = op(A)ᵀ is A stored m x k read
     * transposed, or A stored k x m (trans_a) read as it lies. */
    int status = F(gemm_run_tiles)(isa, 0, !trans_a, n, m, k, (T)1, b, ldb, 0, a, lda, 0,
                                   (T)0, ct, m, 0, 1, NULL, 0, NULL);
    if (status == 0) {
        /* C's columns j0 .. j0+NR: their Cᵀ rows turned on their side by the plan's packing of
         * a transposed B (vector transposes), then copied out a row at a time with the bias */
        PLAN plan;
        F(mt_gemm_plan_for)(isa, &plan);
        const int nr = plan.nr;
        T block[MT_GEMM_MAX_NR * MT_GEMM_MAX_NR] __attribute__((aligned(64))); /* m x nr */
        for (int64_t j0 = 0; j0 < n; j0 += nr) {
            const int64_t cols = n - j0 < nr ? n - j0 : nr;
            plan.pack_b_transposed(m, ct + j0 * m, m, block, (int)cols);
            for (int64_t i = 0; i < m; ++i) {
                const T *from = block + i * nr;
                T *row = c + i * ldc + j0;
                if (!bias) {
                    memcpy(row, from, (size_t)cols * sizeof(T));
                    continue;
                }
                const T *bj = bias + j0;
#pragma omp simd
                for (int64_t j = 0; j < cols; ++j) {
                    const T v = from[j] + bj[j]; /* (the tile's order: the sum, then ReLU) */
                    row[j] = relu && v < 0 ? (T)0 : v;
                }
            }
        }
    }
    free(ct);
    return status;
}

/* gemm_run_tiles (or, for few rows by a transposed B, its transpose), then the memory asked
 * for ahead forgotten (ask_ahead.c). */
static int F(gemm_run)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       T alpha, const T *a, int64_t lda, int64_t stride_a, const T *b,
                       int64_t ldb, int64_t stride_b, T beta, T *c, int64_t ldc,
                       int64_t stride_c, int64_t batch, const T *bias, int relu, T *a_sums) {
    const int status =
        F(few_rows_by_transposed)(isa, trans_b, m, n, k, alpha, batch, beta, a_sums)
            ? F(gemm_run_tiles_transposed)(isa, trans_a, m, n, k, a, lda, b, ldb, c, ldc, bias,
                                           relu)
            : F(gemm_run_tiles)(isa, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b,
                                ldb, stride_b, beta, c, ldc, stride_c, batch, bias, relu,
                                a_sums);
    mt_ahead_forget();
    return status;
}

/* C_b = alpha * op(A_b) op(B_b) + beta * C_b for every b (minitorch.h). */
int F(tuned_gemm)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, T alpha,
                  const T *a, int64_t lda, int64_t stride_a, const T *b, int64_t ldb,
                  int64_t stride_b, T beta, T *c, int64_t ldc, int64_t stride_c, int64_t batch) {
    return F(gemm_run)(isa, trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb,
                       stride_b, beta, c, ldc, stride_c, batch, NULL, 0, NULL);
}

/* C = op(A) op(B) + bias on every row, then ReLU if relu (gemm.c's mt_gemm_bias); k > 0. */
int F(tuned_gemm_bias)(int isa, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                       const T *a, int64_t lda, const T *b, int64_t ldb, const T *bias,
                       int relu, T *c, int64_t ldc) {
    return F(gemm_run)(isa, trans_a, trans_b, m, n, k, (T)1, a, lda, 0, b, ldb, 0, (T)0, c,
                       ldc, 0, 1, bias, relu, NULL);
}

/* C = op(A) B with A transposed (stored k x m) and, added into a_sums (m values, zeroed by
 * the caller), op(A)'s row sums: gemm.c's mt_linear_param_grads; k > 0. */
int F(tuned_gemm_a_sums)(int isa, int64_t m, int64_t n, int64_t k, const T *a, int64_t lda,
                        const T *b, int64_t ldb, T *c, int64_t ldc, T *a_sums) {
    return F(gemm_run)(isa, 1, 0, m, n, k, (T)1, a, lda, 0, b, ldb, 0, (T)0, c, ldc, 0, 1, NULL,
                       0, a_sums);
}

#undef PLAN
#undef PROBLEM
#undef TEAM
#undef MT_PACKING
#undef MT_MULTIPLYING
#endif
