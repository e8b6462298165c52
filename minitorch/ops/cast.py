"""Changes of dtype: the ``Cast`` Function and the Tensor methods ``to``, ``float``,
``double``, ``long``, ``bool`` and ``type_as``.

A float-to-float cast of a tensor that requires grad is a node of the graph (its gradient is
cast back); every other cast is a plain copy with no history, as in PyTorch.
"""
from ..autograd.function import Function
from ..dtype import as_dtype, bool_, float32, float64, int64
from ..tensor import Tensor
from .registry import tensor_method


class Cast(Function):
    """Change of dtype; the gradient is cast back (float to float only carries a gradient)."""

    @staticmethod
    def forward(ctx, a, dtype):
        ctx.dtype = a.dtype
        return Tensor._make(a._data.astype(dtype.numpy))

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.dtype), None


@tensor_method("to")
def to(self, dtype=None, *args, **kwargs):
    """``.to(dtype)``; a device argument is accepted for ``"cpu"`` only."""
    if dtype in ("cpu", None) and not args:
        dtype = kwargs.get("dtype")
        if dtype is None:
            return self
    if isinstance(dtype, str) and dtype not in ("float32", "float64", "int64", "bool"):
        if dtype != "cpu":
            raise ValueError(f"to: minitorch runs on the CPU only, got device {dtype!r}")
        dtype = args[0] if args else kwargs.get("dtype")
        if dtype is None:
            return self
    dtype = as_dtype(dtype)
    if dtype is self.dtype:
        return self
    if self.requires_grad and dtype.is_floating_point and self.dtype.is_floating_point:
        return Cast.apply(self, dtype)
    return Tensor._make(self._data.astype(dtype.numpy))


def _cast_method(name, dtype):
    def cast(self):
        return to(self, dtype)
    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"``self.to({dtype})``."
    return cast


for _name, _dtype in (("float", float32), ("double", float64), ("long", int64), ("bool", bool_)):
    tensor_method(_name)(_cast_method(_name, _dtype))


@tensor_method("type_as")
def type_as(self, other):
    return to(self, other.dtype)
