"""Tensor element types, with PyTorch's names: float32 (the default float), float64, float16,
bfloat16, int64, int32, int16, int8, uint8 and bool; the default float dtype; PyTorch's rule of
type promotion (``promote_types``); ``finfo``/``iinfo``.

A ``dtype`` wraps a numpy dtype with PyTorch's name and repr, so that ``x.dtype`` prints
``minitorch.float32`` and compares equal to the object users pass in. numpy has no bfloat16:
it comes from the ``ml_dtypes`` package (the numpy ecosystem's home of it, as JAX's); without
that package minitorch imports and runs, and only bfloat16 use raises a RuntimeError saying so.
May import: numpy, ml_dtypes (optional).
"""
import numpy as np

try:
    import ml_dtypes
    _BFLOAT16_NUMPY = np.dtype(ml_dtypes.bfloat16)
except ImportError:  # minitorch works without it; only bfloat16 is then unavailable
    ml_dtypes = None  # type: ignore[assignment]
    _BFLOAT16_NUMPY = None


class dtype:
    """One element type. Compare with ``==`` (or ``is``: each dtype is a singleton); ``.numpy``
    is the numpy dtype behind it. Attributes as ``torch.dtype``'s: ``is_floating_point``,
    ``is_signed``, ``is_complex``, ``itemsize``."""

    def __init__(self, name, numpy_dtype, is_floating_point, is_signed, tensor_type):
        self.name = name
        if numpy_dtype is not None:
            self.numpy = np.dtype(numpy_dtype)
        self.is_floating_point = is_floating_point
        self.is_signed = is_signed
        self.is_complex = False
        self.itemsize = 2 if numpy_dtype is None else np.dtype(numpy_dtype).itemsize
        self.tensor_type = tensor_type  # PyTorch's legacy name: "FloatTensor", "LongTensor"...

    def __getattr__(self, attribute):
        # Reached only when ``numpy`` was never set: bfloat16 without ml_dtypes.
        if attribute == "numpy":
            raise RuntimeError(f"{self!r} needs the ml_dtypes package (numpy has no {self.name}): "
                               "pip install ml_dtypes")
        raise AttributeError(f"'dtype' object has no attribute {attribute!r}")

    def to_real(self):
        return self

    def __repr__(self):
        return f"minitorch.{self.name}"

    def __reduce__(self):  # keep dtypes singletons under copy/deepcopy
        return (as_dtype, (self.name,))


float32 = dtype("float32", np.float32, True, True, "FloatTensor")
float64 = dtype("float64", np.float64, True, True, "DoubleTensor")
float16 = dtype("float16", np.float16, True, True, "HalfTensor")
bfloat16 = dtype("bfloat16", _BFLOAT16_NUMPY, True, True, "BFloat16Tensor")
int64 = dtype("int64", np.int64, False, True, "LongTensor")
int32 = dtype("int32", np.int32, False, True, "IntTensor")
int16 = dtype("int16", np.int16, False, True, "ShortTensor")
int8 = dtype("int8", np.int8, False, True, "CharTensor")
uint8 = dtype("uint8", np.uint8, False, False, "ByteTensor")
bool_ = dtype("bool", np.bool_, False, False, "BoolTensor")

ALL = (float32, float64, float16, bfloat16, int64, int32, int16, int8, uint8, bool_)
# The dtypes whose arithmetic numpy does in a wider type and rounds back (PyTorch's CPU kernels
# do the same); the C kernels take float32 in their place.
HALF = (float16, bfloat16)

_BY_NUMPY = {d.numpy: d for d in ALL if d is not bfloat16 or _BFLOAT16_NUMPY is not None}
_BY_NAME = {d.name: d for d in ALL}
# PyTorch's aliases: torch.float, torch.double, torch.half, torch.long, torch.int, torch.short
_BY_NAME.update(float=float32, double=float64, half=float16, long=int64, int=int32, short=int16)
_BY_TENSOR_TYPE = {d.tensor_type: d for d in ALL}

# numpy types minitorch has no dtype of, stored as the nearest one that holds every value
_NEAREST = {np.dtype(np.uint16): int32, np.dtype(np.uint32): int64, np.dtype(np.uint64): int64}


def as_dtype(value):
    """minitorch dtype for a dtype, a numpy dtype, a Python type or a name; TypeError otherwise.

    Python's ``float`` is float64, ``int`` int64 and ``bool`` bool, as ``torch.zeros(2,
    dtype=float)``."""
    if isinstance(value, dtype):
        return value
    if isinstance(value, str):
        if value in _BY_NAME:
            return _BY_NAME[value]
        raise TypeError(f"dtype: unknown dtype name {value!r} (expected one of "
                        f"{', '.join(sorted(_BY_NAME))})")
    if value is float:
        return float64
    if value is int:
        return int64
    if value is bool:
        return bool_
    legacy = getattr(value, "dtype", None)  # minitorch.FloatTensor and the other legacy types
    if isinstance(value, type) and isinstance(legacy, dtype):
        return legacy
    try:
        np_dtype = np.dtype(value)
    except TypeError:
        raise TypeError(f"dtype: expected a minitorch dtype, got {value!r}") from None
    found = _BY_NUMPY.get(np_dtype)
    if found is not None:
        return found
    if np_dtype in _NEAREST:
        return _NEAREST[np_dtype]
    if np_dtype.kind == "f":  # long double
        return float64
    raise TypeError(f"dtype: unsupported element type {np_dtype} (minitorch has "
                    f"{', '.join(d.name for d in ALL)})")


def of_array(array):
    """The minitorch dtype of a numpy array minitorch holds (KeyError for any other)."""
    return _BY_NUMPY[array.dtype]


# ---------------------------------------------------------------------------- default dtype
_default_float = float32


def get_default_dtype():
    """The dtype of float tensors made without one (Python floats, ``zeros``, ``randn``, layers'
    parameters): float32 unless ``set_default_dtype`` changed it."""
    return _default_float


def set_default_dtype(d):
    """Make ``d`` (a floating point dtype) the default float dtype, for the whole process, as
    ``torch.set_default_dtype``."""
    global _default_float
    d = as_dtype(d) if isinstance(d, (dtype, str)) else d
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point types are supported as the "
                        f"default type, got {d!r}")
    _ = d.numpy  # bfloat16 without ml_dtypes raises here, not at the first tensor made
    _default_float = d


# ---------------------------------------------------------------------------- promotion
def promote_types(type1, type2):
    """The dtype of a result computed from tensors of ``type1`` and ``type2``, as
    ``torch.promote_types``: bool < integers < floats; two integers give the narrowest type
    holding both (uint8 with int8 gives int16); float16 with bfloat16 gives float32."""
    if type1 is type2:
        return type1
    if type1.is_floating_point or type2.is_floating_point:
        if not (type1.is_floating_point and type2.is_floating_point):
            return type1 if type1.is_floating_point else type2
        if {type1, type2} == {float16, bfloat16}:
            return float32
        return type1 if type1.itemsize >= type2.itemsize else type2
    if type1 is bool_ or type2 is bool_:
        return type2 if type1 is bool_ else type1
    if type1.is_signed == type2.is_signed:
        return type1 if type1.itemsize >= type2.itemsize else type2
    signed, unsigned = (type1, type2) if type1.is_signed else (type2, type1)
    if signed.itemsize > unsigned.itemsize:
        return signed
    return {1: int16, 2: int32}.get(unsigned.itemsize, int64)


def can_cast(from_, to):
    """Whether PyTorch's type promotion allows ``from_`` into ``to`` (no float into an integer,
    nothing but bool into bool), as ``torch.can_cast``."""
    if from_.is_floating_point and not to.is_floating_point:
        return False
    return not (to is bool_ and from_ is not bool_)


# ---------------------------------------------------------------------------- limits
class finfo:
    """Limits of a floating point dtype, as ``torch.finfo``: ``bits``, ``eps``, ``max``, ``min``,
    ``tiny`` (= ``smallest_normal``), ``resolution``, ``dtype`` (its name)."""

    def __init__(self, type=None):  # noqa: A002  (PyTorch's parameter name)
        type = get_default_dtype() if type is None else as_dtype(type)
        if not type.is_floating_point:
            raise TypeError(f"finfo: type must be a floating point dtype, got {type}")
        info = ml_dtypes.finfo(type.numpy) if type is bfloat16 else np.finfo(type.numpy)
        self.bits = int(info.bits)
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -int(info.precision)  # PyTorch's: 0.01 for bfloat16, as numpy's
        self.dtype = type.name

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """Limits of an integer dtype, as ``torch.iinfo``: ``bits``, ``max``, ``min``,
    ``dtype`` (its name)."""

    def __init__(self, type):  # noqa: A002  (PyTorch's parameter name)
        type = as_dtype(type)
        if type.is_floating_point or type is bool_:
            raise TypeError(f"iinfo: type must be an integer dtype, got {type}")
        info = np.iinfo(type.numpy)
        self.bits = int(info.bits)
        self.max = int(info.max)
        self.min = int(info.min)
        self.dtype = type.name

    def __repr__(self):
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
