"""Changes of dtype and of device: the ``Cast`` and ``ToDevice`` Functions and the Tensor methods
``to``, ``type``, ``type_as`` and the named casts ``float``, ``double``, ``half``, ``bfloat16``,
``long``, ``int``, ``short``, ``char``, ``byte``, ``bool``.

A float-to-float cast of a tensor that requires grad is a node of the graph (its gradient is
cast back); every other cast is a plain copy with no history, as in PyTorch. A cast that
changes nothing returns the tensor itself (unless ``copy=True``), as in PyTorch. A move to
another device is a node of the graph too: the gradient moves back.
"""
import functools

import numpy as np

from ..autograd.function import Function
from ..backends import tape as tapes
from ..device import parse_to
from ..device_arrays import resolve, to_device
from ..dtype import (_BY_TENSOR_TYPE, as_dtype, bfloat16, bool_, float16, float32, float64,
                     int8, int16, int32, int64, uint8)
from ..tensor import Tensor
from .registry import tensor_method


class Cast(Function):
    """Change of dtype; the gradient is cast back (float to float only carries a gradient)."""

    @staticmethod
    def forward(ctx, a, dtype):
        ctx.dtype = a.dtype
        return Tensor._make(_astype(a._data, dtype.numpy))

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype), None


class ToDevice(Function):
    """A copy on another device; the gradient is copied back to the input's device."""

    @staticmethod
    def forward(ctx, a, target):
        ctx.source = a.device
        return Tensor._make(to_device(a._data, target))

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.source), None


def _cast(tensor, dtype, copy=False):
    dtype = as_dtype(dtype)
    if dtype is tensor.dtype:
        return tensor.clone() if copy else tensor
    if tensor.requires_grad and dtype.is_floating_point and tensor.dtype.is_floating_point:
        return Cast.apply(tensor, dtype)
    return Tensor._make(_astype(tensor._data, dtype.numpy))


def _astype(array, dtype):
    """``array.astype(dtype)``; on a capture's tape, cast again on each replay."""
    out = array.astype(dtype)
    if tapes.recording() is not None:
        tapes.replayed(functools.partial(np.copyto, casting="unsafe"), out, array)
    return out


@tensor_method("to")
def to(self, *args, **kwargs):
    """``to(dtype)``, ``to(device, dtype=None)``, ``to(other)`` (other's device and dtype), each
    with ``non_blocking`` and ``copy``, as ``torch.Tensor.to``."""
    device, dtype, copy = parse_to(args, kwargs, "to")
    target = None if device is None else resolve(device, "to")
    moves = target is not None and target != self.device
    result = self if dtype is None else _cast(self, dtype, copy and not moves)
    if moves:
        return ToDevice.apply(result, target)
    return result.clone() if copy and result is self else result


@tensor_method("type")
def type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, the legacy type name (``"minitorch.FloatTensor"``, PyTorch's
    ``"torch.FloatTensor"``); else a cast to ``dtype``: a dtype, a legacy type
    (``minitorch.LongTensor``) or its name (``"torch.LongTensor"`` works too)."""
    if dtype is None:
        return f"minitorch.{self.dtype.tensor_type}"
    if isinstance(dtype, str):
        package, _, name = dtype.rpartition(".")
        if package not in ("minitorch", "torch") or name not in _BY_TENSOR_TYPE:
            raise ValueError(f"type: invalid type {dtype!r} (expected a dtype or a name such "
                             f"as 'minitorch.FloatTensor')")
        dtype = _BY_TENSOR_TYPE[name]
    return _cast(self, dtype)


def _cast_method(name, dtype):
    def cast(self, memory_format=None):
        return _cast(self, dtype)
    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"``self.to(minitorch.{dtype.name})``."
    return cast


for _name, _dtype in (("float", float32), ("double", float64), ("half", float16),
                      ("bfloat16", bfloat16), ("long", int64), ("int", int32), ("short", int16),
                      ("char", int8), ("byte", uint8), ("bool", bool_)):
    tensor_method(_name)(_cast_method(_name, _dtype))


@tensor_method("type_as")
def type_as(self, other):
    return _cast(self, other.dtype)
