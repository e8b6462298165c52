"""Ops that lay a tensor's elements out again: ``roll``, ``repeat_interleave``, ``tile`` and
``diag`` (``narrow`` and ``repeat`` are views and expansions, in shape.py).

All copy (as in PyTorch). ``roll``'s backward rolls the gradient back; ``repeat_interleave``
picks elements with an index, whose backward adds up the gradients of the copies; ``tile`` is
``repeat`` (an expand, whose backward sums); ``diag`` moves between a vector and the diagonal
of a matrix, in both directions, each direction the other's backward.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..device_arrays import array_module, on_device_of
from ..tensor import Tensor
from ._helpers import normalize_dim
from .registry import op, tensor_method
from .shape import GetItem, repeat

_make = Tensor._make


def _is_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _check_tensor(value, name, caller):
    if not isinstance(value, Tensor):
        raise TypeError(f"{caller}: {name} must be a Tensor, got {type(value).__name__}")


class Roll(Function):
    @staticmethod
    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        return _make(np.roll(a._data, shifts, dims))

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, tuple(-s for s in ctx.shifts), ctx.dims), None, None


@op()
def roll(input, shifts, dims=None):
    """Elements shifted ``shifts`` places along ``dims`` (ints or tuples of equal length), those
    pushed off the end coming back at the start; without ``dims``, along the flattened tensor
    (then ``shifts`` is one int)."""
    _check_tensor(input, "input", "roll")
    shift_list = list(shifts) if isinstance(shifts, (tuple, list)) else [shifts]
    dim_list = [] if dims is None else list(dims) if isinstance(dims, (tuple, list)) else [dims]
    if not all(_is_int(s) for s in shift_list):
        raise TypeError(f"roll: shifts must be ints, got {shifts!r}")
    if dims is None:
        if len(shift_list) != 1:
            raise RuntimeError(f"roll: shifts and dims must align: {len(shift_list)} shifts for "
                               "the flattened tensor (dims=None) takes one")
        return roll(input.flatten(), shift_list, 0).reshape(tuple(input.shape))
    if len(shift_list) != len(dim_list) or not dim_list:
        raise RuntimeError(f"roll: shifts and dims must align, got {len(shift_list)} shifts "
                           f"and {len(dim_list)} dims")
    if input.ndim == 0:  # numpy has no axis to roll a 0-d array along
        normalize_dim(dim_list[0], 0, "dims")
        return roll(input.reshape(1), shift_list, [0] * len(dim_list)).reshape(())
    dim_list = [normalize_dim(d, input.ndim, "dims") for d in dim_list]
    kept = [(int(s), d) for s, d in zip(shift_list, dim_list) if input.shape[d]]
    return Roll.apply(input, tuple(s for s, _ in kept), tuple(d for _, d in kept))


def _repeat_counts(repeats, size, name):
    """``repeats`` (an int, or a 0-d/1-d int64 tensor of 1 or ``size`` counts) as an array of
    ``size`` non-negative counts."""
    if _is_int(repeats):
        if repeats < 0:
            raise RuntimeError(f"{name}: repeats must be non-negative, got {repeats}")
        return np.full(size, int(repeats), np.int64)
    if not isinstance(repeats, Tensor):
        raise TypeError(f"{name}: repeats must be an int or an int64 Tensor, got "
                        f"{type(repeats).__name__}")
    if repeats.dtype.name != "int64":
        raise TypeError(f"{name}: repeats must be an int64 tensor, got {repeats.dtype}")
    if repeats.ndim > 1:
        raise RuntimeError(f"{name}: repeats must be 0-d or 1-d, got shape "
                           f"{tuple(repeats.shape)}")
    counts = repeats._data.reshape(-1)
    if counts.size == 1:
        counts = np.full(size, counts[0], np.int64)
    if counts.size != size:
        raise RuntimeError(f"{name}: repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {counts.size} and input.size(dim) = {size}")
    if counts.size and counts.min() < 0:
        raise RuntimeError(f"{name}: repeats can not be negative, got {counts.min()}")
    return counts


@op(method=False)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Each element (each slice along ``dim``) repeated ``repeats`` times in a row:
    ``[1, 2]`` with 2 repeats is ``[1, 1, 2, 2]``. ``repeats``: an int or a tensor of one count
    per element; without ``dim`` the input is flattened first. ``output_size``, if given, must be
    the total length. ``repeat_interleave(counts)`` alone repeats each index ``counts[i]`` times:
    ``[0] * counts[0] + [1] * counts[1] + ...``."""
    _check_tensor(input, "input", "repeat_interleave")
    if repeats is None:  # the input is the counts
        counts = _repeat_counts(input, input.numel(), "repeat_interleave")
        picked = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        _check_output_size(output_size, picked.size)
        return _make(picked)
    if dim is None:
        input, d = input.reshape(-1), 0
    else:
        d = normalize_dim(dim, input.ndim)
        if input.ndim == 0:
            input = input.reshape(1)
    counts = _repeat_counts(repeats, input.shape[d], "repeat_interleave")
    picked = np.repeat(np.arange(input.shape[d], dtype=np.int64), counts)
    _check_output_size(output_size, picked.size)
    picked = on_device_of(picked, input._data)
    return GetItem.apply(input, picked if d == 0 else (slice(None),) * d + (picked,))


def _check_output_size(output_size, size):
    if output_size is not None and output_size != size:
        raise RuntimeError(f"repeat_interleave: output_size={output_size} does not match the "
                           f"size the repeats make ({size})")


@tensor_method("repeat_interleave")
def _repeat_interleave_method(self, repeats, dim=None, *, output_size=None):
    """``x.repeat_interleave(repeats, dim)``: as ``minitorch.repeat_interleave(x, ...)``
    (the method has no form without ``repeats``, as in PyTorch)."""
    return repeat_interleave(self, repeats, dim, output_size=output_size)


@op()
def tile(input, dims):
    """``input`` repeated ``dims[i]`` times along each dim: ``repeat`` with ``dims`` padded
    with leading 1s when it is shorter than the input's dims."""
    _check_tensor(input, "input", "tile")
    if not isinstance(dims, (tuple, list)) or not all(_is_int(n) for n in dims):
        raise TypeError(f"tile: dims must be a tuple of ints, got {dims!r}")
    dims = (1,) * (input.ndim - len(dims)) + tuple(int(n) for n in dims)
    if any(n < 0 for n in dims):
        raise RuntimeError(f"tile: dims must be non-negative, got {dims}")
    out = repeat(input, *dims)
    # repeat by all ones comes back as a view of the input; tile's result is always new memory
    return out.clone() if np.shares_memory(out._data, input._data) else out


class DiagonalOf(Function):
    """The ``diagonal``-th diagonal of a matrix, as a new vector."""

    @staticmethod
    def forward(ctx, a, diagonal):
        ctx.shape, ctx.diagonal = a.shape, diagonal
        return _make(np.diagonal(a._data, diagonal).copy())

    @staticmethod
    def backward(ctx, grad):
        return DiagonalEmbed.apply(grad, ctx.shape, ctx.diagonal), None


class DiagonalEmbed(Function):
    """A zero matrix of ``shape`` with ``v`` on its ``diagonal``-th diagonal."""

    @staticmethod
    def forward(ctx, v, shape, diagonal):
        ctx.diagonal = diagonal
        xp = array_module(v._data)
        out = xp.zeros(shape, v._data.dtype)
        steps = xp.arange(v.shape[0])
        if diagonal >= 0:
            out[steps, steps + diagonal] = v._data
        else:
            out[steps - diagonal, steps] = v._data
        return _make(out)

    @staticmethod
    def backward(ctx, grad):
        return DiagonalOf.apply(grad, ctx.diagonal), None, None


@op()
def diag(input, diagonal=0):
    """A 1-d input: the square matrix with it on the ``diagonal``-th diagonal (above the main
    one for positive, below for negative). A 2-d input: that diagonal, as a new 1-d tensor
    (empty when the diagonal lies outside the matrix)."""
    _check_tensor(input, "input", "diag")
    if not _is_int(diagonal):
        raise TypeError(f"diag: diagonal must be an int, got {type(diagonal).__name__}")
    diagonal = int(diagonal)
    if input.ndim == 1:
        n = input.shape[0] + abs(diagonal)
        return DiagonalEmbed.apply(input, (n, n), diagonal)
    if input.ndim == 2:
        return DiagonalOf.apply(input, diagonal)
    raise RuntimeError(f"diag: supports 1-d or 2-d tensors, got {input.ndim}-d (shape "
                       f"{tuple(input.shape)})")
