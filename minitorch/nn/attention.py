"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: same arguments, parameter names
(``in_proj_weight``/``in_proj_bias``, or ``q/k/v_proj_weight`` when kdim/vdim differ, and
``out_proj``), initialisation, shapes and mask conventions, so a PyTorch state_dict loads as is.

Heads are a reshape/transpose of the projections, (N, L, E) → (N, H, L, E/H), copied once to
be contiguous; the scores of all heads are one batched matmul and one fused softmax (scale,
combined mask) on the kernels.
May import: ``.module``, ``.parameter``, ``.init``, ``.linear``, ``.functional``, ``minitorch``.
"""
import math

from ..creation import empty
from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter


class MultiheadAttention(Module):
    """Attention of ``query`` over ``key``/``value`` with ``num_heads`` heads.

    Shapes: query (L, N, E), key (S, N, kdim), value (S, N, vdim), or (N, L, E)... with
    ``batch_first=True``, or unbatched (L, E). Masks as PyTorch: ``key_padding_mask`` (N, S)
    and ``attn_mask`` (L, S) or (N·num_heads, L, S); bool True = NOT allowed to attend,
    float masks are added to the scores. Returns (attn_output, attn_weights or None), the
    weights averaged over heads (N, L, S) unless ``average_attn_weights=False`` (N, H, L, S).

    Differs from PyTorch: a query whose keys are all masked gets zero weights and a zero
    output (PyTorch gives NaN); ``is_causal=True`` without an ``attn_mask`` applies the causal
    mask itself (PyTorch requires the mask as well and treats the flag as a hint).
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not "
                                      "supported by minitorch")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"MultiheadAttention: embed_dim and num_heads must be > 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads}")
        if embed_dim % num_heads:
            raise ValueError(f"MultiheadAttention: embed_dim ({embed_dim}) must be divisible by "
                             f"num_heads ({num_heads})")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias)
        self.bias_k = self.bias_v = None
        self.add_zero_attn = False
        self._reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)

    # ------------------------------------------------------------------ pieces
    def _project_heads(self, query, key, value):
        """q, k, v projected and split into heads, each a contiguous (N, H, L, E/H) tensor.

        One GEMM for self-attention with the packed weight (and one for k and v together when
        key is value); then one copy into the heads layout, so that each attention matmul is a
        single batched GEMM (on the strided views, the backend loops over the batch instead).
        """
        E = self.embed_dim
        w, b = self.in_proj_weight, self.in_proj_bias

        def bias(start, stop):
            return None if b is None else b[start:stop]
        if not self._qkv_same_embed_dim:
            projections = ((query, self.q_proj_weight, bias(0, E)),
                           (key, self.k_proj_weight, bias(E, 2 * E)),
                           (value, self.v_proj_weight, bias(2 * E, 3 * E)))
            return tuple(self._split_heads(F.linear(x, w_x, b_x), 1)[0]
                         for x, w_x, b_x in projections)
        if query is key and key is value:
            return self._split_heads(F.linear(query, w, b), 3)
        q = self._split_heads(F.linear(query, w[:E], bias(0, E)), 1)[0]
        if key is value:
            return (q,) + self._split_heads(F.linear(key, w[E:], bias(E, 3 * E)), 2)
        k = self._split_heads(F.linear(key, w[E:2 * E], bias(E, 2 * E)), 1)[0]
        v = self._split_heads(F.linear(value, w[2 * E:], bias(2 * E, 3 * E)), 1)[0]
        return q, k, v

    def _split_heads(self, x, parts):
        """(N, L, parts·E) → ``parts`` contiguous tensors (N, H, L, E/H)."""
        n, length = x.shape[0], x.shape[1]
        heads = x.reshape(n, length, parts, self.num_heads, self.head_dim)
        return heads.permute(2, 0, 3, 1, 4).contiguous().unbind(0)

    def _combined_mask(self, attn_mask, key_padding_mask, n, tgt_len, src_len, dtype):
        """One mask of shape broadcastable to (N, H, L, S), kernel convention (True = excluded)."""
        mask = None
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (tgt_len, src_len):
                    raise ValueError(f"MultiheadAttention: the shape of the 2D attn_mask is "
                                     f"{tuple(attn_mask.shape)}, but should be "
                                     f"{(tgt_len, src_len)} (L, S)")
            elif attn_mask.ndim == 3:
                expected = (n * self.num_heads, tgt_len, src_len)
                if tuple(attn_mask.shape) != expected:
                    raise ValueError(f"MultiheadAttention: the shape of the 3D attn_mask is "
                                     f"{tuple(attn_mask.shape)}, but should be {expected} "
                                     "(N·num_heads, L, S)")
                attn_mask = attn_mask.reshape(n, self.num_heads, tgt_len, src_len)
            else:
                raise ValueError(f"MultiheadAttention: attn_mask must be 2-D or 3-D, got shape "
                                 f"{tuple(attn_mask.shape)}")
            mask = F._as_kernel_mask(attn_mask, dtype, "MultiheadAttention: attn_mask",
                                     true_means_excluded=True)
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (n, src_len):
                raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                                 f"{(n, src_len)} (N, S), got {tuple(key_padding_mask.shape)}")
            padding = F._as_kernel_mask(key_padding_mask.reshape(n, 1, 1, src_len), dtype,
                                        "MultiheadAttention: key_padding_mask",
                                        true_means_excluded=True)
            mask = F._merge_masks(mask, padding)
        return mask

    # ------------------------------------------------------------------ forward
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ValueError(f"MultiheadAttention: query, key and value must all be 3-D "
                             f"(batched) or 2-D (unbatched), got shapes {tuple(query.shape)}, "
                             f"{tuple(key.shape)} and {tuple(value.shape)}")
        for name, t, dim in (("query", query, self.embed_dim), ("key", key, self.kdim),
                             ("value", value, self.vdim)):
            if t.shape[-1] != dim:
                raise ValueError(f"MultiheadAttention: {name}'s last dim must be {dim}, got "
                                 f"shape {tuple(t.shape)}")
        same = query is key, key is value
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        if same[0]:
            key = query  # keep identity, so self-attention takes the one-GEMM path
        if same[1]:
            value = key
        n, tgt_len, src_len = query.shape[0], query.shape[1], key.shape[1]
        if key.shape[0] != n or value.shape[0] != n or value.shape[1] != src_len:
            raise ValueError(f"MultiheadAttention: key and value must have query's batch size "
                             f"{n} and one length, got key {tuple(key.shape)} and value "
                             f"{tuple(value.shape)} (batch-first view)")

        q, k, v = self._project_heads(query, key, value)
        mask = self._combined_mask(attn_mask, key_padding_mask, n, tgt_len, src_len, q.dtype)
        causal = bool(is_causal) and attn_mask is None
        dropout_p = self.dropout if self.training else 0.0
        out, weights = F._attention(q, k, v, mask, causal, 1.0 / math.sqrt(self.head_dim),
                                    dropout_p)
        out = out.transpose(1, 2).reshape(n, tgt_len, self.embed_dim)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return out, (weights.squeeze(0) if not batched else weights)

    def extra_repr(self):
        return ""
