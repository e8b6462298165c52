"""Attention of a recurrent decoder's state over a set of encoder states: ``AdditiveAttention``
(Bahdanau et al., 2015) and ``DotProductAttention`` (Luong et al.'s "general" score, scaled).

At decoder step t, with the previous state s_{t-1} (the *query*) and encoder states h_1..h_T
(the *keys*, and by default also the *values*)::

    e_{t,i} = f_att(s_{t-1}, h_i)          alignment scores
    a_{t,:} = softmax(e_{t,:})             attention weights, 0 on padding, summing to 1
    c_t     = Σ_i a_{t,i} h_i              the context vector the decoder reads

``AdditiveAttention``:  f_att(s, h) = vᵀ tanh(W_q s + W_k h + b), an MLP with one hidden layer.
``DotProductAttention``: f_att(s, h) = (W s)ᵀ h / √d_k.

Both return ``(context, weights)``. For an image the keys are a CNN's feature grid flattened to
(B, H·W, C). W_k h does not depend on the step, so a decoder computes ``project_keys(keys)`` once
per source and passes it as ``projected_keys=`` to every step.
May import: ``.module``, ``.linear``, ``.functional``, ``minitorch``.
"""
import math

from ..dtype import bool_
from ..tensor import Tensor
from . import functional as F
from .linear import Linear
from .module import Module


class _DecoderAttention(Module):
    """What both scores share: input checks, the padding mask, the softmax and the context."""

    def __init__(self, query_size, key_size):
        super().__init__()
        for name, n in (("query_size", query_size), ("key_size", key_size)):
            if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
                raise ValueError(f"{type(self).__name__}: {name} must be a positive int, "
                                 f"got {n!r}")
        self.query_size = query_size
        self.key_size = key_size

    def project_keys(self, keys):
        """The part of the score that depends on the keys only; computed once per source."""
        return keys

    def scores(self, query, projected_keys):
        """e: (B, Tq, T) from a query (B, Tq, query_size)."""
        raise NotImplementedError

    def forward(self, query, keys, values=None, key_padding_mask=None, projected_keys=None):
        """``query`` (B, query_size) or (B, Tq, query_size); ``keys`` (B, T, key_size);
        ``values`` (B, T, D_v), default ``keys``; ``key_padding_mask`` (B, T) bool, True where
        a key is padding. Returns ``context`` (B, D_v) or (B, Tq, D_v) and ``weights`` (B, T)
        or (B, Tq, T)."""
        name = type(self).__name__
        values = keys if values is None else values
        if query.ndim not in (2, 3) or query.shape[-1] != self.query_size:
            raise ValueError(f"{name}: query must be (B, {self.query_size}) or "
                             f"(B, Tq, {self.query_size}), got {tuple(query.shape)}")
        if keys.ndim != 3 or keys.shape[-1] != self.key_size or keys.shape[0] != query.shape[0]:
            raise ValueError(f"{name}: keys must be (B, T, {self.key_size}) with the query's "
                             f"batch size {query.shape[0]}, got {tuple(keys.shape)}")
        if values.ndim != 3 or values.shape[:2] != keys.shape[:2]:
            raise ValueError(f"{name}: values must be (B, T, D) with the keys' B and T "
                             f"{tuple(keys.shape[:2])}, got {tuple(values.shape)}")
        single_step = query.ndim == 2
        if single_step:
            query = query.unsqueeze(1)
        if projected_keys is None:
            projected_keys = self.project_keys(keys)
        scores = self.scores(query, projected_keys)                       # (B, Tq, T)
        if key_padding_mask is not None:
            scores = scores.masked_fill(self._padding(key_padding_mask, keys).unsqueeze(1),
                                        float("-inf"))
        weights = F.softmax(scores, dim=-1)
        context = weights @ values                                         # (B, Tq, D_v)
        if single_step:
            return context.squeeze(1), weights.squeeze(1)
        return context, weights

    def _padding(self, mask, keys):
        if not isinstance(mask, Tensor) or mask.dtype != bool_ \
                or tuple(mask.shape) != tuple(keys.shape[:2]):
            got = tuple(mask.shape) if isinstance(mask, Tensor) else type(mask).__name__
            raise ValueError(f"{type(self).__name__}: key_padding_mask must be a bool tensor of "
                             f"shape {tuple(keys.shape[:2])} (True = padding), got {got}")
        if bool(mask.all(dim=-1).any()):
            raise ValueError(f"{type(self).__name__}: key_padding_mask marks every key of a "
                             f"row as padding; nothing would be left to attend to")
        return mask


class AdditiveAttention(_DecoderAttention):
    """Bahdanau's score: e = vᵀ tanh(W_q s + W_k h + b), an MLP with ``hidden_size`` units.

    Parameters: ``query_proj`` (W_q, no bias), ``key_proj`` (W_k and b when ``bias``) and
    ``score_proj`` (v), each an ``nn.Linear``.
    """

    def __init__(self, query_size, key_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(query_size, key_size)
        if not isinstance(hidden_size, int) or isinstance(hidden_size, bool) or hidden_size <= 0:
            raise ValueError(f"AdditiveAttention: hidden_size must be a positive int, "
                             f"got {hidden_size!r}")
        self.hidden_size = hidden_size
        factory = {"device": device, "dtype": dtype}
        self.query_proj = Linear(query_size, hidden_size, bias=False, **factory)
        self.key_proj = Linear(key_size, hidden_size, bias=bias, **factory)
        self.score_proj = Linear(hidden_size, 1, bias=False, **factory)

    def project_keys(self, keys):
        return self.key_proj(keys)                                         # (B, T, hidden)

    def scores(self, query, projected_keys):
        hidden = (self.query_proj(query).unsqueeze(2) + projected_keys.unsqueeze(1)).tanh()
        return self.score_proj(hidden).squeeze(-1)                         # (B, Tq, T)

    def extra_repr(self):
        return (f"query_size={self.query_size}, key_size={self.key_size}, "
                f"hidden_size={self.hidden_size}")


class DotProductAttention(_DecoderAttention):
    """Luong's "general" score, scaled: e = (W s)ᵀ h / √key_size (``scaled=False`` drops the
    √). ``query_proj`` (W, no bias) maps the query into the keys' space."""

    def __init__(self, query_size, key_size, scaled=True, device=None, dtype=None):
        super().__init__(query_size, key_size)
        self.scaled = scaled
        self.query_proj = Linear(query_size, key_size, bias=False, device=device, dtype=dtype)

    def scores(self, query, projected_keys):
        scores = self.query_proj(query) @ projected_keys.transpose(1, 2)   # (B, Tq, T)
        return scores * (1.0 / math.sqrt(self.key_size)) if self.scaled else scores

    def extra_repr(self):
        return f"query_size={self.query_size}, key_size={self.key_size}, scaled={self.scaled}"
