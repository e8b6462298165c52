"""Softmax's and log-softmax's streamed backward outputs give the values of their ordinary stores.

Large backward outputs are written around the cache: softmax's float64 ones from 16 MiB
(tuned/softmax_tuned.c, MT_STREAM_BYTES in tuned/row_ops.h), log-softmax's at the AVX-512
level from 16 MiB in float64 and 32 MiB in float32. Each row's whole 64-byte lines are streamed,
and the parts of lines at its ends take ordinary stores. Rows are independent, so every row of
a large call must equal the same row computed in a call too small to stream, bit for bit, at
each tuned ISA level, on 1 and 2 threads, with rows whose length keeps or moves the boundary
(1000 and 999 columns), with dx at every 8-byte offset of a 64-byte line, and (softmax) with a
scale. The reference level and numpy's composite agree within rounding.
"""
import numpy as np
import pytest

try:
    from minitorch._C import ffi, lib
    from minitorch.backends import c_backend as C
    from minitorch.backends import numpy_backend as N
except ImportError:  # extension not built
    C = None

pytestmark = pytest.mark.skipif(C is None, reason="C extension not built")

TUNED_ISAS = [] if C is None else list(C.ISA_LEVELS[1:C.ISA_LEVELS.index(C.best_isa()) + 1])
STREAM_BYTES = 16 << 20
OFFSETS = range(0, 64, 8)
SCALES = [1.0, 0.5, 1.0, 2.0]


def array_at(shape, offset, dtype):
    """An uninitialised array whose data starts `offset` bytes past a 64-byte line."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 128, np.uint8)
    start = (offset - raw.ctypes.data) % 64
    return raw[start:start + size].view(dtype).reshape(shape)


def backward_into(kind, dx, y, dy, scale):
    """mt_<kind>_backward writing into dx (scale: softmax's only)."""
    rows, cols = y.shape
    sfx, ctype = ("f64", "double *") if y.dtype == np.float64 else ("f32", "float *")
    pointers = [ffi.cast(ctype, a.ctypes.data) for a in (y, dy, dx)]
    if kind == "softmax":
        status = getattr(lib, f"mt_softmax_backward_{sfx}")(*pointers, rows, cols, scale)
    else:
        status = getattr(lib, f"mt_log_softmax_backward_{sfx}")(*pointers, rows, cols)
    assert status == 0


CASES = [("softmax", np.float64), ("log_softmax", np.float64), ("log_softmax", np.float32)]


@pytest.mark.parametrize("kind,dtype", CASES, ids=[f"{k}-{np.dtype(d).name}" for k, d in CASES])
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("cols", [1000, 999])
@pytest.mark.parametrize("count", [1, 2])
def test_streamed_rows_equal_rows_of_a_small_call(kind, dtype, isa, cols, count, threads):
    threads(count)  # (conftest.py's fixture: the count is put back after)
    itemsize = np.dtype(dtype).itemsize
    stream_from = STREAM_BYTES * (2 if itemsize == 4 else 1)
    rows = stream_from // (itemsize * cols) + 3  # just over the size where streaming starts
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols))
    forward = N.softmax_forward if kind == "softmax" else N.log_softmax_forward
    y = forward(x).astype(dtype)
    dy = rng.standard_normal((rows, cols)).astype(dtype)
    picked = [0, 1, rows // 2, rows - 1]
    with C.isa(isa):
        for offset, scale in zip(OFFSETS, SCALES * 2):
            scale = scale if kind == "softmax" else 1.0
            dx = array_at((rows, cols), offset, dtype)
            dx.fill(np.nan)  # every element must be written
            backward_into(kind, dx, y, dy, scale)
            small = array_at((len(picked), cols), offset, dtype)  # ordinary stores
            backward_into(kind, small, np.ascontiguousarray(y[picked]),
                          np.ascontiguousarray(dy[picked]), scale)
            np.testing.assert_array_equal(dx[picked], small, err_msg=f"dx at +{offset} bytes")
            assert not np.isnan(dx).any()
        tuned = getattr(C, f"{kind}_backward")(y, dy)
        with C.isa("reference"):
            reference = getattr(C, f"{kind}_backward")(y, dy)
    tol = dict(rtol=1e-12, atol=1e-15) if dtype == np.float64 else dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(tuned, reference, **tol)
    np.testing.assert_allclose(reference, getattr(N, f"{kind}_backward")(y, dy), **tol)
