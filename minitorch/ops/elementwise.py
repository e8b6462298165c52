"""Elementwise ops with numpy broadcasting: arithmetic, unary math, activations, selection.

Each op is a Function whose forward computes on the numpy arrays and whose backward is written
in Tensor ops (so it is differentiable again), reducing the gradient of a broadcast input back to
its shape with ``unbroadcast``. Comparisons and logical ops produce bool tensors and no graph.
"""
import math

import numpy as np

from ..autograd.function import Function
from ..dtype import get_default_dtype, int64
from ..tensor import Tensor
from ._helpers import broadcast_operands, to_tensor, unbroadcast
from .registry import apply_inplace, op, tensor_method

_make = Tensor._make


def _grads(ctx, grad_a, grad_b):
    """Return the gradient of each input that needs one, reduced to that input's shape."""
    shape_a, shape_b = ctx.shapes
    return (unbroadcast(grad_a(), shape_a) if ctx.needs_input_grad[0] else None,
            unbroadcast(grad_b(), shape_b) if ctx.needs_input_grad[1] else None)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _make(a._data + b._data)

    @staticmethod
    def backward(ctx, grad):
        return _grads(ctx, lambda: grad, lambda: grad)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        return _make(a._data - b._data)

    @staticmethod
    def backward(ctx, grad):
        return _grads(ctx, lambda: grad, lambda: -grad)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        # Save only what the needed gradients read, so in-place edits of the rest stay legal.
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None,
                              a if ctx.needs_input_grad[1] else None)
        return _make(a._data * b._data)

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        return _grads(ctx, lambda: grad * b, lambda: grad * a)


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return _make(a._data / b._data)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        return _grads(ctx, lambda: grad / b, lambda: -grad * a / (b * b))


class Pow(Function):
    """a ** b for two tensors; ``PowScalar`` handles the common constant exponent."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a, b)
        return _make(np.power(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        # d(a^b)/db = a^b log a; where a == 0 the limit used by PyTorch is 0.
        safe_log = where(a > 0, a, 1.0).log()
        return _grads(ctx, lambda: grad * b * a ** (b - 1), lambda: grad * a ** b * safe_log)


class PowScalar(Function):
    @staticmethod
    def forward(ctx, a, exponent):
        ctx.exponent = exponent
        ctx.save_for_backward(a)
        return _make(np.power(a._data, a._data.dtype.type(exponent)))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if ctx.exponent == 0:
            return grad * 0.0, None
        return grad * ctx.exponent * a ** (ctx.exponent - 1), None


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return _make(-a._data)

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(np.abs(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.sign()


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(np.exp(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out


class Log(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(np.log(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(np.sqrt(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad / (2.0 * out)


class Sin(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(np.sin(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.cos()


class Cos(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(np.cos(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return -grad * a.sin()


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(np.tanh(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1.0 - out * out)


def _sigmoid(x):
    # Two branches so exp never overflows: 1/(1+e^-x) for x >= 0, e^x/(1+e^x) otherwise.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e)).astype(x.dtype, copy=False)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_sigmoid(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * out * (1.0 - out)


class SiLU(Function):
    """x·σ(x); its derivative σ(x)·(1 + x·(1 − σ(x))) is written in Tensor ops."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(a._data * _sigmoid(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        s = sigmoid(a)
        return grad * s * (1.0 + a * (1.0 - s))


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.positive = _make((a._data > 0).astype(a._data.dtype))
        return _make(np.maximum(a._data, 0))

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.positive


_erf_object = np.frompyfunc(math.erf, 1, 1)


def _erf(x):
    # frompyfunc gives a Python float for 0-d input and object arrays otherwise: fix both.
    return np.asarray(_erf_object(x), dtype=x.dtype)


class Erf(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(_erf(a._data).astype(a._data.dtype))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (2.0 / math.sqrt(math.pi)) * (-(a * a)).exp()


class GELU(Function):
    """Exact GELU, x·Φ(x); its derivative Φ(x) + x·φ(x) is written in Tensor ops."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        x = a._data
        return _make((0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)).astype(x.dtype))).astype(x.dtype))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        cdf = 0.5 * (1.0 + Erf.apply(a * (1.0 / math.sqrt(2.0))))
        pdf = (-0.5 * a * a).exp() * (1.0 / math.sqrt(2.0 * math.pi))
        return grad * (cdf + a * pdf)


class Clamp(Function):
    @staticmethod
    def forward(ctx, a, low, high):
        x = a._data
        inside = np.ones(x.shape, dtype=bool)
        if low is not None:
            inside &= x >= low
        if high is not None:
            inside &= x <= high
        ctx.inside = _make(inside.astype(x.dtype))
        return _make(np.clip(x, low, high).astype(x.dtype, copy=False))

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.inside, None, None


class Maximum(Function):
    """Elementwise max; on ties the gradient is split evenly, as in PyTorch."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        x, y = np.broadcast_arrays(a._data, b._data)
        ctx.weight_a = _make(np.where(x > y, 1.0, np.where(x == y, 0.5, 0.0)).astype(x.dtype))
        return _make(np.maximum(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        w = ctx.weight_a
        return _grads(ctx, lambda: grad * w, lambda: grad * (1.0 - w))


class Where(Function):
    """``where(condition, a, b)``: a where condition holds, b elsewhere (condition: bool)."""

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(condition)  # a mask changed in place later makes backward raise
        return _make(np.where(condition._data, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        zero = zeros_scalar(grad)
        ga = unbroadcast(Where.apply(condition, grad, zero), ctx.shapes[0]) \
            if ctx.needs_input_grad[1] else None
        gb = unbroadcast(Where.apply(condition, zero, grad), ctx.shapes[1]) \
            if ctx.needs_input_grad[2] else None
        return None, ga, gb


def zeros_scalar(like):
    return _make(np.zeros((), dtype=like._data.dtype))



# ----------------------------------------------------------------------------- functions

@op(methods="__add__", reflected="__radd__", inplace="add_ __iadd__")
def add(a, b, alpha=1):
    """a + alpha * b"""
    a, b = broadcast_operands(a, b if alpha == 1 else _scaled(b, alpha), "add")
    return Add.apply(a, b)


def _scaled(b, alpha):
    return mul(b, alpha) if isinstance(b, Tensor) else b * alpha


@op(aliases="subtract", methods="__sub__", reflected="__rsub__", inplace="sub_ __isub__")
def sub(a, b, alpha=1):
    """a - alpha * b"""
    a, b = broadcast_operands(a, b if alpha == 1 else _scaled(b, alpha), "sub")
    return Sub.apply(a, b)


@op(aliases="multiply", methods="__mul__", reflected="__rmul__", inplace="mul_ __imul__")
def mul(a, b):
    a, b = broadcast_operands(a, b, "mul")
    return Mul.apply(a, b)


@op(aliases="divide", methods="__truediv__", reflected="__rtruediv__",
    inplace="div_ __itruediv__")
def div(a, b, rounding_mode=None):
    a, b = broadcast_operands(a, b, "div")
    if rounding_mode is None:
        if not a.dtype.is_floating_point:  # true division of integers: the default dtype
            a, b = a.to(get_default_dtype()), b.to(get_default_dtype())
        return Div.apply(a, b)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                         f"{rounding_mode!r}")
    q = np.floor_divide(a._data, b._data) if rounding_mode == "floor" else np.trunc(
        a._data / b._data).astype(a._data.dtype)
    return _make(q)


@tensor_method("__floordiv__")
def _floordiv(self, other):
    return div(self, other, rounding_mode="floor")


@op(methods="__pow__", reflected="__rpow__", inplace="pow_")
def pow(a, exponent):
    if isinstance(a, Tensor) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        if not a.dtype.is_floating_point and isinstance(exponent, float):
            a = a.float()
        return PowScalar.apply(a, exponent)
    a, exponent = broadcast_operands(a, exponent, "pow")
    return Pow.apply(a, exponent)


@op()
def square(a):
    return mul(a, a)


@op()
def maximum(a, b):
    a, b = broadcast_operands(a, b, "maximum")
    return Maximum.apply(a, b)


@op()
def minimum(a, b):
    a, b = broadcast_operands(a, b, "minimum")
    return -Maximum.apply(-a, -b)


@op(aliases="negative", methods="__neg__")
def neg(a):
    return Neg.apply(a)


@op(aliases="absolute", methods="__abs__")
def abs(a):
    return Abs.apply(a)


def _floating(a):
    return a if a.dtype.is_floating_point else a.float()


@op()
def exp(a):
    return Exp.apply(_floating(a))


@op()
def log(a):
    return Log.apply(_floating(a))


@op()
def sqrt(a):
    return Sqrt.apply(_floating(a))


@op()
def rsqrt(a):
    return 1.0 / sqrt(a)


@op()
def sin(a):
    return Sin.apply(_floating(a))


@op()
def cos(a):
    return Cos.apply(_floating(a))


@op(functional=True)
def tanh(input):
    return Tanh.apply(_floating(input))


@op(functional=True)
def sigmoid(input):
    return Sigmoid.apply(_floating(input))


@op(function=False, method=False, functional=True)
def silu(input, inplace=False):
    """x·σ(x) (``F.silu``; PyTorch has neither ``torch.silu`` nor ``Tensor.silu``)."""
    if inplace:
        return apply_inplace(input, silu)
    return SiLU.apply(_floating(input))


@op()
def relu(a):
    return ReLU.apply(a)


@op()
def erf(a):
    return Erf.apply(_floating(a))


@op(functional=True)
def gelu(input, approximate="none"):
    """x·Φ(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""
    if approximate == "none":
        return GELU.apply(_floating(input))
    if approximate == "tanh":
        inner = math.sqrt(2.0 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1.0 + tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


@op()
def sign(a):
    return _make(np.sign(a._data))


@op(aliases="clip", inplace="clamp_ clip_")
def clamp(a, min=None, max=None):
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = a
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    return Clamp.apply(a, min, max)


@op(method=False)
def where(condition, a, b):
    condition = _as_bool(condition, "condition")
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        dtype = Tensor._make(np.asarray(a)).dtype
        a = to_tensor(a, dtype if dtype.is_floating_point else _default_float(a, b))
    a, b = broadcast_operands(a, b, "where")
    try:
        np.broadcast_shapes(condition.shape, a.shape, b.shape)
    except ValueError:
        raise ValueError(f"where: condition of shape {tuple(condition.shape)} does not broadcast "
                         f"with input {tuple(a.shape)} and other {tuple(b.shape)}") from None
    return Where.apply(condition, a, b)


@tensor_method("where")
def _where_method(self, condition, other):
    """``x.where(condition, y)``: ``where(condition, x, y)``, as ``torch.Tensor.where``."""
    return where(condition, self, other)


def _default_float(a, b):
    return get_default_dtype() if isinstance(a, float) or isinstance(b, float) else int64


@op(inplace="masked_fill_")
def masked_fill(a, mask, value):
    """``a`` with ``value`` where ``mask`` (bool, broadcastable to a) is True."""
    mask = _as_bool(mask, "mask")
    try:
        np.broadcast_shapes(mask.shape, a.shape)
    except ValueError:
        raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the tensor's shape {tuple(a.shape)}") from None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a 0-d tensor or a number, got shape "
                             f"{tuple(value.shape)}")
        value = value.to(a.dtype)
    else:
        value = to_tensor(value, a.dtype)
    return Where.apply(mask, value, a)


def _as_bool(t, name):
    if not isinstance(t, Tensor):
        t = Tensor._make(np.asarray(t))
    if t.dtype.name != "bool":
        raise TypeError(f"{name}: expected a bool tensor, got {t.dtype}")
    return t


# Comparisons and logic: bool results, no graph.

def _compare(np_fn, name, operator):
    def compare(a, b):
        a, b = broadcast_operands(a, b, name)
        return _make(np_fn(a._data, b._data))
    compare.__name__ = compare.__qualname__ = name
    return op(methods=operator)(compare)


eq = _compare(np.equal, "eq", "__eq__")
ne = _compare(np.not_equal, "ne", "__ne__")
lt = _compare(np.less, "lt", "__lt__")
le = _compare(np.less_equal, "le", "__le__")
gt = _compare(np.greater, "gt", "__gt__")
ge = _compare(np.greater_equal, "ge", "__ge__")
logical_and = _compare(np.logical_and, "logical_and", "__and__")
logical_or = _compare(np.logical_or, "logical_or", "__or__")
logical_xor = _compare(np.logical_xor, "logical_xor", "__xor__")


@op(methods="__invert__")
def logical_not(a):
    return _make(np.logical_not(a._data))


@op()
def isnan(a):
    return _make(np.isnan(a._data))


@op()
def isinf(a):
    return _make(np.isinf(a._data))


@op()
def isfinite(a):
    return _make(np.isfinite(a._data))
