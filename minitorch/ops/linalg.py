"""Matrix multiplication, batched and broadcast like ``np.matmul``, on the backend's GEMM.

1-d operands are promoted as in PyTorch (a vector on the left is a row, on the right a column)
and the added dim is removed from the result. The backward is two more matmuls, so the
gradient is differentiable again.
"""
from .. import backends
from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import as_operands, unbroadcast


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None,
                              a if ctx.needs_input_grad[1] else None)
        ctx.shapes = a.shape, b.shape
        return Tensor._make(backends.current().matmul(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        grad_a = unbroadcast(grad @ b.mT, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(a.mT @ grad, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


def matmul(a, b):
    a, b = as_operands(a, b)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError(f"matmul: both arguments need at least 1 dim, got shapes "
                         f"{tuple(a.shape)} and {tuple(b.shape)}")
    if not a.dtype.is_floating_point:
        a, b = a.float(), b.float()
    left_vector, right_vector = a.ndim == 1, b.ndim == 1
    if left_vector:
        a = a.unsqueeze(0)
    if right_vector:
        b = b.unsqueeze(-1)
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                         f"multiplied ({a.shape[-1]} != {b.shape[-2]})")
    try:
        import numpy as np
        np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        raise ValueError(f"matmul: batch dims of shapes {tuple(a.shape)} and {tuple(b.shape)} "
                         "do not broadcast") from None
    out = MatMul.apply(a, b)
    if left_vector:
        out = out.squeeze(-2)
    if right_vector:
        out = out.squeeze(-1)
    return out
