"""Tensor element types: minitorch.float32 (the default), float64, int64 and bool.

A ``dtype`` wraps a numpy dtype with PyTorch's name and repr, so that ``x.dtype`` prints
``minitorch.float32`` and compares equal to the object users pass in.
"""
import numpy as np


class dtype:
    """One element type. Compare with ``==``; ``.numpy`` is the numpy dtype behind it."""

    def __init__(self, name, numpy_dtype, is_floating_point):
        self.name = name
        self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = is_floating_point

    def __repr__(self):
        return f"minitorch.{self.name}"

    def __reduce__(self):  # keep dtypes singletons under copy/deepcopy
        return (as_dtype, (self.name,))


float32 = dtype("float32", np.float32, True)
float64 = dtype("float64", np.float64, True)
int64 = dtype("int64", np.int64, False)
bool_ = dtype("bool", np.bool_, False)

_BY_NUMPY = {d.numpy: d for d in (float32, float64, int64, bool_)}
_BY_NAME = {"float32": float32, "float": float32, "float64": float64, "double": float64,
            "int64": int64, "long": int64, "bool": bool_}


def as_dtype(value):
    """minitorch dtype for a dtype, a numpy dtype, a Python type or a name; TypeError otherwise."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str) and value in _BY_NAME:
        return _BY_NAME[value]
    if value is float:
        return float32
    if value is int:
        return int64
    if value is bool:
        return bool_
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"dtype: expected a minitorch dtype, got {value!r}") from None
    if np_dtype in _BY_NUMPY:
        return _BY_NUMPY[np_dtype]
    if np_dtype.kind in "iu":
        return int64
    if np_dtype.kind == "f":
        return float32 if np_dtype.itemsize <= 4 else float64
    raise TypeError(f"dtype: unsupported element type {np_dtype} (minitorch has float32, float64, "
                    "int64 and bool)")
