"""Elementwise ops with numpy broadcasting: arithmetic, unary math, activations, selection.

Each op is a Function whose forward computes on the numpy arrays and whose backward is written
in Tensor ops (so it is differentiable again), reducing the gradient of a broadcast input back to
its shape with ``unbroadcast``. Comparisons and logical ops produce bool tensors and no graph.
The activations numpy computes slowly (relu, sigmoid, silu, gelu), clamp, rsqrt, integer powers
and abs's backward run on the backend's kernels for float tensors; a kernel backward is a
Function of its own whose derivative autograd takes over the formula in Tensor ops (as fused.py's
kernels do). Arithmetic, maximum and minimum on large float arrays run on the C arith kernel's
threads (``_arith``).
"""
import functools
import math

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import as_array
from ..autograd.function import Function
from ..autograd.grad_mode import _state as _grad_mode
from ..backends.checks import ARITH_FULL, FLOAT_DTYPES, POW_INT_LIMIT, arith_layout
from ..dtype import get_default_dtype, int64
from ..tensor import Tensor
from ._helpers import broadcast_operands, scalar_like, to_tensor, unbroadcast
from .fused import _differentiate_composite
from .registry import apply_inplace, op, tensor_method

_make = Tensor._make


def _kernels():
    """The backend whose kernels the activations, clamp, rsqrt and integer powers run on (C, or
    the numpy reference)."""
    return backends.current()


# From this many elements, arithmetic on float arrays of the layouts the C arith kernel takes
# (equal shapes, one value, a trailing row) runs there when it has threads to run on; below,
# numpy's loop costs less to call, and waking a thread team would not pay. (On one thread
# numpy's loop is ~10% faster: it stays on numpy then.)
_THREADED_ARITH_MIN = 1 << 16


def _arith(op, ufunc, x, y, out=None):
    """ufunc(x, y, out=out), or the C backend's arith kernel where a second thread pays."""
    if ((x.size >= _THREADED_ARITH_MIN or y.size >= _THREADED_ARITH_MIN)
            and type(x) is np.ndarray and type(y) is np.ndarray
            and x.dtype in FLOAT_DTYPES and x.dtype == y.dtype):  # (native byte order too)
        c_kernels = backends.threaded_c()
        layout = None if c_kernels is None else arith_layout(x, y)
        if layout is not None:
            if out is not None:  # (an in-place op's: the checked path checks it)
                return c_kernels.arith(op, x, y, out=out)
            return c_kernels.arith_on_layout(op, x, y, layout,
                                             x.shape if layout[2] == ARITH_FULL else y.shape)
    result = ufunc(x, y) if out is None else ufunc(x, y, out=out)  # (out=None costs a little)
    if tapes.recording() is not None:  # numpy's arithmetic, on a capture's tape
        if not isinstance(result, np.ndarray):  # a numpy scalar: an array a replay can refill
            result = np.asarray(result)
        tapes.replayed(functools.partial(ufunc, out=result), x, y)  # (maximum: out by name)
    return result


def _grads(ctx, grad_a, grad_b):
    """Return the gradient of each input that needs one, reduced to that input's shape."""
    shape_a, shape_b = ctx.shapes
    return (unbroadcast(grad_a(), shape_a) if ctx.needs_input_grad[0] else None,
            unbroadcast(grad_b(), shape_b) if ctx.needs_input_grad[1] else None)


# The arithmetic ops (add, sub, mul, div) run for every step of every model, so their Functions
# skip what the general path pays for: they keep the input shapes only where broadcasting made
# them differ (``ctx.shapes`` None otherwise: nothing to sum back), and their backward formulas
# call ``_times``/``_over`` below, which go straight to numpy when no graph is being recorded.

def _record_shapes(ctx, a, b):
    """``ctx.shapes``: the two input shapes if broadcasting stretched one, else None."""
    shape_a, shape_b = a._data.shape, b._data.shape
    ctx.shapes = None if shape_a == shape_b else (shape_a, shape_b)


def _to_input_shapes(ctx, grad_a, grad_b):
    """The gradients, each reduced to its input's shape where broadcasting stretched it."""
    if ctx.shapes is not None:
        shape_a, shape_b = ctx.shapes
        grad_a = None if grad_a is None else unbroadcast(grad_a, shape_a)
        grad_b = None if grad_b is None else unbroadcast(grad_b, shape_b)
    return grad_a, grad_b


def _times(x, y):
    """x * y in a backward formula: ``mul``, or, with grad mode off (backward without
    create_graph) and one dtype, the same numpy product without a node."""
    if not _grad_mode.enabled and x._data.dtype is y._data.dtype:
        return _make(_arith("mul", np.multiply, x._data, y._data))
    return mul(x, y)


def _negative(x):
    """-x in a backward formula, as ``_times``."""
    if not _grad_mode.enabled:
        return _make(_negate(x._data))
    return neg(x)


def _over(x, y):
    """x / y in a backward formula, as ``_times``."""
    if not _grad_mode.enabled and x._data.dtype is y._data.dtype:
        return _make(_arith("div", np.divide, x._data, y._data))
    return div(x, y)


class Add(Function):
    @staticmethod
    def forward(ctx, a, b):
        _record_shapes(ctx, a, b)
        return _make(_arith("add", np.add, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        # ``grad`` itself for both: the engine copies it before a leaf's .grad could alias it
        return _to_input_shapes(ctx, grad if need_a else None, grad if need_b else None)


class Sub(Function):
    @staticmethod
    def forward(ctx, a, b):
        _record_shapes(ctx, a, b)
        return _make(_arith("sub", np.subtract, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        return _to_input_shapes(ctx, grad if need_a else None,
                                _negative(grad) if need_b else None)


class Mul(Function):
    @staticmethod
    def forward(ctx, a, b):
        _record_shapes(ctx, a, b)
        need_a, need_b = ctx.needs_input_grad
        # Save only what the needed gradients read, so in-place edits of the rest stay legal.
        ctx.save_for_backward(b if need_a else None, a if need_b else None)
        return _make(_arith("mul", np.multiply, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        return _to_input_shapes(ctx, None if b is None else _times(grad, b),
                                None if a is None else _times(grad, a))


class Div(Function):
    @staticmethod
    def forward(ctx, a, b):
        _record_shapes(ctx, a, b)
        ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b)
        return _make(_arith("div", np.divide, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return _to_input_shapes(ctx, _over(grad, b) if need_a else None,
                                _over(_times(_negative(grad), a), _times(b, b)) if need_b
                                else None)  # -grad * a / (b * b)


class Pow(Function):
    """a ** b for two tensors; ``PowScalar`` handles the common constant exponent."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a, b)
        return _make(tapes.computed(np.power, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        # d(a^b)/db = a^b log a; where a == 0 the limit used by PyTorch is 0.
        safe_log = where(a > 0, a, 1.0).log()
        return _grads(ctx, lambda: grad * b * a ** (b - 1), lambda: grad * a ** b * safe_log)


def _power(x, exponent):
    """x ** exponent for a float array and a Python number, computed as PyTorch computes it
    where numpy's power is slow (a libm pow per element, ~1 ns, and ~10 ns on negative bases):
    integer exponents in one pass of multiplied squares (the backend's pow_int), 0.5 and -0.5
    by sqrt. Any other exponent: the backend's pow_scalar (pow's rules, on the threads)."""
    if float(exponent).is_integer() and -POW_INT_LIMIT <= exponent <= POW_INT_LIMIT:
        return _kernels().pow_int_forward(x, int(exponent))
    if exponent in (0.5, -0.5):
        root = _threaded_unary("sqrt_forward", np.sqrt, x)
        if exponent < 0:
            if isinstance(root, np.generic):  # (0-d: ufuncs return a scalar, which takes no out=)
                return 1 / root
            tapes.record(np.divide, 1, root, root)
        return root
    return _kernels().pow_scalar_forward(x, exponent)


class PowScalar(Function):
    @staticmethod
    def forward(ctx, a, exponent):
        ctx.exponent = exponent
        ctx.save_for_backward(a)
        if a._data.dtype.kind != "f":  # integers: numpy's exact power (and its errors)
            return _make(tapes.computed(np.power, a._data, a._data.dtype.type(exponent)))
        return _make(_power(a._data, exponent))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        e = ctx.exponent
        if e == 0:
            return grad * 0.0, None
        if e == 2:  # d/da a^2 = 2a, without a power of 1 (a copy)
            return grad * (a * 2.0), None
        return grad * (PowScalar.apply(a, e - 1) * float(e)), None


def _negate(x):
    """-x for an array: times -1 (exact) for floats, on the arith kernel's threads where that
    pays."""
    if x.dtype.kind != "f":
        return -x
    return _arith("mul", np.multiply, x, scalar_like(-1, x))


class Neg(Function):
    @staticmethod
    def forward(ctx, a):
        return _make(_negate(a._data))

    @staticmethod
    def backward(ctx, grad):
        return _negative(grad)


def _threaded_unary(kernel, ufunc, x):
    """ufunc(x) for an array (np.abs, np.sqrt), or the C backend's kernel of that name where a
    second thread pays (as _arith)."""
    if x.size >= _THREADED_ARITH_MIN and type(x) is np.ndarray and x.dtype in FLOAT_DTYPES:
        c_kernels = backends.threaded_c()
        if c_kernels is not None:
            return getattr(c_kernels, kernel)(x)
    return tapes.computed(ufunc, x)


class Abs(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(_threaded_unary("abs_forward", np.abs, a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return AbsBackward.apply(grad, a)


class AbsBackward(Function):
    """dx = dy * sign(x) (0 where x is 0 or NaN) on the backend's kernel. Its own derivative:
    the same signs applied to the incoming gradient; x only selects."""

    @staticmethod
    def forward(ctx, dy, x):
        ctx.save_for_backward(x)
        return _make(_kernels().abs_backward(dy._data, x._data))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return AbsBackward.apply(grad, x), None


class Exp(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_kernels().exp_forward(a._data))
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
        return _make(_kernels().log_forward(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad / a


class Sqrt(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_threaded_unary("sqrt_forward", np.sqrt, a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad / (2.0 * out)


class Rsqrt(Function):
    """1 / sqrt(a), on the backend's kernel (not a sqrt node and a division node)."""

    @staticmethod
    def forward(ctx, a):
        out = _make(_kernels().rsqrt_forward(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (out ** 3 * -0.5)


class Sin(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(tapes.computed(np.sin, a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.cos()


class Cos(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(tapes.computed(np.cos, a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return -grad * a.sin()


class Tanh(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(tapes.computed(np.tanh, a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return grad * (1.0 - out * out)


class Sigmoid(Function):
    @staticmethod
    def forward(ctx, a):
        out = _make(_kernels().sigmoid_forward(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return SigmoidBackward.apply(grad, out)


class SigmoidBackward(Function):
    """dx = dy * y * (1 - y), y = sigmoid(x), on the backend's kernel."""

    @staticmethod
    def forward(ctx, dy, y):
        ctx.save_for_backward(dy, y)
        return _make(_kernels().sigmoid_backward(dy._data, y._data))

    @staticmethod
    def backward(ctx, grad):
        return _differentiate_composite(lambda dy, y: dy * y * (1.0 - y), ctx.saved_tensors,
                                        ctx.needs_input_grad, (grad,))


class SiLU(Function):
    """x·σ(x), on the backend's kernel."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(_kernels().silu_forward(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return SiLUBackward.apply(grad, a)


def _silu_slope(x):
    """d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x))), in Tensor ops."""
    s = sigmoid(x)
    return s * (1.0 + x * (1.0 - s))


class SiLUBackward(Function):
    @staticmethod
    def forward(ctx, dy, x):
        ctx.save_for_backward(dy, x)
        return _make(_kernels().silu_backward(dy._data, x._data))

    @staticmethod
    def backward(ctx, grad):
        return _differentiate_composite(lambda dy, x: dy * _silu_slope(x), ctx.saved_tensors,
                                        ctx.needs_input_grad, (grad,))


class ReLU(Function):
    @staticmethod
    def forward(ctx, a):
        if a._data.dtype.kind != "f":  # integers: no gradient, numpy's max
            return _make(tapes.computed(np.maximum, a._data, 0))
        out = _make(_kernels().relu_forward(a._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return ReLUBackward.apply(grad, out)


class ReLUBackward(Function):
    """dx = 0 where relu's output y <= 0, else dy. Its own derivative: the same mask applied to
    the incoming gradient; y only selects (zero derivative almost everywhere)."""

    @staticmethod
    def forward(ctx, dy, y):
        ctx.save_for_backward(y)
        return _make(_kernels().relu_backward(dy._data, y._data))

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return ReLUBackward.apply(grad, y), None


class Erf(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return _make(_kernels().erf_forward(a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * (2.0 / math.sqrt(math.pi)) * (-(a * a)).exp()


class GELU(Function):
    """x·Φ(x) (``approximate="none"``) or its tanh form, on the backend's kernel."""

    @staticmethod
    def forward(ctx, a, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(a)
        return _make(_kernels().gelu_forward(a._data, approximate))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return GELUBackward.apply(grad, a, ctx.approximate), None


def _gelu_slope(x, approximate):
    """The derivative of GELU in Tensor ops: Φ(x) + x·φ(x), or that of the tanh form."""
    if approximate == "tanh":
        k = math.sqrt(2.0 / math.pi)
        th = tanh(k * (x + 0.044715 * x * x * x))
        return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * (k * (1.0 + 3 * 0.044715 * x * x))
    cdf = 0.5 * (1.0 + Erf.apply(x * (1.0 / math.sqrt(2.0))))
    pdf = (-0.5 * x * x).exp() * (1.0 / math.sqrt(2.0 * math.pi))
    return cdf + x * pdf


class GELUBackward(Function):
    @staticmethod
    def forward(ctx, dy, x, approximate):
        ctx.approximate = approximate
        ctx.save_for_backward(dy, x)
        return _make(_kernels().gelu_backward(dy._data, x._data, approximate))

    @staticmethod
    def backward(ctx, grad):
        approximate = ctx.approximate
        return _differentiate_composite(lambda dy, x: dy * _gelu_slope(x, approximate),
                                        ctx.saved_tensors, ctx.needs_input_grad[:2],
                                        (grad,)) + (None,)


class Clamp(Function):
    """Clamp to number bounds (None: no bound): float tensors on the backend's kernel, others
    (integers; NaN bounds) with numpy."""

    @staticmethod
    def forward(ctx, a, low, high):
        x = a._data
        ctx.bounds = low, high
        ctx.save_for_backward(a)
        if x.dtype.kind == "f" and _kernel_bound(low) and _kernel_bound(high):
            return _make(_kernels().clamp_forward(x, low, high))
        return _make(tapes.evaluated(_clip, x, low, high))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return ClampBackward.apply(grad, a, *ctx.bounds), None, None


def _clip(x, low, high):
    return np.clip(x, low, high).astype(x.dtype, copy=False)


def _clamp_backward(dy, x, low, high):
    """dy where low <= x <= high, else 0 (numpy: a NaN bound leaves nothing inside)."""
    inside = np.ones(x.shape, dtype=bool)
    if low is not None:
        inside &= x >= low
    if high is not None:
        inside &= x <= high
    return np.where(inside, dy, 0).astype(dy.dtype)


def _kernel_bound(bound):
    """Whether the clamp kernels take this bound: None or a number that is not NaN."""
    return bound is None or (isinstance(bound, (int, float, np.integer, np.floating))
                             and not isinstance(bound, bool) and bound == bound)


class ClampBackward(Function):
    """dx = dy where low <= x <= high, else 0. Its own derivative: the same mask applied to the
    incoming gradient; x only selects."""

    @staticmethod
    def forward(ctx, dy, x, low, high):
        ctx.bounds = low, high
        ctx.save_for_backward(x)
        if _kernel_bound(low) and _kernel_bound(high):
            return _make(_kernels().clamp_backward(dy._data, x._data, low, high))
        return _make(tapes.evaluated(_clamp_backward, dy._data, x._data, low, high))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return ClampBackward.apply(grad, x, *ctx.bounds), None, None, None


def _winner_weight(ctx, grad, wins):
    """1 where ``a`` wins (``wins(a, b)``), 0.5 on ties, 0 where ``b`` wins, as a constant."""
    a, b = ctx.saved_tensors
    return _make(tapes.evaluated(_weights_of_winners, a._data, b._data, wins, grad._data.dtype))


def _weights_of_winners(a, b, wins, dtype):
    x, y = np.broadcast_arrays(a, b)
    weight_a = wins(x, y).astype(dtype)
    ties = np.equal(x, y)
    if ties.any():
        weight_a[ties] = 0.5
    return weight_a


class Maximum(Function):
    """Elementwise max; on ties the gradient is split evenly, as in PyTorch."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a, b)  # the weights are made in backward: no_grad calls skip them
        return _make(_arith("maximum", np.maximum, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        w = _winner_weight(ctx, grad, np.greater)
        return _grads(ctx, lambda: grad * w, lambda: grad * (1.0 - w))


class Minimum(Function):
    """Elementwise min; on ties the gradient is split evenly, as in PyTorch."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(a, b)
        return _make(_arith("minimum", np.minimum, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        w = _winner_weight(ctx, grad, np.less)
        return _grads(ctx, lambda: grad * w, lambda: grad * (1.0 - w))


class Where(Function):
    """``where(condition, a, b)``: a where condition holds, b elsewhere (condition: bool)."""

    @staticmethod
    def forward(ctx, condition, a, b):
        ctx.shapes = a.shape, b.shape
        ctx.save_for_backward(condition)  # a mask changed in place later makes backward raise
        if _where_kernel_takes(condition._data, a._data, b._data):
            return _make(_kernels().where(condition._data, a._data, b._data))
        return _make(tapes.evaluated(np.where, condition._data, a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        zero = zeros_scalar(grad)
        ga = unbroadcast(Where.apply(condition, grad, zero), ctx.shapes[0]) \
            if ctx.needs_input_grad[1] else None
        gb = unbroadcast(Where.apply(condition, zero, grad), ctx.shapes[1]) \
            if ctx.needs_input_grad[2] else None
        return None, ga, gb


# From this many elements where runs on the backend's kernel (a blend per vector); below,
# np.where costs less to call. np.where branches on each element: ~3 ns an element on a
# random condition.
_WHERE_KERNEL_MIN = 4096


def _where_kernel_takes(condition, a, b):
    """Whether the backend's where kernel takes these arrays: host arrays of one float dtype,
    each of the condition's shape or 0-d, and enough of them."""
    return (condition.size >= _WHERE_KERNEL_MIN and type(condition) is np.ndarray
            and type(a) is np.ndarray and type(b) is np.ndarray
            and a.dtype == b.dtype and a.dtype in FLOAT_DTYPES
            and condition.dtype == np.bool_
            and a.shape in (condition.shape, ()) and b.shape in (condition.shape, ()))


def zeros_scalar(like):
    return _make(tapes.constant(np.zeros_like(like._data, shape=())))



# ----------------------------------------------------------------------------- functions

@op(methods="__add__", reflected="__radd__", inplace="add_ __iadd__")
def add(input, other, alpha=1):
    """a + alpha * b"""
    input, other = broadcast_operands(input, other if alpha == 1 else _scaled(other, alpha), "add")
    return Add.apply(input, other)


def _scaled(b, alpha):
    return mul(b, alpha) if isinstance(b, Tensor) else b * alpha


@op(aliases="subtract", methods="__sub__", reflected="__rsub__", inplace="sub_ __isub__")
def sub(input, other, alpha=1):
    """a - alpha * b"""
    input, other = broadcast_operands(input, other if alpha == 1 else _scaled(other, alpha), "sub")
    return Sub.apply(input, other)


@op(aliases="multiply", methods="__mul__", reflected="__rmul__", inplace="mul_ __imul__")
def mul(input, other):
    input, other = broadcast_operands(input, other, "mul")
    return Mul.apply(input, other)


@op(aliases="divide", methods="__truediv__", reflected="__rtruediv__",
    inplace="div_ __itruediv__")
def div(input, other, rounding_mode=None):
    input, other = broadcast_operands(input, other, "div")
    if rounding_mode is None:
        if not input.dtype.is_floating_point:  # true division of integers: the default dtype
            input, other = input.to(get_default_dtype()), other.to(get_default_dtype())
        return Div.apply(input, other)
    if rounding_mode not in ("floor", "trunc"):
        raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                         f"{rounding_mode!r}")
    if rounding_mode == "floor":
        return _make(tapes.computed(np.floor_divide, input._data, other._data))
    return _make(tapes.evaluated(_truncated_quotient, input._data, other._data))


def _truncated_quotient(a, b):
    return np.trunc(a / b).astype(a.dtype)


@tensor_method("__floordiv__")
def _floordiv(self, other):
    return div(self, other, rounding_mode="floor")


@op(methods="__pow__", reflected="__rpow__", inplace="pow_")
def pow(input, exponent):
    if isinstance(input, Tensor) and isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        if not input.dtype.is_floating_point and isinstance(exponent, float):
            input = input.float()
        return PowScalar.apply(input, exponent)
    input, exponent = broadcast_operands(input, exponent, "pow")
    return Pow.apply(input, exponent)


@op()
def square(input):
    return mul(input, input)


@op()
def maximum(input, other):
    input, other = broadcast_operands(input, other, "maximum")
    return Maximum.apply(input, other)


@op()
def minimum(input, other):
    input, other = broadcast_operands(input, other, "minimum")
    return Minimum.apply(input, other)


@op(aliases="negative", methods="__neg__")
def neg(input):
    return Neg.apply(input)


@op(aliases="absolute", methods="__abs__")
def abs(input):
    return Abs.apply(input)


def _floating(a):
    return a if a.dtype.is_floating_point else a.float()


@op()
def exp(input):
    return Exp.apply(_floating(input))


@op()
def log(input):
    return Log.apply(_floating(input))


@op()
def sqrt(input):
    return Sqrt.apply(_floating(input))


@op()
def rsqrt(input):
    return Rsqrt.apply(_floating(input))


@op()
def sin(input):
    return Sin.apply(_floating(input))


@op()
def cos(input):
    return Cos.apply(_floating(input))


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
def relu(input):
    return ReLU.apply(input)


@op()
def erf(input):
    return Erf.apply(_floating(input))


@op(functional=True)
def gelu(input, approximate="none"):
    """x·Φ(x) (``approximate="none"``) or its tanh approximation (``"tanh"``)."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return GELU.apply(_floating(input), approximate)


@op()
def sign(input):
    x = input._data
    if x.dtype.kind != "f":
        return _make(tapes.computed(np.sign, x))
    return _make(tapes.evaluated(_float_sign, x))


def _float_sign(x):
    """(x > 0) - (x < 0) on bytes: np.sign's float loop is ~5x slower (abs's backward uses
    this); NaN gives 0, as in PyTorch."""
    positive, negative = as_array(x > 0, x), as_array(x < 0, x)
    return (positive.view(np.int8) - negative.view(np.int8)).astype(x.dtype)


@op(aliases="clip", inplace="clamp_ clip_")
def clamp(input, min=None, max=None):
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    return Clamp.apply(input, min, max)


@op(method=False)
def where(condition, input, other):
    condition = _as_bool(condition, "condition")
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        dtype = Tensor._make(np.asarray(input)).dtype
        input = to_tensor(input, dtype if dtype.is_floating_point else _default_float(input, other),
                          condition._data)  # two numbers: on the condition's device
    input, other = broadcast_operands(input, other, "where")
    try:
        np.broadcast_shapes(condition.shape, input.shape, other.shape)
    except ValueError:
        raise ValueError(f"where: condition of shape {tuple(condition.shape)} does not broadcast "
                         f"with input {tuple(input.shape)} and other {tuple(other.shape)}") from None
    return Where.apply(condition, input, other)


@tensor_method("where")
def _where_method(self, condition, other):
    """``x.where(condition, y)``: ``where(condition, x, y)``, as ``torch.Tensor.where``."""
    return where(condition, self, other)


def _default_float(a, b):
    return get_default_dtype() if isinstance(a, float) or isinstance(b, float) else int64


@op(inplace="masked_fill_")
def masked_fill(input, mask, value):
    """``a`` with ``value`` where ``mask`` (bool, broadcastable to a) is True."""
    mask = _as_bool(mask, "mask")
    try:
        np.broadcast_shapes(mask.shape, input.shape)
    except ValueError:
        raise ValueError(f"masked_fill: mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the tensor's shape {tuple(input.shape)}") from None
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"masked_fill: value must be a 0-d tensor or a number, got shape "
                             f"{tuple(value.shape)}")
        value = value.to(input.dtype)
    else:
        value = to_tensor(value, input.dtype, input._data)
    return Where.apply(mask, value, input)


def _as_bool(t, name):
    if not isinstance(t, Tensor):
        t = Tensor._make(np.asarray(t))
    if t.dtype.name != "bool":
        raise TypeError(f"{name}: expected a bool tensor, got {t.dtype}")
    return t


# Comparisons and logic: bool results, no graph.

def _compare(np_fn, name, operator):
    def compare(input, other):
        input, other = broadcast_operands(input, other, name)
        return _make(tapes.computed(np_fn, input._data, other._data))
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
def logical_not(input):
    return _make(tapes.computed(np.logical_not, input._data))


@op()
def isnan(input):
    return _make(tapes.computed(np.isnan, input._data))


@op()
def isinf(input):
    return _make(tapes.computed(np.isinf, input._data))


@op()
def isfinite(input):
    return _make(tapes.computed(np.isfinite, input._data))
