"""Rounding and modulo: ``round`` (half to even, to ``decimals`` places), ``floor``, ``ceil``,
``trunc``, ``fmod`` and ``remainder`` (``%``), with their in-place forms.

The rounding functions are steps: their derivative is zero wherever it exists, and that is the
gradient they give (as PyTorch). On integer tensors they return a copy of the input.
``remainder`` takes the sign of the divisor (Python's ``%``, ``a - b·floor(a/b)``); ``fmod``
that of the dividend (C's ``fmod``, ``a - b·trunc(a/b)``); their gradients are 1 for ``a`` and
``-floor(a/b)`` (``-trunc(a/b)``) for ``b``. An integer division by zero raises, as in PyTorch;
a float one gives NaN.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import broadcast_operands, unbroadcast
from .registry import op

_make = Tensor._make


class Step(Function):
    """A piecewise constant function of the input, ``fn`` on its array: zero gradient."""

    @staticmethod
    def forward(ctx, a, fn):
        return _make(fn(a._data))

    @staticmethod
    def backward(ctx, grad):
        return _make(np.zeros_like(grad._data)), None


def _step(input, fn, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if input.dtype.name == "bool":
        raise NotImplementedError(f"{name}: not implemented for bool tensors (as in PyTorch)")
    if not input.dtype.is_floating_point:
        return _make(input._data.copy())  # integers are whole already
    return Step.apply(input, fn)


@op(inplace="floor_")
def floor(input):
    """The largest integer <= each element (integer tensors: a copy)."""
    return _step(input, np.floor, "floor")


@op(inplace="ceil_")
def ceil(input):
    """The smallest integer >= each element (integer tensors: a copy)."""
    return _step(input, np.ceil, "ceil")


@op(inplace="trunc_")
def trunc(input):
    """Each element rounded toward zero (integer tensors: a copy)."""
    return _step(input, np.trunc, "trunc")


def _round_half_even(x, decimals):
    """PyTorch's rounding: rint (half to even) of x·10^d, divided back (for d < 0: of x / 10^-d,
    multiplied back), in x's own precision."""
    if decimals == 0:
        return np.rint(x)
    scale = x.dtype.type(10.0 ** abs(decimals))
    with np.errstate(over="ignore", invalid="ignore"):
        return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


@op(inplace="round_")
def round(input, *, decimals=0):
    """Each element rounded to ``decimals`` decimal places, ties to even (``round(2.5)`` is 2,
    as in PyTorch and numpy, unlike C's round). Integer tensors: a copy (``decimals=0`` only)."""
    if isinstance(decimals, bool) or not isinstance(decimals, (int, np.integer)):
        raise TypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if (isinstance(input, Tensor) and not input.dtype.is_floating_point and decimals != 0
            and input.dtype.name != "bool"):
        raise NotImplementedError(f"round: decimals={decimals} is not implemented for integer "
                                  "tensors (as in PyTorch)")
    return _step(input, lambda x: _round_half_even(x, int(decimals)), "round")


class Modulo(Function):
    """``a mod b`` for floats: ``remainder`` (``floor``) or ``fmod`` (``trunc``)."""

    @staticmethod
    def forward(ctx, a, b, rounding_mode):
        ctx.shapes = a.shape, b.shape
        x, y = a._data, b._data
        with np.errstate(divide="ignore", invalid="ignore"):
            if ctx.needs_input_grad[1]:
                # The quotient is piecewise constant: kept as a constant, not a function of the
                # inputs, so an in-place form (x.remainder_(y)) leaves backward nothing stale.
                ctx.quotient = _make(np.floor_divide(x, y) if rounding_mode == "floor"
                                     else np.trunc(x / y))
            return _make((np.remainder if rounding_mode == "floor" else np.fmod)(x, y))

    @staticmethod
    def backward(ctx, grad):
        shape_a, shape_b = ctx.shapes
        grad_a = unbroadcast(grad, shape_a) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(-grad * ctx.quotient, shape_b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


def _modulo(input, other, rounding_mode, name):
    input, other = broadcast_operands(input, other, name)
    if input.dtype.name == "bool":
        raise NotImplementedError(f"{name}: not implemented for bool tensors (as in PyTorch)")
    if input.dtype.is_floating_point:
        return Modulo.apply(input, other, rounding_mode)
    if not np.all(other._data):
        raise RuntimeError(f"{name}: ZeroDivisionError: integer division by zero (other has a "
                           "zero)")
    fn = np.remainder if rounding_mode == "floor" else np.fmod
    return _make(fn(input._data, other._data))


@op(methods="__mod__", reflected="__rmod__", inplace="remainder_ __imod__")
def remainder(input, other):
    """input - other · floor(input / other): Python's ``%``, the sign of ``other``. Either may
    be a number (``5 % x``)."""
    return _modulo(input, other, "floor", "remainder")


@op(inplace="fmod_")
def fmod(input, other):
    """input - other · trunc(input / other): C's ``fmod``, the sign of ``input``."""
    if not isinstance(input, Tensor):
        raise TypeError(f"fmod: input must be a Tensor, got {type(input).__name__}")
    return _modulo(input, other, "trunc", "fmod")
