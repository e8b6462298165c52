"""Convolution: ``F.conv2d`` and ``F.conv1d`` as PyTorch's, on the backend's conv2d kernels.

    y[n, o, i, j] = b[o] + Σ_{c, p, q} w[o, c, p, q] · xpad[n, g·Cg + c, i·sh + p·dh, j·sw + q·dw]

where xpad is the input zero-padded by ``padding``, g = o // (O / groups) the group of output
channel o, and Cg = C / groups the input channels each group sees. ``conv1d`` is ``conv2d``
on a height of 1.

Three Functions, one per bilinear map of the same form T(dy, x, w) = <dy, conv(x, w)>:

- ``Conv2d``: y = conv(x, w) (+ b);
- ``Conv2dBackwardInput``: dx = ∂T/∂x, the transposed convolution of dy by w;
- ``Conv2dBackwardWeight``: dw = ∂T/∂w, the correlation of dy with x.

Each one's derivative is made of the other two (the derivative of dx = Bi(dy, w) in dy is
conv(·, w), in w it is Bw(dy, ·); and so on round), so gradients of gradients of any order
run on the same three kernels.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``, the sibling
op modules.
"""
import numbers
from typing import NamedTuple

from .. import backends
from ..autograd.function import Function
from ..dtype import bool_, float64
from ..tensor import Tensor
from .padding import pad as _pad
from .registry import op

_make = Tensor._make


class Geometry(NamedTuple):
    """How the kernel walks the input: (h, w) pairs, and the channel groups."""
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int


class Conv2d(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, geometry):
        ctx.geometry = geometry
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.input_size, ctx.kernel_size = x.shape[2:], weight.shape[2:]
        return _make(backends.current().conv2d_forward(
            x._data, weight._data, None if bias is None else bias._data, *geometry))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad[:3]
        grad_x = Conv2dBackwardInput.apply(grad, weight, ctx.input_size, ctx.geometry) \
            if need_x else None
        grad_weight = Conv2dBackwardWeight.apply(grad, x, ctx.kernel_size, ctx.geometry) \
            if need_weight else None
        grad_bias = grad.sum((0, 2, 3)) if need_bias else None
        return grad_x, grad_weight, grad_bias, None


class Conv2dBackwardInput(Function):
    """dx = Bi(dy, w): every output's gradient times the weights, summed back onto the input
    positions of its receptive field."""

    @staticmethod
    def forward(ctx, dy, weight, input_size, geometry):
        ctx.geometry, ctx.input_size = geometry, input_size
        ctx.save_for_backward(dy if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        return _make(backends.current().conv2d_backward_input(
            dy._data, weight._data, tuple(input_size), *geometry))

    @staticmethod
    def backward(ctx, grad):
        dy, weight = ctx.saved_tensors
        grad_dy = Conv2d.apply(grad, weight, None, ctx.geometry) \
            if ctx.needs_input_grad[0] else None
        grad_weight = Conv2dBackwardWeight.apply(dy, grad, weight.shape[2:], ctx.geometry) \
            if ctx.needs_input_grad[1] else None
        return grad_dy, grad_weight, None, None


class Conv2dBackwardWeight(Function):
    """dw = Bw(dy, x): each output's gradient times its receptive field, summed over the
    batch and the output positions."""

    @staticmethod
    def forward(ctx, dy, x, kernel_size, geometry):
        ctx.geometry = geometry
        ctx.save_for_backward(dy if ctx.needs_input_grad[1] else None,
                              x if ctx.needs_input_grad[0] else None)
        return _make(backends.current().conv2d_backward_weight(
            dy._data, x._data, tuple(kernel_size), *geometry))

    @staticmethod
    def backward(ctx, grad):
        dy, x = ctx.saved_tensors
        grad_dy = Conv2d.apply(x, grad, None, ctx.geometry) if ctx.needs_input_grad[0] else None
        grad_x = Conv2dBackwardInput.apply(dy, grad, x.shape[2:], ctx.geometry) \
            if ctx.needs_input_grad[1] else None
        return grad_dy, grad_x, None, None


# ----------------------------------------------------------------------------- arguments

def expand_param(name, value, dims, what="convolution"):
    """An int or a sequence of 1 or ``dims`` ints as a ``dims``-tuple, as PyTorch's parser."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in values):
        raise TypeError(f"{name} must be an int or a tuple of {dims} ints, got {value!r}")
    values = tuple(int(v) for v in values)
    if len(values) == 1:
        values = values * dims
    if len(values) != dims:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {dims} "
                           f"values to match the {what} dimensions, but got {name}="
                           f"{list(values)}")
    return values


def _sizes(shape):
    return " x ".join(str(n) for n in shape)


def _check_tensors(name, input, weight, bias, dims):
    for label, t in (("input", input), ("weight", weight)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {label} must be a minitorch Tensor, got "
                            f"{type(t).__name__}")
    if bias is not None and not isinstance(bias, Tensor):
        raise TypeError(f"{name}: bias must be a minitorch Tensor or None, got "
                        f"{type(bias).__name__}")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input to "
                           f"{name}, but got input of size: {list(input.shape)}")
    if weight.ndim != dims + 2:
        raise RuntimeError(f"{name}: expected weight to be {dims + 2}-d (out_channels, "
                           f"in_channels / groups, *kernel_size), got size {list(weight.shape)}")
    if input.dtype is bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype}) and weight type ({weight.dtype}) should "
                           "be the same")
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({input.dtype}) and bias type ({bias.dtype}) should be "
                           "the same")


def _check_channels(input, weight, bias, groups):
    """PyTorch's checks (and messages) of the channel counts of a batched input."""
    out_channels = weight.shape[0]
    if out_channels < groups or out_channels % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {[list(weight.shape)]} "
                           "instead")
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(input.shape)} to have "
                           f"{weight.shape[1] * groups} channels, but got {input.shape[1]} "
                           "channels instead")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_channels} elements, but got bias of size "
                           f"{list(bias.shape)} instead")


def same_padding(kernel, dilation):
    """(left, right) per dim for padding="same": dilation·(kernel − 1) in all, the odd one
    on the right (as PyTorch)."""
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return [(t // 2, t - t // 2) for t in totals]


def _convolution(name, input, weight, bias, stride, padding, dilation, groups, dims):
    """conv1d (dims 1) or conv2d (dims 2): checked as PyTorch checks, run as a conv2d."""
    _check_tensors(name, input, weight, bias, dims)
    stride = expand_param("stride", stride, dims)
    dilation = expand_param("dilation", dilation, dims)
    if isinstance(groups, bool) or not isinstance(groups, int):
        raise TypeError(f"{name}: groups must be an int, got {groups!r}")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    unbatched = input.ndim == dims + 1
    x = input.unsqueeze(0) if unbatched else input
    _check_channels(x, weight, bias, groups)
    kernel = tuple(weight.shape[2:])
    if isinstance(padding, str):
        if padding == "valid":
            padding = (0,) * dims
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            amounts = same_padding(kernel, dilation)
            extra = [right - left for left, right in amounts]
            if any(extra):  # the odd unit of padding goes on the right, as one zero-padded copy
                x = _pad(x, [p for e in reversed(extra) for p in (0, e)])
            padding = tuple(left for left, _ in amounts)
        else:
            raise RuntimeError(f"Invalid padding string: {padding!r}")
    else:
        padding = expand_param("padding", padding, dims)
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
    padded = [n + 2 * p for n, p in zip(x.shape[2:], padding)]
    dilated = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(k > n for k, n in zip(dilated, padded)):
        raise RuntimeError(f"Calculated padded input size per channel: ({_sizes(padded)}). "
                           f"Kernel size: ({_sizes(dilated)}). Kernel size can't be greater "
                           "than actual input size")
    if dims == 1:  # a 1-d convolution is a 2-d one over a height of 1
        x, weight = x.unsqueeze(2), weight.unsqueeze(2)
        stride, padding, dilation = (1,) + stride, (0,) + padding, (1,) + dilation
    geometry = Geometry(stride, padding, dilation, groups)
    if x.dtype.is_floating_point:
        out = Conv2d.apply(x, weight, bias, geometry)
    else:  # integers (no gradient): in float64, exact while the sums stay below 2**53
        as_float = [None if t is None else t.to(float64) for t in (x, weight, bias)]
        out = Conv2d.apply(*as_float, geometry).to(x.dtype)
    if dims == 1:
        out = out.squeeze(2)
    return out.squeeze(0) if unbatched else out


@op(method=False, functional=True)
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation, as in every framework) of an (N, C, H, W) or
    unbatched (C, H, W) input with an (O, C/groups, kh, kw) weight, as ``torch.conv2d``.

    ``stride``, ``padding`` and ``dilation``: an int or an (h, w) pair; ``padding`` may also be
    "valid" (none) or "same" (output as large as the input; stride 1 only). ``groups``: the
    channels split into that many independent convolutions."""
    return _convolution("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


@op(method=False, functional=True)
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-d convolution of an (N, C, L) or unbatched (C, L) input with an (O, C/groups, k)
    weight, as ``torch.conv1d`` (run as conv2d over a height of 1)."""
    return _convolution("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)
