"""``index_put``: a copy of a tensor with values written (or added) at an index, and
``tensor[index] = value``, which is that written back into the tensor's memory.

- ``index_put(input, indices, values, accumulate=False)`` (and ``x.index_put_``): PyTorch's op,
  ``indices`` a tuple of int64/bool tensors, ``values`` a tensor of input's dtype broadcast to
  the indexed shape; ``accumulate=True`` adds instead (repeated indices add up).
- ``tensor[index] = value``: any index ``tensor[index]`` reads (ints, slices, None, Ellipsis,
  tensors, lists), any value (numbers, tensors of another dtype: cast).

Both are differentiable: the gradient of ``input`` is zero where it was overwritten (all of it
passes with ``accumulate``), and the gradient of the values is the gradient at the index,
summed back to the values' shape.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import to_tensor, unbroadcast
from .registry import apply_inplace, op, tensor_method
from .shape import _convert_index, _on_host, _save_index, _saved_index


class IndexPut(Function):
    """``index`` in numpy's terms; ``index_tensors``: the Tensors it was made of, saved."""

    @staticmethod
    def forward(ctx, a, value, index, index_tensors=(), accumulate=False):
        ctx.index, ctx.value_shape, ctx.accumulate = index, value.shape, accumulate
        _save_index(ctx, index_tensors)
        out = a._data.copy()
        if accumulate:
            np.add.at(out, index, np.broadcast_to(value._data, out[index].shape))
        else:
            out[index] = value._data
        return Tensor._make(out)

    @staticmethod
    def backward(ctx, grad):
        _saved_index(ctx)  # raises if an index tensor was changed in place since forward
        grad_a = grad_value = None
        if ctx.needs_input_grad[0]:
            if ctx.accumulate:
                grad_a = grad
            else:
                keep = np.ones_like(grad._data, dtype=bool)
                keep[ctx.index] = False
                from .elementwise import masked_fill
                grad_a = masked_fill(grad, Tensor._make(~keep), 0.0)
        if ctx.needs_input_grad[1]:
            picked = grad[ctx.index]
            grad_value = unbroadcast(picked, ctx.value_shape) if picked.ndim >= len(
                ctx.value_shape) else picked.reshape(ctx.value_shape)
        return grad_a, grad_value, None


def _put(a, index, value, index_tensors=(), accumulate=False, name="setitem"):
    """``index_put`` on an index already in numpy's terms (``_convert_index``)."""
    target_shape = np.lib.stride_tricks.as_strided(
        np.zeros((), np.int8), a.shape, (0,) * a.ndim)[_on_host(index)].shape
    try:
        np.broadcast_to(np.empty(value.shape, np.int8), target_shape)
    except ValueError:
        raise ValueError(f"{name}: value of shape {tuple(value.shape)} cannot be broadcast to "
                         f"the indexed shape {target_shape}") from None
    return IndexPut.apply(a, value, index, index_tensors=index_tensors, accumulate=accumulate)


@op(inplace="index_put_")
def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``values`` written at ``input[indices]`` (``accumulate=True``:
    added there, repeated indices adding up). ``indices``: a tuple (or list) of int64 or bool
    tensors, one per leading dim indexed; ``values``: a tensor of input's dtype that broadcasts
    to the indexed shape. As in PyTorch, ints, slices and None are not accepted here (use
    ``tensor[index] = value`` for those)."""
    if not isinstance(input, Tensor):
        raise TypeError(f"index_put: input must be a Tensor, got {type(input).__name__}")
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put: indices must be a tuple of Tensors, got "
                        f"{type(indices).__name__}")
    for i, item in enumerate(indices):
        if not isinstance(item, Tensor):
            raise TypeError(f"index_put: indices[{i}] must be a Tensor, got "
                            f"{type(item).__name__}")
    if not isinstance(values, Tensor):
        raise TypeError(f"index_put: values must be a Tensor, got {type(values).__name__}")
    if values.dtype is not input.dtype:
        raise RuntimeError(f"index_put: values must have the dtype of input ({input.dtype}), "
                           f"got {values.dtype}")
    index, index_tensors = _convert_index(tuple(indices), input._data)
    if accumulate:  # np.add.at takes integer arrays: a bool mask becomes its nonzero positions
        index = tuple(part for item in index for part in (
            np.nonzero(item) if getattr(item, "dtype", None) == np.bool_ else (item,)))
    stand_in = np.lib.stride_tricks.as_strided(np.zeros((), np.int8), input.shape,
                                               (0,) * input.ndim)
    try:
        stand_in[_on_host(index)]
    except IndexError as error:
        raise IndexError(f"index_put: indices are out of range for a tensor of shape "
                         f"{tuple(input.shape)}: {error}") from None
    return _put(input, index, values, index_tensors, accumulate, "index_put")


@tensor_method("__setitem__")
def setitem(self, index, value):
    """``tensor[index] = value``: the value (cast to the tensor's dtype) written with
    ``index_put``'s Function into the tensor's memory."""
    index, index_tensors = _convert_index(index, self._data)
    value = to_tensor(value, self.dtype, self._data) if not isinstance(value, Tensor) else \
        value.to(self.dtype)
    apply_inplace(self, _put, index, value, index_tensors)
