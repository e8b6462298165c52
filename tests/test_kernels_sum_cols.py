"""The column sum (csrc/sum_cols.c, the gradient of nn.Linear's bias) against the numpy
reference: random shapes (empty, one row, one column, odd widths, wider than a chunk), float32
and float64, 1 and 2 threads, strided and misaligned input (copied first), non-finite values.

Both add the rows one after another in the element type (numpy's own order for the first
axis), so they agree bit for bit.
"""
import numpy as np
import pytest

from minitorch.backends import numpy_backend as N

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")
SHAPES = [(0, 5), (5, 0), (1, 1), (1, 300), (7, 1), (97, 33), (1024, 128), (300, 257),
          (64, 1000), (3, 4100)]


def check(x, threads):
    previous = C.get_num_threads()
    C.set_num_threads(threads)
    try:
        got = C.sum_cols(x)
    finally:
        C.set_num_threads(previous)
    with np.errstate(invalid="ignore"):  # inf - inf in a column: NaN on both sides
        want = N.sum_cols(x)
    assert got.dtype == want.dtype == x.dtype and got.shape == want.shape == x.shape[1:]
    np.testing.assert_array_equal(got, want)


@needs_c
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_cols_matches_numpy(dtype, threads):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x = (rng.standard_normal(shape) * 10).astype(dtype)
        check(x, threads)
        if x.size:
            check(x.T.copy().T, threads)  # an F-ordered matrix: copied first
            check(x[::-1], threads)  # negative strides
    x = rng.standard_normal((40, 50)).astype(dtype)
    x[3, 7], x[5, 9], x[6, 9] = np.nan, np.inf, -np.inf
    x[1, 11] = np.inf
    check(x, threads)


@needs_c
def test_sum_cols_misaligned():
    raw = np.frombuffer(bytearray(8 * 60 + 1), np.float64, count=60, offset=1).reshape(6, 10)
    raw[...] = np.arange(60).reshape(6, 10)
    np.testing.assert_array_equal(C.sum_cols(raw), np.arange(60.0).reshape(6, 10).sum(0))
