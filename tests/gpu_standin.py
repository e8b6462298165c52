"""A numpy-backed stand-in for CuPy, so that device placement is tested where there is no GPU.

Its "GPU" arrays live in host memory but behave as CuPy's do where placement matters: numpy's
functions and ufuncs hand them to this module (NEP 13/18) and the results are stand-in arrays
again, on the same device; mixing one with a numpy array raises TypeError and ``np.asarray``
refuses one (CuPy: "Implicit conversion to a NumPy array is not allowed"); arrays of two devices
do not mix; reductions give 0-d arrays, not numpy scalars; each has ``.device.id``, ``.get()``
and ``.data.ptr``. Two devices are present. It checks where data goes, not GPU kernels: with it
``device_arrays`` runs every kernel through the numpy backend's functions.
"""
import types

import numpy as np

# Functions that make an array from no array: the result goes to the current device.
_MAKERS = ("array", "empty", "zeros", "ones", "full", "arange",
           "eye", "linspace", "frombuffer", "identity", "tri")
_HIDDEN = ("__array_interface__", "__array_struct__", "ctypes", "tofile", "tobytes")


class Device:
    """``cupy.cuda.Device``: ``with Device(1):`` makes device 1 current for the block."""
    _current = [0]

    def __init__(self, index=None):
        self.id = Device._current[0] if index is None else int(index)

    def __enter__(self):
        self._previous = Device._current[0]
        Device._current[0] = self.id
        return self

    def __exit__(self, *exc):
        Device._current[0] = self._previous

    def use(self):
        Device._current[0] = self.id

    def synchronize(self):
        pass


class _Runtime:
    @staticmethod
    def getDeviceCount():  # noqa: N802  (CuPy's name)
        return 2

    @staticmethod
    def getDeviceProperties(index):  # noqa: N802
        return {"name": b"numpy stand-in GPU"}


cuda = types.SimpleNamespace(Device=Device, runtime=_Runtime)


class _MemoryPool:
    def free_all_blocks(self):
        pass

    def used_bytes(self):
        return 0


def get_default_memory_pool():
    return _MemoryPool()


def _unwrap(value, device_id):
    """The numpy value inside ``value`` (nested in lists, tuples, dicts), refusing numpy arrays
    and arrays of another device, as CuPy does."""
    if isinstance(value, ndarray):
        if value.device.id != device_id:
            raise ValueError(f"array on device {value.device.id} used on device {device_id}")
        return value._array
    if isinstance(value, np.ndarray):
        raise TypeError(f"Unsupported type {type(value)}")
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, device_id) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, device_id) for k, v in value.items()}
    return value


def _wrap(value, device_id):
    if isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, ndarray):
        return ndarray(np.asarray(value) if isinstance(value, np.generic) else value, device_id)
    if isinstance(value, tuple):
        return tuple(_wrap(v, device_id) for v in value)
    if isinstance(value, list):
        return [_wrap(v, device_id) for v in value]
    return value


def _device_of(values):
    for value in values:
        if isinstance(value, ndarray):
            return value.device.id
        if isinstance(value, (list, tuple)):
            found = _device_of(value)
            if found is not None:
                return found
    return None


class _Data:
    def __init__(self, ptr):
        self.ptr = ptr


class _Flags:
    """CuPy's ``ndarray.flags``: the layout flags only (no ``writeable``: always writable)."""

    def __init__(self, flags):
        self.c_contiguous, self.f_contiguous = flags.c_contiguous, flags.f_contiguous
        self.owndata = flags.owndata

    def __getitem__(self, name):  # flags["C_CONTIGUOUS"], as CuPy's
        return {"C_CONTIGUOUS": self.c_contiguous, "F_CONTIGUOUS": self.f_contiguous,
                "OWNDATA": self.owndata}[name]


class ndarray:  # noqa: N801  (CuPy's name)
    """An array on a stand-in device."""

    __slots__ = ("_array", "device")

    def __init__(self, array, device_id):
        self._array = array
        self.device = Device(device_id)

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        device_id = _device_of(inputs + tuple(kwargs.get("out", ())))
        result = getattr(ufunc, method)(*_unwrap(inputs, device_id),
                                        **_unwrap(kwargs, device_id))
        return _wrap(result, device_id)

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.max, np.min, np.amax, np.amin) and "initial" in kwargs:
            raise TypeError(f"{func.__name__}() got an unexpected keyword argument 'initial'")
        device_id = _device_of(args) if _device_of(args) is not None else _device_of(
            tuple(kwargs.values()))
        return _wrap(func(*_unwrap(args, device_id), **_unwrap(kwargs, device_id)), device_id)

    def __getattr__(self, name):
        if name in _HIDDEN:
            raise AttributeError(f"stand-in GPU arrays have no {name}")
        value = getattr(self._array, name)
        device_id = self.device.id
        if callable(value):
            def method(*args, **kwargs):
                return _wrap(value(*_unwrap(args, device_id), **_unwrap(kwargs, device_id)),
                             device_id)
            return method
        return _wrap(value, device_id)

    def get(self):
        return self._array.copy()

    @property
    def shape(self):
        return self._array.shape

    @shape.setter
    def shape(self, shape):  # in place, where the strides allow (AttributeError otherwise)
        viewed = self._array.reshape(shape)  # (a copy where they do not)
        if self._array.size and not np.may_share_memory(viewed, self._array):
            raise AttributeError("incompatible shape for in-place modification")
        self._array = viewed

    @property
    def flags(self):
        return _Flags(self._array.flags)

    @property
    def data(self):
        return _Data(self._array.__array_interface__["data"][0])

    def __getitem__(self, key):
        return _wrap(self._array[_unwrap(key, self.device.id)], self.device.id)

    def __setitem__(self, key, value):
        self._array[_unwrap(key, self.device.id)] = _unwrap(value, self.device.id)

    def __len__(self):
        return len(self._array)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __bool__(self):
        return bool(self._array)

    def __float__(self):
        return float(self._array)

    def __int__(self):
        return int(self._array)

    def __index__(self):
        return self._array.__index__()

    def __repr__(self):
        return f"stand_in_array({self._array!r}, device={self.device.id})"

    def __copy__(self):
        return ndarray(self._array.copy(), self.device.id)

    def __deepcopy__(self, memo):
        return self.__copy__()

    __hash__ = None


def _binary(ufunc, reflected=False):
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


def _in_place(ufunc):
    def update(self, other):
        ufunc(self, other, out=(self,))
        return self
    return update


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                      ("truediv", np.true_divide), ("floordiv", np.floor_divide),
                      ("mod", np.remainder), ("pow", np.power), ("matmul", np.matmul),
                      ("and", np.bitwise_and), ("or", np.bitwise_or), ("xor", np.bitwise_xor),
                      ("lshift", np.left_shift), ("rshift", np.right_shift)):
    setattr(ndarray, f"__{_name}__", _binary(_ufunc))
    setattr(ndarray, f"__r{_name}__", _binary(_ufunc, reflected=True))
    setattr(ndarray, f"__i{_name}__", _in_place(_ufunc))
for _name, _ufunc in (("lt", np.less), ("le", np.less_equal), ("eq", np.equal),
                      ("ne", np.not_equal), ("gt", np.greater), ("ge", np.greater_equal)):
    setattr(ndarray, f"__{_name}__", _binary(_ufunc))
for _name, _ufunc in (("neg", np.negative), ("pos", np.positive), ("abs", np.absolute),
                      ("invert", np.invert)):
    setattr(ndarray, f"__{_name}__", lambda self, _u=_ufunc: _u(self))


def _on_current_device(function):
    def make(*args, **kwargs):
        device_id = Device._current[0]
        if args and isinstance(args[0], ndarray):  # asarray(x): a copy on the current device
            args = (args[0]._array.copy(),) + args[1:]
        return _wrap(function(*_unwrap(args, device_id), **_unwrap(kwargs, device_id)),
                     device_id)
    return make


def __getattr__(name):
    """numpy's attribute; a maker of arrays makes them on the current device. numpy's other
    functions need no wrapping: a stand-in argument sends the call here (NEP 18)."""
    value = getattr(np, name)
    return _on_current_device(value) if name in _MAKERS else value


def asarray(value, dtype=None):
    """``cupy.asarray``: ``value`` on the current device (a copy unless it is there already)."""
    device_id = Device._current[0]
    if isinstance(value, ndarray):
        if value.device.id == device_id and (dtype is None or value.dtype == dtype):
            return value
        return ndarray(value._array.astype(dtype or value.dtype, copy=True), device_id)
    return ndarray(np.array(value, dtype=dtype), device_id)


def ascontiguousarray(value, dtype=None):
    """``cupy.ascontiguousarray``: a C-ordered array on ``value``'s device (itself if it is)."""
    if not isinstance(value, ndarray):
        return asarray(np.ascontiguousarray(value, dtype=dtype))
    return ndarray(np.ascontiguousarray(value._array, dtype=dtype), value.device.id)


def _as_strided(x, shape=None, strides=None):
    """``cupy.lib.stride_tricks.as_strided``: a view of ``x`` on its device."""
    return ndarray(np.lib.stride_tricks.as_strided(x._array, shape, strides), x.device.id)


lib = types.SimpleNamespace(stride_tricks=types.SimpleNamespace(as_strided=_as_strided))
