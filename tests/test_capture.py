"""``minitorch.capture``: a captured step replays to the same numbers as eager mode, bit for bit,
and refuses what a replay could not reproduce.

Each equality test trains two copies of one model from one seed on the same batches, one step
function called eagerly, the other through ``capture``, and asserts the losses and every
parameter equal bit for bit after each step (the capture's own check compares a replay with
eager mode once; these compare every replayed step).
"""
import numpy as np
import pytest

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.backends import tape as tapes

VOCAB, PAD = 40, 0
needs_c = pytest.mark.skipif("c" not in minitorch.backends.available,
                             reason="the C extension is not built: no kernels to capture")


def seq2seq(dtype, dropout, optimizer="adam"):
    """(train_step, parameters): a small Transformer with embeddings, as bench_transformer's."""
    minitorch.manual_seed(0)
    model = nn.Transformer(16, 2, 1, 1, 32, dropout=dropout, batch_first=True)
    embed, head = nn.Embedding(VOCAB, 16), nn.Linear(16, VOCAB)
    params = [p for m in (model, embed, head) for p in m.parameters()]
    for p in params:
        p.data = p.data.to(dtype)
    if optimizer == "adam":
        opt = minitorch.optim.Adam(params, lr=1e-2)
    else:
        opt = minitorch.optim.SGD(params, lr=1e-1, momentum=0.9, weight_decay=1e-3)
    schedule = minitorch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def train_step(src, tgt_in, tgt_out):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt_in.shape[1]).to(dtype)
        padding = src == PAD  # a mask made from each batch: a replay must make it again
        hidden = model(embed(src), embed(tgt_in), tgt_mask=mask, src_key_padding_mask=padding,
                       memory_key_padding_mask=padding)
        loss = F.cross_entropy(head(hidden).reshape(-1, VOCAB), tgt_out.reshape(-1),
                               ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return train_step, params, schedule


def batches(count, seed=1, shape=(3, 5)):
    """Batches of ids with a varying number of padded positions (the loss's count changes)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        ids = rng.integers(1, VOCAB, (3,) + shape)
        ids[:, :, rng.integers(1, shape[1]):] = PAD  # padding of another length each batch
        out.append(tuple(minitorch.tensor(a) for a in ids))
    return out


@needs_c
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("dropout", [0.0, 0.25])
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("n_threads", [1, 2])
def test_captured_training_equals_eager_bit_for_bit(dtype, dropout, optimizer, n_threads,
                                                    threads):
    threads(n_threads)
    data = batches(7)
    eager_step, eager_params, eager_schedule = seq2seq(dtype, dropout, optimizer)
    eager = []
    for batch in data:
        eager.append((eager_step(*batch).item(), [p.data.numpy().copy() for p in eager_params]))
        eager_schedule.step()
    step, params, schedule = seq2seq(dtype, dropout, optimizer)
    captured = minitorch.capture(step)
    for index, batch in enumerate(data):
        loss = captured(*batch)
        assert loss.item() == eager[index][0], f"step {index}: the loss differs"
        for p, expected in zip(params, eager[index][1]):
            np.testing.assert_array_equal(p.data.numpy(), expected, f"step {index}")
        schedule.step()  # the learning rate halves every two steps: a replay must see it
    assert captured.tape is not None  # replayed from the fourth call on, not eager throughout


@needs_c
def test_replay_refreshes_the_same_output_tensor_and_records_nothing_new():
    step, _, _ = seq2seq(minitorch.float32, 0.0)
    captured = minitorch.capture(step)
    data = batches(6)
    for batch in data[:3]:
        captured(*batch)
    calls = len(captured.tape.calls)
    first = captured(*data[3])
    value = first.item()
    second = captured(*data[4])
    assert second is first and second.item() != value
    assert len(captured.tape.calls) == calls


@needs_c
def test_a_checked_tape_moves_its_arrays_onto_huge_pages(monkeypatch):
    from minitorch.backends import large_buffers
    given = []
    monkeypatch.setattr(large_buffers, "collapse_huge_pages", lambda arrays: given.append(
        {id(a) for a in arrays}) or 0)
    step, _, _ = seq2seq(minitorch.float32, 0.0)
    captured = minitorch.capture(step)
    for count, batch in enumerate(batches(5), start=1):
        captured(*batch)
        assert len(given) == (0 if count < 3 else 1)  # once, when the third call checks the tape
    assert given[0] == set(captured.tape.owners())


@needs_c
def test_a_captured_forward_without_grad_follows_new_inputs():
    minitorch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    embed = nn.Embedding(VOCAB, 16)

    def encode(ids):
        with minitorch.no_grad():
            return layer(embed(ids))
    captured = minitorch.capture(encode)
    for ids in batches(5):
        np.testing.assert_array_equal(captured(ids[0]).numpy(), encode(ids[0]).numpy())


@needs_c
def test_a_step_whose_numpy_work_no_tape_sees_is_refused_with_eager_state():
    weight = minitorch.ones(4, requires_grad=False)

    def drifting(x):
        weight._data += 1  # numpy arithmetic outside any op: a replay could not redo it
        return x * weight
    captured = minitorch.capture(drifting)
    x = minitorch.arange(4.0)
    captured(x)
    captured(x)
    with pytest.raises(RuntimeError, match="differs from eager mode"):
        captured(x)
    np.testing.assert_array_equal(weight.numpy(), np.full(4, 4.0))  # three eager calls' worth


@needs_c
def test_a_step_must_return_tensors():
    captured = minitorch.capture(lambda x: (x * 2).sum().item())
    with pytest.raises(TypeError, match="must return Tensors"):
        captured(minitorch.ones(3))


@needs_c
def test_an_argument_copied_by_numpy_before_any_kernel_is_refused():
    captured = minitorch.capture(lambda x: minitorch.from_numpy(x.numpy() * 2) + 1)
    with pytest.raises(RuntimeError, match="reach no recorded kernel"):
        captured(minitorch.ones(3))


@needs_c
def test_replays_leave_the_callers_tensors_as_they_were_epoch_after_epoch():
    # the batches are views of one dataset array, and the second epoch reuses them: a replay
    # that wrote each call's inputs into the second call's tensors would change the dataset
    dataset = np.random.default_rng(3).integers(1, VOCAB, (5, 3, 3, 5))
    original = dataset.copy()
    data = [tuple(minitorch.from_numpy(ids) for ids in batch) for batch in dataset]
    eager_step, _, _ = seq2seq(minitorch.float32, 0.0)
    step, params, _ = seq2seq(minitorch.float32, 0.0)
    captured = minitorch.capture(step)
    for epoch in range(2):
        for batch in data:
            assert captured(*batch).item() == eager_step(*batch).item(), f"epoch {epoch}"
    np.testing.assert_array_equal(dataset, original)
    assert captured.tape is not None


@needs_c
def test_a_step_that_changes_an_argument_in_place_is_refused():
    def step(x):
        x.mul_(2)  # a replay could only change the capture's copy, not the caller's tensor
        return x + 1
    captured = minitorch.capture(step)
    with pytest.raises(RuntimeError, match=r"changes argument\(s\) \[0\] in place"):
        captured(minitorch.ones(3))


@needs_c
def test_replay_checks_shapes_dtypes_and_python_arguments():
    captured = minitorch.capture(lambda x, scale: x * scale)
    x = minitorch.arange(6.0)
    for _ in range(3):
        captured(x, 2.0)
    np.testing.assert_array_equal(captured(x + 1, 2.0).numpy(), (np.arange(6.0) + 1) * 2)
    with pytest.raises(ValueError, match="shape"):
        captured(minitorch.arange(5.0), 2.0)
    with pytest.raises(ValueError, match="dtype|float64"):
        captured(minitorch.arange(6.0).double(), 2.0)
    with pytest.raises(ValueError, match="a replay cannot see a new Python value"):
        captured(x, 3.0)
    with pytest.raises(ValueError, match="2 arguments"):
        captured(x)


@needs_c
def test_captures_do_not_nest():
    inner = minitorch.capture(lambda x: x * 2)
    outer = minitorch.capture(lambda x: inner(x) + 1)
    with pytest.raises(RuntimeError, match="do not nest"):
        outer(minitorch.ones(2))
    assert tapes.recording() is None


def test_on_the_numpy_backend_every_call_runs_eagerly():
    with minitorch.backends.using("numpy"):
        step, params, _ = seq2seq(minitorch.float64, 0.0)
        captured = minitorch.capture(step)
        losses = [captured(*batch).item() for batch in batches(4)]
        assert captured.tape is None
    with minitorch.backends.using("numpy"):
        step, _, _ = seq2seq(minitorch.float64, 0.0)
        assert losses == [step(*batch).item() for batch in batches(4)]


def test_capture_takes_a_callable():
    with pytest.raises(TypeError, match="callable"):
        minitorch.capture(3)


# ------------------------------------------------------------------ the tape underneath

@needs_c
def test_a_tape_replays_kernels_and_the_copies_of_strided_inputs_on_new_values():
    from minitorch.backends import c_backend
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 10))
    w = rng.standard_normal((5, 4))
    tape = tapes.Tape()
    with tapes.recording_into(tape):
        probs = c_backend.softmax_forward(x[:, ::2])  # strided: copied, the copy recorded
        product = c_backend.matmul(probs, w)
    x[...] = rng.standard_normal(x.shape)
    w[...] = rng.standard_normal(w.shape)
    tape.replay()
    np.testing.assert_array_equal(probs, c_backend.softmax_forward(x[:, ::2]))
    np.testing.assert_array_equal(product, c_backend.matmul(probs, w))
    kernels = [call for call in tape.calls if call[2]]
    assert len(kernels) == 2 and len(tape.calls) == 3


@needs_c
def test_host_callbacks_run_on_replay_and_their_kernels_are_not_recorded():
    from minitorch.backends import c_backend
    seen, own = [], c_backend.lib
    x = np.ones((2, 3))

    def callback():
        seen.append(c_backend.softmax_forward(x)[0, 0])
    tape = tapes.Tape()
    with tapes.recording_into(tape):
        tapes.host(callback)
    assert tape.calls == [(callback, (), False)] and len(seen) == 1
    tape.replay()
    tape.replay()
    assert seen == [1 / 3] * 3
    assert c_backend.lib is own  # the library put back after


@needs_c
def test_recording_ends_with_the_library_restored_after_an_error():
    from minitorch.backends import c_backend
    before = c_backend.lib, c_backend._KERNELS, c_backend._ptr
    with pytest.raises(ValueError):
        with tapes.recording_into(tapes.Tape()):
            c_backend.matmul(np.ones((2, 3)), np.ones((4, 5)))
    assert (c_backend.lib, c_backend._KERNELS, c_backend._ptr) == before
    assert tapes.recording() is None


def test_outside_a_recording_record_computed_and_host_only_run():
    out = np.zeros(3)
    assert tapes.record(np.add, np.ones(3), 1.0, out) is out and (out == 2).all()
    np.testing.assert_array_equal(tapes.computed(np.sum, np.ones((2, 3)), axis=0), [2, 2, 2])
    assert tapes.host(lambda: 7) == 7


@needs_c
def test_leaves_given_one_gradient_get_their_own_copies_under_capture_too():
    # AddBackward hands one gradient to both inputs: the engine keeps a gradient as .grad only
    # when nothing else holds it, discounting the tape's own references (tape.references)
    a = minitorch.randn(64, 300, requires_grad=True)
    b = minitorch.randn(64, 300, requires_grad=True)

    def step():
        a.grad = b.grad = None
        loss = ((a + b) * 3.0).sum()
        loss.backward()
        return loss
    captured = minitorch.capture(step)
    for _ in range(5):
        captured()
        assert not np.shares_memory(a.grad.numpy(), b.grad.numpy())
        np.testing.assert_array_equal(a.grad.numpy(), np.full((64, 300), 3.0, np.float32))
    assert captured.tape is not None


@needs_c
@pytest.mark.parametrize("reset", ["none", "zeros in place"])
def test_gradients_accumulated_into_grad_over_captured_steps_as_eager(reset):
    """A step that keeps adding into .grad (a second backward adds in place, as PyTorch's
    AccumulateGrad): replays leave .grad and the parameters as eager mode, bit for bit."""
    def make():
        minitorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 8))
        optimizer = minitorch.optim.SGD(model.parameters(), lr=1e-2)

        def step(x):
            if reset == "zeros in place":
                optimizer.zero_grad(set_to_none=False)
            loss = model(x).square().mean()
            loss.backward()
            model(x * 0.5).square().mean().backward()  # a second micro-batch: added in place
            optimizer.step()
            return loss
        return step, list(model.parameters())
    rng = np.random.default_rng(5)
    batches = [minitorch.tensor(rng.standard_normal((32, 64)).astype(np.float32))
               for _ in range(6)]
    eager_step, eager_params = make()
    eager = [eager_step(x).item() for x in batches]
    step, params = make()
    captured = minitorch.capture(step)
    assert [captured(x).item() for x in batches] == eager
    for p, q in zip(params, eager_params):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
        np.testing.assert_array_equal(p.grad.numpy(), q.grad.numpy())
    assert captured.tape is not None


@needs_c
@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_an_optimizer_state_loaded_after_the_capture_is_what_replays_update_with(optimizer):
    # a checkpoint's moments (momentum), step counts and learning rate, loaded between replays
    def train(capture):
        step, params, schedule = seq2seq(minitorch.float32, 0.0, optimizer)
        opt = schedule.optimizer
        run = minitorch.capture(step) if capture else step
        losses = []
        for index, batch in enumerate(batches(9)):
            losses.append(run(*batch).item())
            if index == 3:
                saved = opt.state_dict()
            if index == 5:
                opt.load_state_dict(saved)
                for group in opt.param_groups:
                    group["lr"] = 3e-3
        return losses, [p.data.numpy().copy() for p in params]
    eager_losses, eager_params = train(False)
    losses, params = train(True)
    assert losses == eager_losses
    for p, expected in zip(params, eager_params):
        np.testing.assert_array_equal(p, expected)


@needs_c
def test_a_replay_checks_embedding_ids_as_eager_mode_does():
    embed = nn.Embedding(10, 4)
    captured = minitorch.capture(lambda ids: embed(ids))
    ids = minitorch.tensor([[1, 2], [3, 9]])
    for _ in range(4):
        captured(ids)
    np.testing.assert_array_equal(captured(ids).detach().numpy(), embed(ids).detach().numpy())
    with pytest.raises(IndexError, match="index 10 is out of range"):
        captured(minitorch.tensor([[1, 2], [3, 10]]))


def _training(model, optimizer, loss_of, clip=None):
    """(train_step, state): ``loss_of(model, *batch)``, backward, ``clip(parameters)`` if given,
    an optimizer step; state: the parameters and the buffers (a batch norm's running statistics
    and step count)."""
    def train_step(*batch):
        loss = loss_of(model, *batch)
        optimizer.zero_grad()
        loss.backward()
        if clip is not None:
            clip(model.parameters())
        optimizer.step()
        return loss
    return train_step, list(model.parameters()) + list(model.buffers())


def _gpt_step():
    from minitorch.models.gpt import GPT, GPTConfig
    minitorch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=VOCAB, block_size=16, n_layer=2, n_head=2, n_embd=16,
                          dropout=0.1))
    return _training(model, minitorch.optim.AdamW(model.parameters(), lr=1e-2),
                     lambda m, ids, targets: m(ids, targets)[1],
                     clip=lambda parameters: nn.utils.clip_grad_norm_(parameters, 0.5))


def _mlp_step():
    minitorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Dropout(0.2), nn.Linear(32, 3))
    return _training(model, minitorch.optim.RMSprop(model.parameters(), lr=1e-2),
                     lambda m, x, y: F.cross_entropy(m(x), y, label_smoothing=0.1),
                     clip=lambda parameters: nn.utils.clip_grad_value_(parameters, 0.05))


def _vit_step():
    from minitorch.models.vit import VisionTransformer
    minitorch.manual_seed(0)
    model = VisionTransformer(image_size=8, patch_size=2, in_channels=1, num_classes=10,
                              d_model=16, nhead=2, num_layers=2, dim_feedforward=32, dropout=0.1)
    return _training(model, minitorch.optim.Adam(model.parameters(), lr=1e-2),
                     lambda m, images, labels: F.cross_entropy(m(images), labels))


class _ElementwiseZoo(nn.Module):
    """A linear map, then the elementwise ops whose numpy bodies a tape records one by one
    (roots, powers, trigonometry, comparisons and selections, a gather by an index tensor)."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 6)
        self.exponent = nn.Parameter(minitorch.full((6,), 1.5))

    def forward(self, x, rows):
        h = self.linear(x)
        a = h.abs().sqrt() + h.sin() * h.cos() + h.tanh()
        b = minitorch.where(h > 0, a, -a) + minitorch.maximum(h, a) - minitorch.minimum(h, -a)
        c = (a + 1.0) ** self.exponent + (a + 1.0) ** -0.5 + h.sign() * h
        d = c.masked_fill(~minitorch.isfinite(c) | (h < -3.0), 0.0)
        picked = (b + d)[rows]                       # advanced indexing: a gather
        tens = (rows * 7) // 3                       # integer floor division, no gradient
        return picked.sum(1) + tens.to(picked.dtype) * 0.01


def _zoo_step():
    minitorch.manual_seed(0)
    model = _ElementwiseZoo()
    return _training(model, minitorch.optim.SGD(model.parameters(), lr=1e-2),
                     lambda m, x, rows, y: F.mse_loss(m(x, rows), y))


def _zoo_batches(rng):
    return [(minitorch.tensor(rng.standard_normal((5, 6))),
             minitorch.tensor(rng.integers(-5, 5, 4)),
             minitorch.tensor(rng.standard_normal(4))) for _ in range(6)]


def _cnn_step():
    minitorch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(6, 8, 3, stride=2), nn.BatchNorm2d(8),
                          nn.Tanh(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(8, 5))
    return _training(model, minitorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
                     lambda m, images, labels: F.cross_entropy(m(images), labels))


class _Tagger(nn.Module):
    """Embedding (with a padding row), a recurrent stack, a linear read-out per position."""

    def __init__(self, recurrent):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, 6, padding_idx=PAD)
        self.recurrent = recurrent
        width = (getattr(recurrent, "proj_size", 0) or recurrent.hidden_size) * (
            2 if recurrent.bidirectional else 1)
        self.out = nn.Linear(width, VOCAB)

    def forward(self, ids):
        return self.out(self.recurrent(self.embed(ids))[0])


def _recurrent_step(recurrent):
    def make():
        minitorch.manual_seed(0)
        model = _Tagger(recurrent())
        return _training(model, minitorch.optim.Adam(model.parameters(), lr=1e-2),
                         lambda m, ids, tags: F.cross_entropy(m(ids).reshape(-1, VOCAB),
                                                              tags.reshape(-1)))
    return make


_gru_step = _recurrent_step(lambda: nn.GRU(6, 8, num_layers=2, batch_first=True, dropout=0.3,
                                           bidirectional=True))
_lstm_step = _recurrent_step(lambda: nn.LSTM(6, 8, num_layers=2, batch_first=True, proj_size=5))
_rnn_step = _recurrent_step(lambda: nn.RNN(6, 8, nonlinearity="relu"))


def _rnn_seq2seq_step(cell, attention, dropout):
    def make():
        from minitorch.text.rnn_model import Seq2SeqRNN
        minitorch.manual_seed(0)
        model = Seq2SeqRNN(VOCAB, VOCAB, 8, 8, cell=cell, attention=attention, num_layers=2,
                           dropout=dropout)
        return _training(model, minitorch.optim.Adam(model.parameters(), lr=1e-2),
                         lambda m, src, tgt_in, tgt_out: F.cross_entropy(
                             m(src, tgt_in).reshape(-1, VOCAB), tgt_out.reshape(-1),
                             ignore_index=PAD))
    return make


def _captioner_step():
    from minitorch.vision.captioning import AttentionCaptioner, caption_loss
    minitorch.manual_seed(0)
    model = AttentionCaptioner(VOCAB, image_size=16, channels=(4, 4, 4), embed_size=8,
                               hidden_size=8, attention_size=8)
    return _training(model, minitorch.optim.Adam(model.parameters(), lr=1e-2), caption_loss)


def _captioner_batches(rng):
    return [(minitorch.tensor(rng.standard_normal((3, 3, 16, 16)).astype(np.float32)),
             minitorch.tensor(rng.integers(0, VOCAB, (3, 7)))) for _ in range(6)]


def _id_batches(shape, low=0):
    """Six batches, each ``shape[0]`` tensors of token ids of shape ``shape[1:]``."""
    return lambda rng: [tuple(minitorch.tensor(a) for a in rng.integers(low, VOCAB, shape))
                        for _ in range(6)]


def _image_batches(shape, classes):
    """Six batches of float32 images of ``shape`` and one label per image."""
    return lambda rng: [(minitorch.tensor(rng.standard_normal(shape).astype(np.float32)),
                         minitorch.tensor(rng.integers(0, classes, shape[0])))
                        for _ in range(6)]


# full-length sentences (a padding mask's lengths would be a Python value read from the data:
# see docs/autograd.md)
_seq2seq_batches = _id_batches((3, 4, 6), low=1)
_tagging_batches = _id_batches((2, 3, 7))
_gpt_batches = _id_batches((2, 4, 8))
_cnn_batches = _image_batches((4, 3, 12, 12), 5)
_vit_batches = _image_batches((4, 1, 8, 8), 10)


def _mlp_batches(rng):
    return [(minitorch.tensor(rng.standard_normal((16, 8))),
             minitorch.tensor(rng.integers(0, 3, 16))) for _ in range(6)]


@needs_c
@pytest.mark.parametrize("make, data", [
    (_gpt_step, _gpt_batches), (_vit_step, _vit_batches), (_mlp_step, _mlp_batches),
    (_cnn_step, _cnn_batches), (_gru_step, _tagging_batches), (_lstm_step, _tagging_batches),
    (_rnn_step, _tagging_batches),
    (_rnn_seq2seq_step("gru", "additive", 0.0), _seq2seq_batches),
    (_rnn_seq2seq_step("lstm", "dot", 0.2), _seq2seq_batches),
    (_captioner_step, _captioner_batches), (_zoo_step, _zoo_batches)],
    ids=["gpt", "vit", "mlp", "cnn", "gru", "lstm", "rnn", "rnn-seq2seq-gru",
         "rnn-seq2seq-lstm-dropout", "captioner", "elementwise"])
def test_other_models_captured_train_as_eager_bit_for_bit(make, data):
    batches = data(np.random.default_rng(0))
    eager_step, eager_params = make()
    eager = [eager_step(*batch).item() for batch in batches]
    step, params = make()
    captured = minitorch.capture(step)
    assert [captured(*batch).item() for batch in batches] == eager
    for p, q in zip(params, eager_params):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    assert captured.tape is not None


@needs_c
def test_a_captured_step_returns_each_steps_gradient_norm_from_clip_grad_norm():
    def make():
        minitorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        optimizer = minitorch.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y):
            loss = F.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            norm = nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            return loss, norm
        return step
    rng = np.random.default_rng(3)
    batches = [(minitorch.tensor(rng.standard_normal((6, 4))),
                minitorch.tensor(rng.standard_normal((6, 1)))) for _ in range(6)]
    eager_step, captured = make(), minitorch.capture(make())
    eager = [tuple(t.item() for t in eager_step(*b)) for b in batches]
    replayed = [tuple(t.item() for t in captured(*b)) for b in batches]
    assert replayed == eager
    assert len({norm for _, norm in eager}) == len(eager) and min(n for _, n in eager) > 0.1


@needs_c
def test_max_shapes_keeps_a_recording_per_shape_and_trains_as_eager_bit_for_bit():
    """Batches of three sizes, two recordings kept: the third size evicts the one used least
    recently, which is recorded again when it comes back; every step, loss, parameter and
    .grad as eager mode's."""
    def make():
        minitorch.manual_seed(0)
        model = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 3))
        optimizer = minitorch.optim.Adam(model.parameters(), lr=1e-2)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            optimizer.step()
            return loss
        return step, list(model.parameters())
    rng = np.random.default_rng(4)
    sizes = [8] * 5 + [3, 8, 3, 3, 3, 8, 8, 5, 5, 5, 5, 3, 8, 8, 8]
    batches = [(minitorch.tensor(rng.standard_normal((n, 5))),
                minitorch.tensor(rng.integers(0, 3, n))) for n in sizes]
    def states(params):
        return [(p.detach().numpy().copy(), p.grad.numpy().copy()) for p in params]
    eager_step, eager_params = make()  # each run in turn: dropout draws from the one generator
    eager = [(eager_step(*batch).item(), states(eager_params)) for batch in batches]
    step, params = make()
    captured = minitorch.capture(step, max_shapes=2)
    for batch, (loss, state) in zip(batches, eager):
        assert captured(*batch).item() == loss
        for (value, grad), (eager_value, eager_grad) in zip(states(params), state):
            np.testing.assert_array_equal(value, eager_value)
            np.testing.assert_array_equal(grad, eager_grad)
    assert len(captured.steps) == 2 and captured.tape is not None


def test_max_shapes_must_be_a_positive_int():
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="max_shapes"):
            minitorch.capture(lambda x: x, max_shapes=bad)
    with pytest.raises(TypeError, match="callable"):
        minitorch.capture(3, max_shapes=2)
