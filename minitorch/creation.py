"""Functions that make tensors: ``tensor``, ``zeros``, ``ones``, ``full``, ``arange``, ``randn``,
``rand``, ``randint``, ``randperm``, ``eye``, ``linspace`` and the ``*_like`` variants, with
PyTorch's signatures (``dtype=``, ``device=``, ``requires_grad=``, ``generator=`` for the random
ones). Float tensors take the default dtype (``get_default_dtype()``: float32 unless changed);
``device`` names the CPU or, where ``minitorch.cuda.is_available()``, a GPU: the values are
made on the host (random ones by the host's generator, so a seed gives the same numbers on
either device) and copied there. The ``*_like`` functions take ``input``'s device by default.
May import: ``minitorch.tensor``, ``minitorch.dtype``, ``minitorch.device_arrays``,
``minitorch.random``.
"""
import numbers

import numpy as np

from .backends import tape as tapes
from .device_arrays import resolve, to_device, to_host
from .dtype import as_dtype, bool_, get_default_dtype, int64
from .random import numpy_generator
from .tensor import Tensor, _check_fits_int64, check_fits, parse_size

_shape = parse_size


def _finish(array, requires_grad, device=None, caller="tensor"):
    """A tensor of ``array`` (made on the host), on ``device``."""
    if device is not None:
        array = to_device(array, resolve(device, caller))
    t = Tensor._make(array)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _float_dtype(dtype):
    return get_default_dtype() if dtype is None else as_dtype(dtype)


def tensor(data, dtype=None, requires_grad=False, device=None):
    """A new tensor holding a copy of ``data`` (nested lists, numbers, arrays or tensors)."""
    t = Tensor(data, dtype=dtype)
    if tapes.recording() is not None:  # a captured step: the copy again, or a constant's values
        if isinstance(data, Tensor):
            tapes.replayed(np.copyto, t._data, data._data, "unsafe")
        else:
            tapes.constant(t._data)
    if device is not None:
        t = Tensor._make(to_device(t._data, resolve(device, "tensor")))
    return t.requires_grad_(True) if requires_grad else t


def as_tensor(data, dtype=None, device=None):
    if isinstance(data, Tensor) and (dtype is None or as_dtype(dtype) is data.dtype) and (
            device is None or resolve(device, "as_tensor") == data.device):
        return data
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A tensor sharing memory with ``array`` (a dtype minitorch lacks is converted, so copied).

    Differs from PyTorch: no uint16/uint32/uint64 dtypes, so those arrays become int32/int64/
    int64, and a uint64 one holding a value above int64's maximum raises ValueError (rather
    than wrapping around)."""
    if isinstance(array, (np.ndarray, np.generic)) and array.dtype.kind == "u":
        _check_fits_int64(array, np.asarray(array), True, "from_numpy")
    return Tensor._make(array)


def _filled(value, size, dtype, requires_grad, device, caller):
    dtype = _float_dtype(dtype)
    # (tapes.constant: a captured step's replay writes these values again, numbers not data)
    return _finish(tapes.constant(np.full(_shape(size), value, dtype=dtype.numpy)),
                   requires_grad, device, caller)


def zeros(*size, dtype=None, requires_grad=False, device=None):
    return _filled(0, size, dtype, requires_grad, device, "zeros")


def ones(*size, dtype=None, requires_grad=False, device=None):
    return _filled(1, size, dtype, requires_grad, device, "ones")


def empty(*size, dtype=None, requires_grad=False, device=None):
    """Zeros, in fact: minitorch never hands out uninitialised memory."""
    return _filled(0, size, dtype, requires_grad, device, "empty")


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    if isinstance(fill_value, Tensor) and fill_value.numel() == 1:
        fill_value = fill_value.item()
    if not isinstance(fill_value, (numbers.Real, np.bool_)):
        raise TypeError(f"full: fill_value must be a number (int, float or bool), got "
                        f"{type(fill_value).__name__}")
    if dtype is None:
        dtype = int64 if isinstance(fill_value, (int, np.integer)) and not isinstance(
            fill_value, bool) else (bool_ if isinstance(fill_value, bool) else None)
    dtype = _float_dtype(dtype)
    if dtype is int64 and not isinstance(fill_value, (float, np.floating)):
        _check_fits_int64(fill_value, None, True, "full")
    check_fits(fill_value, dtype, "full")
    return _filled(fill_value, (tuple(size),), dtype, requires_grad, device, "full")


def _like(fn):
    def like(input, dtype=None, requires_grad=False, device=None, memory_format=None):
        return fn(*input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad,
                  device=input.device if device is None else device)
    like.__name__ = like.__qualname__ = fn.__name__ + "_like"
    like.__doc__ = f"``{fn.__name__}`` of ``input``'s shape, and of its dtype unless ``dtype``."
    return like


zeros_like, ones_like, empty_like = _like(zeros), _like(ones), _like(empty)


def full_like(input, fill_value, dtype=None, requires_grad=False, device=None,
              memory_format=None):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype,
                requires_grad=requires_grad,
                device=input.device if device is None else device)


def arange(start=0, end=None, step=1, *, dtype=None, requires_grad=False, device=None):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if dtype is None:
        is_int = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
        dtype = int64 if is_int else None
    dtype = _float_dtype(dtype)
    values = np.arange(start, end, step)
    with np.errstate(over="ignore"):  # values past a narrow dtype's range wrap, as in PyTorch
        array = values.astype(dtype.numpy)
    return _finish(tapes.constant(array), requires_grad, device, "arange")


def linspace(start, end, steps, dtype=None, requires_grad=False, device=None):
    dtype = _float_dtype(dtype)
    return _finish(tapes.constant(np.linspace(start, end, steps).astype(dtype.numpy)),
                   requires_grad, device, "linspace")


def eye(n, m=None, dtype=None, requires_grad=False, device=None):
    dtype = _float_dtype(dtype)
    return _finish(tapes.constant(np.eye(n, m, dtype=dtype.numpy)), requires_grad, device, "eye")


def _random_float(draw, name):
    def make(*size, generator=None, dtype=None, requires_grad=False, device=None):
        dtype = _float_dtype(dtype)
        if not dtype.is_floating_point:
            raise TypeError(f"{name}: dtype must be floating point, got {dtype}")
        target = None if device is None else resolve(device, name)
        values = draw(numpy_generator(generator), _shape(size))
        return _finish(values.astype(dtype.numpy), requires_grad, target)
    make.__name__ = make.__qualname__ = name
    return make


def _normal(rng, shape):
    return rng.standard_normal(shape)


def _uniform(rng, shape):
    return rng.random(shape)


randn, rand = _random_float(_normal, "randn"), _random_float(_uniform, "rand")


def randn_like(input, generator=None, dtype=None, requires_grad=False, device=None,
               memory_format=None):
    return randn(*input.shape, generator=generator, dtype=dtype or input.dtype,
                 requires_grad=requires_grad, device=input.device if device is None else device)


def rand_like(input, generator=None, dtype=None, requires_grad=False, device=None,
              memory_format=None):
    return rand(*input.shape, generator=generator, dtype=dtype or input.dtype,
                requires_grad=requires_grad,
                device=input.device if device is None else device)


def randint(low=0, high=None, size=None, generator=None, dtype=None, device=None,
            requires_grad=False):
    """Integers drawn uniformly from [low, high): ``randint(high, size)`` or ``randint(low, high,
    size)`` (or by keyword), as ``torch.randint``; int64 unless ``dtype``."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=...)
        low, high = 0, low
    if size is None:
        raise TypeError("randint: size is required")
    dtype = int64 if dtype is None else as_dtype(dtype)
    target = None if device is None else resolve(device, "randint")
    if requires_grad and not dtype.is_floating_point:
        raise RuntimeError(f"randint: only tensors of floating point dtype can require "
                           f"gradients, got {dtype}")
    if not low < high:
        raise ValueError(f"randint: expected low < high, got low={low}, high={high}")
    values = numpy_generator(generator).integers(low, high, _shape((tuple(size),)))
    return _finish(values.astype(dtype.numpy), requires_grad, target)


def randint_like(input, low=0, high=None, generator=None, dtype=None, device=None,
                 requires_grad=False, memory_format=None):
    """``randint`` of ``input``'s shape and dtype: ``randint_like(input, high)`` or
    ``randint_like(input, low, high)``."""
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), generator=generator,
                   dtype=dtype or input.dtype, device=input.device if device is None else device,
                   requires_grad=requires_grad)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    dtype = int64 if dtype is None else as_dtype(dtype)
    target = None if device is None else resolve(device, "randperm")
    return _finish(numpy_generator(generator).permutation(n).astype(dtype.numpy), requires_grad,
                   target)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Draw class indices from each row of ``input``, probabilities that need not sum to 1."""
    p = to_host(input._data).astype(np.float64)
    rows = p.reshape(-1, p.shape[-1])
    if (rows < 0).any() or not np.isfinite(rows).all():
        raise ValueError("multinomial: probabilities must be finite and non-negative")
    totals = rows.sum(-1, keepdims=True)
    if (totals <= 0).any():
        raise ValueError("multinomial: each row must have a positive sum")
    rows = rows / totals
    rng = numpy_generator(generator)
    out = np.stack([rng.choice(rows.shape[-1], size=num_samples, replace=replacement, p=r)
                    for r in rows])
    out = out.reshape(p.shape[:-1] + (num_samples,)).astype(np.int64)
    return Tensor._make(to_device(out, input.device))
