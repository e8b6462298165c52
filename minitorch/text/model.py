"""The sequence-to-sequence Transformer of "Attention Is All You Need", batch first.

This file holds :class:`Seq2SeqTransformer`: token embeddings scaled by ``sqrt(d_model)``,
sinusoidal positions, ``nn.Transformer(batch_first=True)`` and a ``generator`` Linear to target
vocabulary logits. Besides ``forward`` (teacher forcing) it implements the decoding protocol of
:mod:`minitorch.text.decoding` (``encode``, ``decode``, ``start_decoding``, ``decode_step``), the
last two on ``nn.TransformerDecoder``'s KV cache, through :mod:`~minitorch.text.decoding`'s
``DecoderCache``.
May import: ``minitorch``, ``minitorch.nn``, ``minitorch.text.batching``,
``minitorch.text.decoding``.
"""
from __future__ import annotations

import math
from typing import Optional

import numpy as np

import minitorch
from minitorch import nn
from minitorch.ops.linalg import linear_arrays
from minitorch.tensor import Tensor
from minitorch.text.batching import causal_mask
from minitorch.text.decoding import DecoderCache, eval_mode


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer from source token ids to target-vocabulary logits.

    Shapes (N = batch, S = source length, T = target length): ``src`` (N, S) and ``tgt_in``
    (N, T) int64; padding masks (N, S) / (N, T) bool with True = padding; logits (N, T,
    tgt_vocab). ``max_len`` bounds both source and target lengths (the positional table).

    Like the Annotated Transformer, every matrix parameter starts Xavier-uniform (so the
    embeddings are small and the ``sqrt(d_model)`` scale brings them to the positions' size).
    """

    def __init__(self, src_vocab: int, tgt_vocab: int, d_model: int = 128, nhead: int = 4,
                 num_encoder_layers: int = 2, num_decoder_layers: int = 2,
                 dim_feedforward: int = 512, dropout: float = 0.1, max_len: int = 256,
                 pad_id: int = 0, norm_first: bool = False):
        super().__init__()
        for name, value in (("src_vocab", src_vocab), ("tgt_vocab", tgt_vocab),
                            ("d_model", d_model), ("max_len", max_len)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Seq2SeqTransformer: {name} must be a positive int, "
                                 f"got {value!r}")
        if d_model % nhead != 0:
            raise ValueError(f"Seq2SeqTransformer: d_model ({d_model}) must be divisible by "
                             f"nhead ({nhead})")
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.d_model, self.max_len, self.pad_id = d_model, max_len, pad_id
        self.src_embed = nn.Embedding(src_vocab, d_model, padding_idx=pad_id)
        self.tgt_embed = nn.Embedding(tgt_vocab, d_model, padding_idx=pad_id)
        self.positions = nn.SinusoidalPositionalEncoding(d_model, max_len, dropout,
                                                         batch_first=True)
        self.transformer = nn.Transformer(
            d_model=d_model, nhead=nhead, num_encoder_layers=num_encoder_layers,
            num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
            dropout=dropout, batch_first=True, norm_first=norm_first)
        self.generator = nn.Linear(d_model, tgt_vocab)
        for parameter in self.parameters():
            if parameter.dim() > 1:
                nn.init.xavier_uniform_(parameter)
        with minitorch.no_grad():  # the padding row stays zero, as nn.Embedding promises
            self.src_embed.weight[pad_id] = 0.0
            self.tgt_embed.weight[pad_id] = 0.0

    # ------------------------------------------------------------------ checks

    def _check_ids(self, ids: Tensor, vocab: int, name: str) -> None:
        if ids.ndim != 2:
            raise ValueError(f"Seq2SeqTransformer: {name} must be (N, L) token ids, "
                             f"got shape {tuple(ids.shape)}")
        if ids.shape[1] > self.max_len:
            raise ValueError(f"Seq2SeqTransformer: {name} has length {ids.shape[1]}, longer than "
                             f"the model's max_len {self.max_len}")
        data = ids._data  # on the arrays: Tensor ops would make three nodes a decoding step
        outside = (data < 0) | (data >= vocab)
        if outside.any():
            bad = int(data[outside][0])
            raise IndexError(f"Seq2SeqTransformer: {name} holds token id {bad}, outside the "
                             f"vocabulary [0, {vocab})")

    def _embed(self, ids: Tensor, table: nn.Embedding, start: int = 0) -> Tensor:
        return self.positions(table(ids) * math.sqrt(self.d_model), start)

    # ------------------------------------------------------------------ teacher forcing

    def forward(self, src: Tensor, tgt_in: Tensor, src_key_padding_mask: Optional[Tensor] = None,
                tgt_key_padding_mask: Optional[Tensor] = None,
                tgt_mask: Optional[Tensor] = None) -> Tensor:
        """Logits (N, T, tgt_vocab) for every target position; ``tgt_mask`` defaults to causal."""
        memory = self.encode(src, src_key_padding_mask)
        return self.decode(tgt_in, memory, src_key_padding_mask, tgt_key_padding_mask, tgt_mask)

    def encode(self, src: Tensor, src_key_padding_mask: Optional[Tensor] = None) -> Tensor:
        """Encoder output ("memory"), (N, S, d_model)."""
        self._check_ids(src, self.src_vocab, "src")
        return self.transformer.encoder(self._embed(src, self.src_embed),
                                        src_key_padding_mask=src_key_padding_mask)

    def decode(self, tgt_in: Tensor, memory: Tensor,
               memory_key_padding_mask: Optional[Tensor] = None,
               tgt_key_padding_mask: Optional[Tensor] = None,
               tgt_mask: Optional[Tensor] = None) -> Tensor:
        """Logits (N, T, tgt_vocab) of the whole decoder run over ``tgt_in`` (no cache)."""
        self._check_ids(tgt_in, self.tgt_vocab, "tgt_in")
        if tgt_mask is None:
            tgt_mask = causal_mask(tgt_in.shape[1], tgt_in.device)
        hidden = self.transformer.decoder(
            self._embed(tgt_in, self.tgt_embed), memory, tgt_mask=tgt_mask,
            tgt_key_padding_mask=tgt_key_padding_mask,
            memory_key_padding_mask=memory_key_padding_mask)
        return self.generator(hidden)

    # ------------------------------------------------------------------ incremental decoding

    def start_decoding(self, memory: Tensor,
                       memory_key_padding_mask: Optional[Tensor] = None,
                       record_attention: bool = False) -> DecoderCache:
        """A KV cache for :meth:`decode_step` (the memory's K/V are computed at the first step)."""
        return DecoderCache(self.transformer.decoder.num_layers, memory, memory_key_padding_mask,
                            record_attention=record_attention)

    def decode_step(self, tokens: Tensor, cache: DecoderCache) -> Tensor:
        """Logits (N, tgt_vocab) for the next token after ``tokens`` (N,), the last ones fed.

        Feeds one position per call: costs O(length so far), where rerunning :meth:`decode` on
        the prefix costs O(length²). Runs as in eval mode (no dropout) whatever ``training`` is.
        """
        if cache.length >= self.max_len:
            raise ValueError(f"Seq2SeqTransformer.decode_step: the target would reach "
                             f"{cache.length + 1} positions, more than max_len {self.max_len}")
        tokens = tokens.reshape(-1, 1)
        self._check_ids(tokens, self.tgt_vocab, "tokens")
        with minitorch.no_grad(), eval_mode(self):
            hidden = cache.run(self.transformer.decoder, self._embed_step(tokens, cache.length))
            return self._generate_step(hidden).reshape(tokens.shape[0], self.tgt_vocab)

    def _embed_step(self, tokens: Tensor, start: int) -> Tensor:
        """``_embed(tokens, self.tgt_embed, start)`` of a decoding step, on the arrays: the
        same gather, scale and add of the position's row (dropout is off under eval_mode), with
        none of the ops' bookkeeping, which cost more than the arithmetic at one position."""
        x = self.tgt_embed.weight._data[tokens._data] * math.sqrt(self.d_model)
        table = self.positions.pe._data[start:start + tokens.shape[1]]
        return Tensor._make(x + table.astype(x.dtype, copy=False))

    def _generate_step(self, hidden: Tensor) -> Tensor:
        """``self.generator(hidden)`` on the arrays: one GEMM with the bias."""
        bias = self.generator.bias
        return Tensor._make(linear_arrays(hidden._data, self.generator.weight._data,
                                          None if bias is None else bias._data))


def count_parameters(model: nn.Module) -> int:
    """Number of scalar parameters of ``model``."""
    return int(sum(np.prod(p.shape) for p in model.parameters()))
