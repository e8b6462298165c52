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

A node is a ``Context`` (function.py): ``node.inputs[i]`` is its i-th input tensor (None if it
needs no gradient) and ``node.input_edges[i]`` is ``(node that made it, its output index)``,
or None for a leaf. Nothing here recurses, so a chain of 100,000 ops back-propagates within
Python's recursion limit.
"""
import numpy as np

from . import anomaly
from .function import _tensor_class
from .grad_mode import set_grad_enabled


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
    uses_left = _leaf_uses(order) if inputs is None else {}
    with set_grad_enabled(create_graph):
        for out, grad in zip(outputs, grad_outputs):
            buffer.add(out, None if out._ctx is None else (out._ctx, out._output_nr), grad)
        for node in reversed(order):
            grads = buffer.pop(node)
            if grads is not None:  # else no gradient reached it (its consumers returned None)
                if node.output_hooks:
                    grads = _run_output_hooks(node, grads)
                input_grads = _call_backward(node, grads) if not check_anomalies \
                    else anomaly.checked_backward(node, grads, _call_backward)
                if not retain_graph:
                    node.free()
                for tensor, edge, grad in zip(node.inputs, node.input_edges, input_grads):
                    if tensor is not None and grad is not None:
                        buffer.add(tensor, edge, grad)
            for tensor, edge in zip(node.inputs, node.input_edges):
                if edge is None and tensor is not None and id(tensor) in uses_left:
                    uses_left[id(tensor)] -= 1
                    if uses_left[id(tensor)] == 0 and id(tensor) in buffer.tensors:
                        _finish_leaf(*buffer.tensors.pop(id(tensor)), create_graph)
        results = {}  # a leaf's hooks run once, on the sum of all that reached it (as PyTorch's)
        while buffer.tensors:  # popped, so that each buffered gradient is released in turn
            key, (tensor, grad) = buffer.tensors.popitem()
            if accumulate:
                _finish_leaf(tensor, grad, create_graph)
            else:
                results[key] = _run_hooks(tensor._hooks, grad)
    return None if accumulate else [results.get(id(t)) for t in inputs]


def _leaf_uses(order):
    """id(leaf) -> how many inputs of the nodes in ``order`` are that leaf (requiring grad)."""
    uses = {}
    for node in order:
        for tensor, edge in zip(node.inputs, node.input_edges):
            if edge is None and tensor is not None:
                uses[id(tensor)] = uses.get(id(tensor), 0) + 1
    return uses


def _finish_leaf(tensor, grad, create_graph):
    """The leaf's hooks on its whole gradient, the sum into ``.grad``, then its post-accumulate
    hooks (``register_post_accumulate_grad_hook``)."""
    _accumulate_into_grad(tensor, _run_hooks(tensor._hooks, grad), create_graph)
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
    """The nodes of ``order`` that have a path to a tensor in ``wanted`` (a set of ids)."""
    useful = set()
    for node in order:  # the nodes that made a node's inputs come first: one pass suffices
        if any(t is not None and (id(t) in wanted or (edge is not None and edge[0] in useful))
               for t, edge in zip(node.inputs, node.input_edges)):
            useful.add(node)
    return [node for node in order if node in useful]


class GradientBuffer:
    """Gradients on their way, summed per destination until their destination takes them.

    A destination is an output of a node (taken by ``pop`` when the node runs) or a tensor
    whose gradient is the result: a leaf that requires grad, or each of ``inputs`` if given.
    """

    def __init__(self, inputs=None):
        self.wanted = None if inputs is None else {id(t) for t in inputs}
        self.nodes = {}    # node -> one gradient per output of the node (None: none yet)
        self.tensors = {}  # id(tensor) -> (tensor, gradient), for the wanted tensors

    def add(self, tensor, edge, grad):
        """Add ``grad`` to what ``tensor`` has received; ``edge`` is (its node, output index)."""
        if self.wanted is None:
            is_result = edge is None and tensor.requires_grad  # a leaf, for its .grad
        else:
            is_result = id(tensor) in self.wanted
        if is_result:
            previous = self.tensors.get(id(tensor))
            self.tensors[id(tensor)] = (tensor, grad if previous is None else previous[1] + grad)
        if edge is not None:
            node, index = edge
            grads = self.nodes.get(node)
            if grads is None:
                grads = self.nodes[node] = [None] * len(node.output_meta)
            grads[index] = grad if grads[index] is None else grads[index] + grad

    def pop(self, node):
        """The node's output gradients (zeros for outputs nobody used); None if none came."""
        grads = self.nodes.pop(node, None)
        if grads is not None and len(grads) > 1:  # one output: its gradient is there
            make = _tensor_class()._make
            grads = [make(np.zeros(shape, dtype.numpy)) if grad is None else grad
                     for grad, (shape, dtype) in zip(grads, node.output_meta)]
        return grads


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
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"{node.name()} returned {len(input_grads)} gradients for "
                           f"{len(node.inputs)} inputs")
    tensor_class = _tensor_class()
    for i, (tensor, grad) in enumerate(zip(node.inputs, input_grads)):
        if tensor is None or grad is None:
            continue
        if not isinstance(grad, tensor_class):
            raise TypeError(f"{node.name()} returned a {_type_name(grad)} as the gradient of "
                            f"input {i}; expected a Tensor or None")
        if grad._data.shape != tensor._data.shape:
            raise RuntimeError(f"{node.name()} returned a gradient of shape {tuple(grad.shape)} "
                               f"for an input of shape {tuple(tensor.shape)}")
        if grad._data.dtype != tensor._data.dtype:
            input_grads = input_grads[:i] + (grad.to(tensor.dtype),) + input_grads[i + 1:]
    return input_grads


def _accumulate_into_grad(tensor, grad, create_graph):
    """Add ``grad`` to ``tensor.grad`` (called with grad mode set to ``create_graph``)."""
    if tensor.grad is not None:
        tensor.grad = tensor.grad + grad
    elif create_graph:
        tensor.grad = grad
    else:
        # A copy, so .grad owns its storage: the same gradient tensor may reach several leaves
        # (AddBackward hands one on to both inputs), and .grad may later be changed in place.
        tensor.grad = _tensor_class()._make(grad._data.copy())
