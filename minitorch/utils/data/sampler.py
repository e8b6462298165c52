"""Samplers, as ``torch.utils.data``'s: the order in which a ``DataLoader`` visits indices.

``SequentialSampler`` (0, 1, 2, ...), ``RandomSampler`` (a permutation per pass, or draws with
replacement), ``SubsetRandomSampler`` (a permutation of given indices),
``WeightedRandomSampler`` (index ``i`` with probability ``weights[i] / sum(weights)``) and
``BatchSampler``, which groups another sampler's indices into lists of ``batch_size``.

The random ones draw from their ``generator`` (a ``minitorch.Generator``) if given; without one
each pass draws a fresh seed from the global generator, so ``minitorch.manual_seed`` fixes the
order of every epoch. Differs from PyTorch: the numbers come from numpy's PCG64, so the same
seed gives another order than torch's (the order's properties are the same).

May import: itertools, typing, numpy, ``minitorch.random``.
"""
import itertools
from typing import Generic, TypeVar

import numpy as np

from ... import random as _random


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` (the indices) and usually ``__len__``."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


def _pass_generator(generator):
    """The numpy generator for one pass: ``generator``'s own, or one seeded from the global
    generator (so the pass's order does not depend on who else draws from it meanwhile)."""
    if generator is not None:
        return _random.numpy_generator(generator)
    return np.random.default_rng(int(_random.generator().integers(0, 2 ** 63 - 1)))


def _is_positive_int(value):
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0


class SequentialSampler(Sampler):
    """``0, 1, ..., len(data_source) - 1``."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the indices each pass; ``num_samples`` longer than the dataset
    chains several permutations. With ``replacement``, ``num_samples`` independent uniform
    draws."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got "
                            f"replacement={replacement!r}")
        if not _is_positive_int(self.num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples!r}")

    @property
    def num_samples(self):
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if n == 0:
            raise ValueError("RandomSampler: cannot sample from an empty data_source")
        rng = _pass_generator(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given ``indices`` in a random order, a new one each pass (no replacement)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _pass_generator(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probability ``weights[i] / sum(weights)``; without
    ``replacement`` each index comes at most once."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not _is_positive_int(num_samples):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples!r}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got "
                             f"replacement={replacement!r}")
        weights = np.asarray(weights.numpy() if hasattr(weights, "numpy") else weights,
                             dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights.shape)}")
        if not (np.all(np.isfinite(weights)) and np.all(weights >= 0) and weights.sum() > 0):
            raise ValueError("weights must be finite and non-negative, with a positive sum")
        if not replacement and num_samples > np.count_nonzero(weights):
            raise ValueError(f"cannot draw num_samples={num_samples} indices without "
                             f"replacement from {np.count_nonzero(weights)} non-zero weights")
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = _pass_generator(self.generator)
        drawn = rng.choice(len(self.weights), size=self.num_samples, replace=self.replacement,
                           p=self.weights / self.weights.sum())
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Lists of ``batch_size`` consecutive indices of ``sampler``; the last, shorter one is
    dropped with ``drop_last``."""

    def __init__(self, sampler, batch_size, drop_last):
        if not _is_positive_int(batch_size):
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size!r}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got "
                             f"drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        batch = list(itertools.islice(indices, self.batch_size))
        while batch and (len(batch) == self.batch_size or not self.drop_last):
            yield batch
            batch = list(itertools.islice(indices, self.batch_size))

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
