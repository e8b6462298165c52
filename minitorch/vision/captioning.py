"""Image captioning with attention over a CNN's feature grid ("Show, Attend and Tell", small).

This file holds :class:`CaptionEncoder` (the CNN), :class:`AttentionCaptioner` (the encoder, an
attention RNN decoder, teacher-forced ``forward``, ``greedy_decode`` and ``beam_search``, both
returning the attention maps) and :func:`caption_loss`.
May import: numpy, ``minitorch``, ``minitorch.nn``.

The model, in the lecture's notation
------------------------------------
A small CNN (Conv2d-BatchNorm2d-ReLU blocks, two 2×2 max-pools) turns a (3, S, S) image into a
grid of features h_{i,j} (C channels on an S/4 × S/4 grid), flattened to H·W keys. Each key also
carries its cell's (row, column) in [-1, 1]: convolution features do not say where they are, and
"above" / "left of" are about where. An RNN cell (``nn.LSTMCell`` or ``nn.GRUCell``) then writes
the caption one word at a time; at step t::

    e_{t,i,j} = f_att(s_{t-1}, h_{i,j})         nn.AdditiveAttention: vᵀ tanh(W_s s + W_h h + b)
    a_{t,:,:} = softmax(e_{t,:,:})               over the whole grid: the weights sum to 1
    c_t       = Σ_{i,j} a_{t,i,j} h_{i,j}         the context: what the step looks at
    s_t       = RNN([emb(y_{t-1}); c_t], s_{t-1})
    p(y_t)    = softmax(W_o [s_t; c_t])

s_0 comes from the mean of the grid (a linear map and tanh, as in Show, Attend and Tell). In
training y_{t-1} is the reference's previous word (teacher forcing); in decoding it is the word
the model chose. W_h h is the same at every step, so it is computed once per image.
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

import numpy as np

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.tensor import Tensor


def _conv_block(in_channels, out_channels):
    return [nn.Conv2d(in_channels, out_channels, 3, padding=1), nn.BatchNorm2d(out_channels),
            nn.ReLU()]


class CaptionEncoder(nn.Module):
    """(B, in_channels, S, S) images → (B, channels[-1], S/4, S/4) features: three 3×3
    Conv2d-BatchNorm2d-ReLU blocks, a 2×2 max-pool after each of the first two."""

    def __init__(self, in_channels: int = 3, channels: Sequence[int] = (16, 32, 32)):
        super().__init__()
        if len(channels) != 3 or any(int(c) < 1 for c in channels):
            raise ValueError(f"CaptionEncoder: channels must be 3 positive ints, got "
                             f"{tuple(channels)}")
        c1, c2, c3 = (int(c) for c in channels)
        self.features = nn.Sequential(*_conv_block(in_channels, c1), nn.MaxPool2d(2),
                                      *_conv_block(c1, c2), nn.MaxPool2d(2),
                                      *_conv_block(c2, c3))
        self.out_channels = c3

    def forward(self, images):
        return self.features(images)


def _grid_coordinates(rows, cols):
    """float64 (rows·cols, 2): each grid cell's (row, column) scaled to [-1, 1]."""
    ys = np.linspace(-1.0, 1.0, rows) if rows > 1 else np.zeros(1)
    xs = np.linspace(-1.0, 1.0, cols) if cols > 1 else np.zeros(1)
    return np.stack(np.meshgrid(ys, xs, indexing="ij"), axis=-1).reshape(rows * cols, 2)


class AttentionCaptioner(nn.Module):
    """A CNN encoder and an attention RNN decoder (module docstring).

    ``vocab_size`` words with ``pad_id``/``bos_id``/``eos_id`` among them (the defaults are
    :class:`minitorch.vision.shapes.Vocabulary`'s); images are (B, ``in_channels``,
    ``image_size``, ``image_size``), ``image_size`` a multiple of 4. ``cell`` is "lstm" or
    "gru". Keys have ``channels[-1] + 2`` features (the grid position is appended).
    """

    def __init__(self, vocab_size: int, *, image_size: int = 32, in_channels: int = 3,
                 channels: Sequence[int] = (16, 32, 32), embed_size: int = 32,
                 hidden_size: int = 128, attention_size: int = 64, cell: str = "lstm",
                 pad_id: int = 0, bos_id: int = 1, eos_id: int = 2):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("image_size", image_size),
                            ("in_channels", in_channels), ("embed_size", embed_size),
                            ("hidden_size", hidden_size), ("attention_size", attention_size)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"AttentionCaptioner: {name} must be a positive int, "
                                 f"got {value!r}")
        if image_size % 4:
            raise ValueError(f"AttentionCaptioner: image_size must be a multiple of 4 (two "
                             f"2x2 pools), got {image_size}")
        if cell not in ("lstm", "gru"):
            raise ValueError(f"AttentionCaptioner: cell must be 'lstm' or 'gru', got {cell!r}")
        for name, value in (("pad_id", pad_id), ("bos_id", bos_id), ("eos_id", eos_id)):
            if not 0 <= value < vocab_size:
                raise ValueError(f"AttentionCaptioner: {name} must be in [0, {vocab_size}), "
                                 f"got {value}")
        self.vocab_size, self.image_size, self.in_channels = vocab_size, image_size, in_channels
        self.pad_id, self.bos_id, self.eos_id = pad_id, bos_id, eos_id
        self.cell_type, self.hidden_size = cell, hidden_size
        self.grid_size = (image_size // 4, image_size // 4)
        self.encoder = CaptionEncoder(in_channels, channels)
        key_size = self.encoder.out_channels + 2
        self.key_size = key_size
        self.attention = nn.AdditiveAttention(hidden_size, key_size, attention_size)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        rnn = nn.LSTMCell if cell == "lstm" else nn.GRUCell
        self.rnn = rnn(embed_size + key_size, hidden_size)
        self.init_h = nn.Linear(key_size, hidden_size)
        if cell == "lstm":
            self.init_c = nn.Linear(key_size, hidden_size)
        self.output = nn.Linear(hidden_size + key_size, vocab_size)

    # -------------------------------------------------------------------------- pieces

    def check_images(self, images):
        """ValueError/TypeError unless ``images`` is a float (B, C, S, S) tensor of this model's
        channel count and size."""
        expected = (self.in_channels, self.image_size, self.image_size)
        if not isinstance(images, Tensor):
            raise TypeError(f"images must be a minitorch.Tensor, got {type(images).__name__}")
        if images.ndim != 4 or tuple(images.shape[1:]) != expected:
            raise ValueError(f"images must be (B, {self.in_channels}, {self.image_size}, "
                             f"{self.image_size}) (channels first), got {tuple(images.shape)}")
        if not images.dtype.is_floating_point:
            raise TypeError(f"images must be a floating-point tensor, got {images.dtype}")

    def encode(self, images):
        """Keys (B, H·W, key_size): the feature grid, row by row, each with its position."""
        self.check_images(images)
        grid = self.encoder(images)                                    # (B, C, H, W)
        batch, channels, rows, cols = grid.shape
        features = grid.reshape(batch, channels, rows * cols).transpose(1, 2)
        position = minitorch.tensor(_grid_coordinates(rows, cols), dtype=features.dtype,
                                    device=features.device)
        return minitorch.cat([features, position.unsqueeze(0).expand(batch, rows * cols, 2)],
                             dim=-1)

    def initial_state(self, keys):
        """s_0 from the mean key: h_0 (and c_0 for the LSTM)."""
        mean = keys.mean(dim=1)
        h = self.init_h(mean).tanh()
        return (h, self.init_c(mean).tanh()) if self.cell_type == "lstm" else (h,)

    def step(self, tokens, state, keys, projected_keys=None):
        """One decoder step: y_{t-1} ``tokens`` (B,) int64 and s_{t-1} ``state`` → (logits
        (B, vocab), s_t, attention weights (B, H·W))."""
        features, state, weights = self._advance(tokens, state, keys, projected_keys)
        return self.output(features), state, weights

    def _advance(self, tokens, state, keys, projected_keys):
        if projected_keys is None:
            projected_keys = self.attention.project_keys(keys)
        context, weights = self.attention(state[0], keys, projected_keys=projected_keys)
        rnn_input = minitorch.cat([self.embedding(tokens), context], dim=-1)
        if self.cell_type == "lstm":
            state = tuple(self.rnn(rnn_input, state))
        else:
            state = (self.rnn(rnn_input, state[0]),)
        return minitorch.cat([state[0], context], dim=-1), state, weights

    # -------------------------------------------------------------------------- training

    def forward(self, images, tokens):
        """Teacher forcing: ``tokens`` (B, T) int64 are y_0..y_{T-1} (``<bos>`` first); returns
        logits (B, T, vocab) for y_1..y_T and the attention weights (B, T, H·W)."""
        if not isinstance(tokens, Tensor) or tokens.ndim != 2 \
                or tokens.shape[0] != images.shape[0]:
            got = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
            raise ValueError(f"tokens must be a (B, T) tensor with the images' B "
                             f"{images.shape[0]}, got {got}")
        keys = self.encode(images)
        projected = self.attention.project_keys(keys)
        state = self.initial_state(keys)
        features, weights = [], []
        for t in range(tokens.shape[1]):
            step_features, state, step_weights = self._advance(tokens[:, t], state, keys,
                                                               projected)
            features.append(step_features)
            weights.append(step_weights)
        # One output layer over every step at once: fewer, larger products than per step.
        return self.output(minitorch.stack(features, dim=1)), minitorch.stack(weights, dim=1)

    # -------------------------------------------------------------------------- decoding

    def _maps(self, weights):
        """(B, T, H·W) weights as (B, T, H, W) attention maps (numpy)."""
        weights = np.asarray(weights)
        return weights.reshape(weights.shape[:2] + self.grid_size)

    def greedy_decode(self, images, max_len: int = 12) -> Tuple[List[List[int]], np.ndarray]:
        """The most likely word at each step, for up to ``max_len`` steps: (token ids of each
        image without ``<bos>``/``<eos>``, attention maps (B, steps, H, W) as numpy; a row's
        maps after its ``<eos>`` step are those of steps it did not need)."""
        was_training = self.training
        self.eval()
        try:
            with minitorch.no_grad():
                keys = self.encode(images)
                projected = self.attention.project_keys(keys)
                state = self.initial_state(keys)
                batch = keys.shape[0]
                tokens = minitorch.full((batch,), self.bos_id, dtype=minitorch.int64,
                                        device=images.device)
                chosen, weights = [], []
                for _ in range(max_len):
                    logits, state, step_weights = self.step(tokens, state, keys, projected)
                    tokens = logits.argmax(dim=-1)
                    chosen.append(tokens.cpu().numpy())
                    weights.append(step_weights.cpu().numpy())
                    if all((np.stack(chosen, 1) == self.eos_id).any(axis=1)):
                        break
        finally:
            self.train(was_training)
        ids = np.stack(chosen, axis=1)
        return [self._until_eos(row) for row in ids], self._maps(np.stack(weights, axis=1))

    def _until_eos(self, ids):
        out = []
        for i in ids:
            if int(i) == self.eos_id:
                break
            out.append(int(i))
        return out

    def beam_search(self, images, beam_size: int = 3,
                    max_len: int = 12) -> Tuple[List[List[int]], List[np.ndarray]]:
        """Beam search, one image at a time, its ``beam_size`` hypotheses as one batch: the
        finished hypothesis of highest total log-probability. Returns its token ids and its
        attention maps (steps, H, W), per image."""
        if isinstance(beam_size, bool) or not isinstance(beam_size, int) or beam_size < 1:
            raise ValueError(f"beam_size must be a positive int, got {beam_size!r}")
        self.check_images(images)
        was_training = self.training
        self.eval()
        results, maps = [], []
        try:
            with minitorch.no_grad():
                for index in range(images.shape[0]):
                    ids, weights = self._beam_one(images[index:index + 1], beam_size, max_len)
                    results.append(ids)
                    maps.append(self._maps(weights[None])[0])
        finally:
            self.train(was_training)
        return results, maps

    def _beam_one(self, image, beam_size, max_len):
        keys = self.encode(image)
        projected = self.attention.project_keys(keys)
        state = self.initial_state(keys)
        hypotheses = [([], [], 0.0)]  # (tokens, weights per step, log-probability)
        finished = []
        for _ in range(max_len):
            live = len(hypotheses)
            tokens = minitorch.tensor([h[0][-1] if h[0] else self.bos_id for h in hypotheses],
                                      dtype=minitorch.int64, device=image.device)
            logits, new_state, weights = self.step(
                tokens, state, keys.expand(live, *keys.shape[1:]),
                projected.expand(live, *projected.shape[1:]))
            log_probs = F.log_softmax(logits, dim=-1).cpu().numpy()
            scores = np.array([h[2] for h in hypotheses])[:, None] + log_probs
            best = np.argsort(scores, axis=None)[::-1][:beam_size]
            kept, rows = [], []
            for flat in best:
                row, word = divmod(int(flat), self.vocab_size)
                tokens_so_far, maps_so_far, _ = hypotheses[row]
                entry = (tokens_so_far + [word], maps_so_far + [weights.cpu().numpy()[row]],
                         float(scores[row, word]))
                if word == self.eos_id:
                    finished.append(entry)
                else:
                    kept.append(entry)
                    rows.append(row)
            # Stop once the best finished hypothesis beats every live one (scores only fall).
            if not kept or (finished and max(f[2] for f in finished) >= max(k[2] for k in kept)):
                break
            hypotheses = kept
            index = minitorch.tensor(rows, dtype=minitorch.int64, device=image.device)
            state = tuple(s.index_select(0, index) for s in new_state)
        best_hypothesis = max(finished or hypotheses, key=lambda h: h[2])
        return self._until_eos(best_hypothesis[0]), np.stack(best_hypothesis[1])


def caption_loss(model: AttentionCaptioner, images, tokens):
    """Mean cross-entropy of the next word over the non-pad positions of ``tokens`` (B, L):
    ``<bos> words <eos> <pad>...``, as :meth:`Vocabulary.encode_batch` writes them."""
    logits, _ = model(images, tokens[:, :-1])
    return F.cross_entropy(logits.reshape(-1, model.vocab_size), tokens[:, 1:].reshape(-1),
                           ignore_index=model.pad_id)
