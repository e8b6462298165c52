"""Streamed backward outputs (softmax, log-softmax, layer norm) give the bits of ordinary stores.

Large backward outputs are written around the cache: softmax's and layer norm's float64 ones
from 16 MiB (tuned/softmax_tuned.c, tuned/layer_norm_tuned.c; MT_STREAM_BYTES in
tuned/row_ops.h), softmax's float32 ones too, and log-softmax's at the AVX-512 level from 16 MiB
(float32 below 32 MiB only where dx lies at y's and dy's offset in a line: here 16 bytes,
numpy's). Each row's whole 64-byte lines are streamed, and the parts of lines at its ends take
ordinary stores; layer norm's backward also keeps each thread's column sums at dx's offset in
a line. None of this changes the arithmetic, at each tuned ISA level, on 1 and 2 threads, with
dx at every 8-byte offset of a 64-byte line:
- softmax and log-softmax: every row of a large call equals the same row computed in a call too
  small to stream, bit for bit, with rows whose length keeps or moves the boundary (1000 and
  999 columns) and (softmax) a scale;
- layer norm: dx, dweight and dbias are the same bits wherever dx starts, with rows of 512 and
  509 columns, with and without weight.
The reference level (or numpy's composite) agrees within rounding.
"""
import numpy as np
import pytest
from placed_arrays import array_at

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


CASES = [("softmax", np.float64), ("softmax", np.float32), ("log_softmax", np.float64),
         ("log_softmax", np.float32)]


@pytest.mark.parametrize("kind,dtype", CASES, ids=[f"{k}-{np.dtype(d).name}" for k, d in CASES])
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("cols", [1000, 999])
@pytest.mark.parametrize("count", [1, 2])
def test_streamed_rows_equal_rows_of_a_small_call(kind, dtype, isa, cols, count, threads):
    threads(count)  # (conftest.py's fixture: the count is put back after)
    itemsize = np.dtype(dtype).itemsize
    rows = STREAM_BYTES // (itemsize * cols) + 3  # just over the size where streaming starts
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


def ptr(a):
    return ffi.NULL if a is None else ffi.cast("double *", a.ctypes.data)


def layer_norm_backward_into(dx, dy, x, w, mean, rstd):
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
def test_layer_norm_dx_placement_does_not_change_the_bits(isa, cols, weighted, count, threads):
    threads(count)
    rows = STREAM_BYTES // (8 * cols) + 3
    rng = np.random.default_rng(cols)
    x = rng.standard_normal((rows, cols)) * 3 + 1
    dy = rng.standard_normal((rows, cols))
    w = rng.standard_normal(cols) if weighted else None
    _, mean, rstd = N.layer_norm_forward(x, w, None, eps=1e-5)
    with C.isa(isa):
        results = []
        for offset in OFFSETS:
            dx = array_at((rows, cols), offset)
            dx.fill(np.nan)  # every element must be written
            results.append((dx, *layer_norm_backward_into(dx, dy, x, w, mean, rstd)))
    expected = results[0]
    for offset, got in zip(OFFSETS[1:], results[1:]):
        for name, a, b in zip(("dx", "dweight", "dbias"), got, expected):
            if b is not None:
                np.testing.assert_array_equal(a, b, err_msg=f"{name}, dx at +{offset} bytes")
    for a, b in zip(expected, N.layer_norm_backward(dy, x, w, mean, rstd)):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-9)
