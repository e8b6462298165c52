"""Sorting and selection: ``sort``, ``argsort``, ``topk``, ``unique``, ``nonzero`` and
``masked_select``.

The order is computed on the numpy array; the values that come out are then picked from the
input with ``Gather`` or an index (ops whose backward scatters the gradient back to the places
the values came from), so ``sort``, ``topk`` and ``masked_select`` are differentiable in their
values and differentiate again. Indices, ``unique`` and ``nonzero`` carry no gradient.

NaN sorts as the largest value, as in PyTorch: last in an ascending sort, first in a descending
one. The sort is always stable (``stable=True`` asks for what every call gives), so equal values
keep their order in both directions.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..device_arrays import array_module
from ..tensor import Tensor
from ._helpers import normalize_dim
from .reduction import values_indices
from .registry import op
from .shape import Gather, GetItem

_make = Tensor._make


def _stable_order(x, axis, descending):
    """The int64 indices that sort ``x`` along ``axis``, stably in both directions.

    A descending stable order is the ascending stable order of the reversed array, reversed and
    mapped back (sorting ``-x`` instead would put NaN last and cannot negate bools)."""
    if not descending:
        return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)
    n = x.shape[axis]
    order = np.flip(np.argsort(np.flip(x, axis), axis=axis, kind="stable"), axis)
    return (n - 1 - order).astype(np.int64)


_MAX_PASSES = 16


def _first_k_by_passes(x, axis, largest, k):
    """The indices of the first ``k`` of each slice along ``axis`` in ``_stable_order``'s order,
    found by ``k`` passes of argmax (argmin) that each mark the element they take; None where
    that is not cheaper than a sort or cannot match it, and the caller sorts.

    A small ``k`` (sampling's top-k) then costs k reads of the input instead of a full sort.
    argmax and argmin return the first of equal values (the stable order's tie rule) and argmax
    the first NaN (NaN sorts as the largest); a mark is -inf (+inf), so a slice whose picks
    reach that infinity could pick a marked element twice: it falls back, as does ``largest=False``
    with NaNs (argmin would pick them first)."""
    if k > _MAX_PASSES or x.dtype.kind != "f" or x.shape[axis] < 4 * k:
        return None
    if not largest and np.isnan(x).any():
        return None
    work = np.moveaxis(x, axis, -1).copy()
    flat = work.reshape(-1, work.shape[-1])
    xp = array_module(x)
    rows = xp.arange(flat.shape[0])
    pick, mark = (np.argmax, -np.inf) if largest else (np.argmin, np.inf)
    order = xp.empty((flat.shape[0], k), np.int64)
    for i in range(k):
        taken = pick(flat, axis=-1)
        order[:, i] = taken
        if (flat[rows, taken] == mark).any():
            return None
        flat[rows, taken] = mark
    return np.moveaxis(order.reshape(work.shape[:-1] + (k,)), -1, axis)


def _check_tensor(value, name, caller):
    if not isinstance(value, Tensor):
        raise TypeError(f"{caller}: {name} must be a Tensor, got {type(value).__name__}")


def _sorted_along(input, dim, descending, k=None):
    """(values, indices) of ``input`` sorted along ``dim``, the first ``k`` of each only."""
    d = normalize_dim(dim, input.ndim)
    if input.ndim == 0:  # one element: it is its own sort
        values, indices = _sorted_along(input.reshape(1), 0, descending, k)
        return values_indices(values.reshape(()), indices.reshape(()))
    order = None if k is None else _first_k_by_passes(input._data, d, descending, k)
    if order is None:
        order = _stable_order(input._data, d, descending)
        if k is not None:
            order = order[(slice(None),) * d + (slice(0, k),)]
    indices = _make(array_module(order).ascontiguousarray(order))
    return values_indices(Gather.apply(input, d, indices), indices)


@op()
def sort(input, dim=-1, descending=False, *, stable=False):
    """(values, indices) along ``dim``, ascending unless ``descending``; always stable, so
    ``stable`` changes nothing (PyTorch's unstable sort may order equal values either way)."""
    _check_tensor(input, "input", "sort")
    return _sorted_along(input, dim, descending)


@op()
def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices ``sort`` returns."""
    _check_tensor(input, "input", "argsort")
    return sort(input, dim, descending, stable=stable).indices


@op()
def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the ``k`` largest (``largest=False``: smallest) elements along
    ``dim``. They come out sorted whatever ``sorted`` says (PyTorch leaves the order unspecified
    when it is False); among equal values the first in the input comes first."""
    _check_tensor(input, "input", "topk")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"topk: k must be an int, got {type(k).__name__}")
    if input.dtype.name == "bool":
        raise RuntimeError("topk: bool tensors are not supported (as in PyTorch); convert "
                           "with .long() or .float() first")
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    if not 0 <= k <= size:
        raise RuntimeError(f"topk: selected index k out of range: k={k} for dim {d} of size "
                           f"{size} (shape {tuple(input.shape)})")
    if input.ndim == 0:  # PyTorch returns the element itself for k = 0 as for k = 1
        return _sorted_along(input, d, largest)
    return _sorted_along(input, d, largest, int(k))


@op()
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (``dim=None``: of the flattened input) or distinct slices along
    ``dim``, in ascending (lexicographic) order, and on request ``inverse`` (for each element or
    slice, where it went in the output; the input's shape for ``dim=None``) and ``counts``.

    Returns the tensor alone, or a tuple ``(output, inverse, counts)`` of those asked for, as
    PyTorch. NaNs are not equal to each other, so each is its own unique value. The output is
    always sorted (PyTorch's CPU ``sorted=False`` sorts too). Not differentiable: PyTorch has no
    derivative for it either."""
    _check_tensor(input, "input", "unique")
    x = input._data
    if dim is None:
        found = np.unique(x.reshape(-1), return_inverse=True, return_counts=True,
                          equal_nan=False)
        inverse_shape = x.shape
    else:
        d = normalize_dim(dim, input.ndim)
        if input.ndim == 0:
            x = x.reshape(1)
        if x.shape[d] == 0:  # numpy cannot take unique slices of an empty dim
            found = (x, np.zeros_like(x, np.int64, shape=0), np.zeros_like(x, np.int64, shape=0))
        else:
            found = np.unique(x, return_inverse=True, return_counts=True, axis=d)
        inverse_shape = (x.shape[d],)
    output, inverse, counts = found
    results = [_make(array_module(output).ascontiguousarray(output))]
    if return_inverse:
        results.append(_make(inverse.reshape(inverse_shape).astype(np.int64)))
    if return_counts:
        results.append(_make(counts.astype(np.int64)))
    return results[0] if len(results) == 1 else tuple(results)


@op()
def nonzero(input, *, as_tuple=False):
    """The indices of the non-zero elements: an int64 tensor of shape (count, ndim), one row per
    element in row-major order, or with ``as_tuple=True`` one 1-d tensor per dim (a 0-d input
    counts as 1-d there, as in PyTorch)."""
    _check_tensor(input, "input", "nonzero")
    x = input._data
    if as_tuple:
        return tuple(_make(i.astype(np.int64)) for i in np.nonzero(x.reshape(-1) if x.ndim == 0
                                                                      else x))
    if x.ndim == 0:
        return _make(np.zeros_like(x, np.int64, shape=(1 if x.item() else 0, 0)))
    return _make(np.argwhere(x).astype(np.int64))


@op()
def masked_select(input, mask):
    """A new 1-d tensor of the elements of ``input`` where the bool ``mask`` is True, input and
    mask broadcast together first (row-major order). The gradient goes back to those places."""
    _check_tensor(input, "input", "masked_select")
    _check_tensor(mask, "mask", "masked_select")
    if mask.dtype.name != "bool":
        raise RuntimeError(f"masked_select: expected a bool tensor for mask, got {mask.dtype}")
    try:
        shape = np.broadcast_shapes(tuple(input.shape), tuple(mask.shape))
    except ValueError:
        raise RuntimeError(f"masked_select: shape of mask {tuple(mask.shape)} does not "
                           f"broadcast with shape of input {tuple(input.shape)}") from None
    if tuple(input.shape) != shape:
        input = input.expand(*shape)
    keep = np.broadcast_to(mask._data, shape)
    if not shape:  # a 0-d input: index its 1-element reshape, as numpy gives 0-d masks a new dim
        input, keep = input.reshape(1), keep.reshape(1)
    return GetItem.apply(input, keep, index_tensors=(mask,))

