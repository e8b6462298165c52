"""Layer norm's streamed float64 output where it lies just above its input modulo 4096.

Outputs of 16 MiB and up are written around the cache (tuned/layer_norm_tuned.c). Where y
starts a few bytes above x modulo 4096, the forward goes through a stage in L1 instead of
storing y straight (4K aliasing: see MT_ALIAS_WINDOW in tuned/row_ops.h). These tests place y
at chosen offsets from x, call the C entry point on those arrays, and hold every placement to
the one that streams directly (2048 bytes apart): the arithmetic is the same, so the bits are,
at each tuned ISA level, on 1 and 2 threads, with and without weight and bias, on rows whose
length is and is not a multiple of the stage (4 KiB).
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
# bytes from x up to y modulo 4096: inside the window (staged), at its edge, and clear of it
OFFSETS = [8, 48, 64, 128, 136, 1024, 4088]
DIRECT = 2048


def ptr(a):
    return ffi.NULL if a is None else ffi.cast("double *", a.ctypes.data)


def forward_into(y, x, w, b):
    """mt_layer_norm_forward_f64 writing into y; returns (mean, rstd)."""
    rows, cols = x.shape
    mean, rstd = np.empty(rows), np.empty(rows)
    status = lib.mt_layer_norm_forward_f64(ptr(x), ptr(w), ptr(b), ptr(y), ptr(mean), ptr(rstd),
                                           rows, cols, 1e-5)
    assert status == 0
    return mean, rstd


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    previous = C.get_num_threads()
    C.set_num_threads(request.param)
    yield request.param
    C.set_num_threads(previous)


@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("cols", [1024, 1031])
@pytest.mark.parametrize("affine", [True, False], ids=["affine", "plain"])
def test_staged_output_equals_direct_stream(isa, cols, affine, threads):
    rows = (16 << 20) // (8 * cols) + 1  # just over the 16 MiB where streaming starts
    rng = np.random.default_rng(cols)
    x = array_at((rows, cols), 16, boundary=4096)
    x[...] = rng.standard_normal((rows, cols)) * 3 + 1
    w = rng.standard_normal(cols) if affine else None
    b = rng.standard_normal(cols) if affine else None
    with C.isa(isa):
        expected = array_at((rows, cols), 16 + DIRECT, boundary=4096)
        mean_ref, rstd_ref = forward_into(expected, x, w, b)
        for offset in OFFSETS:
            y = array_at((rows, cols), 16 + offset, boundary=4096)
            y.fill(np.nan)  # every element must be written
            mean, rstd = forward_into(y, x, w, b)
            np.testing.assert_array_equal(y, expected, err_msg=f"y {offset} bytes above x")
            np.testing.assert_array_equal(mean, mean_ref)
            np.testing.assert_array_equal(rstd, rstd_ref)
    y_numpy, _, _ = N.layer_norm_forward(x, w, b, eps=1e-5)
    np.testing.assert_allclose(expected, y_numpy, rtol=1e-11, atol=1e-13)
