"""Matrix multiplication, batched and broadcast like ``np.matmul``, on the backend's GEMM, and
``Linear`` (x Wᵀ + b as one node, the fused form of ``nn.functional.linear``).

1-d operands are promoted as in PyTorch (a vector on the left is a row, on the right a column)
and the added dim is removed from the result. The backward is two more matmuls, so the
gradient is differentiable again.
"""
import numpy as np

from .. import backends
from ..autograd.function import Function
from ..tensor import Tensor
from ._helpers import as_operands, unbroadcast
from .registry import op


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
        if grad.ndim > 2 and not grad._data.flags.c_contiguous:
            # A batched gradient that arrives as a strided view (through a transpose) is copied
            # once: on a view the backend would run one GEMM per batch entry, twice.
            grad = grad.contiguous()
        grad_a = unbroadcast(grad @ b.mT, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(a.mT @ grad, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Linear(Function):
    """x Wᵀ + b over the last dim of x, as one node: a single GEMM over all leading dims that
    reads W transposed in place (a flag, no copy), with b added into the GEMM's fresh output.
    Its backward is matmuls and a sum, so it differentiates again."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.x_shape = x.shape
        # Row count spelled out, not -1: with zero in_features a reshape cannot infer it.
        rows = x._data.reshape(int(np.prod(x._data.shape[:-1])), x._data.shape[-1])
        if rows.shape[1] == 0:  # an empty sum: x Wᵀ is zeros and the result is the bias
            out = np.zeros((rows.shape[0], weight._data.shape[0]), dtype=rows.dtype)
        else:
            out = backends.current().matmul(rows, weight._data.T)
        if bias is not None:
            out += bias._data
        return Tensor._make(out.reshape(x._data.shape[:-1] + (weight._data.shape[0],)))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad
        n_rows = int(np.prod(ctx.x_shape[:-1]))
        rows = grad.reshape(n_rows, grad.shape[-1])
        grad_x = (rows @ weight).reshape(ctx.x_shape) if need_x else None
        grad_weight = rows.mT @ x.reshape(n_rows, x.shape[-1]) if need_weight else None
        grad_bias = rows.sum(0) if need_bias else None
        return grad_x, grad_weight, grad_bias


@op(methods="__matmul__", reflected="__rmatmul__")
def matmul(a, b):
    if type(a) is Tensor and type(b) is Tensor:
        x, y = a._data, b._data
        if (x.dtype == y.dtype and x.dtype.kind == "f" and x.ndim >= 2 and y.ndim >= 2
                and x.shape[-1] == y.shape[-2]
                and (x.ndim == 2 or y.ndim == 2 or x.shape[:-2] == y.shape[:-2])):
            return MatMul.apply(a, b)  # the usual case, valid as it stands: skip the checks
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
