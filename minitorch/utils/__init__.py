"""Utilities beside the model code, as ``torch.utils``: ``minitorch.utils.data`` (datasets,
samplers, ``DataLoader``).

May import: ``minitorch.utils.data``.
"""
from . import data

__all__ = ["data"]
