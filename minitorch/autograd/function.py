"""``Function`` and its ``Context``: how an op records itself in the graph.

Every differentiable op is a subclass of ``Function`` with two static methods, as in
``torch.autograd.Function``::

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):              # runs under no_grad, on Tensors
            y = minitorch.Tensor._make(np.exp(x._data))   # ._data: the numpy array
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):          # written in Tensor ops, so it is differentiable too
            (y,) = ctx.saved_tensors
            return grad * y

``Exp.apply(x)`` runs ``forward`` and, when grad mode is on and some input requires grad,
makes the ``Context`` the node of the graph: the output tensors point at it (``grad_fn``),
and it points at its inputs (a leaf itself; an input another node made, through that node:
what backward needs of it, it saves). The engine (engine.py) later walks these nodes
backwards, calling ``fn.backward(ctx, *output_grads)`` on each.
"""
from ..device_arrays import check_same_device
from ..dtype import _BY_NUMPY
from .grad_mode import _state as _grad_state

# The numpy dtypes of floating tensors: outputs of these join the graph.
_FLOATING = frozenset(d for d, dtype in _BY_NUMPY.items() if dtype.is_floating_point)


class Context:
    """A node of the graph: what ``backward`` needs, and the edges to the inputs.

    For the Function: ``save_for_backward``/``saved_tensors`` (checked against in-place
    changes), ``needs_input_grad`` (one bool per positional argument of ``apply``),
    ``mark_non_differentiable``, and any attribute it sets itself (``ctx.dim = dim``).

    For the engine: ``inputs`` (per input: None where no gradient is needed, the tensor itself
    for a leaf, and for an input some node made only its ``(shape, numpy dtype)``: the node
    keeps no intermediate alive that its backward does not save, as PyTorch's),
    ``input_edges`` (for each such input, ``(node that made it, its output index)`` at the time
    of use, or None for a leaf), ``output_meta`` (shape and numpy dtype of each output, to make
    zeros for an unused one), ``output_hooks`` (None, or output index -> hooks on that output
    tensor), ``free``.
    """

    # Class-level defaults: a Context is made for every op, so attributes that most ops leave
    # as they are cost nothing per instance.
    _saved = ()
    _saved_versions = ()
    _freed = False
    _non_differentiable = ()
    _outside_graph = False  # set by apply for a node that enters no graph: it saves nothing
    output_meta = ()
    output_hooks = None
    inputs = input_edges = ()

    def __init__(self, fn, args):
        self.fn = fn
        tensor = _Tensor or _tensor_class()  # a global read, not a call: this runs for every op
        # Two inputs (the arithmetic) spelled out, else a list comprehension and `True in`, not
        # generators and any(): cheaper, once per op.
        if len(args) == 2:
            a, b = args
            needs = (isinstance(a, tensor) and a.requires_grad,
                     isinstance(b, tensor) and b.requires_grad)
        else:
            needs = tuple([isinstance(a, tensor) and a.requires_grad for a in args])
        self.needs_input_grad = needs

    def record_inputs(self, args):
        """``inputs`` and ``input_edges`` from ``apply``'s arguments, for a node that enters the
        graph (grad mode on, some input requiring grad)."""
        if len(args) == 2:  # the binary ops, the commonest: the loop below spelled out
            (a, b), (need_a, need_b) = args, self.needs_input_grad
            leaf_a = need_a and a._ctx is None
            leaf_b = need_b and b._ctx is None
            self.inputs = (
                None if not need_a else a if leaf_a else (a._data.shape, a._data.dtype),
                None if not need_b else b if leaf_b else (b._data.shape, b._data.dtype))
            self.input_edges = (None if not need_a or leaf_a else (a._ctx, a._output_nr),
                                None if not need_b or leaf_b else (b._ctx, b._output_nr))
            return
        inputs, edges = [], []
        for a, need in zip(args, self.needs_input_grad):
            if not need:
                inputs.append(None)
                edges.append(None)
            elif a._ctx is None:  # a leaf: its .grad is where the gradient goes
                inputs.append(a)
                edges.append(None)
            else:
                inputs.append((a._data.shape, a._data.dtype))
                # The node that made the input *now*: an in-place op later re-points the
                # tensor's ``_ctx`` at its new history, which must not change this node.
                edges.append((a._ctx, a._output_nr))
        self.inputs, self.input_edges = tuple(inputs), tuple(edges)

    def save_for_backward(self, *tensors):
        if self._outside_graph:  # no_grad, or no input needing grad: backward never runs
            return
        self._saved = tensors
        if len(tensors) == 2:  # the binary ops, the commonest: the comprehension spelled out
            a, b = tensors
            self._saved_versions = (None if a is None else a._version[0],
                                    None if b is None else b._version[0])
        else:
            self._saved_versions = tuple([None if t is None else t._version[0] for t in tensors])

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
        """Drop the saved tensors: the engine's step after backward unless ``retain_graph``."""
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
    """Base class of differentiable operations; subclass it and call ``.apply(*args)``.

    ``backward_gives_slices``: True where ``backward`` hands each input its own slice (a view)
    of an output gradient (cat's, stack's); a leaf may then keep a contiguous one as its
    ``.grad`` without a copy (engine.GradientBuffer.take_result)."""

    backward_gives_slices = False

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run ``forward``; when recording, make its outputs the node's outputs in the graph."""
        ctx = Context(cls, args)
        state = _grad_state
        grad_mode = state.enabled
        # 1. if grad mode is on and an input requires grad, the node's edges to its inputs
        # (under no_grad, with parameters among the inputs, there is nothing to record)
        recording = grad_mode and True in ctx.needs_input_grad
        if recording:
            ctx.record_inputs(args)
        else:
            ctx._outside_graph = True
        # 2. forward, with grad mode off (``with no_grad():`` inlined: apply runs for every op;
        # the mode is thread-local, and with it already off there is nothing to switch)
        # (an error there from inputs on two devices is reported as that: _name_devices)
        if grad_mode:
            state.enabled = False
            try:
                outputs = cls.forward(ctx, *args, **kwargs)
            except Exception as error:
                _name_devices(cls, args, error)
                raise
            finally:
                state.enabled = True
        else:
            try:
                outputs = cls.forward(ctx, *args, **kwargs)
            except Exception as error:
                _name_devices(cls, args, error)
                raise
        # 3. each float output points at ctx
        if recording:
            if type(outputs) is not tuple:  # one output (most ops): no loop
                data = outputs._data
                ctx.output_meta = ((data.shape, data.dtype),)
                skip = ctx._non_differentiable
                if data.dtype in _FLOATING and not (skip and id(outputs) in skip):
                    outputs._ctx, outputs._output_nr, outputs.requires_grad = ctx, 0, True
                return outputs
            ctx.output_meta = tuple([(o._data.shape, o._data.dtype) for o in outputs])
            skip = ctx._non_differentiable
            for index, out in enumerate(outputs):
                if (skip and id(out) in skip) or out._data.dtype not in _FLOATING:
                    continue
                out._ctx, out._output_nr, out.requires_grad = ctx, index, True
        return outputs


def _name_devices(cls, args, error):
    """A forward that failed on inputs from two devices: RuntimeError naming both (numpy's or
    the GPU library's own error says only that an array was of the wrong type)."""
    arrays = [a._data for a in args if isinstance(a, _tensor_class())]
    if len(arrays) > 1:
        try:
            check_same_device(arrays, cls.__name__)
        except RuntimeError as mixed:
            raise mixed from error
