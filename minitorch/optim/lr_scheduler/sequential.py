"""Schedules made of schedules: ``SequentialLR`` (one after another, switching at milestones)
and ``ChainedScheduler`` (all at once, each scaling what the previous set).

Both hold schedulers built on the same optimizer; their ``state_dict`` holds each inner
scheduler's. A typical warmup then decay::

    warmup = LinearLR(opt, start_factor=0.1, total_iters=5)
    decay = CosineAnnealingLR(opt, T_max=95)
    scheduler = SequentialLR(opt, [warmup, decay], milestones=[5])

May import: bisect, ``minitorch.optim.lr_scheduler.base`` and ``.plateau``.
"""
from bisect import bisect_right

from .base import LRScheduler
from .plateau import ReduceLROnPlateau


def _check_schedulers(kind, optimizer, schedulers):
    if len(schedulers) < 1:
        raise ValueError(f"{kind} expects at least one scheduler, but got no scheduler")
    for index, scheduler in enumerate(schedulers):
        if not hasattr(scheduler, "optimizer"):
            raise TypeError(f"{kind}: schedulers[{index}] should have `optimizer` as its "
                            f"attribute, got a {type(scheduler).__name__}")
        if isinstance(scheduler, ReduceLROnPlateau):
            raise ValueError(f"{kind} does not support `ReduceLROnPlateau` (its step needs the "
                             f"metric), but schedulers[{index}] is one")
        if scheduler.optimizer is not optimizer:
            raise ValueError(f"{kind} expects all schedulers to belong to the same optimizer, "
                             f"but schedulers[{index}] ({type(scheduler).__name__}) has another")


class _SchedulerOfSchedulers(LRScheduler):
    """What SequentialLR and ChainedScheduler share: a state_dict holding each of theirs."""

    def state_dict(self):
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [scheduler.state_dict() for scheduler in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        inner = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for scheduler, saved in zip(self._schedulers, inner):
            scheduler.load_state_dict(saved)


class SequentialLR(_SchedulerOfSchedulers):
    """Run ``schedulers[0]`` until epoch ``milestones[0]``, then ``schedulers[1]`` (restarted
    at its epoch 0, from its closed form where it has one), and so on."""

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1):
        schedulers, milestones = list(schedulers), list(milestones)
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR expects one more scheduler than milestones, got "
                             f"{len(schedulers)} schedulers and {len(milestones)} milestones")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        # The inner schedulers each took their first step when made: undo those, so that only
        # the scheduler in force at epoch 0 takes it, from the initial lrs.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        self.recursive_undo()
        index = bisect_right(milestones, 0)
        schedulers[index]._initial_step()
        self._last_lr = schedulers[index].get_last_lr()

    def recursive_undo(self, sched=None):
        """Take one epoch off every inner scheduler (and theirs, for nested ones)."""
        scheduler = self if sched is None else sched
        if hasattr(scheduler, "_schedulers"):
            for inner in scheduler._schedulers:
                self.recursive_undo(inner)
        elif hasattr(scheduler, "last_epoch"):
            scheduler.last_epoch -= 1

    def step(self):
        self.last_epoch += 1
        index = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[index]
        if index > 0 and self._milestones[index - 1] == self.last_epoch:
            scheduler._update_lr(0)  # a milestone: the next scheduler starts at its epoch 0
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_SchedulerOfSchedulers):
    """Step every scheduler in ``schedulers`` at each ``step()``, in order: their factors
    multiply (for the chainable, recursive schedules)."""

    def __init__(self, schedulers, optimizer=None):
        schedulers = list(schedulers)
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler, but got no "
                             "scheduler")
        optimizer = optimizer if optimizer is not None else schedulers[0].optimizer
        _check_schedulers(type(self).__name__, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = self._current_lrs()

    def step(self):
        for scheduler in self._schedulers:
            scheduler.step()
        self._last_lr = self._current_lrs()

