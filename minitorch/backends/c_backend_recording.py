"""The C backend's calls seen through a tape (tape.py): each kernel call recorded, each array
given to C kept alive with the tape.

``recorded(tape)`` swaps c_backend's library for one whose kernels append themselves to the
tape after they run, and its pointer helpers for ones that also keep their array: the backend's
code does not change, and costs nothing more when no step is captured. ``paused()`` undoes the
swap for a host callback, whose kernels are its own business (tape.host).
"""
import contextlib

import numpy as np

from . import c_backend

# Entry points that set or report the runtime's state: not kernels, never recorded
CONTROL = ("mt_get_", "mt_set_", "mt_has_", "mt_max_threads", "mt_best_isa")
_HELPERS = ("_ptr", "_base_pointer", "_pointer", "_bytes", "_contiguous")
_outside: list = []  # what each recording in progress replaced: c_backend's own library and helpers


class RecordingLibrary:
    """``lib`` whose kernels, once called, are appended to ``tape.calls`` with their args."""

    def __init__(self, lib, tape):
        self._lib, self._tape = lib, tape

    def __getattr__(self, name):
        function = getattr(self._lib, name)
        if name.startswith(CONTROL) or not callable(function):
            return function
        calls = self._tape.calls

        def call(*args):
            status = function(*args)
            calls.append((function, args, True))
            return status
        setattr(self, name, call)  # looked up once per capture
        return call


def _copying(contiguous, tape):
    """_contiguous whose copies (of a strided or misaligned array) are recorded too."""
    def copy(array):
        result = contiguous(array)
        if result is not array:
            tape.calls.append((np.copyto, (result, array), False))
            tape.hold(result)
            tape.hold(array)
        return result
    return copy


def _keeping(helper, tape, references):
    """``helper`` (a pointer to an array's data) that keeps the array with the tape; the C
    pointer made by ffi.from_buffer holds one more reference to it (_ptr's)."""
    def pointer(array):
        tape.hold(array, references)
        return helper(array)
    return pointer


@contextlib.contextmanager
def recorded(tape):
    """Within: c_backend's kernel calls and the arrays they are given go to ``tape``."""
    own = {name: getattr(c_backend, name) for name in ("lib",) + _HELPERS}
    # the list's reference, and for _ptr its pointer's (the others point into views)
    helpers = {name: _keeping(own[name], tape, 2 if name == "_ptr" else 1)
               for name in _HELPERS[:-1]}
    helpers["_contiguous"] = _copying(own["_contiguous"], tape)
    with c_backend.replaced(lib=RecordingLibrary(own["lib"], tape), **helpers):
        _outside.append(own)
        try:
            yield
        finally:
            _outside.pop()


@contextlib.contextmanager
def paused():
    """Within (inside ``recorded``): c_backend as it is when nothing records."""
    with c_backend.replaced(**_outside[-1]):
        yield
