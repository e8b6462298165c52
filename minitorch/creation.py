"""Functions that make tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, ``randn``,
``rand``, ``randint``, ``eye``, ``linspace`` and the ``*_like`` variants, with PyTorch's
signatures (``dtype=``, ``requires_grad=``). Float tensors default to float32."""
import numbers

import numpy as np

from .dtype import as_dtype, float32, int64
from .random import generator
from .tensor import Tensor, _check_fits_int64


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    shape = []
    for n in size:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"size: expected a sequence of ints, got {size!r}")
        if n < 0:
            raise ValueError(f"size: negative dimension {n} in {tuple(size)}")
        shape.append(int(n))
    return tuple(shape)


def _finish(array, requires_grad):
    t = Tensor._make(array)
    return t.requires_grad_(requires_grad) if requires_grad else t


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    t = Tensor(data, dtype=dtype)
    return t.requires_grad_(True) if requires_grad else t


def as_tensor(data, dtype=None):
    if isinstance(data, Tensor) and (dtype is None or as_dtype(dtype) is data.dtype):
        return data
    return tensor(data, dtype=dtype)


def from_numpy(array):
    """A tensor sharing memory with ``array`` (float16/int32 etc. are converted, so copied).

    Differs from PyTorch: no uint64 dtype, so a uint64 array becomes int64, and one holding a
    value above int64's maximum raises ValueError (rather than wrapping around)."""
    if isinstance(array, (np.ndarray, np.generic)) and array.dtype.kind == "u":
        _check_fits_int64(array, np.asarray(array), True, "from_numpy")
    return Tensor._make(array)


def _filled(value, size, dtype, requires_grad):
    dtype = as_dtype(dtype) if dtype is not None else float32
    return _finish(np.full(_shape(size), value, dtype=dtype.numpy), requires_grad)


def zeros(*size, dtype=None, requires_grad=False, device=None):
    return _filled(0, size, dtype, requires_grad)


def ones(*size, dtype=None, requires_grad=False, device=None):
    return _filled(1, size, dtype, requires_grad)


def empty(*size, dtype=None, requires_grad=False, device=None):
    return _filled(0, size, dtype, requires_grad)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    if isinstance(fill_value, Tensor) and fill_value.numel() == 1:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (numbers.Real, np.bool_)):
        raise TypeError(f"full: fill_value must be a number (int, float or bool), got "
                        f"{type(fill_value).__name__}")
    if dtype is None:
        dtype = int64 if isinstance(fill_value, (int, np.integer)) and not isinstance(
            fill_value, bool) else ("bool" if isinstance(fill_value, bool) else float32)
    if as_dtype(dtype) is int64:
        _check_fits_int64(fill_value, None, True, "full")
    return _filled(fill_value, (tuple(size),), dtype, requires_grad)


def _like(fn):
    def like(t, dtype=None, requires_grad=False, device=None):
        return fn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)
    like.__name__ = fn.__name__ + "_like"
    return like


zeros_like, ones_like, empty_like = _like(zeros), _like(ones), _like(empty)


def full_like(t, fill_value, dtype=None, requires_grad=False, device=None):
    return full(tuple(t.shape), fill_value, dtype=dtype or t.dtype, requires_grad=requires_grad)


def arange(start, end=None, step=1, dtype=None, requires_grad=False, device=None):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = int64 if is_int else float32
    dtype = as_dtype(dtype)
    return _finish(np.arange(start, end, step).astype(dtype.numpy), requires_grad)


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    dtype = as_dtype(dtype) if dtype is not None else float32
    return _finish(np.linspace(start, end, steps).astype(dtype.numpy), requires_grad)


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    dtype = as_dtype(dtype) if dtype is not None else float32
    return _finish(np.eye(n, m, dtype=dtype.numpy), requires_grad)


def _random_float(draw, name):
    def make(*size, dtype=None, requires_grad=False, device=None):
        dtype = as_dtype(dtype) if dtype is not None else float32
        if not dtype.is_floating_point:
            raise TypeError(f"{name}: dtype must be floating point, got {dtype}")
        return _finish(draw(_shape(size)).astype(dtype.numpy), requires_grad)
    return make


def _normal(shape):
    return generator().standard_normal(shape)


def _uniform(shape):
    return generator().random(shape)


randn, rand = _random_float(_normal, "randn"), _random_float(_uniform, "rand")
randn.__name__, rand.__name__ = "randn", "rand"


def randn_like(t, dtype=None, requires_grad=False):
    return randn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def rand_like(t, dtype=None, requires_grad=False):
    return rand(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad)


def randint(low, high=None, size=None, dtype=None):
    if high is None:
        low, high = 0, low
    if size is None:
        raise TypeError("randint: size is required")
    dtype = as_dtype(dtype) if dtype is not None else int64
    return Tensor._make(generator().integers(low, high, _shape((tuple(size),))).astype(dtype.numpy))


def randperm(n, dtype=None):
    return Tensor._make(generator().permutation(n).astype(np.int64))


def multinomial(probs, num_samples, replacement=False):
    """Draw class indices from each row of ``probs`` (rows need not sum to 1)."""
    p = np.asarray(probs._data, dtype=np.float64)
    rows = p.reshape(-1, p.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise ValueError("multinomial: probabilities must be finite and non-negative")
    totals = rows.sum(-1, keepdims=True)
    if (totals <= 0).any():
        raise ValueError("multinomial: each row must have a positive sum")
    rows = rows / totals
    rng = generator()
    out = np.stack([rng.choice(rows.shape[-1], size=num_samples, replace=replacement, p=r)
                    for r in rows])
    return Tensor._make(out.reshape(p.shape[:-1] + (num_samples,)).astype(np.int64))
