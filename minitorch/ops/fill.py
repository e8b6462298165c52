"""In-place fills that carry no gradient: ``zero_``, ``fill_``, ``uniform_``, ``normal_``.

They overwrite the values (bumping the version counter, so autograd notices if a saved tensor
was overwritten) and leave the tensor's history as it was, as in PyTorch.
"""
import numpy as np

from ..backends import tape as tapes
from ..random import numpy_generator
from ..tensor import Tensor, check_fits
from .registry import check_inplace, tensor_method, write_inplace


def _write(tensor, values):
    check_inplace(tensor)
    array = np.asarray(values, dtype=tensor._data.dtype)
    if not isinstance(values, np.ndarray):  # a number: a constant of a captured step
        array = tapes.constant(array)
    return write_inplace(tensor, Tensor._make(np.broadcast_to(array, tensor._data.shape)))


@tensor_method("zero_")
def zero_(self):
    return _write(self, 0)


@tensor_method("fill_")
def fill_(self, value):
    """Every element set to ``value`` (a number or a 0-d tensor); a Python number that the
    dtype cannot hold raises RuntimeError, as in PyTorch."""
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise RuntimeError(f"fill_: only supports a 0-dimension value tensor, but got one "
                               f"with {value.ndim} dimension(s)")
        value = value._data.reshape(())
    else:
        check_fits(value, self.dtype, "fill_")
    return _write(self, value)


@tensor_method("uniform_")
def uniform_(self, *bounds, generator=None, **names):
    """Uniform values in [from, to): ``uniform_(0, 1)`` or PyTorch's ``uniform_(**{"from": 0,
    "to": 1})`` (``from`` is a Python keyword, so it can only come by ``**``)."""
    low, high = _bounds(bounds, names)
    return _write(self, numpy_generator(generator).uniform(low, high, self.shape))


def _bounds(bounds, names):
    if len(bounds) > 2 or set(names) - {"from", "to"}:
        raise TypeError(f"uniform_: expected (from=0, to=1), got {bounds} and {sorted(names)}")
    low, high = (tuple(bounds) + (0.0, 1.0)[len(bounds):])
    return names.get("from", low), names.get("to", high)


@tensor_method("normal_")
def normal_(self, mean=0.0, std=1.0, *, generator=None):
    return _write(self, numpy_generator(generator).normal(mean, std, self.shape))
