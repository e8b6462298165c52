"""Decoding for encoder-decoder models: a KV cache, and greedy, sampling and beam search.

This file holds the incremental decoder (:class:`DecoderCache`, :func:`cached_decoder_step`,
computed with the ``nn.TransformerDecoderLayer``'s own parameters) and the searches
(:func:`greedy_decode`, :func:`sample_decode`, :func:`beam_search`), plus :func:`translate`, which
goes from sentences to sentences with two tokenizers. It imports numpy and ``minitorch`` (never
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
For (2), the keys and values of the memory are computed once, when decoding starts.

Token results are lists of ids *without* ``<bos>`` and cut before the first ``<eos>``. All
searches run batched, under ``no_grad``, and as in eval mode (no dropout).
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import numpy as np

import minitorch
from minitorch.tensor import Tensor

# ============================================================================ the KV cache


@dataclass
class LayerCache:
    """One decoder layer's cached keys/values, each (N, heads, length, head_dim)."""

    self_keys: Optional[Tensor]
    self_values: Optional[Tensor]
    cross_keys: Tensor
    cross_values: Tensor


@dataclass
class DecoderCache:
    """Everything a decoder step needs from earlier steps, for every layer.

    ``length`` counts the target positions fed so far (the next one's position index).
    With ``record_attention``, ``cross_attention`` collects, per step, the last layer's
    cross-attention weights (N, heads, S) — what ``examples/translate.py`` draws.
    """

    layers: List[LayerCache]
    memory_key_padding_mask: Optional[Tensor]  # (N, S) bool, True = padding
    length: int = 0
    record_attention: bool = False
    cross_attention: List[np.ndarray] = field(default_factory=list)

    @classmethod
    def start(cls, decoder_layers, memory: Tensor, memory_key_padding_mask: Optional[Tensor],
              record_attention: bool = False) -> "DecoderCache":
        """Cross-attention keys/values of ``memory`` for each layer; empty self-attention cache."""
        with minitorch.no_grad():
            layers = []
            for layer in decoder_layers:
                attn = layer.multihead_attn
                _, w_k, w_v = _in_projection_weights(attn)
                _, b_k, b_v = _in_projection_biases(attn)
                heads = attn.num_heads
                layers.append(LayerCache(
                    self_keys=None, self_values=None,
                    cross_keys=_split_heads(_linear(memory, w_k, b_k), heads),
                    cross_values=_split_heads(_linear(memory, w_v, b_v), heads)))
        return cls(layers, memory_key_padding_mask, 0, record_attention)

    def reorder(self, index) -> None:
        """Keep rows ``index`` (a list/array of row numbers, repeats allowed), in that order."""
        index = minitorch.tensor(np.asarray(index, dtype=np.int64))
        for layer in self.layers:
            for name in ("self_keys", "self_values", "cross_keys", "cross_values"):
                value = getattr(layer, name)
                if value is not None:
                    setattr(layer, name, value.index_select(0, index))
        if self.memory_key_padding_mask is not None:
            self.memory_key_padding_mask = self.memory_key_padding_mask.index_select(0, index)
        rows = index.numpy()
        self.cross_attention = [weights[rows] for weights in self.cross_attention]


def _in_projection_weights(attn) -> Tuple[Tensor, Tensor, Tensor]:
    """(W_q, W_k, W_v) as slices of ``in_proj_weight`` (3d, d), PyTorch's packed layout."""
    d = attn.in_proj_weight.shape[0] // 3
    weight = attn.in_proj_weight
    return weight[:d], weight[d:2 * d], weight[2 * d:]


def _in_projection_biases(attn):
    bias = getattr(attn, "in_proj_bias", None)
    if bias is None:
        return None, None, None
    d = bias.shape[0] // 3
    return bias[:d], bias[d:2 * d], bias[2 * d:]


def _linear(x: Tensor, weight: Tensor, bias: Optional[Tensor]) -> Tensor:
    y = x @ weight.transpose(0, 1)
    return y if bias is None else y + bias


def _split_heads(x: Tensor, heads: int) -> Tensor:
    """(N, L, d) → (N, heads, L, d / heads)."""
    n, length, d = x.shape
    return x.reshape(n, length, heads, d // heads).transpose(1, 2)


def _merge_heads(x: Tensor) -> Tensor:
    """(N, heads, L, head_dim) → (N, L, heads · head_dim)."""
    n, heads, length, head_dim = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * head_dim)


def _attend(query: Tensor, keys: Tensor, values: Tensor, key_padding_mask: Optional[Tensor]):
    """Scaled dot-product attention of one query position; returns (output, weights)."""
    scale = 1.0 / math.sqrt(query.shape[-1])
    mask = None
    if key_padding_mask is not None:  # (N, S) → (N, 1, 1, S), broadcast over heads and query
        mask = key_padding_mask.reshape(key_padding_mask.shape[0], 1, 1, -1)
    weights = minitorch.softmax(query @ keys.transpose(-2, -1), -1, scale=scale, mask=mask)
    return weights @ values, weights


def _cached_self_attention(attn, x: Tensor, cache: LayerCache) -> Tensor:
    """Self-attention of the new position (N, 1, d) over all positions so far."""
    w_q, w_k, w_v = _in_projection_weights(attn)
    b_q, b_k, b_v = _in_projection_biases(attn)
    heads = attn.num_heads
    query = _split_heads(_linear(x, w_q, b_q), heads)
    new_keys = _split_heads(_linear(x, w_k, b_k), heads)
    new_values = _split_heads(_linear(x, w_v, b_v), heads)
    if cache.self_keys is None:
        cache.self_keys, cache.self_values = new_keys, new_values
    else:
        cache.self_keys = minitorch.cat([cache.self_keys, new_keys], dim=2)
        cache.self_values = minitorch.cat([cache.self_values, new_values], dim=2)
    # No causal mask needed: the cache holds only positions at or before this one.
    out, _ = _attend(query, cache.self_keys, cache.self_values, None)
    return attn.out_proj(_merge_heads(out))


def _cached_cross_attention(attn, x: Tensor, cache: LayerCache,
                            memory_key_padding_mask: Optional[Tensor]):
    w_q, _, _ = _in_projection_weights(attn)
    b_q, _, _ = _in_projection_biases(attn)
    query = _split_heads(_linear(x, w_q, b_q), attn.num_heads)
    out, weights = _attend(query, cache.cross_keys, cache.cross_values, memory_key_padding_mask)
    return attn.out_proj(_merge_heads(out)), weights


def _activation(layer):
    activation = layer.activation
    if isinstance(activation, str):  # PyTorch stores a function; accept its name too
        return {"relu": minitorch.relu, "gelu": minitorch.ops.gelu}[activation]
    return activation


def cached_decoder_layer_step(layer, x: Tensor, cache: LayerCache,
                              memory_key_padding_mask: Optional[Tensor]):
    """One ``nn.TransformerDecoderLayer`` on the newest position ``x`` (N, 1, d), with its cache.

    The same arithmetic as the layer's forward in eval mode, in both orders of PyTorch's layer:
    ``norm_first`` (pre-norm: x + f(norm(x))) or not (post-norm: norm(x + f(x))).
    Returns (output (N, 1, d), cross-attention weights (N, heads, 1, S)).
    """
    def feed_forward(h):
        return layer.linear2(_activation(layer)(layer.linear1(h)))

    if layer.norm_first:
        x = x + _cached_self_attention(layer.self_attn, layer.norm1(x), cache)
        attended, weights = _cached_cross_attention(layer.multihead_attn, layer.norm2(x), cache,
                                                    memory_key_padding_mask)
        x = x + attended
        x = x + feed_forward(layer.norm3(x))
    else:
        x = layer.norm1(x + _cached_self_attention(layer.self_attn, x, cache))
        attended, weights = _cached_cross_attention(layer.multihead_attn, x, cache,
                                                    memory_key_padding_mask)
        x = layer.norm2(x + attended)
        x = layer.norm3(x + feed_forward(x))
    return x, weights


def cached_decoder_step(decoder_layers, x: Tensor, cache: DecoderCache) -> Tensor:
    """Run the decoder stack on the newest position's input ``x`` (N, 1, d); grows the cache."""
    weights = None
    with minitorch.no_grad():
        for layer, layer_cache in zip(decoder_layers, cache.layers):
            x, weights = cached_decoder_layer_step(layer, x, layer_cache,
                                                   cache.memory_key_padding_mask)
    cache.length += 1
    if cache.record_attention and weights is not None:
        cache.cross_attention.append(weights.numpy()[:, :, 0, :].copy())
    return x


# ============================================================================ searches


class _Stepper:
    """Next-token logits for a batch of prefixes, with the KV cache or by rerunning the decoder."""

    def __init__(self, model, memory, memory_key_padding_mask, use_cache, record_attention=False):
        self.model, self.use_cache = model, use_cache
        self.memory, self.memory_key_padding_mask = memory, memory_key_padding_mask
        if record_attention and not use_cache:
            raise ValueError("decoding: record_attention needs use_cache=True")
        if record_attention:  # an optional protocol extra: only models that record need it
            self.cache = model.start_decoding(memory, memory_key_padding_mask,
                                              record_attention=True)
        elif use_cache:
            self.cache = model.start_decoding(memory, memory_key_padding_mask)

    def logits(self, prefix: np.ndarray) -> np.ndarray:
        """Float64 logits (N, V) of the token after ``prefix`` (N, t), which starts with <bos>."""
        with minitorch.no_grad(), _eval_mode(self.model):
            if self.use_cache:
                out = self.model.decode_step(minitorch.tensor(prefix[:, -1]), self.cache)
            else:
                out = self.model.decode(minitorch.tensor(prefix), self.memory,
                                        self.memory_key_padding_mask)[:, -1]
        return out.numpy().astype(np.float64)

    def reorder(self, rows: np.ndarray) -> None:
        if self.use_cache:
            self.cache.reorder(rows)
        else:
            index = minitorch.tensor(rows.astype(np.int64))
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
    with minitorch.no_grad(), _eval_mode(model):
        memory = model.encode(src, src_key_padding_mask)
    return memory, max_len


@contextlib.contextmanager
def _eval_mode(model):
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
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


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
        result.append(np.stack(stepper.cache.cross_attention, axis=2))
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
        candidates = (scores.reshape(-1, 1) + log_probs).reshape(n, beams * vocab)
        best = np.argsort(-candidates, axis=-1, kind="stable")[:, :beams]
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

    Sentences are sorted by length into batches (little padding), decoded with the KV cache,
    and returned in the input order as detokenized strings.
    """
    if method not in ("greedy", "beam", "sample"):
        raise ValueError(f"translate: method must be 'greedy', 'beam' or 'sample', got {method!r}")
    pad_id = tgt_tokenizer.pad_id
    encoded = encode_sources(sentences, src_tokenizer, model.max_len)
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    outputs: List[str] = [""] * len(encoded)
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            rows = [encoded[i] for i in chunk]
            width = max(len(r) for r in rows)
            src = np.full((len(rows), width), src_tokenizer.pad_id, dtype=np.int64)
            for r, ids in enumerate(rows):
                src[r, :len(ids)] = ids
            src_mask = minitorch.tensor(src == src_tokenizer.pad_id) if (
                src == src_tokenizer.pad_id).any() else None
            src_t = minitorch.tensor(src)
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
