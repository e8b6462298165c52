"""Out-of-place ``index_put``: a copy of ``a`` with ``value`` written at ``index``.

``tensor[index] = value`` runs this and writes the result back into the tensor's memory, so
the assignment is differentiable: the gradient of ``a`` is zero where it was overwritten, and
the gradient of ``value`` is the gradient at ``index``, summed back to value's shape.
"""
import numpy as np

from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import to_tensor, unbroadcast
from .registry import apply_inplace, tensor_method
from .shape import _convert_index, _save_index, _saved_index


class IndexPut(Function):
    """``index`` in numpy's terms; ``index_tensors``: the Tensors it was made of, saved."""

    @staticmethod
    def forward(ctx, a, value, index, index_tensors=()):
        ctx.index, ctx.value_shape = index, value.shape
        _save_index(ctx, index_tensors)
        out = np.array(a._data, copy=True)
        out[index] = value._data
        return Tensor._make(out)

    @staticmethod
    def backward(ctx, grad):
        _saved_index(ctx)  # raises if an index tensor was changed in place since forward
        grad_a = grad_value = None
        if ctx.needs_input_grad[0]:
            keep = np.ones(grad.shape, dtype=bool)
            keep[ctx.index] = False
            from .elementwise import masked_fill
            grad_a = masked_fill(grad, Tensor._make(~keep), 0.0)
        if ctx.needs_input_grad[1]:
            picked = grad[ctx.index]
            grad_value = unbroadcast(picked, ctx.value_shape) if picked.ndim >= len(
                ctx.value_shape) else picked.reshape(ctx.value_shape)
        return grad_a, grad_value, None


def index_put(a, index, value, index_tensors=()):
    value = to_tensor(value, a.dtype) if not isinstance(value, Tensor) else value.to(a.dtype)
    target_shape = np.lib.stride_tricks.as_strided(
        np.zeros((), np.int8), a.shape, (0,) * a.ndim)[index].shape
    try:
        np.broadcast_to(np.empty(value.shape, np.int8), target_shape)
    except ValueError:
        raise ValueError(f"setitem: value of shape {tuple(value.shape)} cannot be broadcast to "
                         f"the indexed shape {target_shape}") from None
    return IndexPut.apply(a, value, index, index_tensors=index_tensors)


@tensor_method("__setitem__")
def setitem(self, index, value):
    """``tensor[index] = value``: ``index_put`` written into the tensor's memory."""
    index, index_tensors = _convert_index(index)
    apply_inplace(self, index_put, index, value, index_tensors)
