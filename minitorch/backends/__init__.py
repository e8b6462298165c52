"""Kernel dispatch: which implementation of the hot kernels (matmul, softmax, layer norm, ...) runs.

Two backends expose the same functions on numpy arrays:

- ``numpy``: ``numpy_backend.py``, the readable reference; always present.
- ``c``: ``c_backend.py``, the compiled kernels in ``minitorch._C``; present when the C
  extension was built at install time.

The choice is made once at import: ``MINITORCH_BACKEND=c|numpy`` if set, else C when it is
built, else numpy with one warning. ``use(name)`` switches afterwards (tests run every case on
every built backend); ``using(name)`` does it for a ``with`` block. The choice is process-wide,
not per thread (as PyTorch's default device is): a ``using`` block in one thread switches the
backend for every thread.

The kernels take float32 and float64. The ops reach them through ``current()``, which runs
float16 and bfloat16 arrays in float32 and rounds the results back (PyTorch's CPU kernels
compute half types in float32 too), so one op definition serves every dtype. A call whose
arrays live on a GPU goes to the GPU's kernels instead (``cuda_kernels``: csrc/cuda's), or, for
a kernel csrc/cuda lacks, to the numpy backend's function, whose numpy calls then run on the
GPU arrays' library; its arrays must all be on that GPU (a RuntimeError naming both devices).

PyTorch's flag modules, so that programs setting them run unchanged: ``backends.cudnn``
(``benchmark``, ``deterministic``, ``enabled``, ``allow_tf32``), ``backends.cuda``
(``matmul.allow_tf32``, ...) and ``backends.mps``; minitorch has neither CUDA nor MPS, so they
change nothing.
"""
import contextlib
import functools
import os
import sys

import numpy as np

from ..device_arrays import check_same_device, gpu_kernels, gpu_library, is_gpu_array
from . import cuda, cudnn, mps, numpy_backend  # noqa: F401  (cuda, cudnn, mps: flags for users)

available = {"numpy": numpy_backend}
try:
    from . import c_backend
    available["c"] = c_backend
except ImportError as _error:  # extension not built: the numpy backend serves
    _c_import_error = _error

_active = None
_kernels = None  # the active backend through _HalfAsFloat32
_adapters: dict = {}  # backend name -> its _HalfAsFloat32


def current():
    """The active backend's kernels: its module, seen through ``_HalfAsFloat32`` (float16 and
    bfloat16 arrays run in float32)."""
    return _kernels


def _half_dtypes():
    half = [np.dtype(np.float16)]
    try:
        import ml_dtypes
        half.append(np.dtype(ml_dtypes.bfloat16))
    except ImportError:  # no bfloat16 arrays can exist then
        pass
    return frozenset(half)


_HALF = _half_dtypes()


# Kernels that take every dtype as it is (they copy bytes), GPU arrays included.
_ANY_DTYPE = frozenset({"copy", "concatenate"})


class _HalfAsFloat32:
    """A backend module, its kernels wrapped: a call given float16/bfloat16 arrays runs on
    float32 copies, and its float32 results come back in the half dtype. Calls on
    float32/float64 go straight through, after one dtype test per array argument. Each wrapped
    kernel is kept on the instance, so later lookups are plain attribute reads."""

    def __init__(self, module):
        self._module = module

    def __getattr__(self, name):
        value = getattr(self._module, name)
        if callable(value) and not name.startswith("_") and name not in _ANY_DTYPE:
            value = _half_as_float32(value, name)
        setattr(self, name, value)
        return value


def _half_as_float32(kernel, name):
    @functools.wraps(kernel)
    def call(*args, **kwargs):
        for a in args:  # itemsize first: a cheap test that float32/float64 arrays fail
            if type(a) is np.ndarray:
                if a.itemsize == 2 and a.dtype in _HALF:
                    half = a.dtype
                    break
            elif is_gpu_array(a):
                return _on_gpu(name, args, kwargs)
        else:
            half = next((a.dtype for a in kwargs.values()
                         if type(a) is np.ndarray and a.dtype in _HALF), None) if kwargs else None
            if half is None:
                return kernel(*args, **kwargs)
        out = kwargs.pop("out", None)
        result = _round_back(kernel(*map(_widen, args),
                                    **{k: _widen(v) for k, v in kwargs.items()}), half)
        if out is None:
            return result
        out[...] = result
        return out
    return call


def _on_gpu(name, args, kwargs):
    """Kernel ``name`` on GPU arrays: csrc/cuda's where it has one, else the numpy backend's;
    run with the arrays' GPU current (a kernel runs on the current GPU)."""
    device = check_same_device([a for a in (*args, *kwargs.values())
                                if type(a) is np.ndarray or is_gpu_array(a)], name)
    kernel = getattr(gpu_kernels(), name, None) or getattr(numpy_backend, name)
    with gpu_library().cuda.Device(device.index):
        return kernel(*args, **kwargs)


def _widen(value):
    if type(value) is np.ndarray and value.dtype in _HALF:
        return value.astype(np.float32)
    return value


def _round_back(result, half):
    if type(result) is np.ndarray and result.dtype == np.float32:
        return result.astype(half)
    if type(result) is tuple:
        return tuple(_round_back(r, half) for r in result)
    return result



def backend():
    """Name of the active backend: ``"c"`` or ``"numpy"``."""
    return next(name for name, module in available.items() if module is _active)


def use(name):
    """Make ``name`` ("c" or "numpy") the active backend; ValueError if it is not built."""
    global _active, _kernels
    if name not in ("c", "numpy"):
        raise ValueError(f"backend: expected 'c' or 'numpy', got {name!r}")
    if name not in available:
        raise ValueError(f"backend: 'c' requested but the C extension is not built "
                         f"({_c_import_error}); reinstall minitorch with a C compiler present")
    _active = available[name]
    if name not in _adapters:
        _adapters[name] = _HalfAsFloat32(_active)
    _kernels = _adapters[name]


@contextlib.contextmanager
def using(name):
    """Run a ``with`` block on backend ``name``, then restore the previous one."""
    previous = backend()
    use(name)
    try:
        yield
    finally:
        use(previous)


def set_num_threads(n):
    """Threads the C kernels use (OpenMP) and numpy's BLAS uses (the numpy backend's matmul),
    for the whole process, as ``torch.set_num_threads``.

    ``n`` is 1 to a bound of max(256, 4 per CPU), at most ``OMP_THREAD_LIMIT``: ValueError
    above it (PyTorch accepts any count, and its process dies in OpenMP when the threads
    cannot be created). RuntimeError, with the count unchanged, if the system cannot start
    ``n`` threads now (memory or process limits): the C backend starts them once to check.
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"set_num_threads: n must be a positive int, got {n!r}")
    # C first: if it refuses n, nothing has changed.
    for name in [name for name in ("c", "numpy") if name in available]:
        available[name].set_num_threads(n)


def get_num_threads():
    """The active backend's thread count (C: its kernels'; numpy: its BLAS's)."""
    return _active.get_num_threads()


def threaded_c():
    """The C backend's module if it is the active one and runs more than one thread, else None:
    where the elementwise ops send a large float array's arithmetic (a few operations: it is
    asked on every such op)."""
    c = available.get("c")
    return c if _active is c and c is not None and c.lib.mt_get_num_threads() > 1 else None


def _choose_at_import():
    requested = os.environ.get("MINITORCH_BACKEND", "").strip().lower()
    if requested:
        use(requested)
    elif "c" in available:
        use("c")
    else:
        # One line on stderr rather than a warning, whose display adds a second (source) line.
        print("minitorch: C extension not built, running on the numpy backend (slower; "
              "reinstall with a C compiler present to build it)", file=sys.stderr)
        use("numpy")


_choose_at_import()
