"""Scans along one dim: ``cumsum`` and ``cumprod``.

out[i] = x[0] + ... + x[i] (or the product). The gradient of a cumulative sum is the reversed
cumulative sum of the gradient. That of a cumulative product is, for x with no zero,
rev_cumsum(grad · out) / x; with zeros in x that formula divides by zero, so the gradient is
taken as PyTorch does: an O(n) formula when only first derivatives are wanted, and the O(n²)
sum of "products with one factor left out" (which is itself differentiable) under
``create_graph``. Every backward is written in Tensor ops, so gradients differentiate again.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from .. import backends
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._helpers import normalize_dim
from .registry import op

_make = Tensor._make


class CumSum(Function):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        if a._data.dtype.kind != "f":
            return _make(np.cumsum(a._data, axis=dim))
        rows_last = np.moveaxis(a._data, dim, -1)  # the kernel sums along the last dim
        return _make(np.moveaxis(backends.current().cumsum_rows(rows_last), -1, dim))

    @staticmethod
    def backward(ctx, grad):
        return _reversed_cumsum(grad, ctx.dim), None


class CumProd(Function):
    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        out = _make(np.cumprod(a._data, axis=dim))
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, out = ctx.saved_tensors
        return _cumprod_backward(grad, a, out, ctx.dim), None


def _reversed_cumsum(t, dim):
    """out[i] = t[i] + t[i+1] + ... + t[n-1] along ``dim``."""
    return CumSum.apply(t.flip(dim), dim).flip(dim)


def _cumprod_backward(grad, x, out, dim):
    """d/dx[i] of sum_j grad[j] out[j] = sum_{j >= i} grad[j] · prod_{m <= j, m != i} x[m]."""
    from .elementwise import where
    zero = x._data == 0
    if not zero.any():
        return _reversed_cumsum(grad * out, dim) / x
    if is_grad_enabled():
        return _cumprod_backward_by_omitted_products(grad, x, dim)
    # O(n): before the first zero k of a slice, out[j] / x[i] is the product without x[i] and
    # every term with j >= k is 0; at k, the products leave out x[k] itself, which is the
    # cumulative product of x with x[k] set to 1; after k, every product has x[k] in it.
    seen = np.cumsum(zero, axis=dim)
    before, first = _make(seen == 0), _make(zero & (seen == 1))
    at_first = _reversed_cumsum(grad * CumProd.apply(where(first, 1.0, x), dim), dim)
    up_to_first = _reversed_cumsum(where(before, grad * out, 0.0), dim) / where(before, x, 1.0)
    return where(before, up_to_first, 0.0) + where(first, at_first, 0.0)


def _cumprod_backward_by_omitted_products(grad, x, dim):
    """The same gradient, one slice i at a time, from the products of x with x[i] left out:
    O(n²), but made of products only, so differentiable again at zeros (PyTorch's
    ``create_graph`` path)."""
    from .shape import cat
    n = x.shape[dim]
    ones = _make(np.ones(x.shape[:dim] + (1,) + x.shape[dim + 1:], x._data.dtype))
    columns = []
    for i in range(n):
        before = ones if i == 0 else CumProd.apply(x.narrow(dim, 0, i), dim).narrow(dim, i - 1, 1)
        after = CumProd.apply(x.narrow(dim, i + 1, n - i - 1), dim)
        omitted = cat([before, before * after], dim)  # prod_{m <= j, m != i} x[m], j >= i
        columns.append((grad.narrow(dim, i, n - i) * omitted).sum(dim, keepdim=True))
    return cat(columns, dim)


def _scan(fn, input, dim, dtype, name):
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    d = normalize_dim(dim, input.ndim)
    if dtype is not None:
        input = input.to(dtype)
    elif not input.dtype.is_floating_point:
        input = input.long()  # integer and bool scans accumulate in int64, as in PyTorch
    if input.ndim == 0:
        return fn.apply(input.reshape(1), 0).reshape(())
    return fn.apply(input, d)


@op(inplace="cumsum_")
def cumsum(input, dim, *, dtype=None):
    """Cumulative sum along ``dim``; integer and bool inputs give int64, ``dtype`` casts the
    input first."""
    return _scan(CumSum, input, dim, dtype, "cumsum")


@op(inplace="cumprod_")
def cumprod(input, dim, *, dtype=None):
    """Cumulative product along ``dim``; its gradient is right where the input has zeros."""
    return _scan(CumProd, input, dim, dtype, "cumprod")
