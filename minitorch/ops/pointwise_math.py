"""The elementwise maths PyTorch has beyond the basics of elementwise.py.

Unary, each a numpy ufunc forward and its derivative in Tensor ops (so it differentiates again):

    log1p  log(1 + x)   1 / (1 + x)          expm1  e^x - 1      e^x = y + 1
    log2   log x / log 2   1 / (x log 2)     log10  log x / log 10   1 / (x log 10)
    exp2   2^x          y log 2              reciprocal  1 / x   -y^2
    tan    tan x        1 + y^2              sinh / cosh          cosh x / sinh x
    asin   1 / sqrt(1 - x^2)                 acos  -1 / sqrt(1 - x^2)
    atan   1 / (1 + x^2)                     logit  log(x / (1 - x))   1 / (x (1 - x)),
                                                                        NaN outside [0, 1]

and ``frac`` (x - trunc x, derivative 1), ``nan_to_num`` (the gradient passes where x is
finite, as PyTorch's); binary ``atan2`` and ``hypot`` (Functions with their partial
derivatives), ``logaddexp``, ``lerp``, ``addcmul`` and ``addcdiv`` (composites of Tensor ops).
Integer inputs compute in the default float dtype, as in PyTorch.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import math

import numpy as np

from ..device_arrays import as_array
from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import broadcast_operands, unbroadcast
from .elementwise import _floating, abs, exp, maximum, sqrt, where
from .registry import op

_make = Tensor._make


def _unary_function(name, forward, slope):
    """A Function computing ``forward(x)`` (a numpy call) whose derivative is
    ``slope(x, y)`` in Tensor ops (y the output)."""
    def forward_fn(ctx, a):
        with np.errstate(all="ignore"):  # NaN and inf where the maths gives them, as PyTorch
            y = _make(as_array(forward(a._data), a._data).astype(a._data.dtype, copy=False))
        ctx.save_for_backward(a, y)
        return y

    def backward_fn(ctx, grad):
        a, y = ctx.saved_tensors
        return grad * slope(a, y)
    return type(name, (Function,), {"forward": staticmethod(forward_fn),
                                     "backward": staticmethod(backward_fn), "__doc__": name})


Log1p = _unary_function("Log1p", np.log1p, lambda x, y: 1 / (1 + x))
Expm1 = _unary_function("Expm1", np.expm1, lambda x, y: y + 1)
Log2 = _unary_function("Log2", np.log2, lambda x, y: 1 / (x * math.log(2)))
Log10 = _unary_function("Log10", np.log10, lambda x, y: 1 / (x * math.log(10)))
Exp2 = _unary_function("Exp2", np.exp2, lambda x, y: y * math.log(2))
Reciprocal = _unary_function("Reciprocal", np.reciprocal, lambda x, y: -(y * y))
Tan = _unary_function("Tan", np.tan, lambda x, y: 1 + y * y)
Sinh = _unary_function("Sinh", np.sinh, lambda x, y: cosh(x))
Cosh = _unary_function("Cosh", np.cosh, lambda x, y: sinh(x))
Asin = _unary_function("Asin", np.arcsin, lambda x, y: 1 / sqrt(1 - x * x))
Acos = _unary_function("Acos", np.arccos, lambda x, y: -1 / sqrt(1 - x * x))
Atan = _unary_function("Atan", np.arctan, lambda x, y: 1 / (1 + x * x))
Logit = _unary_function("Logit", lambda x: np.log(x / (1 - x)),
                        lambda x, y: where((x < 0) | (x > 1), math.nan, 1 / (x * (1 - x))))
Frac = _unary_function("Frac", lambda x: x - np.trunc(x), lambda x, y: _make(np.ones_like(x._data)))


@op(inplace="log1p_")
def log1p(input):
    return Log1p.apply(_floating(input))


@op(inplace="expm1_")
def expm1(input):
    return Expm1.apply(_floating(input))


@op(inplace="log2_")
def log2(input):
    return Log2.apply(_floating(input))


@op(inplace="log10_")
def log10(input):
    return Log10.apply(_floating(input))


@op(inplace="exp2_")
def exp2(input):
    return Exp2.apply(_floating(input))


@op(inplace="reciprocal_")
def reciprocal(input):
    return Reciprocal.apply(_floating(input))


@op(inplace="tan_")
def tan(input):
    return Tan.apply(_floating(input))


@op(inplace="sinh_")
def sinh(input):
    return Sinh.apply(_floating(input))


@op(inplace="cosh_")
def cosh(input):
    return Cosh.apply(_floating(input))


@op(aliases="arcsin", inplace="asin_ arcsin_")
def asin(input):
    return Asin.apply(_floating(input))


@op(aliases="arccos", inplace="acos_ arccos_")
def acos(input):
    return Acos.apply(_floating(input))


@op(aliases="arctan", inplace="atan_ arctan_")
def atan(input):
    return Atan.apply(_floating(input))


@op(inplace="frac_")
def frac(input):
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"frac: not implemented for {input.dtype} (as in PyTorch)")
    return Frac.apply(input)


@op(inplace="logit_")
def logit(input, eps=None):
    """log(p / (1 - p)); with ``eps``, p is clamped to [eps, 1 - eps] first (PyTorch's
    gradient is then 0 outside that range, as clamp's is)."""
    input = _floating(input)
    if eps is not None:
        input = input.clamp(eps, 1 - eps)
    return Logit.apply(input)


class NanToNum(Function):
    @staticmethod
    def forward(ctx, a, nan, posinf, neginf):
        ctx.save_for_backward(a)
        return _make(np.nan_to_num(a._data, nan=nan, posinf=posinf, neginf=neginf))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return where(_make(np.isfinite(a._data)), grad, 0.0), None, None, None


@op(inplace="nan_to_num_")
def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN → ``nan``, +inf → ``posinf``, -inf → ``neginf`` (default: the dtype's largest and
    lowest finite values)."""
    if not input.dtype.is_floating_point:
        return input.clone()
    return NanToNum.apply(input, nan, posinf, neginf)


class Atan2(Function):
    """atan2(y, x), the angle of the point (x, y); d/dy = x / r², d/dx = -y / r²."""

    @staticmethod
    def forward(ctx, y, x):
        ctx.save_for_backward(y, x)
        return _make(np.arctan2(y._data, x._data))

    @staticmethod
    def backward(ctx, grad):
        y, x = ctx.saved_tensors
        r2 = x * x + y * y
        return unbroadcast(grad * x / r2, y.shape), unbroadcast(-grad * y / r2, x.shape)


class Hypot(Function):
    """sqrt(a² + b²) without overflow; d/da = a / h, d/db = b / h."""

    @staticmethod
    def forward(ctx, a, b):
        out = _make(np.hypot(a._data, b._data))
        ctx.save_for_backward(a, b, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        return unbroadcast(grad * a / out, a.shape), unbroadcast(grad * b / out, b.shape)


def _float_operands(a, b, name):
    a, b = broadcast_operands(a, b, name)
    return _floating(a), _floating(b)


@op(aliases="arctan2", inplace="atan2_ arctan2_")
def atan2(input, other):
    return Atan2.apply(*_float_operands(input, other, "atan2"))


@op(inplace="hypot_")
def hypot(input, other):
    return Hypot.apply(*_float_operands(input, other, "hypot"))


@op()
def logaddexp(input, other):
    """log(e^a + e^b) = max(a, b) + log1p(e^-|a - b|): no overflow; half the gradient to each
    where a == b (maximum splits ties)."""
    a, b = _float_operands(input, other, "logaddexp")
    return maximum(a, b) + log1p(exp(-abs(a - b)))


@op(inplace="lerp_")
def lerp(input, end, weight):
    """input + weight · (end - input)."""
    return input + weight * (end - input)


@op(inplace="addcmul_")
def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value · tensor1 · tensor2."""
    return input + value * (tensor1 * tensor2)


@op(inplace="addcdiv_")
def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value · tensor1 / tensor2."""
    return input + value * (tensor1 / tensor2)
