"""Layer norm's streamed float64 backward gives the same bits wherever dx starts in a line.

From 16 MiB of output on, the float64 backward writes dx around the cache (tuned/
layer_norm_tuned.c): each row's whole 64-byte lines are streamed and the parts of lines at its
ends take ordinary stores (whole_lines in tuned/row_ops.h), and each thread's partial column
sums for dweight and dbias start where dx does within a line. Neither changes the arithmetic,
so dx, dweight and dbias must be the same bits with dx at every 8-byte offset of a line as with
dx on a line's start, at each tuned ISA level, on 1 and 2 threads, with and without weight, on
rows whose length keeps (512) or moves (509) the offset from row to row. The result at a line's
start agrees with numpy's composite within rounding. It imports numpy, pytest and the C backend
only.
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


def ptr(a):
    return ffi.NULL if a is None else ffi.cast("double *", a.ctypes.data)


def backward_into(dx, dy, x, w, mean, rstd):
    """mt_layer_norm_backward_f64 writing into dx; returns (dweight, dbias), None without w."""
    rows, cols = x.shape
    dw = None if w is None else np.empty(cols)
    db = None if w is None else np.empty(cols)
    status = lib.mt_layer_norm_backward_f64(ptr(dy), ptr(x), ptr(w), ptr(mean), ptr(rstd),
                                            ptr(dx), ptr(dw), ptr(db), rows, cols)
    assert status == 0
    return dw, db


@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("cols", [512, 509])
@pytest.mark.parametrize("weighted", [True, False], ids=["weight", "plain"])
@pytest.mark.parametrize("count", [1, 2])
def test_dx_placement_does_not_change_the_bits(isa, cols, weighted, count, threads):
    threads(count)  # (conftest.py's fixture: the count is put back after)
    rows = STREAM_BYTES // (8 * cols) + 3  # just over the size where streaming starts
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols)) * 3 + 1
    dy = rng.standard_normal((rows, cols))
    w = rng.standard_normal(cols) if weighted else None
    _, mean, rstd = N.layer_norm_forward(x, w, None, eps=1e-5)
    with C.isa(isa):
        expected = array_at((rows, cols), 0)
        expected.fill(np.nan)  # every element must be written
        dw_ref, db_ref = backward_into(expected, dy, x, w, mean, rstd)
        for offset in range(8, 64, 8):
            dx = array_at((rows, cols), offset)
            dx.fill(np.nan)  # every element must be written
            dw, db = backward_into(dx, dy, x, w, mean, rstd)
            np.testing.assert_array_equal(dx, expected, err_msg=f"dx at +{offset} bytes")
            if weighted:
                np.testing.assert_array_equal(dw, dw_ref, err_msg=f"dx at +{offset} bytes")
                np.testing.assert_array_equal(db, db_ref, err_msg=f"dx at +{offset} bytes")
    dx_numpy, dw_numpy, db_numpy = N.layer_norm_backward(dy, x, w, mean, rstd)
    np.testing.assert_allclose(expected, dx_numpy, rtol=1e-10, atol=1e-12)
    if weighted:
        np.testing.assert_allclose(dw_ref, dw_numpy, rtol=1e-10, atol=1e-9)
        np.testing.assert_allclose(db_ref, db_numpy, rtol=1e-10, atol=1e-9)
