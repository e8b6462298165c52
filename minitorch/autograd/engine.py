"""The backward pass: walk the graph from the outputs to the leaves, in reverse topological order.

The walk is iterative (an explicit stack, then Kahn's algorithm over dependency counts), so a
chain of 100,000 ops back-propagates without touching Python's recursion limit. A node runs
once, after every node that consumes its outputs has sent its gradient, so a tensor used many
times (``b = a + a; c = b * b``) gets the sum of all its contributions.

Gradients flow as Tensors. With ``create_graph=True`` the backward formulas run with grad mode
on, so the gradients have a graph of their own and can be differentiated again.
"""
import numpy as np

from .function import _tensor_class
from .grad_mode import no_grad, set_grad_enabled


def _reachable(roots):
    """Every node reachable from ``roots``, inputs before consumers (iterative post-order DFS)."""
    seen, order, stack = set(), [], [(node, False) for node in roots]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for edge in node.input_edges:
            if edge is not None and id(edge[0]) not in seen:
                stack.append((edge[0], False))
    return order


def _leading_to(order, wanted):
    """The nodes of ``order`` with a path to a wanted tensor; only these need to run."""
    useful = set()
    for node in order:  # inputs come before consumers, so one pass suffices
        if any(t is not None and (id(t) in wanted or (edge is not None and id(edge[0]) in useful))
               for t, edge in zip(node.inputs, node.input_edges)):
            useful.add(id(node))
    return [n for n in order if id(n) in useful]


def run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs=None):
    """Propagate ``grad_outputs`` from ``outputs`` back through the graph.

    Without ``inputs``: accumulate into ``.grad`` of every leaf that requires grad.
    With ``inputs``: return their gradients (None where unreached) and touch no ``.grad``;
    only the part of the graph between the outputs and ``inputs`` runs (and is freed).
    """
    wanted = None if inputs is None else {id(t): i for i, t in enumerate(inputs)}
    results = None if inputs is None else [None] * len(inputs)

    pending = {}  # node id -> gradients waiting for it, one slot per output of the node
    roots = []
    for out, grad in zip(outputs, grad_outputs):
        edge = None if out._ctx is None else (out._ctx, out._output_nr)
        _deliver(out, edge, grad, wanted, results, create_graph, pending, None)
        if out._ctx is not None:
            roots.append(out._ctx)

    order = _reachable(roots)
    if wanted is not None:
        order = _leading_to(order, wanted)
    nodes = {id(n): n for n in order}
    dependencies = dict.fromkeys(nodes, 0)
    for node in order:
        for edge in node.input_edges:
            if edge is not None and id(edge[0]) in nodes:
                dependencies[id(edge[0])] += 1

    ready = [n for n in order if dependencies[id(n)] == 0 and id(n) in pending]
    with set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            input_grads = _run_node(node, pending.pop(id(node)))
            if not retain_graph:
                node.free()
            for t, edge, g in zip(node.inputs, node.input_edges, input_grads):
                if t is None or g is None:
                    continue
                if g._data.shape != t._data.shape:
                    raise RuntimeError(f"{node.name()} returned a gradient of shape "
                                       f"{tuple(g.shape)} for an input of shape {tuple(t.shape)}")
                _deliver(t, edge, g, wanted, results, create_graph, pending, nodes)
                if edge is not None and id(edge[0]) in nodes:
                    producer = id(edge[0])
                    dependencies[producer] -= 1
                    if dependencies[producer] == 0:
                        ready.append(edge[0])
    return results


def _run_node(node, slots):
    """Call the node's backward on its output gradients (zeros for outputs that got none)."""
    hooks = node.output_hooks
    if hooks or any(g is None for g in slots):  # (not `None in slots`: Tensor.__eq__)
        slots = list(slots)
        for index, (shape, dtype) in enumerate(node.output_meta):
            grad = slots[index]
            if grad is None:
                slots[index] = _tensor_class()._make(np.zeros(shape, dtype.numpy))
                continue
            for hook in hooks.get(index, ()):
                new = hook(grad)
                grad = grad if new is None else new
            slots[index] = grad
    input_grads = node.fn.backward(node, *slots)
    if type(input_grads) is not tuple:
        input_grads = (input_grads,)
    if len(input_grads) != len(node.inputs):
        raise RuntimeError(f"{node.name()} returned {len(input_grads)} gradients for "
                           f"{len(node.inputs)} inputs")
    return input_grads


def _deliver(t, edge, grad, wanted, results, create_graph, pending, nodes):
    """Hand ``grad`` to tensor ``t``: a wanted result, a waiting node slot, or a leaf's .grad.

    ``edge`` is (node, output index) of the node that made ``t``, or None for a leaf."""
    if wanted is not None and id(t) in wanted:
        i = wanted[id(t)]
        results[i] = grad if results[i] is None else results[i] + grad
    if edge is not None:
        producer, output_nr = edge
        if nodes is None or id(producer) in nodes:
            slots = pending.setdefault(id(producer), [None] * len(producer.output_meta))
            slots[output_nr] = grad if slots[output_nr] is None else slots[output_nr] + grad
        return
    if wanted is None and t.requires_grad:
        _accumulate_into_leaf(t, grad, create_graph)


def _accumulate_into_leaf(leaf, grad, create_graph):
    for hook in leaf._hooks:
        new = hook(grad)
        grad = grad if new is None else new
    if leaf.grad is None:
        # Own the storage: a later in-place update of .grad must not write into another tensor.
        leaf.grad = grad if create_graph else _tensor_class()._make(grad._data.copy())
    elif create_graph:
        leaf.grad = leaf.grad + grad
    else:
        with no_grad():
            leaf.grad = leaf.grad + grad.detach()
