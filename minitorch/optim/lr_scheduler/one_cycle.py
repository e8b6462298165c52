"""``OneCycleLR``: the 1cycle policy (Smith & Topin, "Super-Convergence", 2017).

The lr rises from ``max_lr / div_factor`` to ``max_lr`` over the first ``pct_start`` of the
steps, then anneals down to ``initial_lr / final_div_factor``; the momentum (or Adam's
``beta1``) moves the other way, from ``max_momentum`` down to ``base_momentum`` and back, since
a large lr wants less momentum. With ``three_phase`` the lr comes back down to ``initial_lr``
symmetrically before the final annealing, as in the paper (the default is fastai's two phases).

Each phase anneals between its two ends by a cosine (``anneal_strategy='cos'``) or a line; the
ends are read from the param group (``initial_lr``, ``max_lr``, ``min_lr``, ``max_momentum``,
``base_momentum``), where the constructor stores them, as PyTorch does.

May import: math, ``minitorch.optim.lr_scheduler.base``.
"""
import math

from .base import LRScheduler, per_group


class OneCycleLR(LRScheduler):
    """The 1cycle schedule, as ``torch.optim.lr_scheduler.OneCycleLR``. Call ``step()`` after
    every batch; the cycle lasts ``total_steps`` (or ``epochs * steps_per_epoch``) steps, and
    stepping past it raises ValueError."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None, steps_per_epoch=None,
                 pct_start=0.3, anneal_strategy="cos", cycle_momentum=True, base_momentum=0.85,
                 max_momentum=0.95, div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1):
        if total_steps is not None:
            if not _is_positive_int(total_steps):
                raise ValueError(f"OneCycleLR: total_steps must be a positive int, got "
                                 f"{total_steps!r}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if not _is_positive_int(epochs):
                raise ValueError(f"OneCycleLR: epochs must be a positive int, got {epochs!r}")
            if not _is_positive_int(steps_per_epoch):
                raise ValueError(f"OneCycleLR: steps_per_epoch must be a positive int, got "
                                 f"{steps_per_epoch!r}")
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("OneCycleLR: you must define either total_steps OR (epochs AND "
                             "steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float between 0 and 1, got "
                             f"{pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be one of 'cos' or 'linear', "
                             f"got {anneal_strategy!r}")
        self._anneal_func_type = anneal_strategy
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)

        max_lrs = per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for group, group_max_lr in zip(optimizer.param_groups, max_lrs):
                group["initial_lr"] = group_max_lr / div_factor
                group["max_lr"] = group_max_lr
                group["min_lr"] = group["initial_lr"] / final_div_factor

        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("OneCycleLR: optimizer must support momentum or beta1 with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = per_group("max_momentum", optimizer, max_momentum)
            base_momentums = per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for group, top, bottom in zip(optimizer.param_groups, max_momentums,
                                              base_momentums):
                    _set_momentum(group, top, self.use_beta1)
                    group["max_momentum"] = top
                    group["base_momentum"] = bottom
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self):
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"OneCycleLR: tried to step {step} times; the specified number of "
                             f"total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for index, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step <= end_step or index == len(self._schedule_phases) - 1:
                    pct = (step - start_step) / (end_step - start_step)
                    lrs.append(self._anneal(group[phase["start_lr"]], group[phase["end_lr"]],
                                            pct))
                    if self.cycle_momentum:
                        momentum = self._anneal(group[phase["start_momentum"]],
                                                group[phase["end_momentum"]], pct)
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = phase["end_step"]
        return lrs


def _is_positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _set_momentum(group, momentum, use_beta1):
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _phases(total_steps, pct_start, three_phase):
    """The phases of the cycle: each ends at a step and names the group keys it anneals between.
    """
    warmup_end = float(pct_start * total_steps) - 1
    if three_phase:
        return [
            dict(end_step=warmup_end, start_lr="initial_lr", end_lr="max_lr",
                 start_momentum="max_momentum", end_momentum="base_momentum"),
            dict(end_step=float(2 * pct_start * total_steps) - 2, start_lr="max_lr",
                 end_lr="initial_lr", start_momentum="base_momentum",
                 end_momentum="max_momentum"),
            dict(end_step=total_steps - 1, start_lr="initial_lr", end_lr="min_lr",
                 start_momentum="max_momentum", end_momentum="max_momentum"),
        ]
    return [
        dict(end_step=warmup_end, start_lr="initial_lr", end_lr="max_lr",
             start_momentum="max_momentum", end_momentum="base_momentum"),
        dict(end_step=total_steps - 1, start_lr="max_lr", end_lr="min_lr",
             start_momentum="base_momentum", end_momentum="max_momentum"),
    ]
