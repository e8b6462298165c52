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
"""
import contextlib
import os
import sys

from . import numpy_backend

available = {"numpy": numpy_backend}
try:
    from . import c_backend
    available["c"] = c_backend
except ImportError as _error:  # extension not built: the numpy backend serves
    _c_import_error = _error

_active = None


def current():
    """The active backend module."""
    return _active


def backend():
    """Name of the active backend: ``"c"`` or ``"numpy"``."""
    return next(name for name, module in available.items() if module is _active)


def use(name):
    """Make ``name`` ("c" or "numpy") the active backend; ValueError if it is not built."""
    global _active
    if name not in ("c", "numpy"):
        raise ValueError(f"backend: expected 'c' or 'numpy', got {name!r}")
    if name not in available:
        raise ValueError(f"backend: 'c' requested but the C extension is not built "
                         f"({_c_import_error}); reinstall minitorch with a C compiler present")
    _active = available[name]


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
