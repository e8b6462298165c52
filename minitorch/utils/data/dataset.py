"""Datasets, as ``torch.utils.data``'s: what a ``DataLoader`` draws samples from.

A map-style ``Dataset`` has ``__getitem__(index)`` and ``__len__``; an ``IterableDataset`` has
``__iter__`` (a stream: a file read line by line, a generator). Combinators: ``TensorDataset``
(rows of tensors sharing their first dimension), ``ConcatDataset`` (``a + b``), ``ChainDataset``
(iterable ones one after the other), ``StackDataset`` (samples zipped into tuples or dicts),
``Subset`` and ``random_split`` (disjoint random subsets, by counts or fractions).

Differs from PyTorch: a size mismatch or an empty list raises ValueError, where PyTorch raises
AssertionError.

May import: bisect, itertools, math, typing, warnings, ``minitorch.random``.
"""
import bisect
import itertools
import math
import warnings
from typing import Generic, TypeVar

from ...random import numpy_generator

T_co = TypeVar("T_co", covariant=True)  # the type of a sample: Dataset[int], as in PyTorch


class Dataset(Generic[T_co]):
    """A map-style dataset: subclasses define ``__getitem__`` (and usually ``__len__``).

    A subclass may also define ``__getitems__(indices)``, returning the list of samples at once;
    the ``DataLoader`` then calls it for a batch instead of ``__getitem__`` per index.
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A dataset that is a stream: subclasses define ``__iter__``. ``a + b`` chains two."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample ``i`` is ``tuple(t[i] for t in tensors)``: features and labels row by row."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: expected at least one tensor")
        sizes = [len(t) for t in tensors]
        if any(size != sizes[0] for size in sizes):
            raise ValueError(f"Size mismatch between tensors: the first dimensions are {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(tensor[index] for tensor in self.tensors)

    def __len__(self):
        return len(self.tensors[0])


class StackDataset(Dataset):
    """Datasets of one length zipped: sample ``i`` is ``tuple(d[i] for d in args)``, or
    ``{name: d[i]}`` when the datasets are given by keyword."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("StackDataset: give the datasets either by position (samples are "
                             "tuples) or by keyword (samples are dicts), not both")
        datasets = args or kwargs
        if not datasets:
            raise ValueError("StackDataset: at least one dataset should be passed")
        lengths = [len(d) for d in (args or kwargs.values())]
        if any(length != lengths[0] for length in lengths):
            raise ValueError(f"Size mismatch between datasets: their lengths are {lengths}")
        self.datasets = datasets
        self._length = lengths[0]

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: dataset[index] for name, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Map-style datasets one after the other; ``cumulative_sizes[k]`` is where the ``k+1``-th
    starts."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for index, dataset in enumerate(self.datasets):
            if isinstance(dataset, IterableDataset):
                raise ValueError(f"ConcatDataset does not support IterableDataset (datasets"
                                 f"[{index}] is one): use ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: index {idx} is out of range for a dataset of "
                                 f"length {len(self)}")
            idx = len(self) + idx
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = 0 if which == 0 else self.cumulative_sizes[which - 1]
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of "
                             f"length {len(self)}")
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset[T_co]):
    """Iterable datasets streamed one after the other (made lazily: each is iterated when the
    previous one is exhausted)."""

    def __init__(self, datasets):
        self.datasets = datasets

    def _checked(self):
        for index, dataset in enumerate(self.datasets):
            if not isinstance(dataset, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, but datasets"
                                f"[{index}] is a {type(dataset).__name__}")
            yield dataset

    def __iter__(self):
        for dataset in self._checked():
            yield from dataset

    def __len__(self):
        return sum(len(dataset) for dataset in self._checked())


class Subset(Dataset[T_co]):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices
        if type(self).__getitem__ is not Subset.__getitem__ \
                and type(self).__getitems__ is Subset.__getitems__:
            # the DataLoader calls __getitems__, which would bypass the override
            raise NotImplementedError(f"{type(self).__name__} overrides __getitem__ but not "
                                      "__getitems__: override both, e.g. def __getitems__(self, "
                                      "indices): return [self[i] for i in indices]")

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split ``dataset`` into disjoint random ``Subset``s of the given ``lengths``.

    ``lengths`` are counts summing to ``len(dataset)``, or fractions summing to 1: each split
    then gets ``floor(len * fraction)`` items and the remainder is dealt out one by one from
    the first split on, as PyTorch does. ``generator`` (a ``minitorch.Generator``) makes the
    split reproducible on its own; None draws from the global generator (``manual_seed``).
    """
    lengths = list(lengths)
    total = len(dataset)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for index, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: the fraction at index {index} is not between 0 "
                                 f"and 1, got {fraction}")
            counts.append(math.floor(total * fraction))
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        for index, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {index} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
        lengths = counts
    for index, length in enumerate(lengths):
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise ValueError(f"random_split: lengths[{index}] must be a non-negative int (or "
                             f"all lengths fractions summing to 1), got {length!r}")
    if sum(lengths) != total:
        raise ValueError(f"Sum of input lengths does not equal the length of the input dataset! "
                         f"(lengths sum to {sum(lengths)}, the dataset has {total})")
    indices = numpy_generator(generator).permutation(total).tolist()
    return [Subset(dataset, indices[end - length:end])
            for end, length in zip(itertools.accumulate(lengths), lengths)]
