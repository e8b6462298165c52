"""``DataLoader``: batches from a dataset, as ``torch.utils.data.DataLoader``.

One pass over a loader is::

    for indices in batch_sampler:                # e.g. BatchSampler(RandomSampler(dataset), 32)
        samples = [dataset[i] for i in indices]  # or dataset.__getitems__(indices)
        yield collate_fn(samples)                # default_collate: stacked tensors

For an ``IterableDataset`` the samples come from ``iter(dataset)`` instead, ``batch_size`` at
a time. ``batch_size=None`` turns batching off: each sample goes through ``default_convert``.

Differs from PyTorch: loading always runs in the main process. ``num_workers > 0`` is accepted
and changes nothing (the batches and their order are those of ``num_workers=0``, as PyTorch's
``in_order=True`` delivers them); ``worker_init_fn`` is then never called, and
``get_worker_info()`` is always None, so an ``IterableDataset`` that shards itself by worker
yields all of its data once. ``pin_memory``, ``timeout``, ``prefetch_factor``,
``persistent_workers`` are checked as PyTorch checks them and otherwise have no effect.

May import: itertools, math, typing, ``minitorch.utils.data`` (collate, dataset, sampler).
"""
import itertools
import math
from typing import Generic, TypeVar

from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


T_co = TypeVar("T_co", covariant=True)


def get_worker_info():
    """Information about the loader's worker process inside one; minitorch loads in the main
    process, so always None (as PyTorch in the main process)."""
    return None


class DataLoader(Generic[T_co]):
    """Iterate over ``dataset`` in batches; ``len(loader)`` is the number of batches.

    ``shuffle=True`` draws a new permutation each epoch (from ``generator``, a
    ``minitorch.Generator``, or else from the global generator); ``sampler`` or
    ``batch_sampler`` give the order instead; ``drop_last`` drops a last, short batch;
    ``collate_fn`` replaces ``default_collate``.
    """

    _initialized = False
    _FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                         "persistent_workers")

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers,
                              multiprocessing_context)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order
        self.persistent_workers = persistent_workers

        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle!r}")
            for name, value in (("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value is not None:
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified "
                                     f"{name} option, but got {name}={value!r}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()  # one None per sample read from the stream
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, name, value):
        if self._initialized and name in self._FIXED_AFTER_INIT:
            raise ValueError(f"{name} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        return _DataLoaderIterator(self)

    def __len__(self):
        if self._iterable:
            length = len(self.dataset)  # TypeError if the stream has no length, as PyTorch
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last \
                    else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers,
                          multiprocessing_context):
    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
        raise ValueError(f"num_workers option should be a non-negative int; use num_workers=0 "
                         f"to disable multiprocessing (got {num_workers!r})")
    if timeout < 0:
        raise ValueError(f"timeout option should be non-negative, got {timeout!r}")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing: "
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError(f"prefetch_factor option should be non-negative, got "
                         f"{prefetch_factor!r}")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")
    if multiprocessing_context is not None and num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading "
                         "(num_workers > 0), but got num_workers=0")


class _InfiniteConstantSampler(Sampler):
    """None, forever: the sampler of an ``IterableDataset``, whose stream decides the end."""

    def __iter__(self):
        while True:
            yield None


class _DataLoaderIterator:
    """One pass over a ``DataLoader`` (what ``iter(loader)`` returns)."""

    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._collate_fn = loader.collate_fn
        self._auto_collation = loader._auto_collation
        self._indices = iter(loader._index_sampler)
        self._stream = iter(loader.dataset) if loader._iterable else None

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._loader)

    def __next__(self):
        index = next(self._indices)
        if self._stream is not None:
            if not self._auto_collation:
                return self._collate_fn(next(self._stream))
            samples = list(itertools.islice(self._stream, len(index)))
            if not samples or (self._loader.drop_last and len(samples) < len(index)):
                raise StopIteration
            return self._collate_fn(samples)
        if not self._auto_collation:
            return self._collate_fn(self._dataset[index])
        get_items = getattr(self._dataset, "__getitems__", None)
        samples = get_items(index) if callable(get_items) \
            else [self._dataset[i] for i in index]
        return self._collate_fn(samples)
