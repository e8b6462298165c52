"""Learning-rate schedules, as ``torch.optim.lr_scheduler``.

A scheduler writes ``group["lr"]`` of its optimizer's param groups; call ``scheduler.step()``
after ``optimizer.step()``, once per epoch (or per batch for ``OneCycleLR`` and
``TransformerLR``; ``ReduceLROnPlateau.step(metric)`` once per evaluation). As in PyTorch,
creating a scheduler already takes the first step (``last_epoch`` becomes 0) and stores each
group's starting lr as ``group["initial_lr"]``; ``get_last_lr()`` gives the lrs in force and
``state_dict()``/``load_state_dict()`` save and resume a schedule.

- ``base.py``: ``LRScheduler``, the base class
- ``multiplicative.py``: ``LambdaLR``, ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
  ``ConstantLR``, ``LinearLR``
- ``cosine.py``: ``CosineAnnealingLR``
- ``one_cycle.py``: ``OneCycleLR`` (lr and momentum cycled together)
- ``plateau.py``: ``ReduceLROnPlateau`` (driven by a metric)
- ``sequential.py``: ``SequentialLR``, ``ChainedScheduler`` (schedules of schedules)
- ``warmup.py``: ``TransformerLR`` (alias ``NoamLR``), which PyTorch does not have

The chainable ones use PyTorch's recursive forms, so their values match PyTorch's to the last
bit.

May import: math, warnings, ``minitorch.optim.optimizer``.
"""
from .base import LRScheduler
from .cosine import CosineAnnealingLR
from .multiplicative import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiStepLR,
                             StepLR)
from .one_cycle import OneCycleLR
from .plateau import ReduceLROnPlateau
from .sequential import ChainedScheduler, SequentialLR
from .warmup import NoamLR, TransformerLR

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "ConstantLR",
           "LinearLR", "CosineAnnealingLR", "OneCycleLR", "ReduceLROnPlateau", "SequentialLR",
           "ChainedScheduler", "TransformerLR", "NoamLR"]
