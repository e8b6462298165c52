"""The recurrent layers without PyTorch: gradchecks, the fused path against the composite one,
packed sequences' semantics, gradients of gradients, dropout, parameters and bad input.

- gradcheck (float64) of every cell's step and of a layer over a packed sequence in both
  directions, with respect to the input, the initial states and every weight; gradgradcheck
  through the composite path that create_graph=True takes;
- the fused Function (one graph node per layer and direction) equals ``ops.recurrent``'s
  composite in Tensor ops, outputs and gradients, on every backend;
- a packed batch gives each sequence what it gives alone (h_n at its own last step);
- dropout acts between layers in training mode only; parameters have PyTorch's names,
  shapes, order and init range; bad input raises a clear error naming what is wrong.
"""
import itertools
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.utils.rnn as rnn_utils
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.ops import recurrent

MODES = ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"]


def _weights(rng, mode, inputs, hidden, proj=0, bias=True):
    gates = recurrent.GATES[mode] * hidden
    out = proj or hidden
    arrays = [rng.standard_normal((gates, inputs)) * 0.5, rng.standard_normal((gates, out)) * 0.5]
    arrays += [rng.standard_normal(gates) * 0.5, rng.standard_normal(gates) * 0.5] if bias \
        else [None, None]
    arrays.append(rng.standard_normal((proj, hidden)) * 0.5 if proj else None)
    return [None if a is None else mt.tensor(a, requires_grad=True) for a in arrays]


def _layer_inputs(rng, mode, batch_sizes, inputs=3, hidden=2, proj=0, bias=True):
    rows, batch = sum(batch_sizes), batch_sizes[0]
    x = mt.tensor(rng.standard_normal((rows, inputs)), requires_grad=True)
    h0 = mt.tensor(rng.standard_normal((batch, proj or hidden)), requires_grad=True)
    c0 = mt.tensor(rng.standard_normal((batch, hidden)), requires_grad=True) \
        if mode == "LSTM" else None
    return [x, h0, c0] + _weights(rng, mode, inputs, hidden, proj, bias)


def _run(mode, batch_sizes, reverse):
    def fn(x, h0, c0, *weights):
        return recurrent.recurrent_layer(mode, x, batch_sizes, h0, c0, *weights,
                                         reverse=reverse)
    return fn


def _wanted(tensors):
    return [t for t in tensors if t is not None]


def _call_with(fn, tensors):
    """fn over the non-None tensors (gradcheck's inputs), the Nones put back in place."""
    slots = [t is not None for t in tensors]

    def wrapped(*given):
        it = iter(given)
        return fn(*[next(it) if slot else None for slot in slots])
    return wrapped


@pytest.mark.parametrize("mode", MODES)
def test_cell_step_gradcheck(mode, backend):
    rng = np.random.default_rng(0)
    for bias in (True, False):
        tensors = _layer_inputs(rng, mode, (3,), bias=bias)
        assert gradcheck(_call_with(_run(mode, (3,), False), tensors), _wanted(tensors))


@pytest.mark.parametrize("mode", MODES)
def test_layer_over_a_packed_sequence_gradcheck(mode, backend):
    """Three sequences of lengths 3, 2, 1, forward and reverse, every input and weight."""
    rng = np.random.default_rng(1)
    for reverse in (False, True):
        tensors = _layer_inputs(rng, mode, (3, 2, 1))
        assert gradcheck(_call_with(_run(mode, (3, 2, 1), reverse), tensors),
                         _wanted(tensors))


def test_lstm_with_projection_gradcheck(backend):
    rng = np.random.default_rng(2)
    tensors = _layer_inputs(rng, "LSTM", (2, 2, 1), hidden=3, proj=2)
    assert gradcheck(_call_with(_run("LSTM", (2, 2, 1), True), tensors), _wanted(tensors))


@pytest.mark.parametrize("mode", MODES)
def test_gradients_of_gradients_gradgradcheck(mode):
    """create_graph=True takes the composite path: its gradient is differentiable again
    (checked for x, h0 and W_hh on a tiny layer: the check costs the square of its size)."""
    rng = np.random.default_rng(3)
    x, h0, c0, w_ih, w_hh, b_ih, b_hh, _ = _layer_inputs(rng, mode, (2, 1), inputs=1,
                                                         hidden=1)
    run = _run(mode, (2, 1), False)
    constants = [t.detach() for t in (w_ih, b_ih, b_hh)] + [None if c0 is None else c0.detach()]

    def fn(x, h0, w_hh):
        w_ih, b_ih, b_hh, c0 = constants
        return run(x, h0, c0, w_ih, w_hh, b_ih, b_hh, None)
    assert gradgradcheck(fn, (x, h0, w_hh))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_module_gradcheck_over_input_and_initial_states(kind):
    mt.manual_seed(0)
    layer = getattr(nn, kind)(2, 3, num_layers=2, bidirectional=True).double()
    rng = np.random.default_rng(4)
    x = mt.tensor(rng.standard_normal((3, 2, 2)), requires_grad=True)
    h0 = mt.tensor(rng.standard_normal((4, 2, 3)), requires_grad=True)
    if kind == "LSTM":
        c0 = mt.tensor(rng.standard_normal((4, 2, 3)), requires_grad=True)
        def run(x, h, c):
            out, (h_n, c_n) = layer(x, (h, c))
            return out, h_n, c_n
        assert gradcheck(run, (x, h0, c0))
    else:
        assert gradcheck(lambda x, h: layer(x, h), (x, h0))


# ----------------------------------------------------------------------------- fused = composite

def _outputs_and_grads(mode, batch_sizes, reverse, tensors, fused):
    fresh = [None if t is None else mt.tensor(t.numpy(force=True), requires_grad=True)
             for t in tensors]
    run = _run(mode, batch_sizes, reverse)
    if fused:
        outs = run(*fresh)
    else:
        with recurrent.unfused():
            outs = run(*fresh)
    rng = np.random.default_rng(9)
    loss = sum((o * mt.tensor(rng.standard_normal(tuple(o.shape)))).sum() for o in outs)
    loss.backward()
    return [o.numpy(force=True) for o in outs], [None if t is None else t.grad.numpy()
                                                  for t in fresh]


@pytest.mark.parametrize("mode", MODES)
def test_fused_function_equals_the_composite(mode, backend):
    rng = np.random.default_rng(5)
    for batch_sizes, reverse, proj, bias in itertools.product(
            [(4,), (4, 4, 4), (4, 3, 3, 1)], [False, True], [0, 2], [True, False]):
        if proj and mode != "LSTM":
            continue
        tensors = _layer_inputs(rng, mode, batch_sizes, inputs=3, hidden=5, proj=proj,
                                bias=bias)
        fused = _outputs_and_grads(mode, batch_sizes, reverse, tensors, True)
        composite = _outputs_and_grads(mode, batch_sizes, reverse, tensors, False)
        for got, want in zip(fused[0] + fused[1], composite[0] + composite[1]):
            if want is None:
                assert got is None
            else:
                np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)


def test_float32_runs_in_float32_and_agrees_with_float64(backend):
    mt.manual_seed(1)
    layer = nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    x = mt.tensor(np.random.default_rng(6).standard_normal((5, 2, 3)).astype(np.float32),
                  requires_grad=True)
    out, (h, c) = layer(x)
    assert out.dtype == h.dtype == c.dtype == mt.float32
    (out.sum() + h.sum()).backward()
    assert x.grad.dtype == mt.float32 and layer.weight_hh_l1_reverse.grad.dtype == mt.float32
    layer64 = nn.LSTM(3, 4, num_layers=2, bidirectional=True).double()
    layer64.load_state_dict(layer.state_dict())
    out64, _ = layer64(x.detach().double())
    np.testing.assert_allclose(out.numpy(force=True), out64.numpy(force=True), rtol=1e-5,
                               atol=1e-6)


def test_one_graph_node_per_layer_and_direction_whatever_the_length():
    """The time loop costs no graph nodes: the graph's size does not grow with the steps."""
    def node_count(steps):
        mt.manual_seed(0)
        layer = nn.GRU(3, 4, num_layers=2, bidirectional=True)
        out, h = layer(mt.randn(steps, 2, 3, requires_grad=True))
        seen, stack = set(), [out.grad_fn, h.grad_fn]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            stack.extend(edge[0] for edge in node.input_edges if edge is not None)
        return len(seen)
    assert node_count(2) == node_count(40)
    assert node_count(40) < 40


def test_double_backward_through_the_fused_function_equals_the_composites():
    """grad with create_graph=True, then a second derivative: both paths agree."""
    def second_derivative(fused):
        mt.manual_seed(2)
        layer = nn.LSTM(2, 3).double()
        x = mt.tensor(np.linspace(-1, 1, 8).reshape(4, 1, 2), requires_grad=True)
        if fused:
            out, _ = layer(x)
        else:
            with recurrent.unfused():
                out, _ = layer(x)
        (g,) = mt.autograd.grad((out * out).sum(), x, create_graph=True)
        (gg,) = mt.autograd.grad((g * g).sum(), x)
        return g.numpy(force=True), gg.numpy()
    for got, want in zip(second_derivative(True), second_derivative(False)):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


# ----------------------------------------------------------------------------- packed sequences

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_packed_batch_gives_each_sequence_what_it_gives_alone(kind, backend):
    """Outputs at the real steps and h_n (c_n) at each sequence's own last step, both
    directions, the batch order restored for unsorted lengths."""
    mt.manual_seed(3)
    layer = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True).double()
    rng = np.random.default_rng(7)
    lengths = [2, 5, 1, 3]
    sequences = [mt.tensor(rng.standard_normal((n, 3))) for n in lengths]
    packed = rnn_utils.pack_sequence(sequences, enforce_sorted=False)
    layer.requires_grad_(False)
    out, final = layer(packed)
    padded, got_lengths = rnn_utils.pad_packed_sequence(out, batch_first=True)
    assert got_lengths.tolist() == lengths
    for i, seq in enumerate(sequences):
        alone, alone_final = layer(seq)  # unbatched (L, I)
        np.testing.assert_allclose(padded[i, :lengths[i]].numpy(), alone.numpy(), atol=1e-12)
        assert np.all(padded[i, lengths[i]:].numpy() == 0)
        for got, want in zip(final if kind == "LSTM" else (final,),
                             alone_final if kind == "LSTM" else (alone_final,)):
            np.testing.assert_allclose(got[:, i].numpy(), want.numpy(), atol=1e-12)


def test_packing_round_trip_and_its_gradient():
    rng = np.random.default_rng(8)
    x = mt.tensor(rng.standard_normal((4, 3, 2)), requires_grad=True)
    packed = rnn_utils.pack_padded_sequence(x, mt.tensor([2, 4, 1]), enforce_sorted=False)
    assert packed.batch_sizes.tolist() == [3, 2, 1, 1]
    assert packed.sorted_indices.tolist() == [1, 0, 2]
    assert packed.unsorted_indices.tolist() == [1, 0, 2]
    padded, lengths = rnn_utils.pad_packed_sequence(packed, total_length=5, padding_value=7.0)
    assert padded.shape == (5, 3, 2) and lengths.tolist() == [2, 4, 1]
    mask = np.arange(5)[:, None] < np.array([2, 4, 1])[None, :]
    np.testing.assert_array_equal(padded.numpy(force=True)[mask], x.numpy(force=True)[mask[:4]])
    assert np.all(padded.numpy(force=True)[~mask] == 7.0)
    padded.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), mask[:4, :, None] * np.ones((1, 1, 2)))
    pieces = rnn_utils.unpack_sequence(packed)
    assert [p.shape[0] for p in pieces] == [2, 4, 1]
    np.testing.assert_array_equal(pieces[1].numpy(force=True), x[:, 1].numpy(force=True))
    assert packed.double().data.dtype == mt.float64 and packed.float().data.dtype == mt.float32
    again = rnn_utils.PackedSequence(packed.data, packed.batch_sizes, packed.sorted_indices)
    assert again.unsorted_indices.tolist() == [1, 0, 2]


def test_packing_bad_input():
    x = mt.zeros(3, 2, 1)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn_utils.pack_padded_sequence(x, [2, 3])
    with pytest.raises(RuntimeError, match="exceeds the input's sequence length 3"):
        rnn_utils.pack_padded_sequence(x, [4, 2])
    with pytest.raises(RuntimeError, match="greater than 0"):
        rnn_utils.pack_padded_sequence(x, [2, 0])
    with pytest.raises(RuntimeError, match="equal to batch_size"):
        rnn_utils.pack_padded_sequence(x, [2])
    with pytest.raises(TypeError, match="lengths must be"):
        rnn_utils.pack_padded_sequence(x, [2.0, 1.0])
    packed = rnn_utils.pack_padded_sequence(x, [3, 2])
    with pytest.raises(ValueError, match="total_length=2 and max sequence length being 3"):
        rnn_utils.pad_packed_sequence(packed, total_length=2)


# ----------------------------------------------------------------------------- the modules

def test_parameters_have_pytorchs_names_shapes_and_init():
    layer = nn.LSTM(3, 8, num_layers=2, bidirectional=True, proj_size=2)
    names = [n for n, _ in layer.named_parameters()]
    assert names[:5] == ["weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
                         "weight_hr_l0"]
    assert names[5:10] == [n + "_reverse" for n in names[:5]]
    shapes = {n: tuple(p.shape) for n, p in layer.named_parameters()}
    assert shapes["weight_ih_l0"] == (32, 3) and shapes["weight_hh_l0"] == (32, 2)
    assert shapes["weight_ih_l1"] == (32, 4) and shapes["weight_hr_l1_reverse"] == (2, 8)
    assert [[tuple(p.shape) for p in ps] for ps in layer.all_weights][3] == \
        [(32, 4), (32, 2), (32,), (32,), (2, 8)]
    bound = 1 / math.sqrt(8)
    values = np.concatenate([p.numpy(force=True).ravel() for p in layer.parameters()])
    assert values.min() >= -bound and values.max() <= bound and values.std() > bound / 3
    assert [n for n, _ in nn.GRU(2, 3, bias=False).named_parameters()] == ["weight_ih_l0",
                                                                          "weight_hh_l0"]
    cell = nn.GRUCell(2, 3)
    assert {n: tuple(p.shape) for n, p in cell.named_parameters()} == {
        "weight_ih": (9, 2), "weight_hh": (9, 3), "bias_ih": (9,), "bias_hh": (9,)}
    assert nn.RNNCell(2, 3, bias=False).bias_ih is None
    assert layer.flatten_parameters() is None
    assert repr(nn.GRU(2, 3, num_layers=2, batch_first=True)) == \
        "GRU(2, 3, num_layers=2, batch_first=True)"
    assert repr(nn.RNNCell(2, 3, nonlinearity="relu")) == "RNNCell(2, 3, nonlinearity=relu)"


def test_shapes_of_outputs_and_states():
    x = mt.randn(5, 2, 3)
    out, (h, c) = nn.LSTM(3, 4, num_layers=3, bidirectional=True, proj_size=2)(x)
    assert out.shape == (5, 2, 4) and h.shape == (6, 2, 2) and c.shape == (6, 2, 4)
    out, h = nn.GRU(3, 4, batch_first=True)(x)
    assert out.shape == (5, 2, 4) and h.shape == (1, 5, 4)
    out, h = nn.RNN(3, 4, num_layers=2)(mt.randn(5, 3))  # unbatched
    assert out.shape == (5, 4) and h.shape == (2, 4)
    h, c = nn.LSTMCell(3, 4)(mt.randn(3))
    assert h.shape == c.shape == (4,)
    assert nn.GRUCell(3, 4)(mt.randn(2, 3), mt.zeros(2, 4)).shape == (2, 4)


def test_dropout_acts_between_layers_in_training_mode_only():
    mt.manual_seed(4)
    layer = nn.GRU(3, 4, num_layers=2, dropout=0.5)
    plain = nn.GRU(3, 4, num_layers=2)
    plain.load_state_dict(layer.state_dict())
    layer.requires_grad_(False)
    plain.requires_grad_(False)
    x = mt.randn(6, 2, 3)
    layer.eval()
    np.testing.assert_array_equal(layer(x)[0].numpy(), plain(x)[0].numpy())
    layer.train()
    assert not np.allclose(layer(x)[0].numpy(), plain(x)[0].numpy())
    # p = 1 zeroes the second layer's input: its output is the GRU run on zeros
    layer.dropout = 1.0
    second = nn.GRU(4, 4).requires_grad_(False)
    second.load_state_dict({k.replace("_l1", "_l0"): v for k, v in layer.state_dict().items()
                            if k.endswith("_l1")})
    np.testing.assert_allclose(layer(x)[0].numpy(), second(mt.zeros(6, 2, 4))[0].numpy(),
                               atol=1e-6)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_bad_input_raises_a_clear_error():
    lstm = nn.LSTM(3, 4, num_layers=2)
    x = mt.randn(5, 2, 3)
    with pytest.raises(RuntimeError, match="input_size. Expected 3, got 5"):
        lstm(mt.randn(5, 2, 5))
    with pytest.raises(RuntimeError, match=r"Expected hx\[0\] size \(2, 2, 4\), got \[2, 3, 4\]"):
        lstm(x, (mt.zeros(2, 3, 4), mt.zeros(2, 2, 4)))
    with pytest.raises(RuntimeError, match=r"Expected hx\[1\] size \(2, 2, 4\), got \[1, 2, 4\]"):
        lstm(x, (mt.zeros(2, 2, 4), mt.zeros(1, 2, 4)))
    with pytest.raises(RuntimeError, match="hx should also be 3-D"):
        lstm(x, (mt.zeros(2, 4), mt.zeros(2, 4)))
    with pytest.raises(TypeError, match=r"hx must be a tuple \(h_0, c_0\)"):
        lstm(x, mt.zeros(2, 2, 4))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        lstm(mt.randn(1, 5, 2, 3))
    with pytest.raises(ValueError, match="does not match weight dtype"):
        lstm(x.double())
    with pytest.raises(RuntimeError, match=r"Expected hx size \(1, 2, 4\), got \[1, 2, 5\]"):
        nn.GRU(3, 4)(x, mt.zeros(1, 2, 5))
    packed = rnn_utils.pack_padded_sequence(x, [5, 3])
    with pytest.raises(RuntimeError, match=r"Expected hx size \(1, 2, 4\), got \[1, 3, 4\]"):
        nn.RNN(3, 4)(packed, mt.zeros(1, 3, 4))
    unsorted = rnn_utils.pack_padded_sequence(x, [3, 5], enforce_sorted=False)
    with pytest.raises(RuntimeError, match=r"Expected hx size \(1, 2, 4\), got \[1, 3, 4\]"):
        nn.GRU(3, 4)(unsorted, mt.zeros(1, 3, 4))  # checked before the batch is reordered
    with pytest.raises(RuntimeError, match="not the same dtype"):
        nn.GRU(3, 4)(x, mt.zeros(1, 2, 4, dtype=mt.float64))
    with pytest.raises(TypeError, match="hx must hold Tensors"):
        nn.RNN(3, 4)(x, [[0.0]])
    with pytest.raises(RuntimeError, match=r"hidden dtype \(minitorch.float64\) does not match"):
        nn.RNNCell(3, 4)(mt.randn(2, 3), mt.zeros(2, 4, dtype=mt.float64))
    with pytest.raises(RuntimeError, match="inconsistent input_size: got 2 expected 3"):
        nn.LSTMCell(3, 4)(mt.randn(2, 2))
    with pytest.raises(RuntimeError, match=r"hidden must have shape \(2, 4\)"):
        nn.GRUCell(3, 4)(mt.randn(2, 3), mt.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"hx\[1\] must have shape \(2, 4\)"):
        nn.LSTMCell(3, 4)(mt.randn(2, 3), (mt.zeros(2, 4), mt.zeros(2, 5)))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D, got 3D"):
        nn.RNNCell(3, 4)(mt.randn(1, 2, 3))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(3, 0)
    with pytest.raises(TypeError, match="input_size should be of type int"):
        nn.LSTM(3.0, 4)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, num_layers=2, dropout=1.5)
    with pytest.raises(TypeError, match="bias should be of type bool"):
        nn.GRU(3, 4, bias=1)
    with pytest.raises(ValueError, match="num_layers must be greater than zero"):
        nn.RNN(3, 4, num_layers=0)


def test_readme_recurrent_example_runs_as_written():
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", text, re.S)
                 if "pack_padded_sequence(padded" in b)
    namespace = {}
    exec(compile(block, "README.md:recurrent", "exec"), namespace)
    assert tuple(namespace["output"].shape) == (7, 3, 64)
    assert tuple(namespace["h_n"].shape) == (4, 3, 32)
    assert namespace["lengths"].tolist() == [5, 7, 2]
