"""Utilities, as ``torch.nn.utils``: gradient clipping (``clip_grad.py``) and the padding of
variable-length sequences (``rnn.py``: ``nn.utils.rnn.pad_sequence``).

May import: numpy, ``minitorch.tensor``, ``minitorch.ops``.
"""
from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]
