"""Loading data in batches, as ``torch.utils.data``.

- ``dataset.py``: ``Dataset``, ``IterableDataset``, ``TensorDataset``, ``StackDataset``,
  ``ConcatDataset``, ``ChainDataset``, ``Subset``, ``random_split``
- ``sampler.py``: ``Sampler``, ``SequentialSampler``, ``RandomSampler``,
  ``SubsetRandomSampler``, ``WeightedRandomSampler``, ``BatchSampler``
- ``distributed.py``: ``DistributedSampler`` (each rank of a data-parallel job its shard)
- ``collate.py``: ``default_collate``, ``default_convert``
- ``dataloader.py``: ``DataLoader`` (always in the main process), ``get_worker_info``

A typical loop::

    from minitorch.utils.data import DataLoader, TensorDataset
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                        generator=minitorch.Generator().manual_seed(0))
    for xb, yb in loader: ...

May import: ``minitorch.tensor``, ``minitorch.creation``, ``minitorch.ops``,
``minitorch.random``, ``minitorch.distributed``, numpy.
"""
from .collate import default_collate, default_convert
from .dataloader import DataLoader, get_worker_info
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset,
                      TensorDataset, random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler,
                      SubsetRandomSampler, WeightedRandomSampler)

__all__ = ["DataLoader", "Dataset", "IterableDataset", "TensorDataset", "StackDataset",
           "ConcatDataset", "ChainDataset", "Subset", "random_split", "Sampler",
           "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler", "default_collate", "default_convert", "get_worker_info",
           "DistributedSampler"]
