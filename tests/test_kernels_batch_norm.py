"""Kernel tests of batch normalization with the batch's statistics (csrc/batch_norm.c), in the
manner of test_kernels.py:

- batch_norm_forward and batch_norm_backward of the C backend equal the numpy reference
  (numpy_backend, float64 throughout) on drawn shapes, with and without weight and bias,
  float32 and float64, 1 and 2 threads; (N, C) input, one image, one channel, a channel whose
  mean is far from zero (the variance taken around the mean), strided input;
- the thread count never changes a result: 1 and 2 threads agree bit for bit;
- a NaN in a channel makes that channel's statistics and output NaN, and no other's;
- bad input is a Python exception (the wrappers' checks, and the entry points' own).
If ``minitorch._C`` does not import, the tests are skipped with "C extension not built".
"""
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, THREADS, C, c_threads, needs_c  # the kernel tests' common ground
from test_kernels_bad_input import c_status

TOL = {np.float32: 2e-5, np.float64: 1e-12}


def both(dtype, shape, affine, rng, offset=0.0):
    x = (rng.standard_normal(shape) * 2 + offset).astype(dtype)
    weight = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    bias = rng.standard_normal(shape[1]).astype(dtype) if affine else None
    return x, weight, bias, rng.standard_normal(shape).astype(dtype)


def assert_matches_numpy(x, weight, bias, dy, threads, eps=1e-5):
    dtype = x.dtype.type
    expected = N.batch_norm_forward(x, weight, bias, eps)
    with c_threads(threads):
        got = C.batch_norm_forward(x, weight, bias, eps)
    expected_grads = N.batch_norm_backward(dy, x, weight, expected[1], expected[3])
    with c_threads(threads):
        grads = C.batch_norm_backward(dy, x, weight, got[1], got[3])
    names = ["y", "mean", "var", "rstd", "dx", "dweight", "dbias"]
    for name, g, e in zip(names, got + grads, expected + expected_grads):
        assert g.dtype == dtype and g.shape == e.shape, name
        scale = max(1.0, float(np.abs(e).max()))
        np.testing.assert_allclose(g, e, rtol=TOL[dtype], atol=TOL[dtype] * scale, err_msg=name)
    return got + grads


@st.composite
def bn_shape(draw):
    n, c = draw(st.integers(1, 5)), draw(st.integers(1, 6))
    spatial = tuple(draw(st.lists(st.integers(1, 9), min_size=0, max_size=2)))
    if n * int(np.prod(spatial)) < 2:
        n = 2  # more than one value per channel
    return (n, c) + spatial


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@given(shape=bn_shape(), affine=st.booleans(), threads=st.sampled_from(THREADS),
       seed=st.integers(0, 2**32 - 1))
def test_batch_norm_kernels_equal_numpy(dtype, shape, affine, threads, seed):
    rng = np.random.default_rng(seed)
    assert_matches_numpy(*both(dtype, shape, affine, rng), threads)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("shape", [(8, 3), (1, 4, 5, 5), (6, 1, 3, 3), (16, 32, 16, 16),
                                   (2, 3, 4, 5, 6)])
def test_batch_norm_edge_and_large_shapes(dtype, threads, shape):
    # (16, 32, 16, 16): enough work to split the channels over threads
    rng = np.random.default_rng(1)
    assert_matches_numpy(*both(dtype, shape, True, rng), threads)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_mean_far_from_zero_keeps_the_variance(dtype):
    # E[x^2] - E[x]^2 would lose the variance of values around 1e4 in float32 entirely
    rng = np.random.default_rng(2)
    x, weight, bias, dy = both(dtype, (8, 3, 4, 4), True, rng, offset=1e4)
    y, mean, var, rstd, *_ = assert_matches_numpy(x, weight, bias, dy, threads=2)
    np.testing.assert_allclose(var, x.astype(np.float64).var(axis=(0, 2, 3)), rtol=1e-4)


@needs_c
def test_strided_input_gives_its_contiguous_copys_results():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 6, 8, 10))[:, ::2, :, ::3]
    dy = rng.standard_normal(x.shape)
    weight, bias = rng.standard_normal(3), rng.standard_normal(3)
    got = C.batch_norm_forward(x, weight, bias)
    expected = C.batch_norm_forward(np.ascontiguousarray(x), weight, bias)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    np.testing.assert_array_equal(
        C.batch_norm_backward(dy, x, weight, got[1], got[3])[0],
        C.batch_norm_backward(np.ascontiguousarray(dy), np.ascontiguousarray(x), weight,
                              got[1], got[3])[0])


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_thread_count_never_changes_a_result(dtype):
    rng = np.random.default_rng(4)
    x, weight, bias, dy = both(dtype, (16, 24, 12, 12), True, rng)
    results = []
    for threads in THREADS:
        with c_threads(threads):
            forward = C.batch_norm_forward(x, weight, bias)
            results.append(forward + C.batch_norm_backward(dy, x, weight, forward[1],
                                                           forward[3]))
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)


@needs_c
def test_a_nan_spoils_its_own_channel_only():
    x = np.random.default_rng(5).standard_normal((4, 3, 5))
    x[2, 1, 3] = np.nan
    y, mean, var, rstd = C.batch_norm_forward(x, None, None)
    assert np.isnan(mean[1]) and np.isnan(var[1]) and np.isnan(y[:, 1]).all()
    assert np.isfinite(y[:, [0, 2]]).all() and np.isfinite(mean[[0, 2]]).all()


X = np.ones((2, 3, 4))
BAD = [
    ("int input", lambda: C.batch_norm_forward(X.astype(np.int64), None, None), TypeError),
    ("1-d input", lambda: C.batch_norm_forward(np.ones(5), None, None), ValueError),
    ("one value per channel", lambda: C.batch_norm_forward(np.ones((1, 3)), None, None),
     ValueError),
    ("no channels", lambda: C.batch_norm_forward(np.ones((4, 0)), None, None), ValueError),
    ("weight shape", lambda: C.batch_norm_forward(X, np.ones(4), None), ValueError),
    ("bias dtype", lambda: C.batch_norm_forward(X, None, np.ones(3, np.float32)), TypeError),
    ("negative eps", lambda: C.batch_norm_forward(X, None, None, -1.0), ValueError),
    ("dy shape", lambda: C.batch_norm_backward(np.ones((2, 3, 5)), X, None, np.ones(3),
                                               np.ones(3)), ValueError),
    ("rstd shape", lambda: C.batch_norm_backward(X, X, None, np.ones(3), np.ones(4)),
     ValueError),
    ("mean dtype", lambda: C.batch_norm_backward(X, X, None, np.ones(3, np.float32),
                                                 np.ones(3)), TypeError),
]


@needs_c
@pytest.mark.parametrize("name, call, error", BAD, ids=[b[0] for b in BAD])
def test_bad_input_raises(name, call, error):
    with pytest.raises(error):
        call()


@needs_c
def test_the_entry_points_check_their_sizes():
    out = np.empty(3)
    args = (C.ffi.NULL, C.ffi.NULL, C.ffi.NULL, C.ffi.NULL, C._ptr(out), C._ptr(out), C._ptr(out))
    with pytest.raises(ValueError):
        c_status(C.lib.mt_batch_norm_forward_f64, *args, 0, 3, 4, 1e-5)  # no images
    with pytest.raises(ValueError):
        c_status(C.lib.mt_batch_norm_forward_f64, *args, 2, 3, 4, -1.0)  # negative eps
    with pytest.raises(ValueError):
        c_status(C.lib.mt_batch_norm_backward_f64, *args, C._ptr(out), 2, 0, 4)  # no channels
