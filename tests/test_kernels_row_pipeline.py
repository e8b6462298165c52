"""The row kernels that work on a thread's rows as a pipeline (csrc/tuned/softmax_tuned.c,
cross_entropy_tuned.c: a row's exp loop also takes the next row's max and finishes the
previous row) against the plain reference level and numpy: many rows, so that the pipeline runs
across rows and across the two threads' ranges; special rows (all -inf, a NaN, +inf, a -inf
entry) between ordinary ones, where the pipeline must restart; widths that are multiples of the
vector and not, wider than a sum block (1024), and rows too long to pipeline (softmax above 128
KiB); more than 1 MiB of rows per thread, whose rows ahead are prefetched into L2 instead of L1
(row_ops.h: MT_AHEAD_TO_L2); float32 and float64, 1 and 2 threads, every tuned ISA level.

Tolerances: the tuned levels' exp is within 2 ulp (fast_exp.h) and their sums run in T lanes
added in double, against the reference's libm exp and double sums: rtol 2e-6 (float32), 1e-12
(float64), as test_kernels.py's test_tuned_levels_match_the_reference_level; log-softmax and
the cross-entropy (x - lse: rounded in T) also within 8 ulp of the row's largest |x|.
"""
import contextlib

import numpy as np
import pytest

from minitorch.backends import numpy_backend as N

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")
TUNED_ISAS = [] if C is None else list(C.ISA_LEVELS[1:C.ISA_LEVELS.index(C.best_isa()) + 1])
# (300, 1000) and (300, 1019) stream more than 1 MiB a thread, which the AVX2 level's one
# loop needs (row_ops.h: MT_PIPELINED_avx2); 1019 leaves a tail after the vectors
SHAPES = [(40, 16), (37, 33), (64, 512), (33, 1000), (9, 1024), (5, 2500), (300, 1000),
          (300, 1019)]


def tight(dtype):
    return dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)


@contextlib.contextmanager
def level(isa, threads):
    previous = C.get_num_threads()
    C.set_num_threads(threads)
    try:
        with C.isa(isa):
            yield
    finally:
        C.set_num_threads(previous)


def rows_with_specials(rng, rows, cols, dtype):
    """Random rows (scale 4), with every fourth row special: all -inf, one NaN, one +inf, one
    -inf entry, in turn (the first and last rows included)."""
    x = (rng.standard_normal((rows, cols)) * 4).astype(dtype)
    for i, r in enumerate(range(0, rows, 4)):
        kind = i % 4
        c = rng.integers(cols)
        if kind == 0:
            x[r] = -np.inf
        elif kind == 1:
            x[r, c] = np.nan
        elif kind == 2:
            x[r, c] = np.inf
        else:
            x[r, c] = -np.inf
    x[-1] = -np.inf
    return x


def lse_summed(loss_and_lse):
    loss, lse = loss_and_lse
    return loss, lse[:, 0] + lse[:, 1]


def run(isa, threads, fn):
    with level(isa, threads):
        return fn()


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("rows,cols", SHAPES)
def test_pipelined_rows_match_the_reference_level(rows, cols, dtype, threads, isa):
    rng = np.random.default_rng(rows * 7919 + cols)
    x = rows_with_specials(rng, rows, cols, dtype)
    target = rng.integers(0, cols, rows).astype(np.int64)
    kernels = {
        "softmax": lambda: C.softmax_forward(x),
        "softmax scaled": lambda: C.softmax_forward(x, scale=0.5),
        "softmax negative scale": lambda: C.softmax_forward(x, scale=-0.25),
        "log_softmax": lambda: C.log_softmax_forward(x),
        # loss, and lse as max + log-sum (where a NaN hides, the reference's max is NaN and the
        # tuned levels' the max of the rest: the pair's sum is NaN on both)
        "cross_entropy": lambda: lse_summed(C.cross_entropy_forward(
            x, target, label_smoothing=0.1, reduction="none")),
    }
    with np.errstate(invalid="ignore", over="ignore"):
        for name, call in kernels.items():
            expected = run("reference", threads, call)
            got = run(isa, threads, call)
            close = tight(dtype)
            if name != "softmax":  # x - lse: rounded to an ulp of the row's largest |x - max|
                finite = np.abs(x[np.isfinite(x)])
                close["atol"] = max(close["atol"], 8 * np.finfo(dtype).eps * finite.max())
            for g, e in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, expected))):
                np.testing.assert_allclose(g, e, equal_nan=True, **close,
                                           err_msg=f"{name} at {isa}")
        y = run(isa, threads, lambda: C.softmax_forward(x))
        logp = run(isa, threads, lambda: C.log_softmax_forward(x))
    all_minus_inf = np.isneginf(x).all(-1)
    has_nan_or_inf = (np.isnan(x) | np.isposinf(x)).any(-1)
    assert (y[all_minus_inf] == 0).all() and np.isneginf(logp[all_minus_inf]).all()
    assert np.isnan(y[has_nan_or_inf]).all() and np.isnan(logp[has_nan_or_inf]).all()
    ordinary = ~all_minus_inf & ~has_nan_or_inf
    np.testing.assert_allclose(y[ordinary].sum(-1), 1.0, rtol=tight(dtype)["rtol"] * 4)
    assert (y[ordinary][np.isneginf(x[ordinary])] == 0).all()
    np.testing.assert_allclose(y[ordinary], N.softmax_forward(x[ordinary]), rtol=3e-5 if
                               dtype == np.float32 else 1e-11, atol=1e-30)


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_rows_too_long_to_pipeline(dtype, isa):
    """Rows above 128 KiB take the row-at-a-time path: still the reference's result."""
    rng = np.random.default_rng(3)
    x = rows_with_specials(rng, 5, 40000, dtype)
    for threads in (1, 2):
        expected = run("reference", threads, lambda: C.softmax_forward(x, scale=0.5))
        got = run(isa, threads, lambda: C.softmax_forward(x, scale=0.5))
        np.testing.assert_allclose(got, expected, equal_nan=True, **tight(dtype))


@needs_c
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype,rows,cols", [(np.float32, 256, 8192 * 4 + 3),
                                             (np.float64, 520, 4099)])
def test_cross_entropy_rows_from_memory_match_the_reference_level(dtype, rows, cols, threads):
    """Logits too big to stay in cache (32 MiB of float32, 16 MiB of float64): at the AVX-512
    level the backward streams dx around the cache, adding each target's -g on the way
    (fast_exp.h: exp_axpy_streamed), and the float32 forward, with rows of 32 KiB or more,
    reads each row once, each lane keeping its own max and rescaling its sum as the max rises
    (log_sum_exp_one_pass). Besides the special rows: a row rising all along (a rescale at
    every block, in double so that they do not add up), one falling, one of huge values, the
    max in the tail, an ignored target, and widths that leave a tail after the vectors and rows
    that start off a 64-byte boundary."""
    rng = np.random.default_rng(11)
    x = rows_with_specials(rng, rows, cols, dtype)
    x[1] = np.linspace(-30, 30, cols, dtype=dtype)
    x[2] = x[1][::-1]
    x[3] = np.linspace(1e3, 1e3 + 1e-3, cols, dtype=dtype)  # the max rising by ulps
    x[5] *= 1e30
    x[6, -1] = 90.0  # the row's max in the tail
    target = rng.integers(0, cols, rows).astype(np.int64)
    target[7] = -100
    grad = rng.standard_normal(rows).astype(dtype)
    # x - lse: within 8 ulp of each row's largest finite |x|, as in the test above
    row_scale = np.array([np.abs(r[np.isfinite(r)]).max(initial=0.0) for r in x])
    row_atol = 8 * np.finfo(dtype).eps * row_scale

    def forward_backward():
        loss, lse = C.cross_entropy_forward(x, target, reduction="none")
        return loss, lse[:, 0] + lse[:, 1], C.cross_entropy_backward(x, target, lse, grad,
                                                                     reduction="none")
    with np.errstate(invalid="ignore", over="ignore"):
        expected = run("reference", threads, forward_backward)
        for isa in TUNED_ISAS:
            got = run(isa, threads, forward_backward)
            for name, g, e in zip(("loss", "lse"), got, expected):
                off = ~((np.abs(g - e) <= row_atol + tight(dtype)["rtol"] * np.abs(e)) | (g == e) |
                        (np.isnan(g) & np.isnan(e)))
                assert not off.any(), f"{name} at {isa}: rows {np.flatnonzero(off)[:5]}"
            np.testing.assert_allclose(got[2], expected[2], equal_nan=True, **tight(dtype),
                                       err_msg=f"dx at {isa}")
    nan_rows = ~np.isneginf(x).all(-1) & (np.isnan(x) | np.isposinf(x)).any(-1)
    assert np.isnan(expected[0][nan_rows]).all()
