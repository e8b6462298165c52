"""Batches for sequence-to-sequence training: padding, masks, teacher-forcing shift, bucketing.

This file holds :class:`Batch`, :func:`make_batch` (pad + masks + shift for one list of pairs),
:func:`causal_mask`, :func:`pad_sequences`, :func:`iterate_batches` (length-bucketed,
shuffled, reproducible from a seed) and :func:`encode_pairs` (token ids, with the length filter
that training and held-out pairs must share). It imports numpy and the tensor core
(``minitorch``), never ``minitorch.nn``.

Conventions (PyTorch's, batch first):

* token tensors are int64 of shape ``(N, L)``; ``pad_id`` fills the tail of short rows;
* a *key padding mask* is bool ``(N, L)`` with ``True`` where the position is padding (the
  attention must not look there), as ``src_key_padding_mask`` in ``nn.Transformer``;
* the *causal mask* is bool ``(T, T)`` with ``True`` above the diagonal: position ``i`` may not
  attend to ``j > i``;
* teacher forcing: for a target ``y1 … yn`` the decoder reads ``<bos> y1 … yn`` (``tgt_in``)
  and is trained to predict ``y1 … yn <eos>`` (``tgt_out``); both have length ``n + 1``, padded
  with ``pad_id``, which the loss ignores (``ignore_index=pad_id``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, List, Optional, Sequence, Tuple

import numpy as np

import minitorch
from minitorch.tensor import Tensor

TokenIds = Sequence[int]


@dataclass
class Batch:
    """One padded batch of (source, target) pairs, ready for ``Seq2SeqTransformer.forward``."""

    src: Tensor                    # (N, S) int64, source ids, pad_id after the end
    tgt_in: Tensor                 # (N, T) int64, <bos> y1 … yn, then pad_id
    tgt_out: Tensor                # (N, T) int64, y1 … yn <eos>, then pad_id
    src_key_padding_mask: Tensor   # (N, S) bool, True = padding
    tgt_key_padding_mask: Tensor   # (N, T) bool, True = padding
    tgt_mask: Tensor               # (T, T) bool, True = future position (not allowed)
    n_tokens: int                  # target tokens the loss counts (non-pad entries of tgt_out)

    @property
    def size(self) -> int:
        """Number of sentence pairs in the batch."""
        return self.src.shape[0]

    def to(self, device) -> "Batch":
        """The batch with its tensors on ``device`` (itself if they are there)."""
        moved = {name: getattr(self, name).to(device) for name in (
            "src", "tgt_in", "tgt_out", "src_key_padding_mask", "tgt_key_padding_mask",
            "tgt_mask")}
        return replace(self, **moved)


def encode_pairs(pairs: Sequence[Tuple[str, str]], src_tokenizer, tgt_tokenizer,
                 max_len: int) -> Tuple[List[Tuple[List[int], List[int]]], List[Tuple[str, str]]]:
    """``(ids, kept)``: the pairs that fit a model of ``max_len`` positions, encoded and as text.

    A source is encoded with ``<eos>`` and must have at most ``max_len`` tokens; a target must
    leave room for the shift's ``<bos>``/``<eos>`` (at most ``max_len - 1`` tokens). Apply it to
    held-out pairs as to training pairs: a held-out source over ``max_len`` cannot be translated
    by the model at all (``translate`` raises on it).
    """
    if not isinstance(max_len, int) or max_len < 2:
        raise ValueError(f"encode_pairs: max_len must be an int >= 2, got {max_len!r}")
    ids, kept = [], []
    for src, tgt in pairs:
        src_ids, tgt_ids = src_tokenizer.encode(src, add_eos=True), tgt_tokenizer.encode(tgt)
        if len(src_ids) <= max_len and len(tgt_ids) + 1 <= max_len:
            ids.append((src_ids, tgt_ids))
            kept.append((src, tgt))
    return ids, kept


def pad_sequences(sequences: Sequence[TokenIds], pad_id: int,
                  length: Optional[int] = None) -> np.ndarray:
    """Stack id lists into an int64 array ``(N, length)``, right-padded with ``pad_id``.

    ``length`` defaults to the longest sequence; a sequence longer than ``length`` raises
    ``ValueError`` (silently cutting a sentence would train on a different sentence).
    """
    longest = max((len(seq) for seq in sequences), default=0)
    length = longest if length is None else length
    if longest > length:
        raise ValueError(f"pad_sequences: a sequence has {longest} tokens, longer than "
                         f"length={length}")
    out = np.full((len(sequences), length), pad_id, dtype=np.int64)
    for row, seq in enumerate(sequences):
        out[row, :len(seq)] = seq
    return out


def causal_mask(size: int, device=None) -> Tensor:
    """Bool ``(size, size)`` mask, True above the diagonal: what position ``i`` may not see;
    on ``device`` (default: the CPU).

    The bool form of ``nn.Transformer.generate_square_subsequent_mask`` (which is additive
    ``-inf``); ``nn.MultiheadAttention`` accepts both.
    """
    if size < 0:
        raise ValueError(f"causal_mask: size must be >= 0, got {size}")
    return minitorch.tensor(np.triu(np.ones((size, size), dtype=bool), k=1), device=device)


def make_batch(pairs: Sequence[Tuple[TokenIds, TokenIds]], pad_id: int, bos_id: int,
               eos_id: int) -> Batch:
    """Pad one list of ``(source ids, target ids)`` pairs and build masks and shifted targets.

    Source ids are used as given (add ``<eos>`` when encoding if the model should see the end);
    target ids must not contain ``<bos>``/``<eos>``: they are added here by the shift.
    """
    if len(pairs) == 0:
        raise ValueError("make_batch: pairs is empty; a batch needs at least one pair")
    sources = [list(src) for src, _ in pairs]
    targets = [list(tgt) for _, tgt in pairs]
    src = pad_sequences(sources, pad_id)
    tgt_in = pad_sequences([[bos_id] + tgt for tgt in targets], pad_id)
    tgt_out = pad_sequences([tgt + [eos_id] for tgt in targets], pad_id)
    # Masks come from the lengths, not from `== pad_id`: a real token may share the pad's id
    # in hand-made tests, and lengths are what padding means.
    src_lengths = np.array([len(s) for s in sources])
    tgt_lengths = np.array([len(t) + 1 for t in targets])
    src_pad = np.arange(src.shape[1])[None, :] >= src_lengths[:, None]
    tgt_pad = np.arange(tgt_in.shape[1])[None, :] >= tgt_lengths[:, None]
    return Batch(
        src=minitorch.from_numpy(src),
        tgt_in=minitorch.from_numpy(tgt_in),
        tgt_out=minitorch.from_numpy(tgt_out),
        src_key_padding_mask=minitorch.from_numpy(src_pad),
        tgt_key_padding_mask=minitorch.from_numpy(tgt_pad),
        tgt_mask=causal_mask(tgt_in.shape[1]),
        n_tokens=int(tgt_lengths.sum()),
    )


def bucket_indices(lengths: Sequence[int], batch_size: int, *, max_tokens: Optional[int] = None,
                   shuffle: bool = True, seed: int = 0, epoch: int = 0) -> List[List[int]]:
    """Group example indices into batches of similar length (little padding), as index lists.

    Examples are shuffled, then stably sorted by length, so equal-length examples land in
    different batches each epoch; batches are cut every ``batch_size`` examples, or earlier when
    ``max_tokens`` (padded tokens: rows × longest row) would be exceeded; finally the batch order
    is shuffled. Everything is drawn from ``numpy.random.default_rng((seed, epoch))``, so a
    (seed, epoch) pair always gives the same batches: resuming mid-run replays the same order.
    """
    if batch_size < 1:
        raise ValueError(f"bucket_indices: batch_size must be >= 1, got {batch_size}")
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"bucket_indices: max_tokens must be >= 1, got {max_tokens}")
    rng = np.random.default_rng((seed, epoch))
    order = rng.permutation(len(lengths)) if shuffle else np.arange(len(lengths))
    lengths = np.asarray(lengths)
    order = order[np.argsort(lengths[order], kind="stable")]
    batches: List[List[int]] = []
    current: List[int] = []
    longest = 0
    for index in order.tolist():
        grown = max(longest, int(lengths[index]))
        too_many_tokens = (max_tokens is not None and current
                           and grown * (len(current) + 1) > max_tokens)
        if len(current) == batch_size or too_many_tokens:
            batches.append(current)
            current, grown = [], int(lengths[index])
        current.append(index)
        longest = grown
    if current:
        batches.append(current)
    if shuffle:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def iterate_batches(pairs: Sequence[Tuple[TokenIds, TokenIds]], batch_size: int, pad_id: int,
                    bos_id: int, eos_id: int, *, max_tokens: Optional[int] = None,
                    shuffle: bool = True, seed: int = 0, epoch: int = 0) -> Iterator[Batch]:
    """Yield :class:`Batch` es over ``pairs`` bucketed by length (see :func:`bucket_indices`).

    The bucketing length of a pair is the longer of its padded source and target (``+1`` for the
    shift), which is what a batch's cost grows with.
    """
    lengths = [max(len(src), len(tgt) + 1) for src, tgt in pairs]
    for indices in bucket_indices(lengths, batch_size, max_tokens=max_tokens, shuffle=shuffle,
                                  seed=seed, epoch=epoch):
        yield make_batch([pairs[i] for i in indices], pad_id, bos_id, eos_id)


def count_batches(pairs: Sequence[Tuple[TokenIds, TokenIds]], batch_size: int, *,
                  max_tokens: Optional[int] = None) -> int:
    """How many batches :func:`iterate_batches` yields per epoch (for a progress bar)."""
    lengths = [max(len(src), len(tgt) + 1) for src, tgt in pairs]
    return len(bucket_indices(lengths, batch_size, max_tokens=max_tokens, shuffle=False))
