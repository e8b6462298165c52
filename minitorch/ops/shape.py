"""Shape ops: reshape/view, permute/transpose, expand, cat, indexing, gather, index_select.

Wherever numpy can, the result is a view that shares memory with the input (``reshape`` of a
contiguous tensor, ``transpose``, ``expand``, basic slicing), exactly as in PyTorch; views share
the version counter of their base, so an in-place change through either is seen by autograd.
Indexing with integer arrays or masks copies, and its backward scatter-adds, so an index that
repeats accumulates its gradient. Index tensors are saved for backward like any input (their
arrays are their memory): changing one in place after forward makes backward raise.
"""
import math
import operator

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import array_module, as_array, is_gpu_array, on_device_of, to_host
from ..autograd.function import Function
from ..dtype import dtype as dtype_class
from ..tensor import Tensor
from ._helpers import normalize_dim, promote_types
from .registry import apply_inplace, op, tensor_method

_make = Tensor._make
_view = Tensor._make_view


def _shape_arg(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    for n in shape:
        if type(n) is not int:  # plain ints (the usual case) need no checks or conversion
            break
    else:
        return shape
    for n in shape:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"shape: expected ints, got {shape!r}")
    return tuple(int(n) for n in shape)


def _infer(shape, numel, name):
    """Resolve one -1 in ``shape``; ValueError naming both shapes when sizes do not match."""
    if -1 not in shape and math.prod(shape) == numel and min(shape, default=0) >= 0:
        return shape  # the common case, a valid shape in full, checked cheaply
    if list(shape).count(-1) > 1:
        raise ValueError(f"{name}: only one dimension can be -1, got {shape}")
    known = math.prod([n for n in shape if n != -1])
    if -1 in shape:
        if known == 0 or numel % known:
            raise ValueError(f"{name}: shape {shape} is invalid for input of size {numel}")
        shape = tuple(numel // known if n == -1 else n for n in shape)
    if math.prod(shape) != numel or any(n < 0 for n in shape):
        raise ValueError(f"{name}: shape {shape} is invalid for input of size {numel}")
    return shape


class Reshape(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a._data.shape
        out = a._data.reshape(shape)
        if tapes.recording() is not None and not np.may_share_memory(out, a._data):
            tapes.replayed(np.copyto, out.reshape(ctx.shape), a._data)  # numpy copied it
        return _view(out, a)

    @staticmethod
    def backward(ctx, grad):
        return Reshape.apply(grad, ctx.shape), None  # (the shape is known valid: no checks)


class Permute(Function):
    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return _view(a._data.transpose(dims), a)

    @staticmethod
    def backward(ctx, grad):
        inverse = tuple(sorted(range(len(ctx.dims)), key=ctx.dims.__getitem__))
        return Permute.apply(grad, inverse), None  # (a valid permutation: no checks)


class Expand(Function):
    @staticmethod
    def forward(ctx, a, shape):
        ctx.shape = a.shape
        return _view(np.broadcast_to(a._data, shape), a)

    @staticmethod
    def backward(ctx, grad):
        from ._helpers import unbroadcast
        return unbroadcast(grad, ctx.shape), None


class Copy(Function):
    """A fresh C-contiguous copy (``clone``/``contiguous``); the gradient passes unchanged."""

    @staticmethod
    def forward(ctx, a):
        return _make(backends.current().copy(a._data))

    @staticmethod
    def backward(ctx, grad):
        return grad


class Cat(Function):
    """The tensors joined along ``dim``; its backward hands each its slice of the gradient, a
    view, which a leaf keeps as its .grad where contiguous (joined along dim 0), as PyTorch's
    does."""

    backward_gives_slices = True

    @staticmethod
    def forward(ctx, *tensors, dim):
        ctx.dim = dim
        ctx.sizes = [t._data.shape[dim] for t in tensors]
        return _make(backends.current().concatenate([t._data for t in tensors], dim))

    @staticmethod
    def backward(ctx, grad):
        return tuple(grad.split(ctx.sizes, dim=ctx.dim))


class GetItem(Function):
    """``a[index]``, ``index`` in numpy's terms; ``index_tensors``: the Tensors it was made of."""

    @staticmethod
    def forward(ctx, a, index, index_tensors=()):
        ctx.shape, ctx.index = a._data.shape, index
        _save_index(ctx, index_tensors)
        if _is_basic(index):
            # A trailing Ellipsis makes numpy return a 0-d view instead of a scalar copy.
            items = index if isinstance(index, tuple) else (index,)
            if not any(i is Ellipsis for i in items):
                items = items + (Ellipsis,)
            return _view(a._data[items], a)
        return _make(as_array(tapes.evaluated(operator.getitem, a._data, index), a._data))

    @staticmethod
    def backward(ctx, grad):
        return IndexAdd.apply(grad, ctx.shape, ctx.index, index_tensors=_saved_index(ctx)), None


class IndexAdd(Function):
    """zeros(shape) with ``grad`` added at ``index`` (repeats accumulate): GetItem's adjoint."""

    @staticmethod
    def forward(ctx, grad, shape, index, index_tensors=()):
        ctx.index = index
        _save_index(ctx, index_tensors)
        if _is_row_index(index, shape) and grad._data.dtype.kind == "f":
            return _make(_add_rows(grad._data, index, shape))
        out = array_module(grad._data).empty(shape, dtype=grad._data.dtype)
        tapes.record(_scatter_into, out, index, grad._data)  # (a captured step's replay: again)
        return _make(out)

    @staticmethod
    def backward(ctx, grad):
        return GetItem.apply(grad, ctx.index, index_tensors=_saved_index(ctx)), None, None


def _scatter_into(out, index, grad):
    """``out`` zeroed, then ``grad`` added at ``index`` (IndexAdd's numpy paths)."""
    out.fill(0)
    if _is_basic(index):
        out[index] = grad
    elif _is_row_index(index, out.shape):
        np.add.at(out, index.reshape(-1) % out.shape[0], grad.reshape(index.size, *out.shape[1:]))
    else:
        np.add.at(out, index, grad)


def _save_index(ctx, index_tensors):
    """Save the index's Tensors: their numpy arrays in ``ctx.index`` share their memory, so
    ``saved_tensors`` must check that no in-place change moved the index since forward (a
    basic index, ints and slices, saves nothing and may be back-propagated twice)."""
    ctx.has_index_tensors = bool(index_tensors)
    if index_tensors:
        ctx.save_for_backward(*index_tensors)


def _saved_index(ctx):
    """The index Tensors saved by ``_save_index``, checked against in-place changes."""
    return ctx.saved_tensors if ctx.has_index_tensors else ()


class Gather(Function):
    """``a``'s elements along ``dim`` at ``index`` (a.shape but along dim, an index below 0
    counting from the end): the backend's ``gather_forward``, which checks every index."""

    @staticmethod
    def forward(ctx, a, dim, index):
        ctx.size, ctx.dim = a.shape[dim], dim
        ctx.save_for_backward(index)
        return _make(backends.current().gather_forward(a._data, dim, index._data))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return ScatterAdd.apply(grad, ctx.size, ctx.dim, index), None, None


class ScatterAdd(Function):
    """zeros of ``src``'s shape but ``size`` along ``dim``, with ``src`` added at ``index``
    (repeats accumulate): Gather's adjoint."""

    @staticmethod
    def forward(ctx, src, size, dim, index):
        ctx.dim = dim
        ctx.save_for_backward(index)
        return _make(backends.current().gather_backward(src._data, dim, index._data, size))

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        return Gather.apply(grad, ctx.dim, index), None, None, None


def _is_row_index(index, shape):
    return ((type(index) is np.ndarray or is_gpu_array(index)) and index.dtype.kind == "i"
            and index.size > 0 and len(shape) > 0)


def _add_rows(values, rows, shape):
    """zeros(shape) with the rows of ``values`` added at the rows of dim 0 that the int array
    ``rows`` picks (repeats add up): the backend's ``index_add_rows`` (np.add.at is an
    unbuffered element-by-element loop, tens of times slower)."""
    xp, flat = array_module(rows), tapes.reshaped(rows, (-1,))
    rows = xp.empty(flat.shape, np.int64)
    # negative rows: the same row as their positive twin (recorded: new ids on each replay)
    tapes.record(xp.remainder, flat, shape[0], rows)
    values = tapes.reshaped(values, (rows.size, *shape[1:]))  # (a strided gradient: a copy)
    return backends.current().index_add_rows(values, rows, shape[0])


def _along_axis(index, dim):
    """The full fancy index that addresses ``out[..., index[...], ...]`` along ``dim``."""
    xp = array_module(index)  # the grids live where the index does
    grids = [xp.arange(n).reshape((1,) * k + (n,) + (1,) * (index.ndim - k - 1))
             for k, n in enumerate(index.shape)]
    grids[dim] = index
    return tuple(grids)


def _is_basic(index):
    items = index if isinstance(index, tuple) else (index,)
    for i in items:  # a loop with the common types first: this runs for every x[...]
        if type(i) not in _BASIC_TYPES and not isinstance(i, (int, np.integer)):
            return False
    return True


_BASIC_TYPES = frozenset([slice, int, type(None), type(Ellipsis)])


# ----------------------------------------------------------------------------- functions

@op()
def reshape(input, *shape):
    shape = _infer(_shape_arg(shape), input._data.size, "reshape")
    if shape == input._data.shape:
        return Reshape.apply(input, shape) if input.requires_grad else _view(input._data, input)
    return Reshape.apply(input, shape)


@tensor_method("reshape_as")
def reshape_as(self, other):
    return reshape(self, *other.shape)


@op(function=False)
def view(input, *shape, size=None, dtype=None):
    """Like reshape, but never copies: RuntimeError when the strides do not allow a view.
    ``view(dtype)`` reads the same bytes as another dtype (no gradient), as PyTorch's."""
    if size is not None or dtype is not None:
        shape = shape or (size if dtype is None else dtype,)
    if len(shape) == 1 and isinstance(shape[0], dtype_class):
        return _view_as_dtype(input, shape[0])
    shape = _infer(_shape_arg(shape), input.numel(), "view")
    if not _viewable(input._data, shape):
        raise RuntimeError(f"view: shape {shape} is incompatible with the input's size and "
                           f"strides (shape {tuple(input.shape)}); use .reshape(...) "
                           "instead")
    return Reshape.apply(input, shape)


def _viewable(data, shape):
    """Whether data's strides let it be seen in `shape` without a copy: numpy's reshape copies
    where they do not (NumPy 2.5 deprecates setting .shape, which raised instead); a GPU
    array's .shape, set on a view of it, still raises."""
    if isinstance(data, np.ndarray):  # (a C-contiguous array views in any shape: asked first)
        return (data.flags.c_contiguous or data.size == 0
                or np.may_share_memory(data.reshape(shape), data))
    probe = data.view()
    try:
        probe.shape = shape
    except AttributeError:
        return False
    return True


def _view_as_dtype(input, dtype):
    if input.ndim == 0 and dtype.numpy.itemsize != input._data.itemsize:
        raise RuntimeError("view: a 0-d tensor can only be viewed as a dtype of the same size")
    try:
        array = input._data.view(dtype.numpy)
    except ValueError as error:
        raise RuntimeError(f"view: cannot view {input.dtype} of shape {tuple(input.shape)} as "
                           f"{dtype}: {error}") from None
    return Tensor._make_view(array, input)


@tensor_method("view_as")
def view_as(self, other):
    return view(self, *other.shape)


@op()
def permute(input, *dims):
    dims = _shape_arg(dims)
    ndim = input._data.ndim
    if len(dims) != ndim:
        raise ValueError(f"permute: expected {ndim} dims for a tensor of shape "
                         f"{tuple(input.shape)}, got {dims}")
    dims = tuple([_plain_dim(d, ndim, "dims") for d in dims])
    if len(set(dims)) != ndim:  # each in range now: distinct means a permutation
        raise ValueError(f"permute: dims {dims} is not a permutation of {ndim} dims")
    return Permute.apply(input, dims)


@op(aliases="swapdims")
def transpose(input, dim0, dim1):
    ndim = input._data.ndim
    if ndim < 2 and dim0 in (0, -1) and dim1 in (0, -1):
        return Reshape.apply(input, input._data.shape)
    dims = list(range(ndim))
    i, j = _plain_dim(dim0, ndim, "dim0"), _plain_dim(dim1, ndim, "dim1")
    dims[i], dims[j] = dims[j], dims[i]
    return Permute.apply(input, tuple(dims))


def _plain_dim(dim, ndim, name):
    """normalize_dim, with the common case (a Python int in range) checked first."""
    if type(dim) is int and -ndim <= dim < ndim:
        return dim % ndim
    return normalize_dim(dim, ndim, name)


@op()
def t(input):
    if input.ndim > 2:
        raise ValueError(f"t: expects a tensor with <= 2 dims, got shape {tuple(input.shape)}")
    return transpose(input, 0, -1) if input.ndim == 2 else input.view(tuple(input.shape))


@op(function=False)
def expand(input, *shape):
    shape = _shape_arg(shape)
    if len(shape) < input.ndim:
        raise ValueError(f"expand: the number of sizes ({len(shape)}) must be >= the tensor's "
                         f"dims ({input.ndim}); shape {tuple(input.shape)}")
    lead = len(shape) - input.ndim
    full = tuple(input.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(shape))
    for i, n in enumerate(input.shape):
        if n != 1 and n != full[lead + i]:
            raise ValueError(f"expand: size {n} of dim {i} of shape {tuple(input.shape)} must "
                             f"match size {full[lead + i]} of target {full} (or be 1)")
    return Expand.apply(input, full)


@tensor_method("expand_as")
def expand_as(self, other):
    return expand(self, *other.shape)


@op()
def broadcast_to(input, shape):
    return expand(input, *shape)


@op()
def unsqueeze(input, dim):
    d = _plain_dim(dim, input._data.ndim + 1, "dim")
    shape = list(input._data.shape)
    shape.insert(d, 1)
    return Reshape.apply(input, tuple(shape))


@op()
def squeeze(input, dim=None):
    if dim is None:
        shape = tuple(n for n in input.shape if n != 1)
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {normalize_dim(d, input.ndim) for d in dims}
        shape = tuple(n for i, n in enumerate(input.shape) if not (i in dims and n == 1))
    return Reshape.apply(input, shape)


@op()
def flatten(input, start_dim=0, end_dim=-1):
    if input.ndim == 0:
        return Reshape.apply(input, (1,))
    s, e = normalize_dim(start_dim, input.ndim), normalize_dim(end_dim, input.ndim)
    if s > e:
        raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
    shape = tuple(input.shape[:s]) + (int(np.prod(input.shape[s:e + 1])),) \
        + tuple(input.shape[e + 1:])
    return Reshape.apply(input, shape)


@op()
def unflatten(input, dim, sizes):
    d = normalize_dim(dim, input.ndim)
    sizes = _infer(tuple(sizes), input.shape[d], "unflatten")
    return Reshape.apply(input, tuple(input.shape[:d]) + sizes + tuple(input.shape[d + 1:]))


@op(function=False)
def contiguous(input):
    return input if input._data.flags["C_CONTIGUOUS"] else Copy.apply(input)


@op()
def clone(input):
    return Copy.apply(input)


@tensor_method("copy_")
def copy_(self, other, non_blocking=False):
    """Write ``other`` (broadcast to self's shape, cast to its dtype) into self; differentiable
    with respect to ``other``. (PyTorch's documentation calls it ``src``, its parser
    ``other``; ``non_blocking`` means nothing on the CPU.)"""
    src = other if isinstance(other, Tensor) else Tensor(other)
    return apply_inplace(self, lambda s: expand(s * 0 + src.to(self.dtype), *self.shape))


def _promoted(tensors, name):
    """The list ``tensors`` (non-empty), each cast to the dtype they promote to."""
    if not tensors:
        raise ValueError(f"{name}: expected a non-empty list of tensors")
    dtype = tensors[0].dtype
    for t_ in tensors:
        if t_.dtype is not dtype:
            break
    else:
        return tensors
    for t_ in tensors[1:]:
        dtype = promote_types(dtype, t_.dtype)
    return [t_ if t_.dtype is dtype else t_.to(dtype) for t_ in tensors]


@op(method=False)
def cat(tensors, dim=0):
    tensors = _promoted(list(tensors), "cat")
    # PyTorch lets 1-d empty tensors join anything: skip them
    tensors = [t_ for t_ in tensors if t_._data.shape != (0,)] or tensors[:1]
    ref = tensors[0]
    d = normalize_dim(dim, ref.ndim)
    shape = ref._data.shape
    for i, t_ in enumerate(tensors):
        other = t_._data.shape
        if len(other) != len(shape) or other[:d] != shape[:d] or other[d + 1:] != shape[d + 1:]:
            raise ValueError(f"cat: tensors[{i}] has shape {other}, expected {shape} except in "
                             f"dim {d}")
    return Cat.apply(*tensors, dim=d)


@op(method=False)
def stack(tensors, dim=0):
    tensors = list(tensors)
    shape = tensors[0]._data.shape if tensors else None
    for i, t_ in enumerate(tensors):
        if t_._data.shape != shape:
            raise ValueError(f"stack: tensors[{i}] has shape {t_._data.shape}, expected {shape} "
                             "(all equal)")
    tensors = _promoted(tensors, "stack")
    return Stack.apply(*tensors, dim=normalize_dim(dim, len(shape) + 1))


class Stack(Function):
    """The tensors along a new dim, in one node (not an unsqueeze per tensor and a cat): its
    backward unbinds the gradient into views, in one node too, which leaves keep as their
    .grad where contiguous (stacked along dim 0), as PyTorch's do."""

    backward_gives_slices = True

    @staticmethod
    def forward(ctx, *tensors, dim):
        ctx.dim = dim
        new_dim = (slice(None),) * dim + (None,)
        return _make(backends.current().concatenate([t_._data[new_dim] for t_ in tensors], dim))

    @staticmethod
    def backward(ctx, grad):
        return Unbind.apply(grad, ctx.dim)


@op()
def narrow(input, dim, start, length):
    """Elements ``start .. start + length - 1`` of dim ``dim``, as a view. PyTorch's checks, in
    its order: ``length >= 0``, ``start`` in [-size, size] (negative counts from the end) and
    ``start + length <= size``, where a slice would quietly return fewer elements."""
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    start, length = _index_argument(start, "start"), _index_argument(length, "length")
    if length < 0:
        raise RuntimeError(f"narrow: length must be non-negative, got {length}")
    if not -size <= start <= size:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-size}, "
                         f"{size}], but got {start})")
    start += size if start < 0 else 0
    if start + length > size:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size "
                           f"({size}) of dim {d}")
    return getitem(input, (slice(None),) * d + (slice(start, start + length),))


def _index_argument(value, name):
    """An int argument (numpy integers and one-element int tensors too; not bool or float)."""
    if not isinstance(value, bool):
        try:
            return operator.index(value)
        except TypeError:
            pass
    raise TypeError(f"narrow: {name} must be an int, got {value!r} of type "
                    f"{type(value).__name__}")


@op()
def swapaxes(input, axis0, axis1):
    """``transpose`` under numpy's name and argument names."""
    return transpose(input, axis0, axis1)


@op(method=False)
def split(tensor, split_size_or_sections, dim=0):
    d = normalize_dim(dim, tensor.ndim)
    n = tensor.shape[d]
    if isinstance(split_size_or_sections, (int, np.integer)):
        size = int(split_size_or_sections)
        if size <= 0:
            raise ValueError(f"split: split_size must be positive, got {size}")
        sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise ValueError(f"split: sections {sizes} must sum to the size of dim {d} ({n})")
    out, start = [], 0
    for size in sizes:
        out.append(narrow(tensor, d, start, size))
        start += size
    return tuple(out)


@tensor_method("split")
def split_method(self, split_size, dim=0):
    """``Tensor.split``: PyTorch names its argument ``split_size`` here (sizes or one size)."""
    return split(self, split_size, dim)


@op()
def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    n = input.shape[normalize_dim(dim, input.ndim)]
    return split(input, max(-(-n // chunks), 1), dim)


class Unbind(Function):
    """The slices along ``dim`` as views, in one node: its backward stacks their gradients
    (instead of one zero-filled scatter per slice, summed)."""

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        return tuple(_view(a._data[(slice(None),) * dim + (i, Ellipsis)], a)
                     for i in range(a.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.dim), None


@op()
def unbind(input, dim=0):
    d = normalize_dim(dim, input.ndim)
    if input.shape[d] == 0:
        return ()
    return Unbind.apply(input, d)


def _is_plain_basic(index):
    """Whether ``index`` is made of Python ints (not bools), slices, None and Ellipsis only:
    then it needs no conversion and selects a view (numpy checks its range)."""
    if type(index) is tuple:
        for i in index:
            if type(i) not in _BASIC_TYPES:
                return False
        return True
    return type(index) in _BASIC_TYPES


def _convert_index(index, like=None):
    """A user's index in numpy's terms, and the Tensors it holds (for ``_save_index``).

    A 0-d int64 Tensor counts as an int, as in PyTorch (``x[t]`` is a view, nothing saved);
    other Tensors become their arrays. Ranges are checked by the caller. Index arrays from the
    host (lists, numpy arrays, CPU tensors) go to the device of ``like``, the indexed array, as
    PyTorch lets CPU indices index a CUDA tensor."""
    items = index if isinstance(index, tuple) else (index,)
    converted, tensors = [], []
    for item in items:
        if isinstance(item, Tensor):
            if item.dtype.name not in ("int64", "bool", "int32", "uint8"):
                raise IndexError(f"index: tensors used as indices must be int64 or bool (or "
                                 f"int32; uint8 as a mask), got {item.dtype}")
            if item.dtype.name == "uint8":  # a mask, as PyTorch's (deprecated) byte indexing
                item = Tensor._make(item._data.astype(bool))
            if item.ndim == 0 and item.dtype.name in ("int64", "int32"):
                item = int(item._data)
            else:
                tensors.append(item)
                item = item._data
        elif isinstance(item, (list,)):
            item = np.asarray(item)
            if item.size == 0:
                item = item.astype(np.int64)
        elif isinstance(item, bool):
            item = np.asarray(item)
        converted.append(item)
    if like is not None and is_gpu_array(like):
        converted = [on_device_of(item, like) if isinstance(item, np.ndarray) else item
                     for item in converted]
    converted = tuple(converted) if isinstance(index, tuple) or len(converted) != 1 \
        else converted[0]
    return converted, tuple(tensors)


def _on_host(index):
    """The index with its GPU arrays copied to the host, for the range check (a GPU library
    may wrap an index that is out of range rather than raise)."""
    if isinstance(index, tuple):
        return tuple(to_host(i) if is_gpu_array(i) else i for i in index)
    return to_host(index) if is_gpu_array(index) else index


@op(function=False, method=False, methods="__getitem__")
def getitem(input, index):
    if _is_plain_basic(index):  # ints, slices, None, ...: a view, numpy checks the index
        try:
            return GetItem.apply(input, index)
        except IndexError as error:
            raise IndexError(f"index {index!r} is out of range for a tensor of shape "
                             f"{tuple(input.shape)}: {error}") from None
    index, index_tensors = _convert_index(index, input._data)
    # Index a zero-strided stand-in of the same shape first: numpy checks every index for
    # range and shape there, at no memory cost, and we can name the tensor's shape in the error.
    stand_in = np.lib.stride_tricks.as_strided(np.zeros((), np.int8), input.shape,
                                               (0,) * input.ndim)
    try:
        stand_in[_on_host(index)]
    except IndexError as error:
        raise IndexError(f"index {index!r} is out of range for a tensor of shape "
                         f"{tuple(input.shape)}: {error}") from None
    return GetItem.apply(input, index, index_tensors=index_tensors)


@op()
def gather(input, dim, index):
    """``out[i][j][k] = input[i][index[i][j][k]][k]`` for ``dim=1`` (along ``dim`` in general);
    ``index`` (int64 or int32) may be smaller than ``input`` in the other dims. Out-of-range
    indices raise IndexError; unlike PyTorch, which rejects them, an index below 0 counts from
    the end."""
    if input.ndim == 0 and isinstance(index, Tensor) and index.ndim == 0:  # one element
        return gather(input.reshape(1), dim, index.reshape(1)).reshape(())
    d = normalize_dim(dim, input.ndim)
    if not isinstance(index, Tensor) or index.dtype.name not in ("int64", "int32"):
        raise TypeError("gather: index must be an int64 (or int32) tensor")
    if index.dtype.name == "int32":  # the kernels take int64, as PyTorch converts too
        index = index.long()
    if index.ndim != input.ndim:
        raise ValueError(f"gather: index has {index.ndim} dims but input has {input.ndim} "
                         f"(shapes {tuple(index.shape)} and {tuple(input.shape)})")
    for k in range(input.ndim):
        if k != d and index.shape[k] > input.shape[k]:
            raise ValueError(f"gather: index shape {tuple(index.shape)} exceeds input shape "
                             f"{tuple(input.shape)} in dim {k}")
    if any(index.shape[k] != input.shape[k] for k in range(input.ndim) if k != d):
        input = getitem(input, tuple(slice(0, index.shape[k]) if k != d else slice(None)
                             for k in range(input.ndim)))
    return Gather.apply(input, d, index)


@op()
def index_select(input, dim, index):
    d = normalize_dim(dim, input.ndim)
    if not isinstance(index, Tensor) or index.dtype.name not in ("int64", "int32") or \
            index.ndim > 1:
        raise TypeError("index_select: index must be a 0-d or 1-d int64 (or int32) tensor")
    idx = index._data.reshape(-1)
    if idx.size and (idx.min() < -input.shape[d] or idx.max() >= input.shape[d]):
        raise IndexError(f"index_select: index out of range for dim {d} of size {input.shape[d]} "
                         f"(min {idx.min()}, max {idx.max()})")
    return GetItem.apply(input, (slice(None),) * d + (idx,), index_tensors=(index,))


@op()
def flip(input, dims):
    dims = dims if isinstance(dims, (tuple, list)) else (dims,)
    index = [slice(None)] * input.ndim
    for d in dims:
        index[normalize_dim(d, input.ndim)] = slice(None, None, -1)
    return GetItem.apply(input, tuple(index))


@op(function=False)
def repeat(input, *sizes):
    sizes = _shape_arg(sizes)
    if len(sizes) < input.ndim:
        raise ValueError(f"repeat: got {len(sizes)} sizes for a tensor with {input.ndim} dims")
    input = input.reshape((1,) * (len(sizes) - input.ndim) + tuple(input.shape))
    interleaved = []
    for n, r in zip(input.shape, sizes):
        interleaved += [r, n]
    expanded = input.reshape([x for n in input.shape for x in (1, n)]).expand(*interleaved)
    return expanded.reshape(tuple(n * r for n, r in zip(input.shape, sizes)))


class KeepTriangle(Function):
    """The lower (or, with ``upper``, the upper) triangle of the input's last two dims from
    ``diagonal`` on, 0 elsewhere: the backend's ``keep_triangle``, which writes the output in
    one pass and reads only the kept part; linear, so its backward is itself on the
    gradient."""

    @staticmethod
    def forward(ctx, a, diagonal, upper):
        ctx.diagonal, ctx.upper = diagonal, upper
        return _make(backends.current().keep_triangle(a._data, diagonal, upper))

    @staticmethod
    def backward(ctx, grad):
        return KeepTriangle.apply(grad, ctx.diagonal, ctx.upper), None, None


def _check_matrices(input, name):
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions, got "
                           f"{input.ndim}")


@op()
def tril(input, diagonal=0):
    _check_matrices(input, "tril")
    return KeepTriangle.apply(input, _diagonal(diagonal, "tril"), False)


@op()
def triu(input, diagonal=0):
    _check_matrices(input, "triu")
    return KeepTriangle.apply(input, _diagonal(diagonal, "triu"), True)


def _diagonal(diagonal, name):
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"{name}: diagonal must be an int, got {type(diagonal).__name__}")
    return int(diagonal)
