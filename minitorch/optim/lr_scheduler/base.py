"""``LRScheduler``: the base of every learning-rate schedule, as ``torch.optim.lr_scheduler``'s.

A scheduler writes ``group["lr"]`` of its optimizer's param groups; call ``scheduler.step()``
after ``optimizer.step()``. As in PyTorch, creating a scheduler already takes the first step
(``last_epoch`` becomes 0) and stores each group's starting lr as ``group["initial_lr"]``.

A subclass defines ``get_lr()``: the lrs at ``self.last_epoch``, usually computed from the lrs
the groups hold now (PyTorch's "chainable" form, so that two schedulers on one optimizer
compose). Where it also defines ``_get_closed_form_lr()`` (the lrs from ``base_lrs`` alone),
``step(epoch)`` and ``SequentialLR`` use that to jump to an epoch.

May import: math, warnings, ``minitorch.optim.optimizer``.
"""
import warnings

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` is deprecated (as in PyTorch): call "
    "`scheduler.step()` without it. With an epoch, the closed form is used where the scheduler "
    "has one, instead of the chainable form.")


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` from ``last_epoch`` (and the current lrs)."""

    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for index, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{index}]"
                                   f" when resuming a scheduler with last_epoch={last_epoch}: "
                                   "load the optimizer's state_dict first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self):
        """The step a new scheduler takes: ``last_epoch`` moves to 0 (or on, when resuming)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        """The lr of each param group at ``self.last_epoch``."""
        raise NotImplementedError

    def get_last_lr(self):
        """The lrs the last ``step()`` set, one per param group."""
        return list(self._last_lr)

    def step(self, epoch=None):
        """Advance one epoch (or, deprecated as in PyTorch, jump to ``epoch``)."""
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            closed_form = getattr(self, "_get_closed_form_lr", None)
            values = closed_form() if closed_form is not None else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _current_lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        """Every attribute but the optimizer (numbers and lists, which minitorch.save stores)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


def per_group(name, optimizer, value):
    """``value`` for each param group: a list or tuple given one per group, or one number
    repeated (PyTorch's ``_format_param``)."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups: "
                             f"{name} has {len(value)} values, param_groups has "
                             f"{len(optimizer.param_groups)}")
        return list(value)
    return [value] * len(optimizer.param_groups)
