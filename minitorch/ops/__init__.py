"""Differentiable ops, one Function per op, grouped by family, each declaring its public names
(``minitorch.<name>``, the Tensor method, the in-place form) with ``registry.op``:

- ``elementwise.py``: arithmetic, math, activations, comparisons, where/masked_fill
- ``reduction.py``: sum, mean, max/min, var, logsumexp, argmax, ...
- ``shape.py``: views, cat/stack/split, indexing, gather/index_select, ``copy_``
- ``indexing_put.py``: ``index_put`` and ``tensor[index] = value``
- ``scatter.py``: scatter, scatter_add, index_fill, index_add
- ``sorting.py``: sort, argsort, topk, unique, nonzero, masked_select
- ``scan.py``: cumsum, cumprod
- ``tiling.py``: roll, repeat_interleave, tile, diag
- ``rounding.py``: round, floor, ceil, trunc, fmod, remainder (``%``)
- ``closeness.py``: isclose, allclose
- ``linalg.py``: matmul, mm, bmm, outer, einsum, linear
- ``fused.py``: softmax, log_softmax, cross-entropy and layer norm on the backend's kernels
- ``lookup.py``: rows of a table picked by integer ids (``F.embedding``)
- ``dropout.py``: dropout's random factors (``F.dropout``, attention's dropout)
- ``cast.py``: dtype changes (``.to``, ``.float()``, ...)
- ``fill.py``: in-place fills that carry no gradient (``zero_``, ``fill_``, ``normal_``, ...)
- ``graph_methods.py``: ``Tensor.backward``
- ``registry.py``: the declarations, and binding them to Tensor

Adding a file here needs no edit elsewhere: every module of the package is imported below.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends``,
``minitorch.random``.
"""
import importlib
import pkgutil

from . import registry

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")
registry.bind()
globals().update(registry.namespace())  # minitorch.ops.add, ... for the layers above
