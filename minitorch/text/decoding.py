"""Decoding for encoder-decoder models: greedy, sampling and beam search, and the cache the
decoding protocol hands around.

This file holds the searches (:func:`greedy_decode`, :func:`sample_decode`, :func:`beam_search`),
:func:`translate`, which goes from sentences to sentences with two tokenizers, and
:class:`DecoderCache`, the protocol's cache for a model whose decoder is an
``nn.TransformerDecoder``. The layers themselves, and their keys/values cache, are
``minitorch.nn``'s. It imports numpy, ``minitorch`` and ``minitorch.nn`` (never
``minitorch.text.model``: any model that follows the protocol below works).

The decoding protocol
---------------------
A model is decodable when it has:

* ``model.encode(src, src_key_padding_mask) -> memory`` (N, S, d);
* ``model.decode(tgt_in, memory, memory_key_padding_mask) -> logits`` (N, T, V): the whole
  decoder over a prefix (used by ``use_cache=False``, the slow reference);
* ``model.start_decoding(memory, memory_key_padding_mask) -> cache``, a cache with a
  ``reorder(index)`` method (beam search moves hypotheses between rows with it);
* ``model.decode_step(tokens, cache) -> logits`` (N, V): feed the last tokens (N,), get the
  next-token logits, the cache grows by one position;
* ``model.max_len``: the most target positions it can take.

The KV cache
------------
Each decoder layer attends to (1) the target positions so far and (2) the encoder memory. For
(1), the keys and values of past positions never change, so each step computes them for the new
position only and appends them to the layer's cache: a step costs O(length), not O(length²).
For (2), the keys and values of the memory are computed once, at the first step. Under
``no_grad`` (as the searches run) a step takes the decoder layers' inference path: the caches
are preallocated buffers written in place, each attention is one ``attention_step`` kernel
call, and beam search's reorders copy into spare buffers (see ``nn.KVCache``).

Token results are lists of ids *without* ``<bos>`` and cut before the first ``<eos>``. All
searches run batched, under ``no_grad``, and as in eval mode (no dropout).
"""
from __future__ import annotations

import contextlib
from typing import List, Optional, Sequence

import numpy as np

import minitorch
from minitorch import nn
from minitorch.tensor import Tensor

# ============================================================================ the cache


class DecoderCache:
    """What a decoder step needs from the earlier ones: the ``nn.TransformerDecoderCache``
    (``decoder``), the memory's padding mask, and the memory until the first step has projected
    it into the cross-attention caches.

    ``length`` counts the target positions fed so far (the next one's position index). With
    ``record_attention``, ``cross_attention`` collects, per step, the last layer's
    cross-attention weights (N, heads, new positions, S): what ``examples/translate.py`` draws.
    """

    def __init__(self, num_layers: int, memory: Tensor,
                 memory_key_padding_mask: Optional[Tensor] = None, record_attention: bool = False):
        self.decoder = nn.TransformerDecoderCache(num_layers)
        self.device = memory.device
        self.memory = memory
        self.memory_key_padding_mask = memory_key_padding_mask  # (N, S) bool, True = padding
        self.record_attention = record_attention
        self.cross_attention: List[np.ndarray] = []

    @property
    def length(self) -> int:
        return self.decoder.length

    def run(self, decoder: nn.TransformerDecoder, x: Tensor) -> Tensor:
        """``decoder`` on the new positions' inputs ``x`` (N, t, d), with and growing the cache."""
        out = decoder(x, self.memory, memory_key_padding_mask=self.memory_key_padding_mask,
                      cache=self.decoder)
        self.memory = None  # in the cross-attention caches now, never read again
        if self.record_attention and self.decoder.layers:
            self.cross_attention.append(self.decoder.layers[-1][1].weights.cpu().numpy().copy())
        return out

    def reorder(self, index) -> None:
        """Keep rows ``index`` (a list/array of row numbers, repeats allowed), in that order."""
        rows = np.asarray(index, dtype=np.int64)
        index = minitorch.tensor(rows, device=self.device)
        self.decoder.reorder(index)
        if self.memory is not None:
            self.memory = self.memory.index_select(0, index)
        if self.memory_key_padding_mask is not None:
            self.memory_key_padding_mask = self.memory_key_padding_mask.index_select(0, index)
        self.cross_attention = [weights[rows] for weights in self.cross_attention]


# ============================================================================ searches


class _Stepper:
    """Next-token logits for a batch of prefixes, with the KV cache or by rerunning the decoder."""

    def __init__(self, model, memory, memory_key_padding_mask, use_cache, record_attention=False):
        self.model, self.use_cache = model, use_cache
        self.memory, self.memory_key_padding_mask = memory, memory_key_padding_mask
        self.device = memory.device  # the prefixes live on the host; each step's tokens go here
        if record_attention and not use_cache:
            raise ValueError("decoding: record_attention needs use_cache=True")
        if record_attention:  # an optional protocol extra: only models that record need it
            self.cache = model.start_decoding(memory, memory_key_padding_mask,
                                              record_attention=True)
        elif use_cache:
            self.cache = model.start_decoding(memory, memory_key_padding_mask)

    def logits(self, prefix: np.ndarray) -> np.ndarray:
        """Float64 logits (N, V) of the token after ``prefix`` (N, t), which starts with <bos>."""
        with minitorch.no_grad(), eval_mode(self.model):
            if self.use_cache:
                out = self.model.decode_step(minitorch.tensor(prefix[:, -1], device=self.device),
                                             self.cache)
            else:
                out = self.model.decode(minitorch.tensor(prefix, device=self.device), self.memory,
                                        self.memory_key_padding_mask)[:, -1]
        return out.cpu().numpy().astype(np.float64)

    def reorder(self, rows: np.ndarray) -> None:
        if self.use_cache:
            self.cache.reorder(rows)
        else:
            index = minitorch.tensor(rows.astype(np.int64), device=self.device)
            self.memory = self.memory.index_select(0, index)
            if self.memory_key_padding_mask is not None:
                self.memory_key_padding_mask = self.memory_key_padding_mask.index_select(0, index)


def _prepare(model, src: Tensor, src_key_padding_mask: Optional[Tensor], max_len: Optional[int]):
    """Encode under no_grad and settle ``max_len`` (generated tokens, <eos> included)."""
    if src.ndim != 2:
        raise ValueError(f"decoding: src must be (N, S) token ids, got shape {tuple(src.shape)}")
    if max_len is None:
        max_len = min(model.max_len, 2 * src.shape[1] + 10)
    if not isinstance(max_len, int) or max_len < 1:
        raise ValueError(f"decoding: max_len must be a positive int, got {max_len!r}")
    if max_len > model.max_len:
        raise ValueError(f"decoding: max_len={max_len} is longer than the model's maximum "
                         f"target length {model.max_len}")
    with minitorch.no_grad(), eval_mode(model):
        memory = model.encode(src, src_key_padding_mask)
    return memory, max_len


@contextlib.contextmanager
def eval_mode(model):
    """Run a block with ``model`` in eval mode (no dropout), then restore its mode."""
    was_training = getattr(model, "training", False)
    if was_training:
        model.eval()
    try:
        yield
    finally:
        if was_training:
            model.train(True)


def _finish(tokens: np.ndarray, eos_id: int) -> List[List[int]]:
    """Rows of generated ids cut before the first <eos>."""
    out = []
    for row in tokens.tolist():
        out.append(row[:row.index(eos_id)] if eos_id in row else row)
    return out


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    """Log-softmax over the last dim of a host array, by the active backend's kernel (on the C
    backend one pass over each row, on the threads: beam search's (N·beams, V) rows took five
    numpy passes and its temporaries)."""
    return minitorch.backends.current().log_softmax_forward(logits)


def greedy_decode(model, src: Tensor, src_key_padding_mask: Optional[Tensor] = None, *,
                  max_len: Optional[int] = None, bos_id: int = 2, eos_id: int = 3,
                  pad_id: int = 0, use_cache: bool = True, return_logits: bool = False,
                  record_attention: bool = False):
    """The most likely next token at each step, for every sentence of the batch at once.

    Returns the token lists; with ``return_logits`` also the step logits as a float64 array
    (N, steps, V) (rows of finished sentences keep being computed, fed ``pad_id``); with
    ``record_attention`` (needs ``use_cache``) also the last decoder layer's cross-attention
    (N, heads, steps, S).
    """
    memory, max_len = _prepare(model, src, src_key_padding_mask, max_len)
    stepper = _Stepper(model, memory, src_key_padding_mask, use_cache, record_attention)
    n = src.shape[0]
    prefix = np.full((n, 1), bos_id, dtype=np.int64)
    finished = np.zeros(n, dtype=bool)
    step_logits = []
    for _ in range(max_len):
        logits = stepper.logits(prefix)
        step_logits.append(logits)
        next_tokens = np.where(finished, pad_id, logits.argmax(axis=-1))
        prefix = np.concatenate([prefix, next_tokens[:, None]], axis=1)
        finished |= next_tokens == eos_id
        if finished.all():
            break
    result = [_finish(prefix[:, 1:], eos_id)]
    if return_logits:
        result.append(np.stack(step_logits, axis=1))
    if record_attention:
        result.append(np.concatenate(stepper.cache.cross_attention, axis=2))
    return result[0] if len(result) == 1 else tuple(result)


def _filter_logits(logits: np.ndarray, top_k: Optional[int], top_p: Optional[float]) -> np.ndarray:
    """Set to -inf every logit outside the top-k and outside the top-p nucleus."""
    logits = logits.copy()
    if top_k is not None:
        k = min(top_k, logits.shape[-1])
        kth = np.sort(logits, axis=-1)[:, -k][:, None]
        logits[logits < kth] = -np.inf
    if top_p is not None:
        order = np.argsort(-logits, axis=-1, kind="stable")
        sorted_logits = np.take_along_axis(logits, order, axis=-1)
        probs = np.exp(_log_softmax(sorted_logits))
        # Keep a token when the mass *before* it is < top_p: the smallest set reaching top_p,
        # never empty (the most likely token always stays).
        mass_before = np.cumsum(probs, axis=-1) - probs
        drop_sorted = mass_before >= top_p
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, axis=-1)
        logits[drop] = -np.inf
    return logits


def sample_decode(model, src: Tensor, src_key_padding_mask: Optional[Tensor] = None, *,
                  max_len: Optional[int] = None, temperature: float = 1.0,
                  top_k: Optional[int] = None, top_p: Optional[float] = None,
                  seed: Optional[int] = None, bos_id: int = 2, eos_id: int = 3, pad_id: int = 0,
                  use_cache: bool = True) -> List[List[int]]:
    """Draw each next token from softmax(logits / temperature), optionally cut to top-k / top-p.

    ``seed`` makes the draw reproducible (its own generator); ``None`` draws from minitorch's
    global generator, which ``minitorch.manual_seed`` fixes. ``top_k=1`` is greedy decoding.
    """
    if not temperature > 0:
        raise ValueError(f"sample_decode: temperature must be > 0, got {temperature}")
    if top_k is not None and (not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"sample_decode: top_k must be a positive int, got {top_k!r}")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"sample_decode: top_p must be in (0, 1], got {top_p}")
    rng = np.random.default_rng(seed) if seed is not None else minitorch.random.generator()
    memory, max_len = _prepare(model, src, src_key_padding_mask, max_len)
    stepper = _Stepper(model, memory, src_key_padding_mask, use_cache)
    n = src.shape[0]
    prefix = np.full((n, 1), bos_id, dtype=np.int64)
    finished = np.zeros(n, dtype=bool)
    for _ in range(max_len):
        logits = _filter_logits(stepper.logits(prefix) / temperature, top_k, top_p)
        probs = np.exp(_log_softmax(logits))
        # Inverse-CDF draw: one uniform per row, the first token whose cumulative mass passes it.
        cumulative = np.cumsum(probs, axis=-1)
        draws = rng.random(n)[:, None] * cumulative[:, -1:]
        next_tokens = np.minimum((cumulative <= draws).sum(axis=-1), probs.shape[-1] - 1)
        next_tokens = np.where(finished, pad_id, next_tokens)
        prefix = np.concatenate([prefix, next_tokens[:, None]], axis=1)
        finished |= next_tokens == eos_id
        if finished.all():
            break
    return _finish(prefix[:, 1:], eos_id)


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Column indices of each row's ``k`` largest scores, best first, ties to the lower index:
    ``np.argsort(-scores, kind="stable")[:, :k]`` without sorting whole rows (beam search's rows
    are beams × vocabulary long, and k is the beam size)."""
    rows = np.arange(scores.shape[0])
    columns = np.empty((scores.shape[0], k), dtype=np.int64)
    taken = np.empty((scores.shape[0], k), dtype=scores.dtype)
    # Each maximum found is set to -inf in ``scores`` itself, and restored before returning:
    # no copy of the rows.
    replaced = 0
    try:
        for j in range(k):
            column = scores.argmax(axis=-1)  # the first maximum: ties go to the lower index
            best = scores[rows, column]
            if np.isnan(best).any() or np.isneginf(best).any():  # (a -inf might be one taken)
                break
            columns[:, j], taken[:, j] = column, best
            scores[rows, column] = -np.inf
            replaced += 1
        else:
            return columns
    finally:
        for j in range(replaced):
            scores[rows, columns[:, j]] = taken[:, j]
    return np.argsort(-scores, axis=-1, kind="stable")[:, :k]


def beam_search(model, src: Tensor, src_key_padding_mask: Optional[Tensor] = None, *,
                beam_size: int = 4, max_len: Optional[int] = None, length_penalty: float = 1.0,
                bos_id: int = 2, eos_id: int = 3, pad_id: int = 0,
                use_cache: bool = True) -> List[List[int]]:
    """Keep the ``beam_size`` best partial translations of each sentence; return each best one.

    Hypotheses are ranked during the search by their summed log-probability; a hypothesis that
    has emitted ``<eos>`` stays in the beam unchanged (it competes with its final score). The
    search stops early once every beam of every sentence has ended. The winner maximizes
    ``sum log p / length ** length_penalty`` (length counts the <eos>; ``length_penalty=0``:
    raw sum; larger values favour longer outputs). ``beam_size=1`` is greedy decoding.
    """
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_search: beam_size must be a positive int, got {beam_size!r}")
    memory, max_len = _prepare(model, src, src_key_padding_mask, max_len)
    n, beams = src.shape[0], beam_size
    stepper = _Stepper(model, memory, src_key_padding_mask, use_cache)
    stepper.reorder(np.repeat(np.arange(n), beams))  # row n·beams + b is beam b of sentence n
    scores = np.zeros((n, beams))
    scores[:, 1:] = -np.inf  # at first all beams are the same <bos>: keep only one of them
    prefix = np.full((n * beams, 1), bos_id, dtype=np.int64)
    finished = np.zeros(n * beams, dtype=bool)
    lengths = np.zeros(n * beams, dtype=np.int64)
    for _ in range(max_len):
        log_probs = _log_softmax(stepper.logits(prefix))
        vocab = log_probs.shape[-1]
        # An ended hypothesis may only "continue" with pad at no cost, so it keeps its score.
        log_probs[finished] = -np.inf
        log_probs[finished, pad_id] = 0.0
        log_probs += scores.reshape(-1, 1)
        candidates = log_probs.reshape(n, beams * vocab)
        best = _top_k(candidates, beams)
        scores = np.take_along_axis(candidates, best, axis=-1)
        rows = (np.arange(n)[:, None] * beams + best // vocab).reshape(-1)
        next_tokens = (best % vocab).reshape(-1)
        stepper.reorder(rows)
        prefix = np.concatenate([prefix[rows], next_tokens[:, None]], axis=1)
        lengths = lengths[rows] + ~finished[rows]
        finished = finished[rows] | (next_tokens == eos_id)
        if finished.all():
            break
    normalized = scores / np.maximum(lengths.reshape(n, beams), 1) ** length_penalty
    winners = np.arange(n) * beams + normalized.argmax(axis=-1)
    return _finish(prefix[winners, 1:], eos_id)


# ============================================================================ sentences


def encode_sources(sentences: Sequence[str], tokenizer, max_len: int) -> List[List[int]]:
    """Token ids of each source sentence with a final ``<eos>`` (the training convention).

    An empty sentence encodes to ``[<eos>]`` alone, which the model translates like any other
    input (a short, usually empty or generic, output). A sentence longer than ``max_len``
    tokens raises ``ValueError`` naming both lengths.
    """
    encoded = []
    for sentence in sentences:
        ids = tokenizer.encode(sentence, add_eos=True)
        if len(ids) > max_len:
            raise ValueError(f"translate: the sentence {sentence[:40]!r}... has {len(ids)} tokens, "
                             f"longer than the model's max_len {max_len}")
        encoded.append(ids)
    return encoded


def translate(model, sentences: Sequence[str], src_tokenizer, tgt_tokenizer, *,
              method: str = "greedy", batch_size: int = 64, max_len: Optional[int] = None,
              beam_size: int = 4, length_penalty: float = 1.0, temperature: float = 1.0,
              top_k: Optional[int] = None, top_p: Optional[float] = None,
              seed: Optional[int] = None) -> List[str]:
    """Translate ``sentences`` (strings) with ``method`` in {"greedy", "beam", "sample"}.

    Sentences are sorted by length into batches (little padding), decoded with the KV cache on
    the model's device, and returned in the input order as detokenized strings.
    """
    if method not in ("greedy", "beam", "sample"):
        raise ValueError(f"translate: method must be 'greedy', 'beam' or 'sample', got {method!r}")
    pad_id = tgt_tokenizer.pad_id
    encoded = encode_sources(sentences, src_tokenizer, model.max_len)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    outputs: List[str] = [""] * len(encoded)
    was_training = model.training
    device = next(model.parameters()).device
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            rows = [encoded[i] for i in chunk]
            width = max(len(r) for r in rows)
            src = np.full((len(rows), width), src_tokenizer.pad_id, dtype=np.int64)
            for r, ids in enumerate(rows):
                src[r, :len(ids)] = ids
            src_mask = minitorch.tensor(src == src_tokenizer.pad_id, device=device) if (
                src == src_tokenizer.pad_id).any() else None
            src_t = minitorch.tensor(src, device=device)
            special = dict(bos_id=tgt_tokenizer.bos_id, eos_id=tgt_tokenizer.eos_id, pad_id=pad_id)
            if method == "greedy":
                ids = greedy_decode(model, src_t, src_mask, max_len=max_len, **special)
            elif method == "beam":
                ids = beam_search(model, src_t, src_mask, beam_size=beam_size, max_len=max_len,
                                  length_penalty=length_penalty, **special)
            else:
                ids = sample_decode(model, src_t, src_mask, max_len=max_len,
                                    temperature=temperature, top_k=top_k, top_p=top_p,
                                    seed=None if seed is None else seed + start, **special)
            for i, row in zip(chunk, ids):
                outputs[i] = tgt_tokenizer.decode(row)
    finally:
        model.train(was_training)
    return outputs
