"""Layer-norm rows of up to 512 bytes (a small Transformer's d_model: 128 float32, 64 float64),
and of up to 1024 bytes in arrays of up to 4 MiB, which the tuned levels take one row per vector
lane (8 float32 or 4 float64 rows in lockstep: csrc/tuned/layer_norm_tuned.c,
layer_norm_lockstep and backward_short_rows), against the plain reference level, forward and
backward: widths on each side of the vector lengths and of the 512- and 1024-byte limits (the
two widths with copies of their own); row counts that leave a partial group and that cross the
backward's flush of its column sums every 64 rows; with and without weight and bias; 1 and 2
threads, every tuned level; 1024-byte rows on each side of the 4 MiB limit. Then what the
lockstep must not change: a row's outputs do not depend on the rows beside it, the statistics
keep their precision where E[x^2] - E[x]^2 would lose it all (also for rows whose first elements,
the shift's sample, sit apart from the rest), and rows with NaN or inf come out as the
reference's.
"""
import numpy as np
import pytest

from test_kernels import C, needs_c, TUNED_ISAS, c_threads

SHORT_ROW_BYTES = 512
GROUPED_ROW_BYTES = 1024  # in arrays up to GROUPED_ARRAY_BYTES
GROUPED_ARRAY_BYTES = 4 << 20


def tight(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


def widths(dtype):
    """Across every vector length (4 .. 16 lanes) and up to one past the 1024-byte limit."""
    short, grouped = (limit // np.dtype(dtype).itemsize
                      for limit in (SHORT_ROW_BYTES, GROUPED_ROW_BYTES))
    return sorted({1, 3, 4, 5, 8, 15, 16, 17, 31, 33, short - 1, short, short + 1,
                   grouped - 1, grouped, grouped + 1})


def forward_and_backward(x, w, b, dy):
    y, mean, rstd = C.layer_norm_forward(x, w, b, eps=1e-5)
    dx, dw, db = C.layer_norm_backward(dy, x, w, mean, rstd)
    return y, mean, rstd, dx, dw, db


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
def test_short_rows_match_the_reference_level(affine, dtype, threads, isa):
    rng = np.random.default_rng(len(affine) + threads)
    for cols in widths(dtype):
        for rows in (1, 3, 4, 8, 9, 17, 8 * 16 + 6):  # partial groups; past two flushes of 64
            x = (rng.standard_normal((rows, cols)) * 3 + 0.5).astype(dtype)
            dy = rng.standard_normal((rows, cols)).astype(dtype)
            w = rng.standard_normal(cols).astype(dtype) if affine != "none" else None
            b = rng.standard_normal(cols).astype(dtype) if affine == "both" else None
            with c_threads(threads, "reference"):
                expected = forward_and_backward(x, w, b, dy)
            with c_threads(threads, isa):
                got = forward_and_backward(x, w, b, dy)
            names = ["y", "mean", "rstd", "dx", "dweight", "dbias"]
            for name, g, e in zip(names, got, expected):
                if e is None:
                    assert g is None, name
                    continue
                # the column sums add `rows` terms: their error grows with that many; dx is
                # rstd times a difference that cancels (rstd = 1/sqrt(eps) for one column)
                scale = {"dweight": np.sqrt(rows), "dbias": np.sqrt(rows),
                         "dx": max(1.0, float(expected[2].max()))}.get(name, 1.0)
                np.testing.assert_allclose(
                    g, e, rtol=tight(dtype)["rtol"], atol=tight(dtype)["atol"] * scale,
                    err_msg=f"{name}, {rows} x {cols}")


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_does_not_depend_on_its_neighbours(dtype, isa):
    """Every row of a 9-row array (two groups and one row alone) equals, bit for bit, the same
    row normalized alone: decoding one token at a time gives what the whole sequence gives."""
    rng = np.random.default_rng(3)
    cols = GROUPED_ROW_BYTES // np.dtype(dtype).itemsize
    x = rng.standard_normal((9, cols)).astype(dtype)
    dy = rng.standard_normal((9, cols)).astype(dtype)
    w, b = rng.standard_normal(cols).astype(dtype), rng.standard_normal(cols).astype(dtype)
    with c_threads(1, isa):
        y, mean, rstd, dx, _, _ = forward_and_backward(x, w, b, dy)
        for r in range(9):
            y_r, mean_r, rstd_r, dx_r, _, _ = forward_and_backward(x[r:r + 1], w, b, dy[r:r + 1])
            np.testing.assert_array_equal(y_r[0], y[r])
            np.testing.assert_array_equal(mean_r[0], mean[r])
            np.testing.assert_array_equal(rstd_r[0], rstd[r])
            np.testing.assert_array_equal(dx_r[0], dx[r])


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("first", ["typical", "outlier", "apart"])
def test_short_row_statistics_do_not_cancel(first, dtype, isa):
    """Data at 1000 with a spread of 1e-2: the variance is summed around a shift near each
    row's mean and keeps full precision (one pass of E[x^2] - E[x]^2 in float32 gives an rstd off
    by orders of magnitude). The outlier rows start 11 deviations away; in the rows "apart", the
    first 32 elements (the sample the shift is taken from) sit 1 away from the rest, 100
    deviations: the shift is then far from the mean, and the bound on the subtraction's loss (at
    most 3 bits, the sample being at least 1/8 of the row) is what keeps the precision."""
    rng = np.random.default_rng(11)
    cols = GROUPED_ROW_BYTES // np.dtype(dtype).itemsize
    x64 = 1000.0 + 1e-2 * rng.standard_normal((13, cols))
    if first == "outlier":
        x64[:, :4] = 1000.0 + 0.11
    if first == "apart":
        x64[::2, :32] += 1.0
    x = x64.astype(dtype)
    with c_threads(1, isa):
        y, mean, rstd = C.layer_norm_forward(x, None, None, eps=0.0)
    exact = x.astype(np.float64)
    mean_ref, rstd_ref = exact.mean(-1), 1 / exact.std(-1)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-6 if dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=5e-6 if dtype == np.float32 else 1e-12)
    y_ref = (exact - mean_ref[:, None]) * rstd_ref[:, None]
    np.testing.assert_allclose(y, y_ref, atol=2e-3 if dtype == np.float32 else 1e-9)


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_non_finite_short_rows_match_the_reference_level(dtype, isa):
    """NaN or inf in some rows of a group: those rows are NaN (mean too, as PyTorch's), the
    rows beside them are untouched."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 32)).astype(dtype)
    x[1, 3], x[2, 0], x[4, 31] = np.nan, np.inf, -np.inf
    with c_threads(1, "reference"):
        expected = C.layer_norm_forward(x, None, None, eps=1e-5)
    with c_threads(1, isa):
        got = C.layer_norm_forward(x, None, None, eps=1e-5)
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(np.isnan(g), np.isnan(e))
        np.testing.assert_allclose(g, e, **tight(dtype))
    assert np.isnan(got[1][[1, 2, 4]]).all() and not np.isnan(got[1][[0, 3, 5]]).any()


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_1024_byte_rows_on_each_side_of_the_array_limit(dtype, isa):
    """1024-byte rows are grouped in an array of 4 MiB and take the row path one row above it:
    both match the reference level on 2 threads."""
    cols = GROUPED_ROW_BYTES // np.dtype(dtype).itemsize
    grouped_rows = GROUPED_ARRAY_BYTES // GROUPED_ROW_BYTES
    rng = np.random.default_rng(17)
    x = (rng.standard_normal((grouped_rows + 1, cols)) * 2 - 1).astype(dtype)
    w, b = rng.standard_normal(cols).astype(dtype), rng.standard_normal(cols).astype(dtype)
    for rows in (grouped_rows, grouped_rows + 1):
        with c_threads(2, "reference"):
            expected = C.layer_norm_forward(x[:rows], w, b, eps=1e-5)
        with c_threads(2, isa):
            got = C.layer_norm_forward(x[:rows], w, b, eps=1e-5)
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, **tight(dtype), err_msg=f"{rows} rows")
