"""Loss modules, as ``torch.nn``: ``CrossEntropyLoss``, ``NLLLoss``, ``KLDivLoss``, ``MSELoss``,
``L1Loss``, ``SmoothL1Loss``, ``HuberLoss``, ``BCELoss`` and ``BCEWithLogitsLoss``.

Each holds its settings and calls the ``nn.functional`` loss of the same name. As in PyTorch,
the deprecated ``size_average``/``reduce`` arguments are turned into ``reduction`` (with
PyTorch's warning), and class or element weights are buffers (``weight``, ``pos_weight``): they
follow ``.to(dtype)`` and appear in the ``state_dict`` when given, under PyTorch's keys.
May import: ``.module``, ``.functional``, ``minitorch.ops``.
"""
from ..ops.losses import reduction_argument
from . import functional as F
from .module import Module


class _Loss(Module):
    """Base of the losses: ``reduction`` ("mean", "sum", "none"), or the legacy pair."""

    reduction: str

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = reduction_argument(reduction, size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with a class or element ``weight``, registered as a buffer (None: no buffer)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean (or sum) absolute error |input − target|."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean (or sum) squared error (input − target)²."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Squared error below ``beta``, absolute error above (``F.smooth_l1_loss``)."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Squared error below ``delta``, ``delta``-scaled absolute error above (``F.huber_loss``)."""

    def __init__(self, reduction="mean", delta=1.0):
        if isinstance(delta, bool) or not isinstance(delta, (float, int)):
            raise TypeError(f"HuberLoss: delta must be a float or int, got {type(delta)}")
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """KL divergence from log-probabilities ``input`` to ``target`` (``F.kl_div``); use
    ``reduction="batchmean"`` for the divergence itself."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of log-probabilities at class indices (``F.nll_loss``)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross-entropy of logits against class indices or probabilities (``F.cross_entropy``)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None,
                 reduction="mean", label_smoothing=0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross-entropy of probabilities (``F.binary_cross_entropy``)."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross-entropy of logits, sigmoid included and computed stably
    (``F.binary_cross_entropy_with_logits``); ``pos_weight`` weights the positive term."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)
