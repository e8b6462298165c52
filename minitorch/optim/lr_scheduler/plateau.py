"""``ReduceLROnPlateau``: cut the lr by ``factor`` when a watched metric stops improving.

Unlike the other schedules it is driven by a number, not by the epoch count:
``scheduler.step(val_loss)`` once per evaluation. A value counts as an improvement only if it
beats the best so far by ``threshold`` (relative or absolute); after more than ``patience``
evaluations without one, every group's lr is multiplied by ``factor`` (not below ``min_lr``),
and the next ``cooldown`` evaluations are not counted.

May import: math, ``minitorch.optim.optimizer``, ``minitorch.optim.lr_scheduler.base``.
"""
import math
import warnings

from ..optimizer import Optimizer
from .base import EPOCH_DEPRECATION_WARNING, LRScheduler


class ReduceLROnPlateau(LRScheduler):
    """As ``torch.optim.lr_scheduler.ReduceLROnPlateau``; ``mode='max'`` watches a metric that
    should grow (an accuracy). A reduction smaller than ``eps`` is skipped."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if not factor < 1.0:
            raise ValueError(f"ReduceLROnPlateau: factor must be < 1.0, got {factor!r}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be an Optimizer, got {type(optimizer).__name__}")
        self.factor = factor
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"ReduceLROnPlateau: expected {len(optimizer.param_groups)} "
                                 f"min_lrs (one per param group), got {len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._current_lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got "
                             f"{threshold_mode!r}")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        """Whether metric ``a`` improves on ``best`` by more than the threshold."""
        if self.mode == "min":
            if self.threshold_mode == "rel":
                return a < best * (1.0 - self.threshold)
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def step(self, metrics, epoch=None):
        """Record one evaluation of the watched metric (a number or a one-element tensor)."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown are not counted
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._current_lrs()

    def _reduce_lr(self):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(f"ReduceLROnPlateau: the optimizer has {len(groups)} param "
                                   f"groups but min_lr gave {len(self.min_lrs)} (a group was "
                                   "added since): set the scheduler's min_lrs to one per group")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old_lr = float(group["lr"])
            new_lr = max(old_lr * self.factor, min_lr)
            if old_lr - new_lr > self.eps:
                group["lr"] = new_lr

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
