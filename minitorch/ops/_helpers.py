"""Helpers shared by the op families: scalar wrapping, type promotion, gradient un-broadcasting,
and the checking of ``dim`` arguments."""
import numpy as np

from ..backends import tape as tapes
from ..device_arrays import array_module, on_device_of
from ..dtype import bool_, get_default_dtype, int64, promote_types
from ..tensor import Tensor, normalize_dim  # noqa: F401  (the ops import it from here)


def _category(dtype):
    return 2 if dtype.is_floating_point else 0 if dtype is bool_ else 1


def result_type(a, b):
    """The dtype PyTorch computes ``a op b`` in, for two tensors: ``promote_types`` of their
    dtypes, except that a 0-d tensor beside one with dimensions counts only if its kind (bool <
    integer < float) is higher, as in PyTorch (``int8_vector + tensor(5)`` stays int8,
    ``float32_vector + tensor(1.0, dtype=float64)`` stays float32)."""
    if a.dtype is b.dtype:
        return a.dtype
    if (a._data.ndim == 0) == (b._data.ndim == 0):
        return promote_types(a.dtype, b.dtype)
    dims, zero = (a.dtype, b.dtype) if b._data.ndim == 0 else (b.dtype, a.dtype)
    return zero if _category(zero) > _category(dims) else dims


def as_operands(a, b):
    """Two Tensors of one dtype from tensors and Python scalars, promoting like PyTorch.

    A Python number is "weak": it takes the tensor's dtype unless its kind is higher
    (``int_tensor * 0.5`` has the default float dtype, ``float64_tensor + 1`` stays float64).
    """
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        target = result_type(a, b)
    elif isinstance(a, Tensor):
        target = _with_scalar(a, b)
    elif isinstance(b, Tensor):
        target = _with_scalar(b, a)
    else:
        raise TypeError(f"expected at least one Tensor, got {type(a).__name__} and "
                        f"{type(b).__name__}")
    return to_tensor(a, target), to_tensor(b, target)


def broadcast_operands(a, b, name):
    """``as_operands``, then a ValueError naming ``name`` and both shapes if they don't broadcast
    (numpy's own message names neither the op nor which argument is which)."""
    # Fast paths for the commonest operands, with as_operands' result: two tensors of one
    # dtype (nothing to promote), and a float tensor with a Python float (which takes its dtype).
    if isinstance(a, Tensor):
        if isinstance(b, Tensor) and a._data.dtype is b._data.dtype:
            pass
        elif type(b) is float and a._data.dtype.kind == "f":
            b = Tensor._make(scalar_like(b, a._data))
        else:
            a, b = as_operands(a, b)
    elif type(a) is float and isinstance(b, Tensor) and b._data.dtype.kind == "f":
        a = Tensor._make(scalar_like(a, b._data))
    else:
        a, b = as_operands(a, b)
    if type(a._data) is not type(b._data):
        a, b = _on_one_device(a, b)
    if a._data.shape == b._data.shape or not a._data.ndim or not b._data.ndim:
        return a, b  # the common cases, checked without the cost of broadcast_shapes
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"{name}: shape of input {tuple(a.shape)} and shape of other "
                         f"{tuple(b.shape)} do not broadcast (each trailing dim must be equal "
                         f"or 1)") from None
    return a, b


def _on_one_device(a, b):
    """A 0-d CPU operand (a wrapped Python number, say) moved to the other's GPU, as PyTorch
    lets a CPU scalar join a CUDA tensor; other operands stay where they are."""
    if a.device != b.device:
        if b._data.ndim == 0 and b.device.type == "cpu":
            b = b.to(a.device)
        elif a._data.ndim == 0 and a.device.type == "cpu":
            a = a.to(b.device)
    return a, b


def scalar_like(value, like):
    """``value`` as a 0-d array of ``like``'s dtype, on ``like``'s device."""
    if type(like) is np.ndarray:  # (a captured step's replay writes the number again)
        return tapes.constant(np.asarray(value, dtype=like.dtype))
    return array_module(like).asarray(value, dtype=like.dtype)


def _with_scalar(tensor, scalar):
    tensor_dtype = tensor.dtype
    if isinstance(scalar, (bool, np.bool_)):
        return tensor_dtype
    if isinstance(scalar, (int, np.integer)):
        return int64 if tensor_dtype is bool_ else tensor_dtype
    if isinstance(scalar, (float, np.floating)):
        return tensor_dtype if tensor_dtype.is_floating_point else get_default_dtype()
    if isinstance(scalar, np.ndarray):
        return result_type(tensor, Tensor._make(scalar))
    raise TypeError(f"unsupported operand of type {type(scalar).__name__}")


def to_tensor(value, dtype, like=None):
    """``value`` as a Tensor of ``dtype`` (a cast is a differentiable op for float tensors); a
    number goes to the device of ``like`` (an array) if given."""
    if isinstance(value, Tensor):
        return value if value.dtype is dtype else value.to(dtype)
    try:
        array = np.asarray(value, dtype=dtype.numpy)
    except OverflowError:  # a Python int beyond a narrow integer dtype wraps, as in PyTorch
        array = np.asarray(value).astype(dtype.numpy)
    if not isinstance(value, np.ndarray):  # numbers: a captured step's replay writes them again
        tapes.constant(array)
    return Tensor._make(array if like is None else on_device_of(array, like))


def unbroadcast(grad, shape):
    """Sum ``grad`` over the dimensions broadcasting added or stretched, back to ``shape``."""
    shape = tuple(shape)
    if grad._data.shape == shape:
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
