"""The GEMM's packing and tile choices never change a result: products bit for bit equal.

Packing only moves values, and each row of C is summed alone in the same order whatever tile
holds it, so:
- a product of strided views (leading dimension not a multiple of the vector width, a start
  one element in, so vector loads are unaligned) equals the same product of contiguous copies;
- in the blocked path, a row-major A read where it lies (AVX-512) gives the product of the
  same A packed (stored transposed), with C read and over several K and A blocks;
- a transposed A read where it lies (AVX-512 float, at least as many rows as B has columns)
  gives the transpose of the product with the operands swapped (Bᵀ A, whose transposed A has
  fewer rows than B columns and is packed): each value is the same FMAs in the same order;
- in the small-product path (e.g. attention's 32x32 heads), the last partial row tile, taken
  as the full tile of the last MR rows when C is not read, gives the rows the same values as
  a product whose rows fill whole tiles (extra rows appended), and so does the packed edge
  tile when C is read (beta != 0);
at every ISA level, float32 and float64, 1 and 2 threads. test_kernels.py holds the products
to numpy's within rounding.
"""
import contextlib

import numpy as np
import pytest

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")
ISAS = [] if C is None else list(C.ISA_LEVELS[1:C.ISA_LEVELS.index(C.best_isa()) + 1])


@contextlib.contextmanager
def c_threads(n, isa):
    previous = C.get_num_threads()
    C.set_num_threads(n)
    try:
        with C.isa(isa):
            yield
    finally:
        C.set_num_threads(previous)


def strided(rng, rows, cols, dtype):
    """A (rows, cols) view one element into a wider array: ld = cols + 5, unaligned start."""
    return rng.standard_normal((rows, cols + 6)).astype(dtype)[:, 1:cols + 1]


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_packing_strided_operands_equals_contiguous_copies(dtype, threads, isa):
    rng = np.random.default_rng(7)
    # m, n, k past the small-product path; k % 8 != 0 and m % 6 != 0 exercise the remainders
    for m, n, k in [(200, 96, 301), (97, 130, 64), (300, 64, 9), (64, 200, 515)]:
        a, b = strided(rng, m, k, dtype), strided(rng, k, n, dtype)
        at, bt = strided(rng, k, m, dtype).T, strided(rng, n, k, dtype).T  # transposed views
        with c_threads(threads, isa):
            for x, y in ((a, b), (at, b), (a, bt), (at, bt)):
                got = C.matmul(x, y)
                np.testing.assert_array_equal(got, C.matmul(np.ascontiguousarray(x),
                                                            np.ascontiguousarray(y)))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_a_read_in_place_equals_a_packed(dtype, threads, isa):
    """Row-major A (read in place on AVX-512: full MR-row tiles through the strided kernel, the
    last partial tile packed) against the same values stored transposed (always packed):
    m past one A block with a partial row tile, n with a partial B sliver, k over one and two
    K blocks, a leading dimension wider than the row; C read (beta != 0)."""
    rng = np.random.default_rng(12)
    for m, n, k in [(203, 97, 300), (301, 40, 1100), (135, 520, 517), (16, 64, 700)]:
        a = strided(rng, m, k, dtype)
        a_packed = np.ascontiguousarray(a.T).T  # same values, stored k x m: trans_a
        b = rng.standard_normal((k, n)).astype(dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        with c_threads(threads, isa):
            in_place = C.gemm(a, b, alpha=0.75, beta=0.5, out=c0.copy())
            packed = C.gemm(a_packed, b, alpha=0.75, beta=0.5, out=c0.copy())
        np.testing.assert_array_equal(in_place, packed, err_msg=f"{m}x{n}x{k}")


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_transposed_a_equals_the_swapped_product(dtype, threads, isa):
    """op(A) = Aᵀ (a weight gradient's dYᵀ X) with m >= n: m past one A block with a partial
    row tile, k over one and two K blocks, a stored row wider than m, C read (beta != 0);
    against (Bᵀ A)ᵀ, where A's values are the packed B operand, and against numpy within
    rounding."""
    rng = np.random.default_rng(13)
    for m, n, k in [(203, 97, 300), (301, 40, 1100), (520, 135, 517), (64, 64, 700)]:
        a_t = strided(rng, k, m, dtype).T  # op(A): m x k, stored k x m (lda = m + 5)
        b = strided(rng, k, n, dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        with c_threads(threads, isa):
            got = C.gemm(a_t, b, alpha=0.75, beta=0.5, out=c0.copy())
            swapped = C.gemm(b.T, a_t.T, alpha=0.75, beta=0.5, out=np.ascontiguousarray(c0.T))
        np.testing.assert_array_equal(got, swapped.T, err_msg=f"{m}x{n}x{k}")
        expected = 0.75 * (a_t.astype(np.float64) @ b) + 0.5 * c0
        np.testing.assert_allclose(got, expected, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                   atol=1e-3 if dtype == np.float32 else 1e-9)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_products_last_row_tile_equals_whole_tiles(dtype, threads, isa):
    rng = np.random.default_rng(8)
    for m in (32, 7, 13, 5):
        q = rng.standard_normal((16, 36, 32)).astype(dtype)  # 36 rows: whole tiles of 6 and 4
        k = rng.standard_normal((16, 32, 32)).astype(dtype)
        c0 = rng.standard_normal((m, 32)).astype(dtype)
        with c_threads(threads, isa):
            whole = C.matmul(q, k)
            for kt in (k, np.ascontiguousarray(k.swapaxes(-1, -2)).swapaxes(-1, -2)):
                np.testing.assert_array_equal(C.matmul(q[:, :m], kt), whole[:, :m])
                # transposed A, as in attention's backward
                qt = np.ascontiguousarray(q.swapaxes(-1, -2)).swapaxes(-1, -2)
                np.testing.assert_array_equal(C.matmul(qt[:, :m], kt), whole[:, :m])
            # beta != 0 (C read): the packed edge tile, equal to the whole-tile rows too
            out = c0.copy()
            C.gemm(q[0, :m], k[0], beta=0.5, out=out)
            full = c0[np.arange(36) % m] if m < 36 else c0
            expected = C.gemm(q[0], k[0], beta=0.5, out=np.ascontiguousarray(full))[:m]
            np.testing.assert_array_equal(out, expected)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transposed_b_narrower_than_a_sliver_equals_contiguous(dtype, threads, isa):
    """Attention scores q kᵀ over fewer keys than a B sliver holds: op(B) = kᵀ's columns are k's
    rows, packed in whole groups of 8 (float32) / 4 (float64) by the vector transpose and the
    rest one by one, zero-padded; the product equals the one of a contiguous B, and so does
    the edge tile stored with C read (beta != 0)."""
    rng = np.random.default_rng(9)
    for keys in (1, 3, 4, 5, 7, 8, 9, 12, 13, 17, 20, 31, 33, 40):
        q = rng.standard_normal((6, 13, 24)).astype(dtype)
        k = strided(rng, 6 * keys, 24, dtype).reshape(6, keys, 24)
        kt = k.swapaxes(-1, -2)  # transposed view: trans_b in the kernel
        with c_threads(threads, isa):
            np.testing.assert_array_equal(C.matmul(q, kt),
                                          C.matmul(q, np.ascontiguousarray(kt)),
                                          err_msg=f"keys {keys}")
            c0 = rng.standard_normal((13, keys)).astype(dtype)
            out, expected = c0.copy(), c0.copy()
            C.gemm(q[0], kt[0], alpha=0.75, beta=0.5, out=out)
            C.gemm(q[0], np.ascontiguousarray(kt[0]), alpha=0.75, beta=0.5, out=expected)
            np.testing.assert_array_equal(out, expected, err_msg=f"keys {keys}, beta 0.5")


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_product_with_b_rows_kibs_apart_equals_contiguous(dtype, threads, isa):
    """A head of attention read in place from a fused projection: B's rows 1536 elements apart
    (6 or 12 KiB, a few L1 sets), which the small-product path packs rather than reading in
    place; the values are those of the contiguous B, with C overwritten and with C read."""
    rng = np.random.default_rng(10)
    for m, n, k in [(64, 64, 64), (13, 40, 64), (64, 16, 24), (7, 5, 96)]:
        a = rng.standard_normal((m, k)).astype(dtype)
        b = rng.standard_normal((k, 1536)).astype(dtype)[:, 512:512 + n]
        with c_threads(threads, isa):
            np.testing.assert_array_equal(C.matmul(a, b), C.matmul(a, np.ascontiguousarray(b)),
                                          err_msg=f"{m}x{n}x{k}")
            c0 = rng.standard_normal((m, n)).astype(dtype)
            out, expected = c0.copy(), c0.copy()
            C.gemm(a, b, alpha=0.75, beta=0.5, out=out)
            C.gemm(a, np.ascontiguousarray(b), alpha=0.75, beta=0.5, out=expected)
            np.testing.assert_array_equal(out, expected, err_msg=f"{m}x{n}x{k}, beta 0.5")
