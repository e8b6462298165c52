"""Which memory a tape's calls use (backends/tape.py): what lets a pass move or add calls.

A call names its memory by C pointers (a kernel's), numpy arrays (a numpy call's, in its
arguments or a ``functools.partial`` of them) or a host callback's ``arrays()``. ``memory``
resolves each to the tape array that owns it (``Owners``: the arrays ``Tape.owners`` gives, found
by address), or says UNKNOWN where the call does not say: a host callback without ``arrays()``,
a kernel given a list of pointers.
"""
import bisect
import functools

import numpy as np

from .c_backend import ffi

UNKNOWN = None  # what memory() returns for a call that does not say what memory it uses


class Owners:
    """The arrays that own the tape's memory, found by address."""

    def __init__(self, tape):
        self.arrays = tape.owners()
        spans = []
        for key, array in self.arrays.items():
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


def memory(call, owners):
    """The ids of the tape arrays whose memory ``call`` uses, or UNKNOWN."""
    function, args, is_kernel = call
    values = list(args)
    if isinstance(function, functools.partial):  # a numpy call made into out= (tape.computed)
        values += list(function.args) + list(function.keywords.values())
        function = function.func
    elif not is_kernel and not args:  # a host callback: Python a replay runs again
        if not hasattr(function, "arrays"):
            return UNKNOWN
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
                return UNKNOWN  # a list of pointers: memory this cannot follow
            if kind.kind in ("pointer", "array"):
                key = owners.of_address(int(ffi.cast("uintptr_t", value)))
                if key is not None:
                    found.add(key)
    return found
