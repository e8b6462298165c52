"""Reductions over ``dim`` (an int, a tuple, or None for all) with ``keepdim``:
sum, mean, amax/amin, max/min (values and indices), argmax/argmin, var/std, logsumexp, all/any.

The backward of a reduction spreads the gradient back over the reduced dims with ``expand``
(itself an op whose backward is a sum), so every formula here differentiates again.
Sums, means and amax/amin over the trailing dims of a contiguous float tensor (over the last
dim, or over everything) run on the backend's row kernels (``sum_rows``, ``amax_rows``: on
every thread, float32 summed in blocks added in double); other layouts reduce with numpy.
"""
import builtins
import collections
import math

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import as_array, max_or_neg_inf
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._helpers import normalize_dim, normalize_dims
from .registry import op

_make = Tensor._make

values_indices = collections.namedtuple("values_indices", ["values", "indices"])


def _kept_shape(shape, dims):
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _trailing_rows(x, dims):
    """(rows, cols) when ``dims`` are the trailing dims of a C-contiguous float array, so that
    reducing over them is reducing each row of x.reshape(rows, cols); else None."""
    if (not dims or x.dtype.kind != "f" or not x.flags.c_contiguous
            or dims != tuple(range(x.ndim - len(dims), x.ndim))):
        return None
    split = x.ndim - len(dims)
    return math.prod(x.shape[:split]), math.prod(x.shape[split:])


def _reduced_shape(shape, dims, keepdim):
    return _kept_shape(shape, dims) if keepdim else tuple(
        n for i, n in enumerate(shape) if i not in dims)


def _sum(x, dims, keepdim, scale):
    """scale * the sum of x over dims."""
    rows = _trailing_rows(x, dims)
    if rows is not None:
        if len(dims) == 1 and not keepdim:  # the last dim: sum_rows gives x.shape[:-1] itself
            return backends.current().sum_rows(x, scale)
        out = backends.current().sum_rows(x.reshape(rows), scale)
        return out.reshape(_reduced_shape(x.shape, dims, keepdim))
    out = tapes.computed(np.sum, x, axis=dims, keepdims=keepdim)
    return out if scale == 1 else tapes.computed(np.multiply, out, scale, dtype=x.dtype)


class Sum(Function):
    """scale * the sum over dims (``mean``: scale = 1 / count)."""

    @staticmethod
    def forward(ctx, a, dims, keepdim, scale):
        ctx.shape, ctx.kept, ctx.scale = a.shape, _kept_shape(a.shape, dims), scale
        return _make(_sum(a._data, dims, keepdim, scale))

    @staticmethod
    def backward(ctx, grad):
        grad = grad.reshape(ctx.kept)
        if ctx.scale != 1:
            grad = grad * ctx.scale
        return grad.expand(ctx.shape), None, None, None


def _extreme_values(x, dims, largest):
    """max (or min) of x over dims, kept dims; NaN where a NaN is among the values."""
    rows = _trailing_rows(x, dims)
    if rows is not None:
        out = backends.current().amax_rows(x.reshape(rows), largest)
        return out.reshape(_kept_shape(x.shape, dims))
    return (np.max if largest else np.min)(x, axis=dims, keepdims=True)


class Amax(Function):
    """max over dims; the gradient is shared evenly among tied maxima, as in PyTorch."""

    @staticmethod
    def forward(ctx, a, dims, keepdim, largest):
        x = a._data
        out = _extreme_values(x, dims, largest)
        result = _make(out if keepdim else out.reshape(_reduced_shape(x.shape, dims, False)))
        ctx.dims, ctx.kept = dims, out.shape
        ctx.save_for_backward(a, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        a, result = ctx.saved_tensors
        # which entries are the extreme, each sharing evenly: a constant of the backward
        hit = (a._data == result._data.reshape(ctx.kept)).astype(a._data.dtype)
        share = _make(hit / np.sum(hit, axis=ctx.dims, keepdims=True))
        return grad.reshape(ctx.kept) * share, None, None, None


class LogSumExp(Function):
    """log sum exp(a) = m + log sum exp(a - m), m = max a. The gradient, softmax(a), is taken as
    exp((a - m) - log sum exp(a - m)): exp(a - result) would lose the log where |m| >> 1 (it
    gives [1, 1] for [1e17, 1e17], PyTorch's result too, not [0.5, 0.5])."""

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        x = a._data
        m = max_or_neg_inf(x, dims)  # -inf over empty dims
        m = np.where(np.isfinite(m), m, 0.0).astype(x.dtype)  # all -inf rows give -inf, not NaN
        with np.errstate(divide="ignore", over="ignore"):  # x - m may round to -inf: exp 0
            log_sum = np.log(np.sum(np.exp(x - m), axis=dims, keepdims=True))
        out = (log_sum + m).astype(x.dtype, copy=False)
        ctx.save_for_backward(a)
        ctx.shift, ctx.log_sum = _make(m), _make(log_sum.astype(x.dtype, copy=False))
        ctx.dims = dims
        return _make(out if keepdim else np.squeeze(out, axis=dims))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        grad = grad.reshape(ctx.log_sum.shape)
        shifted = a - ctx.shift  # the shift is a constant: the softmax does not depend on it
        # Under create_graph the result must be a function of ``a`` too (not a saved constant),
        # or the second derivative would miss the softmax's own dependence on ``a``.
        log_sum = LogSumExp.apply(shifted, ctx.dims, True) if is_grad_enabled() else ctx.log_sum
        return grad * (shifted - log_sum).exp(), None, None


@op()
def sum(input, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    elif input.dtype.name == "bool":
        input = input.long()
    return Sum.apply(input, normalize_dims(dim, input.ndim), keepdim, 1)


@op()
def mean(input, dim=None, keepdim=False, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise TypeError(f"mean: input dtype should be floating point, got {input.dtype}")
    dims = normalize_dims(dim, input.ndim)
    count = math.prod([input.shape[d] for d in dims])
    return Sum.apply(input, dims, keepdim, 1.0 / count if count else float("nan"))


def _check_nonempty(a, dims, name):
    if builtins.any(a.shape[d] == 0 for d in dims) or (a.numel() == 0 and not dims):
        raise IndexError(f"{name}: cannot reduce over an empty dimension of a tensor of shape "
                         f"{tuple(a.shape)}")


@op()
def amax(input, dim=None, keepdim=False):
    dims = normalize_dims(dim if dim != () else None, input.ndim)
    _check_nonempty(input, dims, "amax")
    return Amax.apply(input, dims, keepdim, True)


@op()
def amin(input, dim=None, keepdim=False):
    dims = normalize_dims(dim if dim != () else None, input.ndim)
    _check_nonempty(input, dims, "amin")
    return Amax.apply(input, dims, keepdim, False)


def _extreme(a, dim, keepdim, largest, name):
    if dim is None:
        return (amax if largest else amin)(a)
    d = normalize_dim(dim, a.ndim)
    _check_nonempty(a, (d,) if a.ndim else (), name)
    indices = (argmax if largest else argmin)(a, d, keepdim=True)
    values = a.gather(d, indices) if a.ndim else a
    if not keepdim and a.ndim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return values_indices(values, indices)


@op()
def max(input, dim=None, keepdim=False, *, other=None):
    """max(a) -> the largest value; max(a, dim) -> (values, indices); max(a, other) or
    max(a, other=b) -> the elementwise maximum, as in PyTorch."""
    if isinstance(dim, Tensor) or other is not None:
        from .elementwise import maximum
        return maximum(input, dim if other is None else other)
    return _extreme(input, dim, keepdim, True, "max")


@op()
def min(input, dim=None, keepdim=False, *, other=None):
    """min(a), min(a, dim) or min(a, other): as ``max``."""
    if isinstance(dim, Tensor) or other is not None:
        from .elementwise import minimum
        return minimum(input, dim if other is None else other)
    return _extreme(input, dim, keepdim, False, "min")


def _arg(np_fn, name):
    def arg(input, dim=None, keepdim=False):
        if dim is None:
            _check_nonempty(input, (), name)
            out = as_array(np_fn(input._data.reshape(-1)), input._data)
            return _make(out.reshape((1,) * input.ndim) if keepdim else out.astype(np.int64))
        d = normalize_dim(dim, input.ndim)
        _check_nonempty(input, (d,) if input.ndim else (), name)
        if input.ndim == 0:
            return _make(np.zeros((), np.int64))
        return _make(np_fn(input._data, axis=d, keepdims=keepdim).astype(np.int64))
    arg.__name__ = arg.__qualname__ = name
    return arg


argmax, argmin = op()(_arg(np.argmax, "argmax")), op()(_arg(np.argmin, "argmin"))


@op()
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance with Bessel's correction by default (``correction=1``), as torch.var."""
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    dims = normalize_dims(dim, input.ndim)
    count = math.prod([input.shape[d] for d in dims])
    centered = input - mean(input, dims, keepdim=True)
    denominator = count - correction
    return Sum.apply(centered * centered, dims, keepdim,
                     1.0 / denominator if denominator > 0 else float("nan"))


@op()
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return var(input, dim, unbiased, keepdim, correction=correction).sqrt()


@op()
def logsumexp(input, dim, keepdim=False):
    if not input.dtype.is_floating_point:
        input = input.float()
    return LogSumExp.apply(input, normalize_dims(dim, input.ndim), keepdim)


@op()
def all(input, dim=None, keepdim=False):
    return _make(np.all(input._data, axis=normalize_dims(dim, input.ndim), keepdims=keepdim))


@op()
def any(input, dim=None, keepdim=False):
    return _make(np.any(input._data, axis=normalize_dims(dim, input.ndim), keepdims=keepdim))

