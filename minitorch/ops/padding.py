"""``F.pad``: padding (or, with negative amounts, cropping) the trailing dims of a tensor, as
``torch.nn.functional.pad``, in its four modes:

- ``constant``: ``value`` (default 0) around the input, any number of dims;
- ``reflect``: the input mirrored at its edges, edge excluded (``[1 0 | 0 1 2 | 2 1]`` is not
  it: ``[2 1 | 0 1 2 | 1 0]`` is);
- ``replicate``: the edge element repeated;
- ``circular``: the input wrapped around, as on a torus (after cropping, where an amount is
  negative, as PyTorch).

``pad`` lists (left, right) amounts from the last dim backwards: ``(1, 2)`` pads the last dim,
``(1, 2, 0, 3)`` the last two. It is a composite of differentiable ops, so gradients (and
gradients of gradients) come from them: constant padding is ``narrow`` (cropping) and ``cat``
with constant blocks; the other modes are one ``index_select`` per padded dim, with the index
of the input element each output position copies, so the backward adds the gradient of every
copy back to its source.
May import: ``minitorch.tensor``, the other op families.
"""
import operator

import numpy as np

from ..device_arrays import on_device_of
from ..tensor import Tensor
from .registry import op
from .shape import cat

MODES = ("constant", "reflect", "replicate", "circular")


def _pad_amounts(pad, ndim):
    """[(dim, left, right)] from PyTorch's flat list, which starts at the last dim."""
    if isinstance(pad, Tensor) or not hasattr(pad, "__len__"):
        raise TypeError(f"pad: pad must be a tuple of ints, got {type(pad).__name__}")
    amounts = []
    for i, amount in enumerate(pad):
        if isinstance(amount, (bool, float)):
            raise TypeError(f"pad: pad must be a tuple of ints, but found element of type "
                            f"{type(amount).__name__} at pos {i}")
        try:
            amounts.append(operator.index(amount))
        except TypeError:
            raise TypeError(f"pad: pad must be a tuple of ints, but found element of type "
                            f"{type(amount).__name__} at pos {i}") from None
    if len(amounts) % 2:
        raise RuntimeError(f"pad: padding length must be divisible by 2, got {len(amounts)}")
    if len(amounts) // 2 > ndim:
        raise RuntimeError(f"pad: padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(amounts)} and input "
                           f"of dimension {ndim}")
    return [(ndim - 1 - i, amounts[2 * i], amounts[2 * i + 1]) for i in range(len(amounts) // 2)]


def _source_index(size, left, right, mode):
    """For each output position along a dim, the input position it copies."""
    if mode == "circular":  # PyTorch crops first, then wraps around what is left
        start = max(-left, 0)
        kept = size - start - max(-right, 0)
        return start + np.mod(np.arange(-max(left, 0), kept + max(right, 0)), kept)
    position = np.arange(-left, size + right)
    if mode == "reflect":
        position = np.abs(position)                                  # before the start
        return np.where(position >= size, 2 * (size - 1) - position, position)  # past the end
    return np.clip(position, 0, size - 1)                            # replicate


def _check_non_constant(input, amounts, mode, value):
    if value is not None and value != 0:
        raise RuntimeError(f'pad: padding mode "{mode}" doesn\'t take in value argument')
    padded = len(amounts)
    if input.ndim not in (padded + 1, padded + 2):
        raise NotImplementedError(
            f"pad: padding size {2 * padded} is not supported for {input.ndim}D input tensor in "
            f"mode {mode!r}: it pads the last 1, 2 or 3 dims of a (batch, channels, ...) or "
            f"(channels, ...) input, so it needs {padded + 1} or {padded + 2} dims")
    for dim, left, right in amounts:
        size = input.shape[dim]
        if size == 0:
            raise RuntimeError(f"pad: mode {mode!r} cannot pad dim {dim} of size 0 (input shape "
                               f"{tuple(input.shape)})")
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(f"pad: padding size should be less than the corresponding input "
                               f"dimension in reflect mode, but got padding ({left}, {right}) "
                               f"at dimension {dim} of input {list(input.shape)}")
        kept = size - max(-left, 0) - max(-right, 0)  # circular wraps around what is kept
        if mode == "circular" and (left > kept or right > kept):
            raise RuntimeError(f"pad: padding ({left}, {right}) at dimension {dim} of size "
                               f"{size} causes wrapping around more than once")


@op(function=False, method=False, functional=True)
def pad(input, pad, mode="constant", value=None):
    """``input`` padded by ``pad`` = (left, right) per dim from the last backwards, in ``mode``
    ("constant" with ``value``, "reflect", "replicate" or "circular"); negative amounts crop.

    As PyTorch: constant padding works on any dims; the other modes pad the last 1, 2 or 3
    dims of an input with one or two more dims (channels, and optionally batch), reflect
    needs each amount below the dim's size, circular at most the dim's size.
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"pad: input must be a minitorch Tensor, got {type(input).__name__}")
    amounts = _pad_amounts(pad, input.ndim)
    if mode not in MODES:
        raise NotImplementedError(f"pad: unrecognised padding mode {mode!r} (expected one of "
                                  f"{', '.join(MODES)})")
    for dim, left, right in amounts:
        if input.shape[dim] + left + right < 0:
            raise RuntimeError(f"pad: padding ({left}, {right}) would give dim {dim} of size "
                               f"{input.shape[dim]} a negative size")
    out = input
    if mode == "constant":
        for dim, left, right in amounts:
            out = _constant_pad_dim(out, dim, left, right, 0 if value is None else value)
    else:
        _check_non_constant(input, amounts, mode, value)
        for dim, left, right in amounts:
            if left or right:
                index = _source_index(out.shape[dim], left, right, mode)
                out = out.index_select(dim, Tensor._make(on_device_of(index.astype(np.int64),
                                                                      out._data)))
    return input.clone() if out is input else out  # a new tensor always, as PyTorch


def _constant_pad_dim(x, dim, left, right, value):
    if left < 0 or right < 0:  # crop first: what remains is then padded
        start, stop = max(-left, 0), x.shape[dim] - max(-right, 0)
        x = x.narrow(dim, start, stop - start)
        left, right = max(left, 0), max(right, 0)
    if not (left or right):
        return x
    pieces = []
    for amount in (left, None, right):
        if amount is None:
            pieces.append(x)
        elif amount:
            shape = list(x.shape)
            shape[dim] = amount
            pieces.append(Tensor._make(np.full_like(x._data, value, shape=shape)))
    return cat(pieces, dim)
