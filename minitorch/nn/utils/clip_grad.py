"""Gradient clipping: ``clip_grad_norm_`` (rescale all gradients together) and
``clip_grad_value_`` (clamp each element), as ``torch.nn.utils``.

Both work in place on each parameter's ``.grad`` storage, between ``backward()`` and
``optimizer.step()``.

``foreach`` (PyTorch's choice of a fused implementation) is accepted and changes nothing.

Under ``minitorch.capture`` both are recorded (clip_grad_norm_'s norms change every step: its
scaling is a host callback, ``_ClipByNorm``).

May import: math, numpy, ``minitorch.tensor``, ``minitorch.creation``,
``minitorch.device_arrays``, ``minitorch.backends.tape``.
"""
import math

import numpy as np

from ...backends import tape as tapes
from ...creation import tensor
from ...device_arrays import on_device_of
from ...tensor import Tensor


def _grads(parameters, caller):
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = []
    for index, p in enumerate(parameters):
        if not isinstance(p, Tensor):
            raise TypeError(f"{caller}: parameters must be Tensors, but parameters[{index}] is a "
                            f"{type(p).__name__}")
        if p.grad is not None:
            grads.append(p.grad)
    return grads


def _vector_norm(array, norm_type):
    """The ``norm_type``-norm of all elements of ``array``, as ``torch.linalg.vector_norm``."""
    if array.size == 0:
        return array.dtype.type(0)
    if norm_type == 2:  # (the usual one: no array of magnitudes)
        flat = array.ravel()
        return np.sqrt(np.dot(flat, flat))
    if norm_type == 0:
        return array.dtype.type(np.count_nonzero(array))
    magnitudes = np.abs(array)
    if norm_type == math.inf:
        return magnitudes.max()
    if norm_type == -math.inf:
        return magnitudes.min()
    if norm_type == 1:
        return magnitudes.sum(dtype=array.dtype)
    return (magnitudes ** norm_type).sum(dtype=array.dtype) ** (1.0 / norm_type)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False,
                    foreach=None):
    """Scale the gradients of ``parameters`` so that their total norm is at most ``max_norm``.

    The total norm is the ``norm_type``-norm of all gradients together (as if concatenated into
    one vector; ``math.inf`` for the largest magnitude). Every gradient is multiplied by
    ``min(1, max_norm / (total_norm + 1e-6))``. Returns the total norm from *before* clipping,
    a 0-d tensor of the gradients' dtype (``tensor(0.)``, of the default dtype, when no
    parameter has a gradient).

    A NaN or infinite total norm raises RuntimeError (as PyTorch) if ``error_if_nonfinite``;
    otherwise the gradients are scaled by it anyway (and so become NaN or 0). ``foreach``
    picks among PyTorch's implementations; minitorch has one, so it changes nothing.
    """
    grads = _grads(parameters, "clip_grad_norm_")
    max_norm, norm_type = float(max_norm), float(norm_type)
    if max_norm < 0 or math.isnan(max_norm):
        raise ValueError(f"clip_grad_norm_: max_norm must be >= 0, got {max_norm}")
    if len(grads) == 0:
        return tensor(0.0)
    dtype = np.result_type(*(g._data.dtype for g in grads))
    total = on_device_of(np.zeros((), dtype=dtype), grads[0]._data)
    tapes.host(_ClipByNorm([g._data for g in grads], max_norm, norm_type, error_if_nonfinite,
                           total))
    for g in grads:
        g._version[0] += 1
    return Tensor._make(total)


class _ClipByNorm:
    """The gradient arrays scaled by min(1, max_norm / (total norm + 1e-6)), the total norm
    written into ``total``: a callable, so that a captured step runs it again on each replay
    (tape.host), with the norms of that step's gradients."""

    def __init__(self, grads, max_norm, norm_type, error_if_nonfinite, total):
        self.grads, self.total = grads, total
        self.max_norm, self.norm_type = max_norm, norm_type
        self.error_if_nonfinite = error_if_nonfinite

    def arrays(self):
        return self.grads + [self.total]

    def __call__(self):
        dtype, norm_type = self.total.dtype, self.norm_type
        # each norm to the host (exactly: float() of a float32 is exact), the total there
        per_grad = np.array([float(_vector_norm(g, norm_type)) for g in self.grads], dtype=dtype)
        total_norm = _vector_norm(per_grad, norm_type)
        if self.error_if_nonfinite and not np.isfinite(total_norm):
            raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} for "
                               f"gradients from `parameters` is non-finite ({total_norm}), so it "
                               "cannot be clipped. To disable this error and scale the gradients "
                               "by the non-finite norm anyway, set `error_if_nonfinite=False`")
        clip_coef = min(dtype.type(self.max_norm) / (total_norm + dtype.type(1e-6)),
                        dtype.type(1.0))
        for g in self.grads:
            g *= clip_coef
        self.total[...] = total_norm


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamp every gradient element of ``parameters`` into ``[-clip_value, clip_value]``
    (``foreach``: PyTorch's choice of implementation, accepted and ignored).

    Differs from PyTorch only in refusing a negative ``clip_value`` (ValueError) instead of
    silently setting every gradient to it.
    """
    clip_value = float(clip_value)
    if not clip_value >= 0:
        raise ValueError(f"clip_grad_value_: clip_value must be >= 0, got {clip_value}")
    for g in _grads(parameters, "clip_grad_value_"):
        tapes.record(np.clip, g._data, -clip_value, clip_value, g._data)
        g._version[0] += 1
