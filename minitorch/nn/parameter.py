"""``Parameter``: a tensor that a ``Module`` registers as one of its learnable weights.

A Parameter is a leaf Tensor (the engine treats any tensor with ``_ctx is None`` as a leaf)
with ``requires_grad=True`` by default; assigning one to a Module attribute registers it.
It shares memory with the tensor it wraps, as ``torch.nn.Parameter`` does.
May import: ``minitorch.tensor``.
"""
import numpy as np

from ..tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module's learnable weight: ``Parameter(tensor, requires_grad=True)``."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            array = np.zeros((0,), dtype=np.float32)
        elif isinstance(data, Tensor):
            array = data._data
        else:
            array = Tensor(data)._data
        self._init(array)
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__
