"""The losses of ``nn.functional`` and their modules (``nn/loss.py``): gradchecks in float64 on
broadcast, non-contiguous and edge shapes, PyTorch's reductions (and the legacy
``size_average``/``reduce``), weights, ``ignore_index`` and ``label_smoothing``, errors, and,
where PyTorch is installed, the same values and gradients as PyTorch for every combination and
the same ``state_dict`` keys for the modules. Runs on every kernel backend.
"""
import itertools
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck

REDUCTIONS = ["mean", "sum", "none"]


def rand(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed + 7 * sum(shape))
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


def probabilities(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed + 11 * sum(shape))
    return mt.tensor(rng.uniform(0.05, 0.95, shape), requires_grad=requires_grad)


def transposed(t):
    """The same values in a non-contiguous layout (the transpose of a contiguous array)."""
    base = mt.tensor(np.ascontiguousarray(t.detach().numpy().T), dtype=t.dtype)
    out = base.T.detach().requires_grad_(t.requires_grad)
    assert not out.is_contiguous()
    return out


# ----------------------------------------------------------------------------- PyTorch parity

torch_or_none = None
try:  # the parity tests below skip without PyTorch; everything else runs
    import torch as torch_or_none  # noqa: F811
except ImportError:
    pass

needs_torch = pytest.mark.skipif(torch_or_none is None, reason="PyTorch not installed")


def same_as_torch(mt_call, torch_call, arrays, differentiable=None, atol=1e-10):
    """Run ``mt_call`` and ``torch_call`` on the same float64 arrays (int arrays pass as
    targets); compare the result, then the gradients of the float inputs in
    ``differentiable`` (default: all) for a random upstream gradient."""
    torch = torch_or_none
    differentiable = range(len(arrays)) if differentiable is None else differentiable
    grads = [i in differentiable and a is not None and a.dtype.kind == "f"
             for i, a in enumerate(arrays)]
    m_in = [None if a is None else mt.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    t_in = [None if a is None else torch.tensor(a, requires_grad=g)
            for a, g in zip(arrays, grads)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got, want = mt_call(*m_in), torch_call(*t_in)
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-9,
                               atol=atol)
    if not any(grads):
        return
    upstream = np.random.default_rng(5).standard_normal(tuple(want.shape))
    (got * mt.tensor(upstream)).sum().backward()
    (want * torch.tensor(upstream)).sum().backward()
    for i, (m, t) in enumerate(zip(m_in, t_in)):
        if grads[i]:
            np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=atol,
                                       err_msg=f"gradient of argument {i}")


def np_rand(*shape, seed=0):
    return np.random.default_rng(seed + 13 * sum(shape)).standard_normal(shape)


def np_probabilities(*shape, seed=0):
    return np.random.default_rng(seed + 17 * sum(shape)).uniform(0.02, 0.98, shape)


# ----------------------------------------------------------------------------- regression losses

REGRESSION = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"]


@pytest.mark.parametrize("name", REGRESSION)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_loss_gradcheck_broadcast_and_non_contiguous(backend, name, reduction):
    fn = getattr(F, name)
    with pytest.warns(UserWarning, match="different to the input size"):
        assert gradcheck(lambda a, b: fn(a, b, reduction=reduction), (rand(2, 3), rand(1, 3)))
    assert gradcheck(lambda a, b: fn(a, b, reduction=reduction),
                     (transposed(rand(2, 3, seed=1)), rand(2, 3, seed=2)))
    assert gradcheck(lambda a, b: fn(a, b, reduction=reduction), (rand(), rand(seed=3)))
    assert gradgradcheck(lambda a, b: fn(a, b, reduction=reduction), (rand(4), rand(4, seed=4)))


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_loss_of_empty_input(name):
    fn = getattr(F, name)
    empty = mt.zeros(0, 3, dtype=mt.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # numpy: the mean of nothing
        assert np.isnan(fn(empty, empty).item())  # PyTorch's NaN
    assert fn(empty, empty, reduction="sum").item() == 0.0
    assert tuple(fn(empty, empty, reduction="none").shape) == (0, 3)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0, 2.5])
def test_smooth_l1_and_huber_across_their_threshold(backend, beta):
    # differences on both sides of beta (and equality, where the gradient is the L1 one's)
    a = mt.tensor([0.0, 0.1, -0.2, 0.9, -1.7, 4.0], dtype=mt.float64, requires_grad=True)
    b = mt.zeros(6, dtype=mt.float64)
    assert gradcheck(lambda x: F.smooth_l1_loss(x, b + 0.05, beta=beta), (a,))
    if beta > 0:
        assert gradcheck(lambda x: F.huber_loss(x, b + 0.05, delta=beta), (a,))
        np.testing.assert_allclose(F.huber_loss(a, b, delta=beta).item(),
                                   beta * F.smooth_l1_loss(a, b, beta=beta).item(), rtol=1e-12)


def test_l1_gradient_at_equality_is_zero(backend):
    x = mt.tensor([1.0, 2.0], dtype=mt.float64, requires_grad=True)
    F.l1_loss(x, mt.tensor([1.0, 0.0], dtype=mt.float64), reduction="sum").backward()
    assert x.grad.tolist() == [0.0, 1.0]  # sign(0) = 0, as PyTorch


@needs_torch
@pytest.mark.parametrize("name,weighted", [(name, weighted) for name in REGRESSION
                                           for weighted in (False, True)
                                           if not (weighted and name == "smooth_l1_loss")])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses_match_torch(name, reduction, weighted):
    torch = torch_or_none
    extra = {"smooth_l1_loss": {"beta": 0.7}, "huber_loss": {"delta": 0.6}}.get(name, {})
    weight = np.abs(np_rand(3, 4, seed=9)) if weighted else None
    # same shapes, and a broadcast target
    for target_shape in ((3, 4), (4,)):
        same_as_torch(lambda x, t, w: getattr(F, name)(x, t, reduction=reduction, weight=w,
                                                       **extra) if weighted else
                      getattr(F, name)(x, t, reduction=reduction, **extra),
                      lambda x, t, w: getattr(torch.nn.functional, name)(
                          x, t, reduction=reduction, weight=w, **extra) if weighted else
                      getattr(torch.nn.functional, name)(x, t, reduction=reduction, **extra),
                      [np_rand(3, 4), np_rand(*target_shape, seed=1), weight])


@needs_torch
@pytest.mark.parametrize("module,functional,kwargs", [
    (nn.MSELoss, "mse_loss", {}), (nn.L1Loss, "l1_loss", {}),
    (nn.SmoothL1Loss, "smooth_l1_loss", {"beta": 0.5}),
    (nn.HuberLoss, "huber_loss", {"delta": 0.5})])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_modules_match_torch(module, functional, kwargs, reduction):
    torch = torch_or_none
    ours = module(reduction=reduction, **kwargs)
    theirs = getattr(torch.nn, module.__name__)(reduction=reduction, **kwargs)
    assert repr(ours) == repr(theirs) and list(ours.state_dict()) == []
    same_as_torch(ours, theirs, [np_rand(2, 5), np_rand(2, 5, seed=3)])


def test_regression_errors():
    with pytest.raises(ValueError, match="does not broadcast"):
        F.mse_loss(mt.ones(2, 3), mt.ones(2))
    with pytest.raises(TypeError, match="floating point"):
        F.l1_loss(mt.ones(3, dtype=mt.int64), mt.ones(3, dtype=mt.int64))
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        F.mse_loss(mt.ones(2, 3), mt.ones(2, 3), weight=mt.ones(3))
    with pytest.raises(RuntimeError, match="negative values for beta"):
        F.smooth_l1_loss(mt.ones(3), mt.ones(3), beta=-1.0)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        F.huber_loss(mt.ones(3), mt.ones(3), delta=0.0)
    with pytest.raises(TypeError, match="delta"):
        nn.HuberLoss(delta="1")
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.mse_loss(mt.ones(3), mt.ones(3), reduction="avg")


# ----------------------------------------------------------------------------- legacy reduction

@pytest.mark.parametrize("size_average,reduce,expected", [
    (None, False, "none"), (False, None, "sum"), (True, True, "mean"), (False, False, "none"),
    (True, None, "mean")])
def test_legacy_size_average_and_reduce(size_average, reduce, expected):
    x, t = rand(2, 3), rand(2, 3, seed=1)
    with pytest.warns(UserWarning, match=f"reduction='{expected}'"):
        got = F.mse_loss(x, t, size_average=size_average, reduce=reduce, reduction="sum")
    np.testing.assert_array_equal(got.detach().numpy(),
                                  F.mse_loss(x, t, reduction=expected).detach().numpy())
    with pytest.warns(UserWarning, match="deprecated"):
        module = nn.CrossEntropyLoss(size_average=size_average, reduce=reduce)
    assert module.reduction == expected
    with pytest.warns(UserWarning, match="deprecated"):
        F.cross_entropy(x, mt.tensor([0, 2]), size_average=size_average, reduce=reduce)


# ----------------------------------------------------------------------------- KL divergence

@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_gradcheck(backend, reduction, log_target):
    target = probabilities(3, 4, seed=2)
    if log_target:
        target = target.detach().log().requires_grad_()
    assert gradcheck(lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
                     (rand(3, 4), target))
    assert gradcheck(lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
                     (transposed(rand(3, 4)), probabilities(4, seed=3)))  # broadcast target
    assert gradgradcheck(lambda x, t: F.kl_div(x, t, reduction=reduction,
                                               log_target=log_target), (rand(2, 3), rand(2, 3)))


def test_kl_div_zero_target_contributes_nothing(backend):
    x = rand(3)
    loss = F.kl_div(x, mt.tensor([0.0, 0.5, 0.5], dtype=mt.float64), reduction="none")
    assert loss.tolist()[0] == 0.0
    loss.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


def test_kl_div_mean_warns_and_batchmean_divides_by_the_batch():
    x, t = rand(2, 3, requires_grad=False), probabilities(2, 3, requires_grad=False)
    with pytest.warns(UserWarning, match="batchmean"):
        mean = F.kl_div(x, t)
    total = F.kl_div(x, t, reduction="sum").item()
    assert mean.item() == pytest.approx(total / 6, rel=1e-12)
    assert F.kl_div(x, t, reduction="batchmean").item() == pytest.approx(total / 2, rel=1e-12)
    assert F.kl_div(x[0, 0], t[0, 0], reduction="batchmean").item() == pytest.approx(
        F.kl_div(x[0, 0], t[0, 0], reduction="sum").item())  # 0-d: nothing to divide by
    with pytest.raises(ValueError, match="reduction"):
        F.kl_div(x, t, reduction="batch")


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target):
    torch = torch_or_none
    target = np_probabilities(3, 5)
    target[0, 1] = 0.0 if not log_target else target[0, 1]
    target = np.log(target) if log_target else target
    same_as_torch(lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
                  lambda x, t: torch.nn.functional.kl_div(x, t, reduction=reduction,
                                                          log_target=log_target),
                  [np.log(np_probabilities(3, 5, seed=1)), target],
                  differentiable=[0] if not log_target else None)
    module = nn.KLDivLoss(reduction=reduction, log_target=log_target)
    assert list(module.state_dict()) == [] and repr(module) == "KLDivLoss()"


# ----------------------------------------------------------------------------- binary

@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_gradcheck(backend, reduction):
    assert gradcheck(lambda p, t: F.binary_cross_entropy(p, t, reduction=reduction),
                     (probabilities(2, 3), probabilities(2, 3, seed=1)))
    w = rand(3, seed=2)
    assert gradcheck(lambda p, w: F.binary_cross_entropy(p, probabilities(
        2, 3, seed=3, requires_grad=False), weight=w, reduction=reduction),
        (transposed(probabilities(2, 3)), w))
    assert gradgradcheck(lambda p: F.binary_cross_entropy(p, probabilities(
        4, seed=4, requires_grad=False), reduction=reduction), (probabilities(4),))


def test_binary_cross_entropy_at_zero_and_one_is_finite(backend):
    p = mt.tensor([0.0, 1.0, 0.0, 1.0], dtype=mt.float64, requires_grad=True)
    t = mt.tensor([1.0, 0.0, 0.0, 1.0], dtype=mt.float64)
    loss = F.binary_cross_entropy(p, t, reduction="none")
    assert loss.tolist() == [100.0, 100.0, 0.0, 0.0]  # log clamped at -100, as PyTorch
    loss.sum().backward()
    assert p.grad.tolist() == [-1e12, 1e12, 0.0, 0.0]  # (p - t) / max(p(1 - p), 1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits_gradcheck(backend, reduction):
    def loss(x, t, w, pw):
        return F.binary_cross_entropy_with_logits(x, t, w, reduction=reduction, pos_weight=pw)
    assert gradcheck(loss, (rand(2, 3), probabilities(2, 3), rand(3, seed=1),
                            probabilities(2, 1, seed=2)))
    assert gradcheck(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
                     (transposed(rand(2, 3)), probabilities(2, 3, seed=3)))
    assert gradgradcheck(loss, (rand(4), probabilities(4), rand(4, seed=1),
                                probabilities(4, seed=2)))


def test_binary_cross_entropy_with_logits_is_stable_and_right_at_zero(backend):
    x = mt.tensor([-800.0, 0.0, 0.0, 800.0], dtype=mt.float64, requires_grad=True)
    t = mt.tensor([1.0, 1.0, 0.25, 0.0], dtype=mt.float64)
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [800.0, np.log(2), np.log(2), 800.0])
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [-1.0, -0.5, 0.25, 1.0])  # sigmoid(x) - t


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 4)])
def test_binary_losses_match_torch(reduction, weight_shape):
    torch = torch_or_none
    weight = None if weight_shape is None else np.abs(np_rand(*weight_shape, seed=4))
    same_as_torch(lambda p, t, w: F.binary_cross_entropy(p, t, w, reduction=reduction),
                  lambda p, t, w: torch.nn.functional.binary_cross_entropy(
                      p, t, w, reduction=reduction),
                  [np_probabilities(3, 4), np_probabilities(3, 4, seed=1), weight],
                  differentiable=[0, 1])
    for pos_weight_shape in (None, (4,), (3, 1)):
        pos_weight = None if pos_weight_shape is None else \
            np.abs(np_rand(*pos_weight_shape, seed=5))
        same_as_torch(lambda x, t, w, pw: F.binary_cross_entropy_with_logits(
                          x, t, w, reduction=reduction, pos_weight=pw),
                      lambda x, t, w, pw: torch.nn.functional.binary_cross_entropy_with_logits(
                          x, t, w, reduction=reduction, pos_weight=pw),
                      [4 * np_rand(3, 4), np_probabilities(3, 4, seed=2), weight, pos_weight],
                      differentiable=[0, 1])


@needs_torch
def test_binary_loss_modules_match_torch():
    torch = torch_or_none
    w, pw = np.abs(np_rand(4)), np.abs(np_rand(4, seed=1))
    for ours, theirs in [
            (nn.BCELoss(mt.tensor(w)), torch.nn.BCELoss(torch.tensor(w))),
            (nn.BCELoss(reduction="sum"), torch.nn.BCELoss(reduction="sum"))]:
        assert list(ours.state_dict()) == list(theirs.state_dict())
        same_as_torch(ours, theirs, [np_probabilities(2, 4), np_probabilities(2, 4, seed=1)],
                      differentiable=[0])
    for kwargs in ({}, {"weight": w}, {"pos_weight": pw}, {"weight": w, "pos_weight": pw}):
        ours = nn.BCEWithLogitsLoss(reduction="none",
                                    **{k: mt.tensor(v) for k, v in kwargs.items()})
        theirs = torch.nn.BCEWithLogitsLoss(reduction="none",
                                            **{k: torch.tensor(v) for k, v in kwargs.items()})
        assert list(ours.state_dict()) == list(theirs.state_dict())  # weight, pos_weight
        same_as_torch(ours, theirs, [np_rand(2, 4), np_probabilities(2, 4)], differentiable=[0])


def test_binary_cross_entropy_errors():
    p = probabilities(2, 3, requires_grad=False)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(p * 2.0, p)
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(mt.tensor([float("nan")]), mt.tensor([1.0]))
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy(p, p[0])
    with pytest.raises(ValueError, match="must be the same as input size"):
        F.binary_cross_entropy_with_logits(p, p[:, :2])
    with pytest.raises(ValueError, match="weight"):
        F.binary_cross_entropy(p[0], p[0], weight=mt.ones(2, 3))  # would grow the loss
    with pytest.raises(ValueError, match="pos_weight"):
        F.binary_cross_entropy_with_logits(p, p, pos_weight=mt.ones(2))
    with pytest.raises(TypeError, match="floating point"):
        F.binary_cross_entropy_with_logits(p, mt.ones(2, 3, dtype=mt.int64))


# ----------------------------------------------------------------------------- class losses

CLASS_CASES = [  # (input shape, target shape)
    ((5, 4), (5,)), ((3, 4, 2, 2), (3, 2, 2)), ((4,), ())]


def class_targets(shape, classes, ignore_index, seed=0):
    t = np.random.default_rng(seed).integers(0, classes, shape)
    if t.ndim:
        t.flat[1] = ignore_index  # an ignored target (with -100; 2 may come up by chance too)
    return t


@needs_torch
@pytest.mark.parametrize("shapes", CLASS_CASES, ids=str)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted,smoothing,ignore_index",
                         list(itertools.product([False, True], [0.0, 0.2], [-100, 2])))
def test_cross_entropy_matches_torch(shapes, reduction, weighted, smoothing, ignore_index):
    torch = torch_or_none
    in_shape, t_shape = shapes
    classes = in_shape[1] if len(in_shape) > 1 else in_shape[0]
    weight = np.random.default_rng(1).uniform(0.2, 2.0, classes) if weighted else None
    kwargs = dict(reduction=reduction, label_smoothing=smoothing, ignore_index=ignore_index)
    target = class_targets(t_shape, classes, ignore_index)
    if reduction == "mean" and (target == ignore_index).all():
        pytest.skip("all ignored: minitorch gives 0 where PyTorch gives NaN (documented)")
    same_as_torch(lambda x, t, w: F.cross_entropy(x, t, w, **kwargs),
                  lambda x, t, w: torch.nn.functional.cross_entropy(x, t, w, **kwargs),
                  [np_rand(*in_shape), target, weight], differentiable=[0])
    ours = nn.CrossEntropyLoss(None if weight is None else mt.tensor(weight), **kwargs)
    theirs = torch.nn.CrossEntropyLoss(None if weight is None else torch.tensor(weight),
                                       **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    same_as_torch(ours, theirs, [np_rand(*in_shape, seed=2), target])
    # NLL on log-probabilities: no smoothing there
    nll = dict(reduction=reduction, ignore_index=ignore_index)
    log_probs = np.log(np_probabilities(*in_shape, seed=3))
    same_as_torch(lambda x, t, w: F.nll_loss(x, t, w, **nll),
                  lambda x, t, w: torch.nn.functional.nll_loss(x, t, w, **nll),
                  [log_probs, target, weight], differentiable=[0])
    ours = nn.NLLLoss(None if weight is None else mt.tensor(weight), **nll)
    theirs = torch.nn.NLLLoss(None if weight is None else torch.tensor(weight), **nll)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    same_as_torch(ours, theirs, [log_probs, target])


@needs_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_with_probabilities_matches_torch(reduction, weighted, smoothing):
    torch = torch_or_none
    weight = np.random.default_rng(1).uniform(0.2, 2.0, 4) if weighted else None
    target = np_probabilities(3, 4, 2)
    target /= target.sum(1, keepdims=True)
    kwargs = dict(reduction=reduction, label_smoothing=smoothing)
    same_as_torch(lambda x, t, w: F.cross_entropy(x, t, w, **kwargs),
                  lambda x, t, w: torch.nn.functional.cross_entropy(x, t, w, **kwargs),
                  [np_rand(3, 4, 2), target, weight], differentiable=[0, 1])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_weight_and_smoothing_gradcheck(backend, reduction):
    w = mt.tensor([0.5, 2.0, 1.0], dtype=mt.float64)
    target = mt.tensor([[1, 0], [2, -100]])
    assert gradcheck(lambda x: F.cross_entropy(x, target, w, reduction=reduction,
                                               label_smoothing=0.25), (rand(2, 3, 2),))
    assert gradgradcheck(lambda x: F.cross_entropy(x, target[:, 0], w, reduction=reduction,
                                                   label_smoothing=0.25), (rand(2, 3),))


def test_class_loss_errors():
    with pytest.raises(ValueError, match="weight must have shape"):
        F.nll_loss(rand(3, 4), mt.tensor([0, 1, 2]), weight=mt.ones(3))
    with pytest.raises(ValueError, match="weight must have shape"):
        F.cross_entropy(rand(3, 4), mt.tensor([0, 1, 2]), weight=mt.ones(3), label_smoothing=0.1)
    with pytest.raises(ValueError, match="label_smoothing"):
        nn.CrossEntropyLoss(label_smoothing=1.5)(rand(3, 4), mt.tensor([0, 1, 2]))
    with pytest.raises(IndexError, match="target value 4"):
        nn.NLLLoss()(rand(3, 4), mt.tensor([0, 4, 2]))


def test_loss_module_weight_is_a_buffer_that_follows_dtype():
    loss = nn.CrossEntropyLoss(weight=mt.tensor([1.0, 2.0]))
    assert [name for name, _ in loss.named_buffers()] == ["weight"]
    assert list(loss.parameters()) == []
    loss.double()
    assert loss.weight.dtype == mt.float64
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    assert "weight" in nn.BCEWithLogitsLoss(weight=mt.ones(2)).state_dict()
