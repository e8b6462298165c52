"""Batch normalization, ``F.batch_norm`` as PyTorch's: each channel (dim 1) normalized over the
batch and every other dim, then scaled and shifted per channel.

    training:  y = (x − mean_B) / sqrt(var_B + eps) · weight + bias      (var_B biased)
               running_mean ← (1 − momentum) running_mean + momentum mean_B
               running_var  ← (1 − momentum) running_var  + momentum var_B · n / (n − 1)
    eval:      y = (x − running_mean) / sqrt(running_var + eps) · weight + bias

n is the number of values per channel; the running variance is updated with the unbiased
estimate, as PyTorch does. Training runs as one node (``BatchNorm``: the statistics and y, the
backend's ``batch_norm_forward``) whose backward is a node of its own (``BatchNormBackward``:
with x̂ = (x − mean)·rstd, dbias = Σ dy, dweight = Σ dy·x̂ and
dx = rstd·weight·(dy − dbias/n − x̂·dweight/n), the backend's ``batch_norm_backward``); that
one's derivative autograd takes over the same formula in Tensor ops, so gradients of
gradients work. Eval is x·scale + shift in Tensor ops. The statistics' update happens outside
the graph.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``, the sibling
op modules.
"""
from .. import backends
from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .fused import _array, _differentiate_composite
from .registry import op

_make = Tensor._make


def _reduced_dims(ndim):
    return (0,) + tuple(range(2, ndim))


class BatchNorm(Function):
    """y = (x − mean)·rstd·weight + bias with the batch's statistics; also returns the mean
    and the biased variance (not differentiable: the running statistics' update reads them)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, var, rstd = backends.current().batch_norm_forward(
            x._data, _array(weight), _array(bias), eps)
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
        dx, dweight, dbias = backends.current().batch_norm_backward(
            dy._data, x._data, _array(weight), mean._data, rstd._data)
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
