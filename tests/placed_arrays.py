"""Arrays whose data starts a chosen number of bytes past a boundary (a 64-byte line, a 4 KiB
page), for the kernel tests whose paths depend on where an output or input lies."""
import numpy as np


def array_at(shape, offset, dtype=np.float64, boundary=64):
    """An uninitialised array of `shape` and `dtype` whose data starts `offset` bytes past a
    multiple of `boundary`."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 2 * boundary, np.uint8)
    start = (offset - raw.ctypes.data) % boundary
    return raw[start:start + size].view(dtype).reshape(shape)
