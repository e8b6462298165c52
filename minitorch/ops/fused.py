"""Fused ops on the backend's kernels: softmax (with scale, mask, causal), log-softmax,
cross-entropy from logits (``F.cross_entropy`` in nn/functional.py), and layer norm; and
multi-head attention's layout changes (``split_heads``, ``merge_heads``) as one node each.

Each op's forward and backward are kernels. The backward is a Function of its own
(``SoftmaxBackward``, ...), so a gradient of a gradient works: its derivative is taken by autograd
over the textbook composite of the same formula in Tensor ops (``_differentiate_composite``).
The kernel gives the fast first derivative; the rarer second derivative reuses the engine.
"""
import math

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import as_array
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled
from ..tensor import Tensor
from ._helpers import normalize_dim
from ._threads import in_chunks
from .registry import op

_make = Tensor._make


class Alias(Function):
    """The same values as a new graph node: lets autograd take partial derivatives."""

    @staticmethod
    def forward(ctx, a):
        return Tensor._make_view(a._data, a)

    @staticmethod
    def backward(ctx, grad):
        return grad


def _differentiate_composite(composite, inputs, needs, grad_outputs):
    """Vector-Jacobian products of ``composite(*inputs)`` for the inputs in ``needs``.

    Each input that needs a gradient enters through an ``Alias`` node, so the result is the
    partial derivative even when inputs depend on each other, and (under create_graph) it
    stays connected to the graph for yet another derivative.
    """
    from ..autograd import grad as autograd_grad
    create_graph = is_grad_enabled()  # the engine sets grad mode to create_graph
    with enable_grad():
        aliases = [Alias.apply(t) if need else (None if t is None else t.detach())
                   for t, need in zip(inputs, needs)]
        outputs = composite(*aliases)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    wanted = [a for a, need in zip(aliases, needs) if need]
    grads = iter(autograd_grad([o for o, _ in pairs], wanted, [g for _, g in pairs],
                               create_graph=create_graph, allow_unused=True) if pairs and wanted
                 else [None] * len(wanted))
    results = []
    for t, need in zip(inputs, needs):
        g = next(grads) if need else None
        results.append(g if g is not None or not need else t.detach() * 0.0)
    return tuple(results)


def _array(t):
    return None if t is None else t._data


# ----------------------------------------------------------------------------- softmax

class Softmax(Function):
    """softmax(x·scale + mask) over the last dim; mask is additive (float) or True = excluded."""

    @staticmethod
    def forward(ctx, x, scale=1.0, mask=None, causal=False):
        out = _make(backends.current().softmax_forward(x._data, scale, _array(mask), causal))
        ctx.scale = scale
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return SoftmaxBackward.apply(out, grad, ctx.scale), None, None, None


class SoftmaxBackward(Function):
    @staticmethod
    def forward(ctx, y, dy, scale):
        ctx.scale = scale
        ctx.save_for_backward(y, dy)
        return _make(backends.current().softmax_backward(y._data, dy._data, scale))

    @staticmethod
    def backward(ctx, grad):
        scale = ctx.scale

        def composite(y, dy):
            return scale * y * (dy - (dy * y).sum(-1, keepdim=True))
        return _differentiate_composite(composite, ctx.saved_tensors, ctx.needs_input_grad[:2],
                                        (grad,)) + (None,)


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x):
        out = _make(backends.current().log_softmax_forward(x._data))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_tensors
        return LogSoftmaxBackward.apply(out, grad)


class LogSoftmaxBackward(Function):
    @staticmethod
    def forward(ctx, y, dy):
        ctx.save_for_backward(y, dy)
        return _make(backends.current().log_softmax_backward(y._data, dy._data))

    @staticmethod
    def backward(ctx, grad):
        def composite(y, dy):
            return dy - y.exp() * dy.sum(-1, keepdim=True)
        return _differentiate_composite(composite, ctx.saved_tensors, ctx.needs_input_grad,
                                        (grad,))


# ----------------------------------------------------------------------------- cross-entropy

class CrossEntropy(Function):
    """Cross-entropy of logits (N, C) against class indices (N,), from log-sum-exp."""

    @staticmethod
    def forward(ctx, logits, target, ignore_index, label_smoothing, reduction):
        loss, lse = backends.current().cross_entropy_forward(
            logits._data, target._data, ignore_index, label_smoothing, reduction)
        ctx.options = (ignore_index, label_smoothing, reduction)
        ctx.lse = lse
        ctx.save_for_backward(logits, target)  # target too: changed in place, backward raises
        return _make(as_array(loss, logits._data))

    @staticmethod
    def backward(ctx, grad):
        logits, target = ctx.saved_tensors
        return (CrossEntropyBackward.apply(logits, grad, ctx.lse, target, *ctx.options),
                None, None, None, None)


class CrossEntropyBackward(Function):
    @staticmethod
    def forward(ctx, logits, grad, lse, target, ignore_index, label_smoothing, reduction):
        ctx.options = (ignore_index, label_smoothing, reduction)
        ctx.save_for_backward(logits, grad, target)
        return _make(backends.current().cross_entropy_backward(
            logits._data, target._data, lse, grad._data, ignore_index, label_smoothing, reduction))

    @staticmethod
    def backward(ctx, g):
        ignore_index, smoothing, reduction = ctx.options
        logits, grad, target = ctx.saved_tensors
        classes = logits.shape[-1]
        valid = target._data != ignore_index
        # dlogits = w · (softmax(logits) − q), q the smoothed one-hot target.
        q = np.full(logits.shape, smoothing / classes, dtype=logits._data.dtype)
        rows = np.nonzero(valid)[0]
        q[rows, target._data[rows]] += 1.0 - smoothing
        q[~valid] = 0.0
        row_weight = valid.astype(logits._data.dtype)
        if reduction == "mean":
            row_weight /= max(int(valid.sum()), 1)
        q, row_weight = _make(q), _make(row_weight)

        def composite(x, grad_in):
            w = grad_in * row_weight  # (N,) per-row weight of the loss
            probs = Softmax.apply(x, 1.0, None, False)
            return w.unsqueeze(-1) * (probs - q)
        return _differentiate_composite(composite, (logits, grad), ctx.needs_input_grad[:2],
                                        (g,)) + (None,) * 5


# ----------------------------------------------------------------------------- layer norm

class LayerNorm(Function):
    """Normalize over the last dim, then scale by weight and shift by bias (either may be None)."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps):
        y, mean, rstd = backends.current().layer_norm_forward(
            x._data, _array(weight), _array(bias), eps)
        ctx.eps, ctx.has_bias = eps, bias is not None
        ctx.stats = (_make(mean), _make(rstd))
        ctx.save_for_backward(x, weight)
        return _make(y)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        mean, rstd = ctx.stats
        if weight is None:
            return LayerNormBackward.apply(grad, x, None, mean, rstd, ctx.eps), None, None, None
        dx, dweight, dbias = LayerNormBackward.apply(grad, x, weight, mean, rstd, ctx.eps)
        return dx, dweight, dbias if ctx.has_bias else None, None


class LayerNormBackward(Function):
    @staticmethod
    def forward(ctx, dy, x, weight, mean, rstd, eps):
        ctx.eps = eps
        ctx.save_for_backward(dy, x, weight)
        dx, dweight, dbias = backends.current().layer_norm_backward(
            dy._data, x._data, _array(weight), mean._data, rstd._data)
        if weight is None:
            return _make(dx)
        return _make(dx), _make(dweight), _make(dbias)

    @staticmethod
    def backward(ctx, *grads):
        eps = ctx.eps
        dy, x, weight = ctx.saved_tensors

        def composite(dy, x, weight):
            mu = x.mean(-1, keepdim=True)
            rstd = ((x - mu) ** 2).mean(-1, keepdim=True).add(eps).rsqrt()
            xhat = (x - mu) * rstd
            dxhat = dy if weight is None else dy * weight
            dx = rstd * (dxhat - dxhat.mean(-1, keepdim=True)
                         - xhat * (dxhat * xhat).mean(-1, keepdim=True))
            if weight is None:
                return dx
            lead = tuple(range(dy.ndim - 1))
            return dx, (dy * xhat).sum(lead), dy.sum(lead)
        needs = ctx.needs_input_grad[:3]
        return _differentiate_composite(composite, (dy, x, weight), needs, grads) + (None,) * 3


# ----------------------------------------------------------------------------- functions

def _mask_tensor(mask, x):
    """softmax's mask as a Tensor: a numpy array or nested list is converted (bools stay bool,
    floats take x's dtype); anything else raises TypeError naming ``mask``."""
    if mask is None or isinstance(mask, Tensor):
        return mask
    try:
        array = np.asarray(mask)
    except ValueError:  # ragged nested lists
        array = None
    if array is None or array.dtype.kind not in "bf":
        got = type(mask).__name__ if array is None else f"{type(mask).__name__} of {array.dtype}"
        raise TypeError(f"softmax: mask must be a Tensor, numpy array or nested list of bools "
                        f"or floats, got {got}")
    return _make(array if array.dtype == np.bool_ else array.astype(x._data.dtype))


@op()
def softmax(input, dim=-1, dtype=None, *, scale=1.0, mask=None, causal=False):
    """softmax over ``dim`` (of ``input`` cast to ``dtype`` first, if given); ``scale``, ``mask``
    and ``causal`` fuse the attention case.

    ``mask`` (minitorch's own, PyTorch's softmax has none) is True where excluded or a float
    added to the scores; a numpy array or nested list is taken as well as a Tensor."""
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        input = input.float()
    mask = _mask_tensor(mask, input)
    d = normalize_dim(dim, input.ndim)
    if input.ndim == 0:
        return Softmax.apply(input.reshape(1), scale, mask, causal).reshape(())
    if d != input.ndim - 1:
        if mask is not None or causal:
            raise ValueError("softmax: mask and causal apply only when dim is the last dim")
        return Softmax.apply(input.transpose(d, -1), scale, None, False).transpose(d, -1)
    return Softmax.apply(input, scale, mask, causal)


@op()
def log_softmax(input, dim=-1, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    if not input.dtype.is_floating_point:
        input = input.float()
    d = normalize_dim(dim, input.ndim)
    if input.ndim == 0:
        return LogSoftmax.apply(input.reshape(1)).reshape(())
    if d != input.ndim - 1:
        return LogSoftmax.apply(input.transpose(d, -1)).transpose(d, -1)
    return LogSoftmax.apply(input)


@op(function=False, method=False, functional=True)
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalize over the trailing ``normalized_shape`` dims (one or several), then scale/shift.

    Several trailing dims are flattened into one so the fused kernel normalizes them together.
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise ValueError(f"layer_norm: normalized_shape {list(shape)} must match the trailing "
                         f"dims of input, got input shape {tuple(input.shape)}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != shape:
            raise ValueError(f"layer_norm: {name} must have shape {shape} (normalized_shape), "
                             f"got {tuple(p.shape)}")
    size = math.prod(shape)
    lead = tuple(input.shape[:input.ndim - k])
    x, w, b = input, weight, bias
    if k > 1:  # (one trailing dim is the kernel's layout already: no reshape nodes then)
        x = input.reshape(*lead, size)
        w = None if weight is None else weight.reshape(size)
        b = None if bias is None else bias.reshape(size)
    if w is None and b is not None:
        # The fused Function carries a bias only together with a weight.
        y = LayerNorm.apply(x, None, None, eps) + b
    else:
        y = LayerNorm.apply(x, w, b, eps)
    return y.reshape(input.shape) if k > 1 else y


# ----------------------------------------------------------------------------- attention heads
# Multi-head attention moves between the projections' layout (N, L, H·D) and the heads' layout
# (N, H, L, D) in which each attention product is one batched GEMM. As reshape, permute,
# contiguous and unbind (and transpose, reshape on the way back) that is four nodes and, in the
# backward, a stack and a reshape: two copies where one does. Here each direction is one node
# and one copy per pass, split over the threads (numpy copies release the GIL).


def _copy_into(out, src):
    np.copyto(out, src)


class SplitHeads(Function):
    """(N, L, parts·H·D) → ``parts`` contiguous (N, H, L, D) tensors: x.reshape(N, L, parts, H,
    D).permute(2, 0, 3, 1, 4).contiguous().unbind(0), bit for bit, as one node."""

    @staticmethod
    def forward(ctx, x, parts, num_heads):
        n, length, width = x.shape
        ctx.shape = (n, length, width)
        d = width // (parts * num_heads)
        heads = np.empty((parts, n, num_heads, length, d), x._data.dtype)
        source = tapes.reshaped(x._data, (n, length, parts, num_heads, d)).transpose(0, 2, 3, 1, 4)
        in_chunks(_copy_into, heads.swapaxes(0, 1), source)  # split over the batch
        return tuple(_make(heads[i]) for i in range(parts))

    @staticmethod
    def backward(ctx, *grads):
        n, length, width = ctx.shape
        if is_grad_enabled():  # create_graph: the same copy, in ops autograd can differentiate
            from .shape import stack
            return stack(grads, 0).permute(1, 3, 0, 2, 4).reshape(n, length, width), None, None
        parts, heads, d = len(grads), grads[0].shape[1], grads[0].shape[3]
        out = np.empty((n, length, parts, heads, d), grads[0]._data.dtype)

        def gather(out_rows, *grad_rows):
            for i, g in enumerate(grad_rows):
                np.copyto(out_rows[:, :, i].transpose(0, 2, 1, 3), g)
        in_chunks(gather, out, *(g._data for g in grads))
        return _make(out.reshape(n, length, width)), None, None


class MergeHeads(Function):
    """(N, H, L, D) → (N, L, H·D): x.transpose(1, 2).reshape(N, L, H·D), bit for bit, as one
    node; the backward hands the batched matmul before it a contiguous (N, H, L, D) gradient
    (which it would copy into that layout itself)."""

    @staticmethod
    def forward(ctx, x):
        n, heads, length, d = x.shape
        ctx.heads = heads
        out = np.empty((n, length, heads, d), x._data.dtype)
        in_chunks(_copy_into, out, x._data.transpose(0, 2, 1, 3))
        return _make(out.reshape(n, length, heads * d))

    @staticmethod
    def backward(ctx, grad):
        n, length, width = grad.shape
        heads = ctx.heads
        if is_grad_enabled():
            return grad.reshape(n, length, heads, width // heads).transpose(1, 2).contiguous()
        rows = tapes.reshaped(grad._data, (n, length, heads, width // heads)).transpose(0, 2, 1, 3)
        out = np.empty(rows.shape, rows.dtype)
        return _make(in_chunks(_copy_into, out, rows))


def split_heads(x, parts, num_heads):
    """``parts`` contiguous (N, H, L, D) tensors from the (N, L, parts·H·D) tensor ``x`` (D =
    the last dim / (parts·num_heads)), as ``nn.MultiheadAttention`` splits its projections."""
    if type(x._data) is not np.ndarray:  # another device: the same steps in device-generic ops
        n, length = x.shape[0], x.shape[1]
        heads = x.reshape(n, length, parts, num_heads, x.shape[2] // (parts * num_heads))
        return heads.permute(2, 0, 3, 1, 4).contiguous().unbind(0)
    return SplitHeads.apply(x, parts, num_heads)


def merge_heads(x):
    """The (N, H, L, D) tensor ``x`` as (N, L, H·D): the heads side by side again."""
    n, heads, length, d = x.shape
    if type(x._data) is not np.ndarray:
        return x.transpose(1, 2).reshape(n, length, heads * d)
    return MergeHeads.apply(x)


# ----------------------------------------------------------------------------- attention in place
# Where the attention's weights are not wanted, the heads need not be copied out at all: each
# head's products read q, k and v where the projections wrote them, as (N, H, L, D) views of
# their (N, L, ·) rows, and the output and the gradients of q, k and v are written by the
# attention kernels straight into (N, L, ·) arrays. That drops split_heads' and merge_heads'
# four copies per attention.


def _heads(rows, start, width, num_heads):
    """The (N, H, L, D) view of columns start:start + width of the (N, L, ·) array ``rows``."""
    n, length = rows.shape[0], rows.shape[1]
    return rows[:, :, start:start + width].reshape(
        n, length, num_heads, width // num_heads).transpose(0, 2, 1, 3)


class AttentionOnRows(Function):
    """softmax(q kᵀ·scale + mask) v over ``num_heads`` heads, reading q, k, v in the projections'
    layout and giving the heads side by side, (N, L, E): ``merge_heads`` of ``attention`` on
    ``split_heads``' outputs, bit for bit (the backend's attention kernels run the same products
    and softmax rows on each head), as one node.

    ``q_rows`` (N, L, E) holds q, ``kv_rows`` (N, S, 2E) k then v; with ``kv_rows`` None,
    ``q_rows`` (N, L, 3E) holds all three (self-attention's packed projection). ``mask``: the
    softmax kernel's (bool True = excluded, or float added), no gradient. ``keep``: None, or
    dropout's factors on the weights (an (N, H, L, S) array of 0 and 1/(1-p)), applied between
    the softmax and v as the dropout node would be."""

    @staticmethod
    def forward(ctx, q_rows, kv_rows, num_heads, mask, causal, scale, keep=None):
        packed = kv_rows is None
        qd = q_rows._data
        kvd = qd if packed else kv_rows._data
        width = qd.shape[2] // 3 if packed else qd.shape[2]
        k_at = width if packed else 0
        q = _heads(qd, 0, width, num_heads)
        k = _heads(kvd, k_at, width, num_heads)
        v = _heads(kvd, k_at + width, width, num_heads)
        out = np.empty(qd.shape[:2] + (width,), qd.dtype)
        _, weights = backends.current().attention_forward(
            q, k, v, scale, _array(mask), causal, out=_heads(out, 0, width, num_heads),
            keep=keep)
        ctx.options = (num_heads, causal, scale, width, k_at, keep)
        ctx.weights = weights
        ctx.save_for_backward(q_rows, kv_rows, mask)
        return _make(out)

    @staticmethod
    def backward(ctx, grad):
        num_heads, causal, scale, width, k_at, keep = ctx.options
        q_rows, kv_rows, mask = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the composite, which autograd differentiates
            def composite(q_rows, kv_rows):
                return _attention_on_rows_composite(q_rows, kv_rows, num_heads, mask, causal,
                                                    scale, keep)
            return _differentiate_composite(composite, (q_rows, kv_rows),
                                            ctx.needs_input_grad[:2], (grad,)) + (None,) * 5
        packed = kv_rows is None
        qd = q_rows._data
        kvd = qd if packed else kv_rows._data
        q = _heads(qd, 0, width, num_heads)
        k = _heads(kvd, k_at, width, num_heads)
        v = _heads(kvd, k_at + width, width, num_heads)
        g = _heads(np.ascontiguousarray(grad._data), 0, width, num_heads)
        d_q_rows = np.empty(qd.shape, qd.dtype)
        d_kv_rows = d_q_rows if packed else np.empty(kvd.shape, kvd.dtype)
        backends.current().attention_backward(
            q, k, v, ctx.weights, g, scale, dq=_heads(d_q_rows, 0, width, num_heads),
            dk=_heads(d_kv_rows, k_at, width, num_heads),
            dv=_heads(d_kv_rows, k_at + width, width, num_heads), keep=keep)
        return (_make(d_q_rows), None if packed else _make(d_kv_rows)) + (None,) * 5


class Attention(Function):
    """softmax(q kᵀ·scale + mask) v over (N, H) batches of heads, q (N, H, L, D), k (N, H, S, D),
    v (N, H, S, Dv) float arrays of one dtype (any strides), as one node: the chain of
    ``nn.functional._attention`` (matmul, the fused softmax, matmul), on the backend's attention
    kernels. ``mask``: the softmax kernel's (bool True = excluded, or float added),
    broadcasting to (N, H, L, S), no gradient. ``keep``: as ``AttentionOnRows``'."""

    @staticmethod
    def forward(ctx, q, k, v, mask, causal, scale, keep=None):
        out, ctx.weights = backends.current().attention_forward(
            q._data, k._data, v._data, scale, _array(mask), causal, keep=keep)
        ctx.options = (mask, causal, scale, keep)
        ctx.save_for_backward(q, k, v)
        return _make(out)

    @staticmethod
    def backward(ctx, grad):
        mask, causal, scale, keep = ctx.options
        q, k, v = ctx.saved_tensors
        if is_grad_enabled():  # create_graph: the composite, which autograd differentiates
            def composite(q, k, v):
                return _kept(Softmax.apply(q @ k.mT, scale, mask, causal), keep) @ v
            return _differentiate_composite(composite, (q, k, v), ctx.needs_input_grad[:3],
                                            (grad,)) + (None,) * 4
        grads = backends.current().attention_backward(q._data, k._data, v._data, ctx.weights,
                                                      grad._data, scale, keep=keep)
        return tuple(_make(g) for g in grads) + (None,) * 4


def _kept(weights, keep):
    """The weights after dropout's factors ``keep`` (None: none), as the dropout node's
    product."""
    return weights if keep is None else weights * _make(keep)


def _attention_on_rows_composite(q_rows, kv_rows, num_heads, mask, causal, scale, keep=None):
    """AttentionOnRows as the chain of nodes it fuses (split_heads, the products, the fused
    softmax, dropout's product, merge_heads)."""
    if kv_rows is None:
        q, k, v = split_heads(q_rows, 3, num_heads)
    else:
        q, = split_heads(q_rows, 1, num_heads)
        k, v = split_heads(kv_rows, 2, num_heads)
    weights = Softmax.apply(q @ k.mT, scale, mask, causal)
    return merge_heads(_kept(weights, keep) @ v)


def attention_on_rows(q_rows, kv_rows, num_heads, mask=None, causal=False, scale=1.0,
                      keep=None):
    """Multi-head attention's core on the projections' rows: (N, L, E) from q in ``q_rows``
    (N, L, E) and k, v in ``kv_rows`` (N, S, 2E), or all three in ``q_rows`` (N, L, 3E) when
    ``kv_rows`` is None (see ``AttentionOnRows``); ``mask`` in the softmax kernel's convention,
    broadcastable to (N, H, L, S), with no gradient; ``keep`` dropout's factors on the weights
    or None. The inputs must be numpy arrays of one float dtype; ``nn.MultiheadAttention``
    checks that before it takes this path."""
    return AttentionOnRows.apply(q_rows, kv_rows, num_heads, mask, causal, float(scale), keep)
