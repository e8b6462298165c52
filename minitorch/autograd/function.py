"""``Function`` and its ``Context``: how an op records itself in the graph.

Every differentiable op is a subclass of ``Function`` with two static methods, as in
``torch.autograd.Function``::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):              # runs under no_grad, on Tensors
            y = minitorch.Tensor._make(np.exp(x.data))
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):          # written in Tensor ops, so it is differentiable too
            (y,) = ctx.saved_tensors
            return grad * y

``Exp.apply(x)`` runs ``forward`` and, when grad mode is on and some input requires grad,
makes the ``Context`` the node of the graph: the output tensors point at it (``grad_fn``),
and it points at the input tensors. The engine (engine.py) later walks these nodes backwards.
"""
from .grad_mode import is_grad_enabled, no_grad


class Context:
    """Node of the graph: what ``backward`` needs, and the edges to the inputs.

    Attributes a Function may use: ``save_for_backward``, ``saved_tensors``,
    ``needs_input_grad`` (one bool per positional argument of ``apply``),
    ``mark_non_differentiable`` and any attribute it sets itself (``ctx.dim = dim``).
    """

    def __init__(self, fn, args):
        self.fn = fn
        tensor = _tensor_class()
        needs, inputs, edges = [], [], []
        for a in args:
            need = isinstance(a, tensor) and a.requires_grad
            needs.append(need)
            inputs.append(a if need else None)
            # The node that made the input *now*: an in-place op later re-points the tensor's
            # own ``_ctx`` at its new history, which must not change what this node computes.
            edges.append((a._ctx, a._output_nr) if need and a._ctx is not None else None)
        self.needs_input_grad, self.inputs, self.input_edges = \
            tuple(needs), tuple(inputs), tuple(edges)
        self._saved = ()
        self._saved_versions = ()
        self._freed = False
        self._non_differentiable = ()
        self.output_meta = ()       # (shape, dtype) of each output, to make zero grads
        self.output_hooks = {}      # output index -> hooks registered on that non-leaf tensor

    def save_for_backward(self, *tensors):
        self._saved = tensors
        self._saved_versions = tuple(None if t is None else t._version[0] for t in tensors)

    @property
    def saved_tensors(self):
        if self._freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or to read saved tensors "
                "after they have been freed). Saved tensors are freed after backward; pass "
                "retain_graph=True to the first backward if you need to backward twice.")
        for t, version in zip(self._saved, self._saved_versions):
            if t is not None and t._version[0] != version:
                raise RuntimeError(
                    f"one of the tensors needed for gradient computation has been modified by an "
                    f"in-place operation: a tensor of shape {tuple(t.shape)} saved by "
                    f"{self.name()} is at version {t._version[0]}; expected version {version}. "
                    "Use an out-of-place op (or .clone()) before modifying it.")
        return self._saved

    def mark_non_differentiable(self, *tensors):
        self._non_differentiable = tuple(id(t) for t in tensors)

    def free(self):
        self._saved = ()
        self._freed = True

    def name(self):
        return self.fn.__name__ + "Backward"

    def __repr__(self):
        return f"<{self.name()}>"


_Tensor = None


def _tensor_class():
    """``minitorch.Tensor``, imported on first use (tensor.py imports this package)."""
    global _Tensor
    if _Tensor is None:
        from ..tensor import Tensor
        _Tensor = Tensor
    return _Tensor


class Function:
    """Base class of differentiable operations; subclass it and call ``.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = Context(cls, args)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        if is_grad_enabled() and any(ctx.needs_input_grad):
            single = not isinstance(outputs, tuple)
            outs = (outputs,) if single else outputs
            ctx.output_meta = tuple((o.shape, o.dtype) for o in outs)
            for index, out in enumerate(outs):
                if id(out) in ctx._non_differentiable or not out.dtype.is_floating_point:
                    continue
                out._ctx, out._output_nr, out.requires_grad = ctx, index, True
        return outputs
