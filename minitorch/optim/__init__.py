"""Optimizers and learning-rate schedules, as ``torch.optim``.

- ``optimizer.py``: ``Optimizer``, the base (param groups, state, ``state_dict``)
- ``sgd.py``: ``SGD`` (momentum, dampening, Nesterov, weight decay)
- ``adam.py``: ``Adam`` and ``AdamW`` (amsgrad)
- ``lr_scheduler.py``: ``LambdaLR``, ``StepLR``, ``CosineAnnealingLR``, ``TransformerLR``

May import: numpy, ``minitorch.tensor``, ``minitorch.autograd``.
"""
from . import lr_scheduler
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "lr_scheduler"]
