"""Batch normalization, ``F.batch_norm`` as PyTorch's: each channel (dim 1) normalized over the
batch and every other dim, then scaled and shifted per channel.

    training:  y = (x − mean_B) / sqrt(var_B + eps) · weight + bias      (var_B biased)
               running_mean ← (1 − momentum) running_mean + momentum mean_B
               running_var  ← (1 − momentum) running_var  + momentum var_B · n / (n − 1)
    eval:      y = (x − running_mean) / sqrt(running_var + eps) · weight + bias

n is the number of values per channel; the running variance is updated with the unbiased
estimate, as PyTorch does. The formula is written in Tensor ops, so autograd differentiates it
to any order; the statistics' update happens outside the graph.
May import: ``minitorch.tensor``, ``minitorch.autograd``, the sibling op modules.
"""
from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from .registry import op


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
    if training:
        dims = (0,) + tuple(range(2, input.ndim))
        mean = input.mean(dims, keepdim=True)
        centered = input - mean
        var = (centered * centered).mean(dims, keepdim=True)
        y = centered * (var + eps).rsqrt()
        with no_grad():
            if running_mean is not None:
                running_mean.mul_(1 - momentum).add_(
                    mean.detach().reshape(running_mean.shape).to(running_mean.dtype),
                    alpha=momentum)
            if running_var is not None:
                unbiased = var.detach().reshape(running_var.shape) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype),
                                                    alpha=momentum)
    else:
        y = (input - running_mean.reshape(per_channel)) \
            * (running_var.reshape(per_channel) + eps).rsqrt()
    if weight is not None:
        y = y * weight.reshape(per_channel)
    if bias is not None:
        y = y + bias.reshape(per_channel)
    return y
