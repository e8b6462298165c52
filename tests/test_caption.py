"""Tests of minitorch.vision.captioning (the CNN + attention RNN captioner) and of
examples/caption.py: attention weights that sum to 1 over the grid at every step, gradients of
the decoder step and of the whole model (float64 gradcheck, and PyTorch's where installed),
decoding consistent with training, bad input refused, and the example's smoke run, run folder
and resume.
"""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

import minitorch
from minitorch.autograd import gradcheck
from minitorch.vision.captioning import AttentionCaptioner, caption_loss
from minitorch.vision.shapes import Vocabulary, make_corpus

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example():
    spec = importlib.util.spec_from_file_location(
        "caption_example", os.path.join(ROOT, "examples", "caption.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


caption_example = _load_example()
VOCAB = Vocabulary()


def tiny_model(cell="lstm", image_size=8, dtype=None, seed=0):
    minitorch.manual_seed(seed)
    model = AttentionCaptioner(len(VOCAB), image_size=image_size, channels=(2, 3, 3),
                               embed_size=3, hidden_size=5, attention_size=4, cell=cell)
    return model.double() if dtype == "float64" else model


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(n_train=16, n_seen=4, n_unseen=4, seed=1)


def _images(corpus, count=4):
    return minitorch.tensor(corpus.train.images[:count])


def _tokens(corpus, count=4):
    return minitorch.tensor(VOCAB.encode_batch(corpus.train.captions[:count]))


# ------------------------------------------------------------------ attention over the grid


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_attention_weights_sum_to_one_over_the_grid_at_every_step(corpus, cell):
    minitorch.manual_seed(0)
    model = AttentionCaptioner(len(VOCAB), cell=cell, channels=(4, 8, 8), hidden_size=16,
                               attention_size=8)
    images, tokens = _images(corpus), _tokens(corpus)
    logits, weights = model(images, tokens[:, :-1])
    steps = tokens.shape[1] - 1
    assert logits.shape == (4, steps, len(VOCAB)) and weights.shape == (4, steps, 64)
    w = weights.detach().numpy()
    assert (w >= 0).all() and np.allclose(w.sum(-1), 1.0, atol=1e-5)
    assert w.std(-1).max() > 0  # weights differ between grid cells: not a constant average
    ids, maps = model.greedy_decode(images, max_len=5)
    assert maps.shape == (4, 5, 8, 8) and len(ids) == 4
    assert np.allclose(maps.sum(axis=(2, 3)), 1.0, atol=1e-5)
    beam_ids, beam_maps = model.beam_search(images[:2], beam_size=2, max_len=5)
    for one in beam_maps:
        assert one.shape[1:] == (8, 8) and np.allclose(one.sum(axis=(1, 2)), 1.0, atol=1e-5)


def test_keys_are_the_feature_grid_row_by_row_with_its_positions(corpus):
    model = tiny_model(image_size=32)
    model.eval()
    images = _images(corpus, 2)
    keys = model.encode(images).detach().numpy()
    grid = model.encoder(images).detach().numpy()  # (B, 3, 8, 8)
    assert keys.shape == (2, 64, 3 + 2)
    assert np.allclose(keys[:, :, :3], grid.reshape(2, 3, 64).transpose(0, 2, 1))
    positions = keys[0, :, 3:].reshape(8, 8, 2)
    assert np.allclose(positions[:, 0, 0], np.linspace(-1, 1, 8))  # row coordinate down
    assert np.allclose(positions[0, :, 1], np.linspace(-1, 1, 8))  # column across
    assert np.allclose(keys[0, :, 3:], keys[1, :, 3:])


def test_greedy_decode_is_what_teacher_forcing_on_its_own_words_predicts(corpus):
    model = tiny_model(image_size=32, seed=3)
    images = _images(corpus)
    ids, _ = model.greedy_decode(images, max_len=6)
    model.eval()
    for row, words in enumerate(ids):
        fed = minitorch.tensor([[VOCAB.bos_id] + words], dtype=minitorch.int64)
        logits, _ = model(images[row:row + 1], fed)
        predicted = logits.detach().numpy()[0].argmax(-1).tolist()
        assert predicted[:len(words)] == words
        if len(words) < 6:
            assert predicted[len(words)] == VOCAB.eos_id


def test_beam_search_of_one_beam_is_greedy_and_a_wider_beam_scores_no_worse(corpus):
    model = tiny_model(image_size=32, seed=4)
    images = _images(corpus)
    greedy, greedy_maps = model.greedy_decode(images, max_len=6)
    beam, beam_maps = model.beam_search(images, beam_size=1, max_len=6)
    assert beam == greedy
    for one, maps in zip(beam_maps, greedy_maps):
        assert np.allclose(one, maps[:len(one)], atol=1e-6)

    def log_probability(row, words):
        fed = minitorch.tensor([[VOCAB.bos_id] + words], dtype=minitorch.int64)
        logits, _ = model(images[row:row + 1], fed)
        log_p = minitorch.nn.functional.log_softmax(logits, dim=-1).detach().numpy()[0]
        targets = words + [VOCAB.eos_id]
        return sum(log_p[t, w] for t, w in enumerate(targets[:len(log_p)]))

    model.eval()
    wide, _ = model.beam_search(images, beam_size=4, max_len=6)
    for row in range(4):
        if len(wide[row]) < 6 and len(greedy[row]) < 6:  # both finished: comparable
            assert log_probability(row, wide[row]) >= log_probability(row, greedy[row]) - 1e-5


# ------------------------------------------------------------------ gradients


@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_gradcheck_of_one_decoder_step(cell):
    model = tiny_model(cell, dtype="float64")
    rng = np.random.default_rng(0)
    keys = minitorch.tensor(rng.normal(size=(3, 6, model.key_size)), requires_grad=True)
    state = tuple(minitorch.tensor(rng.normal(size=(3, 5)) * 0.5, requires_grad=True)
                  for _ in range(2 if cell == "lstm" else 1))
    tokens = minitorch.tensor([1, 5, 9], dtype=minitorch.int64)

    def step(keys, *state):
        logits, new_state, weights = model.step(tokens, state, keys)
        return (logits, weights) + tuple(new_state)

    assert gradcheck(step, (keys,) + state, eps=1e-6, atol=1e-6)
    # And the parameters' gradients: the attention MLP's, the cell's and the output layer's.
    params = [model.attention.query_proj.weight, model.attention.key_proj.weight,
              model.attention.key_proj.bias, model.attention.score_proj.weight,
              model.embedding.weight, model.rnn.weight_ih, model.rnn.weight_hh,
              model.output.weight]
    probes = [np.random.default_rng(1).normal(size=tuple(t.shape))
              for t in step(keys, *state)]

    def scalar():
        return sum(((t * minitorch.tensor(p)).sum() for t, p in zip(step(keys, *state), probes)),
                   minitorch.tensor(0.0, dtype=minitorch.float64))

    model.zero_grad()
    scalar().backward()
    for param in params:
        analytic, values = param.grad.numpy(), param.detach().numpy()  # values: a view
        for index in list(np.ndindex(values.shape))[::max(values.size // 8, 1)]:
            saved = values[index]
            values[index] = saved + 1e-6
            up = scalar().item()
            values[index] = saved - 1e-6
            down = scalar().item()
            values[index] = saved
            assert analytic[index] == pytest.approx((up - down) / 2e-6, abs=1e-6), \
                (tuple(param.shape), index)


def test_gradcheck_of_the_whole_model_from_image_to_loss(corpus):
    model = tiny_model(dtype="float64")
    rng = np.random.default_rng(2)
    images = minitorch.tensor(rng.uniform(size=(2, 3, 8, 8)), requires_grad=True)
    tokens = _tokens(corpus, 2)[:, :4]

    def loss_of(images):
        logits, weights = model(images, tokens[:, :-1])
        return (logits * minitorch.tensor(rng_weights)).sum(), weights

    rng_weights = rng.normal(size=(2, 3, len(VOCAB)))
    # fast_mode: one random projection vᵀJu instead of the whole Jacobian (384 columns here);
    # the decoder step above gets the full check.
    assert gradcheck(loss_of, (images,), eps=1e-6, atol=1e-5, fast_mode=True)


def test_matches_pytorch_in_float64_outputs_and_every_gradient(corpus):
    torch = pytest.importorskip("torch")
    model = tiny_model(image_size=16, dtype="float64", seed=5)
    twin = _torch_twin(torch, model)
    images = np.random.default_rng(3).uniform(size=(3, 3, 16, 16))
    tokens = VOCAB.encode_batch(corpus.train.captions[:3])
    loss = caption_loss(model, minitorch.tensor(images), minitorch.tensor(tokens))
    loss.backward()
    logits, weights = model(minitorch.tensor(images), minitorch.tensor(tokens[:, :-1]))
    t_logits, t_weights = twin(torch.tensor(images), torch.tensor(tokens[:, :-1]))
    t_loss = torch.nn.functional.cross_entropy(t_logits.reshape(-1, len(VOCAB)),
                                               torch.tensor(tokens[:, 1:]).reshape(-1),
                                               ignore_index=0)
    twin.zero_grad()
    t_loss.backward()
    assert loss.item() == pytest.approx(t_loss.item(), abs=1e-10)
    assert np.allclose(logits.detach().numpy(), t_logits.detach().numpy(), atol=1e-10)
    assert np.allclose(weights.detach().numpy(), t_weights.detach().numpy(), atol=1e-10)
    t_params = dict(twin.named_parameters())
    for name, p in model.named_parameters():
        assert np.allclose(p.grad.numpy(), t_params[name].grad.numpy(), atol=1e-10), name


def _torch_twin(torch, model):
    """The same network written in PyTorch, with ``model``'s weights (same parameter names)."""
    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self, q, k, h):
            super().__init__()
            self.query_proj = nn.Linear(q, h, bias=False)
            self.key_proj = nn.Linear(k, h)
            self.score_proj = nn.Linear(h, 1, bias=False)

    class Twin(nn.Module):
        def __init__(self):
            super().__init__()
            c1, c2 = 2, 3
            self.encoder = nn.Module()
            self.encoder.features = nn.Sequential(
                nn.Conv2d(3, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(c2, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU())
            k = c2 + 2
            self.attention = Attention(5, k, 4)
            self.embedding = nn.Embedding(len(VOCAB), 3)
            self.rnn = nn.LSTMCell(3 + k, 5)
            self.init_h, self.init_c = nn.Linear(k, 5), nn.Linear(k, 5)
            self.output = nn.Linear(5 + k, len(VOCAB))

        def forward(self, images, tokens):
            grid = self.encoder.features(images)
            b, c, h, w = grid.shape
            keys = grid.reshape(b, c, h * w).transpose(1, 2)
            ys, xs = torch.meshgrid(torch.linspace(-1, 1, h, dtype=torch.float64),
                                    torch.linspace(-1, 1, w, dtype=torch.float64),
                                    indexing="ij")
            position = torch.stack([ys, xs], -1).reshape(1, h * w, 2).expand(b, -1, -1)
            keys = torch.cat([keys, position], -1)
            projected = self.attention.key_proj(keys)
            mean = keys.mean(1)
            state = (torch.tanh(self.init_h(mean)), torch.tanh(self.init_c(mean)))
            features, weights = [], []
            for t in range(tokens.shape[1]):
                hidden = torch.tanh(self.attention.query_proj(state[0]).unsqueeze(1) + projected)
                a = self.attention.score_proj(hidden).squeeze(-1).softmax(-1)
                context = (a.unsqueeze(1) @ keys).squeeze(1)
                state = self.rnn(torch.cat([self.embedding(tokens[:, t]), context], -1), state)
                features.append(torch.cat([state[0], context], -1))
                weights.append(a)
            return self.output(torch.stack(features, 1)), torch.stack(weights, 1)

    twin = Twin().double()
    state = {k: torch.tensor(v.detach().numpy()) for k, v in model.state_dict().items()}
    twin.load_state_dict(state)
    return twin


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("shape, message", [
    ((2, 3, 16, 16), r"\(B, 3, 32, 32\).*\(2, 3, 16, 16\)"),   # wrong image size
    ((2, 1, 32, 32), r"\(B, 3, 32, 32\).*\(2, 1, 32, 32\)"),   # grey, not RGB
    ((2, 32, 32, 3), r"channels first"),                      # channels last
    ((3, 32, 32), r"\(B, 3, 32, 32\)"),                       # no batch dimension
])
def test_images_of_the_wrong_size_or_channel_count_raise_a_clear_error(shape, message):
    model = tiny_model(image_size=32)
    images = minitorch.zeros(*shape)
    tokens = minitorch.ones(shape[0], 3, dtype=minitorch.int64)
    for call in (lambda: model(images, tokens), lambda: model.greedy_decode(images),
                 lambda: model.beam_search(images), lambda: model.encode(images)):
        with pytest.raises(ValueError, match=message):
            call()


def test_other_bad_input_raises_naming_it():
    model = tiny_model(image_size=32)
    images = minitorch.zeros(2, 3, 32, 32)
    with pytest.raises(TypeError, match="minitorch.Tensor"):
        model.encode(np.zeros((2, 3, 32, 32), np.float32))
    with pytest.raises(TypeError, match="floating-point"):
        model.encode(minitorch.zeros(2, 3, 32, 32, dtype=minitorch.int64))
    with pytest.raises(ValueError, match="tokens"):
        model(images, minitorch.ones(3, 4, dtype=minitorch.int64))
    with pytest.raises(ValueError, match="beam_size"):
        model.beam_search(images, beam_size=0)
    for kwargs, message in (({"image_size": 30}, "multiple of 4"), ({"cell": "rnn"}, "cell"),
                            ({"hidden_size": 0}, "hidden_size"), ({"eos_id": 99}, "eos_id"),
                            ({"channels": (4, 8)}, "channels")):
        with pytest.raises(ValueError, match=message):
            AttentionCaptioner(len(VOCAB), **kwargs)


# ------------------------------------------------------------------ the example

TINY = ["--n-train", "96", "--n-eval", "8", "--width", "4", "--embed-size", "8",
        "--hidden-size", "24", "--attention-size", "8", "--batch-size", "16", "--lr", "0.01",
        "--quiet", "--seed", "2", "--threads", "1"]


@pytest.fixture(autouse=True)
def _restore_thread_count():
    threads = minitorch.get_num_threads()  # --threads changes a process-wide setting
    yield
    minitorch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("caption"))
    return out, caption_example.main(TINY + ["--max-steps", "24", "--eval-every", "12",
                                             "--out", out])


def test_smoke_run_learns_evaluates_and_draws(trained):
    out, result = trained
    losses = result["losses"]
    assert len(losses) == 24 and result["step"] == 24
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.5  # it learns
    for split in ("seen", "unseen"):
        assert 0.0 <= result[split]["bleu"] <= 100.0 and 0.0 <= result[split]["exact"] <= 1.0
    assert os.path.exists(os.path.join(out, "checkpoint.safetensors"))
    pytest.importorskip("matplotlib", reason="matplotlib not installed: plots are skipped")
    for name in ("loss.png", "attention.png", "samples.png"):
        assert os.path.getsize(os.path.join(out, name)) > 1000


def test_resume_continues_with_exactly_the_same_losses(tmp_path):
    straight = caption_example.main(TINY + ["--max-steps", "6", "--no-plots",
                                            "--out", str(tmp_path / "a")])
    # The same learning-rate schedule as the straight run: decay over 6 steps, 3 at a time.
    caption_example.main(TINY + ["--max-steps", "3", "--decay-steps", "6", "--no-plots",
                                 "--out", str(tmp_path / "b")])
    resumed = caption_example.main(["--resume", "--max-steps", "3", "--quiet", "--no-plots",
                                    "--out", str(tmp_path / "b")])
    assert resumed["step"] == 6
    assert resumed["all_losses"] == pytest.approx(straight["losses"], abs=1e-5)


def test_the_learning_rate_decays_by_cosine_to_a_tenth_then_stays():
    config = {"lr": 0.01, "decay_steps": 100}
    rates = [caption_example.learning_rate(step, config) for step in (0, 50, 100, 300)]
    assert rates == pytest.approx([0.01, 0.0055, 0.001, 0.001])


def _run(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", "caption.py"), *args],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("args, flag", [
    (["--image-size", "30"], "--image-size"),
    (["--image-size", "20"], "--image-size"),
    (["--n-train", "10", "--batch-size", "64"], "--batch-size"),
    (["--cell", "rnn"], "--cell"),
    (["--lr", "nan"], "--lr"),
    (["--max-steps", "0"], "--max-steps"),
    (["--out", "a_file"], "--out"),
    (["--resume"], "--resume"),
])
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                              args, flag):
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)  # the default run folder is relative
    with pytest.raises(SystemExit) as stop:
        caption_example.main(args)
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0]
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_the_program_reports_a_bad_argument_in_one_line(tmp_path):
    process = _run(["--image-size", "30"], tmp_path)
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert process.stderr.count("\n") == 1 and "--image-size" in process.stderr
    assert os.listdir(tmp_path) == []


def test_a_second_run_in_the_same_folder_is_refused(trained, tmp_path):
    out, _ = trained
    process = _run(TINY + ["--max-steps", "2", "--out", out], tmp_path)
    assert process.returncode == 2 and "--overwrite" in process.stderr
