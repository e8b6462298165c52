"""The backward pass: order the graph's nodes, walk them in reverse, call each node's backward
and hand the gradients it returns on to the nodes (or leaves) that made its inputs.

It is micrograd's ``Value.backward`` with nodes that have several inputs and outputs::

    order = topological_order(roots)      # each node after the nodes that made its inputs
    for node in reversed(order):          # so each node runs after all its consumers
        grads = buffer.pop(node)          # its output gradients, summed over its consumers
        input_grads = node.fn.backward(node, *grads)
        for each input and its gradient: buffer.add(input, gradient)

plus PyTorch's extras, each a named step of ``run_backward``: tensor hooks (and a leaf's
post-accumulate hooks, run as soon as its gradient is complete), ``inputs=`` (only
the part of the graph that leads to them runs), freeing saved tensors unless ``retain_graph``,
and ``create_graph`` (backward formulas run with grad mode on, so the gradients get a graph of
their own and can be differentiated again); in anomaly mode (anomaly.py), each backward runs
under its checks.

A node is a ``Context`` (function.py): ``node.input_edges[i]`` is ``(node that made it, its
output index)`` for its i-th input, or None for a leaf; ``node.inputs[i]`` is the leaf itself,
or of an input some node made only ``(shape, numpy dtype)`` (the node keeps no intermediate
alive that its backward does not save), or None if the input needs no gradient. A leaf's
gradient becomes its ``.grad`` without a copy when nothing else holds it (``take_result``), or
when it is a contiguous slice of a gradient that a cat's or stack's backward cut for it alone
(as PyTorch's AccumulateGrad keeps such a view: it shares memory with that gradient, which may
be the one the caller passed to ``backward``).
Nothing here recurses, so a chain of 100,000 ops back-propagates within Python's recursion
limit.
"""
from sys import getrefcount
from weakref import getweakrefcount


import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import array_module, is_writeable
from ..dtype import _BY_NUMPY
from . import anomaly
from .function import _tensor_class
from .grad_mode import is_grad_enabled, set_grad_enabled


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None,
                 accumulate=True):
    """Propagate ``grad_outputs`` from ``outputs`` back through the graph.

    The gradients of the leaves that require grad (or, given ``inputs``, of those tensors) are
    added to their ``.grad`` when ``accumulate``, else returned, one per input (None where no
    gradient reached it). With ``inputs``, only the nodes that lead to them run (and are freed).
    """
    buffer = GradientBuffer(inputs)
    check_anomalies = anomaly._mode.enabled  # read once: anomaly mode costs nothing when off
    order = topological_order([out._ctx for out in outputs if out._ctx is not None])
    if inputs is not None:
        order = _leading_to(order, buffer.wanted)
    # A leaf's gradient is complete once the last node that uses it has run: the leaf is
    # finished then (hooks, .grad, post-accumulate hooks) while the rest of the graph still
    # runs, as PyTorch's AccumulateGrad is, so that DistributedDataParallel can start sending
    # it. The tensors ``inputs`` names are finished at the end instead.
    uses_left, with_leaves = _leaf_uses(order) if inputs is None else ({}, ())
    with set_grad_enabled(create_graph):
        for out, grad in zip(outputs, grad_outputs):
            buffer.add(out, None if out._ctx is None else (out._ctx, out._output_nr), grad)
        grad = None
        pop, add = buffer.pop, buffer.add
        for node in reversed(order):
            grads = pop(node)
            if grads is not None:  # else no gradient reached it (its consumers returned None)
                if node.output_hooks:
                    grads = _run_output_hooks(node, grads)
                input_grads = _call_backward(node, grads) if not check_anomalies \
                    else anomaly.checked_backward(node, grads, _call_backward)
                if not retain_graph:
                    node.free()
                slices = node.fn.backward_gives_slices
                for tensor, edge, grad in zip(node.inputs, node.input_edges, input_grads):
                    if grad is not None and tensor is not None:
                        add(tensor, edge, grad, slices)
                # The buffer now holds the only references this loop made to the gradients:
                # a leaf's gradient can then become its .grad without a copy (take_result).
                grads = input_grads = grad = None
            if node in with_leaves:
                for tensor, edge in zip(node.inputs, node.input_edges):
                    if edge is None and tensor is not None:
                        key = id(tensor)
                        left = uses_left[key] = uses_left[key] - 1
                        if left == 0 and key in buffer.tensors:
                            _finish_leaf(*buffer.take_result(key), create_graph)
        results = {}  # a leaf's hooks run once, on the sum of all that reached it (as PyTorch's)
        while buffer.tensors:  # taken one by one, so that each gradient is released in turn
            key = next(reversed(buffer.tensors))
            if accumulate:
                _finish_leaf(*buffer.take_result(key), create_graph)
            else:
                tensor, grad, _ = buffer.take_result(key)
                results[key] = _run_hooks(tensor._hooks, grad)
    return None if accumulate else [results.get(_result_key(t)) for t in inputs]


def _result_key(tensor):
    """How the buffer knows a tensor whose gradient is a result: a leaf by its id, any other
    by its edge (node, output index), which is all that the nodes using it keep of it."""
    return id(tensor) if tensor._ctx is None else (tensor._ctx, tensor._output_nr)


def _leaf_uses(order):
    """id(leaf) -> how many inputs of the nodes in ``order`` are that leaf (requiring grad); and
    the set of those nodes with such an input (in a long graph, few)."""
    uses, with_leaves = {}, set()
    for node in order:
        for tensor, edge in zip(node.inputs, node.input_edges):
            if edge is None and tensor is not None:
                uses[id(tensor)] = uses.get(id(tensor), 0) + 1
                with_leaves.add(node)
    return uses, with_leaves


def _finish_leaf(tensor, grad, owned, create_graph):
    """The leaf's hooks on its whole gradient, the sum into ``.grad``, then its post-accumulate
    hooks (``register_post_accumulate_grad_hook``). ``owned``: nothing but the engine holds
    ``grad`` (GradientBuffer.take_result)."""
    if tensor._hooks:
        grad, owned = _run_hooks(tensor._hooks, grad), False  # a hook may have kept it
    _accumulate_into_grad(tensor, grad, owned, create_graph)
    if tensor._post_accumulate_grad_hooks:
        for hook in tuple(tensor._post_accumulate_grad_hooks):
            hook(tensor)


def topological_order(roots):
    """Every node reachable from ``roots``, each after all the nodes that made its inputs.

    Depth-first post-order (a node is appended once all its inputs' nodes are) with an explicit
    stack instead of recursion, so a deep graph costs no Python frames."""
    order, seen = [], set()
    stack = [(node, False) for node in roots]
    while stack:
        node, inputs_done = stack.pop()
        if inputs_done:
            order.append(node)
        elif node not in seen:
            seen.add(node)
            stack.append((node, True))
            for edge in node.input_edges:
                if edge is not None and edge[0] not in seen:
                    stack.append((edge[0], False))
    return order


def _leading_to(order, wanted):
    """The nodes of ``order`` that have a path to a tensor in ``wanted`` (keyed by
    ``_result_key``)."""
    useful = set()
    for node in order:  # the nodes that made a node's inputs come first: one pass suffices
        if any(t is not None and (id(t) in wanted if edge is None else
                                  (edge in wanted or edge[0] in useful))
               for t, edge in zip(node.inputs, node.input_edges)):
            useful.add(node)
    return [node for node in order if node in useful]


class GradientBuffer:
    """Gradients on their way, summed per destination until their destination takes them.

    A destination is an output of a node (taken by ``pop`` when the node runs) or a tensor
    whose gradient is the result: a leaf that requires grad, or each of ``inputs`` if given.
    """

    def __init__(self, inputs=None):
        # key -> the tensor ``inputs`` names (a node keeps only the edge of a non-leaf input)
        self.wanted = None if inputs is None else {_result_key(t): t for t in inputs}
        self.nodes = {}    # node -> one gradient per output of the node (None: none yet)
        self.tensors = {}  # key -> (tensor, gradient), for the result tensors
        self.slices = set()  # keys of those whose gradient is one slice cat or stack's backward cut

    def add(self, tensor, edge, grad, is_slice=False):
        """Add ``grad`` to what an input has received: ``tensor`` is the tensor for a leaf
        (``edge`` None), else (node that made it, output index) is its ``edge``. ``is_slice``:
        ``grad`` is this input's own slice of a gradient (Function.backward_gives_slices)."""
        wanted = self.wanted
        if wanted is None:
            key = id(tensor) if edge is None and tensor.requires_grad else None  # for its .grad
        else:
            key = id(tensor) if edge is None else edge
            if key in wanted:
                tensor = wanted[key]
            else:
                key = None
        if key is not None:
            previous = self.tensors.get(key)
            self.tensors[key] = (tensor, grad if previous is None else previous[1] + grad)
            if is_slice and previous is None:
                self.slices.add(key)
            elif self.slices:
                self.slices.discard(key)  # a sum is a new array
        if edge is not None:
            node, index = edge
            grads = self.nodes.get(node)
            if grads is None:
                grads = self.nodes[node] = [None] * len(node.output_meta)
            grads[index] = grad if grads[index] is None else _summed(grads, index, grad)

    def pop(self, node):
        """The node's output gradients (zeros for outputs nobody used); None if none came."""
        grads = self.nodes.pop(node, None)
        if grads is not None and len(grads) > 1:  # one output: its gradient is there
            make = _tensor_class()._make
            xp = array_module(next(g for g in grads if g is not None)._data)  # their device
            grads = [make(tapes.constant(xp.zeros(shape, dtype))) if grad is None else grad
                     for grad, (shape, dtype) in zip(grads, node.output_meta)]
        return grads

    def take_result(self, key):
        """``(tensor, gradient, owned)`` for a result tensor, out of the buffer. ``owned``: no
        one else holds the gradient, not even a view of its memory, so it can become ``.grad``
        as it is (PyTorch's AccumulateGrad steals such a gradient too). Reference counts decide:
        one per holder, exact in CPython; a caller still holding it only costs a copy."""
        tensor, grad = self.tensors.pop(key)
        # getrefcount counts its own argument: 2 is the name ``grad`` here / the Tensor's slot
        # ``_data`` alone (plus, while a step is captured, the tape's: tapes.references). A
        # slice (self.slices) shares its base with the other slices: it must be C-contiguous,
        # the layout a leaf's .grad has (PyTorch's layout contract).
        data = grad._data
        owned = (getrefcount(grad) == 2 and getrefcount(data) == 3 + tapes.references(data)
                 and type(grad) is _tensor_class() and is_writeable(data)
                 and grad._ctx is None and not grad.requires_grad and not grad._hooks
                 and not getweakrefcount(grad)
                 and ((data.base is None and grad._base is None)
                      or (key in self.slices and data.flags.c_contiguous)))
        self.slices.discard(key)
        return tensor, grad, owned


def _summed(grads, index, grad):
    """grads[index] + grad, where a node's output is used more than once (a residual
    connection's input: the sublayer's gradient and the one that skips it). Added into
    grads[index]'s own memory when nothing else can see it, as PyTorch's engine accumulates in
    place, instead of into a fresh array each time: no graph is being recorded
    (create_graph=False), one float dtype and shape, and reference counts show the buffer's
    slot as the only holder of the tensor and of its array's memory (exact in CPython; a gradient
    handed to two inputs, AddBackward's, or held by the caller is never written). The same sum
    either way, bit for bit (a + b, rounded once)."""
    total = grads[index]
    data, other = total._data, grad._data
    # getrefcount counts its argument: the tensor's 3 are the slot, the name ``total`` and
    # the argument; its array's 3 the Tensor's ``_data``, ``data`` and the argument; a base's 2
    # the one view of it and the argument.
    if (not is_grad_enabled() and type(total) is _tensor_class() and getrefcount(total) == 3
            and getrefcount(data) == 3 + tapes.references(data) and type(data) is np.ndarray
            and (data.base is None or getrefcount(data.base) == 2 + tapes.references(data.base))
            and data.flags.writeable
            and total._ctx is None and not total.requires_grad and total._base is None
            and not total._hooks and not getweakrefcount(total) and type(other) is np.ndarray
            and other.dtype == data.dtype and other.shape == data.shape and data.dtype.kind == "f"
            and not np.may_share_memory(data, other)):
        from ..ops.elementwise import _arith  # (ops import autograd: imported when first used)
        _arith("add", np.add, data, other, out=data)
        return total
    return total + grad


def _added_in_place(total, grad):
    """Whether ``grad`` could be, and was, added into ``total``'s memory: one array type, float
    dtype and shape, ``total`` writable (else the caller adds out of place, promoting or
    broadcasting as ``+`` does). An in-place change: ``total``'s version moves on."""
    data, other = total._data, grad._data
    if (type(data) is not type(other) or other.dtype != data.dtype or other.shape != data.shape
            or data.dtype.kind != "f" or not is_writeable(data)):
        return False
    if array_module(data).may_share_memory(data, other):
        other = other.copy()
    from ..ops.elementwise import _arith  # (ops import autograd: imported when first used)
    _arith("add", np.add, data, other, out=data)
    total._version[0] += 1
    return True


def _run_hooks(hooks, grad):
    """Pass ``grad`` through each hook; a hook that returns a tensor replaces the gradient,
    which must then be a Tensor of the same shape and dtype (as PyTorch: nothing downstream
    would reshape or cast it back)."""
    for hook in hooks:
        new = hook(grad)
        if new is not None:
            _check_hook_result(hook, new, grad)
            grad = new
    return grad


def _check_hook_result(hook, new, grad):
    name = getattr(hook, "__name__", repr(hook))
    if not isinstance(new, _tensor_class()):
        raise TypeError(f"hook '{name}' must return a Tensor or None, got {_type_name(new)}")
    if new._data.shape != grad._data.shape:
        raise RuntimeError(f"hook '{name}' returned a gradient of shape {tuple(new.shape)} for a "
                           f"tensor of shape {tuple(grad.shape)}")
    if new._data.dtype != grad._data.dtype:
        raise RuntimeError(f"hook '{name}' changed the gradient's dtype: expected dtype "
                           f"{grad.dtype}, got {new.dtype}")


def _type_name(value):
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else \
        f"{kind.__module__}.{kind.__qualname__}"


def _run_output_hooks(node, grads):
    """The hooks registered on the node's output tensors (non-leaves), one output at a time."""
    hooks = node.output_hooks
    return [_run_hooks(hooks[i], grad) if i in hooks else grad for i, grad in enumerate(grads)]


def _call_backward(node, grads):
    """``node.fn.backward`` on the output gradients: one gradient per input, of its shape.

    A gradient of another dtype than its input is cast to it, as PyTorch does, so that a
    float32 leaf never gets a float64 ``.grad``; one that is no Tensor is a TypeError."""
    input_grads = node.fn.backward(node, *grads)
    if type(input_grads) is not tuple:
        input_grads = (input_grads,)
    inputs = node.inputs
    if len(input_grads) != len(inputs):
        raise RuntimeError(f"{node.name()} returned {len(input_grads)} gradients for "
                           f"{len(inputs)} inputs")
    tensor_class = _tensor_class()
    i = -1
    for tensor, edge, grad in zip(inputs, node.input_edges, input_grads):
        i += 1
        if tensor is None or grad is None:
            continue
        if type(grad) is not tensor_class and not isinstance(grad, tensor_class):
            raise TypeError(f"{node.name()} returned a {_type_name(grad)} as the gradient of "
                            f"input {i}; expected a Tensor or None")
        # a leaf is there itself; of any other input, the node kept (shape, numpy dtype)
        shape, dtype = tensor if edge is not None else (tensor._data.shape, tensor._data.dtype)
        data = grad._data
        if data.shape != shape:
            raise RuntimeError(f"{node.name()} returned a gradient of shape {tuple(data.shape)} "
                               f"for an input of shape {tuple(shape)}")
        if data.dtype != dtype:
            input_grads = input_grads[:i] + (grad.to(_BY_NUMPY[dtype]),) + input_grads[i + 1:]
    return input_grads


def _accumulate_into_grad(tensor, grad, owned, create_graph):
    """Add ``grad`` to ``tensor.grad`` (called with grad mode set to ``create_graph``);
    ``owned``: no one else holds ``grad``, which can then be ``.grad`` itself. Without
    ``create_graph`` the sum goes into ``.grad``'s own memory, as PyTorch's AccumulateGrad
    does (``+=``): a reference to ``.grad`` kept from an earlier backward sees it too."""
    total = tensor.grad
    if total is not None:
        if create_graph or not _added_in_place(total, grad):
            tensor.grad = total + grad
    elif create_graph or owned:
        tensor.grad = grad
    else:
        # A copy, so .grad owns its storage: the same gradient tensor may reach several leaves
        # (AddBackward hands one on to both inputs), and .grad may later be changed in place.
        tensor.grad = _tensor_class()._make(backends.current().copy(grad._data))
