"""Optimizers and learning-rate schedules, as ``torch.optim``.

- ``optimizer.py``: ``Optimizer``, the base (param groups, state, ``state_dict``)
- ``sgd.py``: ``SGD`` (momentum, dampening, Nesterov, weight decay)
- ``adam.py``: ``Adam`` and ``AdamW`` (amsgrad)
- ``rmsprop.py``: ``RMSprop`` (momentum, centred)
- ``adagrad.py``: ``Adagrad`` (lr decay)
- ``lr_scheduler/``: ``LambdaLR``, ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
  ``ConstantLR``, ``LinearLR``, ``CosineAnnealingLR``, ``OneCycleLR``, ``ReduceLROnPlateau``,
  ``SequentialLR``, ``ChainedScheduler``, ``TransformerLR``

May import: numpy, ``minitorch.tensor``, ``minitorch.autograd``.
"""
from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
