"""RMS norm (Zhang & Sennrich, 2019): layer norm without the mean, ``F.rms_norm`` as PyTorch's.

    y = x / sqrt(mean(x²) + eps) · weight      over the trailing ``normalized_shape`` dims

Forward and backward run on the backend's ``rms_norm_forward``/``rms_norm_backward`` kernels.
The backward is a Function of its own whose derivative autograd takes over the same formula
in Tensor ops, so a gradient of a gradient works (as for layer norm in fused.py).
"""
import math

import numpy as np

from .. import backends
from ..autograd.function import Function
from ..tensor import Tensor
from .fused import _differentiate_composite
from .registry import op


class RMSNorm(Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        y, rstd = backends.current().rms_norm_forward(
            x._data, None if weight is None else weight._data, eps)
        ctx.eps, ctx.rstd = eps, Tensor._make(rstd)
        ctx.save_for_backward(x, weight)
        return Tensor._make(y)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        if weight is None:
            return RMSNormBackward.apply(grad, x, None, ctx.rstd, ctx.eps), None, None
        dx, dweight = RMSNormBackward.apply(grad, x, weight, ctx.rstd, ctx.eps)
        return dx, dweight, None


class RMSNormBackward(Function):
    @staticmethod
    def forward(ctx, dy, x, weight, rstd, eps):
        ctx.eps = eps
        ctx.save_for_backward(dy, x, weight)
        dx, dweight = backends.current().rms_norm_backward(
            dy._data, x._data, None if weight is None else weight._data, rstd._data)
        return Tensor._make(dx) if weight is None else (Tensor._make(dx), Tensor._make(dweight))

    @staticmethod
    def backward(ctx, *grads):
        eps = ctx.eps

        def composite(dy, x, weight):
            rstd = (x * x).mean(-1, keepdim=True).add(eps).rsqrt()
            xhat = x * rstd
            g = dy if weight is None else dy * weight
            dx = rstd * (g - xhat * (g * xhat).mean(-1, keepdim=True))
            return dx if weight is None else (dx, (dy * xhat).sum(tuple(range(dy.ndim - 1))))
        needs = ctx.needs_input_grad[:3]
        return _differentiate_composite(composite, ctx.saved_tensors, needs, grads) + (None,) * 2


@op(method=False, functional=True)
def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Normalize by the root mean square over the trailing ``normalized_shape`` dims, then
    scale by ``weight``; ``eps=None`` is the dtype's machine epsilon, as in PyTorch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise ValueError(f"rms_norm: normalized_shape {list(shape)} must match the trailing "
                         f"dims of input, got input shape {tuple(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"rms_norm: weight must have shape {shape} (normalized_shape), got "
                         f"{tuple(weight.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"rms_norm: input must be floating point, got {input.dtype}")
    eps = float(np.finfo(input.dtype.numpy).eps) if eps is None else float(eps)
    size = math.prod(shape)
    x = input.reshape(*input.shape[:input.ndim - k], size)
    w = None if weight is None else weight.reshape(size)
    return RMSNorm.apply(x, w, eps).reshape(input.shape)
