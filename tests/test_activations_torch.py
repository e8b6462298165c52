"""The activations and maths added beside the basics (ops/activations.py, ops/pointwise_math.py,
ops/norms.py) against PyTorch, at the points where formulas differ in their details: kinks
(0, ±lambd, ±3, the clip bounds), ±inf and NaN, for values and gradients; and the layers' reprs.
Skipped where PyTorch is not installed (the op table checks the same ops against numpy)."""
import numpy as np
import pytest

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F

torch = pytest.importorskip("torch", reason="PyTorch is not installed")

POINTS = np.array([-100, -6, -4, -3, -1, -0.5, -1e-3, 0, 1e-3, 0.5, 1, 3, 4, 6, 7, 100,
                   np.nan, -np.inf, np.inf])

ACTIVATIONS = {
    "relu6": {}, "hardtanh": {}, "hardtanh ": dict(min_val=-0.5, max_val=3.0),
    "leaky_relu": {}, "leaky_relu ": dict(negative_slope=0.2), "elu": {}, "elu ": dict(alpha=0.5),
    "selu": {}, "celu": {}, "celu ": dict(alpha=2.0), "softsign": {}, "hardsigmoid": {},
    "hardswish": {}, "logsigmoid": {}, "tanhshrink": {}, "softshrink": {},
    "softshrink ": dict(lambd=1.0), "hardshrink": {}, "hardshrink ": dict(lambd=1.0),
    "threshold": dict(threshold=0.5, value=-2.0)}
MATHS = ["log1p", "expm1", "log2", "log10", "exp2", "reciprocal", "tan", "sinh", "cosh",
         "asin", "acos", "atan", "frac", "nan_to_num", "logit"]


def _compare(mt_fn, torch_fn, x, grad_rtol=1e-12):
    ours = minitorch.tensor(x, requires_grad=True)
    theirs = torch.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        out = mt_fn(ours)
        out.sum().backward()
    expected = torch_fn(theirs)
    expected.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12,
                               atol=0, equal_nan=True)
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=grad_rtol, atol=0,
                               equal_nan=True)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activations_match_pytorch_at_kinks_and_non_finite_points(name):
    kwargs = ACTIVATIONS[name]
    # PyTorch's float64 hardsigmoid slope is 1/6 rounded to float32
    grad_rtol = 1e-7 if name == "hardsigmoid" else 1e-12
    _compare(lambda t: getattr(F, name.strip())(t, **kwargs),
             lambda t: getattr(torch.nn.functional, name.strip())(t, **kwargs), POINTS, grad_rtol)


@pytest.mark.parametrize("name", MATHS)
def test_maths_match_pytorch_including_non_finite_points(name):
    x = POINTS / 200 if name in ("asin", "acos", "logit") else POINTS
    _compare(getattr(minitorch, name), getattr(torch, name), x)


@pytest.mark.parametrize("name", ["atan2", "hypot", "logaddexp"])
def test_binary_maths_match_pytorch(name):
    a = np.array([0.0, 1.0, -1.0, 2.0, -3.0, 1.0])
    b = np.array([1.0, 0.5, -1.0, 2.0, 0.25, 1.0])  # a == b for logaddexp's split gradient
    ours = [minitorch.tensor(v, requires_grad=True) for v in (a, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (a, b)]
    getattr(minitorch, name)(*ours).sum().backward()
    getattr(torch, name)(*theirs).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_prod_gradient_with_one_and_with_two_zeros_matches_pytorch():
    x = np.array([[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0], [1.5, 2.0, -1.0, 0.5]])
    _compare(lambda t: minitorch.prod(t, 1), lambda t: torch.prod(t, 1), x)
    _compare(lambda t: minitorch.prod(t), lambda t: torch.prod(t), x[2])


def test_the_layers_print_as_pytorch_s():
    pairs = [("ReLU6", (True,)), ("LeakyReLU", (0.2, True)), ("ELU", (0.5,)), ("SELU", ()),
             ("CELU", ()), ("Hardtanh", (-2.0, 2.0)), ("Hardsigmoid", ()), ("Hardswish", ()),
             ("Softsign", ()), ("LogSigmoid", ()), ("Tanhshrink", ()), ("Softshrink", ()),
             ("Hardshrink", (0.25,)), ("Threshold", (0.1, 20)), ("GLU", ()), ("Softmin", (1,)),
             ("CosineSimilarity", ()), ("PairwiseDistance", ())]
    for name, args in pairs:
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args)), name


def test_the_layers_compute_their_functions():
    x = np.random.default_rng(0).standard_normal((3, 4))
    for name, args in [("GLU", ()), ("Softmin", (1,)), ("Hardswish", ()), ("CELU", (0.5,))]:
        ours = getattr(nn, name)(*args)(minitorch.tensor(x))
        theirs = getattr(torch.nn, name)(*args)(torch.tensor(x))
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)
    a, b = minitorch.tensor(x), minitorch.tensor(x[::-1].copy())
    ta, tb = torch.tensor(x), torch.tensor(x[::-1].copy())
    np.testing.assert_allclose(nn.CosineSimilarity(dim=0)(a, b).numpy(),
                               torch.nn.CosineSimilarity(dim=0)(ta, tb).numpy(), rtol=1e-12)
    np.testing.assert_allclose(nn.PairwiseDistance(p=1.0, keepdim=True)(a, b).numpy(),
                               torch.nn.PairwiseDistance(p=1.0, keepdim=True)(ta, tb).numpy(),
                               rtol=1e-12)
