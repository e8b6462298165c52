"""``CosineAnnealingLR``: the lr follows half a cosine from ``initial_lr`` down to ``eta_min``.

May import: math, ``minitorch.optim.lr_scheduler.base``.
"""
import math

from .base import LRScheduler


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``initial_lr`` down to ``eta_min`` over ``T_max`` epochs:
    ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2``.

    Computed recursively from the current lr as PyTorch does (so the values are PyTorch's, and
    past ``T_max`` the lr climbs back up, a period of ``2 * T_max``).
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if not T_max > 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be > 0, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups, eta_min, T_max, epoch = self.optimizer.param_groups, self.eta_min, self.T_max, \
            self.last_epoch
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and epoch > 0:
            # resumed with last_epoch > 0: no current lr to recurse from, use the closed form
            # (PyTorch's own, whose product order differs from _get_closed_form_lr's by an ulp)
            return [eta_min + (base_lr - eta_min) * (1 + math.cos(epoch * math.pi / T_max)) / 2
                    for base_lr in self.base_lrs]
        if (epoch - 1 - T_max) % (2 * T_max) == 0:
            # at the bottom of the cosine the ratio below would divide by zero
            return [group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * epoch / T_max))
                / (1 + math.cos(math.pi * (epoch - 1) / T_max))
                * (group["lr"] - eta_min) + eta_min
                for group in groups]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base_lr - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base_lr in self.base_lrs]
