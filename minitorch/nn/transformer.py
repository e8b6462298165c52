"""The Transformer of "Attention is all you need", as ``torch.nn.Transformer``: encoder and
decoder layers (post-norm, or pre-norm with ``norm_first=True``), their stacks, and the whole
encoder-decoder, with PyTorch's arguments and attribute names (``self_attn``,
``multihead_attn``, ``linear1``, ``linear2``, ``norm1..3``, ``dropout1..3``), so state_dict
keys match PyTorch's one-to-one. ``TransformerDecoderCache`` (minitorch's own) holds the decoder
stack's keys/values of past positions, so that decoding feeds one new position per call; such a
call for inference runs each layer as ``_cached_step``, the same blocks on the arrays (on the C
backend through ``backends.c_decoder_step.DecoderLayerStep``: the calls planned once a decode).
May import: ``.module``, ``.containers``, ``.attention``, ``.linear``, ``.dropout``,
``.normalization``, ``.functional``, ``.init``, ``minitorch``.
"""
import copy

import numpy as np

from .. import backends
from ..autograd import is_grad_enabled
from ..creation import full
from ..ops.linalg import linear_arrays
from ..ops.shape import triu
from ..tensor import Tensor
from . import functional as F
from . import init
from .attention import KVCache, MultiheadAttention
from .containers import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise ValueError(f"activation should be 'relu', 'gelu' or a callable, got {activation!r}")


def _activated_linear(linear, activation, x):
    """activation(linear(x)); for ReLU after a plain Linear (no hooks) one node,
    F._linear_relu (bias and ReLU in one pass after the GEMM), the same values bit for bit."""
    if activation is F.relu and _plain_linear(linear):
        return F._linear_relu(x, linear.weight, linear.bias)
    return activation(linear(x))


def _feed_forward(linear1, activation, dropout, linear2, x):
    """linear2(dropout(activation(linear1(x)))); with ReLU between plain Linears (no hooks)
    and no dropout at work, one node (F._feed_forward_relu), the same values bit for bit."""
    if (activation is F.relu and not (dropout.training and dropout.p > 0)
            and type(dropout) is Dropout and not dropout._may_have_hooks
            and _plain_linear(linear1) and _plain_linear(linear2)):
        return F._feed_forward_relu(x, linear1.weight, linear1.bias, linear2.weight,
                                    linear2.bias)
    return linear2(dropout(_activated_linear(linear1, activation, x)))


def _plain_linear(module):
    return type(module) is Linear and not module._may_have_hooks


def _get_clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual, dropout and LayerNorm.

    Post-norm (default): x = norm1(x + SA(x)); x = norm2(x + FF(x)).
    Pre-norm (``norm_first=True``): x = x + SA(norm1(x)); x = x + FF(norm2(x)).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)
        if dtype is not None:
            self.to(dtype)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=bool(is_causal))[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = _feed_forward(self.linear1, self.activation, self.dropout, self.linear2, x)
        return self.dropout2(x)


# The arrays of a decoder layer's step plan (backends/c_decoder_step.py): its name there, the
# submodule path and the parameter's name
_STEP_PARAMETERS = (
    ("in_proj_weight", ("self_attn",), "in_proj_weight"),
    ("in_proj_bias", ("self_attn",), "in_proj_bias"),
    ("out_proj_weight", ("self_attn", "out_proj"), "weight"),
    ("out_proj_bias", ("self_attn", "out_proj"), "bias"),
    ("cross_in_proj_weight", ("multihead_attn",), "in_proj_weight"),
    ("cross_in_proj_bias", ("multihead_attn",), "in_proj_bias"),
    ("cross_out_proj_weight", ("multihead_attn", "out_proj"), "weight"),
    ("cross_out_proj_bias", ("multihead_attn", "out_proj"), "bias"),
    ("linear1_weight", ("linear1",), "weight"),
    ("linear1_bias", ("linear1",), "bias"),
    ("linear2_weight", ("linear2",), "weight"),
    ("linear2_bias", ("linear2",), "bias"),
    ("norm1_weight", ("norm1",), "weight"),
    ("norm1_bias", ("norm1",), "bias"),
    ("norm2_weight", ("norm2",), "weight"),
    ("norm2_bias", ("norm2",), "bias"),
    ("norm3_weight", ("norm3",), "weight"),
    ("norm3_bias", ("norm3",), "bias"),
)


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then feed-forward (post- or pre-norm).

    Incremental decoding (minitorch's own): ``cache`` is a (self-attention, cross-attention)
    pair of :class:`KVCache` (growing, static), as ``TransformerDecoderCache.layers`` holds.
    ``tgt`` is then the new positions only; they attend to the cached ones too, and ``memory``
    is projected on the first call only. Fed one position at a time, no ``tgt_mask`` is needed
    (the cache holds only earlier positions); ``tgt_key_padding_mask`` covers all positions.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _get_activation_fn(activation)
        if dtype is not None:
            self.to(dtype)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False,
                cache=None):
        self_cache, cross_cache = (None, None) if cache is None else cache
        if cache is not None and self._can_step(tgt, memory, tgt_mask, memory_mask,
                                                tgt_key_padding_mask, memory_key_padding_mask,
                                                self_cache, cross_cache):
            return self._cached_step(tgt, tgt_key_padding_mask, memory_key_padding_mask,
                                     bool(tgt_is_causal), bool(memory_is_causal), self_cache,
                                     cross_cache)
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal, self_cache)
        mha = (memory, memory_mask, memory_key_padding_mask, memory_is_causal, cross_cache)
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), *mha)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, *sa))
            x = self.norm2(x + self._mha_block(x, *mha))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal, cache=None):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=bool(is_causal), cache=cache)[0]
        return self.dropout1(x)

    # ------------------------------------------------------------------ one decoding step
    def _can_step(self, tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                  memory_key_padding_mask, self_cache, cross_cache):
        """Whether a cached call can run as ``_cached_step``: inference (no gradient, no
        dropout), no attention masks but bool padding masks, a ReLU or exact GELU activation,
        LayerNorms over d_model, and both attentions able to step (see
        ``MultiheadAttention._can_step``: the first call, which projects the memory, is not)."""
        if tgt_mask is not None or memory_mask is not None or tgt.ndim != 3:
            return False
        if self.activation is not F.relu and self.activation is not F.gelu:
            return False
        if self.training and any(d.p > 0 for d in (self.dropout, self.dropout1, self.dropout2,
                                                   self.dropout3)):
            return False
        d_model = (self.self_attn.embed_dim,)
        if any(type(norm) is not LayerNorm or norm.normalized_shape != d_model
               for norm in (self.norm1, self.norm2, self.norm3)):
            return False
        if is_grad_enabled() and (tgt.requires_grad or any(
                p.requires_grad for p in self.parameters())):
            return False
        return (self.self_attn._can_step(tgt, tgt, tgt, None, tgt_key_padding_mask, self_cache)
                and self.multihead_attn._can_step(tgt, memory, memory, None,
                                                  memory_key_padding_mask, cross_cache))

    def _cached_step(self, tgt, tgt_key_padding_mask, memory_key_padding_mask, tgt_is_causal,
                     memory_is_causal, self_cache, cross_cache):
        """``forward`` for inference with a cache, on the arrays: the same blocks in the same
        order, each a kernel call (GEMMs, one attention step per attention, layer norms, the
        activation) and numpy adds, with no autograd node. Equal to the general path's output
        (the same kernels on the same values)."""
        kernels = backends.current()
        batch_first = self.self_attn.batch_first
        x = tgt._data if batch_first else tgt._data.swapaxes(0, 1)
        tgt_pad = None if tgt_key_padding_mask is None else tgt_key_padding_mask._data
        memory_pad = None if memory_key_padding_mask is None else memory_key_padding_mask._data
        own, cross = self_cache.step_buffers(x.shape[1]), cross_cache.step_buffers(0)
        plan = self._step_plan(x, tgt_pad, memory_pad, own, cross, self_cache)
        if plan is not None:  # the same kernels, called with what the plan worked out once
            (kt, v, past), (cross_kt, cross_v, _) = own, cross
            x, self_weights, cross_weights = plan(x, kt, v, past, tgt_pad, tgt_is_causal,
                                                  cross_kt, cross_v, memory_pad, memory_is_causal)
            self_cache.advance(plan.length)
            self_cache.weights = Tensor._make(self_weights)
            cross_cache.weights = Tensor._make(cross_weights)
            return Tensor._make(x if batch_first else x.swapaxes(0, 1))

        def norm(module, a):
            weight, bias = module.weight, module.bias
            return kernels.layer_norm_forward(a, None if weight is None else weight._data,
                                              None if bias is None else bias._data,
                                              module.eps)[0]

        def linear(module, a):
            bias = module.bias
            return linear_arrays(a, module.weight._data, None if bias is None else bias._data)

        def sa(a):
            return self.self_attn._step(a, tgt_pad, tgt_is_causal, self_cache)[0]

        def mha(a):
            return self.multihead_attn._step(a, memory_pad, memory_is_causal, cross_cache)[0]

        def ff(a):
            hidden = linear(self.linear1, a)
            hidden = (kernels.relu_forward(hidden) if self.activation is F.relu
                      else kernels.gelu_forward(hidden, "none"))
            return linear(self.linear2, hidden)

        if self.norm_first:
            x = x + sa(norm(self.norm1, x))
            x = x + mha(norm(self.norm2, x))
            x = x + ff(norm(self.norm3, x))
        else:
            x = norm(self.norm1, x + sa(x))
            x = norm(self.norm2, x + mha(x))
            x = norm(self.norm3, x + ff(x))
        return Tensor._make(x if batch_first else x.swapaxes(0, 1))

    def _step_plan(self, x, tgt_pad, memory_pad, own, cross, self_cache):
        """The C backend's ``DecoderLayerStep`` for this call, kept on ``self_cache`` for the
        decode (made again when a weight array or the sizes change); None where the checked
        kernels serve: another backend, GPU arrays, a cache, mask or input of another layout
        (the checked path also raises the errors a wrong size deserves). ``own``/``cross``: the
        two caches' ``step_buffers``."""
        if (type(x) is not np.ndarray or x.dtype.itemsize < 4 or not x.flags.c_contiguous
                or backends.backend() != "c"):
            return None
        n, length = x.shape[0], x.shape[1]
        if (own is None or cross is None or own[0].shape[0] != n or cross[0].shape[0] != n
                or cross[0].shape[3] != cross[2]):
            return None
        past, memory_length = own[2], cross[2]
        for mask, s in ((tgt_pad, past + length), (memory_pad, memory_length)):
            if mask is not None and (type(mask) is not np.ndarray or mask.shape != (n, s)
                                     or not mask.flags.c_contiguous):
                return None
        arrays = {}
        for name, path, parameter in _STEP_PARAMETERS:  # the registries: no __getattr__ misses
            module = self
            for part in path:
                module = module._modules[part]
            tensor = module._parameters.get(parameter)
            arrays[name] = None if tensor is None else tensor._data
        plan = self_cache.step_plan
        if plan is None or not plan.matches(arrays, n, length):
            from ..backends.c_decoder_step import DecoderLayerStep
            if any(a is not None and (type(a) is not np.ndarray or a.dtype != x.dtype
                                      or not (a.flags.c_contiguous and a.flags.aligned))
                   for a in arrays.values()):
                return None
            plan = self_cache.step_plan = DecoderLayerStep(
                arrays, heads=self.self_attn.num_heads, norm_first=self.norm_first,
                activation="relu" if self.activation is F.relu else "gelu",
                eps=(self.norm1.eps, self.norm2.eps, self.norm3.eps), n=n, length=length)
        return plan

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal, cache=None):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, need_weights=False,
                                is_causal=bool(is_causal), cache=cache)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = _feed_forward(self.linear1, self.activation, self.dropout, self.linear2, x)
        return self.dropout3(x)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm`` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                           is_causal=bool(is_causal))
        return output if self.norm is None else self.norm(output)


class TransformerDecoderCache:
    """The keys/values of past positions of a ``TransformerDecoder`` with ``num_layers`` layers.

    ``layers[i]`` is layer i's (self-attention, cross-attention) pair of :class:`KVCache`;
    ``length`` counts the target positions fed so far (the next one's position index);
    ``reorder(index)`` keeps batch rows ``index`` (a sequence of ints or an int64 Tensor,
    repeats allowed) in every cache, as beam search needs. Use (batch first, eval mode)::

        cache = nn.TransformerDecoderCache(decoder.num_layers)
        for t in range(T):  # y[:, t] as decoder(x, memory, tgt_mask=causal)[:, t] gives it
            y_t = decoder(x[:, t:t + 1], memory, memory_key_padding_mask=pad, cache=cache)
    """

    def __init__(self, num_layers):
        self.layers = [(KVCache(), KVCache(static=True)) for _ in range(num_layers)]

    @property
    def length(self):
        return len(self.layers[0][0]) if self.layers else 0

    def reorder(self, index):
        if not isinstance(index, Tensor):
            index = Tensor._make(np.asarray(index, dtype=np.int64))
        for pair in self.layers:
            for cache in pair:
                cache.reorder(index)


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then ``norm`` if given.

    With ``cache`` (a :class:`TransformerDecoderCache`), ``tgt`` is the new positions only and
    each layer reads and grows its own caches (see ``TransformerDecoderLayer``): feeding a
    sequence one position at a time, without ``tgt_mask``, gives the outputs of the whole
    sequence under the causal mask.
    """

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False,
                cache=None):
        if cache is not None and len(cache.layers) != len(self.layers):
            raise ValueError(f"TransformerDecoder: cache has {len(cache.layers)} layers, the "
                             f"decoder {len(self.layers)}")
        output = tgt
        for i, layer in enumerate(self.layers):
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal),
                           memory_is_causal=bool(memory_is_causal),
                           cache=None if cache is None else cache.layers[i])
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    """The encoder-decoder Transformer: ``forward(src, tgt, ...)`` → (T, N, E) (or (N, T, E)).

    Matrices (weights of 2+ dims) are re-initialised with xavier_uniform, as PyTorch does.
    ``src_is_causal``/``tgt_is_causal`` None means "not causal unless the mask says so" (the
    mask itself is always applied).
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                            layer_norm_eps, batch_first, norm_first, bias)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        if dtype is not None:
            self.to(dtype)

    def _reset_parameters(self):
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and tgt.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise ValueError(f"Transformer: the batch number of src and tgt must be equal, got "
                             f"src {tuple(src.shape)} and tgt {tuple(tgt.shape)}")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ValueError(f"Transformer: the feature number of src and tgt must be equal to "
                             f"d_model={self.d_model}, got src {tuple(src.shape)} and tgt "
                             f"{tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: −inf above the diagonal (future positions), 0 elsewhere; of the
        default float dtype unless ``dtype`` says otherwise (``full``'s default, as PyTorch)."""
        return triu(full((sz, sz), float("-inf"), dtype=dtype, device=device), diagonal=1)
