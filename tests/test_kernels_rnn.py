"""Kernel tests of the recurrent cells' step (csrc/rnn_cell.c), in the manner of
test_kernels_elementwise.py:

- every C function (rnn, lstm, gru cell, forward and backward) equals the numpy reference
  (numpy_backend) on drawn sizes (hypothesis: the campaign's profiles), float32 and float64,
  1 and 2 threads, at every ISA level the CPU runs (the plain reference bodies and each tuned
  level), sizes across the one-thread threshold; each tuned level is held to the reference
  level's output;
- the numpy reference itself equals the cell formulas written out in Tensor ops
  (``ops.recurrent.composite_layer``), so both backends compute PyTorch's cells;
- strided and misaligned inputs give their contiguous copies' results;
- saturated gates (|x| = 1e4, inf) give finite, exact results on both backends;
- bad input raises the same Python error, naming the argument, on both backends.
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch as mt
from minitorch.backends import numpy_backend as N
from minitorch.ops.recurrent import composite_layer
from test_kernels import DTYPES, ISAS, THREADS, TUNED_ISAS, C, needs_c
from test_kernels_elementwise import c_threads


def misaligned(a):
    """a's values in a view one byte past an aligned start."""
    view = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, count=a.size, offset=1)
    view = view.reshape(a.shape)
    view[...] = a
    return view


def tol(dtype):
    return dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)


def cell_calls(rng, rows, hidden, dtype, scale=2.0):
    """{name: (function name, args)}: every cell kernel on one step of `rows` x `hidden`."""
    def draw(width, s=scale):
        return (rng.standard_normal((rows, width * hidden)) * s).astype(dtype)
    xw1, hw1, xw3, hw3, xw4, hw4 = draw(1), draw(1), draw(3), draw(3), draw(4), draw(4)
    h, c_prev, dh, dc = draw(1, 1.0), draw(1, 1.0), draw(1, 1.0), draw(1, 1.0)
    _, c, act = N.lstm_cell_forward(xw4, hw4, c_prev)
    _, saved = N.gru_cell_forward(xw3, hw3, h)
    return {
        "rnn tanh": ("rnn_cell_forward", (xw1, hw1)),
        "rnn relu": ("rnn_cell_forward", (xw1, hw1, "relu")),
        "rnn tanh backward": ("rnn_cell_backward", (dh, N.rnn_cell_forward(xw1, hw1))),
        "rnn relu backward": ("rnn_cell_backward", (dh, N.rnn_cell_forward(xw1, hw1, "relu"),
                                                    "relu")),
        "lstm": ("lstm_cell_forward", (xw4, hw4, c_prev)),
        "lstm backward": ("lstm_cell_backward", (dh, dc, c_prev, c, act)),
        "gru": ("gru_cell_forward", (xw3, hw3, h)),
        "gru backward": ("gru_cell_backward", (dh, h, saved)),
    }


def assert_same(got, want, dtype, what):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), what
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, f"{what} output {i}"
        np.testing.assert_allclose(g, w, err_msg=f"{what} output {i}", **tol(dtype))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(rows=st.integers(0, 9), hidden=st.integers(0, 21), seed=st.integers(0, 2 ** 16))
def test_c_cells_equal_the_numpy_reference(dtype, threads, isa, rows, hidden, seed):
    rng = np.random.default_rng(seed)
    with c_threads(threads, isa):
        for name, (fn, args) in cell_calls(rng, rows, hidden, dtype).items():
            assert_same(getattr(C, fn)(*args), getattr(N, fn)(*args), dtype, name)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_c_cells_equal_the_numpy_reference_above_the_thread_threshold(dtype, threads, isa):
    """40 x 256 units: 40960 elements a gate, above the kernels' one-thread threshold."""
    rng = np.random.default_rng(1)
    with c_threads(threads, isa):
        for name, (fn, args) in cell_calls(rng, 40, 256, dtype).items():
            assert_same(getattr(C, fn)(*args), getattr(N, fn)(*args), dtype, name)


@needs_c
@pytest.mark.parametrize("isa", TUNED_ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_each_tuned_level_equals_the_reference_level(dtype, isa):
    """Wide pre-activations (sd 6: saturated and near-0 gates) and ±1e4, ±inf, NaN among the
    forward kernels' pre-activations."""
    rng = np.random.default_rng(2)
    calls = cell_calls(rng, 7, 37, dtype, scale=6.0)
    specials = np.array([1e4, -1e4, np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-30], dtype)
    for fn, args in calls.values():
        if fn.endswith("forward"):
            args[0].reshape(-1)[:len(specials)] = specials
    for name, (fn, args) in calls.items():
        with C.isa("reference"):
            want = getattr(C, fn)(*args)
        with C.isa(isa):
            got = getattr(C, fn)(*args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        for i, (g, w) in enumerate(zip(got, want)):
            np.testing.assert_allclose(g, w, err_msg=f"{name} output {i} at {isa}",
                                       equal_nan=True, **tol(dtype))


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_strided_and_misaligned_inputs_give_their_copies_results(dtype):
    rng = np.random.default_rng(2)
    for name, (fn, args) in cell_calls(rng, 5, 6, dtype).items():
        want = getattr(C, fn)(*args)
        strided = tuple(np.repeat(a, 2, axis=0)[::2] if isinstance(a, np.ndarray) else a
                        for a in args)
        assert not any(isinstance(a, np.ndarray) and a.flags.c_contiguous and a.size > 1
                       for a in strided)
        shifted = tuple(misaligned(a) if isinstance(a, np.ndarray) else a for a in args)
        for layout, call_args in (("strided", strided), ("misaligned", shifted)):
            assert_same(getattr(C, fn)(*call_args), want, dtype, f"{name} {layout}")


@pytest.mark.parametrize("backend_name", ["numpy"] + [f"c-{level}" for level in ISAS])
def test_saturated_gates_stay_finite_and_exact(backend_name):
    """Pre-activations of ±1e4 and ±inf saturate σ and tanh to 0 / 1 / ±1: no NaN, no inf."""
    if backend_name == "numpy":
        _saturated_gates(N)
    else:
        with C.isa(backend_name[2:]):
            _saturated_gates(C)


def _saturated_gates(kernels):
    big = np.array([[1e4, -1e4, np.inf, -np.inf]], np.float64)
    zeros = np.zeros_like(big)
    h = kernels.rnn_cell_forward(big, zeros)
    np.testing.assert_array_equal(h, [[1.0, -1.0, 1.0, -1.0]])
    # lstm, hidden 1: i = 1, f = 0, g = 1, o = 0 ... then every gate saturated the other way
    for pre, (h_want, c_want) in (([[1e4, -1e4, 1e4, -1e4]], (0.0, 1.0)),
                                  ([[np.inf, np.inf, -np.inf, np.inf]], (np.tanh(1.5), 1.5))):
        pre = np.array(pre)
        h, c, act = kernels.lstm_cell_forward(pre, np.zeros_like(pre), np.array([[2.5]]))
        np.testing.assert_allclose([h[0, 0], c[0, 0]], [h_want, c_want], rtol=1e-15)
        d_gates, dc_prev = kernels.lstm_cell_backward(np.ones((1, 1)), np.ones((1, 1)),
                                                      np.array([[2.5]]), c, act)
        assert np.isfinite(d_gates).all() and np.isfinite(dc_prev).all()
    pre = np.array([[1e4, -1e4, np.inf]])
    h, saved = kernels.gru_cell_forward(pre, np.zeros_like(pre), np.array([[0.5]]))
    assert h[0, 0] == 1.0  # z = 0: h = n = tanh(inf)
    assert np.isfinite(np.concatenate(kernels.gru_cell_backward(np.ones((1, 1)),
                                                                np.array([[0.5]]), saved), 1)).all()


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
def test_numpy_reference_is_the_cell_formula(mode):
    """One step on the numpy kernels equals the Tensor-op composite of the same formula."""
    rng = np.random.default_rng(3)
    gates = {"LSTM": 4, "GRU": 3}.get(mode, 1)
    rows, inputs, hidden = 3, 2, 4
    x, h0, c0 = (rng.standard_normal(s) for s in ((rows, inputs), (rows, hidden),
                                                  (rows, hidden)))
    w_ih = rng.standard_normal((gates * hidden, inputs))
    w_hh = rng.standard_normal((gates * hidden, hidden))
    b_ih, b_hh = rng.standard_normal(gates * hidden), rng.standard_normal(gates * hidden)
    xw, hw = x @ w_ih.T + b_ih, h0 @ w_hh.T + b_hh
    if mode == "LSTM":
        got = N.lstm_cell_forward(xw, hw, c0)[:2]
    elif mode == "GRU":
        got = N.gru_cell_forward(xw, hw, h0)[:1]
    else:
        got = (N.rnn_cell_forward(xw, hw, "tanh" if mode == "RNN_TANH" else "relu"),)
    tensors = [mt.tensor(a) for a in (x, h0, c0 if mode == "LSTM" else None, w_ih, w_hh, b_ih,
                                      b_hh) if a is not None]
    if mode != "LSTM":
        tensors.insert(2, None)
    want = composite_layer(mode, (rows,), False, *tensors)[1:]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-13, atol=1e-14)


def bad_calls():
    """(id, function name, args, error, text): the same bad input for both backends."""
    f64 = np.ones((2, 8))
    return [
        ("lstm gates not 4H", "lstm_cell_forward", (np.ones((2, 6)), np.ones((2, 6)),
                                                    np.ones((2, 1))), ValueError, "xw must be"),
        ("lstm hw shape", "lstm_cell_forward", (f64, np.ones((3, 8)), np.ones((2, 2))),
         ValueError, "hw must have shape (2, 8)"),
        ("lstm c_prev shape", "lstm_cell_forward", (f64, f64, np.ones((2, 3))), ValueError,
         "c_prev must have shape (2, 2)"),
        ("lstm dtype", "lstm_cell_forward", (f64, f64.astype(np.float32), np.ones((2, 2))),
         TypeError, "hw must have the same dtype"),
        ("lstm 1-d", "lstm_cell_forward", (np.ones(8), np.ones(8), np.ones(2)), ValueError,
         "xw must be 2-D"),
        ("lstm list", "lstm_cell_forward", ([[1.0] * 4], f64, f64), TypeError,
         "xw must be a numpy.ndarray"),
        ("lstm int", "lstm_cell_forward", (f64.astype(np.int64), f64, f64), TypeError,
         "xw must be float32"),
        ("lstm backward act shape", "lstm_cell_backward", (np.ones((2, 2)), np.ones((2, 2)),
                                                           np.ones((2, 2)), np.ones((2, 2)),
                                                           np.ones((2, 4))), ValueError,
         "dh must have shape (2, 1)"),
        ("gru hw shape", "gru_cell_forward", (np.ones((2, 6)), np.ones((2, 3)), np.ones((2, 2))),
         ValueError, "hw must have shape (2, 6)"),
        ("gru backward saved not 4H", "gru_cell_backward", (np.ones((2, 2)), np.ones((2, 2)),
                                                            np.ones((2, 6))), ValueError,
         "saved must be"),
        ("rnn nonlinearity", "rnn_cell_forward", (f64, f64, "sigmoid"), ValueError,
         "nonlinearity must be one of"),
        ("rnn backward None", "rnn_cell_backward", (None, f64), TypeError,
         "dh must be a numpy.ndarray"),
    ]


@pytest.mark.parametrize("case", bad_calls(), ids=lambda case: case[0])
def test_bad_input_raises_the_same_error_on_both_backends(case):
    _, fn, args, error, text = case
    for kernels in [N] + ([C] if C is not None else []):
        with pytest.raises(error, match=re.escape(text)):
            getattr(kernels, fn)(*args)
