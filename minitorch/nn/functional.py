"""``minitorch.nn.functional`` (``import minitorch.nn.functional as F``): the stateless forms of
the layers, with ``torch.nn.functional``'s names, arguments, defaults and shapes.

- here: ``relu``, ``softmax``, ``log_softmax`` (F's arguments differ from the op's),
  ``normalize``, ``one_hot``, ``linear``, ``dropout``, the class losses ``cross_entropy`` and
  ``nll_loss``, and ``scaled_dot_product_attention``
- from the op registry, the ops declared ``functional=True`` in ``minitorch/ops``: ``gelu``,
  ``tanh``, ``sigmoid``, ``silu``, ``softplus``, ``mish``, ``layer_norm``, ``embedding``,
  ``pad``, the elementwise losses (``mse_loss``, ``l1_loss``, ``kl_div``,
  ``binary_cross_entropy``, ... in ``ops/losses.py``), ...

The hot paths run on the fused kernels of ``minitorch/ops/fused.py`` (softmax with scale, mask
and causal; layer norm; cross-entropy). Where minitorch differs from PyTorch (a fully masked
attention row gives zeros instead of NaN; a "mean" loss over only ignored targets is 0 instead
of NaN) the docstring says so.
May import: ``minitorch.ops``, ``minitorch.autograd``, ``minitorch.tensor``, ``minitorch.random``,
``minitorch.device_arrays``.
"""
import math
import warnings
from typing import TYPE_CHECKING

import numpy as np

from .. import ops
from ..dtype import bool_, int64
from ..ops import registry as _registry
from ..ops.dropout import dropout_factors
from ..ops.fused import Attention, CrossEntropy, Softmax
from ..ops.linalg import Linear as _LinearFunction
from ..ops.linalg import FeedForwardReLU as _FeedForwardReLUFunction
from ..ops.linalg import LinearReLU as _LinearReLUFunction
from ..ops.losses import reduce_loss, reduction_argument
from ..device_arrays import on_device_of
from ..tensor import Tensor

# The ops declared with ``functional=True`` (gelu, tanh, sigmoid, layer_norm, embedding, ...):
# PyTorch's F takes the same arguments as the op, so the op itself is F's function.
globals().update(_registry.functional())
if TYPE_CHECKING:  # the same names, for type checkers (stub written by scripts/make_stubs.py)
    from ._functional_ops import *  # noqa: F403

_make = Tensor._make


def _check_tensor(value, name):
    if not isinstance(value, Tensor):
        raise TypeError(f"{name}: expected a minitorch Tensor, got {type(value).__name__}")


# ----------------------------------------------------------------------------- activations

def relu(input, inplace=False):
    return ops.relu(input)


def _implicit_softmax_dim(name, ndim, stacklevel):
    """PyTorch's deprecated choice of dim when none is given: 0 for 0-, 1- and 3-d inputs (an
    unbatched vector or (C, H, W) image), else 1 (the class dim of a batch), with its warning."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", UserWarning, stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along ``dim`` (cast to ``dtype`` first if given); ``dim=None``
    picks PyTorch's deprecated implicit dim, with its warning."""
    _check_tensor(input, "softmax: input")
    if dim is None:
        dim = _implicit_softmax_dim("softmax", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return ops.softmax(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along ``dim``, computed stably; ``dim`` and ``dtype`` as ``softmax``."""
    _check_tensor(input, "log_softmax: input")
    if dim is None:
        dim = _implicit_softmax_dim("log_softmax", input.ndim, _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return ops.log_softmax(input, dim)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """x / max(‖x‖_p, eps) along ``dim`` (an int or a tuple of dims), as PyTorch.

    The clamp is applied to Σ|x|^p before the root (the same value, max(‖x‖, eps)): that
    way a zero vector's gradient is 1/eps, as PyTorch's, instead of the NaN of √0's
    derivative times zero. ``p`` may be any positive number or ``inf``.
    """
    _check_tensor(input, "normalize: input")
    if out is not None:
        raise NotImplementedError("normalize: out= is not supported by minitorch")
    if not input.dtype.is_floating_point:
        raise TypeError(f"normalize: input must be floating point, got {input.dtype}")
    if not (p > 0):
        raise ValueError(f"normalize: p must be positive (or inf), got {p}")
    if math.isinf(p):
        norm = input.abs().amax(dim=dim, keepdim=True).clamp(min=eps)
    elif p == 2:
        norm = (input * input).sum(dim=dim, keepdim=True).clamp(min=eps * eps).sqrt()
    else:
        norm = (input.abs() ** p).sum(dim=dim, keepdim=True).clamp(min=eps ** p) ** (1.0 / p)
    return input / norm


def one_hot(input, num_classes=-1):
    """int64 tensor of shape (*input.shape, num_classes): 1 at each index, 0 elsewhere.

    ``num_classes=-1`` takes max(input) + 1. (PyTorch's documentation names the first argument
    ``tensor``; its function takes ``input``, as here.)
    """
    _check_tensor(input, "one_hot: input")
    if input.dtype is not int64:
        raise TypeError(f"one_hot: input must be an int64 tensor of class indices, got "
                        f"{input.dtype}")
    indices = input._data
    if num_classes == -1:
        if indices.size == 0:
            raise RuntimeError("one_hot: can not infer the number of classes from an empty "
                               "tensor; pass num_classes")
        num_classes = int(indices.max()) + 1
    if indices.size and indices.min() < 0:
        raise RuntimeError(f"one_hot: class values must be non-negative, got "
                           f"{int(indices.min())}")
    if indices.size and indices.max() >= num_classes:
        raise RuntimeError(f"one_hot: class values must be smaller than num_classes="
                           f"{num_classes}, got {int(indices.max())}")
    if num_classes < 0:
        raise RuntimeError(f"one_hot: num_classes must be -1 or non-negative, got {num_classes}")
    return _make((indices[..., None] == np.arange(num_classes)).astype(np.int64))


# ----------------------------------------------------------------------------- layers

def linear(input, weight, bias=None):
    """input @ weightᵀ + bias, with weight (out_features, in_features) as in PyTorch."""
    _check_tensor(input, "linear: input")
    if weight.ndim != 2:
        raise ValueError(f"linear: weight must be 2-D (out_features, in_features), got shape "
                         f"{tuple(weight.shape)}")
    if input.ndim == 0 or input.shape[-1] != weight.shape[1]:
        raise ValueError(f"linear: input's last dim must be in_features={weight.shape[1]}, got "
                         f"input shape {tuple(input.shape)}")
    if (input.dtype is weight.dtype and input.dtype.is_floating_point
            and (bias is None or (bias.dtype is weight.dtype
                                  and bias._data.shape == weight._data.shape[:1]))):
        return _LinearFunction.apply(input, weight, bias)  # one node, one GEMM
    # Mixed dtypes or a broadcast bias: the composite, which promotes and broadcasts.
    if input.ndim > 2:
        # One 2-D GEMM over all rows instead of a broadcast batch (whose weight gradient
        # would be a batch of products summed afterwards).
        lead = tuple(input.shape[:-1])
        out = ops.matmul(input.reshape(-1, weight.shape[1]), weight.mT)
        out = out.reshape(*lead, weight.shape[0])
    else:
        out = ops.matmul(input, weight.mT)
    return out if bias is None else out + bias


def dropout(input, p=0.5, training=True, inplace=False):
    """Inverted dropout: zero each element with probability p, scale the rest by 1/(1-p).

    Identity when ``training`` is False or p == 0; all zeros when p == 1. The mask is drawn
    from minitorch's global generator, so ``manual_seed`` makes it reproducible.
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    return input * _make(on_device_of(dropout_factors(tuple(input.shape), p, input._data.dtype),
                                      input._data))


def _attention_keep(shape, p, dtype):
    """Dropout's factors on attention weights of ``shape`` as the fused kernels take them: None
    for p = 0, zeros for p = 1, else ``dropout_factors`` (the same draws ``dropout`` makes)."""
    if p == 0.0:
        return None
    if p == 1.0:
        return np.zeros(shape, dtype)
    return dropout_factors(shape, p, dtype)


# ----------------------------------------------------------------------------- losses

def _classes_last(input, target, name):
    """(M, C) logits and (M,) targets from (N, C, d1, ...) / (N, d1, ...) or (C,) / ()."""
    _check_tensor(input, f"{name}: input")
    _check_tensor(target, f"{name}: target")
    if input.ndim == 0:
        raise ValueError(f"{name}: input must have at least 1 dim (C,), got a 0-d tensor")
    if input.ndim == 1:
        if target.ndim != 0:
            raise ValueError(f"{name}: for input of shape (C,) = {tuple(input.shape)} the target "
                             f"must be 0-d, got shape {tuple(target.shape)}")
        return input.unsqueeze(0), target.reshape(1)
    expected = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expected:
        raise ValueError(f"{name}: target must have shape {expected} for input of shape "
                         f"{tuple(input.shape)}, got {tuple(target.shape)}")
    classes = input.shape[1]
    if input.ndim > 2:
        dims = (0,) + tuple(range(2, input.ndim)) + (1,)
        input = input.permute(*dims).reshape(-1, classes)
        target = target.reshape(-1)
    return input, target


def _check_class_weight(weight, classes, name):
    _check_tensor(weight, f"{name}: weight")
    if tuple(weight.shape) != (classes,):
        raise ValueError(f"{name}: weight must have shape ({classes},) (one per class), got "
                         f"{tuple(weight.shape)}")


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross-entropy between logits and class indices (or class probabilities).

    Shapes as PyTorch: input (N, C) or (N, C, d1, ...) with int64 target (N,) or (N, d1, ...);
    input (C,) with a 0-d target; or a float target of input's shape (class probabilities).
    With class indices, ``label_smoothing`` ε mixes the target with the uniform distribution:
    (1 − ε)·nll + ε/C·Σ_c w_c·(−log p_c), and "mean" divides by the summed weight of the
    targets, as PyTorch. Differs from PyTorch: "mean" over targets that are all
    ``ignore_index`` is 0, not NaN.
    """
    reduction = reduction_argument(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    _check_tensor(input, "cross_entropy: input")
    _check_tensor(target, "cross_entropy: target")
    if target.dtype.is_floating_point:
        return _soft_cross_entropy(input, target, weight, reduction, label_smoothing)
    if weight is not None:
        log_probs = log_softmax(input, 1 if input.ndim > 1 else 0)
        loss = nll_loss(log_probs, target, weight, ignore_index=ignore_index, reduction=reduction)
        if label_smoothing == 0.0:
            return loss
        return _smoothed_weighted(log_probs, target, weight, ignore_index, reduction,
                                  label_smoothing, loss)
    if target.dtype is not int64:
        raise TypeError(f"cross_entropy: target must be int64 class indices, got {target.dtype}")
    out_shape = tuple(target.shape)
    logits, flat_target = _classes_last(input, target, "cross_entropy")
    if not logits.dtype.is_floating_point:
        raise TypeError(f"cross_entropy: input must be floating point, got {logits.dtype}")
    loss = CrossEntropy.apply(logits, flat_target, ignore_index, float(label_smoothing), reduction)
    return loss.reshape(out_shape) if reduction == "none" else loss


def _smoothed_weighted(log_probs, target, weight, ignore_index, reduction, smoothing, nll):
    """Class weights with label smoothing: (1 − ε)·nll + ε/C·(−Σ_c w_c log p_c) per target,
    the second term 0 for ignored targets; "mean" divides both by Σ w_target (PyTorch's)."""
    out_shape = tuple(target.shape)
    rows, flat = _classes_last(log_probs, target, "cross_entropy")
    classes = rows.shape[1]
    valid = flat._data != ignore_index
    smooth = -(rows * weight.to(rows.dtype)).sum(1) * _make(valid.astype(rows._data.dtype))
    if reduction == "none":
        return (1.0 - smoothing) * nll + (smoothing / classes) * smooth.reshape(out_shape)
    smooth = smooth.sum()
    if reduction == "mean":
        picked = weight._data.astype(rows._data.dtype)[np.where(valid, flat._data, 0)]
        total = float((picked * valid).sum())
        smooth = smooth / (total if total != 0 else 1.0)
    return (1.0 - smoothing) * nll + (smoothing / classes) * smooth


def _soft_cross_entropy(input, target, weight, reduction, label_smoothing):
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"cross_entropy: a float target (class probabilities) must have the "
                         f"input's shape {tuple(input.shape)}, got {tuple(target.shape)}")
    class_dim = 1 if input.ndim > 1 else 0
    classes = input.shape[class_dim]
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / classes
    logp = log_softmax(input, class_dim)
    if weight is not None:
        _check_class_weight(weight, classes, "cross_entropy")
        shape = [1] * input.ndim
        shape[class_dim] = classes
        logp = logp * weight.reshape(*shape)
    loss = -(logp * target).sum(class_dim)
    return reduce_loss(loss, reduction)


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` at class indices ``target``.

    Shapes as ``cross_entropy``; "mean" divides by the summed weight of the non-ignored
    targets (0 rather than PyTorch's NaN when there are none).
    """
    reduction = reduction_argument(reduction, size_average, reduce)
    _check_tensor(target, "nll_loss: target")
    if target.dtype is not int64:
        raise TypeError(f"nll_loss: target must be int64 class indices, got {target.dtype}")
    out_shape = tuple(target.shape)
    logp, flat = _classes_last(input, target, "nll_loss")
    classes = logp.shape[1]
    t = flat._data
    valid = t != ignore_index
    bad = valid & ((t < 0) | (t >= classes))
    if bad.any():
        raise IndexError(f"nll_loss: target value {int(t[np.argmax(bad)])} is out of range "
                         f"[0, {classes}) and is not ignore_index ({ignore_index})")
    safe = np.where(valid, t, 0)
    row_weight = valid.astype(logp._data.dtype)
    if weight is not None:
        _check_class_weight(weight, classes, "nll_loss")
        row_weight = row_weight * weight._data.astype(logp._data.dtype)[safe]
    picked = logp.gather(1, _make(safe[:, None])).reshape(-1)
    losses = -picked * _make(row_weight)
    if reduction == "none":
        return losses.reshape(out_shape)
    if reduction == "sum":
        return losses.sum()
    total = float(row_weight.sum())
    return losses.sum() / (total if total != 0 else 1.0)


# ----------------------------------------------------------------------------- attention

def _as_kernel_mask(mask, dtype, name, true_means_excluded):
    """A mask in the fused softmax's convention: bool True = excluded, or an additive float."""
    if mask is None:
        return None
    _check_tensor(mask, name)
    if mask.dtype is bool_:
        return mask if true_means_excluded else ~mask
    if not mask.dtype.is_floating_point:
        raise TypeError(f"{name}: expected a bool or floating point mask, got {mask.dtype}")
    return mask.to(dtype)


def _merge_masks(a, b):
    """One mask equivalent to applying both (kernel convention): OR of bools, else a sum."""
    if a is None or b is None:
        return a if b is None else b
    if a.dtype is bool_ and b.dtype is bool_:
        return a | b
    dtype = a.dtype if a.dtype is not bool_ else b.dtype

    def additive(m):
        if m.dtype is bool_:
            return _make(np.where(m._data, -np.inf, 0.0).astype(dtype.numpy))
        return m
    return additive(a) + additive(b)


def _scores_shape_with_mask(mask, scores_shape):
    """The attention scores' shape once ``mask`` is broadcast against them (a mask with more
    batch dims makes more of them); a ValueError naming both where it does not broadcast."""
    try:
        return tuple(np.broadcast_shapes(tuple(mask.shape), tuple(scores_shape)))
    except ValueError:
        raise ValueError(f"attention mask of shape {tuple(mask.shape)} does not broadcast to "
                         f"the attention scores' shape {tuple(scores_shape)} (..., L, S)"
                         ) from None


def _fused_attention_applies(query, key, value, mask):
    """Whether scaled_dot_product_attention can be the one ``Attention`` node: 4-D heads of one
    batch shape, numpy float32/64 arrays of one dtype, a mask without gradient that does not
    widen the scores."""
    if query.ndim != 4 or key.ndim != 4 or value.ndim != 4:
        return False
    if not query.shape[:2] == key.shape[:2] == value.shape[:2]:
        return False
    if not _fused_float_arrays(query, key, value):
        return False
    if mask is None:
        return True
    scores_shape = tuple(query.shape[:3]) + (key.shape[2],)
    return (not mask.requires_grad and type(mask._data) is np.ndarray
            and _scores_shape_with_mask(mask, scores_shape) == scores_shape)


def _attention(query, key, value, mask=None, causal=False, scale=1.0, dropout_p=0.0):
    """softmax(q·kᵀ·scale + mask)·v with the fused softmax; returns (output, weights).

    ``mask`` is in the kernel's convention (bool True = excluded, float added). A row with
    every key excluded has all-zero weights, so its output and gradients are zeros.
    """
    scores = ops.matmul(query, key.mT)
    if mask is not None:
        if _scores_shape_with_mask(mask, scores.shape) != tuple(scores.shape):
            mask = mask.expand(*np.broadcast_shapes(tuple(mask.shape), tuple(scores.shape)))
            scores = scores.expand(*mask.shape)
    if mask is not None and mask.requires_grad:
        # A learned additive bias: add it in the graph so it gets its gradient.
        weights = Softmax.apply(scores * scale + mask, 1.0, None, causal)
    else:
        weights = Softmax.apply(scores, float(scale), None if mask is None else mask.detach(),
                                causal)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return ops.matmul(weights, value), weights


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(Q Kᵀ · scale + mask) V for Q (..., L, E), K (..., S, E), V (..., S, Ev).

    As ``torch.nn.functional.scaled_dot_product_attention``: a bool ``attn_mask`` says which
    positions TAKE PART (True = attend), a float one is added to the scores; ``is_causal``
    masks key j > query i (top-left aligned when L != S); default scale 1/sqrt(E).
    Differs from PyTorch: a query row whose keys are all masked gives zeros in the output
    and in every gradient (PyTorch gives NaN).
    """
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, f"scaled_dot_product_attention: {name}")
        if t.ndim < 2:
            raise ValueError(f"scaled_dot_product_attention: {name} needs at least 2 dims "
                             f"(..., length, features), got shape {tuple(t.shape)}")
    if enable_gqa:
        raise NotImplementedError("scaled_dot_product_attention: enable_gqa is not supported")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"scaled_dot_product_attention: query and key must have the same last "
                         f"dim E, got {query.shape[-1]} and {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(f"scaled_dot_product_attention: key and value must have the same "
                         f"length S, got {key.shape[-2]} and {value.shape[-2]}")
    if is_causal and attn_mask is not None:
        raise ValueError("scaled_dot_product_attention: pass either attn_mask or is_causal=True, "
                         "not both (as in PyTorch)")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"scaled_dot_product_attention: dropout_p must be in [0, 1], got "
                         f"{dropout_p}")
    if scale is None:  # E = 0: every score is an empty sum, 0, whatever the scale (PyTorch's)
        scale = 1.0 / math.sqrt(query.shape[-1]) if query.shape[-1] else 1.0
    mask = _as_kernel_mask(attn_mask, query.dtype, "scaled_dot_product_attention: attn_mask",
                           true_means_excluded=False)
    if _fused_attention_applies(query, key, value, mask):
        keep = _attention_keep(tuple(query.shape[:3]) + (key.shape[2],), dropout_p,
                               query._data.dtype)
        return Attention.apply(query, key, value, mask, bool(is_causal), float(scale), keep)
    out, _ = _attention(query, key, value, mask, bool(is_causal), scale, dropout_p)
    return out


def _fused_float_arrays(input, *params):
    """True if ``input`` and ``params`` (Tensors) are numpy arrays of one dtype, float32 or
    float64: what the fused Linear nodes take."""
    if not isinstance(input, Tensor) or type(input._data) is not np.ndarray:
        return False
    dtype = input.dtype
    return (input._data.dtype.kind == "f" and input._data.itemsize >= 4
            and all(p.dtype is dtype and type(p._data) is np.ndarray for p in params))


def _feed_forward_relu(input, weight1, bias1, weight2, bias2):
    """linear(relu(linear(input, weight1, bias1)), weight2, bias2), the Transformer's
    feed-forward block without dropout: one node (ops.linalg.FeedForwardReLU) for float32 or
    float64 numpy arrays of one dtype with both biases; else the calls one by one."""
    if (bias1 is not None and bias2 is not None and _fused_float_arrays(
            input, weight1, bias1, weight2, bias2) and weight1.ndim == 2 and weight2.ndim == 2
            and input.ndim >= 1 and input.shape[-1] == weight1.shape[1]
            and weight2.shape[1] == weight1.shape[0]
            and bias1._data.shape == weight1._data.shape[:1]
            and bias2._data.shape == weight2._data.shape[:1]):
        return _FeedForwardReLUFunction.apply(input, weight1, bias1, weight2, bias2)
    return linear(_linear_relu(input, weight1, bias1), weight2, bias2)


def _linear_relu(input, weight, bias):
    """relu(linear(input, weight, bias)), the feed-forward block's first half: one node
    (ops.linalg.LinearReLU: the GEMM, then bias and ReLU in one pass, in place) for float32 or
    float64 numpy arrays of one dtype with a (out_features,) bias; else the two calls."""
    if (bias is not None and _fused_float_arrays(input, weight, bias) and weight.ndim == 2
            and input.ndim >= 1 and input.shape[-1] == weight.shape[1]
            and bias._data.shape == weight._data.shape[:1]):
        return _LinearReLUFunction.apply(input, weight, bias)
    return relu(linear(input, weight, bias))
