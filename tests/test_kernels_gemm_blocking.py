"""The GEMM's cache blocking and thread split: every block size, tile and team path gives the
reference GEMM's product.

The tuned driver (csrc/tuned/gemm_tuned.c) cuts K into blocks (kc: 512 on AVX-512, 256 on
AVX2), M into A blocks and N into B panels (nc ~4064 columns), runs an MR x NR register tile
(AVX-512 float: 8 x 32, else 6 x NR) with zero-padded edge tiles, and at 2 threads either
shares packed B panels between the team (two panel buffers in turn, one barrier each) or gives
each thread its own column slice. Here:
- sizes that are not multiples of MR, NR, 8 (the packers' transpose width) or kc, with k over
  one and two K blocks, every layout of A and B (transposed views), alpha and beta != 0/1, are
  held to the plain reference body (ISA level "reference", which sums in double) within the
  float rounding bound, and to numpy's product; on AVX-512 most of them take the whole-K path
  (k past one block, A and B within MT_WHOLE_K_BYTES: gemm_small's tiles over all of K), the
  largest the blocked one;
- the team paths (shared panels, several panels in turn; column slices) equal the 1-thread
  product bit for bit: tiles sit at the same rows and columns and each sum runs in the same
  order whichever thread computes it;
- batches (a broadcast, stride-0 operand; shared by the team or given to whole threads; the
  small-product path) equal one-thread products bit for bit too;
- a product of few rows by a transposed, wide B, computed as its transpose, equals the blocked
  product bit for bit, its bias and ReLU too;
at every tuned ISA level this CPU runs, float32 and float64.
"""
import numpy as np
import pytest

from test_kernels import DTYPES, TUNED_ISAS, C, c_threads, needs_c  # the common ground


def operands(rng, m, n, k, trans_a, trans_b, dtype):
    """op(A) (m x k) and op(B) (k x n), transposed ones as views of contiguous arrays."""
    a = rng.standard_normal((k, m) if trans_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if trans_b else (k, n)).astype(dtype)
    return (a.T if trans_a else a), (b.T if trans_b else b)


def assert_within_rounding(got, expected, a, b, c0, alpha, beta):
    """|got - expected| within the float rounding bound of alpha*A@B + beta*C summed over k."""
    eps = np.finfo(got.dtype).eps
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    bound = 4 * a.shape[1] * eps * (abs(alpha) * (np.abs(a64) @ np.abs(b64))
                                    + abs(beta) * np.abs(c0.astype(np.float64))) + 1e-300
    excess = np.abs(got.astype(np.float64) - expected.astype(np.float64)) - bound
    assert (excess <= 0).all(), f"max excess over the rounding bound {excess.max()}"


# m, n, k: m % 8 and % 6 != 0 (partial row tiles), n % 32 and % 16 != 0 (partial column
# slivers), k % 8 != 0 (the packers' scalar tails), k past one K block of 512 (and 256) into
# two or three, m below one tile, one A block, several A blocks, n past one B panel; A and B
# within 2.5 MiB (the whole-K path, float32: all those with k past 512 but 400 x 260 x 1100)
# and beyond it.
REFERENCE: dict = {}  # (dtype, m, n, k, trans_a, trans_b) -> the reference body's product
BLOCK_SHAPES = [(203, 97, 1100), (5, 33, 513), (129, 64, 1031), (300, 130, 517),
                (17, 300, 700), (64, 64, 64), (9, 4200, 40), (400, 260, 1100)]


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_blocked_gemm_equals_reference_and_numpy(dtype, isa):
    rng = np.random.default_rng(11)
    for m, n, k in BLOCK_SHAPES:
        for trans_a in (False, True):
            for trans_b in (False, True):
                a, b = operands(rng, m, n, k, trans_a, trans_b, dtype)
                c0 = rng.standard_normal((m, n)).astype(dtype)
                alpha, beta = 0.75, -0.5
                key = (np.dtype(dtype).name, m, n, k, trans_a, trans_b)
                if key not in REFERENCE:  # the slow plain body: once for every ISA level
                    with c_threads(1, "reference"):
                        REFERENCE[key] = C.gemm(a, b, alpha=alpha, beta=beta, out=c0.copy())
                expected = REFERENCE[key]
                results = []
                for threads in (1, 2):
                    with c_threads(threads, isa):
                        results.append(C.gemm(a, b, alpha=alpha, beta=beta, out=c0.copy()))
                assert_within_rounding(results[0], expected, a, b, c0, alpha, beta)
                np.testing.assert_allclose(
                    results[0], alpha * (a.astype(np.float64) @ b.astype(np.float64)) + beta * c0,
                    **(dict(rtol=1e-4, atol=1e-4 * k ** 0.5) if dtype == np.float32
                       else dict(rtol=1e-10, atol=1e-10)))
                np.testing.assert_array_equal(results[1], results[0])


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_team_paths_equal_one_thread_bit_for_bit(dtype, isa):
    rng = np.random.default_rng(12)
    # Shared B panels: 300 rows make 3+ A blocks for the team; n = 4100 is two column panels
    # (nc ~4064) and k = 1040 two or five K blocks, so the team packs into both panel buffers,
    # several times. Column slices: 40 rows (one A block) and n = 700 (float32 on AVX-512: the
    # whole-K path's column slices). The whole-K path's row slices (float32): n = 40, too few
    # columns for two threads, and 301 rows, the last tile partial.
    for m, n, k, trans_a, trans_b in [(300, 4100, 1040, False, False),
                                      (300, 4100, 1040, True, True),
                                      (40, 700, 600, False, True), (40, 700, 600, True, False),
                                      (301, 40, 700, False, True), (301, 40, 700, True, False)]:
        a, b = operands(rng, m, n, k, trans_a, trans_b, dtype)
        c0 = rng.standard_normal((m, n)).astype(dtype)
        results = []
        for threads in (1, 2):
            with c_threads(threads, isa):
                results.append(C.gemm(a, b, alpha=1.5, beta=0.25, out=c0.copy()))
        np.testing.assert_array_equal(results[1], results[0])
        np.testing.assert_allclose(
            results[0], 1.5 * (a.astype(np.float64) @ b.astype(np.float64)) + 0.25 * c0,
            **(dict(rtol=1e-4, atol=1e-4 * k ** 0.5) if dtype == np.float32
               else dict(rtol=1e-10, atol=1e-10)))


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_batches_equal_one_thread_bit_for_bit(dtype, isa):
    rng = np.random.default_rng(13)
    w = rng.standard_normal((70, 600)).astype(dtype)   # broadcast over the batch (stride 0)
    x = rng.standard_normal((3, 600, 130)).astype(dtype)
    heads = rng.standard_normal((16, 64, 64)).astype(dtype)
    products = [
        lambda: C.matmul(w, x),          # 3 matrices, too few to share out: the team path
        lambda: C.matmul(w, x[:2]),      # 2 matrices, one per thread
        lambda: C.matmul(heads, heads.swapaxes(-1, -2)),  # the small-product path per thread
    ]
    results = []
    for threads in (1, 2):
        with c_threads(threads, isa):
            results.append([product() for product in products])
    for one, two in zip(*results):
        np.testing.assert_array_equal(two, one)
    np.testing.assert_allclose(results[0][0], w.astype(np.float64) @ x,
                               **(dict(rtol=1e-4, atol=3e-3) if dtype == np.float32
                                  else dict(rtol=1e-10, atol=1e-10)))


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_few_rows_by_transposed_weights_equal_the_blocked_product_bit_for_bit(dtype, isa):
    # x @ w.T of at most 32 rows by a wide w (a decoding step's Linear): computed as its
    # transpose (w read in place) where the plan reads A's row tiles in place. A batch of two
    # (no fold into one tall product) takes the blocked path: the same values, bit for bit.
    rng = np.random.default_rng(14)
    for m, n, k in [(1, 100, 128), (8, 1000, 128), (17, 512, 700), (32, 1030, 64),
                    (32, 128, 512)]:
        x = rng.standard_normal((m, k)).astype(dtype)
        w = rng.standard_normal((n, k)).astype(dtype)
        bias = rng.standard_normal(n).astype(dtype)
        for threads in (1, 2):
            with c_threads(threads, isa):
                one = C.matmul(x, w.T)
                batched = C.matmul(np.stack([x, x]), np.stack([w, w]).swapaxes(-1, -2))
                with_bias = C.matmul_bias(x, w.T, bias)
                with_relu = C.matmul_bias(x, w.T, bias, relu=True)
            np.testing.assert_array_equal(one, batched[0])
            np.testing.assert_array_equal(one, batched[1])
            np.testing.assert_array_equal(with_bias, one + bias)
            np.testing.assert_array_equal(with_relu, np.where(one + bias < 0, 0, one + bias))
        np.testing.assert_allclose(one, x.astype(np.float64) @ w.T.astype(np.float64),
                                   **(dict(rtol=1e-4, atol=1e-4 * k ** 0.5)
                                      if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)))
