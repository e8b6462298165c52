"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: same arguments, parameter names
(``in_proj_weight``/``in_proj_bias``, or ``q/k/v_proj_weight`` when kdim/vdim differ, and
``out_proj``), initialisation, shapes and mask conventions, so a PyTorch state_dict loads as is;
and ``KVCache``, the keys/values of past positions for incremental decoding (PyTorch's layer
has none: ``forward(..., cache=...)`` is minitorch's own keyword).

Heads are a reshape/transpose of the projections, (N, L, E) → (N, H, L, E/H), copied once to
be contiguous (``ops.fused.split_heads`` and ``merge_heads``: one node and one copy each way);
the scores of all heads are one batched matmul and one fused softmax (scale, combined mask) on
the kernels. Where the weights are not wanted (``need_weights=False``, as the Transformer
layers ask) and there is no cache, ``ops.fused.attention_on_rows`` reads the heads in place in
the projections' rows instead, and writes its output and gradients in place: no copies at all
(dropout on the weights goes in with them, as factors drawn like the dropout node's). A
cached call for inference (no gradient, no dropout) takes ``_step`` instead: the projections
on the arrays, the new keys/values written into the cache's buffers, and the attention as one
``attention_step`` kernel call.
May import: ``.module``, ``.parameter``, ``.init``, ``.linear``, ``.functional``, ``minitorch``.
"""
import math

import numpy as np

from .. import backends, ops
from ..autograd import is_grad_enabled
from ..creation import empty
from ..device_arrays import array_module, on_device_of, to_host
from ..dtype import bool_, float32, float64
from ..ops.fused import attention_on_rows, merge_heads, split_heads
from ..ops.linalg import LinearPair, linear_arrays
from ..tensor import Tensor
from . import functional as F
from . import init
from .linear import Linear
from .module import Module
from .parameter import Parameter


class KVCache:
    """One attention's projected keys and values, (N, num_heads, S, head_dim) each, kept between
    calls so that decoding one position at a time never recomputes the past.

    ``static=False`` (self-attention): each call appends the projections of its ``key``/``value``
    (the new positions) to those of the earlier calls. ``static=True`` (cross-attention over a
    fixed memory): the first call projects ``key``/``value``; later calls reuse them and do not
    read their ``key``/``value``. ``weights`` holds the last call's attention weights
    (N, num_heads, L, S), for drawing them (None after a reorder). ``reorder(index)`` keeps
    batch rows ``index`` (beam search moves hypotheses between rows).

    Without autograd (keys and values that need no gradient), the cache keeps its own buffers,
    in the layout of one attention step (``backends.current().attention_step``): the keys
    transposed, (N, H, head_dim, capacity), and the values (N, H, capacity, head_dim). A growing
    cache writes each call's positions in place, doubling its capacity when full (starting at
    ``capacity``, default 16, positions), and reorders rows into a second pair of buffers: a
    step allocates nothing. ``keys``/``values`` are then views of the first S positions, valid
    until the next ``reorder`` (copy them to keep them). With autograd, they are the Tensors
    of the graph, joined with ``cat``.
    """

    def __init__(self, static=False, capacity=16):
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"KVCache: capacity must be a positive int, got {capacity!r}")
        self.static = static
        self.capacity = capacity
        self.keys = self.values = self.weights = None
        self._keys_t = self._values = None  # the buffers (arrays), when no gradient flows
        self._spare = None  # reorder's target buffers, swapped with the live ones
        self._length = 0
        # static: the row of the first call that each row's keys/values were projected from;
        # a reorder that maps every row to one of the same origin has nothing to move.
        self._origin = None
        self.step_plan = None  # a backend's plan of the decoder layer step, kept for the decode

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def update(self, keys, values):
        """Store (static, or empty cache) or append the new positions' keys/values."""
        if keys.requires_grad or values.requires_grad:
            self._keys_t = self._values = self._spare = self._origin = None
            if self.keys is None or self.static:
                self.keys, self.values = keys, values
            else:
                self.keys = ops.cat([self.keys, keys], dim=2)
                self.values = ops.cat([self.values, values], dim=2)
            return
        if self.static:
            xp = array_module(keys._data)
            self._keys_t = xp.ascontiguousarray(keys._data.swapaxes(-1, -2))
            self._values = xp.ascontiguousarray(values._data)
            self._length = keys.shape[2]
            self._origin = np.arange(keys.shape[0])
        else:
            if self._keys_t is None and self.keys is not None:  # after autograd steps: their
                past_keys, past_values = self.keys._data, self.values._data  # values, detached
                self.keys = self.values = None
                self._append(past_keys, past_values)
            self._append(keys._data, values._data)
        self._publish()

    def _append(self, keys, values):
        n, h, new, d = keys.shape
        start, stop = self._length, self._length + new
        if self._keys_t is not None and self._keys_t.shape[0] != n and start:
            raise ValueError(f"KVCache: the cache holds {self._keys_t.shape[0]} batch rows, the "
                             f"new keys {n}")
        if self._keys_t is None or self._keys_t.shape[0] != n:
            start, stop = 0, new
            self._allocate(array_module(keys), n, h, d, values.shape[3],
                           max(self.capacity, stop), keys.dtype)
        elif stop > self._keys_t.shape[3]:
            self._grow(stop)
        if new == 1:  # a decoding step: copies along the head dim, not one element per row
            self._keys_t[..., start] = keys[:, :, 0]
            self._values[:, :, start] = values[:, :, 0]
        else:
            self._keys_t[..., start:stop] = keys.swapaxes(-1, -2)
            self._values[:, :, start:stop] = values
        self._length = stop

    def _grow(self, stop):
        """Buffers of double the capacity (at least ``stop`` positions), the first ones kept."""
        kt, v, start = self._keys_t, self._values, self._length
        n, h, d = kt.shape[:3]
        self._allocate(array_module(kt), n, h, d, v.shape[3], max(2 * kt.shape[3], stop),
                       kt.dtype)
        self._keys_t[..., :start] = kt[..., :start]
        self._values[:, :, :start] = v[:, :, :start]

    def step_buffers(self, new):
        """(keys buffer (N, H, D, capacity), values buffer (N, H, capacity, Dv), length) with
        room for ``new`` more positions, for a kernel that writes them in place and attends:
        then ``advance(new)``. None until the cache keeps buffers of its own (no autograd,
        after its first call)."""
        if self._keys_t is None:
            return None
        if self._length + new > self._keys_t.shape[3]:
            self._grow(self._length + new)
        return self._keys_t, self._values, self._length

    def advance(self, new):
        """Count ``new`` positions written into the buffers of ``step_buffers``."""
        self._length += new
        self._publish()

    def _allocate(self, xp, n, h, d, dv, capacity, dtype):
        self._keys_t = xp.empty((n, h, d, capacity), dtype)
        self._values = xp.empty((n, h, capacity, dv), dtype)
        self._spare = None

    def _publish(self):
        """keys/values: Tensor views of the buffers' first positions."""
        t = self._length
        self.keys = Tensor._make(self._keys_t[..., :t].swapaxes(-1, -2))
        self.values = Tensor._make(self._values[:, :, :t])

    def reorder(self, index):
        """Keep batch rows ``index`` (int64 Tensor, repeats allowed), in that order."""
        self.weights = None
        if self.keys is None:
            return
        if self._keys_t is None:  # autograd: the graph's own ops
            self.keys = self.keys.index_select(0, index)
            self.values = self.values.index_select(0, index)
            return
        rows = to_host(index._data).reshape(-1)  # checked and compared on the host
        n = self._keys_t.shape[0]
        if rows.size and (rows.min() < -n or rows.max() >= n):
            raise IndexError(f"KVCache.reorder: index out of range for {n} rows (min "
                             f"{rows.min()}, max {rows.max()})")
        rows = np.where(rows < 0, rows + n, rows)
        if self.static:
            origin = self._origin[rows]
            if origin.shape == self._origin.shape and np.array_equal(origin, self._origin):
                return  # every row gets the keys/values it holds already
            self._origin = origin
        xp = array_module(self._keys_t)
        if self._spare is None or self._spare[0].shape[0] != rows.size:
            self._spare = (xp.empty((rows.size,) + self._keys_t.shape[1:], self._keys_t.dtype),
                           xp.empty((rows.size,) + self._values.shape[1:], self._values.dtype))
        kt, v = self._spare
        if xp is np:  # mode="wrap" (rows checked above) writes straight into `out`: "raise" buffers
            np.take(self._keys_t, rows, axis=0, out=kt, mode="wrap")
            np.take(self._values, rows, axis=0, out=v, mode="wrap")
        else:
            rows = on_device_of(rows, self._keys_t)
            xp.take(self._keys_t, rows, axis=0, out=kt)
            xp.take(self._values, rows, axis=0, out=v)
        self._spare = (self._keys_t, self._values)
        self._keys_t, self._values = kt, v
        self._publish()

    def _step_operands(self):
        """(keys (N, H, S, D) as the transpose of the keys buffer, values (N, H, S, Dv)):
        the arrays attention_step reads without copies."""
        t = self._length
        return self._keys_t[..., :t].swapaxes(-1, -2), self._values[:, :, :t]


class MultiheadAttention(Module):
    """Attention of ``query`` over ``key``/``value`` with ``num_heads`` heads.

    Shapes: query (L, N, E), key (S, N, kdim), value (S, N, vdim), or (N, L, E)... with
    ``batch_first=True``, or unbatched (L, E). Masks as PyTorch: ``key_padding_mask`` (N, S)
    and ``attn_mask`` (L, S) or (N·num_heads, L, S); bool True = NOT allowed to attend,
    float masks are added to the scores. Returns (attn_output, attn_weights or None), the
    weights averaged over heads (N, L, S) unless ``average_attn_weights=False`` (N, H, L, S).

    Incremental decoding (minitorch's own): with ``cache=`` a :class:`KVCache`, the keys and
    values are the cache's (see there: a growing one appends this call's, a static one is
    projected once). The masks then cover all S keys, cached ones included. A cached
    self-attention that feeds one position at a time needs no causal mask: the cache holds only
    positions at or before it. ``is_causal=True`` with several new positions masks each one's
    future among them (the new queries are the last L of the S positions).

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
        if self._qkv_same_embed_dim and query is key and key is value:
            return self._split_heads(F.linear(query, self.in_proj_weight, self.in_proj_bias), 3)
        return (self._project_query(query),) + self._project_key_value(key, value)

    def _project_query(self, query):
        E, b = self.embed_dim, self.in_proj_bias
        w = self.in_proj_weight[:E] if self._qkv_same_embed_dim else self.q_proj_weight
        return self._split_heads(F.linear(query, w, None if b is None else b[:E]), 1)[0]

    def _project_key_value(self, key, value):
        E, w, b = self.embed_dim, self.in_proj_weight, self.in_proj_bias

        def bias(start, stop):
            return None if b is None else b[start:stop]
        if not self._qkv_same_embed_dim:
            return (self._split_heads(F.linear(key, self.k_proj_weight, bias(E, 2 * E)), 1)[0],
                    self._split_heads(F.linear(value, self.v_proj_weight, bias(2 * E, 3 * E)),
                                      1)[0])
        if key is value:
            return self._split_heads(F.linear(key, w[E:], bias(E, 3 * E)), 2)
        return (self._split_heads(F.linear(key, w[E:2 * E], bias(E, 2 * E)), 1)[0],
                self._split_heads(F.linear(value, w[2 * E:], bias(2 * E, 3 * E)), 1)[0])

    def _split_heads(self, x, parts):
        """(N, L, parts·E) → ``parts`` contiguous tensors (N, H, L, E/H)."""
        return split_heads(x, parts, self.num_heads)

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
                attn_mask=None, average_attn_weights=True, is_causal=False, cache=None):
        # A static cache projected its keys/values on the first call: key and value are not read.
        reuse = cache is not None and cache.static and cache.keys is not None
        inputs = (("query", query, self.embed_dim),) + (() if reuse else (
            ("key", key, self.kdim), ("value", value, self.vdim)))
        batched = query.ndim == 3
        if query.ndim not in (2, 3) or any(t.ndim != query.ndim for _, t, _ in inputs):
            shapes = ", ".join(f"{name} {tuple(t.shape)}" for name, t, _ in inputs)
            raise ValueError(f"MultiheadAttention: query, key and value must all be 3-D "
                             f"(batched) or 2-D (unbatched), got {shapes}")
        for name, t, dim in inputs:
            if t.shape[-1] != dim:
                raise ValueError(f"MultiheadAttention: {name}'s last dim must be {dim}, got "
                                 f"shape {tuple(t.shape)}")
        if cache is not None and self._can_step(query, key, value, attn_mask, key_padding_mask,
                                                cache):
            out, weights = self._cached_step(query, key_padding_mask, is_causal, cache)
            if not need_weights:
                return out, None
            return out, weights.mean(dim=1) if average_attn_weights else weights
        if not batched and key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
        same = query is key, key is value
        query = self._batch_first(query, batched)
        n, tgt_len = query.shape[0], query.shape[1]
        past = 0 if cache is None or cache.static else len(cache)
        if cache is not None and cache.keys is not None and cache.keys.shape[0] != n:
            raise ValueError(f"MultiheadAttention: the cache holds {cache.keys.shape[0]} batch "
                             f"rows, but the query has {n}")
        if cache is None and not need_weights and self._attends_on_rows(query, key, value):
            out = self._attention_on_rows(query, key, same, attn_mask, key_padding_mask,
                                          is_causal, batched)
            if not batched:
                out = out.squeeze(0)
            elif not self.batch_first:
                out = out.transpose(0, 1)
            return out, None
        if reuse:
            q, k, v = self._project_query(query), cache.keys, cache.values
        else:
            # Keep identity, so self-attention takes the one-GEMM path.
            key = query if same[0] else self._batch_first(key, batched)
            value = key if same[1] else self._batch_first(value, batched)
            if key.shape[0] != n or value.shape[0] != n or value.shape[1] != key.shape[1]:
                raise ValueError(f"MultiheadAttention: key and value must have query's batch "
                                 f"size {n} and one length, got key {tuple(key.shape)} and "
                                 f"value {tuple(value.shape)} (batch-first view)")
            q, k, v = self._project_heads(query, key, value)
            if cache is not None:
                cache.update(k, v)
                k, v = cache.keys, cache.values
        src_len = k.shape[2]
        causal = bool(is_causal) and attn_mask is None
        if causal and past:  # the kernel's causal mask is top-left; the new queries are the last
            causal = False
            if tgt_len > 1:
                attn_mask = Tensor._make(on_device_of(
                    np.triu(np.ones((tgt_len, src_len), bool), past + 1), q._data))
        mask = self._combined_mask(attn_mask, key_padding_mask, n, tgt_len, src_len, q.dtype)
        dropout_p = self.dropout if self.training else 0.0
        out, weights = F._attention(q, k, v, mask, causal, 1.0 / math.sqrt(self.head_dim),
                                    dropout_p)
        if cache is not None:
            cache.weights = weights
        out = self.out_proj(merge_heads(out))
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(dim=1)
        return out, (weights.squeeze(0) if not batched else weights)

    # ------------------------------------------------------------------ weights not wanted
    def _attends_on_rows(self, query, key, value):
        """Whether a call whose weights are not wanted (and with no cache) can take
        ``_attention_on_rows``: packed projection weights, key the same tensor as value, numpy
        arrays of one dtype, float32 or float64 (the kernels write into views of their
        outputs, which the half dtypes' float32 detour would not), in the inputs and the
        projection."""
        if not self._qkv_same_embed_dim or key is not value:
            return False
        weight, bias = self.in_proj_weight, self.in_proj_bias
        dtype = weight.dtype
        return (dtype in (float32, float64) and query.dtype is dtype and key.dtype is dtype
                and (bias is None or bias.dtype is dtype)
                and type(query._data) is np.ndarray and type(key._data) is np.ndarray
                and type(weight._data) is np.ndarray)

    def _attention_on_rows(self, query, key, same, attn_mask, key_padding_mask, is_causal,
                           batched):
        """The attention's (N, L, E) output for ``query`` already batch first (and the padding
        mask batched), before the squeeze/transpose back: the projections, then
        ``ops.fused.attention_on_rows`` reading the heads in place (no split into heads, no
        merge back: the same values as the general path, bit for bit)."""
        key = query if same[0] else self._batch_first(key, batched)
        n, tgt_len, src_len = query.shape[0], query.shape[1], key.shape[1]
        if key.shape[0] != n:
            raise ValueError(f"MultiheadAttention: key and value must have query's batch size "
                             f"{n} and one length, got key {tuple(key.shape)} and value "
                             f"{tuple(key.shape)} (batch-first view)")
        mask = self._combined_mask(attn_mask, key_padding_mask, n, tgt_len, src_len, query.dtype)
        causal = bool(is_causal) and attn_mask is None
        scale = 1.0 / math.sqrt(self.head_dim)
        dropout_p = self.dropout if self.training else 0.0
        E, w, b = self.embed_dim, self.in_proj_weight, self.in_proj_bias
        if mask is not None and mask.requires_grad:
            # A learned additive mask gets its gradient in the general path's graph.
            q, k, v = self._project_heads(query, key, key)
            rows = merge_heads(F._attention(q, k, v, mask, causal, scale, dropout_p)[0])
            return self.out_proj(rows)
        if same[0]:
            q_rows, kv_rows = F.linear(query, w, b), None
        else:
            q_rows, kv_rows = LinearPair.apply(query, key, w, b, E)  # no slices of w and b
        # drawn after the projections, as the general path's dropout node draws them
        keep = F._attention_keep((n, self.num_heads, tgt_len, src_len), dropout_p,
                                 query._data.dtype)
        rows = attention_on_rows(q_rows, kv_rows, self.num_heads, mask, causal, scale, keep)
        return self.out_proj(rows)

    # ------------------------------------------------------------------ one decoding step
    def _can_step(self, query, key, value, attn_mask, key_padding_mask, cache):
        """Whether a cached call can take ``_cached_step``: batched, packed projection weights,
        no gradient to record, no dropout, at most a bool key padding mask, float32/64 on a
        backend with attention_step, and a growing self-attention cache or a static one whose
        keys/values are projected (its first call, which projects them, takes the general
        path)."""
        if cache.static:
            if cache._keys_t is None:
                return False
        elif not (query is key and key is value):
            return False
        if (query.ndim != 3 or not self._qkv_same_embed_dim or attn_mask is not None
                or (self.training and self.dropout > 0)):
            return False
        if key_padding_mask is not None and key_padding_mask.dtype is not bool_:
            return False
        weight, bias = self.in_proj_weight, self.in_proj_bias
        dtype = query._data.dtype
        if (dtype.kind != "f" or dtype.itemsize < 4 or weight._data.dtype != dtype
                or (bias is not None and bias._data.dtype != dtype)
                or not hasattr(backends.current(), "attention_step")):
            return False
        if is_grad_enabled() and (query.requires_grad or any(
                p.requires_grad for p in self.parameters())):
            return False
        return True

    def _cached_step(self, query, key_padding_mask, is_causal, cache):
        """``forward`` with a cache, for inference (``_can_step``): (output, weights (N, H, L,
        S)), from ``_step`` on the arrays."""
        x = query._data if self.batch_first else query._data.swapaxes(0, 1)
        mask = None if key_padding_mask is None else key_padding_mask._data
        out, weights = self._step(x, mask, is_causal, cache)
        return Tensor._make(out if self.batch_first else out.swapaxes(0, 1)), weights

    def _step(self, x, key_padding_mask, is_causal, cache):
        """One cached call on arrays, batch first: x (N, L, E) → (output array (N, L, E),
        weights Tensor (N, H, L, S)). The projections are GEMMs on the arrays, the new keys and
        values are written into the cache's buffers, and the attention of the new positions is
        one ``attention_step`` call: no autograd node, a handful of kernel calls. Only for
        what ``_can_step`` accepts; ``key_padding_mask`` is a bool array or None."""
        kernels, E, H = backends.current(), self.embed_dim, self.num_heads
        n, length = x.shape[0], x.shape[1]
        if cache.keys is not None and cache.keys.shape[0] != n:
            raise ValueError(f"MultiheadAttention: the cache holds {cache.keys.shape[0]} batch "
                             f"rows, but the query has {n}")
        rows = x.reshape(n * length, E)
        weight = self.in_proj_weight._data
        bias = None if self.in_proj_bias is None else self.in_proj_bias._data
        past = 0
        if cache.static:
            q = linear_arrays(rows, weight[:E], None if bias is None else bias[:E])
            q = q.reshape(n, length, H, self.head_dim).swapaxes(1, 2)
        else:
            past = len(cache)
            qkv = linear_arrays(rows, weight, bias)
            qkv = qkv.reshape(n, length, 3, H, self.head_dim)
            q = qkv[:, :, 0].swapaxes(1, 2)
            cache.update(Tensor._make(qkv[:, :, 1].swapaxes(1, 2)),
                         Tensor._make(qkv[:, :, 2].swapaxes(1, 2)))
        k, v = cache._step_operands()
        mask = None
        if key_padding_mask is not None:
            if key_padding_mask.shape != (n, k.shape[2]):
                raise ValueError(f"MultiheadAttention: key_padding_mask must have shape "
                                 f"{(n, k.shape[2])} (N, S), got {key_padding_mask.shape}")
            mask = key_padding_mask.reshape(n, 1, 1, k.shape[2])
        causal = past if is_causal else None  # the new queries are the last positions
        out, weights = kernels.attention_step(q, k, v, 1.0 / math.sqrt(self.head_dim), mask,
                                              causal)
        cache.weights = weights = Tensor._make(weights)
        out_proj = self.out_proj
        out_bias = out_proj.bias
        out = linear_arrays(out.reshape(n * length, E), out_proj.weight._data,
                            None if out_bias is None else out_bias._data)
        return out.reshape(n, length, E), weights

    def _batch_first(self, x, batched):
        """(N, L, E) view of a (L, N, E), (N, L, E) or unbatched (L, E) input."""
        if not batched:
            return x.unsqueeze(0)
        return x if self.batch_first else x.transpose(0, 1)

    def extra_repr(self):
        return ""
