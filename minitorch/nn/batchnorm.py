"""``BatchNorm1d`` and ``BatchNorm2d``: ``F.batch_norm`` with its per-channel parameters and
running statistics, as PyTorch's modules.

``weight`` starts at ones and ``bias`` at zeros (none with ``affine=False``; ``bias=False``
keeps only the weight); the buffers ``running_mean`` (zeros), ``running_var`` (ones) and
``num_batches_tracked`` (an int64 count) exist with ``track_running_stats``. Training mode
normalizes by the batch's statistics and updates the running ones with ``momentum``, or with
``momentum=None`` their cumulative average (factor 1 / num_batches_tracked); eval mode
normalizes by the running statistics (by the batch's when none are tracked).
May import: ``.module``, ``.parameter``, ``.functional``, ``.init``, ``minitorch.creation``,
``minitorch.autograd``, ``minitorch.dtype``.
"""
from ..autograd.grad_mode import no_grad
from ..creation import empty, ones, tensor, zeros
from ..dtype import int64
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class _BatchNorm(Module):
    """What BatchNorm1d and BatchNorm2d share; they differ only in the input dims they take."""

    _input_dims: tuple = ()

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if isinstance(num_features, bool) or not isinstance(num_features, int) \
                or num_features < 0:
            raise ValueError(f"{type(self).__name__}: num_features must be a non-negative int, "
                             f"got {num_features!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = Parameter(empty(num_features))
            if bias:
                self.bias = Parameter(empty(num_features))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features))
            self.register_buffer("running_var", ones(num_features))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self):
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input):
        if input.ndim not in self._input_dims:
            expected = " or ".join(f"{d}D" for d in self._input_dims)
            raise ValueError(f"expected {expected} input (got {input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:  # the cumulative average of every batch so far
                factor = 1.0 / float(self.num_batches_tracked.item())
        # the batch's statistics in training, and in eval when no running ones are kept
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if track else None,
                            self.running_var if track else None, self.weight, self.bias,
                            use_batch, factor, self.eps)

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) input, per channel C."""

    _input_dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) input, per channel C."""

    _input_dims = (4,)
