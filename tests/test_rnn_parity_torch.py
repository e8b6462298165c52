"""Parity of the recurrent layers with PyTorch's: nn.RNN / LSTM / GRU and the three cells, built
in both libraries, PyTorch's state_dict loaded into minitorch's with ``load_state_dict`` (keys
one-to-one), then outputs, final states and the gradients of every input, initial state and
parameter compared in float64 (atol 1e-10).

The configurations cover layers 1/2, bidirectional, batch_first, bias, initial states given or
not, and padded, packed (sorted and unsorted) and unbatched input; the LSTM also with
proj_size. Skipped as a whole when PyTorch is not installed.
"""
import itertools

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.utils.rnn as rnn_utils

torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")

TOL = dict(atol=1e-10, rtol=1e-9)
INPUT, HIDDEN, STEPS, BATCH = 3, 4, 5, 3
LENGTHS_SORTED, LENGTHS_UNSORTED = [5, 3, 2], [2, 5, 3]


def _close(got, want, what):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch's {want.shape}"
    np.testing.assert_allclose(got, want, err_msg=what, **TOL)


def _pair(kind, seed=0, **kwargs):
    """The same layer in both libraries, PyTorch's weights loaded into minitorch's."""
    torch.manual_seed(seed)
    theirs = getattr(torch.nn, kind)(INPUT, HIDDEN, **kwargs).double()
    ours = getattr(nn, kind)(INPUT, HIDDEN, **kwargs).double()
    state = {k: mt.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()}
    assert list(state) == list(ours.state_dict()), "state_dict keys differ from PyTorch's"
    result = ours.load_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys
    return theirs, ours


def _leaf(array):
    return (torch.tensor(array, requires_grad=True), mt.tensor(array, requires_grad=True))


def _flatten(value):
    """The tensors of an output: a PackedSequence gives its data, a tuple its parts."""
    if isinstance(value, (tuple, list)) and not isinstance(value, (torch.Tensor, mt.Tensor)):
        if type(value).__name__ == "PackedSequence":
            return [value.data]
        return [t for part in value for t in _flatten(part)]
    return [value]


def _compare_run(theirs, ours, t_args, m_args, t_leaves, m_leaves, seed=1):
    """Run both, compare every output, backpropagate the same random upstream gradients and
    compare the gradients of the leaves and of every parameter."""
    t_out, m_out = _flatten(theirs(*t_args)), _flatten(ours(*m_args))
    assert len(t_out) == len(m_out)
    rng = np.random.default_rng(seed)
    t_loss = m_loss = 0
    for i, (t, m) in enumerate(zip(t_out, m_out)):
        _close(m.detach().numpy(), t.detach().numpy(), f"output {i}")
        g = rng.standard_normal(tuple(t.shape))
        t_loss = t_loss + (t * torch.tensor(g)).sum()
        m_loss = m_loss + (m * mt.tensor(g)).sum()
    t_loss.backward()
    m_loss.backward()
    for i, (t, m) in enumerate(zip(t_leaves, m_leaves)):
        _close(m.grad.numpy(), t.grad.numpy(), f"gradient of input {i}")
    ours_params = dict(ours.named_parameters())
    assert set(ours_params) == {n for n, _ in theirs.named_parameters()}
    for name, p in theirs.named_parameters():
        _close(ours_params[name].grad.numpy(), p.grad.numpy(), f"gradient of {name}")


LAYERS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
FLAGS = list(itertools.product([1, 2], [False, True], [False, True], [False, True],
                               [False, True]))  # layers, bidirectional, batch_first, bias, hx
INPUTS = ["padded", "packed_sorted", "packed_unsorted", "unbatched"]


def _layer_id(layer):
    kind, kwargs = layer
    return kind + "".join(f"-{v}" for v in kwargs.values())


@pytest.mark.parametrize("input_kind", INPUTS)
@pytest.mark.parametrize("layer", LAYERS, ids=_layer_id)
def test_layer_matches_pytorch_in_every_configuration(layer, input_kind):
    """Every combination of layers, bidirectional, batch_first, bias and given initial states,
    for one kind of input, on the default backend (the numpy backend runs the smaller grids
    below; tests/test_kernels_rnn.py holds the C kernels to it)."""
    kind, extra = layer
    rng = np.random.default_rng(0)
    for num_layers, bidirectional, batch_first, bias, give_hx in FLAGS:
        theirs, ours = _pair(kind, num_layers=num_layers, bidirectional=bidirectional,
                             batch_first=batch_first, bias=bias, **extra)
        unbatched = input_kind == "unbatched"
        shape = ((STEPS, INPUT) if unbatched else
                 (BATCH, STEPS, INPUT) if batch_first else (STEPS, BATCH, INPUT))
        t_x, m_x = _leaf(rng.standard_normal(shape))
        leaves = [(t_x, m_x)]
        state_shape = (num_layers * (2 if bidirectional else 1),) + (() if unbatched
                                                                     else (BATCH,)) + (HIDDEN,)
        t_hx = m_hx = None
        if give_hx:
            states = [_leaf(rng.standard_normal(state_shape))
                      for _ in range(2 if kind == "LSTM" else 1)]
            leaves += states
            t_hx = tuple(t for t, _ in states) if kind == "LSTM" else states[0][0]
            m_hx = tuple(m for _, m in states) if kind == "LSTM" else states[0][1]
        t_in, m_in = t_x, m_x
        if input_kind.startswith("packed"):
            lengths = LENGTHS_SORTED if input_kind == "packed_sorted" else LENGTHS_UNSORTED
            sort = input_kind == "packed_sorted"
            t_in = torch.nn.utils.rnn.pack_padded_sequence(t_x, lengths, batch_first,
                                                           enforce_sorted=sort)
            m_in = rnn_utils.pack_padded_sequence(m_x, lengths, batch_first,
                                                  enforce_sorted=sort)
        _compare_run(theirs, ours, (t_in, t_hx), (m_in, m_hx), *zip(*leaves))


@pytest.mark.parametrize("input_kind", ["padded", "packed_unsorted", "unbatched"])
def test_lstm_with_projection_matches_pytorch(input_kind, backend):
    rng = np.random.default_rng(3)
    for num_layers, bidirectional, give_hx in itertools.product([1, 2], [False, True],
                                                                [False, True]):
        theirs, ours = _pair("LSTM", num_layers=num_layers, bidirectional=bidirectional,
                             proj_size=2)
        directions = 2 if bidirectional else 1
        unbatched = input_kind == "unbatched"
        batch = () if unbatched else (BATCH,)
        t_x, m_x = _leaf(rng.standard_normal((STEPS,) + batch + (INPUT,)))
        leaves = [(t_x, m_x)]
        t_hx = m_hx = None
        if give_hx:
            h = _leaf(rng.standard_normal((num_layers * directions,) + batch + (2,)))
            c = _leaf(rng.standard_normal((num_layers * directions,) + batch + (HIDDEN,)))
            leaves += [h, c]
            t_hx, m_hx = (h[0], c[0]), (h[1], c[1])
        t_in, m_in = t_x, m_x
        if input_kind == "packed_unsorted":
            t_in = torch.nn.utils.rnn.pack_padded_sequence(t_x, LENGTHS_UNSORTED,
                                                           enforce_sorted=False)
            m_in = rnn_utils.pack_padded_sequence(m_x, LENGTHS_UNSORTED, enforce_sorted=False)
        _compare_run(theirs, ours, (t_in, t_hx), (m_in, m_hx), *zip(*leaves))


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {})]


@pytest.mark.parametrize("cell", CELLS, ids=_layer_id)
def test_cell_matches_pytorch(cell, backend):
    kind, extra = cell
    rng = np.random.default_rng(4)
    for bias, give_hx, unbatched in itertools.product([False, True], repeat=3):
        theirs, ours = _pair(kind, bias=bias, **extra)
        batch = () if unbatched else (BATCH,)
        t_x, m_x = _leaf(rng.standard_normal(batch + (INPUT,)))
        leaves = [(t_x, m_x)]
        t_hx = m_hx = None
        if give_hx:
            states = [_leaf(rng.standard_normal(batch + (HIDDEN,)))
                      for _ in range(2 if kind == "LSTMCell" else 1)]
            leaves += states
            t_hx = tuple(t for t, _ in states) if kind == "LSTMCell" else states[0][0]
            m_hx = tuple(m for _, m in states) if kind == "LSTMCell" else states[0][1]
        _compare_run(theirs, ours, (t_x, t_hx), (m_x, m_hx), *zip(*leaves))


def test_cell_unrolled_over_steps_matches_pytorch(backend):
    """A decoder-style loop: the cell's state fed back for several steps, one backward."""
    theirs, ours = _pair("LSTMCell")
    t_x, m_x = _leaf(np.random.default_rng(5).standard_normal((STEPS, BATCH, INPUT)))
    t_state = m_state = None
    t_total = m_total = 0
    for t in range(STEPS):
        t_state, m_state = theirs(t_x[t], t_state), ours(m_x[t], m_state)
        t_total = t_total + (t_state[0] * (t + 1)).sum()
        m_total = m_total + (m_state[0] * (t + 1)).sum()
    _close(m_total.item(), t_total.item(), "loss")
    t_total.backward()
    m_total.backward()
    _close(m_x.grad.numpy(), t_x.grad.numpy(), "gradient of x")
    for name, p in theirs.named_parameters():
        _close(dict(ours.named_parameters())[name].grad.numpy(), p.grad.numpy(), name)


# ----------------------------------------------------------------------------- packing utils

def test_packing_matches_pytorch():
    rng = np.random.default_rng(6)
    for batch_first, lengths, sort in [(False, [4, 2, 2], True), (True, [1, 4, 3], False),
                                       (False, [2, 3, 3, 1], False)]:
        shape = (len(lengths), 4, 2) if batch_first else (4, len(lengths), 2)
        t_x, m_x = _leaf(rng.standard_normal(shape))
        t_p = torch.nn.utils.rnn.pack_padded_sequence(t_x, lengths, batch_first,
                                                      enforce_sorted=sort)
        m_p = rnn_utils.pack_padded_sequence(m_x, lengths, batch_first, enforce_sorted=sort)
        _close(m_p.data.detach().numpy(), t_p.data.detach().numpy(), "data")
        assert m_p.batch_sizes.tolist() == t_p.batch_sizes.tolist()
        for field in ("sorted_indices", "unsorted_indices"):
            t_f, m_f = getattr(t_p, field), getattr(m_p, field)
            assert (m_f is None) == (t_f is None)
            if t_f is not None:
                assert m_f.tolist() == t_f.tolist(), field
        for total in (None, 6):
            t_pad, t_len = torch.nn.utils.rnn.pad_packed_sequence(
                t_p, batch_first, padding_value=-1.5, total_length=total)
            m_pad, m_len = rnn_utils.pad_packed_sequence(
                m_p, batch_first, padding_value=-1.5, total_length=total)
            _close(m_pad.detach().numpy(), t_pad.detach().numpy(), "padded")
            assert m_len.tolist() == t_len.tolist() and m_len.dtype == mt.int64
        g = rng.standard_normal(tuple(t_pad.shape))
        (t_pad * torch.tensor(g)).sum().backward()
        (m_pad * mt.tensor(g)).sum().backward()
        _close(m_x.grad.numpy(), t_x.grad.numpy(), "gradient through pack and pad")


def test_pack_sequence_and_unpack_sequence_match_pytorch():
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((n, 2)) for n in (2, 4, 1)]
    t_p = torch.nn.utils.rnn.pack_sequence([torch.tensor(a) for a in arrays],
                                           enforce_sorted=False)
    m_p = rnn_utils.pack_sequence([mt.tensor(a) for a in arrays], enforce_sorted=False)
    _close(m_p.data.numpy(), t_p.data.numpy(), "data")
    assert m_p.batch_sizes.tolist() == t_p.batch_sizes.tolist()
    assert m_p.sorted_indices.tolist() == t_p.sorted_indices.tolist()
    for got, want in zip(rnn_utils.unpack_sequence(m_p),
                         torch.nn.utils.rnn.unpack_sequence(t_p)):
        _close(got.numpy(), want.numpy(), "unpacked sequence")


# ----------------------------------------------------------------------------- the benchmark

def test_bench_rnn_times_like_against_like(monkeypatch):
    """benchmarks/bench_rnn.py: both frameworks' layers hold the same weights and compute the
    same outputs and input gradients in every case it times (at its sizes' shapes, shrunk)."""
    import pathlib
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
    bench_rnn = pytest.importorskip("bench_rnn")
    monkeypatch.setattr(bench_rnn, "SIZES", {
        name: {key: max(1, value // 16) for key, value in cfg.items()}
        for name, cfg in bench_rnn.SIZES.items()})
    for kind in bench_rnn.KINDS:
        for size in bench_rnn.SIZES:
            ours, x, state = bench_rnn.build(mt, kind, size)
            theirs, tx, tstate = bench_rnn.build(torch, kind, size)
            bench_rnn.same_weights(theirs, ours)
            for which in bench_rnn.PASSES:
                got = bench_rnn.step_function(mt, ours, x, state, which)()
                want = bench_rnn.step_function(torch, theirs, tx, tstate, which)()
                got, want = _flatten(got)[0], _flatten(want)[0]
                np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                           rtol=1e-4, atol=1e-5, err_msg=f"{kind} {size}")
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
