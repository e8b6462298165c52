"""Kernel tests, the differential half of the fuzzing campaign: the C backend equals the numpy
reference, and the reference equals the maths (and PyTorch where it has the op).

- Every C kernel is compared with numpy_backend on random shapes (hypothesis; example counts
  from the profile in conftest.py: quick and derandomized in CI, ``MINITORCH_FUZZ=long`` for
  many more), float32 and float64, with 1 and 2 threads, at every ISA level the CPU supports
  (the plain reference bodies and each tuned level), including empty / size-1 / prime /
  non-tile-multiple sizes, transposed and broadcast (stride-0) batches, masks, causal.
- Every layout an input can have reaches every kernel: strided, negative strides, transposed,
  broadcast, misaligned (a view of a byte buffer at an odd offset, which C must never see).
- Non-finite input (NaN, +-inf) and large magnitudes (1e17, 3e38) give PyTorch's results on
  every backend and level, but for the documented conventions.
- Each tuned level is held to the reference level's output, tighter than to numpy's.
- The numpy backend itself is checked against independent formulas (the oracle is tested).
- Bad input raises errors that name the argument, on both backends (crash-proofing in forked
  children: test_kernels_bad_input.py).
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""
import contextlib
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.backends import numpy_backend as N

try:
    from minitorch.backends import c_backend as C
except ImportError:  # extension not built
    C = None

needs_c = pytest.mark.skipif(C is None, reason="C extension not built")
# Every ISA level this CPU runs: the reference bodies, then the tuned levels up to the best.
ISAS = [] if C is None else list(C.ISA_LEVELS[:C.ISA_LEVELS.index(C.best_isa()) + 1])
TUNED_ISAS = ISAS[1:]
DTYPES = [np.float32, np.float64]
THREADS = [1, 2]
SIZES = [0, 1, 2, 3, 7, 16, 33, 129]  # includes 0, 1, primes, non-multiples of 6/8/16
EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps}


def tol(dtype):
    return dict(rtol=3e-5, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)


@contextlib.contextmanager
def c_threads(n, isa=None):
    """Run the C kernels with n threads (and at ISA level `isa`, if given), restoring the
    previous settings afterwards."""
    previous = C.get_num_threads()
    C.set_num_threads(n)
    try:
        with C.isa(isa) if isa else contextlib.nullcontext():
            yield
    finally:
        C.set_num_threads(previous)


# "numpy", or the C backend at one ISA level ("c-reference", "c-avx2", ...)
BACKEND_LEVELS = ["numpy"] + [f"c-{level}" for level in ISAS]


def pick(backend):
    """The backend module for a BACKEND_LEVELS name, and a context that sets its ISA level."""
    if backend == "numpy":
        return N, contextlib.nullcontext()
    return C, C.isa(backend[len("c-"):])


def rand(rng, shape, dtype, scale=1.0):
    return np.asarray(rng.standard_normal(shape) * scale).astype(dtype)


def assert_gemm_close(got, a, b):
    """|got - exact| <= c * K * eps * (|A| @ |B|): what float summation of K products allows."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    bound = 4 * max(a.shape[-1], 1) * EPS[got.dtype.type] * (np.abs(a64) @ np.abs(b64)) + 1e-300
    assert got.shape == exact.shape and got.dtype == a.dtype
    excess = np.abs(got - exact) - bound
    assert (excess <= 0).all(), f"max excess over the rounding bound {excess.max()}"


# ---------------------------------------------------------------------------------------------
# GEMM / matmul
# ---------------------------------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_matmul_matches_numpy(dtype, threads, isa, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    dim = st.one_of(st.sampled_from(SIZES), st.integers(0, 70))
    m, n, k = data.draw(dim, label="m"), data.draw(dim, label="n"), data.draw(dim, label="k")
    batch = data.draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2), label="batch")
    # Drop or set to 1 some batch dims of each operand, so they broadcast (stride 0).
    a_batch = [d if data.draw(st.booleans()) else 1 for d in batch]
    b_batch = [d if data.draw(st.booleans()) else 1 for d in batch]
    if data.draw(st.booleans()):
        a_batch = a_batch[data.draw(st.integers(0, len(a_batch))):]
    trans_a, trans_b = data.draw(st.booleans()), data.draw(st.booleans())
    # Transposed operands are views of contiguous matrices: C gets a flag, not a copy.
    a = rand(rng, a_batch + [k, m], dtype).swapaxes(-1, -2) if trans_a else rand(rng, a_batch + [m, k], dtype)
    b = rand(rng, b_batch + [n, k], dtype).swapaxes(-1, -2) if trans_b else rand(rng, b_batch + [k, n], dtype)
    with c_threads(threads, isa):
        got = C.matmul(a, b)
    expected = N.matmul(a, b)
    assert got.flags.c_contiguous
    assert_gemm_close(got, a, b)
    np.testing.assert_allclose(got, expected, **(dict(rtol=1e-4, atol=1e-4 * max(k, 1) ** 0.5)
                                                 if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("m,n,k", [(1, 1, 4096), (33, 129, 4096), (1000, 7, 129), (7, 1000, 33),
                                   (300, 300, 300), (1001, 64, 200), (129, 1, 1000), (1, 257, 1)])
def test_gemm_tile_edges_and_long_k(dtype, threads, isa, m, n, k):
    rng = np.random.default_rng(m * 7919 + n * 31 + k)
    a, b = rand(rng, (m, k), dtype), rand(rng, (k, n), dtype)
    with c_threads(threads, isa):
        assert_gemm_close(C.matmul(a, b), a, b)
        assert_gemm_close(C.matmul(np.ascontiguousarray(a.T).T, np.ascontiguousarray(b.T).T), a, b)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gemm_alpha_beta_and_out(dtype, threads, isa):
    rng = np.random.default_rng(3)
    a, b = rand(rng, (37, 19), dtype), rand(rng, (23, 19), dtype)
    c0 = rand(rng, (37, 23), dtype)
    with c_threads(threads, isa):
        out = c0.copy()
        result = C.gemm(a, b, trans_b=True, alpha=0.5, beta=-2.0, out=out)
        assert result is out
        np.testing.assert_allclose(out, N.gemm(a, b, trans_b=True, alpha=0.5, beta=-2.0, out=c0.copy()),
                                   **tol(dtype))
        # beta = 0 must not read C: NaN garbage in `out` disappears.
        out = np.full((19, 23), np.nan, dtype)
        C.gemm(a[:19].T, b.T, trans_a=True, out=out)
        np.testing.assert_allclose(out, N.gemm(a[:19], b.T), **tol(dtype))
        # K = 0: alpha*0 + beta*C
        out = c0[:, :5].copy()
        C.gemm(np.zeros((37, 0), dtype), np.zeros((0, 5), dtype), beta=3.0, out=out)
        np.testing.assert_allclose(out, 3.0 * c0[:, :5])


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_batched_small_and_broadcast(dtype, isa):
    rng = np.random.default_rng(5)
    q, kt = rand(rng, (4, 8, 32, 32), dtype), rand(rng, (4, 8, 32, 32), dtype)
    w = rand(rng, (32, 48), dtype)
    for threads in THREADS:
        with c_threads(threads, isa):
            assert_gemm_close(C.matmul(q, kt.swapaxes(-1, -2)), q, kt.swapaxes(-1, -2))
            assert_gemm_close(C.matmul(q, w), q, w)  # folded into one tall GEMM
            assert_gemm_close(C.matmul(q[:, :1], kt[:1]), q[:, :1], kt[:1])
            assert_gemm_close(C.matmul(q[..., ::2, :], w), q[..., ::2, :], w)  # strided rows
            assert_gemm_close(C.matmul(q[::-1], w[::-1]), q[::-1], w[::-1])  # negative strides


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_fast_path_equals_the_general_path(dtype, monkeypatch):
    """Stacks of equal batch shape, each operand contiguous or its last two dims swapped (the
    fast path: one strided-batch call with no layout analysis) give the general path's values
    bit for bit; a sliced operand, a broadcast batch or an empty one falls back to it."""
    rng = np.random.default_rng(21)
    q, k = rand(rng, (3, 4, 17, 40), dtype), rand(rng, (3, 4, 33, 40), dtype)
    x, w = rand(rng, (70, 40), dtype), rand(rng, (33, 40), dtype)
    pairs = [(q, k.swapaxes(-1, -2)), (q[0], k[0].swapaxes(-1, -2)), (x, w.T),
             (q.swapaxes(-1, -2)[..., :9], rand(rng, (3, 4, 9, 5), dtype)), (x.T.copy().T, w.T),
             (q[..., ::2, :], k.swapaxes(-1, -2)), (q, k[:1].swapaxes(-1, -2)),
             (np.ones((0, 2, 3), dtype), np.ones((0, 3, 4), dtype))]
    fast = [C.matmul(a, b) for a, b in pairs]
    monkeypatch.setattr(C, "_matmul_plain", lambda a, b: None)
    for (a, b), got in zip(pairs, fast):
        np.testing.assert_array_equal(got, C.matmul(a, b))
        assert got.shape == np.matmul(a, b).shape and got.flags.c_contiguous


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_empty(dtype):
    for sa, sb in [((0, 3), (3, 4)), ((3, 0), (0, 4)), ((2, 0, 3, 5), (5, 1)), ((3, 5), (5, 0))]:
        got = C.matmul(np.ones(sa, dtype), np.ones(sb, dtype))
        np.testing.assert_array_equal(got, np.matmul(np.ones(sa), np.ones(sb)))
        assert got.dtype == dtype


# ---------------------------------------------------------------------------------------------
# Softmax / log-softmax
# ---------------------------------------------------------------------------------------------
@st.composite
def attention_case(draw):
    """x of shape (B, H, Lq, Lk) (some leading dims dropped), a mask broadcastable to it."""
    dims = [draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.sampled_from([1, 2, 5, 7, 16])),
            draw(st.sampled_from([1, 3, 8, 33, 100, 1000]))]
    dims = dims[draw(st.integers(0, 2)):]
    mask_kind = draw(st.sampled_from(["none", "bool", "float"]))
    mask_shape = [d if draw(st.booleans()) else 1 for d in dims]
    mask_shape = mask_shape[draw(st.integers(0, len(mask_shape))):]
    causal = draw(st.booleans())
    scale = draw(st.sampled_from([1.0, 0.125, 2.0, -1.0]))
    return dims, mask_kind, mask_shape, causal, scale, draw(st.integers(0, 2**32 - 1))


def make_mask(rng, kind, shape, dtype):
    if kind == "none":
        return None
    if kind == "bool":
        return np.asarray(rng.random(shape) < 0.3)
    mask = rand(rng, shape, dtype)
    mask[np.asarray(rng.random(shape) < 0.3)] = -np.inf
    return mask


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(case=attention_case())
def test_softmax_matches_numpy(dtype, threads, isa, case):
    dims, kind, mask_shape, causal, scale, seed = case
    rng = np.random.default_rng(seed)
    x = rand(rng, dims, dtype, 3.0)
    mask = make_mask(rng, kind, mask_shape, dtype)
    causal = causal and x.ndim >= 2
    dy = rand(rng, dims, dtype)
    with c_threads(threads, isa):
        y = C.softmax_forward(x, scale=scale, mask=mask, causal=causal)
        dx = C.softmax_backward(y, dy, scale=scale)
    y_ref = N.softmax_forward(x, scale=scale, mask=mask, causal=causal)
    assert not np.isnan(y).any()
    np.testing.assert_allclose(y, y_ref, **tol(dtype))
    np.testing.assert_allclose(dx, N.softmax_backward(y_ref, dy, scale=scale), **tol(dtype))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(rows=st.sampled_from([0, 1, 7, 64]), cols=st.sampled_from([0, 1, 7, 33, 1000, 4099]),
       seed=st.integers(0, 2**32 - 1))
def test_log_softmax_matches_numpy(dtype, threads, isa, rows, cols, seed):
    rng = np.random.default_rng(seed)
    x, dy = rand(rng, (rows, cols), dtype, 5.0), rand(rng, (rows, cols), dtype)
    with c_threads(threads, isa):
        y = C.log_softmax_forward(x)
        dx = C.log_softmax_backward(y, dy)
    # y = x - lse is a difference of numbers as large as x: its rounding is an ulp of max |x|.
    y_tol = dict(tol(dtype), atol=max(tol(dtype)["atol"],
                                      4 * EPS[dtype] * float(np.abs(x).max(initial=1.0))))
    np.testing.assert_allclose(y, N.log_softmax_forward(x), **y_tol)
    # dx = dy - exp(y) * sum(dy): |sum(dy)| ~ sqrt(cols), so its float rounding scales alike.
    grad_tol = dict(tol(dtype), atol=tol(dtype)["atol"] * (1 + cols ** 0.5))
    np.testing.assert_allclose(dx, N.log_softmax_backward(y, dy), **grad_tol)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype,lowest,ulps", [(np.float32, -87.0, 3), (np.float64, -700.0, 3)])
def test_vectorized_exp_is_accurate_to_a_few_ulp(dtype, lowest, ulps, isa):
    """softmax([0, x_1, ..., x_66]) with every x_j so negative that the row sums to exactly 1 in
    T: then y_j is the kernel's exp(x_j) itself, and its error can be read off in ulps. The x_j
    sweep hundreds of periods of ln 2, so the reduced argument covers the polynomial's range;
    67 columns take both the vector loop and its scalar tail."""
    highest = -25.0 if dtype == np.float32 else -45.0  # 66 exp(x_j) < half an ulp of 1
    x = np.linspace(lowest, highest, 66 * 4096).astype(dtype).reshape(-1, 66)
    rows = np.concatenate([np.zeros((len(x), 1), dtype), x], axis=1)
    with C.isa(isa):
        y = C.softmax_forward(rows)[:, 1:]
    exact = np.exp(x.astype(np.float64))  # libm: < 1 ulp of float64
    if dtype == np.float64:  # float64 has no wider type in numpy; libm's own error counts here
        ulps += 1
    error = np.abs(y.astype(np.float64) - exact) / np.spacing(exact.astype(dtype)).astype(np.float64)
    assert error.max() <= ulps, f"max error {error.max():.2f} ulp"


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype,lowest,highest", [(np.float32, -120.0, -80.0), (np.float64, -800.0, -700.0)])
def test_vectorized_exp_below_the_normal_range(dtype, lowest, highest, isa):
    """Where exp(x) is below the smallest normal number, each level may give 0 (AVX2) or a
    subnormal (AVX-512's scalef): either way within that number of the exact value, never
    negative, and exp(-inf) is exactly 0 (masked softmax relies on it). Read off as in the test
    above, through softmax([0, x_1, ...])."""
    x = np.linspace(lowest, highest, 65 * 512).astype(dtype).reshape(-1, 65)
    x[:, 7] = -np.inf
    rows = np.concatenate([np.zeros((len(x), 1), dtype), x], axis=1)
    with C.isa(isa):
        y = C.softmax_forward(rows)[:, 1:]
    exact = np.exp(x.astype(np.float64))
    assert (y >= 0).all()
    assert (y[:, 7] == 0).all()
    assert np.abs(y.astype(np.float64) - exact).max() <= np.finfo(dtype).tiny


@pytest.mark.parametrize("backend", BACKEND_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_bool_mask_excludes_inf_and_nan_scores(backend, dtype):
    """What a True entry hides does not matter: +inf or NaN there gives the softmax of the rest."""
    B, level = pick(backend)
    with level:
        rng = np.random.default_rng(1)
        x = rng.standard_normal((3, 37)).astype(dtype)  # 37: vector body and tail
        mask = rng.random((3, 37)) < 0.3
        mask[:, 0] = False
        hidden = x.copy()
        hidden[mask] = np.where(rng.random(mask.sum()) < 0.5, np.inf, np.nan)
        z = np.where(mask, -np.inf, 0.5 * x.astype(np.float64))
        expected = np.exp(z - z.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        y = B.softmax_forward(hidden, scale=0.5, mask=mask)
        np.testing.assert_allclose(y, expected, **tol(dtype))


@pytest.mark.parametrize("backend", BACKEND_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fully_masked_rows_are_zero_with_zero_grad(backend, dtype):
    B, level = pick(backend)
    with level:
        x = np.random.default_rng(0).standard_normal((2, 3, 4, 6)).astype(dtype)
        mask = np.zeros((2, 1, 4, 6), bool)
        mask[0, :, 1, :] = True  # query 1 of batch 0 sees nothing
        float_mask = np.where(mask, -np.inf, 0.0).astype(dtype)
        for m in (mask, float_mask):
            y = B.softmax_forward(x, mask=m, causal=True)
            assert not np.isnan(y).any()
            assert (y[0, :, 1] == 0).all()
            np.testing.assert_allclose(y[1].sum(-1), 1.0, rtol=1e-6)
            dx = B.softmax_backward(y, np.ones_like(y))
            assert (dx[0, :, 1] == 0).all() and not np.isnan(dx).any()
        y = B.softmax_forward(np.full((3, 5), -np.inf, dtype))
        assert (y == 0).all()


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_with_lq_different_from_lk(dtype, isa):
    for lq, lk in [(3, 5), (5, 3)]:
        x = np.random.default_rng(lq).standard_normal((2, lq, lk)).astype(dtype)
        with C.isa(isa):
            y = C.softmax_forward(x, causal=True)
        np.testing.assert_allclose(y, N.softmax_forward(x, causal=True), **tol(dtype))
        assert (y[:, np.triu(np.ones((lq, lk), bool), 1)] == 0).all()  # top-left aligned tril
        np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-6)


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("extra", [-1, 0, 1])
def test_row_kernels_at_the_next_row_prefetch_limit(dtype, threads, extra, isa):
    """Rows of 128 KiB are the longest whose successor the exp passes prefetch (MT_NEXT_ROW),
    in blocks; one element more and they do not. Every row kernel that prefetches agrees with
    numpy on both sides of the limit."""
    cols = 131072 // np.dtype(dtype).itemsize + extra
    rng = np.random.default_rng(cols)
    x, dy = rand(rng, (3, 2, cols), dtype, 4.0), rand(rng, (3, 2, cols), dtype)
    mask = np.asarray(rng.random((3, 1, cols)) < 0.3)
    target = rng.integers(0, cols, 6).astype(np.int64)
    with c_threads(threads, isa):
        y = C.softmax_forward(x, scale=0.5)
        y_masked = C.softmax_forward(x, mask=mask, causal=True)
        logp = C.log_softmax_forward(x)
        dlogp = C.log_softmax_backward(logp, dy)
        loss, lse = C.cross_entropy_forward(x.reshape(6, cols), target, reduction="none")
        dlogits = C.cross_entropy_backward(x.reshape(6, cols), target, lse, np.ones(6, dtype),
                                           reduction="none")
    np.testing.assert_allclose(y, N.softmax_forward(x, scale=0.5), **tol(dtype))
    np.testing.assert_allclose(y_masked, N.softmax_forward(x, mask=mask, causal=True), **tol(dtype))
    np.testing.assert_allclose(logp, N.log_softmax_forward(x), **tol(dtype))
    grad_tol = dict(tol(dtype), atol=tol(dtype)["atol"] * (1 + cols ** 0.5))
    np.testing.assert_allclose(dlogp, N.log_softmax_backward(logp, dy), **grad_tol)
    loss_ref, lse_ref = N.cross_entropy_forward(x.reshape(6, cols), target, reduction="none")
    np.testing.assert_allclose(loss, loss_ref, **tol(dtype))
    np.testing.assert_allclose(dlogits, N.cross_entropy_backward(
        x.reshape(6, cols), target, lse_ref, np.ones(6, dtype), reduction="none"), **tol(dtype))


# ---------------------------------------------------------------------------------------------
# Cross-entropy
# ---------------------------------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(rows=st.sampled_from([0, 1, 5, 33, 200]), cols=st.sampled_from([1, 2, 7, 100, 1000]),
       smoothing=st.sampled_from([0.0, 0.1, 1.0]), reduction=st.sampled_from(["mean", "sum", "none"]),
       ignore_frac=st.sampled_from([0.0, 0.3, 1.0]), seed=st.integers(0, 2**32 - 1))
def test_cross_entropy_matches_numpy(dtype, threads, isa, rows, cols, smoothing, reduction, ignore_frac,
                                     seed):
    rng = np.random.default_rng(seed)
    logits = rand(rng, (rows, cols), dtype, 4.0)
    target = rng.integers(0, cols, rows).astype(np.int64)
    target[rng.random(rows) < ignore_frac] = -100
    grad = rand(rng, (rows,) if reduction == "none" else (), dtype)
    kw = dict(ignore_index=-100, label_smoothing=smoothing, reduction=reduction)
    with c_threads(threads, isa):
        loss, lse = C.cross_entropy_forward(logits, target, **kw)
        dlogits = C.cross_entropy_backward(logits, target, lse, grad, **kw)
    loss_ref, lse_ref = N.cross_entropy_forward(logits, target, **kw)
    assert loss.shape == loss_ref.shape and loss.dtype == dtype and np.isfinite(loss).all()
    np.testing.assert_allclose(loss, loss_ref, **tol(dtype))
    np.testing.assert_allclose(lse, lse_ref, **tol(dtype))
    np.testing.assert_allclose(dlogits, N.cross_entropy_backward(logits, target, lse_ref, grad, **kw),
                               **tol(dtype))


@pytest.mark.parametrize("backend", BACKEND_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_entropy_extreme_logits_exact(backend, dtype):
    B, level = pick(backend)
    with level:
        logits = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [1e4, 1e4, -1e4]], dtype)
        target = np.array([1, 2, 0], np.int64)
        loss, lse = B.cross_entropy_forward(logits, target, reduction="none")
        # lse_i = max + log(count of maxima); loss = lse - x_t
        expected = np.array([2e4, 0.0, np.log(2.0)])
        np.testing.assert_allclose(loss, expected, rtol=1e-6)
        # lse: each row's (max, log of the shifted sum)
        np.testing.assert_allclose(lse, [[1e4, 0.0], [1e4, 0.0], [1e4, np.log(2.0)]], rtol=1e-7,
                                   atol=1e-12)
        d = B.cross_entropy_backward(logits, target, lse, np.ones(3, dtype), reduction="none")
        assert np.isfinite(d).all()
        np.testing.assert_allclose(d, [[1, -1, 0], [0, 0, 0], [-0.5, 0.5, 0]], atol=1e-6)


@pytest.mark.parametrize("backend", BACKEND_LEVELS)
def test_cross_entropy_all_ignored_mean_is_zero(backend):
    B, level = pick(backend)
    with level:
        logits = np.ones((3, 4))
        target = np.full(3, -100, np.int64)
        loss, lse = B.cross_entropy_forward(logits, target)
        assert loss.shape == () and loss == 0.0
        assert (B.cross_entropy_backward(logits, target, lse, np.float64(1.0)) == 0).all()


# ---------------------------------------------------------------------------------------------
# Layer norm
# ---------------------------------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(lead=st.lists(st.sampled_from([0, 1, 3, 33, 129]), max_size=2).filter(lambda l: np.prod(l) <= 4300),
       d=st.sampled_from([1, 2, 7, 64, 129, 1000]), affine=st.sampled_from(["both", "weight", "bias", "none"]),
       offset=st.sampled_from([0.0, 1e3]), seed=st.integers(0, 2**32 - 1))
def test_layer_norm_matches_numpy(dtype, threads, isa, lead, d, affine, offset, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(lead) + (d,)
    x = (rand(rng, shape, np.float64) + offset).astype(dtype)  # offset: cancellation check
    w = rand(rng, (d,), dtype) if affine in ("both", "weight") else None
    b = rand(rng, (d,), dtype) if affine in ("both", "bias") else None
    dy = rand(rng, shape, dtype)
    with c_threads(threads, isa):
        y, mean, rstd = C.layer_norm_forward(x, w, b, eps=1e-5)
        dx, dw, db = C.layer_norm_backward(dy, x, w, mean, rstd)
    y_ref, mean_ref, rstd_ref = N.layer_norm_forward(x, w, b, eps=1e-5)
    dx_ref, dw_ref, db_ref = N.layer_norm_backward(dy, x, w, mean_ref, rstd_ref)
    loose = dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(mean, mean_ref, **tol(dtype))
    np.testing.assert_allclose(rstd, rstd_ref, **tol(dtype))
    np.testing.assert_allclose(y, y_ref, **loose)
    np.testing.assert_allclose(dx, dx_ref, **loose)
    if w is None:
        assert dw is None and db is None
    else:
        scale = max(1.0, np.prod(lead)) ** 0.5
        np.testing.assert_allclose(dw, dw_ref, rtol=loose["rtol"], atol=loose["atol"] * scale)
        np.testing.assert_allclose(db, db_ref, rtol=loose["rtol"], atol=loose["atol"] * scale)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("cols", [1031, 1021, 509])
def test_layer_norm_streaming_output_matches_numpy(threads, isa, cols):
    """Float64 outputs (y, dx) of 16 MiB or more are written with non-temporal stores: the rows
    of an odd length start at every alignment, so the scalar head and tail around the streamed
    part are taken too. Rows up to 8 KiB (1021) take the backward's blocked dx pass, which asks
    for the next row as it goes; rows up to 4 KiB (509) ask only where the L1 data cache is
    48 KiB or more."""
    rng = np.random.default_rng(7)
    rows = (16 << 20) // (8 * cols) + 2  # just over 16 MiB of float64
    x = rng.standard_normal((rows, cols)) * 3 + 1
    dy = rng.standard_normal((rows, cols))
    w, b = rng.standard_normal(cols), rng.standard_normal(cols)
    with c_threads(threads, isa):
        y, mean, rstd = C.layer_norm_forward(x, w, b, eps=1e-5)
        dx, dw, db = C.layer_norm_backward(dy, x, w, mean, rstd)
        dx_no_weight, _, _ = C.layer_norm_backward(dy, x, None, mean, rstd)
    y_ref, mean_ref, rstd_ref = N.layer_norm_forward(x, w, b, eps=1e-5)
    dx_ref, dw_ref, db_ref = N.layer_norm_backward(dy, x, w, mean_ref, rstd_ref)
    dx_no_weight_ref, _, _ = N.layer_norm_backward(dy, x, None, mean_ref, rstd_ref)
    for got, expected in ((y, y_ref), (mean, mean_ref), (rstd, rstd_ref), (dx, dx_ref),
                          (dw, dw_ref), (db, db_ref), (dx_no_weight, dx_no_weight_ref)):
        np.testing.assert_allclose(got, expected, **tol(np.float64))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("first", ["typical", "outlier"])
def test_layer_norm_statistics_do_not_cancel(dtype, first, isa):
    """The forward pass shifts each row by the mean of its first 32 elements and redoes the
    pass around the row's mean when that shift is far from it (the outlier case): either way
    mean and variance keep full precision, here for float32 data at 1000 with a spread of 1e-2
    (E[x^2] - E[x]^2 would lose it all). Without the second pass the outlier rows' rstd is off
    by ~1e-5 in float32, 20 times the 5e-7 asserted."""
    rng = np.random.default_rng(7)
    x64 = 1000.0 + 1e-2 * rng.standard_normal((16, 4099))
    if first == "outlier":
        x64[:, :32] = 1000.0 + 10.0  # the shift's sample, ~11 standard deviations of the row away
    x = x64.astype(dtype)
    with C.isa(isa):
        y, mean, rstd = C.layer_norm_forward(x, None, None, eps=0.0)
    exact = x.astype(np.float64)
    mean_ref = exact.mean(-1)
    rstd_ref = 1 / exact.std(-1)
    np.testing.assert_allclose(mean, mean_ref, rtol=1e-6 if dtype == np.float32 else 1e-14)
    np.testing.assert_allclose(rstd, rstd_ref, rtol=5e-7 if dtype == np.float32 else 1e-13)
    y_ref = (exact - mean_ref[:, None]) * rstd_ref[:, None]
    np.testing.assert_allclose(y, y_ref, atol=2e-3 if dtype == np.float32 else 1e-9)


# ---------------------------------------------------------------------------------------------
# Tuned levels against the reference level
# ---------------------------------------------------------------------------------------------
def every_kernel(rng, rows, cols, dtype):
    """{name: call} running every C kernel once on rows x cols data (masks, causal, ignored
    targets, label smoothing, affine layer norm, transposed and batched GEMMs)."""
    x, dy = rand(rng, (rows, cols), dtype, 3.0), rand(rng, (rows, cols), dtype)
    y = N.softmax_forward(x)
    logp = N.log_softmax_forward(x)
    bool_mask = np.asarray(rng.random((1, cols)) < 0.3)
    add_mask = np.where(rng.random((rows, 1)) < 0.3, -np.inf, rand(rng, (rows, 1), dtype)).astype(dtype)
    target = rng.integers(0, cols, rows)
    target[rng.random(rows) < 0.3] = -100
    lse = N.cross_entropy_forward(x, target, reduction="none")[1]
    w, b = rand(rng, (cols,), dtype), rand(rng, (cols,), dtype)
    _, mean, rstd = N.layer_norm_forward(x, w, b)
    a, bm = rand(rng, (rows, cols), dtype), rand(rng, (cols, rows + 3), dtype)
    heads = rand(rng, (3, rows, cols), dtype)
    return {
        "softmax": lambda: C.softmax_forward(x, scale=0.5),
        "softmax bool mask causal": lambda: C.softmax_forward(x, mask=bool_mask, causal=True),
        "softmax additive mask": lambda: C.softmax_forward(x, mask=add_mask),
        "softmax backward": lambda: C.softmax_backward(y, dy, scale=0.5),
        "log_softmax": lambda: C.log_softmax_forward(x),
        "log_softmax backward": lambda: C.log_softmax_backward(logp, dy),
        "cross_entropy": lambda: C.cross_entropy_forward(x, target, label_smoothing=0.1, reduction="none"),
        "cross_entropy backward": lambda: C.cross_entropy_backward(
            x, target, lse, dy[:, 0].copy(), label_smoothing=0.1, reduction="none"),
        "layer_norm": lambda: C.layer_norm_forward(x, w, b),
        "layer_norm backward": lambda: C.layer_norm_backward(dy, x, w, mean, rstd),
        "matmul": lambda: C.matmul(a, bm),
        "matmul transposed": lambda: C.matmul(a.T, a),
        "gemm alpha beta": lambda: C.gemm(a, a, trans_b=True, alpha=0.5, beta=2.0, out=np.ones((rows, rows), dtype)),
        "matmul batched": lambda: C.matmul(heads, heads.swapaxes(-1, -2)),
    }


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rows,cols", [(1, 1), (3, 7), (5, 33), (17, 129), (2, 1000), (4, 4099)])
def test_tuned_levels_match_the_reference_level(dtype, threads, isa, rows, cols):
    """Every kernel at a tuned level equals its plain reference body (libm exp, double sums)
    within a few float32 ulps (or 1e-12 in float64): a looser bound than the one the numpy
    comparisons set would let a tuned path drift."""
    tight = dict(rtol=2e-6, atol=2e-7) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-14)
    kernels = every_kernel(np.random.default_rng(rows * 1000 + cols), rows, cols, dtype)
    for name, call in kernels.items():
        with c_threads(threads, "reference"):
            expected = call()
        with c_threads(threads, isa):
            got = call()
        for g, e in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, expected))):
            if g is None:
                continue
            close = tight
            if name.startswith(("matmul", "gemm")) or name == "layer_norm backward":
                # sums of `cols` products (or rows): float rounding grows with their count
                close = dict(tight, atol=tight["atol"] * 10 * max(rows, cols) ** 0.5)
            if name.endswith("backward") and name.startswith("log_softmax"):
                close = dict(tight, atol=tight["atol"] * (1 + cols ** 0.5))
            if name == "layer_norm":  # y = xhat*w + b: terms of ~3 cancel to small outputs
                close = dict(tight, atol=tight["atol"] * 10)
            np.testing.assert_allclose(g, e, **close, err_msg=f"{name} at {isa}")


@needs_c
def test_isa_levels_are_set_capped_and_restored():
    best = C.best_isa()
    assert C.get_isa() == best  # the default
    for level in C.ISA_LEVELS:
        with C.isa(level):
            expected = level if C.ISA_LEVELS.index(level) <= C.ISA_LEVELS.index(best) else best
            assert C.get_isa() == expected
        assert C.get_isa() == best
    with pytest.raises(ValueError, match="set_isa: name must be one of"):
        C.set_isa("sse9")
    assert C.get_isa() == best


@needs_c
@pytest.mark.parametrize("value,expected", [("reference", "reference"), ("portable", "portable"),
                                            ("AVX512 ", None), ("fastest", "error")])
def test_minitorch_isa_environment_variable(value, expected):
    code = "from minitorch.backends import c_backend as C; print(C.get_isa())"
    env = dict(os.environ, MINITORCH_ISA=value, MINITORCH_BACKEND="c")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if expected == "error":
        assert result.returncode != 0 and "MINITORCH_ISA must be one of" in result.stderr
    else:
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip() == (expected or min(C.best_isa(), "avx512", key=C.ISA_LEVELS.index))


# ---------------------------------------------------------------------------------------------
# Every layout reaches every kernel; C never sees misaligned data
# ---------------------------------------------------------------------------------------------
LAYOUTS = ["contiguous", "strided", "negative", "transposed", "broadcast", "misaligned"]


def in_layout(a, layout):
    """An array of a's shape and dtype in the given memory layout. Its values are a's, except
    for "broadcast" (row 0 repeated by stride 0): compare with a contiguous copy of the result."""
    if layout == "contiguous" or a.ndim == 0:
        return np.ascontiguousarray(a)
    if layout == "strided":  # every other element of a bigger array, in every dim
        view = np.zeros(tuple(2 * d for d in a.shape), a.dtype)[tuple(slice(None, None, 2) for _ in a.shape)]
        view[...] = a
        return view
    if layout == "negative":
        return np.flip(np.flip(a).copy())
    if layout == "transposed":
        return np.asfortranarray(a)
    if layout == "broadcast":
        return np.broadcast_to(a[:1], a.shape)
    raw = bytearray(a.nbytes + 1)  # "misaligned": one byte past an aligned start
    view = np.frombuffer(raw, a.dtype, count=a.size, offset=1).reshape(a.shape)
    view[...] = a
    return view


def kernel_calls(rng, rows, cols, dtype):
    """{name: (call, arrays)}: every C kernel with the arrays it reads (out arrays excluded)."""
    x, dy = rand(rng, (rows, cols), dtype, 3.0), rand(rng, (rows, cols), dtype)
    y, logp = N.softmax_forward(x), N.log_softmax_forward(x)
    target = rng.integers(0, cols, rows).astype(np.int64)
    lse = N.cross_entropy_forward(x, target, reduction="none")[1]
    w, b = rand(rng, (cols,), dtype), rand(rng, (cols,), dtype)
    _, mean, rstd = N.layer_norm_forward(x, w, b)
    rms = N.rms_norm_forward(x, w, 1e-6)[1]
    bool_mask = np.asarray(rng.random((rows, cols)) < 0.3)
    add_mask = rand(rng, (1, cols), dtype)
    bm = rand(rng, (cols, rows + 3), dtype)
    return {
        "matmul": (C.matmul, [x, bm]),
        "gemm": (lambda a, b: C.gemm(a, b, trans_b=True, alpha=0.5, beta=2.0,
                                     out=np.ones((rows, rows), dtype)), [x, dy]),
        "softmax bool mask": (lambda x, m: C.softmax_forward(x, scale=0.5, mask=m), [x, bool_mask]),
        "softmax additive mask causal": (lambda x, m: C.softmax_forward(x, mask=m, causal=True),
                                         [x, add_mask]),
        "softmax backward": (lambda y, dy: C.softmax_backward(y, dy, scale=0.5), [y, dy]),
        "log_softmax": (C.log_softmax_forward, [x]),
        "log_softmax backward": (C.log_softmax_backward, [logp, dy]),
        "cross_entropy": (lambda x, t: C.cross_entropy_forward(x, t, label_smoothing=0.1,
                                                               reduction="none"), [x, target]),
        "cross_entropy backward": (lambda x, t, lse, g: C.cross_entropy_backward(
            x, t, lse, g, label_smoothing=0.1, reduction="none"), [x, target, lse, dy[:, 0]]),
        "layer_norm": (lambda x, w, b: C.layer_norm_forward(x, w, b), [x, w, b]),
        "layer_norm backward": (C.layer_norm_backward, [dy, x, w, mean, rstd]),
        "rms_norm": (lambda x, w: C.rms_norm_forward(x, w, 1e-6), [x, w]),
        "rms_norm backward": (C.rms_norm_backward, [dy, x, w, rms]),
    }


def as_tuple(result):
    return result if isinstance(result, tuple) else (result,)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_every_kernel_takes_every_layout(dtype, isa, data):
    """Each argument in a drawn layout gives what its contiguous copy gives."""
    rows, cols = data.draw(st.sampled_from([1, 2, 5, 17])), data.draw(st.sampled_from([1, 3, 8, 33, 130]))
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    for name, (call, arrays) in kernel_calls(np.random.default_rng(seed), rows, cols, dtype).items():
        laid_out = [in_layout(a, data.draw(st.sampled_from(LAYOUTS), label=f"{name} layout"))
                    for a in arrays]
        plain = [np.array(a, order="C") for a in laid_out]
        with c_threads(threads, isa):
            got, expected = as_tuple(call(*laid_out)), as_tuple(call(*plain))
        for g, e in zip(got, expected):
            if e is None:
                continue
            close = (dict(rtol=1e-5, atol=1e-5 * cols ** 0.5) if dtype == np.float32
                     else dict(rtol=1e-12, atol=1e-12 * cols ** 0.5))
            np.testing.assert_allclose(g, e, **close, err_msg=name)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_misaligned_arrays_reach_c_only_as_aligned_copies(dtype, isa, monkeypatch):
    """Every kernel with every argument misaligned: each pointer C gets is to aligned data."""
    seen = []

    def checked(original):
        def wrapper(arr):
            seen.append(arr.flags.aligned)
            return original(arr)
        return wrapper
    monkeypatch.setattr(C, "_ptr", checked(C._ptr))
    monkeypatch.setattr(C, "_base_pointer", checked(C._base_pointer))
    for name, (call, arrays) in kernel_calls(np.random.default_rng(11), 5, 33, dtype).items():
        misaligned = [in_layout(a, "misaligned") for a in arrays]
        assert not any(a.flags.aligned for a in misaligned if a.itemsize > 1)
        with C.isa(isa):
            got = as_tuple(call(*misaligned))
            expected = as_tuple(call(*[a.copy() for a in misaligned]))
        for g, e in zip(got, expected):
            if e is not None:
                np.testing.assert_allclose(g, e, **tol(dtype), err_msg=name)
    assert seen and all(seen)


# ---------------------------------------------------------------------------------------------
# Large magnitudes and non-finite input: PyTorch's results on every backend and level
# ---------------------------------------------------------------------------------------------
try:
    import torch
except ImportError:  # PyTorch is optional
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def torch_reference(x, target, smoothing):
    """PyTorch's softmax, log-softmax, cross-entropy (per row) and its gradient, and layer
    norm's (y, mean, rstd), computed in float64 (float32 intermediates overflow near 3e38 where
    the results do not) and rounded to x's dtype; minitorch's conventions applied: an all -inf
    softmax row is zeros and its log-softmax -inf, and a layer-norm row with NaN or inf has a
    NaN mean (PyTorch's is NaN or inf by the order of its running update)."""
    t = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    loss = torch.nn.functional.cross_entropy(t, torch.tensor(target), reduction="none",
                                             label_smoothing=smoothing)
    loss.sum().backward()
    all_minus_inf = np.isneginf(x).all(-1, keepdims=True)
    y, mean, rstd = torch.native_layer_norm(t.detach(), (x.shape[-1],), None, None, 1e-5)
    out = dict(softmax=np.where(all_minus_inf, 0.0, torch.softmax(t.detach(), -1).numpy()),
               log_softmax=np.where(all_minus_inf, -np.inf, torch.log_softmax(t.detach(), -1).numpy()),
               loss=loss.detach().numpy(), dlogits=t.grad.numpy(),
               layer_norm=(y.numpy(), np.where(np.isfinite(x).all(-1), mean.numpy()[:, 0], np.nan),
                           rstd.numpy()[:, 0]))
    with np.errstate(over="ignore", invalid="ignore"):
        return {k: tuple(a.astype(x.dtype) for a in v) if isinstance(v, tuple) else v.astype(x.dtype)
                for k, v in out.items()}


def run_row_kernels(B, x, target, smoothing):
    """The same quantities as torch_reference, from backend module B."""
    loss, lse = B.cross_entropy_forward(x, target, label_smoothing=smoothing, reduction="none")
    return dict(softmax=B.softmax_forward(x), log_softmax=B.log_softmax_forward(x), loss=loss,
                dlogits=B.cross_entropy_backward(x, target, lse, np.ones(len(x), x.dtype),
                                                 label_smoothing=smoothing, reduction="none"),
                layer_norm=B.layer_norm_forward(x, None, None, 1e-5))


def assert_same_results(got, expected, dtype, what):
    for name in expected:
        for g, e in zip(as_tuple(got[name]), as_tuple(expected[name])):
            np.testing.assert_allclose(g, e, rtol=1e-5 if dtype == np.float32 else 1e-11,
                                       atol=1e-6 if dtype == np.float32 else 1e-12,
                                       equal_nan=True, err_msg=f"{name} of {what}")


# Rows where m + log(sum exp(x - m)) rounds log(sum) away, in float64 and near FLT_MAX.
LARGE_ROWS = [[1e17, 1e17], [-1e17, 1e17], [1e17, 1e17, -1e17, 0.0], [1e17, -np.inf, 1e17],
              [3e38, 3e38], [-3e38, 3e38, 3e38], [-3e38, 3e38, 0.0], [2e38, 3e38, -np.inf]]


@needs_torch
@pytest.mark.parametrize("backend", BACKEND_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_large_magnitudes_match_pytorch(backend, dtype, smoothing):
    """log-softmax of [1e17, 1e17] is -log 2 (not 0), cross-entropy log 2 and its gradient
    [-0.5, 0.5]; float32 rows near 3e38 with label smoothing are finite (not -inf)."""
    B, level = pick(backend)
    with level, np.errstate(over="ignore", invalid="ignore"):
        for row in LARGE_ROWS:
            x = np.array([row, row[::-1]], dtype)
            target = np.array([0, len(row) - 1], np.int64)
            got = run_row_kernels(B, x, target, smoothing)
            expected = torch_reference(x, target, smoothing)
            # (layer norm is not a log-sum-exp: its float32 variance overflows past ~1e19, as
            # PyTorch's does)
            del got["layer_norm"], expected["layer_norm"]
            assert_same_results(got, expected, dtype, row)
        x = np.array([[1e17, 1e17]], dtype)
        np.testing.assert_allclose(B.log_softmax_forward(x), [[-np.log(2.0)] * 2], rtol=1e-6)


@st.composite
def non_finite_rows(draw):
    """A few rows mixing NaN, +-inf and ordinary values (all -inf and all NaN rows included)."""
    cols = draw(st.integers(1, 9))
    values = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, 1.0, -2.5, 30.0])
    rows = draw(st.lists(st.lists(values, min_size=cols, max_size=cols), min_size=1, max_size=4))
    if draw(st.booleans()):
        rows.append([draw(st.sampled_from([np.nan, -np.inf, np.inf]))] * cols)
    target = draw(st.lists(st.integers(0, cols - 1), min_size=len(rows), max_size=len(rows)))
    return rows, target


@needs_torch
@pytest.mark.parametrize("backend", BACKEND_LEVELS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(case=non_finite_rows(), smoothing=st.sampled_from([0.0, 0.1]))
def test_non_finite_input_matches_pytorch(backend, dtype, case, smoothing):
    """NaN or +inf in a row makes it NaN (softmax, log-softmax, cross-entropy, layer norm and
    its statistics), -inf entries get probability 0; but an all -inf softmax row is zeros."""
    rows, target = case
    x, target = np.array(rows, dtype), np.array(target, np.int64)
    B, level = pick(backend)
    with level, np.errstate(all="ignore"):
        got = run_row_kernels(B, x, target, smoothing)
    assert_same_results(got, torch_reference(x, target, smoothing), dtype, rows)


# ---------------------------------------------------------------------------------------------
# The oracle against independent formulas
# ---------------------------------------------------------------------------------------------
def test_numpy_softmax_rows_sum_to_one_and_match_definition():
    x = np.random.default_rng(0).standard_normal((5, 9)) * 10
    y = N.softmax_forward(x, scale=0.5)
    np.testing.assert_allclose(y.sum(-1), 1.0, rtol=1e-14)
    np.testing.assert_allclose(y, np.exp(0.5 * x) / np.exp(0.5 * x).sum(-1, keepdims=True), rtol=1e-12)
    mask = np.random.default_rng(1).random((5, 9)) < 0.4
    ym = N.softmax_forward(x, mask=mask)
    e = np.where(mask, 0.0, np.exp(x))
    np.testing.assert_allclose(ym, e / np.maximum(e.sum(-1, keepdims=True), 1e-300), rtol=1e-12)


def test_numpy_softmax_backward_is_jacobian_product():
    rng = np.random.default_rng(2)
    x, dy = rng.standard_normal(6), rng.standard_normal(6)
    y = N.softmax_forward(x, scale=1.5)
    jac = 1.5 * (np.diag(y) - np.outer(y, y))  # d softmax(1.5 x) / dx
    np.testing.assert_allclose(N.softmax_backward(y, dy, scale=1.5), jac.T @ dy, rtol=1e-12)


def test_numpy_cross_entropy_is_minus_log_softmax():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((7, 5))
    t = rng.integers(0, 5, 7).astype(np.int64)
    p = np.exp(x) / np.exp(x).sum(1, keepdims=True)  # float64 softmax by hand
    loss, _ = N.cross_entropy_forward(x, t, reduction="none")
    np.testing.assert_allclose(loss, -np.log(p[np.arange(7), t]), rtol=1e-12)
    smooth, _ = N.cross_entropy_forward(x, t, label_smoothing=0.2, reduction="sum")
    q = np.full((7, 5), 0.2 / 5)
    q[np.arange(7), t] += 0.8
    np.testing.assert_allclose(smooth, -(q * np.log(p)).sum(), rtol=1e-12)
    # gradient by central differences
    m = x.max(1)
    lse = np.stack([m, np.log(np.exp(x - m[:, None]).sum(1))], axis=1)  # (max, log shifted sum)
    d = N.cross_entropy_backward(x, t, lse, np.float64(1.0))
    h, i, j = 1e-6, 2, 3
    xp, xm = x.copy(), x.copy()
    xp[i, j] += h
    xm[i, j] -= h
    numeric = (N.cross_entropy_forward(xp, t)[0] - N.cross_entropy_forward(xm, t)[0]) / (2 * h)
    np.testing.assert_allclose(d[i, j], numeric, rtol=1e-6)


def test_numpy_layer_norm_is_textbook():
    rng = np.random.default_rng(4)
    x, w, b = rng.standard_normal((4, 10)), rng.standard_normal(10), rng.standard_normal(10)
    y, mean, rstd = N.layer_norm_forward(x, w, b, eps=1e-5)
    textbook = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, textbook, rtol=1e-12)
    # backward against central differences of sum(y * dy)
    dy = rng.standard_normal((4, 10))
    dx, dw, db = N.layer_norm_backward(dy, x, w, mean, rstd)
    h = 1e-6
    xp, xm = x.copy(), x.copy()
    xp[1, 2] += h
    xm[1, 2] -= h
    numeric = ((N.layer_norm_forward(xp, w, b)[0] - N.layer_norm_forward(xm, w, b)[0]) * dy).sum() / (2 * h)
    np.testing.assert_allclose(dx[1, 2], numeric, rtol=1e-6)
    np.testing.assert_allclose(db, dy.sum(0), rtol=1e-12)


def test_numpy_matmul_and_log_softmax():
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 5))
    np.testing.assert_allclose(N.matmul(a, b), np.einsum("bik,kj->bij", a, b), rtol=1e-12)
    x = rng.standard_normal((3, 6))
    np.testing.assert_allclose(N.log_softmax_forward(x), np.log(np.exp(x) / np.exp(x).sum(1, keepdims=True)),
                               rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------
BACKENDS = ["numpy", pytest.param("c", marks=needs_c)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_input_raises_naming_the_argument(backend):
    B = N if backend == "numpy" else C
    f32, f64 = np.ones((3, 4), np.float32), np.ones((4, 5), np.float64)
    with pytest.raises(TypeError, match="b must have the same dtype"):
        B.matmul(f32, f64)
    with pytest.raises(TypeError, match="a must be float32 or float64"):
        B.matmul(np.ones((3, 4), np.int32), np.ones((4, 5), np.int32))
    with pytest.raises(ValueError, match=r"a.shape\[-1\] \(4\) must equal b.shape\[-2\] \(3\)"):
        B.matmul(f32, np.ones((3, 5), np.float32))
    with pytest.raises(ValueError, match="batch dims"):
        B.matmul(np.ones((2, 3, 4)), np.ones((3, 4, 5)))
    with pytest.raises(ValueError, match="ndim >= 2"):
        B.matmul(np.ones(4), np.ones((4, 5)))
    with pytest.raises(ValueError, match="mask of shape"):
        B.softmax_forward(np.ones((2, 3)), mask=np.ones((3, 3), bool))
    with pytest.raises(TypeError, match="mask must be bool or float64"):
        B.softmax_forward(np.ones((2, 3)), mask=np.ones((2, 3), np.int64))
    with pytest.raises(TypeError, match="mask must be bool or float32"):
        B.softmax_forward(f32, mask=np.ones((3, 4), np.float64))
    with pytest.raises(ValueError, match="dy must have shape"):
        B.softmax_backward(np.ones((2, 3)), np.ones((3, 2)))
    logits, target = np.zeros((3, 5)), np.array([0, 5, 1], np.int64)
    with pytest.raises(IndexError, match="target value 5"):
        B.cross_entropy_forward(logits, target)
    with pytest.raises(IndexError, match="target value -1"):
        B.cross_entropy_forward(logits, np.array([0, -1, 1], np.int64))
    with pytest.raises(TypeError, match="target must be int64"):
        B.cross_entropy_forward(logits, np.array([0, 1, 1], np.int32))
    with pytest.raises(ValueError, match="target must have shape"):
        B.cross_entropy_forward(logits, np.array([0, 1], np.int64))
    with pytest.raises(ValueError, match="reduction must be one of"):
        B.cross_entropy_forward(logits, np.array([0, 1, 1], np.int64), reduction="avg")
    with pytest.raises(ValueError, match="label_smoothing"):
        B.cross_entropy_forward(logits, np.array([0, 1, 1], np.int64), label_smoothing=1.5)
    with pytest.raises(ValueError, match="grad must have shape"):
        B.cross_entropy_backward(logits, np.array([0, 1, 1], np.int64), np.zeros((3, 2)), np.ones(3))
    with pytest.raises(ValueError, match=r"lse must have shape \(3, 2\)"):
        B.cross_entropy_backward(logits, np.array([0, 1, 1], np.int64), np.zeros(3), np.float64(1.0))
    with pytest.raises(ValueError, match=r"weight must have shape \(4,\)"):
        B.layer_norm_forward(f32, np.ones(3, np.float32), None)
    with pytest.raises(TypeError, match="bias must have the same dtype"):
        B.layer_norm_forward(f32, None, np.ones(4))
    with pytest.raises(ValueError, match="rstd must have shape"):
        B.layer_norm_backward(f32, f32, None, np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(ValueError, match="n must be >= 1"):
        B.set_num_threads(0)
    with pytest.raises(TypeError, match="n must be an int"):
        B.set_num_threads(1.5)


@needs_c
def test_c_gemm_out_checks():
    a = np.ones((3, 4))
    with pytest.raises(ValueError, match="out must not overlap"):
        square = np.ones((3, 3))
        C.gemm(square, square, out=square)
    with pytest.raises(ValueError, match="out must be a writeable, aligned, C-contiguous"):
        C.gemm(a, a.T, out=np.ones((3, 6))[:, ::2])
    with pytest.raises(ValueError, match=r"out must have shape \(3, 3\)"):
        C.gemm(a, a.T, out=np.ones((3, 4)))


@needs_c
def test_thread_count_roundtrip():
    with c_threads(1):
        assert C.get_num_threads() == 1
    with c_threads(3):
        assert C.get_num_threads() == 3


# ---------------------------------------------------------------------------------------------
# The log-sum-exp computed in Python (the logsumexp op)
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,big", [("float64", 1e17), ("float32", 3e38)])
def test_logsumexp_op_gradient_keeps_the_log(dtype, big):
    """d logsumexp / dx = softmax(x): [0.5, 0.5] for [big, big], where exp(x - result) gives
    [1, 1] (PyTorch's result too: it rounds log 2 away into the result first)."""
    import minitorch
    x = minitorch.tensor([[big, big], [-big, big]], dtype=getattr(minitorch, dtype), requires_grad=True)
    out = x.logsumexp(-1)
    np.testing.assert_allclose(out.detach().numpy(), [big, big], rtol=1e-7)
    out.backward(minitorch.ones(2, dtype=x.dtype))
    np.testing.assert_allclose(x.grad.numpy(), [[0.5, 0.5], [0.0, 1.0]], rtol=1e-7)
    # differentiable again (create_graph): second derivatives against finite differences
    x64 = minitorch.tensor([[0.3, -1.2, 2.0]], dtype=minitorch.float64, requires_grad=True)
    assert minitorch.autograd.gradgradcheck(lambda t: t.logsumexp(-1), (x64,))
