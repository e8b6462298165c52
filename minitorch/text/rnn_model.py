"""The recurrent encoder-decoder with attention of Bahdanau et al. (2015), batch first: the
translation model the lectures teach before the Transformer.

This file holds :class:`Seq2SeqRNN`. The lecture's equations, and where each one lives:

* encoder ``h_t = f_W(x_t, h_{t-1})``: an embedding and ``nn.GRU`` (or ``nn.LSTM``),
  bidirectional by default, so ``h_i`` (the forward and backward states side by side) sees the
  whole sentence around word i; padded batches are packed, so padding never enters a state;
* initial decoder state ``s_0 = tanh(W_s h_T)`` from the encoder's last states (the forward
  direction's at the last real token, the backward one's at the first): ``bridge``;
* at each decoder step, alignment scores ``e_{t,i} = f_att(s_{t-1}, h_i)``
  (``nn.AdditiveAttention``, an MLP, or ``nn.DotProductAttention``), weights
  ``a_{t,:} = softmax(e_{t,:})`` (exactly 0 on source padding) and context
  ``c_t = Σ_i a_{t,i} h_i``;
* ``s_t = g_U(y_{t-1}, s_{t-1}, c_t)``: ``nn.GRUCell`` (or ``nn.LSTMCell``) on
  ``[emb(y_{t-1}); c_t]``;
* next-token logits from ``[s_t; c_t; emb(y_{t-1})]``: ``output``.

``attention="none"`` is the model without attention, the bottleneck the lecture starts from: the
context is one fixed vector, the encoder's last states ``h_T`` (what ``s_0`` is predicted from),
the same at every step, so the whole source reaches the decoder through it.

Training is teacher-forced (the decoder reads the reference ``y_{t-1}``); with
``teacher_forcing_ratio`` below 1 each sentence reads, at each step, its own previous prediction
instead with probability ``1 - ratio`` (scheduled sampling, Bengio et al. 2015). The model
follows :mod:`minitorch.text.decoding`'s protocol, so that file's greedy, beam and sampled
decoding work on it; :mod:`minitorch.text.rnn_decoding` holds its decoder cache and decoding that
returns the attention weights.
May import: ``minitorch``, ``minitorch.nn``, ``minitorch.text.decoding``,
``minitorch.text.rnn_decoding``.
"""
from __future__ import annotations

from typing import List, Optional, Tuple, Union

import numpy as np

import minitorch
from minitorch import nn
from minitorch.tensor import Tensor
from minitorch.text.decoding import eval_mode
from minitorch.text.rnn_decoding import RNNDecoderCache

ATTENTIONS = ("additive", "dot", "none")


class Seq2SeqRNN(nn.Module):
    """Recurrent encoder-decoder from source token ids to target-vocabulary logits.

    Shapes (N = batch, S = source length, T = target length): ``src`` (N, S) and ``tgt_in``
    (N, T) int64; ``src_key_padding_mask`` (N, S) bool, True = padding, which must come after
    each sentence's tokens (right padding); logits (N, T, tgt_vocab). ``cell`` is "gru" or
    "lstm" (encoder and decoder alike); ``attention`` is "additive", "dot" or "none";
    ``attention_size`` the additive attention's hidden width (default ``hidden_size``);
    ``num_layers`` the encoder's depth (the decoder is one cell). ``max_len`` is the decoding
    protocol's limit: searches stop there and ``translate`` refuses longer sources (a
    recurrence has no positional table, but decoding needs a bound). ``teacher_forcing_ratio``
    (an attribute a training loop may change) is :meth:`decode`'s default.
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, embed_size: int = 128,
                 hidden_size: int = 256, *, cell: str = "gru", bidirectional: bool = True,
                 attention: str = "additive", attention_size: Optional[int] = None,
                 num_layers: int = 1, dropout: float = 0.0, max_len: int = 256,
                 pad_id: int = 0, teacher_forcing_ratio: float = 1.0):
        super().__init__()
        for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab),
                            ("embed_size", embed_size), ("hidden_size", hidden_size),
                            ("num_layers", num_layers), ("max_len", max_len)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Seq2SeqRNN: {name} must be a positive int, got {value!r}")
        if cell not in ("gru", "lstm"):
            raise ValueError(f"Seq2SeqRNN: cell must be 'gru' or 'lstm', got {cell!r}")
        if attention not in ATTENTIONS:
            raise ValueError(f"Seq2SeqRNN: attention must be one of {ATTENTIONS}, got "
                             f"{attention!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"Seq2SeqRNN: dropout must be in [0, 1), got {dropout}")
        self.src_vocab, self.tgt_vocab, self.pad_id = src_vocab, tgt_vocab, pad_id
        self.hidden_size, self.max_len, self.cell = hidden_size, max_len, cell
        self.bidirectional, self.attention_kind = bidirectional, attention
        self.teacher_forcing_ratio = teacher_forcing_ratio
        rnn_class, cell_class = {"gru": (nn.GRU, nn.GRUCell), "lstm": (nn.LSTM, nn.LSTMCell)}[cell]
        memory_size = hidden_size * (2 if bidirectional else 1)  # D, the size of each h_i
        self.memory_size = memory_size

        self.src_embed = nn.Embedding(src_vocab, embed_size, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab, embed_size, padding_idx=pad_id)
        self.encoder = rnn_class(embed_size, hidden_size, num_layers, batch_first=True,
                                 bidirectional=bidirectional,
                                 dropout=dropout if num_layers > 1 else 0.0)
        # s_0 = tanh(W_s h_T); an LSTM decoder also starts its cell state from h_T
        self.bridge = nn.Linear(memory_size, hidden_size * (2 if cell == "lstm" else 1))
        self.attention: Optional[nn.Module] = None  # attention="none"
        if attention == "additive":
            self.attention = nn.AdditiveAttention(hidden_size, memory_size,
                                                  attention_size or hidden_size)
        elif attention == "dot":
            self.attention = nn.DotProductAttention(hidden_size, memory_size, scaled=True)
        self.decoder = cell_class(embed_size + memory_size, hidden_size)
        self.output = nn.Linear(hidden_size + memory_size + embed_size, tgt_vocab)
        self.dropout = nn.Dropout(dropout)

    # ------------------------------------------------------------------ checks

    def _check_ids(self, ids: Tensor, vocab: int, name: str) -> None:
        if not isinstance(ids, Tensor) or ids.ndim != 2:
            shape = tuple(ids.shape) if isinstance(ids, Tensor) else type(ids).__name__
            raise ValueError(f"Seq2SeqRNN: {name} must be (N, L) token ids, got {shape}")
        if ids.shape[1] == 0:
            raise ValueError(f"Seq2SeqRNN: {name} is empty (length 0)")
        values = ids.cpu().numpy()  # checked on the host (a copy for a GPU tensor)
        outside = (values < 0) | (values >= vocab)
        if outside.any():
            raise IndexError(f"Seq2SeqRNN: {name} holds token id {int(values[outside][0])}, "
                             f"outside the vocabulary [0, {vocab})")

    def _source_lengths(self, mask: Optional[Tensor], shape) -> np.ndarray:
        """Each sentence's real length, from the padding mask (checked: right padding only)."""
        n, s = shape
        if mask is None:
            return np.full(n, s, dtype=np.int64)
        if tuple(mask.shape) != (n, s) or mask.dtype != minitorch.bool:
            raise ValueError(f"Seq2SeqRNN: src_key_padding_mask must be bool of shape {(n, s)}, "
                             f"got {mask.dtype} {tuple(mask.shape)}")
        padding = mask.cpu().numpy()
        if (padding[:, :-1] & ~padding[:, 1:]).any():
            raise ValueError("Seq2SeqRNN: src_key_padding_mask must mark padding after each "
                             "sentence's tokens (right padding), not before or between them")
        lengths = s - padding.sum(axis=1)
        if (lengths == 0).any():
            raise ValueError(f"Seq2SeqRNN: source row {int(np.argmin(lengths))} is all padding")
        return lengths

    # ------------------------------------------------------------------ encoder

    def encode(self, src: Tensor, src_key_padding_mask: Optional[Tensor] = None) -> Tensor:
        """Encoder outputs h_i, (N, S, D) with D = hidden_size × directions; zero on padding."""
        self._check_ids(src, self.src_vocab, "src")
        lengths = self._source_lengths(src_key_padding_mask, tuple(src.shape))
        embedded = self.dropout(self.src_embed(src))
        if (lengths == src.shape[1]).all():
            memory, _ = self.encoder(embedded)
            return memory
        # Packed, each direction stops at a sentence's end: the backward one starts at the last
        # real token, not in the padding after it.
        rnn_utils = nn.utils.rnn
        packed = rnn_utils.pack_padded_sequence(embedded, minitorch.tensor(lengths),
                                                batch_first=True, enforce_sorted=False)
        memory, _ = rnn_utils.pad_packed_sequence(self.encoder(packed)[0], batch_first=True,
                                                  total_length=src.shape[1])
        return memory

    def _last_encoder_state(self, memory: Tensor, lengths: np.ndarray) -> Tensor:
        """h_T, (N, D): the forward direction's output at each sentence's last real token and the
        backward one's at its first, which are the encoder's final states of its top layer."""
        rows = minitorch.arange(memory.shape[0], device=memory.device)
        last = minitorch.tensor(lengths - 1, device=memory.device)
        if not self.bidirectional:
            return memory[rows, last]
        forward_end = memory[rows, last, :self.hidden_size]
        backward_end = memory[:, 0, self.hidden_size:]
        return minitorch.cat([forward_end, backward_end], dim=-1)

    # ------------------------------------------------------------------ decoder

    def start_decoding(self, memory: Tensor, memory_key_padding_mask: Optional[Tensor] = None,
                       record_attention: bool = False) -> RNNDecoderCache:
        """The decoder's cache before its first step: ``s_0`` from the encoder's last state, and
        the attention's projection of the encoder outputs (once per sentence)."""
        if memory.ndim != 3 or memory.shape[2] != self.memory_size:
            raise ValueError(f"Seq2SeqRNN: memory must be (N, S, {self.memory_size}) encoder "
                             f"outputs, got shape {tuple(memory.shape)}")
        lengths = self._source_lengths(memory_key_padding_mask, tuple(memory.shape[:2]))
        last = self._last_encoder_state(memory, lengths)
        start = self.bridge(last).tanh()
        state: Union[Tensor, Tuple[Tensor, Tensor]] = start
        if self.cell == "lstm":
            state = (start[:, :self.hidden_size], start[:, self.hidden_size:])
        projected = None if self.attention is None else self.attention.project_keys(memory)
        return RNNDecoderCache(state, memory, memory_key_padding_mask, projected_keys=projected,
                               fixed_context=last if self.attention is None else None,
                               record_attention=record_attention)

    def _check_state(self, cache: RNNDecoderCache) -> None:
        n = cache.memory.shape[0]
        parts = cache.state if isinstance(cache.state, tuple) else (cache.state,)
        expected = 2 if self.cell == "lstm" else 1
        if len(parts) != expected:
            raise ValueError(f"Seq2SeqRNN: the {self.cell.upper()} decoder's state is "
                             f"{'a pair (h, c)' if expected == 2 else 'one tensor'}, got "
                             f"{len(parts)} tensors")
        for part in parts:
            if tuple(part.shape) != (n, self.hidden_size):
                raise ValueError(f"Seq2SeqRNN: decoder state must be (N, hidden_size) = "
                                 f"{(n, self.hidden_size)} for memory of batch {n}, got shape "
                                 f"{tuple(part.shape)}")

    def _step(self, embedded: Tensor, cache: RNNDecoderCache):
        """One decoder step on ``embedded`` = emb(y_{t-1}) (N, E): updates ``cache.state`` to
        s_t; returns the output layer's input [s_t; c_t; emb(y_{t-1})] and a_t (None without
        attention)."""
        previous = cache.state[0] if isinstance(cache.state, tuple) else cache.state
        if self.attention is None:
            context, weights = cache.fixed_context, None
        else:  # e_{t,i} = f_att(s_{t-1}, h_i), a_t = softmax(e_t), c_t = Σ_i a_{t,i} h_i
            context, weights = self.attention(previous, cache.memory,
                                              key_padding_mask=cache.memory_key_padding_mask,
                                              projected_keys=cache.projected_keys)
        cache.state = self.decoder(minitorch.cat([embedded, context], dim=-1), cache.state)
        current = cache.state[0] if isinstance(cache.state, tuple) else cache.state
        return minitorch.cat([current, context, embedded], dim=-1), weights

    def decoder_step(self, tokens: Tensor, cache: RNNDecoderCache
                     ) -> Tuple[Tensor, Optional[Tensor]]:
        """One differentiable decoder step: ``tokens`` (N,) are y_{t-1}; ``cache.state`` goes
        from s_{t-1} to s_t. Returns the logits (N, tgt_vocab) of y_t and the attention weights
        a_t (N, S) (None without attention)."""
        if tokens.ndim != 1 or tokens.shape[0] != cache.memory.shape[0]:
            raise ValueError(f"Seq2SeqRNN: tokens must be (N,) = ({cache.memory.shape[0]},) "
                             f"for the cache's batch, got shape {tuple(tokens.shape)}")
        self._check_ids(tokens.reshape(-1, 1), self.tgt_vocab, "tokens")
        self._check_state(cache)
        features, weights = self._step(self.dropout(self.tgt_embed(tokens)), cache)
        cache.length += 1
        return self.output(self.dropout(features)), weights

    def decode_step(self, tokens: Tensor, cache: RNNDecoderCache) -> Tensor:
        """Decoding protocol: the logits (N, tgt_vocab) after ``tokens`` (N,), as in eval mode
        and without gradients; records the attention weights if the cache does."""
        if cache.length >= self.max_len:
            raise ValueError(f"Seq2SeqRNN.decode_step: the target would reach "
                             f"{cache.length + 1} tokens, more than max_len {self.max_len}")
        with minitorch.no_grad(), eval_mode(self):
            logits, weights = self.decoder_step(tokens, cache)
        cache.record(weights)
        return logits

    def decode(self, tgt_in: Tensor, memory: Tensor,
               memory_key_padding_mask: Optional[Tensor] = None,
               tgt_key_padding_mask: Optional[Tensor] = None, tgt_mask: Optional[Tensor] = None,
               *, need_weights: bool = False, teacher_forcing_ratio: Optional[float] = None):
        """Logits (N, T, tgt_vocab) of the decoder run over ``tgt_in`` = <bos> y_1 … (teacher
        forcing); with ``need_weights`` also the attention weights (N, T, S) (None without
        attention).

        ``tgt_key_padding_mask`` and ``tgt_mask`` are accepted for the Transformer's call
        signature and not needed: the recurrence only looks back, and the loss ignores the
        steps past a target's end. ``teacher_forcing_ratio`` (default: the model's attribute)
        below 1 feeds, in training mode, each sentence's own last prediction instead of the
        reference with probability ``1 - ratio`` at every step after the first.
        """
        self._check_ids(tgt_in, self.tgt_vocab, "tgt_in")
        if memory.shape[0] != tgt_in.shape[0]:
            raise ValueError(f"Seq2SeqRNN: tgt_in has {tgt_in.shape[0]} rows, memory "
                             f"{memory.shape[0]}")
        ratio = self.teacher_forcing_ratio if teacher_forcing_ratio is None \
            else teacher_forcing_ratio
        if not 0.0 <= ratio <= 1.0:
            raise ValueError(f"Seq2SeqRNN: teacher_forcing_ratio must be in [0, 1], got {ratio}")
        cache = self.start_decoding(memory, memory_key_padding_mask)
        sampling = self.training and ratio < 1.0
        embedded = self.dropout(self.tgt_embed(tgt_in))  # (N, T, E), every step's y_{t-1}
        features: List[Tensor] = []
        weights: List[Optional[Tensor]] = []
        logits: List[Tensor] = []
        for t in range(tgt_in.shape[1]):
            step_input = embedded[:, t]
            if sampling and t > 0:
                own = logits[-1].detach().argmax(dim=-1)
                use_own = minitorch.rand(tgt_in.shape[0]) >= ratio
                tokens = minitorch.where(use_own, own, tgt_in[:, t])
                step_input = self.dropout(self.tgt_embed(tokens))
            step_features, step_weights = self._step(step_input, cache)
            features.append(step_features)
            weights.append(step_weights)
            if sampling:  # the next step needs this one's prediction
                logits.append(self.output(self.dropout(step_features)))
        if sampling:
            out = minitorch.stack(logits, dim=1)
        else:  # one output GEMM over every step
            out = self.output(self.dropout(minitorch.stack(features, dim=1)))
        if not need_weights:
            return out
        return out, None if self.attention is None else minitorch.stack(weights, dim=1)

    def forward(self, src: Tensor, tgt_in: Tensor, src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None, tgt_mask: Optional[Tensor] = None,
                *, need_weights: bool = False, teacher_forcing_ratio: Optional[float] = None):
        """Logits (N, T, tgt_vocab) for every target position (and with ``need_weights`` the
        attention weights (N, T, S)); see :meth:`decode`."""
        memory = self.encode(src, src_key_padding_mask)
        return self.decode(tgt_in, memory, src_key_padding_mask, tgt_key_padding_mask, tgt_mask,
                           need_weights=need_weights,
                           teacher_forcing_ratio=teacher_forcing_ratio)

    def extra_repr(self) -> str:
        return (f"cell={self.cell!r}, attention={self.attention_kind!r}, "
                f"bidirectional={self.bidirectional}")
