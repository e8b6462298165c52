"""Softmax rows short enough to be held in registers whole (csrc/tuned/softmax_short_rows.h:
up to 512 bytes at the AVX-512 level; softmax_short_rows_avx2.c: up to 128 bytes, the forward,
at the AVX2 level; i.e. an attention head's keys) against the plain reference level: widths on
each side of every vector count the paths compile (1, 2, 4, 8 vectors of 64 bytes, 1 to 4 of 32
bytes, and the first width past each, which takes the general path), unmasked and causal, scale
1 and not, the backward; row counts that leave a partial group of rows in lockstep; rows whose
max is -inf (all -inf, or a NaN beside -inf) in every place of a group, which the general path
takes over; 1 and 2 threads, every tuned level (the levels without the path run the same
checks).

Tolerances as test_kernels_row_pipeline.py's: the tuned exp is within 2 ulp and the sums run
in T lanes added in double.
"""
import numpy as np
import pytest

from test_kernels import C, needs_c, TUNED_ISAS, c_threads


def tight(dtype):
    return dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)


def lanes(dtype, vector_bytes=64):
    return vector_bytes // np.dtype(dtype).itemsize


def widths(dtype):
    """1 .. 8 vectors of 64 bytes and 1 .. 4 of 32, one element either side of each count,
    then past the longest."""
    v, w = lanes(dtype), lanes(dtype, 32)
    return sorted({1, v - 1, v, v + 1, 2 * v, 2 * v + 1, 3 * v, 4 * v, 4 * v + 1, 7 * v + 3,
                   8 * v, 8 * v + 1, w - 1, w, w + 1, 2 * w + 3, 3 * w, 4 * w - 1, 4 * w + 1})


def reference_and_tuned(isa, threads, call):
    with c_threads(threads, "reference"):
        expected = call()
    with c_threads(threads, isa):
        got = call()
    return expected, got


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_short_rows_match_the_reference_level(scale, causal, dtype, threads, isa):
    rng = np.random.default_rng(int(scale * 8) + 2 * causal)
    for cols in widths(dtype):
        rows = 4 * 5 + 3  # five groups of four and a partial one
        x = (rng.standard_normal((rows, cols)) * 4).astype(dtype)
        # causal rows count their query along the last dim of the leading ones: 23 rows of
        # queries 0 .. 22 (rows past the keys keep them all)
        x3 = x.reshape(1, rows, cols)
        expected, got = reference_and_tuned(
            isa, threads, lambda: C.softmax_forward(x3, scale=scale, causal=causal))
        np.testing.assert_allclose(got, expected, **tight(dtype), err_msg=f"cols {cols}")
        if causal:
            assert (got[0][np.triu(np.ones((rows, cols), bool), 1)] == 0).all()
        np.testing.assert_allclose(got.sum(-1), 1.0, rtol=8 * tight(dtype)["rtol"])


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_with_max_minus_inf_in_every_place_of_a_group(dtype, threads, isa):
    """All -inf gives zeros, a NaN among -inf gives NaN, in whichever of four rows run side by
    side it lies; the rows around it keep their values."""
    rng = np.random.default_rng(5)
    for cols in (3, lanes(dtype) * 2):
        for place in range(9):
            x = rng.standard_normal((9, cols)).astype(dtype)
            x[place] = -np.inf
            if place % 2:
                x[place, cols // 2] = np.nan
            expected, got = reference_and_tuned(isa, threads, lambda: C.softmax_forward(x))
            np.testing.assert_allclose(got, expected, equal_nan=True, **tight(dtype))
            assert (np.isnan(got[place]).all() if place % 2 else (got[place] == 0).all())


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_causal_row_whose_live_columns_are_minus_inf(dtype, isa):
    """A causal row whose only live entries are -inf is empty: zeros, as the reference."""
    x = np.random.default_rng(6).standard_normal((1, 6, 8)).astype(dtype)
    x[0, 0, 0] = -np.inf  # query 0 sees key 0 only
    x[0, 2, :3] = -np.inf  # query 2 sees keys 0 .. 2
    for threads in (1, 2):
        expected, got = reference_and_tuned(
            isa, threads, lambda: C.softmax_forward(x, scale=0.5, causal=True))
        np.testing.assert_allclose(got, expected, **tight(dtype))
        assert (got[0, 0] == 0).all() and (got[0, 2] == 0).all()


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1.0, 0.125])
def test_short_rows_backward_matches_the_reference_level(scale, dtype, threads, isa):
    rng = np.random.default_rng(7)
    for cols in widths(dtype):
        y = C.softmax_forward(rng.standard_normal((13, cols)).astype(dtype))
        dy = rng.standard_normal(y.shape).astype(dtype)
        expected, got = reference_and_tuned(
            isa, threads, lambda: C.softmax_backward(y, dy, scale=scale))
        np.testing.assert_allclose(got, expected, **tight(dtype), err_msg=f"cols {cols}")
