"""A tape of a step's kernel calls: what ``minitorch.capture`` records once and replays.

While a tape records, each C kernel the C backend calls is appended to it with its arguments
(the C pointers it was given, whose arrays the tape keeps alive), and so is each numpy call an
op makes through ``record`` (a zero fill, a row lookup into an existing array), ``computed``
(a ufunc's new array) or ``evaluated`` (any numpy function's);
``host(callback)`` appends a Python function that must run again on every replay (an
optimizer's update, whose step sizes change each step). ``Tape.replay()`` makes the same calls
again, in the same order, on the same memory: no Python between them but this loop.

What a tape cannot see, it cannot replay: numpy arithmetic an op does on its own, a Python
number that changes from step to step. ``minitorch.capture`` therefore checks a tape against
eager mode before it trusts it (step_capture.py).
"""
import contextlib
import functools

import numpy as np

_recording = None  # the Tape being recorded, or None


class Tape:
    """The calls of one recorded step: ``calls`` are ``(function, args, is_kernel)``; a C
    kernel's result is its status (0: done). ``arrays`` holds every array a call reads or
    writes, so that none is freed (and its memory reused) while the tape lives."""

    def __init__(self):
        self.calls = []
        self.arrays = []
        self.host_states = []  # host callbacks with Python state (save, restore, adopt)
        self.references = {}  # id(array) -> references the tape holds to it (a lower bound)

    def hold(self, array, references=2):
        """Keep ``array`` (in ``arrays``) and count the tape's ``references`` to that very
        object: this list's and, by default, one in a call's arguments."""
        self.arrays.append(array)
        self.references[id(array)] = self.references.get(id(array), 0) + references

    def replay(self):
        for function, args, is_kernel in self.calls:
            status = function(*args)
            if is_kernel and status != 0:
                raise RuntimeError(f"a replayed kernel failed (status {status}): the memory "
                                   "of the captured step was changed outside it")

    def owners(self):
        """{id: array} of the arrays that own the memory of ``arrays`` (a view's base)."""
        found = {}
        for array in self.arrays:
            while isinstance(array.base, np.ndarray):
                array = array.base
            found[id(array)] = array
        return found


def recording():
    """The tape being recorded, or None."""
    return _recording


def references(array):
    """How many references the tape being recorded holds to ``array`` (0 when none records): the
    engine discounts them where reference counts decide whether it may keep a gradient."""
    return 0 if _recording is None else _recording.references.get(id(array), 0)


@contextlib.contextmanager
def recording_into(tape):
    """Within: kernel calls, ``record`` and ``host`` calls are appended to ``tape``."""
    global _recording
    if _recording is not None:
        raise RuntimeError("a step is already being captured: captures do not nest")
    from . import c_backend_recording  # the C backend's calls, seen through the tape
    _recording = tape
    try:
        with c_backend_recording.recorded(tape):
            yield tape
    finally:
        _recording = None


def keep(*arrays):
    """While recording, keep these arrays alive with the tape (a call reads or writes them)."""
    if _recording is not None:
        _recording.arrays.extend(arrays)


def record(function, *args):
    """``function(*args)`` now and, while recording, on every replay: a numpy call that writes
    into an array the step already has (``np.take(..., out=out)``, ``out.fill(0)``)."""
    result = function(*args)
    if _recording is not None:
        replayed(function, *args)
    return result


def computed(function, *args, **kwargs):
    """``function(*args, **kwargs)``: a numpy call that returns a new array; while recording,
    a replay makes the same call into that array (``out=``)."""
    result = function(*args, **kwargs)
    if _recording is not None:
        if not isinstance(result, np.ndarray):  # a numpy scalar: a 0-d array can be an out=
            result = np.asarray(result)
        _recording.calls.append((functools.partial(function, *args, out=result, **kwargs), (),
                                 False))
        _hold_arrays(args + (result,))
    return result


def evaluated(function, *args):
    """``function(*args)``, for a numpy function that takes no ``out=`` (np.where, a result cast
    to another dtype); while recording, a replay computes it again and copies the values into
    the array returned now."""
    result = function(*args)
    if _recording is not None:
        if not isinstance(result, np.ndarray):  # a numpy scalar: a 0-d array can be copied into
            result = np.asarray(result)
        replayed(_copy_result, result, function, *args)
    return result


def _copy_result(out, function, *args):
    np.copyto(out, function(*args), casting="unsafe")


def constant(array):
    """While recording: ``array``'s present value written into it again on every replay (a
    constant the step makes afresh with numpy: a mask, the ones that seed backward)."""
    if _recording is not None and isinstance(array, np.ndarray) and array.flags.writeable:
        _recording.calls.append((np.copyto, (array, array.copy()), False))
        _recording.hold(array)  # (not its copy: the tape's own, nothing else sees it)
    return array


def reshaped(array, shape):
    """``array.reshape(shape)``; while recording, where numpy had to copy (a strided array),
    a replay copies again."""
    out = array.reshape(shape)
    if _recording is not None and not np.may_share_memory(out, array):
        replayed(np.copyto, out.reshape(array.shape), array)
    return out


def replayed(function, *args):
    """While recording: ``function(*args)`` on every replay (its caller has run it now)."""
    _recording.calls.append((function, args, False))
    _hold_arrays(args)


def _hold_arrays(args):
    """Hold the arrays among ``args``, and those in a list or tuple argument (a concatenation's
    parts), so that the capture's check poisons and compares them too."""
    for arg in args:
        if isinstance(arg, np.ndarray):
            _recording.hold(arg)
        elif isinstance(arg, (list, tuple)):
            for array in arg:
                if isinstance(array, np.ndarray):
                    _recording.hold(array, references=1)


def host(callback):
    """``callback()`` now and, while recording, on every replay: Python work a replay must
    redo (it reads Python state that changes each step). Kernels it calls are not recorded:
    the callback makes them itself each time. A callback that changes state of its own may say
    what: ``callback.arrays()``, the arrays it reads and writes (kept with the tape), and
    ``callback.save()`` / ``callback.restore(saved)`` for its Python values (capture's check
    rolls them back), with ``callback.adopt()`` to point Python's references (a parameter's
    ``.grad``) back at the tape's arrays after that check's eager run."""
    global _recording
    tape = _recording
    if tape is None:
        return callback()
    from . import c_backend_recording
    _recording = None
    try:
        with c_backend_recording.paused():
            result = callback()
    finally:
        _recording = tape
    repeat(callback)
    return result


def repeat(callback):
    """While recording: ``callback()`` on every replay (its caller has done the work now);
    ``arrays``, ``save`` and ``restore`` as for ``host``."""
    _recording.calls.append((callback, (), False))
    if hasattr(callback, "arrays"):
        for array in callback.arrays():
            _recording.hold(array, references=1)
    if hasattr(callback, "save"):
        _recording.host_states.append(callback)
