"""Memory for the C kernels' large outputs (32 MiB and up), reused from call to call.

glibc's malloc gives a block above its mmap threshold (at most 32 MiB) fresh pages from the
kernel and unmaps them on free, so a kernel that returns a new large array pays for mapping
and zeroing every page it writes. For the gradient of cross-entropy on 2048 x 32000 float32
logits (a language model's output layer) that was a quarter of the call
(benchmarks/bench_large_outputs.py).
So, as PyTorch's caching allocators do for GPU memory, a block outlives its array here: when
the last view of the array goes, the block goes back to an idle list, and the next output of
the same size (next training step) takes it with its pages already mapped. A new block is
advised to use huge pages (``advise_huge_pages``), as numpy's own large arrays are.

``empty_apart(shape, dtype, inputs)`` is ``empty`` for a row kernel's output from
APART_MIN_BYTES up, placed as far as it can be, modulo 4096, from the arrays that the kernel
reads while it writes: see ``page_offset_apart``.

``empty(shape, dtype)`` is ``np.empty`` for the backend's outputs: a writable, C-contiguous,
64-byte aligned array (a view of the block; ``arr.base`` keeps the block from going back
while any view lives). It starts ``_PLACE`` bytes past a 4 KiB boundary, just below the next
one: numpy's large arrays start 16 bytes past one (glibc's header), so an output made from
them lies just below its input modulo 4096, never just above, where each store of a row
kernel would hold up the loads after it (4K aliasing: see csrc/tuned/row_ops.h). ``empty_cache()``
frees the idle blocks; at most ``MAX_IDLE_BYTES`` are kept idle, the oldest freed first.

Below 32 MiB the blocks are malloc's, which would reuse them by itself but for one habit: it
returns the top of its heap to the kernel whenever more than a threshold is free there, and the
next arrays (every temporary of a backward pass: MiBs each) then write to fresh pages. At import
``keep_freed_heap`` asks glibc to keep HEAP_KEEP_BYTES of it (a var(-1) forward and backward
on (32, 32, 512) float32 took 2,016 page faults and 8.2 ms before, none and 2.1 ms after).
``MINITORCH_MALLOC_TUNING=0`` in the environment leaves malloc as it is.

``collapse_huge_pages(arrays)`` moves memory that lives long and is read all the time (a
captured step's tape, step_capture.py) onto 2 MiB pages at once.
"""
import ctypes
import ctypes.util
import math
import mmap
import os
import sys
import threading

import numpy as np

from minitorch._C import ffi

MIN_BYTES = 32 << 20  # up to this glibc's malloc comes to reuse freed blocks by itself
MAX_IDLE_BYTES = 1 << 30
_ALIGN = 64
_PLACE = 4096 - _ALIGN  # where an array starts in its 4 KiB page (see the module docstring)
_SLACK = 4096  # bytes a block holds beyond its capacity, to start the array at _PLACE
_GRANULE = 1 << 20  # block sizes are rounded up to this, so nearby sizes share blocks

_new_block = ffi.new_allocator(should_clear_after_alloc=False)  # the kernels write every byte


class _IdleBlocks:
    """Blocks whose arrays are gone, oldest first, as (capacity, cdata) pairs."""

    def __init__(self):
        self.blocks = []
        self.bytes = 0
        # Reentrant: a garbage collection inside `take` may return a block from this thread.
        self.lock = threading.RLock()

    def take(self, capacity):
        with self.lock:
            for i in range(len(self.blocks) - 1, -1, -1):  # newest first: likelier in cache
                if self.blocks[i][0] == capacity:
                    self.bytes -= capacity
                    return self.blocks.pop(i)[1]
        return None

    def give_back(self, capacity, block):
        with self.lock:
            self.blocks.append((capacity, block))
            self.bytes += capacity
            while self.bytes > MAX_IDLE_BYTES:
                self.bytes -= self.blocks.pop(0)[0]

    def clear(self):
        with self.lock:
            self.blocks.clear()
            self.bytes = 0


_idle = _IdleBlocks()


def empty(shape, dtype):
    """np.empty(shape, dtype) (shape a tuple, dtype a np.dtype), from a reused block when large.
    (Kept to a few operations: the small case runs for every kernel call of a training step.)"""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES:
        return np.empty(shape, dtype)
    return _from_block(shape, dtype, nbytes, _PLACE)


# From this size an output placed apart from its inputs pays for the placement's ~2 us.
APART_MIN_BYTES = 256 << 10


def page_offset_apart(addresses):
    """The offset in a 4 KiB page, a multiple of 64, farthest from each address's own offset:
    the middle of the widest gap between them around the page. A row kernel's store whose low
    12 address bits match a load issued after it holds that load up (4K aliasing: see
    csrc/tuned/row_ops.h), and an output allocated right after its same-sized input (a size in
    whole pages) starts 16 bytes from it modulo 4096, where every store of a pass meets a load."""
    if len(addresses) == 1:  # a row kernel's one input: half a page on (the sort below: ~3 us)
        return (addresses[0] % 4096 + 2048) // _ALIGN * _ALIGN % 4096
    offsets = sorted(a % 4096 for a in addresses)
    gaps = [(offsets[(i + 1) % len(offsets)] - o) % 4096 or 4096 for i, o in enumerate(offsets)]
    widest = max(range(len(offsets)), key=gaps.__getitem__)
    return (offsets[widest] + gaps[widest] // 2) // _ALIGN * _ALIGN % 4096


def empty_apart(shape, dtype, inputs):
    """empty(shape, dtype) for a kernel that reads the arrays ``inputs`` while it writes this
    one: from APART_MIN_BYTES up (and in every reused block), starting at
    ``page_offset_apart`` of their addresses in its page."""
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes < MIN_BYTES and nbytes < APART_MIN_BYTES:
        return np.empty(shape, dtype)
    place = page_offset_apart([address(a) for a in inputs])
    if nbytes >= MIN_BYTES:
        return _from_block(shape, dtype, nbytes, place)
    raw = np.empty(nbytes + _SLACK, np.uint8)
    offset = (place - address(raw)) % 4096
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def address(array):
    """Where an array's data starts: ffi's view of a C-contiguous array (cheaper than
    ``array.ctypes.data``), the array interface's of any other."""
    if not array.flags.c_contiguous:
        return array.__array_interface__["data"][0]
    return int(ffi.cast("uintptr_t", ffi.from_buffer(array)))


def _from_block(shape, dtype, nbytes, place):
    """An array of ``nbytes`` in a reused block, starting ``place`` bytes into a 4 KiB page."""
    capacity = -(-nbytes // _GRANULE) * _GRANULE
    block = _idle.take(capacity)
    if block is None:
        block = _new_block("char[]", capacity + _SLACK)
        advise_huge_pages(int(ffi.cast("uintptr_t", block)), capacity + _SLACK)
    # `owner` lives as long as some view of the array does; its destructor returns the block.
    idle = _idle
    owner = ffi.gc(ffi.cast("char *", block), lambda _: idle.give_back(capacity, block))
    offset = (place - int(ffi.cast("uintptr_t", block))) % 4096
    raw = np.frombuffer(ffi.buffer(owner, capacity + _SLACK), dtype=np.uint8)
    return raw[offset:offset + nbytes].view(dtype).reshape(shape)


def _libc_madvise():
    """libc's madvise as a ctypes function, or None (not Linux, no libc)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        madvise = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


_madvise = _libc_madvise()
_MADV_HUGEPAGE = 14  # Linux's <sys/mman.h>
_PAGE = mmap.PAGESIZE


def advise_huge_pages(address, nbytes):
    """Ask Linux to back the whole pages of [address, address + nbytes) with 2 MiB pages, as
    numpy does for its own arrays of 4 MiB and up: a large output then takes a few hundred page
    faults instead of thousands, and fewer TLB misses (with transparent huge pages set to
    "madvise", only advised memory gets them). True if the advice was taken."""
    start = -(-address // _PAGE) * _PAGE
    length = (address + nbytes - start) // _PAGE * _PAGE
    if _madvise is None or length <= 0:
        return False
    return _madvise(start, length, _MADV_HUGEPAGE) == 0


HUGE_PAGE = 2 << 20
_MADV_COLLAPSE = 25  # Linux 6.1's <sys/mman.h>


def huge_pages_setting():
    """Linux's transparent huge page setting: "always", "madvise" or "never" (None: unknown)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as setting:
            return setting.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return None


def _anonymous_mappings():
    """(start, end) of this process's private writable anonymous mappings, the heap among
    them: where arrays' memory lies, and nothing else (no file, no stack). Neighbours are
    joined: advice splits a mapping, and an array may lie across the pieces."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if fields[1].startswith("rw") and fields[1][3] == "p" and (
                    len(fields) == 5 or fields[5] == "[heap]"):
                start, end = (int(x, 16) for x in fields[0].split("-"))
                if found and found[-1][1] == start:
                    found[-1] = (found[-1][0], end)
                else:
                    found.append((start, end))
    return found


def collapse_huge_pages(arrays):
    """Back the memory of ``arrays`` with 2 MiB pages now, for memory that lives long and is
    read all the time (a captured step's tape: every intermediate of a step, each read once a
    step, a TLB miss per 4 KiB page otherwise). Each 2 MiB stretch an array touches, within its
    anonymous mapping, is advised (MADV_HUGEPAGE) and collapsed (MADV_COLLAPSE, Linux 6.1 and
    up; older kernels leave the collapse to khugepaged). The data stays as it was. Returns the
    bytes advised: 0 off Linux, with huge pages set to "never" or MINITORCH_MALLOC_TUNING=0."""
    if _madvise is None or huge_pages_setting() in (None, "never") or \
            os.environ.get("MINITORCH_MALLOC_TUNING", "").strip() == "0":
        return 0
    mappings = _anonymous_mappings()
    stretches = []
    for array in arrays:
        if array.nbytes == 0:
            continue
        start = address(array)
        for low, high in mappings:
            if low <= start < high:
                stretches.append((max(low, start // HUGE_PAGE * HUGE_PAGE),
                                  min(high, -(-(start + array.nbytes) // HUGE_PAGE) * HUGE_PAGE)))
                break
    merged = []
    for start, end in sorted(stretches):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    advised = 0
    for start, end in merged:
        if _madvise(start, end - start, _MADV_HUGEPAGE) == 0:
            advised += end - start
            _madvise(start, end - start, _MADV_COLLAPSE)  # best effort: EINVAL before 6.1
    return advised


def empty_like(x):
    """empty(x.shape, x.dtype): C-contiguous whatever x's layout."""
    if x.nbytes < MIN_BYTES:
        return np.empty(x.shape, x.dtype)
    return empty(x.shape, x.dtype)


def empty_cache():
    """Free the idle blocks (arrays still alive keep theirs)."""
    _idle.clear()


def idle_bytes():
    """Bytes held in idle blocks, ready for the next large output."""
    return _idle.bytes


# A big training step frees ~1 GiB between its backward and the next forward: kept, its
# pages are not faulted in again each step (peak memory is the same either way).
HEAP_KEEP_BYTES = 1 << 30


def keep_freed_heap():
    """glibc's malloc: serve blocks under MIN_BYTES from the heap (M_MMAP_THRESHOLD) and keep
    up to HEAP_KEEP_BYTES of freed heap memory mapped (M_TRIM_THRESHOLD). Setting either turns
    off glibc's own adjustment of both, so both are set. True if malloc took them; False where
    there is no glibc (nothing to tune) or MINITORCH_MALLOC_TUNING=0."""
    if os.environ.get("MINITORCH_MALLOC_TUNING", "").strip() == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc: its own allocator's policy stands
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # glibc's malloc.h
    return bool(mallopt(m_mmap_threshold, MIN_BYTES)) and bool(
        mallopt(m_trim_threshold, HEAP_KEEP_BYTES))


def release_freed_heap():
    """Give the heap memory malloc holds freed back to the kernel now (glibc's malloc_trim),
    as keep_freed_heap otherwise would not: for memory freed once for good (the arrays a
    captured step's tape gave up, tape_arena.py), whose pages a later array would take from
    the kernel again anyway. True where it gave some back."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


keep_freed_heap()
