"""Where a captured step's optimizer update runs: each parameter's right after the backward's
last kernel on it.

In eager mode the update comes after the whole backward pass, so it reads every parameter,
gradient and moment back from memory: the backward wrote the first gradients long before. A
tape can do better. An optimizer that can split its update into one kernel call per parameter
(``Optimizer._split_update``; Adam's can) has each call moved up to just after the last call
of the step that reads or writes that parameter, its gradient or its moments, while the
gradient (just written) and the weight (just read by the input gradient's product) are in the
cache. A ``prepare`` callback, the update's Python part (step counts, step sizes), runs before
the first of them, and a ``finish`` callback stays where the update was.

The calls say what memory they use: a kernel's C pointers (each resolved to the tape array
that holds it), a numpy call's arrays, a host callback's ``arrays()``. A call that does not say
(a host callback without ``arrays()``, a kernel given a list of pointers) is a barrier: no
update moves above it. Moving a call never changes a value, since nothing between its old and
new place touches its memory; capture's check compares the replay with eager mode bit for bit
all the same (step_capture.py).
"""
import bisect
import functools

import numpy as np

from .c_backend import ffi

BARRIER = None  # what _memory returns for a call that does not say what memory it uses


def schedule_updates(tape):
    """Split each update of ``tape`` that can be split and move its parts up (module doc)."""
    updates = [call for call in tape.calls if hasattr(call[0], "split")]
    for call in updates:
        parts = call[0].split()
        if parts is not None:
            _place(tape, tape.calls.index(call), *parts)


def _place(tape, where, prepare, updates, finish):
    owners = _Owners(tape)
    used = [_memory(call, owners) for call in tape.calls[:where]]
    after = {}  # index of a call -> the updates that go right after it (-1: first of all)
    for arrays, update in updates:
        mine = {owners.of_array(a) for a in arrays}
        last = max((i for i, memory in enumerate(used)
                    if memory is BARRIER or memory & mine), default=-1)
        after.setdefault(last, []).append(update)
    first = min(after)
    after[first].insert(0, (prepare, (), False))
    calls = after.get(-1, [])
    for i, call in enumerate(tape.calls):
        calls.append((finish, (), False) if i == where else call)
        if i < where:
            calls += after.get(i, [])
    tape.calls[:] = calls


class _Owners:
    """The arrays that own the tape's memory, found by address."""

    def __init__(self, tape):
        spans = []
        for key, array in tape.owners().items():
            start = array.__array_interface__["data"][0]
            spans.append((start, start + array.nbytes, key))
        spans.sort()
        self.starts = [start for start, _, _ in spans]
        self.spans = spans

    def of_address(self, address):
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.spans[i][1]:
            return self.spans[i][2]
        return None  # memory the tape does not hold (no parameter's)

    @staticmethod
    def of_array(array):
        while isinstance(array.base, np.ndarray):
            array = array.base
        return id(array)


def _memory(call, owners):
    """The ids of the tape arrays whose memory ``call`` uses, or BARRIER."""
    function, args, is_kernel = call
    values = list(args)
    if isinstance(function, functools.partial):  # a numpy call made into out= (tape.computed)
        values += list(function.args) + list(function.keywords.values())
        function = function.func
    elif not is_kernel and not args:  # a host callback: Python a replay runs again
        if not hasattr(function, "arrays"):
            return BARRIER
        values += list(function.arrays())
    if isinstance(getattr(function, "__self__", None), np.ndarray):  # out.fill(0)
        values.append(function.__self__)
    found = set()
    while values:
        value = values.pop()
        if isinstance(value, np.ndarray):
            found.add(owners.of_array(value))
        elif isinstance(value, (list, tuple)):
            values += list(value)
        elif isinstance(value, ffi.CData):
            kind = ffi.typeof(value)
            if kind.kind in ("pointer", "array") and kind.item.kind == "pointer":
                return BARRIER  # a list of pointers: memory this cannot follow
            if kind.kind in ("pointer", "array"):
                key = owners.of_address(int(ffi.cast("uintptr_t", value)))
                if key is not None:
                    found.add(key)
    return found
