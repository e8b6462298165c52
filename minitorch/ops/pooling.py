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

Vectorised numpy: a loop over the kh·kw offsets of the window (each a strided slice of the
input, of the output's size), not over output positions.
May import: ``minitorch.tensor``, ``minitorch.autograd``, the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..dtype import bool_, int64
from ..tensor import Tensor
from .convolution import expand_param
from .registry import op

_make = Tensor._make


# ----------------------------------------------------------------------------- geometry

def pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's output length: windows that start inside the input or its left padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


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

def _valid_outputs(out, size, offset, stride, padding):
    """The outputs o whose window element at ``offset`` lies inside the input (0 <= o·s − p +
    offset < size): a range [first, last), and the input position of ``first``."""
    first = max(0, -(-(padding - offset) // stride))
    last = min(out, (size - 1 + padding - offset) // stride + 1)
    return first, max(first, last), first * stride - padding + offset


def max_pool_forward(x, kernel, stride, padding, dilation, out):
    """(values, indices) of max pooling an (N, C, H, W) array, as PyTorch's CPU kernel: the
    running maximum starts at -inf at the window's first element inside the input, and an
    element replaces it if greater, or NaN."""
    n, c, h, w = x.shape
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    best = np.full((n, c) + out, lowest, dtype=x.dtype)
    index = np.empty((n, c) + out, dtype=np.int64)
    # where each window's first element inside the input is (rows and columns separately)
    first_row = np.arange(out[0]) * stride[0] - padding[0]
    first_row = np.where(first_row < 0, first_row % dilation[0], first_row)
    first_col = np.arange(out[1]) * stride[1] - padding[1]
    first_col = np.where(first_col < 0, first_col % dilation[1], first_col)
    index[...] = first_row[:, None] * w + first_col[None, :]
    for p in range(kernel[0]):
        i0, i1, row = _valid_outputs(out[0], h, p * dilation[0], stride[0], padding[0])
        for q in range(kernel[1]):
            j0, j1, col = _valid_outputs(out[1], w, q * dilation[1], stride[1], padding[1])
            if i0 == i1 or j0 == j1:
                continue
            values = x[:, :, row:row + stride[0] * (i1 - i0 - 1) + 1:stride[0],
                       col:col + stride[1] * (j1 - j0 - 1) + 1:stride[1]]
            running = best[:, :, i0:i1, j0:j1]
            take = values > running
            if x.dtype.kind == "f":
                take |= np.isnan(values)
            np.copyto(running, values, where=take)
            positions = ((row + stride[0] * np.arange(i1 - i0))[:, None] * w
                         + (col + stride[1] * np.arange(j1 - j0))[None, :])
            np.copyto(index[:, :, i0:i1, j0:j1], np.broadcast_to(positions, take.shape),
                      where=take)
    return best, index


class MaxPool2d(Function):
    @staticmethod
    def forward(ctx, x, kernel, stride, padding, dilation, out):
        values, indices = max_pool_forward(x._data, kernel, stride, padding, dilation, out)
        ctx.input_shape, ctx.indices = x.shape, indices
        indices = _make(indices)
        ctx.mark_non_differentiable(indices)
        return _make(values), indices

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        return (MaxPoolScatter.apply(grad, ctx.indices, ctx.input_shape),) + (None,) * 5


class MaxPoolScatter(Function):
    """zeros of the input's shape with each output's gradient added at its max's position."""

    @staticmethod
    def forward(ctx, grad, indices, input_shape):
        ctx.indices = indices
        n, c, h, w = input_shape
        planes = np.arange(n * c, dtype=np.int64).reshape(n, c, 1, 1) * (h * w)
        sums = np.bincount((planes + indices).ravel(), weights=grad._data.ravel(),
                           minlength=n * c * h * w)
        return _make(sums.astype(grad._data.dtype).reshape(input_shape))

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
    values, indices = MaxPool2d.apply(x, *geometry)
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
    return _make(rows.astype(dtype)) @ x @ _make(np.ascontiguousarray(cols.T).astype(dtype))


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

