"""Helpers shared by the op families: scalar wrapping, type promotion, gradient un-broadcasting,
and the checking of ``dim`` arguments."""
import numpy as np

from ..dtype import bool_, float32, float64, int64
from ..tensor import Tensor, normalize_dim  # noqa: F401  (the ops import it from here)


def promote_types(a, b):
    """PyTorch's rule for two tensor dtypes: bool < int64 < float32 < float64."""
    order = {bool_: 0, int64: 1, float32: 2, float64: 3}
    return a if order[a] >= order[b] else b


def as_operands(a, b):
    """Two Tensors of one dtype from tensors and Python scalars, promoting like PyTorch.

    A Python number is "weak": it takes the tensor's dtype unless its kind is higher
    (``int_tensor * 0.5`` is float32, ``float64_tensor + 1`` stays float64).
    """
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        target = promote_types(a.dtype, b.dtype)
    elif isinstance(a, Tensor):
        target = _with_scalar(a.dtype, b)
    elif isinstance(b, Tensor):
        target = _with_scalar(b.dtype, a)
    else:
        raise TypeError(f"expected at least one Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    return to_tensor(a, target), to_tensor(b, target)


def broadcast_operands(a, b, name):
    """``as_operands``, then a ValueError naming ``name`` and both shapes if they don't broadcast
    (numpy's own message names neither the op nor which argument is which)."""
    a, b = as_operands(a, b)
    if a._data.shape == b._data.shape or not a._data.ndim or not b._data.ndim:
        return a, b  # the common cases, checked without the cost of broadcast_shapes
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{name}: shape of input {tuple(a.shape)} and shape of other "
                         f"{tuple(b.shape)} do not broadcast (each trailing dim must be equal "
                         f"or 1)") from None
    return a, b


def _with_scalar(tensor_dtype, scalar):
    if isinstance(scalar, (bool, np.bool_)):
        return tensor_dtype
    if isinstance(scalar, (int, np.integer)):
        return int64 if tensor_dtype is bool_ else tensor_dtype
    if isinstance(scalar, (float, np.floating)):
        return tensor_dtype if tensor_dtype.is_floating_point else float32
    if isinstance(scalar, np.ndarray):
        return promote_types(tensor_dtype, Tensor._make(scalar).dtype)
    raise TypeError(f"unsupported operand of type {type(scalar).__name__}")


def to_tensor(value, dtype):
    """``value`` as a Tensor of ``dtype`` (a cast is a differentiable op for float tensors)."""
    if isinstance(value, Tensor):
        return value if value.dtype is dtype else value.to(dtype)
    return Tensor._make(np.asarray(value, dtype=dtype.numpy))


def unbroadcast(grad, shape):
    """Sum ``grad`` over the dimensions broadcasting added or stretched, back to ``shape``."""
    shape = tuple(shape)
    if tuple(grad.shape) == shape:
        return grad
    extra = grad.ndim - len(shape)
    dims = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and grad.shape[extra + i] != 1)
    if dims:
        grad = grad.sum(dim=dims, keepdim=True)
    return grad.reshape(shape)


def normalize_dims(dim, ndim, name="dim"):
    """A sorted tuple of non-negative dims from None (all), an int, or a tuple/list of ints."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (tuple, list)):
        dims = tuple(normalize_dim(d, ndim, name) for d in dim)
        if len(set(dims)) != len(dims):
            raise ValueError(f"{name}: dimension appears more than once in {tuple(dim)}")
        return tuple(sorted(dims)) if ndim else ()
    return (normalize_dim(dim, ndim, name),) if ndim else ()
