"""One cached decoding step of a Transformer decoder layer on the C backend, as a fixed list of
kernel calls whose checks, layouts and pointers are worked out once per decode.

A decoding step feeds one position through each decoder layer: about twenty small kernel calls
(six GEMMs, two attention steps, three layer norms, the activation) and the adds between them,
on arrays of a few kilobytes. Through the backend's checked functions each call costs ~10 us
of Python (checks, layout analysis, a new output array, pointers) beside a kernel of 5-30 us.
``DecoderLayerStep`` checks the layer's weights once, keeps the output buffers of every call
but the last between steps, and makes each call with the pointers it already has.

It computes what ``nn.TransformerDecoderLayer._cached_step`` computes through
``backends.current()``, bit for bit: the same kernels on the same operands in the same order,
and numpy's adds where that path adds with numpy (a bias goes in through the GEMM on both).
That path is the reference; the tests hold this one to it. Layout (batch first): x (N, L, E);
the self-attention cache's buffers ``kt`` (N, H, D, capacity), the keys transposed, and ``v``
(N, H, capacity, D), holding ``past`` positions; the cross-attention's the same over the S
memory positions.

Imports: numpy and c_backend (never the rest of minitorch).
"""
import math

import numpy as np

from .c_backend import _GEMM_KERNELS, _STEP_KERNELS, _check_status, _kernel, _ptr, ffi
from .checks import check_gelu_approximate

# The layer's arrays, by the names the plan takes them (each (rows, cols) for a weight, (n,)
# for a bias or a norm's weight/bias; a bias or norm parameter may be None).
WEIGHTS = ("in_proj_weight", "out_proj_weight", "cross_in_proj_weight", "cross_out_proj_weight",
           "linear1_weight", "linear2_weight")
VECTORS = ("in_proj_bias", "out_proj_bias", "cross_in_proj_bias", "cross_out_proj_bias",
           "linear1_bias", "linear2_bias", "norm1_weight", "norm1_bias", "norm2_weight",
           "norm2_bias", "norm3_weight", "norm3_bias")


class DecoderLayerStep:
    """The step of one decoder layer for N rows of L new positions, float32 or float64.

    ``arrays``: WEIGHTS and VECTORS by name (the projections packed as MultiheadAttention's
    ``in_proj_weight``, (3E, E)); ``activation`` "relu" or "gelu" (exact); ``eps`` the three
    norms' epsilons. ``matches(arrays, n, length)`` tells whether the plan still serves (same
    arrays, same sizes); calling it runs one step (see ``__call__``)."""

    def __init__(self, arrays, *, heads, norm_first, activation, eps, n, length):
        self.arrays = dict(arrays)
        weight = arrays["in_proj_weight"]
        dtype, (three_e, e) = weight.dtype, weight.shape
        if dtype not in _GEMM_KERNELS or three_e != 3 * e or e % heads:
            raise ValueError(f"DecoderLayerStep: in_proj_weight must be float32/float64 of shape "
                             f"(3E, E) with E divisible by heads {heads}, got {weight.shape} "
                             f"{dtype}")
        ff = arrays["linear1_weight"].shape[0]
        shapes = {"in_proj_weight": (3 * e, e), "out_proj_weight": (e, e),
                  "cross_in_proj_weight": (3 * e, e), "cross_out_proj_weight": (e, e),
                  "linear1_weight": (ff, e), "linear2_weight": (e, ff),
                  "in_proj_bias": (3 * e,), "cross_in_proj_bias": (3 * e,),
                  "linear1_bias": (ff,)}
        for name in WEIGHTS + VECTORS:
            a = arrays[name]
            if a is None and name in VECTORS:
                continue
            want = shapes.get(name, (e,))
            if (type(a) is not np.ndarray or a.dtype != dtype or a.shape != want
                    or not (a.flags.c_contiguous and a.flags.aligned)):
                raise ValueError(f"DecoderLayerStep: {name} must be an aligned C-contiguous "
                                 f"{dtype} array of shape {want}")
        if activation not in ("relu", "gelu"):
            raise ValueError(f"DecoderLayerStep: activation must be 'relu' or 'gelu', got "
                             f"{activation!r}")
        self.dtype, self.e, self.ff, self.heads, self.head_dim = dtype, e, ff, heads, e // heads
        self.n, self.length, self.rows = n, length, n * length
        self.norm_first = norm_first
        self.scale = 1.0 / math.sqrt(self.head_dim)
        self._gemm, self._gemm_bias = _GEMM_KERNELS[dtype], _kernel("gemm_bias", dtype)
        self._attend = _STEP_KERNELS[dtype]
        self._norm = _kernel("layer_norm_forward", dtype)
        self._activation = ((_kernel("relu_forward", dtype), ()) if activation == "relu" else
                            (_kernel("gelu_forward", dtype), (check_gelu_approximate("none"),)))
        rows, d = self.rows, self.head_dim
        # Outputs kept between steps (each call's result is read by the next calls only),
        # with their pointers made once
        self.qkv = np.empty((rows, 3 * e), dtype)
        self.cross_q = np.empty((rows, e), dtype)
        self.heads_out = np.empty((n, length, heads, d), dtype)
        self.projected = np.empty((rows, e), dtype)
        self.hidden = np.empty((rows, ff), dtype)
        self.activated = np.empty((rows, ff), dtype)
        self.sums = [np.empty((n, length, e), dtype) for _ in range(3)]
        self.normed = [np.empty((n, length, e), dtype) for _ in range(3)]
        stats = np.empty((2, rows), dtype)
        self._ptrs = {id(a): _ptr(a) for a in (self.qkv, self.cross_q, self.heads_out,
                                                self.projected, self.hidden, self.activated,
                                                *self.sums, *self.normed)}
        self._stats = (stats, _ptr(stats[0]), _ptr(stats[1]))

        def pointer(name):
            return ffi.NULL if arrays[name] is None else _ptr(arrays[name])

        def linear(weight, bias, out, k, bias_rows=None):
            b = arrays[bias] if bias_rows is None or arrays[bias] is None \
                else arrays[bias][:bias_rows]
            return pointer(weight), None if b is None else _ptr(b), k, out, self._ptrs[id(out)]
        # Each GEMM: (weight pointer, bias pointer or None, K, output, output pointer). The
        # static cross-attention's queries use the first E rows of its packed projection.
        self._self_in = linear("in_proj_weight", "in_proj_bias", self.qkv, e)
        self._self_out = linear("out_proj_weight", "out_proj_bias", self.projected, e)
        self._cross_q = linear("cross_in_proj_weight", "cross_in_proj_bias", self.cross_q, e,
                               bias_rows=e)
        self._cross_out = linear("cross_out_proj_weight", "cross_out_proj_bias", self.projected,
                                 e)
        self._ff1 = linear("linear1_weight", "linear1_bias", self.hidden, e)
        self._ff2 = linear("linear2_weight", "linear2_bias", self.projected, ff)
        # Each norm: (weight pointer, bias pointer, eps); the output is the caller's
        self._norms = [(pointer(f"norm{i}_weight"), pointer(f"norm{i}_bias"), float(eps[i - 1]))
                       for i in (1, 2, 3)]
        # attention_step's element strides: the queries' (fixed: views of qkv / cross_q), then
        # the keys', the values' and the mask's, set per call
        self._self_strides = np.zeros(13, np.int64)
        self._self_strides[:3] = (length * 3 * e, d, 3 * e)
        self._cross_strides = np.zeros(13, np.int64)
        self._cross_strides[:3] = (length * e, d, e)
        self._strides_ptrs = (_ptr(self._self_strides), _ptr(self._cross_strides))

    def matches(self, arrays, n, length):
        """Whether this plan is for these very arrays and sizes."""
        if n != self.n or length != self.length:
            return False
        mine = self.arrays
        return all(arrays[name] is mine[name] for name in mine)

    # ------------------------------------------------------------------ the kernel calls
    def _linear(self, a, gemm):
        """out = a @ weight.T (+ bias, added by the GEMM: mt_gemm_bias) for a (rows, K)
        C-contiguous, weight (cols, K)."""
        weight, bias, k, out, out_pointer = gemm
        cols = out.shape[1]
        if bias is None:
            status = self._gemm(0, 1, self.rows, cols, k, 1.0, self._pointer(a), k, 0, weight,
                                k, 0, 0.0, out_pointer, cols, 0, 1)
        else:
            status = self._gemm_bias(0, 1, self.rows, cols, k, self._pointer(a), k, weight, k,
                                     bias, 0, out_pointer, cols)
        if status:
            _check_status(status, "matmul")
        return out

    def _pointer(self, a):
        """The pointer of one of the plan's own buffers, made once; of another array (the
        step's input), made now."""
        pointer = self._ptrs.get(id(a))
        return _ptr(a) if pointer is None else pointer

    def _layer_norm(self, x, index, out):
        weight, bias, eps = self._norms[index]
        _, mean, rstd = self._stats
        status = self._norm(self._pointer(x), weight, bias, self._pointer(out), mean, rstd,
                            self.rows, self.e, eps)
        _check_status(status, "layer_norm_forward")
        return out

    def _attention(self, cross, q, kt, v, s, mask, causal):
        """attention_step's C call for the queries in ``q`` (qkv, or cross_q for ``cross``),
        over the first ``s`` positions of the buffers kt (N, H, D, capacity) and v (N, H,
        capacity, D); the heads' output into heads_out; returns the weights (N, H, L, S)."""
        n, h, length, d = self.n, self.heads, self.length, self.head_dim
        weights = np.empty((n, h, length, s), self.dtype)
        capacity_k, capacity_v = kt.shape[3], v.shape[2]
        strides = self._cross_strides if cross else self._self_strides
        strides[3:13] = (h * d * capacity_k, d * capacity_k, capacity_k,
                         h * capacity_v * d, capacity_v * d, d,
                         0 if mask is None or n == 1 else s, 0, 0,
                         0 if mask is None or s == 1 else 1)
        pointer = self._strides_ptrs[cross]
        status = self._attend(self._ptrs[id(q)], _ptr(kt), _ptr(v),
                              ffi.NULL if mask is None else _ptr(mask),
                              self._ptrs[id(self.heads_out)], _ptr(weights), n, h, length, s, d,
                              d, pointer, pointer + 3, pointer + 6, pointer + 9, self.scale,
                              -1 if causal is None else int(causal))
        _check_status(status, "attention_step")
        return weights

    def _self_attention(self, a, kt, v, past, mask, causal):
        n, length, e, h, d = self.n, self.length, self.e, self.heads, self.head_dim
        qkv = self._linear(a, self._self_in).reshape(n, length, 3, h, d)
        stop = past + length
        if length == 1:  # as KVCache._append: copies along the head dim
            kt[..., past] = qkv[:, 0, 1]
            v[:, :, past] = qkv[:, 0, 2]
        else:
            kt[..., past:stop] = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v[:, :, past:stop] = qkv[:, :, 2].swapaxes(1, 2)
        weights = self._attention(False, self.qkv, kt, v, stop, mask, past if causal else None)
        return self._linear(self.heads_out, self._self_out).reshape(n, length, e), weights

    def _cross_attention(self, a, kt, v, mask, causal):
        self._linear(a, self._cross_q)
        weights = self._attention(True, self.cross_q, kt, v, v.shape[2], mask,
                                  0 if causal else None)
        out = self._linear(self.heads_out, self._cross_out)
        return out.reshape(self.n, self.length, self.e), weights

    def _feed_forward(self, a):
        hidden = self._linear(a, self._ff1)
        kernel, extra = self._activation
        status = kernel(self._ptrs[id(hidden)], self._ptrs[id(self.activated)], hidden.size,
                        *extra)
        _check_status(status, "activation")
        return self._linear(self.activated, self._ff2).reshape(self.n, self.length, self.e)

    def __call__(self, x, kt, v, past, mask, causal, cross_kt, cross_v, cross_mask,
                 cross_causal):
        """(output (N, L, E), a new array; the self-attention's weights (N, H, L, past + L);
        the cross-attention's (N, H, L, S)). Writes the new positions' keys and values into
        ``kt``/``v`` at ``past``; ``mask``/``cross_mask``: (N, past + L) / (N, S) bool key
        padding masks or None; ``causal``/``cross_causal``: the attentions' is_causal."""
        self._check_step(x, kt, v, past, mask, cross_kt, cross_v, cross_mask)
        sums, normed = self.sums, self.normed
        if self.norm_first:
            sa, self_weights = self._self_attention(self._layer_norm(x, 0, normed[0]), kt, v,
                                                    past, mask, causal)
            x1 = np.add(x, sa, out=sums[0])
            ca, cross_weights = self._cross_attention(self._layer_norm(x1, 1, normed[1]),
                                                      cross_kt, cross_v, cross_mask, cross_causal)
            x2 = np.add(x1, ca, out=sums[1])
            out = x2 + self._feed_forward(self._layer_norm(x2, 2, normed[2]))
        else:
            sa, self_weights = self._self_attention(x, kt, v, past, mask, causal)
            x1 = self._layer_norm(np.add(x, sa, out=sums[0]), 0, normed[0])
            ca, cross_weights = self._cross_attention(x1, cross_kt, cross_v, cross_mask,
                                                      cross_causal)
            x2 = self._layer_norm(np.add(x1, ca, out=sums[1]), 1, normed[1])
            out = self._layer_norm(np.add(x2, self._feed_forward(x2), out=sums[2]), 2,
                                   np.empty((self.n, self.length, self.e), self.dtype))
        return out, self_weights, cross_weights

    def _check_step(self, x, kt, v, past, mask, cross_kt, cross_v, cross_mask):
        """ValueError unless the step's arrays are what the kernels above may read and write."""
        n, h, d, dtype = self.n, self.heads, self.head_dim, self.dtype
        if (type(x) is not np.ndarray or x.dtype != dtype or x.shape != (n, self.length, self.e)
                or not (x.flags.c_contiguous and x.flags.aligned)):
            raise ValueError(f"DecoderLayerStep: x must be an aligned C-contiguous {dtype} array "
                             f"of shape {(n, self.length, self.e)}")
        stop = past + self.length
        for name, a, keys in (("kt", kt, True), ("v", v, False), ("cross_kt", cross_kt, True),
                              ("cross_v", cross_v, False)):
            if (type(a) is not np.ndarray or a.dtype != dtype or a.ndim != 4
                    or (a.shape[:3] if keys else a.shape[:2] + a.shape[3:]) != (n, h, d)
                    or not (a.flags.c_contiguous and a.flags.aligned and a.flags.writeable)):
                layout = (n, h, d, "S") if keys else (n, h, "S", d)
                raise ValueError(f"DecoderLayerStep: {name} must be a writeable, aligned, "
                                 f"C-contiguous {dtype} array of shape {layout}")
        if past < 0 or stop > kt.shape[3] or stop > v.shape[2]:
            raise ValueError(f"DecoderLayerStep: {stop} positions do not fit the cache's "
                             f"{min(kt.shape[3], v.shape[2])}")
        if cross_kt.shape[3] != cross_v.shape[2]:
            raise ValueError("DecoderLayerStep: cross_kt and cross_v hold different lengths")
        for name, m, s in (("mask", mask, stop), ("cross_mask", cross_mask, cross_v.shape[2])):
            if m is not None and (type(m) is not np.ndarray or m.dtype != np.bool_
                                  or m.shape != (n, s) or not m.flags.c_contiguous):
                raise ValueError(f"DecoderLayerStep: {name} must be a C-contiguous bool array "
                                 f"of shape {(n, s)} or None")
