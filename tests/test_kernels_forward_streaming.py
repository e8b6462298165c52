"""Streamed forward outputs (softmax, log-softmax) give the bits of ordinary stores.

At the AVX-512 level, an unmasked softmax or log-softmax output of 16 MiB and up whose rows are
whole 64-byte lines is written around the cache (tuned/softmax_rows.h: softmax_rows_plain,
tuned/softmax_tuned.c: log_softmax_rows; MT_STREAM_BYTES and streams_rows in tuned/row_ops.h):
the pipelined loop that exponentiates a row stores the previous row's finished values with
streaming stores, softmax's exps going to a ring of two rows first. None of this changes the
arithmetic, on 1 and 2 threads: every row of a large call equals the same row computed in a
call too small to stream, bit for bit, for outputs that stream (rows of whole lines, y on a
line) and that do not (rows that move the boundary, y 16 bytes into a line), softmax in place
too, with a row of all -inf and a row holding a NaN; the reference level agrees within
rounding. (At the AVX2 level, which never streams, a large call's rows take the one-loop
pipeline and a small call's separate passes, whose sums may differ in the last bit: there
only the reference is compared.)
"""
import numpy as np
import pytest
from placed_arrays import array_at

try:
    from minitorch._C import ffi, lib
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

pytestmark = pytest.mark.skipif(C is None, reason="C extension not built")

TUNED_ISAS = [] if C is None else list(C.ISA_LEVELS[1:C.ISA_LEVELS.index(C.best_isa()) + 1])
AVX512 = [isa for isa in TUNED_ISAS if isa.startswith("avx512")]
STREAM_BYTES = 16 << 20


def forward_into(kind, y, x, scale):
    """mt_<kind>_forward of x into y (scale: softmax's only; y may be x for softmax)."""
    rows, cols = x.shape
    sfx, ctype = ("f64", "double *") if x.dtype == np.float64 else ("f32", "float *")
    px, py = (ffi.cast(ctype, a.ctypes.data) for a in (x, y))
    if kind == "softmax":
        status = getattr(lib, f"mt_softmax_forward_{sfx}")(px, py, rows, cols, scale, ffi.NULL,
                                                            ffi.NULL, 0, ffi.NULL, ffi.NULL, 0, 0)
    else:
        status = getattr(lib, f"mt_log_softmax_forward_{sfx}")(px, py, rows, cols)
    assert status == 0


# (kind, dtype, cols): rows of whole lines (streamed where y is on a line), and rows that are not
CASES = [(kind, dtype, cols) for kind in ("softmax", "log_softmax")
         for dtype, line_cols, other_cols in ((np.float64, 1000, 999), (np.float32, 1024, 1000))
         for cols in (line_cols, other_cols)]


@pytest.mark.parametrize("kind,dtype,cols", CASES,
                         ids=[f"{k}-{np.dtype(d).name}-{c}" for k, d, c in CASES])
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("count", [1, 2])
def test_streamed_rows_equal_rows_of_a_small_call(kind, dtype, cols, isa, count, threads):
    threads(count)  # (conftest.py's fixture: the count is put back after)
    rows = STREAM_BYTES // (np.dtype(dtype).itemsize * cols) + 3  # just over where it starts
    rng = np.random.default_rng(cols)
    x = (rng.standard_normal((rows, cols)) * 4).astype(dtype)
    all_minus_inf, with_nan = 1, rows // 2
    x[all_minus_inf] = -np.inf
    x[with_nan, 7] = np.nan
    picked = [0, all_minus_inf, 2, with_nan, rows - 2, rows - 1]
    scale = 0.5 if kind == "softmax" else 1.0
    bit_for_bit = isa in AVX512
    with C.isa(isa):
        small = np.empty((len(picked), cols), dtype)  # too small to stream
        forward_into(kind, small, np.ascontiguousarray(x[picked]), scale)
        placements = [0, 16] + (["in place"] if kind == "softmax" else [])
        for placement in placements:
            if placement == "in place":
                y = array_at((rows, cols), 0, dtype)
                y[...] = x
                forward_into(kind, y, y, scale)
            else:
                y = array_at((rows, cols), placement, dtype)
                y.fill(7.0)  # every element must be written
                forward_into(kind, y, x, scale)
            if bit_for_bit:
                np.testing.assert_array_equal(y[picked], small, err_msg=f"y: {placement}")
            assert not (y == 7.0).any()
            assert np.isnan(y[with_nan]).all() and not np.isnan(np.delete(y, with_nan, 0)).any()
        tuned = y
        with C.isa("reference"):
            reference = np.empty_like(x)
            forward_into(kind, reference, x, scale)
    tol = dict(rtol=1e-12, atol=1e-15) if dtype == np.float64 else dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(tuned, reference, equal_nan=True, **tol)
