"""The fused bias + ReLU (csrc/bias_relu.c, the feed-forward block's linear1 + ReLU after its
GEMM) against the numpy backend and against the unfused kernels it replaces (arith add,
relu_forward; relu_backward, sum_cols): random shapes (empty, one row, one column, odd widths,
wider than a chunk), float32 and float64, every ISA level (the reference bodies and the tuned
ones), 1 and 2 threads, in place (both ways), strided input (copied first), NaN and signed zeros.

The same roundings in the same order on every path, and the bias gradient summed row after row
as sum_cols and numpy sum it: all agree bit for bit.
"""
import numpy as np
import pytest

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, C, c_threads, needs_c

# (3, 4100) and wider rows: column ranges, one pass (a team's backward needs 6 MiB of dy: the
# shapes of test_results_do_not_depend_on_the_thread_count)
SHAPES = [(0, 5), (5, 0), (1, 1), (1, 300), (7, 1), (97, 33), (300, 257), (1001, 96), (3, 4100),
          (64, 2048)]


def data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    bias = rng.standard_normal(shape[1]).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    if x.size > 4:
        flat = x.reshape(-1)
        flat[0], flat[1], flat[2] = np.nan, -0.0, np.inf
        bias[0] = 0.0  # x + b = -0.0 + 0.0 and NaN + 0 at the start of row 0
    return x, bias, dy


def test_numpy_backend_equals_the_unfused_maps():
    for dtype in DTYPES:
        for shape in SHAPES:
            x, bias, dy = data(shape, dtype, sum(shape))
            y = N.bias_relu_forward(x, bias)
            np.testing.assert_array_equal(y, N.relu_forward(x + bias))
            assert y.dtype == dtype and y.shape == shape
            dx, dbias = N.bias_relu_backward(dy, y)
            np.testing.assert_array_equal(dx, N.relu_backward(dy, y))
            np.testing.assert_array_equal(dbias, N.sum_cols(dx))
            assert dbias.dtype == dtype and dbias.shape == shape[1:]
            in_place = x.copy()
            assert N.bias_relu_forward(in_place, bias, out=in_place) is in_place
            np.testing.assert_array_equal(in_place, y)
            d_in_place = dy.copy()
            assert N.bias_relu_backward(d_in_place, y, out=d_in_place)[0] is d_in_place
            np.testing.assert_array_equal(d_in_place, dx)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_c_kernels_equal_numpy_and_the_unfused_kernels(dtype, threads, isa):
    with c_threads(threads, isa):
        for shape in SHAPES:
            x, bias, dy = data(shape, dtype, sum(shape))
            want_y = N.bias_relu_forward(x, bias)
            want_dx, want_dbias = N.bias_relu_backward(dy, want_y)
            y = C.bias_relu_forward(x, bias)
            np.testing.assert_array_equal(y, want_y)
            np.testing.assert_array_equal(np.signbit(y), np.signbit(want_y))  # -0.0 stays
            if x.size:  # (arith takes no empty array)
                np.testing.assert_array_equal(y, C.relu_forward(C.arith("add", x, bias)))
            dx, dbias = C.bias_relu_backward(dy, y)
            np.testing.assert_array_equal(dx, want_dx)
            np.testing.assert_array_equal(dbias, want_dbias)
            np.testing.assert_array_equal(dbias, C.sum_cols(C.relu_backward(dy, y)))
            in_place = x.copy()
            assert C.bias_relu_forward(in_place, bias, out=in_place) is in_place
            np.testing.assert_array_equal(in_place, want_y)
            d_in_place = dy.copy()
            got_dx, got_dbias = C.bias_relu_backward(d_in_place, y, out=d_in_place)
            assert got_dx is d_in_place
            np.testing.assert_array_equal(got_dx, want_dx)
            np.testing.assert_array_equal(got_dbias, want_dbias)
            if x.size:  # strided views are copied first
                np.testing.assert_array_equal(C.bias_relu_forward(x[::-1], bias[::-1].copy()),
                                              N.bias_relu_forward(x[::-1], bias[::-1].copy()))
                got_dx, got_dbias = C.bias_relu_backward(dy.T.copy().T, y.T.copy().T)
                np.testing.assert_array_equal(got_dx, want_dx)
                np.testing.assert_array_equal(got_dbias, want_dbias)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(513, 4133), (1001, 1600)])  # column ranges; row blocks
def test_results_do_not_depend_on_the_thread_count(dtype, shape):
    """Shapes with 6 MiB of dy or more (a team's backward): (1001, 1600) takes dx in blocks of
    rows (float32: 48 of them, the last one short)."""
    x, bias, dy = data(shape, dtype, 7)
    results = []
    for threads in THREADS:
        with c_threads(threads):
            y = C.bias_relu_forward(x, bias)
            results.append((y,) + C.bias_relu_backward(dy, y))
    want_dx, want_dbias = N.bias_relu_backward(dy, N.bias_relu_forward(x, bias))
    np.testing.assert_array_equal(results[-1][1], want_dx)
    np.testing.assert_array_equal(results[-1][2], want_dbias)
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
