"""Position information for sequence models: the fixed sinusoids of "Attention is all you
need" (``SinusoidalPositionalEncoding``) and a learned table (``LearnedPositionalEmbedding``).

Both add the position vectors to their input (token embeddings), then apply dropout. Input is
(L, N, E) by default, (N, L, E) with ``batch_first=True`` (PyTorch's layers' convention), or
unbatched (L, E). ``forward(x, start=0)`` encodes positions start..start+L−1, so incremental
decoding can feed one new token at position ``start``.
These two classes are minitorch's own (PyTorch has none); their names and arguments follow the
PyTorch tutorial's ``PositionalEncoding``.
May import: ``.module``, ``.parameter``, ``.dropout``, ``.init``, ``minitorch``.
"""
import math

import numpy as np

from ..creation import empty
from ..tensor import Tensor
from . import init
from .dropout import Dropout
from .module import Module
from .parameter import Parameter


def _positions(x, start, max_len, batch_first, name):
    """(length, lead shape to broadcast the (length, E) table to x) after checking the range."""
    if x.ndim not in (2, 3):
        raise ValueError(f"{name}: input must be (L, N, E), (N, L, E) or (L, E), got shape "
                         f"{tuple(x.shape)}")
    if not isinstance(start, int) or isinstance(start, bool) or start < 0:
        raise ValueError(f"{name}: start must be a non-negative int, got {start!r}")
    length = x.shape[1] if (x.ndim == 3 and batch_first) else x.shape[0]
    if start + length > max_len:
        raise ValueError(f"{name}: positions up to {start + length} (start={start} + length="
                         f"{length}) exceed max_len={max_len}")
    return length


def _add_table(x, table, batch_first):
    """x + table, table (L, E) placed along x's sequence dim."""
    if x.ndim == 3 and not batch_first:
        table = table.unsqueeze(1)  # (L, 1, E) broadcasts over the batch
    return x + table


class SinusoidalPositionalEncoding(Module):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).

    The table is a non-persistent buffer ``pe`` (max_len, d_model): it is recomputed, never
    saved in a state_dict. Positions past ``max_len`` raise ValueError naming both numbers.
    """

    def __init__(self, d_model, max_len=5000, dropout=0.0, batch_first=False):
        super().__init__()
        if d_model <= 0 or max_len <= 0:
            raise ValueError(f"SinusoidalPositionalEncoding: d_model and max_len must be > 0, "
                             f"got d_model={d_model}, max_len={max_len}")
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        position = np.arange(max_len, dtype=np.float64)[:, None]
        div_term = np.exp(np.arange(0, d_model, 2, dtype=np.float64)
                          * (-math.log(10000.0) / d_model))
        pe = np.zeros((max_len, d_model))
        pe[:, 0::2] = np.sin(position * div_term)
        pe[:, 1::2] = np.cos(position * div_term)[:, :d_model // 2]  # odd d_model: one fewer
        self.register_buffer("pe", Tensor._make(pe.astype(np.float32)), persistent=False)
        self.dropout = Dropout(dropout)

    def forward(self, x, start=0):
        length = _positions(x, start, self.max_len, self.batch_first,
                            "SinusoidalPositionalEncoding")
        table = self.pe[start:start + length]
        if table.dtype is not x.dtype:
            table = table.to(x.dtype)
        return self.dropout(_add_table(x, table, self.batch_first))

    def extra_repr(self):
        return f"d_model={self.d_model}, max_len={self.max_len}, batch_first={self.batch_first}"


class LearnedPositionalEmbedding(Module):
    """A learned table ``weight`` (max_len, d_model), initialised N(0, 0.02²) (GPT-2's choice),
    added to the input at positions start..start+L−1."""

    def __init__(self, max_len, d_model, dropout=0.0, batch_first=False):
        super().__init__()
        if d_model <= 0 or max_len <= 0:
            raise ValueError(f"LearnedPositionalEmbedding: d_model and max_len must be > 0, got "
                             f"d_model={d_model}, max_len={max_len}")
        self.d_model, self.max_len, self.batch_first = d_model, max_len, batch_first
        self.weight = Parameter(empty(max_len, d_model))
        init.normal_(self.weight, 0.0, 0.02)
        self.dropout = Dropout(dropout)

    def forward(self, x, start=0):
        length = _positions(x, start, self.max_len, self.batch_first,
                            "LearnedPositionalEmbedding")
        return self.dropout(_add_table(x, self.weight[start:start + length], self.batch_first))

    def extra_repr(self):
        return f"{self.max_len}, {self.d_model}, batch_first={self.batch_first}"
