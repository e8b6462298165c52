"""Schedules that scale the initial lr by a factor of the epoch: ``LambdaLR``, ``StepLR``,
``MultiStepLR``, ``ExponentialLR``, ``ConstantLR``, ``LinearLR``.

All but ``LambdaLR`` are written as PyTorch writes them, recursively: each step multiplies the
lr the group holds *now* by the ratio from the previous epoch's factor to this one's, so that
two schedulers on one optimizer compose, and the values match PyTorch's to the last bit. Each
also has the closed form (``_get_closed_form_lr``, from ``base_lrs``), which ``step(epoch)``
and ``SequentialLR`` use to jump to an epoch.

May import: collections, types, ``minitorch.optim.lr_scheduler.base``.
"""
import types
from collections import Counter

from .base import LRScheduler


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(last_epoch)``; ``lr_lambda`` is one function or a list
    with one per param group. As in PyTorch, plain functions are not saved in ``state_dict``
    (only the ``__dict__`` of callable objects is)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas (one per "
                                 f"param group), but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for index, fn in enumerate(self.lr_lambdas):
            if not callable(fn):
                raise TypeError(f"lr_lambda[{index}] must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                     self.base_lrs)]

    def state_dict(self):
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas", [])
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs:
    ``lr = initial_lr * gamma ** (last_epoch // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if not isinstance(step_size, int) or isinstance(step_size, bool) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** (self.last_epoch // self.step_size)
                for base_lr in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the lr by ``gamma`` at each epoch in ``milestones``:
    ``lr = initial_lr * gamma ** (number of milestones <= last_epoch)``. A milestone given
    twice decays twice (``milestones`` is kept as a ``Counter``, as PyTorch keeps it)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch not in self.milestones:
            return self._current_lrs()
        factor = self.gamma ** self.milestones[self.last_epoch]
        return [lr * factor for lr in self._current_lrs()]

    def _get_closed_form_lr(self):
        passed = sum(count for milestone, count in self.milestones.items()
                     if milestone <= self.last_epoch)
        return [base_lr * self.gamma ** passed for base_lr in self.base_lrs]

    def load_state_dict(self, state_dict):
        super().load_state_dict(state_dict)
        # minitorch.save stores the Counter as a plain dict (with int keys): make it one again
        self.milestones = Counter({int(m): count for m, count in self.milestones.items()})


class ExponentialLR(LRScheduler):
    """Multiply the lr by ``gamma`` every epoch: ``lr = initial_lr * gamma ** last_epoch``."""

    def __init__(self, optimizer, gamma, last_epoch=-1):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        # the constructor's step (also when resuming) keeps the lr the optimizer holds
        if self._is_initial:
            return self._current_lrs()
        return [lr * self.gamma for lr in self._current_lrs()]

    def _get_closed_form_lr(self):
        return [base_lr * self.gamma ** self.last_epoch for base_lr in self.base_lrs]


class ConstantLR(LRScheduler):
    """``lr = initial_lr * factor`` for the first ``total_iters`` epochs, then ``initial_lr``."""

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1):
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be between 0 and 1, got {factor!r}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._current_lrs()]
        if self.last_epoch != self.total_iters:
            return self._current_lrs()
        return [lr * (1.0 / self.factor) for lr in self._current_lrs()]

    def _get_closed_form_lr(self):
        factor = self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor)
        return [base_lr * factor for base_lr in self.base_lrs]


class LinearLR(LRScheduler):
    """The factor goes linearly from ``start_factor`` to ``end_factor`` over ``total_iters``
    epochs, then stays: ``lr = initial_lr * (start_factor + (end_factor - start_factor) *
    min(last_epoch, total_iters) / total_iters)``. A common warmup."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1):
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be greater than 0 and at most 1, got "
                             f"{start_factor!r}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be between 0 and 1, got "
                             f"{end_factor!r}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._current_lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._current_lrs()
        # the ratio of this epoch's factor to the previous one's
        slope = self.end_factor - self.start_factor
        ratio = 1.0 + slope / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * slope)
        return [lr * ratio for lr in self._current_lrs()]

    def _get_closed_form_lr(self):
        factor = self.start_factor + (self.end_factor - self.start_factor) \
            * min(self.total_iters, self.last_epoch) / self.total_iters
        return [base_lr * factor for base_lr in self.base_lrs]
