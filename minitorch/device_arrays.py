"""Arrays on devices: which array library holds a tensor's data, and moving data between them.

A CPU tensor's data is a numpy array; a CUDA tensor's is an array of the GPU library, CuPy
(numpy's counterpart on NVIDIA GPUs; optional: ``pip install 'minitorch-edu[cuda]'``). Ops need
not know which: numpy's functions and ufuncs hand a CuPy array to CuPy (``np.exp(x)``,
``np.where(m, x, y)``, ``np.zeros_like(x)`` run on x's GPU), so one definition per op serves
both. What numpy cannot hand over, an array made from a shape alone, is written
``array_module(like).zeros(...)`` with ``like`` one of the op's inputs.

The GPU library is imported at its first use (``import minitorch`` never imports it).
``use_gpu_library(module, kernels)`` puts another library with CuPy's interface in its place:
the tests plug in a numpy-backed stand-in, so that placement, transfers and device checks run
on machines without a GPU; the GPU kernels themselves run only on a GPU.

Differs from PyTorch: GPU random numbers are drawn on the host by the global generator and
copied, so a seed gives a GPU run the same numbers as a CPU run.
May import: ``minitorch.device`` and numpy (at first use: CuPy and ``backends.cuda_kernels``).
"""
import importlib

import numpy as np

from .device import CPU, device

_gpu = {"module": None, "kernels": None, "ndarray": (), "error": None, "loaded": False}


def use_gpu_library(module, kernels=None):
    """Use ``module`` (CuPy's interface: ``ndarray``, ``asarray``, ``cuda.Device``,
    ``cuda.runtime.getDeviceCount``; arrays with ``.get()`` and ``.device.id``) for CUDA
    tensors, and ``kernels`` (the C backend's function names) for their hot kernels; with
    ``module=None``, forget it, so that the next use imports CuPy again."""
    _gpu.update(module=module, kernels=kernels, error=None, loaded=module is not None,
                ndarray=(module.ndarray,) if module is not None else ())


def _load():
    if _gpu["loaded"]:
        return
    _gpu["loaded"] = True
    try:  # through importlib: CuPy is optional, and type checkers should not look for it
        cupy = importlib.import_module("cupy")
    except ImportError as error:
        _gpu["error"] = f"CuPy is not installed (pip install 'minitorch-edu[cuda]'): {error}"
        return
    from .backends import cuda_kernels
    _gpu.update(module=cupy, kernels=cuda_kernels, ndarray=(cupy.ndarray,))


def _why_no_gpu():
    """Why CUDA tensors cannot be made here, or None where they can."""
    _load()
    if _gpu["module"] is None:
        return _gpu["error"]
    if device_count() == 0:
        return "CuPy found no CUDA device (no GPU, or no driver)"
    return None


def gpu_library():
    """The GPU array library; RuntimeError saying why where there is none, or no GPU."""
    why = _why_no_gpu()
    if why is not None:
        raise RuntimeError(f"CUDA is not available: {why}")
    return _gpu["module"]


def gpu_kernels():
    """The kernels CUDA tensors run on: csrc/cuda's, through ``backends.cuda_kernels``."""
    gpu_library()
    return _gpu["kernels"]


def device_count():
    """GPUs the GPU library sees: 0 without the library, a driver or a device."""
    _load()
    if _gpu["module"] is None:
        return 0
    try:
        return int(_gpu["module"].cuda.runtime.getDeviceCount())
    except Exception:  # CUDARuntimeError: no driver, or none it can see
        return 0


def is_gpu_array(array):
    """True for an array of the GPU library (False before that library is first used)."""
    return isinstance(array, _gpu["ndarray"])


def max_or_neg_inf(x, axis):
    """x's max over ``axis``, the reduced dims kept (size 1), -inf where ``axis`` is empty:
    numpy's ``np.max(..., initial=-inf)``, which CuPy's max does not take."""
    if type(x) is np.ndarray:
        return np.max(x, axis=axis, keepdims=True, initial=-np.inf)
    if x.size:
        return np.max(x, axis=axis, keepdims=True)
    shape = np.max(np.empty(x.shape), axis=axis, keepdims=True, initial=-np.inf).shape  # no data
    return array_module(x).full(shape, -np.inf, x.dtype)


def is_writeable(array):
    """Whether ``array`` may be written: numpy's flag; CuPy's arrays have none (always writable)."""
    return getattr(array.flags, "writeable", True)


def device_of(array):
    """The device that holds ``array``: the CPU for numpy's arrays, ``cuda:i`` for a GPU one."""
    if type(array) is np.ndarray or not isinstance(array, _gpu["ndarray"]):
        return CPU
    return device("cuda", int(array.device.id))


def array_module(array):
    """numpy for a numpy array, the GPU library for a GPU array (``xp`` in the ops)."""
    if type(array) is np.ndarray or not isinstance(array, _gpu["ndarray"]):
        return np
    return _gpu["module"]


def current_cuda_index():
    return int(gpu_library().cuda.Device().id)


def resolve(value, caller="to"):
    """``value`` (a device, a str, an int) as a device with an index, checked usable here:
    ``"cuda"`` names the current GPU, ``"cpu"`` the CPU (index None, as ``torch.device``)."""
    parsed = value if isinstance(value, device) else device(value)
    if parsed.type == "cpu":
        return CPU
    if parsed.type != "cuda":
        raise RuntimeError(f"{caller}: device {str(parsed)!r} is not available: minitorch "
                           "computes on the CPU and, with CuPy and a GPU, on CUDA; use "
                           "device='cpu'")
    why = _why_no_gpu()
    if why is not None:
        raise RuntimeError(f"{caller}: device {str(parsed)!r} is not available: {why} "
                           "(minitorch.cuda.is_available() is False); use device='cpu'")
    count = device_count()
    index = current_cuda_index() if parsed.index is None else parsed.index
    if index >= count:
        raise RuntimeError(f"{caller}: CUDA error: invalid device ordinal (cuda:{index} asked "
                           f"for, {count} device{'s' if count != 1 else ''} present)")
    return device("cuda", index)


def to_device(array, target):
    """``array`` on ``target`` (a device from ``resolve``): itself where it is there already,
    else a copy there."""
    here = device_of(array)
    if here == target:
        return array
    if target.type == "cpu":
        return array.get()
    gpu = gpu_library()
    with gpu.cuda.Device(target.index):
        return gpu.asarray(array)  # from the host, or a peer copy from another GPU


def as_array(value, like):
    """``value``, what numpy calls on ``like`` returned (an array, or a numpy scalar from a full
    reduction), as an array of ``like``'s library: numpy's ``np.asarray(value)``."""
    if type(like) is np.ndarray or not isinstance(like, _gpu["ndarray"]):
        return np.asarray(value)
    return _gpu["module"].asarray(value)


def on_device_of(array, like):
    """``array`` (made on the host: random draws, index tables) moved to ``like``'s device."""
    if type(like) is np.ndarray or not isinstance(like, _gpu["ndarray"]):
        return array
    return to_device(array, device_of(like))


def to_host(array):
    """A numpy array of ``array``'s values: itself on the CPU, a copy from a GPU."""
    return array if device_of(array).type == "cpu" else array.get()


def check_same_device(arrays, caller):
    """RuntimeError naming two devices where ``arrays`` are not all on one (PyTorch's message)."""
    first = None
    for array in arrays:
        here = device_of(array)
        if first is None:
            first = here
        elif here != first:
            raise RuntimeError(f"{caller}: Expected all tensors to be on the same device, but "
                               f"found at least two devices, {first} and {here}!")
    return first
