"""Pooling: ``F.max_pool2d``, ``F.avg_pool2d``, ``F.adaptive_avg_pool2d`` and their modules
(minitorch/ops/pooling.py, minitorch/nn/pooling.py), on every kernel backend.

- parity with PyTorch (float64, 1e-10) of outputs, indices and input gradients over kernel,
  stride, padding, dilation, ceil_mode, count_include_pad, divisor_override, return_indices,
  None in adaptive output sizes, unbatched input, NaN and -inf inputs (skipped without
  PyTorch);
- gradcheck and gradgradcheck in float64, including a non-contiguous input;
- PyTorch's errors for bad arguments.
"""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from test_conv import compare_with_torch, rand


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped",
                               exc_type=ImportError)

MAX_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), dilation=(2, 1), padding=(1, 0), ceil_mode=True),
    dict(kernel_size=2, stride=1, dilation=2, padding=1),
    dict(kernel_size=(4, 3), stride=3, ceil_mode=True),
]


@pytest.mark.parametrize("kwargs", MAX_CASES, ids=str)
def test_max_pool2d_values_indices_and_gradient_match_torch(backend, torch, kwargs):
    x = rand(np.random.default_rng(0), 2, 3, 9, 8)
    t_out, m_out = compare_with_torch(
        lambda x: torch.nn.functional.max_pool2d(x, **kwargs, return_indices=True),
        lambda x: F.max_pool2d(x, **kwargs, return_indices=True), [x], np.float64)
    assert m_out[1].dtype is mt.int64
    np.testing.assert_array_equal(m_out[1].numpy(), t_out[1].numpy())


def test_max_pool2d_nan_inf_and_ties_as_torch(torch):
    """A NaN wins its window (the last NaN's index), equal maxima give the first one's index,
    and an all -inf window gives -inf at its first element inside the input."""
    x = np.zeros((1, 1, 6, 6))
    x[0, 0, 0, 1] = x[0, 0, 1, 0] = np.nan
    x[0, 0, 4:, 4:] = -np.inf
    x[0, 0, 2:4, 2:4] = 7.0
    for kwargs in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                   dict(kernel_size=2, ceil_mode=True, stride=4)]:
        t_v, t_i = torch.nn.functional.max_pool2d(torch.tensor(x), **kwargs, return_indices=True)
        m_v, m_i = F.max_pool2d(mt.tensor(x), **kwargs, return_indices=True)
        np.testing.assert_array_equal(m_v.numpy(), t_v.numpy())
        np.testing.assert_array_equal(m_i.numpy(), t_i.numpy())


AVG_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True,
         count_include_pad=False),
    dict(kernel_size=(2, 3), padding=1, divisor_override=4),
    dict(kernel_size=4, stride=3, ceil_mode=True, divisor_override=3),
]


@pytest.mark.parametrize("kwargs", AVG_CASES, ids=str)
def test_avg_pool2d_matches_torch(backend, torch, kwargs):
    x = rand(np.random.default_rng(1), 2, 3, 9, 8)
    compare_with_torch(lambda x: torch.nn.functional.avg_pool2d(x, **kwargs),
                       lambda x: F.avg_pool2d(x, **kwargs), [x], np.float64)


@pytest.mark.parametrize("output_size", [1, 3, (3, 4), (4, 5), (None, 2), (7, None), (9, 8), 11])
def test_adaptive_avg_pool2d_matches_torch(backend, torch, output_size):
    x = rand(np.random.default_rng(2), 2, 3, 9, 8)
    compare_with_torch(lambda x: torch.nn.functional.adaptive_avg_pool2d(x, output_size),
                       lambda x: F.adaptive_avg_pool2d(x, output_size), [x], np.float64)


@pytest.mark.parametrize("name,args", [("MaxPool2d", (3, 2, 1)), ("AvgPool2d", (3, 2, 1)),
                                       ("AdaptiveAvgPool2d", ((2, 3),))])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_modules_on_unbatched_input_match_torch(torch, name, args, dtype):
    x = rand(np.random.default_rng(3), 3, 7, 6, dtype=dtype)
    compare_with_torch(getattr(torch.nn, name)(*args), getattr(nn, name)(*args), [x], dtype)


def test_max_pool2d_module_return_indices_and_repr():
    pool = nn.MaxPool2d(2, return_indices=True)
    values, indices = pool(mt.arange(16.0).reshape(1, 1, 4, 4))
    np.testing.assert_array_equal(values.numpy(), [[[[5.0, 7.0], [13.0, 15.0]]]])
    np.testing.assert_array_equal(indices.numpy(), [[[[5, 7], [13, 15]]]])
    assert pool.stride == 2 and "kernel_size=2" in repr(pool)
    assert nn.AvgPool2d(3, stride=1).stride == 1


# ----------------------------------------------------------------------------- gradcheck

def _distinct(rng, *shape):
    """Values far apart (no ties in a max window, so the max is differentiable)."""
    return rng.permutation(np.prod(shape)).reshape(shape).astype(np.float64) / 4


@pytest.mark.parametrize("name,fn", [
    ("max", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True)),
    ("max dilated", lambda x: F.max_pool2d(x, 2, stride=1, dilation=2)),
    ("max 2x2", lambda x: F.max_pool2d(x, 2)),
    ("avg", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                   count_include_pad=False)),
    ("adaptive", lambda x: F.adaptive_avg_pool2d(x, (2, 3))),
    ("global average", lambda x: F.adaptive_avg_pool2d(x, 1)),
])
def test_pools_gradcheck_and_gradgradcheck(backend, name, fn):
    x = mt.tensor(_distinct(np.random.default_rng(4), 1, 2, 5, 4), requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("pool", [lambda x: F.max_pool2d(x, 2, ceil_mode=True),
                                  lambda x: F.avg_pool2d(x, 2, padding=1),
                                  lambda x: F.adaptive_avg_pool2d(x, 2)])
def test_pools_gradcheck_on_non_contiguous_input(pool):
    base = mt.tensor(_distinct(np.random.default_rng(5), 1, 5, 2, 3), requires_grad=True)
    assert gradcheck(lambda b: pool(b.transpose(1, 2)), (base,))


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("call,message", [
    (lambda x: F.max_pool2d(x, 7), "Output size is too small"),
    (lambda x: F.avg_pool2d(x, 7), "Output size is too small"),
    (lambda x: F.max_pool2d(x, 3, padding=2), "pad should be at most half"),
    (lambda x: F.avg_pool2d(x, 3, padding=2), "pad should be at most half"),
    (lambda x: F.max_pool2d(x, 3, stride=0), "stride should be greater than zero"),
    (lambda x: F.max_pool2d(x, 0), "kernel_size must be greater than zero"),
    (lambda x: F.max_pool2d(x, 2, dilation=0), "dilation should be greater than zero"),
    (lambda x: F.max_pool2d(x, (2, 2, 2)), "list of 2 values"),
    (lambda x: F.max_pool2d(x[0, 0], 2), "3D or 4D"),
    (lambda x: F.avg_pool2d(x, 2, divisor_override=0), "divisor must be a non-zero int"),
    (lambda x: F.adaptive_avg_pool2d(x, (1, 2, 3)), "output_size must be 2"),
    (lambda x: F.adaptive_avg_pool2d(x, -1), "non-negative"),
    (lambda x: F.adaptive_avg_pool2d(x[0, 0], 2), "Expected 3D or 4D"),
])
def test_bad_arguments_raise_pytorchs_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call(mt.randn(2, 3, 5, 5))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1,
                                                              ceil_mode=True),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
                                    dict(kernel_size=(3, 2), padding=1, divisor_override=5)],
                         ids=str)
def test_integer_pooling_as_torch(torch, kwargs):
    """Integer max pooling keeps the dtype; int64 average pooling divides each window's sum
    rounding toward zero (PyTorch has no other integer average pooling)."""
    x = np.random.default_rng(6).integers(-20, 20, (2, 3, 7, 6))
    got, expected = F.avg_pool2d(mt.tensor(x), **kwargs), \
        torch.nn.functional.avg_pool2d(torch.tensor(x), **kwargs)
    assert got.dtype is mt.int64
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    max_kwargs = {k: v for k, v in kwargs.items()
                  if k not in ("count_include_pad", "divisor_override")}
    for dtype in (np.int64, np.int8):
        values, indices = F.max_pool2d(mt.tensor(x.astype(dtype)), **max_kwargs,
                                       return_indices=True)
        t_values, t_indices = torch.nn.functional.max_pool2d(torch.tensor(x.astype(dtype)),
                                                             **max_kwargs, return_indices=True)
        assert values.dtype.numpy == np.dtype(dtype)
        np.testing.assert_array_equal(values.numpy(), t_values.numpy())
        np.testing.assert_array_equal(indices.numpy(), t_indices.numpy())


def test_integer_and_bool_inputs():
    x = mt.tensor([[[[-3, 0, 5, 2], [0, 0, 1, 1]]]])
    np.testing.assert_array_equal(F.avg_pool2d(x, 2).numpy(), [[[[0, 2]]]])  # -3/4 -> 0
    np.testing.assert_array_equal(F.max_pool2d(x, 2).numpy(), [[[[0, 5]]]])
    with pytest.raises(NotImplementedError, match="Bool"):
        F.max_pool2d(x.bool(), 2)
    with pytest.raises(NotImplementedError, match="not implemented for"):
        F.avg_pool2d(x.int(), 2)
    with pytest.raises(RuntimeError, match="floating point"):
        F.adaptive_avg_pool2d(x, 1)
