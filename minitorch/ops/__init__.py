"""Differentiable ops, one Function per op, grouped by family:

- ``elementwise.py``: arithmetic, math, activations, comparisons, where/masked_fill
- ``reduction.py``: sum, mean, max/min, var, logsumexp, argmax, ...
- ``shape.py``: views, cat/stack/split, indexing, gather/index_select
- ``indexing_put.py``: ``tensor[index] = value``
- ``linalg.py``: matmul
- ``fused.py``: softmax, log_softmax, cross-entropy and layer norm on the C kernels

May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``.
"""
from .elementwise import (abs, add, clamp, cos, div, eq, erf, exp, ge, gelu, gt, isfinite, isinf,
                          isnan, le, log, logical_and, logical_not, logical_or, logical_xor, lt,
                          masked_fill, maximum, minimum, mul, ne, neg, pow, relu, rsqrt, sigmoid,
                          sign, sin, sqrt, sub, tanh, where)
from .fused import log_softmax, softmax
from .linalg import matmul
from .reduction import (all, amax, amin, any, argmax, argmin, logsumexp, max, mean, min, std, sum,
                        var)
from .shape import (broadcast_to, cat, chunk, clone, contiguous, expand, flatten, flip, gather,
                    getitem, index_select, narrow, permute, repeat, reshape, split, squeeze, stack,
                    t, transpose, tril, triu, unbind, unflatten, unsqueeze, view)
