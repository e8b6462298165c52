"""PyTorch's legacy tensor types: ``FloatTensor``, ``DoubleTensor``, ``HalfTensor``,
``BFloat16Tensor``, ``LongTensor``, ``IntTensor``, ``ShortTensor``, ``CharTensor``,
``ByteTensor``, ``BoolTensor``.

Each is a constructor, as in PyTorch: ``LongTensor([1, 2])`` (data, converted to the type's
dtype), ``FloatTensor(2, 3)`` or ``FloatTensor(Size([2, 3]))`` (a shape: zeros, where PyTorch
leaves the memory uninitialised), ``LongTensor()`` (empty). And a type test:
``isinstance(x, minitorch.FloatTensor)`` is true for a float32 tensor, whatever its class
(a Parameter too), as in PyTorch. ``x.type(minitorch.LongTensor)`` casts to it.
May import: ``minitorch.tensor``, ``minitorch.dtype``, ``minitorch.device``.
"""
import numpy as np

from .dtype import (bfloat16, bool_, dtype, float16, float32, float64, int8, int16, int32, int64,
                    uint8)
from .device import check_device
from .tensor import Size, Tensor, parse_size


class _LegacyTensorType(type):
    """The metaclass: instances of a legacy type are the Tensors of its dtype."""

    dtype: dtype

    def __instancecheck__(cls, instance):
        return isinstance(instance, Tensor) and instance.dtype is cls.dtype

    def __call__(cls, *args, device=None):
        check_device(device, cls.__name__)
        if len(args) == 1 and not _is_size(args[0]):
            return Tensor(args[0], dtype=cls.dtype)  # data
        shape = parse_size(args) if args else (0,)
        return Tensor._make(np.zeros(shape, dtype=cls.dtype.numpy))

    def __repr__(cls):
        return f"<class 'minitorch.{cls.__name__}'>"


def _is_size(arg):
    """An int or a Size is a shape; a list, tuple, array or tensor is data (as in PyTorch,
    where ``FloatTensor((2, 3))`` is the tensor [2., 3.])."""
    return isinstance(arg, Size) or isinstance(arg, (int, np.integer)) and not isinstance(
        arg, (bool, np.bool_))


def _legacy_type(of):
    return _LegacyTensorType(of.tensor_type, (), {
        "dtype": of, "__module__": "minitorch",
        "__doc__": f"The tensors of dtype minitorch.{of.name}, as torch.{of.tensor_type}."})


FloatTensor = _legacy_type(float32)
DoubleTensor = _legacy_type(float64)
HalfTensor = _legacy_type(float16)
BFloat16Tensor = _legacy_type(bfloat16)
LongTensor = _legacy_type(int64)
IntTensor = _legacy_type(int32)
ShortTensor = _legacy_type(int16)
CharTensor = _legacy_type(int8)
ByteTensor = _legacy_type(uint8)
BoolTensor = _legacy_type(bool_)
