"""A captured step's intermediates packed into one arena, where those whose lives do not overlap
share memory, as eager mode's allocator lets them.

Eager mode frees an intermediate once backward is done with it, and the next array of its size
takes the same memory, still in the cache. A tape (backends/tape.py) keeps every array of the
step alive instead, each in memory of its own: more than twice eager mode's footprint, most of
it out of the cache by the time a kernel comes back to it. ``pack`` gives each array the tape
made its first and last call (its life, in the order of ``tape.calls``) and places the arrays in
one buffer, best fit, an array's memory free again after its last call; then it points every
call at the new places: a kernel's C pointers (and its lists of them), a numpy call's arrays.
Each array keeps its address modulo a cache line, so each kernel takes the same path through
its vector loops and computes the same numbers, and a large one its address modulo a page, so
a row kernel's operands lie as far apart in their pages as in eager mode.

An array stays where it is when anything but the tape holds it (a result, a parameter's
``.grad``, a module's attribute, a host callback's closure: one pass over the garbage
collector's objects finds them), or when it is neither floating nor bool (capture's check
poisons only those, so only for those would it see a value the step reads before writing it).
Capture's check then replays the packed tape and compares it with eager mode bit for bit
(step_capture.py).
"""
import bisect
import functools
import gc
import sys

import numpy as np

from . import large_buffers
from .c_backend import ffi
from .tape_memory import UNKNOWN, Owners, memory

LINE = 64  # an array keeps its address modulo a cache line: each kernel's vector loops the same
ALIGN = 4096  # and a large one modulo a page: the same distances apart as eager mode's arrays
LARGE = 64 << 10  # (for a row kernel, 4K aliasing: large_buffers.empty_apart)


def pack(tape, lasting):
    """Place the arrays the step made (not ``lasting``: those outlive a step) in one arena,
    sharing memory where their lives do not overlap; returns the bytes the tape gave back."""
    owners = Owners(tape)
    keep = {id(a) for a in lasting}
    used = [_touched(call, owners) for call in tape.calls]
    if any(touched is _UNRESOLVED for touched in used):
        return 0
    movable = {key for key, array in owners.arrays.items()
               if key not in keep and array.nbytes and array.dtype.kind in "fb"
               and array.flags.writeable}
    movable -= _held_outside(tape, owners, movable)
    lives = {}  # key -> (first call, last call)
    for i, touched in enumerate(used):
        for key in touched & movable:
            first, _ = lives.get(key, (i, i))
            lives[key] = first, i
    if len(lives) < 2:
        return 0
    offsets, size = _place(lives, owners.arrays)
    moved = {key: (_address(owners.arrays[key]), offset) for key, offset in offsets.items()}
    given_back = sum(owners.arrays[key].nbytes for key in moved) - size
    # First every moved array and pointer becomes a note of its place in the arena, so that the
    # old arrays are gone (their memory given back) when the arena is made: it takes their
    # place instead of adding to the peak.
    notes = _Notes(moved, {key: owners.arrays[key].nbytes for key in moved})
    owners = lives = None
    tape.calls[:] = [_walk(call, notes.take) for call in tape.calls]
    tape.arrays[:] = [_walk(array, notes.take) for array in tape.arrays]
    large_buffers.release_freed_heap()
    arena = np.empty(size + ALIGN, np.uint8)
    base = _address(arena) + (-_address(arena) % ALIGN)
    made = _Made(arena, base)
    tape.calls[:] = [_walk(call, made.make) for call in tape.calls]
    tape.arrays[:] = [_walk(array, made.make) for array in tape.arrays]
    for pointers, index, offset in notes.in_lists:  # a list of pointers (Adam's): in place
        pointers[index] = ffi.cast(ffi.typeof(pointers).item, base + offset)
    return given_back


def _address(array):
    return array.__array_interface__["data"][0]


def _place(lives, arrays):
    """{key: offset in the arena}, and the arena's size: each array, in the order its life
    starts, in the smallest free stretch that holds it at its address modulo its alignment,
    the stretches of those whose lives ended merged back."""
    free = []  # (offset, size), sorted, disjoint, not adjacent
    offsets, size = {}, 0
    ends = sorted((last, key) for key, (_, last) in lives.items())
    ended = 0
    for key in sorted(lives, key=lambda k: (lives[k][0], -arrays[k].nbytes)):
        while ended < len(ends) and ends[ended][0] < lives[key][0]:
            gone = ends[ended][1]
            _release(free, offsets[gone], _span(arrays[gone]))
            ended += 1
        align, need = _alignment(arrays[key]), _span(arrays[key])
        want = _address(arrays[key]) % align
        fits = [(length, at, at + (want - at) % align) for at, length in free
                if at + (want - at) % align + need <= at + length]
        if fits:
            length, at, place = min(fits)
            free.remove((at, length))
            free += [(at, place - at)] * (place > at)
            free += [(place + need, at + length - place - need)] * (place + need < at + length)
        else:  # at the end, joining a free stretch that reaches it
            at = free.pop()[0] if free and sum(free[-1]) == size else size
            place = at + (want - at) % align
            free += [(at, place - at)] * (place > at)
            size = place + need
        free.sort()
        offsets[key] = place
    return offsets, size


def _alignment(array):
    """What an array's address is kept modulo: a page from LARGE bytes, else a cache line."""
    return ALIGN if array.nbytes >= LARGE else LINE


def _span(array):
    """Bytes an array takes in the arena: itself, rounded up to whole cache lines."""
    return -(-array.nbytes // LINE) * LINE


def _release(free, at, length):
    free.append((at, length))
    free.sort()
    merged = []
    for start, size in free:
        if merged and merged[-1][0] + merged[-1][1] == start:
            merged[-1] = (merged[-1][0], merged[-1][1] + size)
        else:
            merged.append((start, size))
    free[:] = merged


_UNRESOLVED = object()  # a kernel's memory that _touched cannot tell


def _touched(call, owners):
    """The keys of the tape arrays ``call`` uses (tape_memory.memory), following a kernel's
    lists of pointers too (Adam's); an empty set for a host callback that does not say (the
    arrays it holds stay in place: _held_outside) and for mt_ask_ahead (a prefetch: it reads
    nothing), _UNRESOLVED for a list whose length C alone knows."""
    found = memory(call, owners)
    function, args, is_kernel = call
    if found is not UNKNOWN:
        return found
    if not is_kernel:
        return set()
    if getattr(function, "__name__", "") == "mt_ask_ahead":
        return set()
    found = set()
    for value in args:
        if not isinstance(value, ffi.CData) or ffi.typeof(value).kind not in ("pointer", "array"):
            continue
        kind = ffi.typeof(value)
        if kind.item.kind != "pointer":
            addresses = [int(ffi.cast("uintptr_t", value))]
        elif kind.kind == "array":
            addresses = [int(ffi.cast("uintptr_t", value[i])) for i in range(len(value))]
        else:
            return _UNRESOLVED
        found.update(key for key in map(owners.of_address, addresses) if key is not None)
    return found


def _held_outside(tape, owners, movable):
    """The keys among ``movable`` whose array (or a view of it) something other than the tape
    refers to: a Tensor, a closure, a list of the caller's, a frame's local."""
    ours = {id(tape.calls), id(tape.arrays), id(owners), id(owners.arrays), id(owners.spans),
            id(movable), id(sys._getframe()), id(sys._getframe(1))}
    for call in tape.calls:
        ours.add(id(call))
        stack = [call[1]]
        if isinstance(call[0], functools.partial) or \
                isinstance(getattr(call[0], "__self__", None), np.ndarray):
            stack.append(call[0])  # what _walk re-points (not a host callback: it keeps its own)
        while stack:
            value = stack.pop()
            ours.add(id(value))
            if isinstance(value, functools.partial):
                ours.add(id(value.keywords))
                stack += [value.args, *value.keywords.values()]
            elif isinstance(value, (list, tuple)):
                stack += list(value)
    held = set()
    for holder in gc.get_objects():
        if id(holder) in ours:
            continue
        values = gc.get_referents(holder)
        while values:
            value = values.pop()
            kind = type(value)  # (not isinstance: no object's own __class__ runs)
            if issubclass(kind, np.ndarray):
                key = Owners.of_array(value)
                if key in movable:
                    held.add(key)
            elif kind in (tuple, list, dict) and not gc.is_tracked(value) \
                    and id(value) not in ours:
                # (the collector stops tracking a container of untracked values: arrays)
                values += gc.get_referents(value)
    return held


def _walk(value, convert):
    """``value`` (a call, its arguments, one of them) with ``convert`` applied to each array,
    C pointer and note in it: through tuples, lists (in place: their owner may change them
    later, as AdamCalls.set does), a numpy call's ``functools.partial`` and an array's bound
    method (``out.fill``)."""
    if isinstance(value, list):
        value[:] = [_walk(v, convert) for v in value]
        return value
    if isinstance(value, tuple):
        return tuple(_walk(v, convert) for v in value)
    if isinstance(value, functools.partial):
        return functools.partial(value.func, *_walk(value.args, convert),
                                 **{k: _walk(v, convert) for k, v in value.keywords.items()})
    if isinstance(getattr(value, "__self__", None), (np.ndarray, _Note)) and \
            hasattr(value, "__name__"):
        return _Method(_walk(value.__self__, convert), value.__name__).get()
    if isinstance(value, _Method):
        return _Method(_walk(value.array, convert), value.name).get()
    if isinstance(value, (np.ndarray, ffi.CData, _Note)):
        return convert(value)
    return value


class _Note:
    """Where a moved array or pointer goes: ``offset`` in the arena; for an array, its view."""

    def __init__(self, offset, like=None, ctype=None):
        self.offset, self.ctype = offset, ctype
        if like is not None:
            self.shape, self.strides, self.dtype = like.shape, like.strides, like.dtype
            self.writeable = like.flags.writeable


class _Method:
    """An array's method (``out.fill``) whose array is a _Note for now."""

    def __init__(self, array, name):
        self.array, self.name = array, name

    def get(self):
        return self if isinstance(self.array, _Note) else getattr(self.array, self.name)


class _Notes:
    """The first pass: a moved array or C pointer becomes a _Note; the pointers in a kernel's
    list of pointers are noted in ``in_lists``, to be set once the arena is there."""

    def __init__(self, moved, sizes):
        self.spans = sorted((old, old + sizes[key], offset) for key, (old, offset) in moved.items())
        self.starts = [old for old, _, _ in self.spans]
        self.in_lists = []

    def offset(self, address):
        """The arena offset of the byte at ``address``, or None where nothing moved."""
        i = bisect.bisect_right(self.starts, address) - 1
        if i >= 0 and address < self.spans[i][1]:
            return self.spans[i][2] + address - self.spans[i][0]
        return None

    def take(self, value):
        if isinstance(value, np.ndarray):
            offset = self.offset(_address(value)) if value.size else None
            return value if offset is None else _Note(offset, like=value)
        kind = ffi.typeof(value)
        if kind.kind not in ("pointer", "array"):
            return value
        if kind.item.kind == "pointer":  # (a list of a length C alone knows never gets here)
            for i in range(len(value)):
                offset = self.offset(int(ffi.cast("uintptr_t", value[i])))
                if offset is not None:
                    self.in_lists.append((value, i, offset))
            return value
        offset = self.offset(int(ffi.cast("uintptr_t", value)))
        if offset is None:
            return value
        return _Note(offset, ctype=kind if kind.kind == "pointer" else
                     ffi.getctype(kind.item, "*"))


class _Made:
    """The second pass: each _Note made a view of the arena, or a C pointer into it."""

    def __init__(self, arena, base):
        self.arena, self.base = arena, base

    def make(self, value):
        if not isinstance(value, _Note):
            return value
        if value.ctype is not None:
            return ffi.cast(value.ctype, self.base + value.offset)
        array = np.asarray(_At(self.base + value.offset, value, self.arena))
        if not value.writeable:
            array.flags.writeable = False
        return array


class _At:
    """A view of ``like``'s shape, strides and dtype at ``address`` in ``arena`` (kept alive)."""

    def __init__(self, address, like, arena):
        self.arena = arena
        self.__array_interface__ = {"data": (address, False), "shape": like.shape,
                                    "strides": like.strides, "typestr": like.dtype.str,
                                    "version": 3}
