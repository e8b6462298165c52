"""The activation functions of ``torch.nn.functional`` beyond relu/gelu/silu/sigmoid/tanh.

Each is a composite of Tensor ops whose conditions are PyTorch's backward formulas' own, so
that the gradient at the kinks (and at NaN) is PyTorch's, and branches that could overflow (exp
of a large x) only ever see the values they keep. The ELU family, hardsigmoid and hardswish
are Functions: their PyTorch derivatives are written out.

    relu6, hardtanh(min_val, max_val)   clip; gradient 0 at and beyond the bounds
    leaky_relu(negative_slope)          x, or slope · x for x <= 0
    elu(alpha), selu, celu(alpha)       x, or alpha (e^x - 1) (celu: alpha (e^(x/alpha) - 1))
    softsign                            x / (1 + |x|)
    hardsigmoid, hardswish              relu6(x + 3) / 6, and x times that
    logsigmoid                          -softplus(-x)
    tanhshrink                          x - tanh x
    softshrink(lambd), hardshrink(lambd), threshold(threshold, value)
    glu(dim)                            a · sigmoid(b), a and b the halves along dim
    softmin(dim)                        softmax(-x)

All are ``minitorch.nn.functional`` names (as in PyTorch, none is ``minitorch.<name>`` except
where PyTorch also has it); the ``inplace=True`` forms write into the input.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from .elementwise import abs, sigmoid, tanh, where
from .fused import softmax
from .registry import apply_inplace, op
from .softplus import softplus

_make = Tensor._make
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _floating_input(input, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a minitorch Tensor, got {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"{name}: input must be floating point, got {input.dtype}")
    return input


def _maybe_inplace(input, inplace, fn, *args):
    return apply_inplace(input, fn, *args) if inplace else fn(input, *args)


def _hardtanh(x, min_val, max_val):
    clipped = (x <= min_val) | (x >= max_val)  # PyTorch's gradient is 0 at the bounds, 1 at NaN
    return where(clipped, where(x <= min_val, min_val, max_val).to(x.dtype), x)


@op(function=False, method=False, functional=True)
def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    _floating_input(input, "hardtanh")
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val "
                         f"({max_val})")
    return _maybe_inplace(input, inplace, _hardtanh, min_val, max_val)


@op(function=False, method=False, functional=True)
def relu6(input, inplace=False):
    return hardtanh(input, 0.0, 6.0, inplace)


def _leaky_relu(x, negative_slope):
    return where(x > 0, x, x * negative_slope)


@op(function=False, method=False, functional=True)
def leaky_relu(input, negative_slope=0.01, inplace=False):
    _floating_input(input, "leaky_relu")
    return _maybe_inplace(input, inplace, _leaky_relu, negative_slope)


class ELU(Function):
    """scale · (x if x > 0 else alpha (e^(input_scale x) - 1)) for elu, selu and celu, with
    PyTorch's derivative: scale · alpha · input_scale · e^(input_scale x) for x <= 0, scale
    otherwise (NaN included). The exponential only ever sees x <= 0."""

    @staticmethod
    def forward(ctx, x, alpha, scale, input_scale):
        ctx.constants = alpha, scale, input_scale
        ctx.save_for_backward(x)
        data = x._data
        with np.errstate(invalid="ignore"):
            negative = alpha * np.expm1(np.minimum(data, 0) * input_scale)
        return _make((scale * np.where(data <= 0, negative, data)).astype(data.dtype))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        alpha, scale, input_scale = ctx.constants
        negative = (x.clamp(max=0.0) * input_scale).exp() * (scale * alpha * input_scale)
        return grad * where(x <= 0, negative, scale), None, None, None


def _elu(x, alpha, scale=1.0, input_scale=1.0):
    return ELU.apply(x, alpha, scale, input_scale)


@op(function=False, method=False, functional=True)
def elu(input, alpha=1.0, inplace=False):
    _floating_input(input, "elu")
    return _maybe_inplace(input, inplace, _elu, alpha)


@op(function=False, method=False, functional=True)
def selu(input, inplace=False):
    _floating_input(input, "selu")
    return _maybe_inplace(input, inplace, _elu, _SELU_ALPHA, _SELU_SCALE)


@op(function=False, method=False, functional=True)
def celu(input, alpha=1.0, inplace=False):
    _floating_input(input, "celu")
    if alpha == 0:
        raise ValueError("celu: alpha must not be 0 (it divides the input)")
    return _maybe_inplace(input, inplace, _elu, alpha, 1.0, 1.0 / alpha)


@op(function=False, method=False, functional=True)
def softsign(input):
    _floating_input(input, "softsign")
    return input / (1 + abs(input))


@op(function=False, method=False, functional=True)
def hardsigmoid(input, inplace=False):
    _floating_input(input, "hardsigmoid")
    return _maybe_inplace(input, inplace, Hardsigmoid.apply)


class Hardsigmoid(Function):
    """relu6(x + 3) / 6, with PyTorch's derivative: 1/6 strictly between -3 and 3, else 0
    (NaN included, where the value is NaN)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        data = x._data
        return _make(np.clip(data + 3, 0, 6) / data.dtype.type(6))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * where((x > -3.0) & (x < 3.0), 1.0 / 6.0, 0.0).to(grad.dtype)


class Hardswish(Function):
    """x · relu6(x + 3) / 6, with PyTorch's derivative: 0 up to -3, x/3 + 1/2 between, 1 from
    3 on (and at NaN)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        data = x._data
        return _make(data * np.clip(data + 3, 0, 6) / data.dtype.type(6))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        slope = where(x <= -3.0, 0.0, where(x < 3.0, x / 3.0 + 0.5, 1.0)).to(grad.dtype)
        return grad * slope


@op(function=False, method=False, functional=True)
def hardswish(input, inplace=False):
    _floating_input(input, "hardswish")
    return _maybe_inplace(input, inplace, Hardswish.apply)


@op(function=False, method=False, functional=True)
def logsigmoid(input):
    _floating_input(input, "logsigmoid")
    return -softplus(-input)


@op(function=False, method=False, functional=True)
def tanhshrink(input):
    _floating_input(input, "tanhshrink")
    return input - tanh(input)


@op(function=False, method=False, functional=True)
def softshrink(input, lambd=0.5):
    _floating_input(input, "softshrink")
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be non-negative, got {lambd}")
    inside = (input >= -lambd) & (input <= lambd)  # NaN is outside: it passes, as in PyTorch
    return where(inside, 0.0, where(input > lambd, input - lambd, input + lambd))


@op(function=False, method=False, functional=True)
def hardshrink(input, lambd=0.5):
    _floating_input(input, "hardshrink")
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


@op(function=False, method=False, functional=True)
def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else ``value``."""
    _floating_input(input, "threshold")
    return _maybe_inplace(input, inplace, lambda x: where(x <= threshold, value, x))


@op(function=False, method=False, functional=True)
def glu(input, dim=-1):
    """a · sigmoid(b), where a and b are the first and second halves of ``input`` along dim."""
    _floating_input(input, "glu")
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    size = input.shape[dim]
    if size % 2:
        raise RuntimeError(f"glu: halving dimension must be even, but dimension {dim} is size "
                           f"{size}")
    a, b = input.chunk(2, dim)
    return a * sigmoid(b)


@op(function=False, method=False, functional=True)
def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-input) along dim."""
    _floating_input(input, "softmin")
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1  # PyTorch's implicit choice (deprecated)
    return softmax(-input, dim, dtype)
