"""``DistributedSampler``: each rank of a data-parallel job its own shard of a dataset, as
``torch.utils.data.distributed.DistributedSampler``.

Every rank draws the same permutation of the indices (seeded by ``seed + epoch``: call
``set_epoch(epoch)`` before each epoch for a new one) and keeps every ``num_replicas``-th index
from its ``rank`` on, so the shards are disjoint and together cover the dataset. When the
dataset does not divide evenly, the permutation is padded with its first indices (a few samples
are seen twice an epoch) or, with ``drop_last``, cut (a few are not seen): either way every rank
gets as many batches, and none waits for the others in a collective that will not come.
Differs from PyTorch: the permutation comes from numpy's PCG64, so a seed gives another order
than torch's (with the same properties).

May import: math, numpy, ``minitorch.distributed``, ``.sampler``.
"""
import math

import numpy as np

from ... import distributed as dist
from .sampler import Sampler


class DistributedSampler(Sampler):
    """The indices of rank ``rank``'s shard of ``dataset`` (``num_samples`` of them) for the
    current epoch; ``num_replicas`` and ``rank`` default to the process group's."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False):
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if not isinstance(num_replicas, int) or isinstance(num_replicas, bool) \
                or num_replicas < 1:
            raise ValueError(f"num_replicas should be a positive integer, got {num_replicas!r}")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, "
                             f"{num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = np.random.default_rng(self.seed + self.epoch).permutation(n).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """The epoch whose permutation the next pass draws (the same on every rank)."""
        self.epoch = epoch
