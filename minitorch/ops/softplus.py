"""Softplus, a smooth ReLU (1/β)·log(1 + e^(β·x)), and Mish, x·tanh(softplus(x)), built on it.

``F.softplus`` and ``F.mish`` as in PyTorch (neither is ``torch.<name>`` nor a Tensor method).
Softplus is its own Function rather than a composite of ``log``, ``exp`` and ``abs``: the stable
composite relu(x) + log(1 + e^−|x|) gets a wrong derivative at x = 0 (the subgradients of
relu and abs there are 0, so the sum's would be 0 instead of σ(0) = ½), and zero is where
freshly initialised logits sit. ``binary_cross_entropy_with_logits`` (losses.py) relies on it.
"""
import numpy as np

from .. import backends
from ..autograd.function import Function
from ..autograd.grad_mode import _state as _grad_mode
from ..tensor import Tensor
from .elementwise import sigmoid, tanh, where
from .registry import apply_inplace, op

_make = Tensor._make
_KERNEL_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # the sigmoid kernel's own


class Softplus(Function):
    """(1/β)·log(1 + e^(β·x)), and x itself where β·x > threshold (as PyTorch, for stability),
    on the backend's kernel; its derivative σ(β·x) (1 past the threshold) is written in Tensor
    ops."""

    @staticmethod
    def forward(ctx, x, beta, threshold):
        ctx.beta, ctx.threshold = beta, threshold
        ctx.save_for_backward(x)
        return _make(backends.current().softplus_forward(x._data, beta, threshold))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        data, dy = x._data, grad._data
        if (not _grad_mode.enabled and type(data) is np.ndarray and type(dy) is np.ndarray
                and data.dtype in _KERNEL_DTYPES and dy.dtype == data.dtype and data.ndim):
            # No graph to record: the same values on the arrays, one kernel and a product
            # instead of five nodes (the slope σ(β·x) is the sigmoid kernel's, as below)
            scaled = data * data.dtype.type(ctx.beta) if ctx.beta != 1.0 else data
            slope = backends.current().sigmoid_forward(scaled)
            past = scaled > ctx.threshold
            if past.any():
                slope[past] = 1
            return _make(np.multiply(dy, slope, out=slope)), None, None
        scaled = x * ctx.beta
        return where(scaled > ctx.threshold, grad, grad * sigmoid(scaled)), None, None


def _check_floating(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a minitorch Tensor, got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{name}: input must be floating point, got {input.dtype}")


@op(function=False, method=False, functional=True)
def softplus(input, beta=1.0, threshold=20.0):
    """(1/β)·log(1 + e^(β·x)); linear (x) where β·x > threshold, as ``F.softplus``."""
    _check_floating(input, "softplus")
    return Softplus.apply(input, float(beta), float(threshold))


@op(function=False, method=False, functional=True)
def mish(input, inplace=False):
    """x·tanh(softplus(x)) (Misra 2019), as ``F.mish``."""
    if inplace:
        return apply_inplace(input, mish)
    _check_floating(input, "mish")
    return input * tanh(Softplus.apply(input, 1.0, 20.0))
