"""Pooling over the last two dims of an (N, C, H, W) or unbatched (C, H, W) input, as PyTorch's
``F.max_pool2d``, ``F.avg_pool2d`` and ``F.adaptive_avg_pool2d``.

- Max pooling takes the largest element of each window (the first of equal ones; a NaN wins)
  and remembers where it was: ``indices`` are flat positions in each (H, W) plane, as
  PyTorch's. Its gradient goes back to those positions only (``MaxPoolScatter``, whose own
  gradient is a gather at the same positions, so it differentiates again).
- Average pooling is linear and separable: each window's mean is a weighted sum over rows
  then over columns, ``y = A_h · x · A_wᵀ``, with A holding each window's 1/size in the
  columns it covers. Both kinds of average (fixed windows with padding, ceil_mode and
  count_include_pad; and adaptive windows of start ⌊i·H/OH⌋, end ⌈(i+1)·H/OH⌉) are such
  matrices, so their gradients of any order are matmuls too.

Max pooling runs on the backend's ``max_pool2d_forward``/``max_pool2d_backward`` kernels
(csrc/max_pool2d.c; the numpy reference loops over the window's offsets, each a strided slice
of the input); integer inputs go through them in float64. The averages are numpy matrices and
Tensor matmuls.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``, the sibling
op modules.
"""
import numpy as np

from .. import backends
from ..autograd.function import Function
from ..backends import tape as tapes
from ..backends.checks import pooled_size
from ..device_arrays import on_device_of
from ..dtype import bool_, int64
from ..tensor import Tensor
from .convolution import expand_param
from .registry import op

_make = Tensor._make


# ----------------------------------------------------------------------------- geometry

def _check_input(name, input):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a minitorch Tensor, got {type(input).__name__}")
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[-3:]):
        raise RuntimeError(f"{name}: non-empty 3D or 4D (batch mode) tensor expected for input, "
                           f"got size {list(input.shape)}")
    if input.dtype is bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')


def _window_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, dilation, output size) as (h, w) pairs, checked as PyTorch."""
    kernel = expand_param("kernel_size", kernel_size, 2, "pooling")
    stride = kernel if stride is None or stride == () or stride == [] else \
        expand_param("stride", stride, 2, "pooling")
    padding = expand_param("padding", padding, 2, "pooling")
    dilation = expand_param("dilation", dilation, 2, "pooling")
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"{name}: kernel_size must be greater than zero, but got "
                           f"{list(kernel)}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"{name}: stride should be greater than zero, but got {list(stride)}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"{name}: dilation should be greater than zero, but got "
                           f"{list(dilation)}")
    for p, k, d in zip(padding, kernel, dilation):
        if p < 0 or p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    size = tuple(input.shape[-2:])
    out = tuple(pooled_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))
    if min(out) < 1:
        channels = input.shape[-3]
        raise RuntimeError(f"Given input size: ({channels}x{size[0]}x{size[1]}). Calculated "
                           f"output size: ({channels}x{out[0]}x{out[1]}). Output size is too "
                           "small")
    return kernel, stride, padding, dilation, out


def _batched(input):
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


# ----------------------------------------------------------------------------- max pooling

class MaxPool2d(Function):
    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, ceil_mode):
        data = x._data if x.dtype.is_floating_point else x._data.astype(np.float64)
        values, indices = backends.current().max_pool2d_forward(data, kernel, stride, padding,
                                                                dilation, ceil_mode)
        ctx.input_shape, ctx.indices = x.shape, indices
        indices = _make(indices)
        ctx.mark_non_differentiable(indices)
        return _make(values.astype(x._data.dtype, copy=False)), indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        return (MaxPoolScatter.apply(grad, ctx.indices, ctx.input_shape),) + (None,) * 5


class MaxPoolScatter(Function):
    """zeros of the input's shape with each output's gradient added at its max's position."""

    @staticmethod
    def forward(ctx, grad, indices, input_shape):
        ctx.indices = indices
        return _make(backends.current().max_pool2d_backward(grad._data, indices,
                                                            tuple(input_shape[2:])))

    @staticmethod
    def backward(ctx, grad):
        return MaxPoolGather.apply(grad, ctx.indices), None, None


class MaxPoolGather(Function):
    """Each output position's value of x at its max's position: MaxPoolScatter's adjoint."""

    @staticmethod
    def forward(ctx, x, indices):
        ctx.indices, ctx.input_shape = indices, x.shape
        n, c = indices.shape[:2]
        planes = x._data.reshape(n, c, -1)
        return _make(np.take_along_axis(planes, indices.reshape(n, c, -1), axis=2)
                     .reshape(indices.shape))

    @staticmethod
    def backward(ctx, grad):
        return MaxPoolScatter.apply(grad, ctx.indices, ctx.input_shape), None


@op(function=False, method=False, functional=True)
def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The largest element of each ``kernel_size`` window (dilated by ``dilation``, ``stride``
    apart, default ``kernel_size``; ``padding`` counts as -inf, at most half the window);
    ``ceil_mode`` keeps a last partial window. ``return_indices``: also the flat (H, W)
    position of each maximum in its plane, an int64 tensor."""
    _check_input("max_pool2d", input)
    geometry = _window_geometry("max_pool2d", input, kernel_size, stride, padding, dilation,
                                ceil_mode)
    x, unbatched = _batched(input)
    values, indices = MaxPool2d.apply(x, *geometry[:4], bool(ceil_mode))
    if unbatched:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


# ----------------------------------------------------------------------------- average pooling

def _windows(size, out, kernel, stride, padding, count_include_pad):
    """Each output's window: (start, end) inside the input, and the number it divides by."""
    for o in range(out):
        start = o * stride - padding
        end = min(start + kernel, size + padding)   # a window may reach into the padding only
        padded_size = end - start
        start, end = max(start, 0), min(end, size)
        yield start, end, padded_size if count_include_pad else end - start


def _average_matrix(size, out, kernel, stride, padding, count_include_pad, weighted=True):
    """(out, size) float64: row o holds 1/(window o's divisor) on the input positions of
    window o (1 there if not ``weighted``: a divisor_override divides afterwards)."""
    matrix = np.zeros((out, size))
    for o, (start, end, divisor) in enumerate(_windows(size, out, kernel, stride, padding,
                                                       count_include_pad)):
        if end > start:
            matrix[o, start:end] = 1.0 / divisor if weighted else 1.0
    return matrix


def _adaptive_matrix(size, out):
    """(out, size) float64: row i averages input positions ⌊i·size/out⌋ to ⌈(i+1)·size/out⌉."""
    matrix = np.zeros((out, size))
    for i in range(out):
        start, end = (i * size) // out, -(-((i + 1) * size) // out)
        matrix[i, start:end] = 1.0 / (end - start)
    return matrix


def _separable(x, rows, cols):
    """rows · x · colsᵀ over the last two dims of x (a linear map, so its gradient is too)."""
    dtype = x.dtype.numpy
    rows, cols = (on_device_of(tapes.constant(m.astype(dtype)), x._data)
                  for m in (rows, np.ascontiguousarray(cols.T)))
    return _make(rows) @ x @ _make(cols)


@op(function=False, method=False, functional=True)
def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """The mean of each ``kernel_size`` window (``stride`` apart, default ``kernel_size``; zero
    ``padding`` of at most half the window, counted in the mean if ``count_include_pad``);
    ``ceil_mode`` keeps a last partial window (its part beyond the padding never counts);
    ``divisor_override`` divides every window's sum by that number instead."""
    _check_input("avg_pool2d", input)
    kernel, stride, padding, _, out = _window_geometry("avg_pool2d", input, kernel_size, stride,
                                                       padding, 1, ceil_mode)
    if divisor_override is not None and (isinstance(divisor_override, bool)
                                         or not isinstance(divisor_override, int)
                                         or divisor_override == 0):
        raise RuntimeError(f"avg_pool2d: divisor must be a non-zero int, got "
                           f"{divisor_override!r}")
    h, w = input.shape[-2:]
    if not input.dtype.is_floating_point:
        return _integer_avg_pool(input, kernel, stride, padding, out, count_include_pad,
                                 divisor_override)
    weighted = divisor_override is None
    rows = _average_matrix(h, out[0], kernel[0], stride[0], padding[0], count_include_pad,
                           weighted)
    cols = _average_matrix(w, out[1], kernel[1], stride[1], padding[1], count_include_pad,
                           weighted)
    y = _separable(input, rows, cols)
    return y if divisor_override is None else y / divisor_override


def _integer_avg_pool(input, kernel, stride, padding, out, count_include_pad, divisor):
    """PyTorch's int64 average pooling: each window's sum divided by its divisor in integer
    arithmetic (rounding toward zero); other integer dtypes are not implemented there."""
    if input.dtype is not int64:
        raise NotImplementedError(f'"avg_pool2d" not implemented for {input.dtype}')
    h, w = input.shape[-2:]
    dims = list(zip((h, w), out, kernel, stride, padding))
    ones = [_average_matrix(*dim, count_include_pad, weighted=False) for dim in dims]
    sums = ones[0] @ input._data.astype(np.float64) @ ones[1].T   # exact below 2**53
    if divisor is None:
        divisor = np.outer(*[[d for _, _, d in _windows(*dim, count_include_pad)]
                             for dim in dims])
    return _make(np.trunc(sums / divisor).astype(np.int64))


@op(function=False, method=False, functional=True)
def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed ``output_size`` (an int, or an (h, w) pair where None keeps
    the input's size): output (i, j) averages rows ⌊i·H/OH⌋ to ⌈(i+1)·H/OH⌉ and likewise
    columns, so windows may overlap or differ in size by one."""
    if not isinstance(input, Tensor):
        raise TypeError(f"adaptive_avg_pool2d: input must be a minitorch Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim not in (3, 4) or any(n == 0 for n in input.shape[-2:]):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor with non-zero "
                           f"spatial sizes, but got {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"adaptive_avg_pool2d: mean() could not infer the output dtype: "
                           f"input must be floating point, got {input.dtype}")
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * 2
    if len(sizes) != 2:
        raise RuntimeError(f"adaptive_avg_pool2d: output_size must be 2, got {len(sizes)}")
    out = []
    for given, size in zip(sizes, input.shape[-2:]):
        if given is None:
            out.append(size)
        elif isinstance(given, bool) or not isinstance(given, int) or given < 0:
            raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be "
                               f"non-negative ints or None, got {output_size!r}")
        else:
            out.append(given)
    h, w = input.shape[-2:]
    if out == [1, 1]:  # global average pooling: one mean per plane
        return input.mean((-2, -1), keepdim=True)
    return _separable(input, _adaptive_matrix(h, out[0]), _adaptive_matrix(w, out[1]))

