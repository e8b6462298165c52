"""A BERT-style encoder: masked-token pre-training, then sentence classification on [CLS].

This file holds the three pieces of "BERT" (Devlin et al., 2019) at a size a laptop trains:

- :class:`WordVocabulary`: word-level tokens with the special tokens ``[PAD]``, ``[CLS]`` and
  ``[MASK]``; ``encode`` puts ``[CLS]`` first and refuses a word it does not know.
- :func:`mask_tokens`: BERT's masked-token selection. In each sequence,
  ``max(1, round(15%))`` of the ordinary tokens (never ``[PAD]``/``[CLS]``) are selected; of
  those, 80% become ``[MASK]``, 10% a random word, 10% stay as they are. The labels hold the
  original token at the selected positions and ``ignore_index`` everywhere else, so the loss
  (:func:`masked_lm_loss`) counts the selected positions only.
- :class:`BERT`: token + learned position embeddings, a stack of ``nn.TransformerEncoderLayer``
  (pre-norm, ``norm_first=True``, GELU, then a final LayerNorm: the layout of GPT-2 and of
  later encoders, which trains without warmup tricks at this size; the original BERT is
  post-norm), a masked-language-model head whose output matrix is the token embedding (tied
  weights) and a classification head on the ``[CLS]`` state. ``src_key_padding_mask``
  (True = padding, as ``nn.TransformerEncoder``) keeps padded positions out of every attention,
  so the ``[CLS]`` state does not depend on what padding holds.

The state_dict names the blocks as PyTorch does (``encoder.layers.0.self_attn.in_proj_weight``,
``encoder.layers.0.linear1.weight``, ``encoder.norm.weight``...), so the same model written
with ``torch.nn`` loads it one-to-one (``tests/test_bert_parity_torch.py``). There is no
segment (sentence A/B) embedding: the tasks here are single sentences.
May import: ``minitorch``, ``minitorch.nn``.
"""
from __future__ import annotations

import math
import re
from typing import Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.tensor import Tensor

PAD, CLS, MASK = "[PAD]", "[CLS]", "[MASK]"
SPECIAL_TOKENS = (PAD, CLS, MASK)  # ids 0, 1, 2 in every WordVocabulary
IGNORE_INDEX = -100  # F.cross_entropy's default ignore_index: the label of unselected positions


class WordVocabulary:
    """Word-level token ids: ``[PAD]`` = 0, ``[CLS]`` = 1, ``[MASK]`` = 2, then the words.

    Words are split on white space, with "¿" and "?" split off as tokens of their own (the
    corpus attaches them to the neighbouring word). Build one from sentences with
    :meth:`from_sentences`; :meth:`encode` raises ``ValueError`` on a word it was not built from
    (a word-level model has no embedding for it).
    """

    def __init__(self, words: Iterable[str]):
        words = list(dict.fromkeys(words))  # keeps the first occurrence's order
        clash = [w for w in words if w in SPECIAL_TOKENS]
        if clash:
            raise ValueError(f"WordVocabulary: {clash[0]!r} is a special token, not a word")
        self.tokens: List[str] = list(SPECIAL_TOKENS) + words
        self.ids = {token: i for i, token in enumerate(self.tokens)}
        self.pad_id, self.cls_id, self.mask_id = (self.ids[t] for t in SPECIAL_TOKENS)
        self.special_ids = tuple(self.ids[t] for t in SPECIAL_TOKENS)

    @staticmethod
    def tokenize(text: str) -> List[str]:
        return re.sub(r"([¿?])", r" \1 ", text).split()

    @classmethod
    def from_sentences(cls, sentences: Iterable[str]) -> "WordVocabulary":
        """The words of ``sentences``, sorted (so the ids do not depend on the order read)."""
        return cls(sorted({w for s in sentences for w in cls.tokenize(s)}))

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, text: str) -> List[int]:
        """``[CLS]`` then the ids of ``text``'s words; ``ValueError`` naming an unknown word."""
        ids = [self.cls_id]
        for word in self.tokenize(text):
            if word not in self.ids or word in SPECIAL_TOKENS:
                raise ValueError(f"WordVocabulary.encode: unknown token {word!r} in {text!r} "
                                 f"(the vocabulary knows {len(self) - len(SPECIAL_TOKENS)} "
                                 f"words)")
            ids.append(self.ids[word])
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        return " ".join(self.tokens[int(i)] for i in ids)


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int) -> Tuple[Tensor, Tensor]:
    """``(input_ids, src_key_padding_mask)``: int64 (N, L) right-padded with ``pad_id``, and
    bool (N, L), True at the padding; L is the longest sequence."""
    if not sequences:
        raise ValueError("pad_batch: no sequences")
    length = max(len(s) for s in sequences)
    ids = np.full((len(sequences), length), pad_id, dtype=np.int64)
    padding = np.ones((len(sequences), length), dtype=bool)
    for row, sequence in enumerate(sequences):
        ids[row, :len(sequence)] = sequence
        padding[row, :len(sequence)] = False
    return minitorch.tensor(ids), minitorch.tensor(padding)


def _as_numpy_ids(input_ids) -> np.ndarray:
    values = input_ids.numpy() if isinstance(input_ids, Tensor) else np.asarray(input_ids)
    if values.ndim != 2 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"input_ids must be (N, L) integer token ids, got shape "
                         f"{values.shape} of {values.dtype}")
    return values.astype(np.int64)


def mask_tokens(input_ids, *, mask_id: int, vocab_size: int, special_ids: Sequence[int],
                mask_prob: float = 0.15, rng: Union[int, np.random.Generator, None] = None,
                ignore_index: int = IGNORE_INDEX) -> Tuple[Tensor, Tensor]:
    """BERT's masked-token corruption of a batch: ``(inputs, labels)``, int64 (N, L) each.

    In each row, ``max(1, round(mask_prob × n))`` of its n ordinary tokens (ids not in
    ``special_ids``, which must hold the padding and ``[CLS]`` ids) are selected uniformly
    without replacement, as the original BERT's data script does; a row without ordinary
    tokens has none. Each selected token becomes ``mask_id`` with probability 0.8, a word drawn
    uniformly from the ordinary ids in ``[0, vocab_size)`` with 0.1 (it may draw the same word),
    and stays itself with 0.1. ``labels`` is the original id at the selected positions and
    ``ignore_index`` elsewhere. ``rng`` (a seed or a numpy Generator) makes it reproducible.
    """
    ids = _as_numpy_ids(input_ids)
    if not 0.0 < mask_prob < 1.0:
        raise ValueError(f"mask_tokens: mask_prob must be in (0, 1), got {mask_prob}")
    if mask_id not in special_ids:
        raise ValueError(f"mask_tokens: special_ids must include mask_id {mask_id}")
    rng = np.random.default_rng(rng)
    ordinary = np.setdiff1d(np.arange(vocab_size), np.asarray(special_ids))
    if (ids < 0).any() or (ids >= vocab_size).any():
        raise IndexError(f"mask_tokens: input_ids hold ids outside [0, {vocab_size})")
    maskable = ~np.isin(ids, special_ids)
    selected = np.zeros_like(maskable)
    for row in range(ids.shape[0]):
        positions = np.flatnonzero(maskable[row])
        if positions.size:
            count = max(1, math.floor(mask_prob * positions.size + 0.5))  # round half up
            selected[row, rng.choice(positions, size=count, replace=False)] = True
    labels = np.where(selected, ids, ignore_index)
    action = rng.random(ids.shape)  # < 0.8: [MASK]; 0.8-0.9: a random word; else keep
    inputs = ids.copy()
    inputs[selected & (action < 0.8)] = mask_id
    randomised = selected & (action >= 0.8) & (action < 0.9)
    inputs[randomised] = rng.choice(ordinary, size=int(randomised.sum()))
    return minitorch.tensor(inputs), minitorch.tensor(labels)


def masked_lm_loss(logits: Tensor, labels: Tensor, ignore_index: int = IGNORE_INDEX) -> Tensor:
    """Mean cross-entropy over the selected positions; logits (N, L, V), labels (N, L)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1),
                           ignore_index=ignore_index)


class MaskedLMHead(nn.Module):
    """BERT's prediction head: dense → GELU → LayerNorm → the token embedding matrix + bias.

    The output matrix is not a parameter of this head: :meth:`forward` takes the embedding
    weight (V, d), so the model's input and output token vectors are one tensor.
    """

    def __init__(self, d_model: int, vocab_size: int, layer_norm_eps: float = 1e-5):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps)
        self.bias = nn.Parameter(minitorch.zeros(vocab_size))

    def forward(self, hidden: Tensor, embedding_weight: Tensor) -> Tensor:
        return F.linear(self.norm(F.gelu(self.dense(hidden))), embedding_weight, self.bias)


class ClassificationHead(nn.Module):
    """Sentence logits from the ``[CLS]`` state: dense → tanh (BERT's pooler) → dropout →
    ``out_proj``."""

    def __init__(self, d_model: int, num_classes: int, dropout: float = 0.1):
        super().__init__()
        self.dense = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.out_proj = nn.Linear(d_model, num_classes)

    def forward(self, cls_state: Tensor) -> Tensor:
        return self.out_proj(self.dropout(minitorch.tanh(self.dense(cls_state))))


class BERT(nn.Module):
    """Encoder-only Transformer over token ids, with a masked-LM head and a [CLS] classifier.

    Shapes (N = batch, L = length <= ``max_positions``): ``input_ids`` (N, L) int64 with
    ``[CLS]`` first; ``src_key_padding_mask`` (N, L) bool, True = padding (None: the positions
    holding ``pad_id``). :meth:`forward` gives the final hidden states (N, L, d_model),
    :meth:`masked_lm_logits` (N, L, vocab_size), :meth:`classify` (N, num_classes) from the
    state at position 0. Every matrix starts N(0, 0.02) and every bias at zero, as BERT's.
    A length over ``max_positions`` raises ``ValueError``, an id outside the vocabulary
    ``IndexError``.
    """

    def __init__(self, vocab_size: int, num_classes: int = 2, d_model: int = 64,
                 nhead: int = 4, num_layers: int = 2, dim_feedforward: int = 256,
                 dropout: float = 0.1, max_positions: int = 32, pad_id: int = 0,
                 layer_norm_eps: float = 1e-5):
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("num_classes", num_classes),
                            ("d_model", d_model), ("nhead", nhead), ("num_layers", num_layers),
                            ("dim_feedforward", dim_feedforward),
                            ("max_positions", max_positions)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"BERT: {name} must be a positive int, got {value!r}")
        if d_model % nhead:
            raise ValueError(f"BERT: nhead ({nhead}) must divide d_model ({d_model})")
        if not 0 <= pad_id < vocab_size:
            raise ValueError(f"BERT: pad_id must be in [0, {vocab_size}), got {pad_id}")
        self.vocab_size, self.num_classes, self.d_model = vocab_size, num_classes, d_model
        self.max_positions, self.pad_id = max_positions, pad_id
        self.token_embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        self.position_embedding = nn.Embedding(max_positions, d_model)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                           activation="gelu", layer_norm_eps=layer_norm_eps,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers,
                                             norm=nn.LayerNorm(d_model, eps=layer_norm_eps))
        self.mlm_head = MaskedLMHead(d_model, vocab_size, layer_norm_eps)
        self.classifier = ClassificationHead(d_model, num_classes, dropout)
        self._init_weights()

    def _init_weights(self) -> None:
        for name, parameter in self.named_parameters():
            if parameter.dim() > 1:
                nn.init.normal_(parameter, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(parameter)
        with minitorch.no_grad():  # the padding row stays zero, as nn.Embedding promises
            self.token_embedding.weight[self.pad_id] = 0.0

    def _check(self, input_ids: Tensor, src_key_padding_mask: Optional[Tensor]) -> Tensor:
        """The padding mask to use, after checking both arguments."""
        if not isinstance(input_ids, Tensor) or input_ids.ndim != 2:
            raise ValueError(f"BERT: input_ids must be an (N, L) int64 Tensor, got "
                             f"{type(input_ids).__name__} of shape "
                             f"{tuple(getattr(input_ids, 'shape', ()))}")
        ids = input_ids.cpu().numpy()  # checked on the host (a copy for a GPU tensor)
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"BERT: input_ids must hold integer token ids, got {ids.dtype}")
        if ids.shape[1] > self.max_positions:
            raise ValueError(f"BERT: input_ids has length {ids.shape[1]}, longer than "
                             f"max_positions {self.max_positions}")
        outside = (ids < 0) | (ids >= self.vocab_size)
        if outside.any():
            raise IndexError(f"BERT: input_ids holds token id {int(ids[outside][0])}, outside "
                             f"the vocabulary [0, {self.vocab_size})")
        if src_key_padding_mask is None:
            return minitorch.tensor(ids == self.pad_id, device=input_ids.device)
        if tuple(src_key_padding_mask.shape) != ids.shape:
            raise ValueError(f"BERT: src_key_padding_mask must have input_ids' shape "
                             f"{ids.shape}, got {tuple(src_key_padding_mask.shape)}")
        return src_key_padding_mask

    def forward(self, input_ids: Tensor, src_key_padding_mask: Optional[Tensor] = None) -> Tensor:
        """Final hidden states (N, L, d_model), after the encoder's last LayerNorm."""
        padding = self._check(input_ids, src_key_padding_mask)
        positions = minitorch.arange(input_ids.shape[1], device=input_ids.device)
        x = self.dropout(self.token_embedding(input_ids) + self.position_embedding(positions))
        return self.encoder(x, src_key_padding_mask=padding)

    def masked_lm_logits(self, input_ids: Tensor,
                         src_key_padding_mask: Optional[Tensor] = None) -> Tensor:
        """Token logits (N, L, vocab_size) at every position (the loss picks the selected)."""
        return self.mlm_head(self(input_ids, src_key_padding_mask), self.token_embedding.weight)

    def classify(self, input_ids: Tensor, src_key_padding_mask: Optional[Tensor] = None) -> Tensor:
        """Class logits (N, num_classes) from the ``[CLS]`` state (position 0)."""
        return self.classifier(self(input_ids, src_key_padding_mask)[:, 0])
