"""Decoding for the recurrent encoder-decoder: the state its decoder carries between steps, and
greedy or beam search that also returns where each output token looked in the source.

This file holds :class:`RNNDecoderCache`, what ``Seq2SeqRNN.decode_step`` hands from one step to
the next, and :func:`decode_with_attention`. The searches themselves are
:mod:`minitorch.text.decoding`'s: ``Seq2SeqRNN`` follows that file's decoding protocol
(``encode``, ``decode``, ``start_decoding``, ``decode_step``, ``max_len``), so ``greedy_decode``,
``beam_search`` (batched, length-normalised, ``<eos>`` handling), ``sample_decode`` and
``translate`` run on it unchanged. It imports numpy, ``minitorch`` and
``minitorch.text.decoding`` (never ``minitorch.text.rnn_model``: any model with the protocol
and ``decode(..., need_weights=True)`` works).

What a recurrent decoder caches
-------------------------------
A Transformer decoder keeps the keys and values of every past position; a recurrent one keeps
only its state ``s_{t-1}``, the one vector that summarises the prefix, so a step costs the same
at every length. Beside it the cache holds what is fixed for a sentence: the encoder outputs
``h_i`` (the attention's keys and values), their projection by the attention (computed once,
not at every step) and the source padding mask; without attention, the fixed context vector
the decoder reads at every step instead.
"""
from __future__ import annotations

from typing import List, Optional, Tuple, Union

import numpy as np

import minitorch
from minitorch.tensor import Tensor
from minitorch.text.batching import pad_sequences
from minitorch.text.decoding import beam_search, eval_mode, greedy_decode

State = Union[Tensor, Tuple[Tensor, Tensor]]  # s: (N, H), or (h, c) for an LSTM decoder


class RNNDecoderCache:
    """The decoder state between steps, and what is fixed for the batch's sentences.

    ``state`` is ``s_{t-1}``, (N, H) (a pair (h, c) for an LSTM decoder); ``memory`` the encoder
    outputs (N, S, D); ``projected_keys`` the attention's projection of them (None without
    attention); ``fixed_context`` (N, D) the context vector of a decoder without attention (None
    with it). ``length`` counts the tokens fed so far. With ``record_attention``,
    ``cross_attention`` collects each step's weights as (N, 1, 1, S) arrays: the layout of
    ``DecoderCache`` (one "head"), so ``decoding.greedy_decode(record_attention=True)`` returns
    them for this model as for the Transformer.
    """

    def __init__(self, state: State, memory: Tensor,
                 memory_key_padding_mask: Optional[Tensor] = None,
                 projected_keys: Optional[Tensor] = None, fixed_context: Optional[Tensor] = None,
                 record_attention: bool = False):
        self.state = state
        self.memory = memory
        self.memory_key_padding_mask = memory_key_padding_mask  # (N, S) bool, True = padding
        self.projected_keys = projected_keys
        self.fixed_context = fixed_context
        self.record_attention = record_attention
        self.cross_attention: List[np.ndarray] = []
        self.length = 0

    def record(self, weights: Optional[Tensor]) -> None:
        """Keep one step's attention weights (N, S), if recording."""
        if self.record_attention and weights is not None:
            self.cross_attention.append(weights.cpu().numpy()[:, None, None, :].copy())

    def reorder(self, index) -> None:
        """Keep rows ``index`` (a list/array of row numbers, repeats allowed), in that order."""
        rows = np.asarray(index, dtype=np.int64)
        select = minitorch.tensor(rows, device=self.memory.device)

        def pick(tensor):
            return None if tensor is None else tensor.index_select(0, select)

        self.state = (tuple(pick(part) for part in self.state) if isinstance(self.state, tuple)
                      else pick(self.state))
        self.memory = pick(self.memory)
        self.memory_key_padding_mask = pick(self.memory_key_padding_mask)
        self.projected_keys = pick(self.projected_keys)
        self.fixed_context = pick(self.fixed_context)
        self.cross_attention = [weights[rows] for weights in self.cross_attention]


def decode_with_attention(model, src: Tensor, src_key_padding_mask: Optional[Tensor] = None, *,
                          method: str = "greedy", beam_size: int = 4,
                          max_len: Optional[int] = None, length_penalty: float = 1.0,
                          bos_id: int = 2, eos_id: int = 3, pad_id: int = 0
                          ) -> Tuple[List[List[int]], List[np.ndarray]]:
    """``(tokens, weights)``: each sentence's output ids (without ``<bos>``, cut before
    ``<eos>``) by greedy or beam search, and its attention weights, an array (steps, source
    length) whose row t is where the decoder looked while choosing token t; the last row is the
    step that chose ``<eos>`` (none where the search stopped at ``max_len`` first: then steps =
    len(tokens)); source padding is cut off.

    The weights come from one teacher-forced pass over the chosen tokens: the decoder is
    deterministic, so these are the weights the search saw along the hypothesis it kept, and beam
    search need not carry every beam's history. A model without attention raises ValueError.
    """
    if method not in ("greedy", "beam"):
        raise ValueError(f"decode_with_attention: method must be 'greedy' or 'beam', got "
                         f"{method!r}")
    if getattr(model, "attention", None) is None:
        raise ValueError("decode_with_attention: the model has no attention (attention='none'): "
                         "it reads one fixed vector, there are no weights to return")
    if method == "greedy":
        tokens = greedy_decode(model, src, src_key_padding_mask, max_len=max_len, bos_id=bos_id,
                               eos_id=eos_id, pad_id=pad_id)
    else:
        tokens = beam_search(model, src, src_key_padding_mask, beam_size=beam_size,
                             max_len=max_len, length_penalty=length_penalty, bos_id=bos_id,
                             eos_id=eos_id, pad_id=pad_id)
    tgt_in = minitorch.tensor(pad_sequences([[bos_id] + row for row in tokens], pad_id),
                              device=src.device)
    with minitorch.no_grad(), eval_mode(model):
        memory = model.encode(src, src_key_padding_mask)
        _, weights = model.decode(tgt_in, memory, src_key_padding_mask, need_weights=True)
    weights = weights.cpu().numpy()  # (N, T, S)
    if max_len is None:  # the searches' default (decoding._prepare)
        max_len = min(model.max_len, 2 * src.shape[1] + 10)
    source_lengths = np.full(src.shape[0], src.shape[1])
    if src_key_padding_mask is not None:
        source_lengths -= src_key_padding_mask.cpu().numpy().sum(axis=1)
    return tokens, [weights[n, :min(len(row) + 1, max_len), :source_lengths[n]]
                    for n, row in enumerate(tokens)]
