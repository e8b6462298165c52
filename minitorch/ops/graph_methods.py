"""``Tensor.backward``: autograd's ``backward`` as a method, bound here because tensor.py
imports nothing above it."""
from .. import autograd
from .registry import tensor_method


@tensor_method("backward")
def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulate d(self)/d(leaf) into ``.grad`` of every leaf (or of ``inputs``)."""
    autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)
