"""The elementwise losses of ``torch.nn.functional``: ``mse_loss``, ``l1_loss``,
``smooth_l1_loss``, ``huber_loss``, ``kl_div``, ``binary_cross_entropy`` and
``binary_cross_entropy_with_logits``, and the ``reduction`` argument every loss shares
(``reduction_argument``, ``reduce_loss``; nn/functional.py's class losses use them too).

Each loss is a per-element formula in Tensor ops followed by its reduction, so autograd
differentiates it (twice, too), except where that would go wrong at the edges:
``binary_cross_entropy`` has a Function of its own whose gradient is PyTorch's
(x − t) / max(x(1 − x), 1e-12), finite at x = 0 and 1, where the composite's would be 0/0,
and the logits form uses softplus (softplus.py), whose derivative is right at 0.
Arguments, defaults, broadcasting (and its warning), the legacy ``size_average``/``reduce``
and the errors are PyTorch's. These are ``nn.functional`` names only (``functional=True``).
May import: ``minitorch.tensor``, ``minitorch.autograd``, the other op families.
"""
import math
import warnings

import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import promote_types
from .elementwise import clamp, exp, where
from .registry import op
from .softplus import Softplus

_make = Tensor._make

REDUCTIONS = ("none", "mean", "sum")


# ----------------------------------------------------------------------------- reductions

def reduction_argument(reduction, size_average=None, reduce=None, allowed=REDUCTIONS):
    """The reduction a loss applies: ``reduction``, or what PyTorch's deprecated ``size_average``
    and ``reduce`` (either given) stand for, with PyTorch's deprecation warning."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        reduction = "mean" if size_average and reduce else ("sum" if reduce else "none")
        warnings.warn("size_average and reduce args will be deprecated, please use "
                      f"reduction='{reduction}' instead.", UserWarning, stacklevel=3)
        return reduction
    if reduction not in allowed:
        raise ValueError(f"{reduction!r} is not a valid value for reduction (expected one of "
                         f"{', '.join(repr(r) for r in allowed)})")
    return reduction


def reduce_loss(loss, reduction):
    """The per-element ``loss`` itself ("none"), its sum, or its mean (NaN when empty, as
    PyTorch's)."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


# ----------------------------------------------------------------------------- checks

def _check_tensor(value, name):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected a minitorch Tensor, got {type(value).__name__}")


def _check_pair(input, target, name, warn_broadcast=True):
    """Both tensors, a floating point result, shapes that broadcast (with PyTorch's warning
    when they differ: broadcasting a target is usually a bug)."""
    _check_tensor(input, f"{name}: input")
    _check_tensor(target, f"{name}: target")
    if not promote_types(input.dtype, target.dtype).is_floating_point:
        raise TypeError(f"{name}: input and target must be floating point, got {input.dtype} "
                        f"and {target.dtype}")
    if tuple(input.shape) == tuple(target.shape):
        return
    try:
        np.broadcast_shapes(tuple(input.shape), tuple(target.shape))
    except ValueError:
        raise ValueError(f"{name}: target of shape {tuple(target.shape)} does not broadcast "
                         f"with input of shape {tuple(input.shape)}") from None
    if warn_broadcast:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect "
                      "results due to broadcasting. Please ensure they have the same size.",
                      UserWarning, stacklevel=3)


def _check_same_shape(input, target, name):
    _check_tensor(input, f"{name}: input")
    _check_tensor(target, f"{name}: target")
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"{name}: target size {tuple(target.shape)} must be the same as input "
                         f"size {tuple(input.shape)}")
    for what, t in (("input", input), ("target", target)):
        if not t.dtype.is_floating_point:
            raise TypeError(f"{name}: {what} must be floating point, got {t.dtype}")


def _check_expands_to(value, shape, name):
    """``value`` (a weight) must broadcast to ``shape`` without growing it, as in PyTorch."""
    _check_tensor(value, name)
    try:
        grown = np.broadcast_shapes(tuple(value.shape), shape)
    except ValueError:
        grown = None
    if grown != shape:
        raise ValueError(f"{name}: shape {tuple(value.shape)} does not broadcast to the input's "
                         f"shape {shape}")


def _weighted(loss, weight, input, reduction, name, mean="by weight"):
    """PyTorch's per-element ``weight`` of the regression losses: exactly input's shape; "mean"
    divides by the weights' sum (mse, l1) or by the number of elements (huber)."""
    if weight is None:
        return reduce_loss(loss, reduction)
    _check_tensor(weight, f"{name}: weight")
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{name}: Weights and input must have the same size, got weight "
                         f"{tuple(weight.shape)} and input {tuple(input.shape)}")
    loss = loss * weight
    if reduction == "mean" and mean == "by weight":
        return loss.sum() / weight.sum()
    return reduce_loss(loss, reduction)


# ----------------------------------------------------------------------------- regression

@op(function=False, method=False, functional=True)
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input − target)², reduced; target broadcasts (with PyTorch's warning)."""
    _check_pair(input, target, "mse_loss")
    reduction = reduction_argument(reduction, size_average, reduce)
    diff = input - target
    return _weighted(diff * diff, weight, input, reduction, "mse_loss")


@op(function=False, method=False, functional=True)
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input − target|, reduced (the gradient at equality is 0, as PyTorch's sign(0))."""
    _check_pair(input, target, "l1_loss")
    reduction = reduction_argument(reduction, size_average, reduce)
    return _weighted((input - target).abs(), weight, input, reduction, "l1_loss")


@op(function=False, method=False, functional=True)
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5·d²/β where |d| < β, else |d| − 0.5·β (d = input − target); β = 0 is the L1 loss."""
    _check_pair(input, target, "smooth_l1_loss")
    reduction = reduction_argument(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got "
                           f"{beta}")
    diff = input - target
    size = diff.abs()
    if beta == 0:
        return reduce_loss(size, reduction)
    return reduce_loss(where(size < beta, 0.5 * diff * diff / beta, size - 0.5 * beta),
                       reduction)


@op(function=False, method=False, functional=True)
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5·d² where |d| < δ, else δ·(|d| − 0.5·δ): smooth_l1_loss times δ (with β = δ)."""
    _check_pair(input, target, "huber_loss")
    reduction = reduction_argument(reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got "
                           f"{delta}")
    diff = input - target
    size = diff.abs()
    loss = where(size < delta, 0.5 * diff * diff, delta * (size - 0.5 * delta))
    return _weighted(loss, weight, input, reduction, "huber_loss", mean="by count")


# ----------------------------------------------------------------------------- divergences

def _xlogy_self(t):
    """t·log t with 0·log 0 = 0 (and a zero gradient there instead of −inf)."""
    return t * where(t > 0, t, 1.0).log()


@op(function=False, method=False, functional=True)
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL divergence target·(log target − input) with ``input`` log-probabilities, and
    ``target`` probabilities (or log-probabilities with ``log_target``).

    ``reduction="batchmean"`` divides the sum by the batch size input.shape[0] (the KL
    divergence's definition); "mean" divides by the number of elements, with PyTorch's warning.
    """
    _check_pair(input, target, "kl_div", warn_broadcast=False)
    if size_average is not None or reduce is not None:
        reduction = reduction_argument(reduction, size_average, reduce)
    else:
        reduction_argument(reduction, allowed=("none", "batchmean", "sum", "mean"))
        if reduction == "mean":
            warnings.warn("reduction: 'mean' divides the total loss by both the batch size and "
                          "the support size.'batchmean' divides only by the batch size, and "
                          "aligns with the KL div math definition.'mean' will be changed to "
                          "behave the same as 'batchmean' in the next major release.",
                          UserWarning, stacklevel=2)
    if log_target:
        loss = exp(target) * (target - input)
    else:
        loss = _xlogy_self(target) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.ndim else total
    return reduce_loss(loss, reduction)


# ----------------------------------------------------------------------------- binary

_BCE_EPSILON = 1e-12  # PyTorch's floor on x(1 − x) in the gradient


class BinaryCrossEntropy(Function):
    """−(t·log x + (1 − t)·log(1 − x)) per element, each log floored at −100 (PyTorch's), so
    x = 0 or 1 gives 100, not inf. Gradients (Tensor ops): (x − t) / max(x(1 − x), 1e-12) for
    x and log((1 − x) / x) for t, PyTorch's formulas."""

    @staticmethod
    def forward(ctx, input, target):
        ctx.save_for_backward(input, target)
        x, t = input._data, target._data
        with np.errstate(divide="ignore"):
            log_x = np.maximum(np.log(x), -100)
            log_not_x = np.maximum(np.log1p(-x), -100)
        return _make(((t - 1) * log_not_x - t * log_x).astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, grad):
        x, t = ctx.saved_tensors
        grad_x = grad_t = None
        if ctx.needs_input_grad[0]:
            grad_x = grad * (x - t) / clamp((1.0 - x) * x, min=_BCE_EPSILON)
        if ctx.needs_input_grad[1]:
            grad_t = grad * ((1.0 - x).log() - x.log())
        return grad_x, grad_t


@op(function=False, method=False, functional=True)
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """−w·(t·log x + (1 − t)·log(1 − x)) for probabilities x in [0, 1] (each log floored at
    −100, as PyTorch); ``weight`` broadcasts to the input's shape."""
    reduction = reduction_argument(reduction, size_average, reduce)
    _check_same_shape(input, target, "binary_cross_entropy")
    x = input._data
    if x.size and not ((x >= 0) & (x <= 1)).all():  # NaN fails both comparisons
        raise RuntimeError("binary_cross_entropy: all elements of input should be between 0 "
                           "and 1")
    loss = BinaryCrossEntropy.apply(input, target.to(input.dtype))
    if weight is not None:
        _check_expands_to(weight, tuple(input.shape), "binary_cross_entropy: weight")
        loss = loss * weight
    return reduce_loss(loss, reduction)


@op(function=False, method=False, functional=True)
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(x), t) computed from the logits x without overflow:
    (1 − t)·x + (1 + (p − 1)·t)·softplus(−x), with ``pos_weight`` p (1 if None) weighting the
    positive term and ``weight`` each element; both broadcast to the input's shape."""
    reduction = reduction_argument(reduction, size_average, reduce)
    _check_same_shape(input, target, "binary_cross_entropy_with_logits")
    target = target.to(input.dtype)
    # No threshold: logaddexp is stable everywhere, and exact where the linear cut is not.
    softplus_neg = Softplus.apply(-input, 1.0, math.inf)
    if pos_weight is not None:
        _check_expands_to(pos_weight, tuple(input.shape),
                          "binary_cross_entropy_with_logits: pos_weight")
        softplus_neg = (1.0 + (pos_weight - 1.0) * target) * softplus_neg
    loss = (1.0 - target) * input + softplus_neg
    if weight is not None:
        _check_expands_to(weight, tuple(input.shape), "binary_cross_entropy_with_logits: weight")
        loss = loss * weight
    return reduce_loss(loss, reduction)
