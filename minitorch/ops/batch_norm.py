"""Batch normalization, ``F.batch_norm`` as PyTorch's: each channel (dim 1) normalized over the
batch and every other dim, then scaled and shifted per channel.

    training:  y = (x − mean_B) / sqrt(var_B + eps) · weight + bias      (var_B biased)
               running_mean ← (1 − momentum) running_mean + momentum mean_B
               running_var  ← (1 − momentum) running_var  + momentum var_B · n / (n − 1)
    eval:      y = (x − running_mean) / sqrt(running_var + eps) · weight + bias

n is the number of values per channel; the running variance is updated with the unbiased
estimate, as PyTorch does. Training runs as one node (``BatchNorm``: the statistics, then y =
x·scale + shift per channel, in numpy) whose backward is a node of its own
(``BatchNormBackward``: with x̂ = (x − mean)·rstd, dbias = Σ dy, dweight = Σ dy·x̂ and
dx = rstd·weight·(dy − dbias/n − x̂·dweight/n)); that one's derivative autograd takes over
the same formula in Tensor ops, so gradients of gradients work. Eval is x·scale + shift in
Tensor ops. The statistics' update happens outside the graph.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends`` (the tape),
``minitorch.device_arrays``, the sibling op modules.
"""
import numpy as np

from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..backends import tape as tapes
from ..device_arrays import array_module
from ..tensor import Tensor
from .fused import _array, _differentiate_composite
from .registry import op

_make = Tensor._make


def _per_channel(a, ndim):
    """A (C,) array shaped to broadcast over an (N, C, ...) one."""
    return a.reshape((1, -1) + (1,) * (ndim - 2))


def _reduced_dims(ndim):
    return (0,) + tuple(range(2, ndim))


def _forward_into(data, weight, bias, eps, y, mean, var, rstd):
    """The batch's statistics (mean, biased var, rstd) of ``data`` and its normalized y, each
    written into the given array (weight, bias: arrays or None). One function, so that a
    captured step (tape.py) replays it as one call."""
    dims = _reduced_dims(data.ndim)
    np.mean(data, axis=dims, out=mean)
    np.subtract(data, _per_channel(mean, data.ndim), out=y)  # centered, then scaled in place
    np.mean(np.square(y), axis=dims, out=var)
    rstd[...] = 1.0 / np.sqrt(var + eps)
    scale = rstd if weight is None else rstd * weight
    y *= _per_channel(scale, data.ndim)
    if bias is not None:
        y += _per_channel(bias, data.ndim)


def _backward_into(d, x, weight, mean, rstd, dx, dweight, dbias):
    """dx, dweight and dbias of batch normalization (the formula in the module docstring),
    each written into the given array; one function for a captured step, as _forward_into."""
    ndim, dims = d.ndim, _reduced_dims(d.ndim)
    count = d.size // d.shape[1]
    xhat = (x - _per_channel(mean, ndim)) * _per_channel(rstd, ndim)
    np.sum(d, axis=dims, out=dbias)
    n, c = d.shape[:2]
    dweight[...] = np.einsum("ncl,ncl->c", d.reshape(n, c, -1), xhat.reshape(n, c, -1))
    scale = rstd if weight is None else rstd * weight
    xhat *= _per_channel(dweight / count, ndim)
    np.multiply(d - _per_channel(dbias / count, ndim) - xhat, _per_channel(scale, ndim), out=dx)


class BatchNorm(Function):
    """y = (x − mean)·rstd·weight + bias with the batch's statistics; also returns the mean
    and the biased variance (not differentiable: the running statistics' update reads them)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        data = x._data
        xp = array_module(data)
        y = xp.empty(data.shape, data.dtype)
        mean, var, rstd = (xp.empty(data.shape[1], data.dtype) for _ in range(3))
        tapes.record(_forward_into, data, _array(weight), _array(bias), eps, y, mean, var, rstd)
        ctx.eps, ctx.mean, ctx.rstd = eps, _make(mean), _make(rstd)
        ctx.has_bias = bias is not None
        ctx.save_for_backward(x, weight)
        mean_out, var_out = _make(mean), _make(var)
        ctx.mark_non_differentiable(mean_out, var_out)
        return _make(y), mean_out, var_out

    @staticmethod
    def backward(ctx, grad, _grad_mean, _grad_var):
        x, weight = ctx.saved_tensors
        dx, dweight, dbias = BatchNormBackward.apply(grad, x, weight, ctx.mean, ctx.rstd,
                                                     ctx.eps)
        return (dx, dweight if weight is not None else None,
                dbias if ctx.has_bias else None, None)


class BatchNormBackward(Function):
    @staticmethod
    def forward(ctx, dy, x, weight, mean, rstd, eps):
        ctx.eps = eps
        ctx.save_for_backward(dy, x, weight)
        d = dy._data
        xp = array_module(d)
        dx = xp.empty(d.shape, d.dtype)
        dweight, dbias = xp.empty(d.shape[1], d.dtype), xp.empty(d.shape[1], d.dtype)
        tapes.record(_backward_into, d, x._data, _array(weight), mean._data, rstd._data, dx,
                     dweight, dbias)
        return _make(dx), _make(dweight), _make(dbias)

    @staticmethod
    def backward(ctx, *grads):
        eps = ctx.eps

        def composite(dy, x, weight):
            dims = _reduced_dims(x.ndim)
            mean = x.mean(dims, keepdim=True)
            rstd = ((x - mean) ** 2).mean(dims, keepdim=True).add(eps).rsqrt()
            xhat = (x - mean) * rstd
            dbias, dweight = dy.sum(dims), (dy * xhat).sum(dims)
            g = dy if weight is None else dy * weight.reshape(
                (1, -1) + (1,) * (x.ndim - 2))
            dx = rstd * (g - g.mean(dims, keepdim=True)
                         - xhat * (g * xhat).mean(dims, keepdim=True))
            return dx, dweight, dbias
        needs = ctx.needs_input_grad[:3]
        return _differentiate_composite(composite, ctx.saved_tensors, needs, grads) + (None,) * 3


def _check_statistic(name, t, channels):
    if t is None:
        return
    if not isinstance(t, Tensor):
        raise TypeError(f"batch_norm: {name} must be a minitorch Tensor or None, got "
                        f"{type(t).__name__}")
    if t.numel() != channels:
        raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")


@op(function=False, method=False, functional=True)
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Normalize each channel of an (N, C, ...) input: by the batch's statistics when
    ``training`` (updating ``running_mean``/``running_var`` in place, if given, with
    ``momentum``), else by the running statistics; then ``· weight + bias`` per channel."""
    if not isinstance(input, Tensor):
        raise TypeError(f"batch_norm: input must be a minitorch Tensor, got "
                        f"{type(input).__name__}")
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of at least 2 dims (N, C, ...), got "
                         f"size {list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"batch_norm: input must be floating point, got {input.dtype}")
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_statistic(name, t, channels)
    count = input.numel() // channels if channels else 0
    if training and count <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {list(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("batch_norm: running_mean and running_var must be given when not "
                           "training")
    per_channel = (1, channels) + (1,) * (input.ndim - 2)
    if not training:  # a per-channel affine map: y = x·scale + shift
        scale = (running_var.to(input.dtype) + eps).rsqrt()
        shift = -running_mean.to(input.dtype) * scale
        if weight is not None:
            scale, shift = scale * weight, shift * weight
        if bias is not None:
            shift = shift + bias
        return input * scale.reshape(per_channel) + shift.reshape(per_channel)
    y, mean, var = BatchNorm.apply(input, weight, bias, float(eps))
    with no_grad():
        if running_mean is not None:
            running_mean.mul_(1 - momentum).add_(mean.reshape(running_mean.shape)
                                                 .to(running_mean.dtype), alpha=momentum)
        if running_var is not None:
            unbiased = var.reshape(running_var.shape) * (count / (count - 1))
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
    return y
