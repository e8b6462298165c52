"""Data parallelism, as ``torch.nn.parallel``: ``DistributedDataParallel`` (``distributed.py``),
one model per rank of an MPI job (see ``minitorch.distributed``), gradients averaged during
backward.

May import: ``minitorch.distributed``, ``minitorch.autograd``, ``minitorch.tensor``,
``minitorch.nn.module``.
"""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
