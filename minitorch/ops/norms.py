"""Products and norms over dims, and the similarities built on them: ``prod``, ``norm``,
``count_nonzero``, ``F.cosine_similarity`` and ``F.pairwise_distance``.

prod's gradient is the product of the *other* elements, taken as the exclusive running product
from the left times the one from the right (``cumprod`` of the input shifted by one, each way),
so a zero in the input gives the right gradient instead of a division by zero. The 2-norm's
gradient x / ‖x‖ is 0 where the norm is 0, as PyTorch's; the other norms are composites of
``abs``, ``sum``, ``amax``/``amin`` and ``pow``.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import math

import numpy as np

from ..device_arrays import as_array
from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import broadcast_operands, normalize_dim, normalize_dims
from .elementwise import abs, where
from .registry import op, tensor_method
from .scan import cumprod
from .shape import cat

_make = Tensor._make


def _exclusive_products(x, dim):
    """For each element, the product of the others along ``dim`` (differentiable)."""
    n = x.shape[dim]
    one = x.narrow(dim, 0, 1) * 0 + 1
    before = cumprod(cat([one, x.narrow(dim, 0, n - 1)], dim), dim)
    after = cumprod(cat([x.narrow(dim, 1, n - 1), one], dim).flip(dim), dim).flip(dim)
    return before * after


class Prod(Function):
    @staticmethod
    def forward(ctx, a, dim, keepdim):
        ctx.dim, ctx.keepdim = dim, keepdim
        ctx.save_for_backward(a)
        return _make(as_array(np.prod(a._data, axis=dim, keepdims=keepdim), a._data))

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        if a.numel() == 0:
            return a * 0, None, None
        if not ctx.keepdim:
            grad = grad.unsqueeze(ctx.dim)
        return grad * _exclusive_products(a, ctx.dim), None, None


@op()
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """The product of the elements (over ``dim``, one dim, if given); integer and bool inputs
    give int64, ``dtype`` casts the input first."""
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.long()
    if dim is None:
        return Prod.apply(input.reshape(-1), 0, False)
    if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
        raise TypeError(f"prod: dim must be an int, got {type(dim).__name__}")
    if input.ndim == 0:
        normalize_dim(dim, 1)
        return input.clone()
    return Prod.apply(input, normalize_dim(dim, input.ndim), keepdim)


class Norm2(Function):
    """sqrt(sum x²) over ``dims``; its gradient x / norm is 0 where the norm is 0."""

    @staticmethod
    def forward(ctx, a, dims, keepdim):
        ctx.dims, ctx.keepdim = dims, keepdim
        data = a._data
        out = _make(as_array(np.sqrt(np.sum(data * data, axis=dims, keepdims=keepdim)), data)
                    .astype(data.dtype, copy=False))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        if not ctx.keepdim:
            for d in sorted(ctx.dims):
                grad, out = grad.unsqueeze(d), out.unsqueeze(d)
        return a * (grad / where(out == 0, math.inf, out)), None, None


@op(method=False)
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The vector p-norm of ``input`` (over ``dim``: an int or a tuple; all elements if None):
    p = 2 or "fro" (the default), 1, inf, -inf, 0 (the count of non-zeros) or any other
    number (sum |x|^p)^(1/p). Matrix norms ("nuc", 2-norm of a matrix) are not provided."""
    if out is not None:
        raise TypeError("norm: out= is not supported; use the returned tensor")
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm: expected a floating point input, got {input.dtype}")
    if isinstance(p, str) and p != "fro":
        raise RuntimeError(f"norm: p={p!r} is not supported (only vector norms and 'fro')")
    dims = normalize_dims(dim, input.ndim)
    p = 2 if p in ("fro", None) else p
    if p == 2:
        return Norm2.apply(input, dims, keepdim)
    magnitude = abs(input)
    if p == math.inf:
        return magnitude.amax(dims, keepdim)
    if p == -math.inf:
        return magnitude.amin(dims, keepdim)
    if p == 0:  # a count: its gradient is 0, but it is in the graph, as PyTorch's
        return (magnitude != 0).to(input.dtype).sum(dims, keepdim) + (magnitude * 0).sum(
            dims, keepdim)
    if p == 1:
        return magnitude.sum(dims, keepdim)
    return (magnitude ** p).sum(dims, keepdim) ** (1.0 / p)


@tensor_method("norm")
def _norm_method(self, p="fro", dim=None, keepdim=False, dtype=None):
    """``Tensor.norm``: ``norm`` without ``out``, as PyTorch's method."""
    return norm(self, p, dim, keepdim, dtype=dtype)


@op()
def count_nonzero(input, dim=None):
    """The number of non-zero elements (over ``dim``: an int or a tuple), as int64."""
    dims = normalize_dims(dim, input.ndim)
    return _make(as_array(np.count_nonzero(input._data, axis=dims), input._data).astype(np.int64))


@op(function=False, method=False, functional=True)
def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum over dim of (x1 / max(‖x1‖, eps)) · (x2 / max(‖x2‖, eps)), after broadcasting."""
    x1, x2 = broadcast_operands(x1, x2, "cosine_similarity")
    shape = np.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(*shape), x2.expand(*shape)
    unit1 = x1 / norm(x1, 2, dim, keepdim=True).clamp(min=eps)
    unit2 = x2 / norm(x2, 2, dim, keepdim=True).clamp(min=eps)
    return (unit1 * unit2).sum(dim)


@op(function=False, method=False, functional=True)
def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 - x2 + eps‖_p over the last dim."""
    diff = x1 - x2 + eps
    return norm(diff, p, -1 if diff.ndim else None, keepdim)
