"""Kernel tests of multi-head attention over whole sequences, forward and backward (csrc/
attention.c and tuned/attention_tuned.c), in the manner of test_kernels_attention_step.py:

- ``attention_forward`` / ``attention_backward`` on the C backend equal the numpy reference
  (numpy_backend: batched matmul, the fused softmax, batched matmul) on drawn sizes, float32
  and float64, 1 and 2 threads, at every ISA level the CPU runs (the reference level included),
  with no mask, bool and additive masks that broadcast, causal, and fully masked queries;
- the tuned body equals the unfused C chain it replaces (matmul_into, softmax_forward,
  softmax_backward, and dropout's product where a ``keep`` is given) bit for bit, on sizes that
  take the GEMM's small and blocked paths; a keep of ones is no dropout;
- the heads read and written in place in (N, L, H·D) rows, and strided, misaligned and
  negative-stride inputs, give their contiguous copies' results;
- bad input raises the same Python error, naming the argument, on both backends, and the C
  entry points refuse bad sizes and strides with MT_ERR_ARGS.
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
    return dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-12)


def operands(rng, n, h, length, s, d, dv, dtype, kind):
    """(q, k, v, mask, causal, dout) of one drawn case; ``kind`` picks the exclusions."""
    q = rng.standard_normal((n, h, length, d)).astype(dtype)
    k = rng.standard_normal((n, h, s, d)).astype(dtype)
    v = rng.standard_normal((n, h, s, dv)).astype(dtype)
    dout = rng.standard_normal((n, h, length, dv)).astype(dtype)
    mask, causal = None, False
    if kind == "padding":
        mask = rng.random((n, 1, 1, s)) < 0.3
        if n > 1:
            mask[-1] = True  # one batch row with every key padded: zeros
    elif kind == "full":
        mask = rng.random((n, h, length, s)) < 0.4
    elif kind == "additive":
        mask = np.triu(np.full((length, s), -np.inf), 1).astype(dtype)
        mask += rng.standard_normal((length, s)).astype(dtype)
    elif kind == "causal":
        causal = True
    elif kind == "causal+padding":
        causal = True
        mask = (rng.random((n, s)) < 0.2).reshape(n, 1, 1, s)
    return q, k, v, mask, causal, dout


KINDS = ["none", "padding", "full", "additive", "causal", "causal+padding"]


def dropout_factors(rng, q, k, p=0.3):
    """A drawn ``keep`` for q and k's scores: 0 with probability p, else 1/(1-p)."""
    shape = q.shape[:3] + k.shape[2:3]
    return np.where(rng.random(shape) < p, 0.0, 1.0 / (1.0 - p)).astype(q.dtype)


def both_passes(kernels, q, k, v, mask, causal, dout, scale, keep=None):
    out, weights = kernels.attention_forward(q, k, v, scale, mask, causal, keep=keep)
    return (out, weights) + tuple(kernels.attention_backward(q, k, v, weights, dout, scale,
                                                             keep=keep))


def assert_close(got, want, dtype, what):
    for name, g, w in zip(("out", "weights", "dq", "dk", "dv"), got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what} {name}"
        np.testing.assert_allclose(g, w, err_msg=f"{what} {name}", **tol(dtype))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(n=st.integers(0, 3), h=st.integers(1, 3), length=st.integers(0, 9),
       s=st.integers(0, 40), d=st.integers(0, 20), dv=st.integers(0, 35),
       seed=st.integers(0, 2 ** 16), dropout=st.booleans())
def test_c_attention_equals_the_numpy_reference(dtype, threads, isa, n, h, length, s, d, dv,
                                                seed, dropout):
    rng = np.random.default_rng(seed)
    with c_threads(threads, isa):
        for kind in KINDS:
            args = operands(rng, n, h, length, s, d, dv, dtype, kind)
            keep = dropout_factors(rng, args[0], args[1]) if dropout else None
            assert_close(both_passes(C, *args, 0.3, keep), both_passes(N, *args, 0.3, keep),
                         dtype, kind)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_sizes_above_the_thread_threshold(dtype, threads):
    """The benchmark's small model's heads (32 rows x 4 heads x 32 x 32), beyond one thread's
    share, at every level the CPU runs."""
    rng = np.random.default_rng(1)
    for kind in ("none", "causal+padding", "additive"):
        args = operands(rng, 32, 4, 32, 32, 32, 32, dtype, kind)
        for keep in (None, dropout_factors(rng, args[0], args[1], 0.1)):
            want = both_passes(N, *args, 0.125, keep)
            for isa in ISAS:
                with c_threads(threads, isa):
                    assert_close(both_passes(C, *args, 0.125, keep), want, dtype,
                                 f"{kind} at {isa}, keep {keep is not None}")


def unfused_chain(q, k, v, mask, causal, dout, scale, keep=None):
    """The C kernels the fused call replaces: products by matmul_into, the softmax kernels, and
    with ``keep`` dropout's products (weights·keep forward, the gradient·keep backward)."""
    scores = C.matmul_into(q, k.swapaxes(-1, -2), out=np.empty(q.shape[:3] + k.shape[2:3],
                                                                q.dtype))
    weights = C.softmax_forward(scores, scale, mask, causal)
    kept = weights if keep is None else weights * keep
    out = C.matmul_into(kept, v, out=np.empty(q.shape[:3] + v.shape[3:], q.dtype))
    kept_grad = C.matmul_into(dout, v.swapaxes(-1, -2), out=np.empty_like(weights))
    dz = C.softmax_backward(weights, kept_grad if keep is None else kept_grad * keep, scale)
    dq = C.matmul_into(dz, k, out=np.empty_like(q))
    dk = C.matmul_into(dz.swapaxes(-1, -2), q, out=np.empty_like(k))
    dv = C.matmul_into(kept.swapaxes(-1, -2), dout, out=np.empty_like(v))
    return out, weights, dq, dk, dv


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(2, 3, 5, 7, 4, 6), (4, 2, 32, 32, 32, 32),
                                   (2, 2, 100, 90, 64, 40)])  # the last: blocked GEMM path
def test_tuned_body_equals_the_unfused_chain_bit_for_bit(dtype, threads, isa, shape):
    rng = np.random.default_rng(2)
    with c_threads(threads, isa):
        for kind in KINDS:
            args = operands(rng, *shape, dtype, kind)
            for keep in (None, dropout_factors(rng, args[0], args[1])):
                for got, want in zip(both_passes(C, *args, 0.7, keep),
                                     unfused_chain(*args, 0.7, keep)):
                    np.testing.assert_array_equal(got, want, err_msg=f"{kind}, keep {keep}")


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_keep_of_ones_is_no_dropout_and_zeros_drop_everything(backend_name, dtype):
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    args = operands(np.random.default_rng(5), 2, 3, 7, 9, 4, 5, dtype, "causal+padding")
    q, k, v = args[:3]
    ones = np.ones(q.shape[:3] + k.shape[2:3], dtype)
    for got, want in zip(both_passes(kernels, *args, 0.5, ones), both_passes(kernels, *args, 0.5)):
        np.testing.assert_array_equal(got, want)
    out, weights, dq, dk, dv = both_passes(kernels, *args, 0.5, np.zeros_like(ones))
    for name, g in (("out", out), ("dq", dq), ("dk", dk), ("dv", dv)):
        assert not g.any(), name
    np.testing.assert_array_equal(weights, both_passes(kernels, *args, 0.5)[1])


def heads(rows, start, width, num_heads):
    n, length = rows.shape[:2]
    return rows[:, :, start:start + width].reshape(
        n, length, num_heads, width // num_heads).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_heads_in_place_in_their_rows(backend_name, dtype):
    """q, k, v read as (N, H, L, D) views of one packed projection's rows, the output and the
    three gradients written into views of (N, L, ·) arrays: nothing outside them touched."""
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    rng = np.random.default_rng(3)
    n, length, width, num_heads = 3, 6, 8, 2
    rows = rng.standard_normal((n, length, 3 * width)).astype(dtype)
    q, k, v = (heads(rows, i * width, width, num_heads) for i in range(3))
    dout = rng.standard_normal((n, num_heads, length, width // num_heads)).astype(dtype)
    want = both_passes(kernels, *(np.ascontiguousarray(x) for x in (q, k, v)), None, True,
                       dout, 0.5)
    out_rows = np.full((n, length, 2 * width), 7.0, dtype)
    out, weights = kernels.attention_forward(q, k, v, 0.5, None, True,
                                             out=heads(out_rows, width, width, num_heads))
    assert (out_rows[..., :width] == 7.0).all()
    grad_rows = np.full((n, length, 3 * width), 7.0, dtype)
    grads = kernels.attention_backward(q, k, v, weights, dout, 0.5,
                                       *(heads(grad_rows, i * width, width, num_heads)
                                         for i in range(3)))
    for got, expected in zip((out, weights) + tuple(grads), want):
        np.testing.assert_allclose(got, expected, **tol(dtype))
    assert np.shares_memory(grads[2], grad_rows)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_misaligned_and_reversed_inputs_give_their_copies_results(dtype):
    rng = np.random.default_rng(4)
    q, k, v, mask, causal, dout = operands(rng, 3, 2, 4, 9, 6, 5, dtype, "causal+padding")
    want = both_passes(C, q, k, v, mask, causal, dout, 0.5)

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
                    ("negative strides", reversed_rows)):
        got = both_passes(C, f(q), f(k), f(v), mask, causal, f(dout), 0.5)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w, err_msg=name)


def bad_calls():
    """(id, function, args, kwargs, error, text): the same bad input for both backends."""
    q, k, v = np.ones((2, 3, 1, 4)), np.ones((2, 3, 5, 4)), np.ones((2, 3, 5, 6))
    w, g = np.ones((2, 3, 1, 5)), np.ones((2, 3, 1, 6))
    same = np.empty((2, 3, 5, 4))
    fwd, bwd = "attention_forward", "attention_backward"
    return [
        ("q int", fwd, (q.astype(np.int64), k, v), {}, TypeError, "q must be float32"),
        ("k dtype", fwd, (q, k.astype(np.float32), v), {}, TypeError,
         "k must have the same dtype"),
        ("q 3-d", fwd, (q[0], k, v), {}, ValueError, "must be 4-D"),
        ("k features", fwd, (q, np.ones((2, 3, 5, 3)), v), {}, ValueError, "k must have shape"),
        ("v keys", fwd, (q, k, np.ones((2, 3, 4, 6))), {}, ValueError, "v must have shape"),
        ("mask int", fwd, (q, k, v), dict(mask=np.zeros((2, 1, 1, 5), np.int32)), TypeError,
         "mask must be a bool or float64"),
        ("mask shape", fwd, (q, k, v), dict(mask=np.zeros((2, 1, 1, 4), bool)), ValueError,
         "does not broadcast"),
        ("causal int", fwd, (q, k, v), dict(causal=1), TypeError, "causal must be a bool"),
        ("out shape", fwd, (q, k, v), dict(out=np.empty((2, 3, 1, 5))), ValueError,
         "out must have shape"),
        ("out strided", fwd, (q, k, v), dict(out=np.empty((2, 3, 1, 12))[..., ::2]), ValueError,
         "unit-stride rows"),
        ("out read-only", fwd, (q, k, v), dict(out=np.broadcast_to(np.empty(6), (2, 3, 1, 6))),
         ValueError, "out must be writable"),
        ("out is q", fwd, (q, k, np.ones((2, 3, 5, 4))), dict(out=q), ValueError,
         "must not share memory"),
        ("weights shape", bwd, (q, k, v, w[..., :4], g), {}, ValueError,
         "weights must have shape"),
        ("dout dtype", bwd, (q, k, v, w, g.astype(np.float32)), {}, TypeError,
         "dout must have the same dtype"),
        ("dq shape", bwd, (q, k, v, w, g), dict(dq=np.empty((2, 3, 1, 5))), ValueError,
         "dq must have shape"),
        ("dk shares k", bwd, (q, k, v, w, g), dict(dk=k), ValueError, "must not share memory"),
        ("dk is dv", bwd, (q, k, np.ones((2, 3, 5, 4)), w, np.ones((2, 3, 1, 4))),
         dict(dk=same, dv=same), ValueError, "dq, dk and dv must be different arrays"),
        ("keep shape", fwd, (q, k, v), dict(keep=np.ones((2, 3, 1, 4))), ValueError,
         "keep must have shape (2, 3, 1, 5)"),
        ("keep dtype", fwd, (q, k, v), dict(keep=np.ones((2, 3, 1, 5), np.float32)), TypeError,
         "keep must have the same dtype"),
        ("keep list", bwd, (q, k, v, w, g), dict(keep=[[1.0]]), TypeError,
         "keep must be a numpy.ndarray"),
        ("keep broadcast", bwd, (q, k, v, w, g), dict(keep=np.ones((1, 3, 1, 5))), ValueError,
         "keep must have shape"),
    ]


@pytest.mark.parametrize("backend_name", ["numpy", "c"])
@pytest.mark.parametrize("case", bad_calls(), ids=[c[0] for c in bad_calls()])
def test_bad_input_raises_on_both_backends(backend_name, case):
    if backend_name == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = N if backend_name == "numpy" else C
    _, fn, args, kwargs, error, text = case
    with pytest.raises(error, match=re.escape(text)):
        getattr(kernels, fn)(*args, **kwargs)


@needs_c
@pytest.mark.parametrize("suffix", ["f32", "f64"])
def test_c_entry_points_refuse_bad_sizes_and_strides(suffix):
    from minitorch._C import ffi, lib
    kind = "float" if suffix == "f32" else "double"
    buf = ffi.new(f"{kind}[]", 64)
    strides = ffi.new("int64_t[]", [0] * 21)
    forward = getattr(lib, f"mt_attention_forward_{suffix}")
    backward = getattr(lib, f"mt_attention_backward_{suffix}")
    null = ffi.NULL

    def fwd(n=1, length=1, strides=strides, col=0, mask_add=null, mask_bool=null,
            row_strides=null):
        return forward(buf, buf, buf, buf, buf, n, 1, length, 1, 1, 1, strides, 1.0, mask_add,
                       mask_bool, row_strides, col, 0, null)
    assert fwd() == 0
    assert fwd(n=-1) == -2
    assert fwd(length=-3) == -2
    assert fwd(strides=null) == -2
    assert fwd(strides=ffi.new("int64_t[]", [0] * 11 + [-1])) == -2
    assert fwd(col=2) == -2
    assert fwd(mask_add=buf) == -2  # a mask without its row strides
    assert fwd(mask_add=buf, mask_bool=ffi.new("uint8_t[]", 4), row_strides=strides) == -2
    assert backward(buf, buf, buf, buf, buf, buf, buf, buf, 1, 1, 1, 1, 1, -1, strides,
                    1.0, null) == -2
    assert backward(buf, buf, buf, buf, buf, buf, buf, buf, 1, 1, 1, 1, 1, 1,
                    ffi.new("int64_t[]", [0] * 20 + [-5]), 1.0, buf) == -2
