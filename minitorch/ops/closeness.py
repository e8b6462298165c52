"""Approximate equality: ``isclose`` (elementwise, a bool tensor) and ``allclose`` (a Python
bool), as PyTorch's.

``input`` is close to ``other`` where they are equal (infinities of one sign included) or where
|input - other| <= atol + rtol · |other|, finite, computed in the inputs' dtype (in float32 for
integers, as PyTorch's default dtype). NaN is close to NaN only with ``equal_nan``. The test is
not symmetric: ``other`` scales the tolerance. No gradient: the results are bools.
May import: ``minitorch.tensor``, ``minitorch.autograd`` and the sibling op modules.
"""
import numpy as np

from ..device_arrays import as_array
from ..tensor import Tensor
from .registry import op


def _check(input, other, rtol, atol, name):
    for label, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {label} must be a Tensor, got {type(t).__name__}")
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{name}: input ({input.dtype}) and other ({other.dtype}) must have "
                           "the same dtype")
    for label, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{name}: {label} must be greater than or equal to zero, but got "
                               f"{value}")
    try:
        np.broadcast_shapes(tuple(input.shape), tuple(other.shape))
    except ValueError:
        raise RuntimeError(f"{name}: shape of input {tuple(input.shape)} and shape of other "
                           f"{tuple(other.shape)} do not broadcast") from None


@op()
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise: |input - other| <= atol + rtol · |other|, or equal (a bool tensor)."""
    _check(input, other, rtol, atol, "isclose")
    x, y = input._data, other._data
    close = x == y
    if equal_nan and input.dtype.is_floating_point:
        close = close | (np.isnan(x) & np.isnan(y))
    if rtol == 0 and atol == 0:
        return Tensor._make(as_array(close, x))
    if input.dtype.name == "bool":
        x, y = x.astype(np.float32), y.astype(np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        error = np.abs(x - y)
        if not input.dtype.is_floating_point:  # integer gaps are compared in PyTorch's default
            error, y = error.astype(np.float32), y.astype(np.float32)  # dtype, float32
        allowed = y.dtype.type(atol) + np.abs(y.dtype.type(rtol) * y)
        close = close | (np.isfinite(error) & (error <= allowed))
    return Tensor._make(as_array(close, x))


@op()
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if ``isclose`` holds for every element (a Python bool)."""
    return bool(np.all(isclose(input, other, rtol, atol, equal_nan)._data))
