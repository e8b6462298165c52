"""Softmax backward's streamed float64 output gives the values of its ordinary stores.

From 16 MiB of output on, the float64 backward writes dx around the cache (tuned/
softmax_tuned.c, MT_STREAM_BYTES in tuned/row_ops.h): each row's whole 64-byte lines are
streamed, and the parts of lines at its ends take ordinary stores (whole_lines in row_ops.h).
Rows are independent, so every row of a large call must equal the same row computed in a call
too small to stream, bit for bit, at each tuned ISA level, on 1 and 2 threads, with rows whose
length keeps or moves the boundary (1000 and 999 columns), with dx at every 8-byte offset of a
64-byte line, and with a scale. The reference level and numpy's composite agree within rounding.
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


def array_at(shape, offset):
    """An uninitialised float64 array whose data starts `offset` bytes past a 64-byte line."""
    count = int(np.prod(shape))
    raw = np.empty(count * 8 + 128, np.uint8)
    start = (offset - raw.ctypes.data) % 64
    return raw[start:start + count * 8].view(np.float64).reshape(shape)


def backward_into(dx, y, dy, scale):
    rows, cols = y.shape
    status = lib.mt_softmax_backward_f64(ffi.cast("double *", y.ctypes.data),
                                         ffi.cast("double *", dy.ctypes.data),
                                         ffi.cast("double *", dx.ctypes.data), rows, cols, scale)
    assert status == 0


@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("cols", [1000, 999])
@pytest.mark.parametrize("count", [1, 2])
def test_streamed_rows_equal_rows_of_a_small_call(isa, cols, count, threads):
    threads(count)  # (conftest.py's fixture: the count is put back after)
    rows = STREAM_BYTES // (8 * cols) + 3  # just over the size where streaming starts
    rng = np.random.default_rng(cols)
    y = N.softmax_forward(rng.standard_normal((rows, cols)))
    dy = rng.standard_normal((rows, cols))
    picked = [0, 1, rows // 2, rows - 1]
    with C.isa(isa):
        for offset, scale in [(0, 1.0), (8, 0.5), (16, 1.0), (24, 2.0), (32, 1.0), (40, 0.5),
                              (48, 1.0), (56, 2.0)]:
            dx = array_at((rows, cols), offset)
            dx.fill(np.nan)  # every element must be written
            backward_into(dx, y, dy, scale)
            small = array_at((len(picked), cols), offset)  # 32 KiB: ordinary stores
            backward_into(small, np.ascontiguousarray(y[picked]),
                          np.ascontiguousarray(dy[picked]), scale)
            np.testing.assert_array_equal(dx[picked], small, err_msg=f"dx at +{offset} bytes")
            assert not np.isnan(dx).any()
        with C.isa("reference"):
            reference = C.softmax_backward(y, dy)
    np.testing.assert_allclose(C.softmax_backward(y, dy), reference, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(reference, N.softmax_backward(y, dy), rtol=1e-12, atol=1e-15)
