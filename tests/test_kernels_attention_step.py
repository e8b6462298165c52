"""Kernel tests of one attention step of incremental decoding (csrc/attention_step.c and
tuned/attention_step_tuned.c), in the manner of test_kernels_rnn.py:

- ``attention_step`` on the C backend equals the numpy reference (numpy_backend) on drawn
  sizes (hypothesis: the campaign's profiles), float32 and float64, 1 and 2 threads, at every
  ISA level the CPU runs, with no mask, a key padding mask, a full mask, a causal offset and
  fully masked queries; sizes across the one-thread threshold; each tuned level is held to the
  reference level's output;
- the numpy reference equals the composite it replaces (batched matmul, the fused softmax,
  matmul) on the numpy backend;
- the layouts the KV cache hands it (keys as the transpose of a (.., D, capacity) buffer, views
  of the first positions) and strided, misaligned and negative-stride operands give their
  contiguous copies' results;
- bad input raises the same Python error, naming the argument, on both backends.
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, TUNED_ISAS, C, c_threads, needs_c


def tol(dtype):
    return dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


def operands(rng, n, h, lq, s, d, dv, dtype, kind):
    """(q, k, v, mask, causal_offset) of one drawn case; ``kind`` picks the exclusions."""
    q = rng.standard_normal((n, h, lq, d)).astype(dtype)
    k = rng.standard_normal((n, h, s, d)).astype(dtype)
    v = rng.standard_normal((n, h, s, dv)).astype(dtype)
    mask, causal = None, None
    if kind == "padding":
        mask = rng.random((n, 1, 1, s)) < 0.3
        if n > 1:
            mask[-1] = True  # one batch row with every key padded: zeros
    elif kind == "full":
        mask = rng.random((n, h, lq, s)) < 0.4
    elif kind == "causal":
        causal = max(s - lq, 0)  # the queries are the last positions
    elif kind == "causal+padding":
        causal = int(rng.integers(0, s + 1))
        mask = rng.random((n, s)).reshape(n, 1, 1, s) < 0.2
    return q, k, v, mask, causal


def assert_same(got, want, dtype, what):
    for name, g, w in zip(("out", "weights"), got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what} {name}"
        np.testing.assert_allclose(g, w, err_msg=f"{what} {name}", **tol(dtype))


KINDS = ["none", "padding", "full", "causal", "causal+padding"]


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(n=st.integers(0, 4), h=st.integers(1, 3), lq=st.integers(1, 3), s=st.integers(0, 40),
       d=st.integers(0, 20), dv=st.integers(0, 35), seed=st.integers(0, 2 ** 16))
def test_c_attention_step_equals_the_numpy_reference(dtype, threads, isa, n, h, lq, s, d, dv,
                                                     seed):
    rng = np.random.default_rng(seed)
    with c_threads(threads, isa):
        for kind in KINDS:
            q, k, v, mask, causal = operands(rng, n, h, lq, s, d, dv, dtype, kind)
            assert_same(C.attention_step(q, k, v, 0.3, mask, causal),
                        N.attention_step(q, k, v, 0.3, mask, causal), dtype, kind)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_a_decoding_step_above_the_thread_threshold(dtype, threads, isa):
    """32 rows x 4 heads x 37 keys x 32 features (a decoding step's size), beyond one thread's
    share, keys read from a cache buffer's transpose as the decoder passes them."""
    rng = np.random.default_rng(1)
    keys_t = rng.standard_normal((32, 4, 32, 48)).astype(dtype)  # (N, H, D, capacity)
    values = rng.standard_normal((32, 4, 48, 32)).astype(dtype)
    q = rng.standard_normal((32, 1, 4, 32)).astype(dtype).swapaxes(1, 2)  # a projection's view
    k, v = keys_t[..., :37].swapaxes(-1, -2), values[:, :, :37]
    mask = (rng.random((32, 37)) < 0.2).reshape(32, 1, 1, 37)
    with c_threads(threads, isa):
        for m, causal in ((None, None), (mask, None), (None, 36)):
            assert_same(C.attention_step(q, k, v, 0.125, m, causal),
                        N.attention_step(q, k, v, 0.125, m, causal), dtype, f"mask {m is not None}")


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_tuned_level_equals_the_reference_level(dtype, isa):
    """Key counts around the tuned body's 16-key blocks, wide scores (sd 4), fully masked rows."""
    rng = np.random.default_rng(2)
    for s in (1, 15, 16, 17, 33, 64):
        q, k, v, mask, causal = operands(rng, 3, 2, 2, s, 19, 33, dtype, "causal+padding")
        q *= 4
        with C.isa("reference"):
            want = C.attention_step(q, k, v, 1.0, mask, causal)
        with C.isa(isa):
            got = C.attention_step(q, k, v, 1.0, mask, causal)
        assert_same(got, want, dtype, f"{s} keys at {isa}")


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_reference_is_the_composite_it_replaces(dtype):
    """softmax(q kᵀ scale + mask) v as the unfused path computes it: matmul, the numpy
    backend's masked softmax, matmul, heads moved next to the features."""
    rng = np.random.default_rng(3)
    q, k, v, mask, _ = operands(rng, 3, 2, 2, 7, 5, 6, dtype, "padding")
    scores = np.matmul(q.astype(np.float64), k.astype(np.float64).swapaxes(-1, -2))
    weights = N.softmax_forward(scores, 0.4, mask)
    out = np.matmul(weights, v.astype(np.float64)).transpose(0, 2, 1, 3)
    got_out, got_weights = N.attention_step(q, k, v, 0.4, mask)
    np.testing.assert_allclose(got_weights, weights, **tol(dtype))
    np.testing.assert_allclose(got_out, out, **tol(dtype))
    assert not got_out[-1].any() and not got_weights[-1].any()  # every key padded: zeros
    causal = N.attention_step(q, k, v, 0.4, None, 5)[1]  # queries at positions 5 and 6 of 7
    assert not causal[..., 0, 6].any() and (causal[..., 1, :] > 0).all()


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_misaligned_and_reversed_operands_give_their_copies_results(dtype):
    rng = np.random.default_rng(4)
    q, k, v, mask, causal = operands(rng, 3, 2, 2, 9, 6, 5, dtype, "causal+padding")
    want = C.attention_step(q, k, v, 0.5, mask, causal)

    def misaligned(a):
        view = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, count=a.size, offset=1)
        view = view.reshape(a.shape)
        view[...] = a
        return view

    def doubled(a):  # every other element of the last dim: not unit stride
        return np.repeat(a, 2, axis=-1)[..., ::2]

    def reversed_rows(a):
        return np.ascontiguousarray(a[::-1])[::-1]
    for name, f in (("strided", doubled), ("misaligned", misaligned),
                    ("negative strides", reversed_rows), ("keys contiguous", np.asarray)):
        args = (f(q), f(k), f(v))
        assert_same(C.attention_step(*args, 0.5, f(mask), causal), want, dtype, name)


def bad_calls():
    """(id, args, error, text): the same bad input for both backends."""
    q, k, v = np.ones((2, 3, 1, 4)), np.ones((2, 3, 5, 4)), np.ones((2, 3, 5, 6))
    return [
        ("q int", (q.astype(np.int64), k, v), {}, TypeError, "q must be float32"),
        ("k dtype", (q, k.astype(np.float32), v), {}, TypeError, "k must have the same dtype"),
        ("v list", (q, k, [[1.0]]), {}, TypeError, "v must be a numpy.ndarray"),
        ("q 3-d", (q[0], k, v), {}, ValueError, "must be 4-D"),
        ("k features", (q, np.ones((2, 3, 5, 3)), v), {}, ValueError, "k must have shape"),
        ("v keys", (q, k, np.ones((2, 3, 4, 6))), {}, ValueError, "v must have shape"),
        ("mask float", (q, k, v), dict(mask=np.zeros((2, 1, 1, 5))), TypeError,
         "mask must be a bool"),
        ("mask shape", (q, k, v), dict(mask=np.zeros((2, 1, 1, 4), bool)), ValueError,
         "does not broadcast"),
        ("mask 5-d", (q, k, v), dict(mask=np.zeros((1, 2, 1, 1, 5), bool)), ValueError,
         "does not broadcast"),
        ("causal negative", (q, k, v), dict(causal_offset=-1), ValueError, "causal_offset"),
        ("causal float", (q, k, v), dict(causal_offset=1.5), TypeError, "causal_offset"),
    ]


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
@pytest.mark.parametrize("args,kwargs,error,text", [c[1:] for c in bad_calls()],
                         ids=[c[0] for c in bad_calls()])
def test_bad_input_raises_on_both_backends(backend_name, args, kwargs, error, text):
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    with pytest.raises(error, match=re.escape(text)):
        kernels.attention_step(*args, **kwargs)
