"""Kernel tests of the 2-d convolution (csrc/conv2d.c), in the manner of test_kernels.py:

- conv2d_forward, conv2d_backward_input and conv2d_backward_weight of the C backend equal the
  numpy reference (numpy_backend) on drawn shapes, strides, paddings, dilations and groups
  (hypothesis: the campaign's profiles), float32 and float64, 1 and 2 threads, at every ISA
  level the CPU runs (the GEMM's reference loop and each tuned level);
- the paths the C driver takes by size: images split over threads or one at a time, im2col
  in several bands of output rows (a large image), and the 1x1 kernel that needs no im2col;
- non-contiguous and misaligned inputs give their contiguous copies' results;
- the three kernels are adjoint: <dy, conv(x, w)> = <dx, x> = <dw, w>.
Bad input is in test_kernels_bad_input.py. If ``minitorch._C`` does not import, the tests are
skipped with "C extension not built".
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, C, needs_c  # the kernel tests' common ground
from test_kernels_elementwise import c_threads


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
