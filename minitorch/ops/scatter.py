"""The scatter family: writing or adding values into a copy of a tensor at given indices.

- ``scatter(input, dim, index, src)``: out[..., index[i, j], ...] = src[i, j] along ``dim``
  (``reduce="add"``/``"multiply"``: combined with what is there), or a scalar ``value``;
- ``scatter_add``: the same with the values added (repeated indices accumulate);
- ``index_fill(input, dim, index, value)``: whole slices along ``dim`` set to ``value``;
- ``index_add(input, dim, index, source, alpha=1)``: slices of ``source`` added at ``index``.

Each has its in-place form (``x.scatter_(...)``). Gradients: an overwritten element of
``input`` gets none, the rest pass through; the values written get the gradient at the place
they were written to (``gather``). As in PyTorch, when one place is written twice by
``scatter`` (repeated indices, no ``reduce``) only one value lands there but both get that
place's gradient. ``index_put`` (values at a tuple of index tensors) is in indexing_put.py.
May import: ``minitorch.backends``, ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op
modules.
"""
import numpy as np

from .. import backends
from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import normalize_dim
from .registry import op
from .shape import Gather, IndexAdd, _along_axis

_make = Tensor._make

_REDUCTIONS = {None: None, "add": np.add, "multiply": np.multiply}


class Scatter(Function):
    """``input`` with ``src`` (of ``index``'s shape) written along ``dim`` at ``index``."""

    @staticmethod
    def forward(ctx, input, src, dim, index, reduce):
        ctx.dim, ctx.reduce = dim, reduce
        ctx.save_for_backward(index)
        data = input._data
        if reduce == "add" and data.dtype.kind == "f" and all(
                n == m for k, (n, m) in enumerate(zip(index.shape, data.shape)) if k != dim):
            # the backend's kernel: one pass, threads over the lines that no two indices share
            return _make(backends.current().scatter_add(data, dim, index._data, src._data))
        out = data.copy()
        places = _along_axis(index._data, dim)
        if reduce is None:
            out[places] = src._data
        else:
            _REDUCTIONS[reduce].at(out, places, src._data)
        return _make(out)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        if ctx.reduce == "multiply":
            raise RuntimeError("scatter: the derivative of scatter with reduce='multiply' is not "
                               "implemented (nor is it in PyTorch)")
        grad_input = grad_src = None
        if ctx.needs_input_grad[0]:
            grad_input = grad if ctx.reduce == "add" else Scatter.apply(
                grad, _make(np.zeros_like(grad._data, shape=index.shape)), ctx.dim, index, None)
        if ctx.needs_input_grad[1]:
            grad_src = _gather_at(grad, ctx.dim, index)
        return grad_input, grad_src, None, None, None


def _gather_at(t, dim, index):
    """``t.gather(dim, index)`` for a valid index that may be smaller than ``t`` in any dim."""
    if any(n != m for k, (n, m) in enumerate(zip(index.shape, t.shape)) if k != dim):
        t = t[tuple(slice(0, n) if k != dim else slice(None) for k, n in enumerate(index.shape))]
    return Gather.apply(t, dim, index)


def _check_scatter(name, input, dim, index, src):
    """PyTorch's checks for scatter/scatter_add, with its error types; returns (dim, index) with
    a 0-d index made 1-d (PyTorch counts 0-d as 1-d here)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"{name}: input must be a Tensor, got {type(input).__name__}")
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}: index must be a Tensor, got {type(index).__name__}")
    d = normalize_dim(dim, input.ndim)
    if index.dtype.name not in ("int64", "int32"):
        raise RuntimeError(f"{name}: expected dtype int64 (or int32) for index, got "
                           f"{index.dtype}")
    if index.dtype.name == "int32":  # the kernels take int64, as PyTorch converts too
        index = index.long()
    rank = max(input.ndim, 1)
    if max(index.ndim, 1) != rank:
        raise RuntimeError(f"{name}: index must have the same number of dims as input: index "
                           f"has shape {tuple(index.shape)}, input {tuple(input.shape)}")
    if src is not None and max(src.ndim, 1) != rank:
        raise RuntimeError(f"{name}: src must have the same number of dims as index: src has "
                           f"shape {tuple(src.shape)}, index {tuple(index.shape)}")
    sizes = tuple(input.shape) or (1,)
    index_sizes = tuple(index.shape) or (1,)
    src_sizes = (tuple(src.shape) or (1,)) if src is not None else index_sizes
    if index.numel() and any(
            i > s or (k != d and i > n) for k, (i, s, n) in enumerate(zip(index_sizes, src_sizes,
                                                                          sizes))):
        raise RuntimeError(f"{name}: index of shape {tuple(index.shape)} must be no larger than "
                           f"input {tuple(input.shape)} apart from dim {d}, and no larger than "
                           f"src {tuple(src_sizes)}")
    values = index._data
    if values.size and (values.min() < 0 or values.max() >= sizes[d]):
        bad = values.min() if values.min() < 0 else values.max()
        raise RuntimeError(f"{name}: index {bad} is out of bounds for dim {d} with size "
                           f"{sizes[d]}")
    return d, index.reshape(index_sizes) if index.ndim == 0 else index


def _scatter(name, input, dim, index, src, reduce):
    """The shared body: ``src`` a Tensor, or a number written everywhere ``index`` points."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"{name}: reduce must be 'add' or 'multiply' (or None), got "
                           f"{reduce!r}")
    source = src if isinstance(src, Tensor) else None
    d, index = _check_scatter(name, input, dim, index, source)
    if source is None:
        constant = np.broadcast_to(np.full_like(input._data, src, shape=()), index.shape)
        source = _make(constant)
    elif source.dtype is not input.dtype:
        raise RuntimeError(f"{name}: expected src to have the dtype of input ({input.dtype}), "
                           f"got {source.dtype}")
    if source.ndim == 0:
        source = source.reshape(1)
    if tuple(source.shape) != tuple(index.shape):
        source = source[tuple(slice(0, n) for n in index.shape)]  # its backward pads with zeros
    flat = input.ndim == 0
    out = Scatter.apply(input.reshape(1) if flat else input, source, d, index, reduce)
    return out.reshape(()) if flat else out


def _is_number(value):
    return isinstance(value, (int, float, bool, np.number, np.bool_))


@op(inplace="scatter_")
def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """A copy of ``input`` with ``src[i][j]`` written at ``[index[i][j]][j]`` (``dim=0``; along
    ``dim`` in general), or the number ``value`` written at every place ``index`` names.
    ``reduce="add"``/``"multiply"`` combines with the element there instead of replacing it
    (PyTorch has no derivative with ``reduce``; minitorch has one for ``"add"``)."""
    if src is not None and value is not None:
        raise TypeError("scatter: give src or value, not both")
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter: missing src (a Tensor) or value (a number)")
    if not isinstance(src, Tensor) and not _is_number(src):
        raise TypeError(f"scatter: src must be a Tensor or value a number, got "
                        f"{type(src).__name__}")
    return _scatter("scatter", input, dim, index, src, reduce)


@op(inplace="scatter_add_")
def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src[i][j]`` added at ``[index[i][j]][j]`` (``dim=0``; along
    ``dim`` in general); repeated indices add up."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add: src must be a Tensor, got {type(src).__name__}")
    return _scatter("scatter_add", input, dim, index, src, "add")


def _check_vector_index(name, index, size, dim, allow_negative, errors, int32_ok=False):
    """``index``: a 0-d or 1-d int64 (or, with ``int32_ok``, int32) tensor of positions in a dim
    of ``size``; its 1-d array. ``errors``: the exception types PyTorch raises for a wrong
    dtype, a wrong ndim and an index out of range (they differ from op to op)."""
    dtype_error, ndim_error, range_error = errors
    if not isinstance(index, Tensor):
        raise TypeError(f"{name}: index must be a Tensor, got {type(index).__name__}")
    if index.dtype.name != "int64" and not (int32_ok and index.dtype.name == "int32"):
        raise dtype_error(f"{name}: expected dtype int64{' (or int32)' if int32_ok else ''} "
                          f"for index, got {index.dtype}")
    if index.ndim > 1:
        raise ndim_error(f"{name}: index must be a vector (0-d or 1-d), got shape "
                         f"{tuple(index.shape)}")
    positions = index._data.reshape(-1)
    low = -size if allow_negative else 0
    if positions.size and (positions.min() < low or positions.max() >= size):
        bad = positions.min() if positions.min() < low else positions.max()
        raise range_error(f"{name}: index {bad} is out of bounds for dim {dim} with size {size}")
    return positions


@op(inplace="index_fill_")
def index_fill(input, dim, index, value):
    """A copy of ``input`` with every slice ``index`` names along ``dim`` set to ``value`` (a
    number, or a 0-d tensor that gets the gradient of the elements it filled)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"index_fill: input must be a Tensor, got {type(input).__name__}")
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    positions = _check_vector_index("index_fill", index, size, d, allow_negative=True,
                                    errors=(IndexError, RuntimeError, IndexError))
    if isinstance(value, Tensor) and value.ndim != 0:
        raise RuntimeError(f"index_fill: only a 0-d value tensor is supported, got shape "
                           f"{tuple(value.shape)}")
    if not isinstance(value, Tensor) and not _is_number(value):
        raise TypeError(f"index_fill: value must be a number or a 0-d Tensor, got "
                        f"{type(value).__name__}")
    hit = np.zeros_like(input._data, dtype=bool, shape=size)
    hit[positions] = True
    mask_shape = [1] * input.ndim
    if input.ndim:
        mask_shape[d] = size
    from .elementwise import masked_fill
    return masked_fill(input, _make(hit.reshape(mask_shape)), value)


@op(inplace="index_add_")
def index_add(input, dim, index, source, *, alpha=1):
    """A copy of ``input`` with ``alpha * source[..., i, ...]`` added to the slice
    ``index[i]`` along ``dim``; repeated indices add up."""
    for name, value in (("input", input), ("source", source)):
        if not isinstance(value, Tensor):
            raise TypeError(f"index_add: {name} must be a Tensor, got {type(value).__name__}")
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d] if input.ndim else 1
    positions = _check_vector_index("index_add", index, size, d, allow_negative=False,
                                    errors=(RuntimeError, IndexError, RuntimeError),
                                    int32_ok=True)
    if source.dtype is not input.dtype:
        raise RuntimeError(f"index_add: input ({input.dtype}) and source ({source.dtype}) must "
                           "have the same dtype")
    in_shape, src_shape = tuple(input.shape) or (1,), tuple(source.shape) or (1,)
    if len(src_shape) != len(in_shape) or any(
            n != m for k, (n, m) in enumerate(zip(src_shape, in_shape)) if k != d):
        raise RuntimeError(f"index_add: source shape {tuple(source.shape)} must match the input "
                           f"shape {tuple(input.shape)} except in dim {d}")
    if positions.size != src_shape[d]:
        raise RuntimeError(f"index_add: the number of indices ({positions.size}) must equal "
                           f"source.size({d}) ({src_shape[d]})")
    if alpha != 1:
        if not input.dtype.is_floating_point:
            alpha = int(alpha)  # PyTorch casts alpha to the integer dtype first
        source = (source * alpha).to(input.dtype)
    where = positions if d == 0 else (slice(None),) * d + (positions,)
    added = IndexAdd.apply(source.reshape(src_shape), in_shape, where, index_tensors=(index,))
    return input + added.reshape(tuple(input.shape))
