"""``default_collate``: how a ``DataLoader`` turns a list of samples into one batch, as
``torch.utils.data.default_collate``; ``default_convert`` for loading without batching.

The batch has the samples' structure with each leaf stacked along a new first dimension:

    tensors                 -> minitorch.stack(samples)
    numpy arrays            -> tensors, then stacked (string/object arrays: TypeError)
    numpy scalars           -> a tensor of them (numpy's dtype, mapped onto minitorch's)
    floats / ints / bools   -> a float64 / int64 / bool tensor
    str, bytes              -> the list, as is
    dicts (Mappings)        -> the same keys, each collated over the samples
    namedtuples             -> the same namedtuple, field by field
    tuples                  -> a *list* of collated fields (PyTorch's choice, kept)
    lists (Sequences)       -> the same type, position by position; sizes must agree

``collate(batch, collate_fn_map=...)`` is the engine, and ``default_collate_fn_map`` (type ->
function) the table ``default_collate`` uses: a custom collate can extend a copy of it for
its own types, as in PyTorch.

May import: collections, copy, re, numpy, ``minitorch.tensor``, ``minitorch.creation``,
``minitorch.ops``.
"""
import collections.abc
import copy
import re

import numpy as np

from ...creation import from_numpy, tensor
from ...dtype import float64
from ...ops.shape import stack
from ...tensor import Tensor

# numpy dtypes that hold strings or Python objects, which no tensor can (numpy's dtype.str)
_STRING_OR_OBJECT = re.compile(r"[SaUO]")

ERROR_FORMAT = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found {}")


def collate(batch, *, collate_fn_map=None):
    """Collate ``batch`` (a list of samples) by the structure of its first sample.

    ``collate_fn_map`` maps a type (or a tuple of types) to ``fn(batch, *, collate_fn_map)``,
    tried for the exact type of the first sample, then by ``isinstance`` in order; containers
    are handled here and recurse with the same map.
    """
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    def recurse(samples):
        return collate(samples, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        collated = {key: recurse([sample[key] for sample in batch]) for key in elem}
        return _same_kind_of_mapping(elem, collated)
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return elem_type(*(recurse(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))  # tuples: str fields come back as tuples, as PyTorch's
        if isinstance(elem, tuple):
            return [recurse(samples) for samples in transposed]
        return _same_kind_of_sequence(elem, [recurse(samples) for samples in transposed])
    raise TypeError(ERROR_FORMAT.format(elem_type))


def _same_kind_of_mapping(elem, items):
    """``items`` in a mapping of ``elem``'s type where it can be made, else a dict."""
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)  # keeps the type's extra attributes
            clone.update(items)
            return clone
        return type(elem)(items)
    except TypeError:
        return items


def _same_kind_of_sequence(elem, items):
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for index, item in enumerate(items):
                clone[index] = item
            return clone
        return type(elem)(items)
    except TypeError:  # a sequence type that cannot be built from a list (range, ...)
        return items


def collate_tensor_fn(batch, *, collate_fn_map=None):
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(ERROR_FORMAT.format(batch[0].dtype))
    return collate([from_numpy(np.asarray(b)) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return from_numpy(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {
    Tensor: collate_tensor_fn,
    np.ndarray: collate_numpy_array_fn,
    (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
    float: collate_float_fn,
    int: collate_int_fn,
    str: collate_str_fn,
    bytes: collate_str_fn,
}


def default_collate(batch):
    """One batch from a list of samples (see the module's table); the ``DataLoader``'s
    ``collate_fn`` unless another is given."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """One sample's numpy arrays (and numpy scalars) as tensors, everything else as it is,
    through dicts, namedtuples and sequences: the ``collate_fn`` when batching is off
    (``batch_size=None``)."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, (np.ndarray, np.bool_, np.number)):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str):
            return data
        return from_numpy(np.asarray(data))
    if isinstance(data, collections.abc.Mapping):
        return _same_kind_of_mapping(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _same_kind_of_sequence(data, [default_convert(d) for d in data])
    return data
