"""Utilities on a model's parameters, as ``torch.nn.utils``: gradient clipping.

May import: numpy, ``minitorch.tensor``.
"""
from .clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
