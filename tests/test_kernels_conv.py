"""Kernel tests of the 2-d convolution (csrc/conv2d.c) and of max pooling (csrc/max_pool2d.c),
in the manner of test_kernels.py:

- conv2d_forward, conv2d_backward_input and conv2d_backward_weight of the C backend equal the
  numpy reference (numpy_backend) on drawn shapes, strides, paddings, dilations and groups
  (hypothesis: the campaign's profiles), float32 and float64, 1 and 2 threads, at every ISA
  level the CPU runs (the GEMM's reference loop and each tuned level);
- the paths the C driver takes by size: images split over threads or one at a time, im2col
  in several bands of output rows (a large image), and the 1x1 kernel that needs no im2col;
- non-contiguous and misaligned inputs give their contiguous copies' results;
- the three kernels are adjoint: <dy, conv(x, w)> = <dx, x> = <dw, w>;
- max_pool2d_forward/backward equal the numpy reference exactly (values, indices, gradients)
  on drawn windows, with NaN, -inf and ties, both dtypes, 1 and 2 threads; the 2x2, stride 2
  window's tuned forward too, at every ISA level.
Bad input is in test_kernels_bad_input.py. If ``minitorch._C`` does not import, the tests are
skipped with "C extension not built".
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, C, c_threads, needs_c  # common ground


def assert_close(got, expected, dtype, name):
    """Within a few float32 (or float64) roundings of the array's scale: a weight gradient sums
    thousands of products, so its small elements carry the error of the large ones."""
    tol = 2e-5 if dtype == np.float32 else 1e-11
    scale = max(1.0, float(np.abs(expected).max(initial=0.0)))
    np.testing.assert_allclose(got, expected, rtol=tol, atol=tol * scale, err_msg=name)


@st.composite
def conv_case(draw):
    """(x shape, weight shape, stride, padding, dilation, groups) of a valid convolution."""
    groups = draw(st.sampled_from([1, 1, 2, 3]))
    c = groups * draw(st.integers(1, 3))
    o = groups * draw(st.integers(1, 3))
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    size = []
    for k, d, p in zip(kernel, dilation, padding):
        least = max(1, d * (k - 1) + 1 - 2 * p)  # the dilated kernel fits the padded input
        size.append(draw(st.integers(least, least + 7)))
    n = draw(st.integers(1, 5))
    return (n, c, *size), (o, c // groups, *kernel), stride, padding, dilation, groups


def run_all(B, x, w, b, dy, geometry):
    return (B.conv2d_forward(x, w, b, *geometry),
            B.conv2d_backward_input(dy, w, x.shape[2:], *geometry),
            B.conv2d_backward_weight(dy, x, w.shape[2:], *geometry))


def assert_matches_numpy(x, w, b, geometry, dtype, threads, isa=None, rng=None):
    rng = rng or np.random.default_rng(0)
    out = N.conv2d_forward(x, w, b, *geometry)
    dy = rng.standard_normal(out.shape).astype(dtype)
    expected = run_all(N, x, w, b, dy, geometry)
    with c_threads(threads, isa):
        got = run_all(C, x, w, b, dy, geometry)
    for name, g, e in zip(("forward", "backward_input", "backward_weight"), got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, name
        assert_close(g, e, dtype, name)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(case=conv_case(), threads=st.sampled_from(THREADS), bias=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_conv2d_kernels_match_numpy(dtype, isa, case, threads, bias, seed):
    x_shape, w_shape, *geometry = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype) if bias else None
    assert_matches_numpy(x, w, b, tuple(geometry), dtype, threads, isa, rng)


DRIVER_PATHS = {  # name: (x shape, weight shape, stride, padding, dilation, groups)
    "images over threads": ((8, 6, 12, 11), (8, 3, 3, 3), (1, 1), (1, 1), (1, 1), 2),
    "one image, threaded GEMMs": ((1, 16, 20, 19), (32, 16, 3, 3), (1, 1), (1, 1), (1, 1), 1),
    "bands of output rows": ((2, 8, 130, 70), (4, 8, 5, 3), (1, 2), (2, 1), (1, 1), 1),
    "1x1, no im2col": ((4, 12, 9, 10), (6, 4, 1, 1), (1, 1), (0, 0), (1, 1), 3),
    "1x1 strided": ((3, 4, 9, 10), (5, 4, 1, 1), (2, 3), (0, 0), (1, 1), 1),
    "kernel = padded input": ((2, 3, 3, 4), (2, 3, 5, 6), (1, 1), (1, 1), (1, 1), 1),
}


@needs_c
@pytest.mark.parametrize("path", DRIVER_PATHS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_driver_path_matches_numpy(dtype, threads, path):
    x_shape, w_shape, *geometry = DRIVER_PATHS[path]
    rng = np.random.default_rng(1)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal(w_shape).astype(dtype)
    b = rng.standard_normal(w_shape[0]).astype(dtype)
    assert_matches_numpy(x, w, b, tuple(geometry), dtype, threads, rng=rng)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_and_misaligned_inputs_give_the_contiguous_result(dtype):
    rng = np.random.default_rng(2)
    geometry = ((2, 1), (1, 1), (1, 2), 1)
    x = rng.standard_normal((2, 3, 14, 9)).astype(dtype)[:, :, ::2, ::-1]   # strided, reversed
    w = rng.standard_normal((4, 3, 3, 2)).astype(dtype)
    w_fortran = np.asfortranarray(w)
    misaligned = np.frombuffer(bytearray(x.nbytes + 1), dtype, count=x.size, offset=1)
    misaligned = misaligned.reshape(x.shape)
    misaligned[...] = x
    expected = C.conv2d_forward(np.ascontiguousarray(x), w, None, *geometry)
    for x_in, w_in in [(x, w), (misaligned, w_fortran)]:
        np.testing.assert_array_equal(C.conv2d_forward(x_in, w_in, None, *geometry), expected)


@needs_c
def test_the_three_kernels_are_adjoint():
    """<dy, conv(x, w)> = <conv_backward_input(dy, w), x> = <conv_backward_weight(dy, x), w>."""
    rng = np.random.default_rng(3)
    geometry = ((2, 1), (1, 2), (1, 2), 2)
    x, w = rng.standard_normal((3, 4, 9, 8)), rng.standard_normal((6, 2, 3, 2))
    y = C.conv2d_forward(x, w, None, *geometry)
    dy = rng.standard_normal(y.shape)
    inner = np.vdot(dy, y)
    np.testing.assert_allclose(np.vdot(C.conv2d_backward_input(dy, w, (9, 8), *geometry), x),
                               inner, rtol=1e-12)
    np.testing.assert_allclose(np.vdot(C.conv2d_backward_weight(dy, x, (3, 2), *geometry), w),
                               inner, rtol=1e-12)


@needs_c
def test_empty_batch():
    geometry = ((1, 1), (0, 0), (1, 1), 1)
    x, w = np.zeros((0, 2, 4, 4)), np.ones((3, 2, 2, 2))
    assert C.conv2d_forward(x, w, None, *geometry).shape == (0, 3, 3, 3)
    assert C.conv2d_backward_input(np.zeros((0, 3, 3, 3)), w, (4, 4), *geometry).shape == x.shape
    dw = C.conv2d_backward_weight(np.zeros((0, 3, 3, 3)), x, (2, 2), *geometry)
    np.testing.assert_array_equal(dw, np.zeros_like(w))


# ----------------------------------------------------------------------------- max pooling

@st.composite
def pool_case(draw):
    """(x shape, kernel, stride, padding, dilation, ceil_mode) PyTorch accepts."""
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = tuple(draw(st.integers(0, (d * (k - 1) + 1) // 2))
                    for k, d in zip(kernel, dilation))
    size = tuple(draw(st.integers(max(1, d * (k - 1) + 1 - 2 * p), 12))
                 for k, d, p in zip(kernel, dilation, padding))
    return ((draw(st.integers(1, 3)), draw(st.integers(1, 4))) + size, kernel, stride, padding,
            dilation, draw(st.booleans()))


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@given(case=pool_case(), threads=st.sampled_from(THREADS), seed=st.integers(0, 2**32 - 1),
       special=st.booleans())
def test_max_pool2d_kernels_equal_numpy(dtype, case, threads, seed, special):
    shape, *geometry = case
    rng = np.random.default_rng(seed)
    x = rng.integers(-3, 4, shape).astype(dtype)   # small integers: ties in most windows
    if special:
        x.flat[rng.integers(0, x.size, 3)] = [np.nan, -np.inf, np.inf]
    y, indices = N.max_pool2d_forward(x, *geometry)
    with c_threads(threads):
        c_y, c_indices = C.max_pool2d_forward(x, *geometry)
    np.testing.assert_array_equal(c_y, y)
    np.testing.assert_array_equal(c_indices, indices)
    dy = rng.standard_normal(y.shape).astype(dtype)
    with c_threads(threads):
        c_dx = C.max_pool2d_backward(dy, indices, shape[2:])
    np.testing.assert_allclose(c_dx, N.max_pool2d_backward(dy, indices, shape[2:]),
                               rtol=1e-6, atol=1e-6)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
def test_max_pool2d_large_input_over_threads(threads):
    """Enough planes for the kernel to split them over threads; a strided input is copied."""
    x = np.random.default_rng(4).standard_normal((8, 16, 40, 34))[..., ::2]
    geometry = ((3, 2), (2, 2), (1, 0), (1, 1), True)
    with c_threads(threads):
        y, indices = C.max_pool2d_forward(x, *geometry)
        dx = C.max_pool2d_backward(np.ones_like(y), indices, x.shape[2:])
    expected_y, expected_indices = N.max_pool2d_forward(np.ascontiguousarray(x), *geometry)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(indices, expected_indices)
    assert dx.sum() == y.size   # each output's gradient lands once


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape, ceil_mode", [((2, 3, 8, 8), False), ((3, 2, 7, 9), False),
                                              ((1, 1, 2, 2), False), ((2, 4, 5, 7), True),
                                              ((4, 16, 34, 66), False)])
def test_the_2x2_window_at_every_isa_level_equals_numpy(dtype, isa, threads, shape, ceil_mode):
    # the tuned body's window (an odd side's last row or column is left out, as the floor
    # does); ceil_mode's windows past the input stay with the reference
    rng = np.random.default_rng(7)
    x = rng.integers(-2, 3, shape).astype(dtype)   # ties in most windows
    x.flat[rng.integers(0, x.size, 6)] = [np.nan, np.nan, -np.inf, np.inf, -np.inf, np.nan]
    geometry = ((2, 2), (2, 2), (0, 0), (1, 1), ceil_mode)
    with c_threads(threads, isa):
        y, indices = C.max_pool2d_forward(x, *geometry)
    expected_y, expected_indices = N.max_pool2d_forward(x, *geometry)
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(indices, expected_indices)
