"""Kernel tests of dropout's factors (csrc/dropout.c and tuned/dropout_tuned.c):

- the C backend's ``dropout_keep`` equals the numpy backend's bit for bit, and every tuned level
  equals the reference level, float32 and float64, 1 and 2 threads, on counts around the pair
  and vector boundaries and beyond the thread threshold, at the seed's and threshold's extremes;
- the bits behave as uniform draws: the kept share at several thresholds, on even and on odd
  elements, is 1 - threshold/2^32 within 5 standard deviations; neighbours are uncorrelated;
  seeds one apart give unrelated masks;
- bad arguments raise the same Python error on both backends, and the C entry points refuse a
  negative count or a missing array with MT_ERR_ARGS.
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""
import re

import numpy as np
import pytest

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, TUNED_ISAS, C, c_threads, needs_c

COUNTS = [0, 1, 2, 3, 15, 16, 17, 31, 33, 100_003]  # the last: over the thread threshold
SEEDS = [0, 1, 0x9E3779B97F4A7C15, 2 ** 64 - 1]
THRESHOLDS = [0, 1, 2 ** 31, round(0.1 * 2 ** 32), 2 ** 32 - 1]


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_c_factors_equal_the_numpy_backends(dtype, threads, isa):
    with c_threads(threads, isa):
        for count in COUNTS:
            for seed in SEEDS:
                for threshold in THRESHOLDS:
                    got = C.dropout_keep(count, seed, threshold, 1.25, dtype)
                    want = N.dropout_keep(count, seed, threshold, 1.25, dtype)
                    assert got.dtype == want.dtype == dtype and got.shape == (count,)
                    np.testing.assert_array_equal(got, want,
                                                  err_msg=f"{count} {seed} {threshold}")


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_tuned_levels_equal_the_reference(dtype, threads, isa):
    for count in COUNTS:
        with c_threads(1, "reference"):
            want = C.dropout_keep(count, 42, round(0.3 * 2 ** 32), 1 / 0.7, dtype)
        with c_threads(threads, isa):
            got = C.dropout_keep(count, 42, round(0.3 * 2 ** 32), 1 / 0.7, dtype)
        np.testing.assert_array_equal(got, want, err_msg=str(count))


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
def test_the_bits_behave_as_uniform_draws(backend_name):
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    n = 400_000
    for threshold in (2 ** 29, 2 ** 31, 3 * 2 ** 30, round(0.9 * 2 ** 32)):
        kept = kernels.dropout_keep(n, 7, threshold, 1.0, np.float32) != 0
        p = threshold / 2 ** 32
        for name, part in (("even", kept[0::2]), ("odd", kept[1::2])):
            sigma = (p * (1 - p) / part.size) ** 0.5
            assert abs(part.mean() - (1 - p)) < 5 * sigma, (threshold, name)
    halves = kernels.dropout_keep(n, 7, 2 ** 31, 1.0, np.float64) - 0.5  # +-0.5, mean ~0
    for lag in (1, 2, 3):
        assert abs(np.mean(halves[:-lag] * halves[lag:])) < 5 * 0.25 / n ** 0.5, lag
    other = kernels.dropout_keep(n, 8, 2 ** 31, 1.0, np.float64) - 0.5
    assert abs(np.mean(halves * other)) < 5 * 0.25 / n ** 0.5


def bad_calls():
    """(id, args, error, text): the same bad arguments for both backends."""
    return [
        ("count negative", (-1, 0, 0, 1.0, np.float32), ValueError, "count must be in [0, 2^63)"),
        ("count float", (2.0, 0, 0, 1.0, np.float32), TypeError, "count must be an int"),
        ("seed negative", (4, -1, 0, 1.0, np.float32), ValueError, "seed must be in [0, 2^64)"),
        ("seed too big", (4, 2 ** 64, 0, 1.0, np.float32), ValueError, "seed must be in"),
        ("threshold too big", (4, 0, 2 ** 32, 1.0, np.float32), ValueError,
         "threshold must be in [0, 2^32)"),
        ("threshold bool", (4, 0, True, 1.0, np.float32), TypeError, "threshold must be an int"),
        ("dtype int", (4, 0, 0, 1.0, np.int32), TypeError, "dtype must be float32 or float64"),
    ]


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
@pytest.mark.parametrize("case", bad_calls(), ids=[c[0] for c in bad_calls()])
def test_bad_arguments_raise_on_both_backends(backend_name, case):
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    _, args, error, text = case
    with pytest.raises(error, match=re.escape(text)):
        kernels.dropout_keep(*args)


@needs_c
@pytest.mark.parametrize("suffix", ["f32", "f64"])
def test_c_entry_points_refuse_a_negative_count_or_no_array(suffix):
    from minitorch._C import ffi, lib
    keep = getattr(lib, f"mt_dropout_keep_{suffix}")
    buf = ffi.new(f"{'float' if suffix == 'f32' else 'double'}[]", 4)
    assert keep(buf, 4, 1, 0, 1.0) == 0 and list(buf) == [1.0] * 4
    assert keep(buf, -1, 1, 0, 1.0) == -2
    assert keep(ffi.NULL, 4, 1, 0, 1.0) == -2
    assert keep(ffi.NULL, 0, 1, 0, 1.0) == 0
