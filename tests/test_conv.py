"""Convolution: ``F.conv2d``/``F.conv1d`` and ``nn.Conv2d``/``nn.Conv1d``
(minitorch/ops/convolution.py, minitorch/nn/conv.py), on every kernel backend.

- parity with PyTorch (float64, 1e-10; float32 too) of outputs and of the gradients of the
  input, weight and bias, over stride, padding (ints, pairs, "same", "valid", the padding
  modes), dilation, groups, bias, unbatched input, with torch's weights loaded through
  ``load_state_dict`` (skipped without PyTorch);
- gradcheck and gradgradcheck in float64, including a non-contiguous input and weight;
- the modules' shapes and initialisation, and PyTorch's errors for bad arguments.

Also the helpers test_pooling.py and test_batchnorm.py use: ``port`` (torch's state_dict
loaded into a minitorch module) and ``compare_with_torch``.
"""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck

TOL = {np.float64: dict(atol=1e-10, rtol=1e-10), np.float32: dict(atol=1e-5, rtol=1e-4)}


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped",
                               exc_type=ImportError)


def port(torch_module, mt_module, dtype):
    """torch's state_dict loaded into the minitorch module through numpy: keys must match."""
    torch_module.to(getattr(__import__("torch"), np.dtype(dtype).name))
    mt_module.to(np.dtype(dtype).name)
    state = {k: v.detach().numpy() for k, v in torch_module.state_dict().items()}
    assert list(state) == list(mt_module.state_dict()), "state_dict keys differ from PyTorch's"
    mt_module.load_state_dict(state)


def compare_with_torch(torch_fn, mt_fn, arrays, dtype, modules=None, seed=0):
    """Run both on the same float inputs; compare the outputs (the first, and any other float
    ones), then the gradients of the inputs and of the modules' parameters for a random
    upstream gradient. Returns the two outputs."""
    import torch
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    m_in = [mt.tensor(a, requires_grad=True) for a in arrays]
    t_out, m_out = torch_fn(*t_in), mt_fn(*m_in)
    t_first = t_out[0] if isinstance(t_out, tuple) else t_out
    m_first = m_out[0] if isinstance(m_out, tuple) else m_out
    assert tuple(m_first.shape) == tuple(t_first.shape)
    assert m_first.dtype.numpy == np.dtype(dtype)
    np.testing.assert_allclose(m_first.detach().numpy(), t_first.detach().numpy(),
                               **TOL[dtype], err_msg="output")
    g = np.random.default_rng(seed).standard_normal(tuple(t_first.shape)).astype(dtype)
    t_first.backward(torch.tensor(g))
    m_first.backward(mt.tensor(g))
    for i, (t, m) in enumerate(zip(t_in, m_in)):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), **TOL[dtype],
                                   err_msg=f"gradient of input {i}")
    if modules is not None:
        t_module, m_module = modules
        m_params = dict(m_module.named_parameters())
        for name, p in t_module.named_parameters():
            np.testing.assert_allclose(m_params[name].grad.numpy(), p.grad.numpy(),
                                       **TOL[dtype], err_msg=f"gradient of {name}")
    return t_out, m_out


def rand(rng, *shape, dtype=np.float64):
    return rng.standard_normal(shape).astype(dtype)


# ----------------------------------------------------------------------------- parity

CONV2D_CASES = [  # (in, out, kernel, keyword arguments, input size)
    (3, 4, 3, dict(), (7, 6)),
    (3, 4, (3, 2), dict(stride=2, padding=1), (8, 7)),
    (4, 6, 3, dict(stride=(2, 1), padding=(0, 2), dilation=(1, 2), groups=2), (9, 8)),
    (4, 4, 3, dict(groups=4, bias=False, padding=1), (5, 5)),              # depthwise
    (6, 3, 1, dict(groups=3), (4, 5)),                                     # 1x1, grouped
    (2, 3, (2, 4), dict(padding="same", dilation=(2, 1)), (6, 7)),          # asymmetric same
    (2, 3, 3, dict(padding="valid", stride=3), (7, 8)),
    (2, 3, 3, dict(padding=(2, 1), padding_mode="reflect"), (5, 6)),
    (2, 3, 3, dict(padding=1, padding_mode="replicate", stride=2), (5, 6)),
    (2, 3, (2, 3), dict(padding="same", padding_mode="circular"), (5, 6)),
    (3, 2, 5, dict(padding=2), (5, 5)),                                     # kernel = input
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("case", CONV2D_CASES, ids=lambda c: str(c[3]) or "plain")
@pytest.mark.filterwarnings("ignore:Using padding='same'")  # torch's, on its own extra copy
def test_conv2d_module_matches_torch(backend, torch, dtype, case):
    in_ch, out_ch, kernel, kwargs, size = case
    t_conv = torch.nn.Conv2d(in_ch, out_ch, kernel, **kwargs)
    m_conv = nn.Conv2d(in_ch, out_ch, kernel, **kwargs)
    port(t_conv, m_conv, dtype)
    x = rand(np.random.default_rng(0), 2, in_ch, *size, dtype=dtype)
    compare_with_torch(t_conv, m_conv, [x], dtype, (t_conv, m_conv))


@pytest.mark.parametrize("kwargs", [dict(), dict(stride=2, padding=1, groups=2),
                                    dict(padding="same", dilation=2),
                                    dict(padding=1, padding_mode="circular", bias=False)])
def test_conv1d_module_matches_torch(backend, torch, kwargs):
    t_conv, m_conv = torch.nn.Conv1d(4, 6, 3, **kwargs), nn.Conv1d(4, 6, 3, **kwargs)
    port(t_conv, m_conv, np.float64)
    x = rand(np.random.default_rng(1), 3, 4, 9)
    compare_with_torch(t_conv, m_conv, [x], np.float64, (t_conv, m_conv))


@pytest.mark.parametrize("dims", [1, 2])
def test_unbatched_input_matches_torch(backend, torch, dims):
    rng = np.random.default_rng(2)
    x, w, b = rand(rng, 4, *(5,) * dims), rand(rng, 6, 2, *(3,) * dims), rand(rng, 6)
    t_fn = torch.nn.functional.conv1d if dims == 1 else torch.nn.functional.conv2d
    m_fn = F.conv1d if dims == 1 else F.conv2d
    compare_with_torch(lambda *a: t_fn(*a, stride=2, padding=1, groups=2),
                       lambda *a: m_fn(*a, stride=2, padding=1, groups=2),
                       [x, w, b], np.float64)


def test_integer_convolution_as_torch(torch):
    rng = np.random.default_rng(7)
    x, w, b = rng.integers(-20, 20, (2, 4, 7, 6)), rng.integers(-3, 3, (6, 2, 3, 2)), \
        rng.integers(-3, 3, 6)
    kwargs = dict(stride=2, padding=1, groups=2)
    got = F.conv2d(mt.tensor(x), mt.tensor(w), mt.tensor(b), **kwargs)
    assert got.dtype is mt.int64
    np.testing.assert_array_equal(got.numpy(), torch.nn.functional.conv2d(
        torch.tensor(x), torch.tensor(w), torch.tensor(b), **kwargs).numpy())


def test_functional_with_empty_batch(backend):
    x = mt.zeros(0, 3, 5, 5, dtype=mt.float64, requires_grad=True)
    w = mt.randn(4, 3, 3, 3, dtype=mt.float64, requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    assert tuple(y.shape) == (0, 4, 5, 5)
    y.sum().backward()
    assert tuple(x.grad.shape) == (0, 3, 5, 5) and not w.grad.numpy().any()


# ----------------------------------------------------------------------------- gradcheck

GRADCHECK_CASES = [dict(), dict(stride=2, padding=1), dict(dilation=2, padding=(1, 2), groups=2),
                   dict(padding="same")]


@pytest.mark.parametrize("kwargs", GRADCHECK_CASES, ids=str)
def test_conv2d_gradcheck_and_gradgradcheck(backend, kwargs):
    rng = np.random.default_rng(3)
    x = mt.tensor(rand(rng, 2, 2, 4, 3), requires_grad=True)
    w = mt.tensor(rand(rng, 2, 2 // kwargs.get("groups", 1), 2, 2), requires_grad=True)
    b = mt.tensor(rand(rng, 2), requires_grad=True)
    fn = lambda x, w, b: F.conv2d(x, w, b, **kwargs)  # noqa: E731
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_conv2d_gradcheck_on_non_contiguous_input_and_weight(backend):
    rng = np.random.default_rng(4)
    base = mt.tensor(rand(rng, 1, 4, 2, 5), requires_grad=True)   # x = base viewed (N, C, H, W)
    wide = mt.tensor(rand(rng, 2, 2, 2, 4), requires_grad=True)   # w = every other column
    fn = lambda base, wide: F.conv2d(base.permute(0, 2, 1, 3), wide[..., ::2], stride=(1, 2))  # noqa: E731
    assert not base.permute(0, 2, 1, 3).is_contiguous()
    assert gradcheck(fn, (base, wide))
    assert gradgradcheck(fn, (base, wide))


def test_conv1d_gradcheck(backend):
    rng = np.random.default_rng(5)
    x, w = (mt.tensor(rand(rng, *s), requires_grad=True) for s in [(2, 2, 7), (3, 2, 3)])
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=1, dilation=2), (x, w))


def test_third_derivative_runs_on_the_same_kernels(backend):
    """d³/dx dw dx of a conv: the backward Functions differentiate each other round."""
    rng = np.random.default_rng(6)
    x = mt.tensor(rand(rng, 1, 2, 4, 4), requires_grad=True)
    w = mt.tensor(rand(rng, 2, 2, 2, 2), requires_grad=True)
    y = (F.conv2d(x, w) ** 2).sum()
    (gx,) = mt.autograd.grad(y, x, create_graph=True)
    (gw,) = mt.autograd.grad(gx.pow(2).sum(), w, create_graph=True)
    (gxx,) = mt.autograd.grad(gw.sum(), x)
    assert tuple(gxx.shape) == (1, 2, 4, 4) and np.isfinite(gxx.numpy()).all()


# ----------------------------------------------------------------------------- modules

def test_conv2d_module_layout_and_init():
    mt.manual_seed(0)
    conv = nn.Conv2d(6, 8, (3, 5), groups=2)
    assert tuple(conv.weight.shape) == (8, 3, 3, 5) and tuple(conv.bias.shape) == (8,)
    assert conv.kernel_size == (3, 5) and conv.stride == (1, 1) and conv.padding == (0, 0)
    bound = 1 / math.sqrt(3 * 3 * 5)   # kaiming_uniform(a=√5) on fan_in = 45
    assert np.abs(conv.weight.numpy(force=True)).max() <= bound
    assert np.abs(conv.weight.numpy(force=True)).max() > 0.8 * bound  # spread over the range
    assert np.abs(conv.bias.numpy(force=True)).max() <= bound
    assert nn.Conv2d(2, 2, 3, padding="same").padding == "same"
    assert nn.Conv2d(2, 2, 3, bias=False).bias is None
    assert "kernel_size=(3, 5)" in repr(conv) and "groups=2" in repr(conv)
    assert nn.Conv2d(2, 4, 3, dtype=mt.float64).weight.dtype is mt.float64


def test_conv2d_same_and_valid_shapes():
    x = mt.randn(1, 2, 7, 6)
    assert tuple(F.conv2d(x, mt.randn(3, 2, 4, 3), padding="same").shape) == (1, 3, 7, 6)
    assert tuple(F.conv2d(x, mt.randn(3, 2, 4, 3), padding="valid").shape) == (1, 3, 4, 4)
    assert tuple(nn.Conv2d(2, 3, 4, padding="same", dilation=3)(x).shape) == (1, 3, 7, 6)


# ----------------------------------------------------------------------------- bad input

BAD_CALLS = [
    ((2, 3, 5, 5), (4, 2, 3, 3), dict(), "expected input\\[2, 3, 5, 5\\] to have 2 channels"),
    ((2, 3, 5, 5), (4, 3, 7, 7), dict(), "Kernel size can't be greater than actual input size"),
    ((2, 3, 5, 5), (4, 3, 4, 4), dict(dilation=2), "Kernel size: \\(7 x 7\\)"),
    ((2, 4, 5, 5), (3, 2, 3, 3), dict(groups=2), "expected weight to be divisible by 2"),
    ((2, 3, 5, 5), (4, 1, 3, 3), dict(groups=2), "to have 2 channels, but got 3"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(stride=0), "non-positive stride"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding=-1), "negative padding"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(dilation=0), "non-positive dilation"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(groups=0), "non-positive groups"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding="same", stride=2), "strided convolutions"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(padding="full"), "Invalid padding string"),
    ((2, 3, 5, 5), (4, 3, 3, 3), dict(stride=(1, 1, 1)), "list of 2 values"),
    ((3, 5), (4, 3, 3, 3), dict(), "Expected 3D \\(unbatched\\) or 4D \\(batched\\) input"),
    ((2, 3, 5, 5), (4, 3, 3), dict(), "expected weight to be 4-d"),
]


@pytest.mark.parametrize("x_shape,w_shape,kwargs,message", BAD_CALLS,
                         ids=[c[3][:30] for c in BAD_CALLS])
def test_bad_arguments_raise_pytorchs_errors(x_shape, w_shape, kwargs, message):
    with pytest.raises(RuntimeError, match=message):
        F.conv2d(mt.randn(*x_shape), mt.randn(*w_shape), **kwargs)


def test_bad_bias_dtype_and_types():
    x, w = mt.randn(1, 3, 5, 5), mt.randn(4, 3, 3, 3)
    with pytest.raises(RuntimeError, match="expected bias to be 1-dimensional with 4 elements"):
        F.conv2d(x, w, mt.randn(3))
    with pytest.raises(RuntimeError, match="weight type"):
        F.conv2d(x, w.double())
    with pytest.raises(NotImplementedError, match="Bool"):
        F.conv2d(mt.ones(1, 3, 5, 5, dtype=mt.bool), w.bool())
    with pytest.raises(TypeError, match="stride must be an int"):
        F.conv2d(x, w, stride=1.5)
    with pytest.raises(RuntimeError, match="Expected 2D \\(unbatched\\) or 3D"):
        F.conv1d(x, mt.randn(4, 3, 3))


@pytest.mark.parametrize("kwargs,message", [
    (dict(in_channels=3, out_channels=4, groups=2), "in_channels must be divisible by groups"),
    (dict(in_channels=4, out_channels=3, groups=2), "out_channels must be divisible by groups"),
    (dict(in_channels=4, out_channels=4, padding_mode="zero"), "padding_mode must be one of"),
    (dict(in_channels=4, out_channels=4, padding="same", stride=2), "strided convolutions"),
    (dict(in_channels=4, out_channels=4, padding="full"), "Invalid padding string"),
])
def test_module_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        nn.Conv2d(kernel_size=3, **kwargs)
