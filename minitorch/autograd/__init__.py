"""Reverse-mode automatic differentiation: ``Function``, ``backward``, ``grad``, grad modes and
gradient checking.

- ``function.py``: ``Function``/``Context``, how an op becomes a node of the graph
- ``engine.py``: the backward walk over the graph
- ``grad_mode.py``: ``no_grad``, ``enable_grad``, ``set_grad_enabled``
- ``gradcheck.py``: ``gradcheck``/``gradgradcheck`` against finite differences
- ``functional.py``: ``jacobian``, ``hessian``, ``vjp``, ``jvp``, ``vhp``, ``hvp``
- ``anomaly.py``: ``detect_anomaly``, ``set_detect_anomaly`` (NaN gradients, forward stacks)

May import: ``minitorch.tensor`` and ``minitorch.backends.tape`` (lazily, to avoid a cycle)
and numpy.
"""
from .anomaly import (detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled,
                      set_detect_anomaly)
from .engine import run_backward
from .function import Context, Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _initial_grads(outputs, grad_outputs):
    from ..tensor import Tensor
    from ..backends import tape as tapes
    import numpy as np
    grads = []
    for i, (out, g) in enumerate(zip(outputs, grad_outputs)):
        if not out.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs; "
                                   f"output {i} has shape {tuple(out.shape)}: pass a gradient")
            g = Tensor._make(tapes.constant(np.ones_like(out._data)))  # (a captured step's too)
        elif not isinstance(g, Tensor):
            g = Tensor(g, dtype=out.dtype)
        if tuple(g.shape) != tuple(out.shape):
            raise ValueError(f"gradient: shape {tuple(g.shape)} does not match output {i} of "
                             f"shape {tuple(out.shape)}")
        grads.append(g)
    return grads


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
             grad_variables=None, inputs=None):
    """Accumulate gradients of ``tensors`` into ``.grad`` of the leaves (or of ``inputs``).
    ``grad_variables`` is PyTorch's old name of ``grad_tensors``."""
    if grad_variables is not None:
        if grad_tensors is not None:
            raise RuntimeError("backward: give grad_tensors or grad_variables, not both")
        grad_tensors = grad_variables
    outputs = _as_list(tensors)
    grads = _initial_grads(outputs, _as_list(grad_tensors) if grad_tensors is not None
                           else [None] * len(outputs))
    retain_graph = create_graph if retain_graph is None else retain_graph
    run_backward(outputs, grads, retain_graph, create_graph,
                 inputs=None if inputs is None else _as_list(inputs))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (``.grad`` is untouched).

    As ``torch.autograd.grad``: ``materialize_grads`` gives zeros for unused inputs (and so
    implies ``allow_unused``); ``is_grads_batched`` treats the first dim of each of
    ``grad_outputs`` as a batch of vectors and returns the stacked gradients (computed one
    vector at a time); ``only_inputs`` is PyTorch's deprecated, ignored flag."""
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("grad: materialize_grads=True needs allow_unused to be True or None")
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph,
                             allow_unused, materialize_grads)
    outputs, inputs = _as_list(outputs), _as_list(inputs)
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] does not require grad")
    grads = _initial_grads(outputs, _as_list(grad_outputs) if grad_outputs is not None
                           else [None] * len(outputs))
    retain_graph = create_graph if retain_graph is None else retain_graph
    results = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs,
                           accumulate=False)
    for i, g in enumerate(results):
        if g is None and not allow_unused:
            raise RuntimeError(f"grad: inputs[{i}] was not used in the graph of the outputs; "
                               "pass allow_unused=True if this is expected")
    if materialize_grads:
        results = [t.detach() * 0 if g is None else g for t, g in zip(inputs, results)]
    return tuple(r if r is None or create_graph else r.detach() for r in results)


def _batched_grad(outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused,
                  materialize_grads):
    """``grad`` for each vector along the first dim of ``grad_outputs``, stacked."""
    from ..ops.shape import stack
    if grad_outputs is None:
        raise ValueError("grad: is_grads_batched=True needs grad_outputs")
    batches = _as_list(grad_outputs)
    count = len(batches[0])
    # The graph stays for every vector but the last, which frees it unless asked to keep it.
    per_vector = [grad(outputs, inputs, [g[k] for g in batches],
                       retain_graph=(k < count - 1) or retain_graph,
                       create_graph=create_graph, allow_unused=allow_unused,
                       materialize_grads=materialize_grads) for k in range(count)]
    return tuple(None if column[0] is None else stack(list(column))
                 for column in zip(*per_vector))


from .gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402

__all__ = ["Function", "Context", "backward", "grad", "no_grad", "enable_grad",
           "set_grad_enabled", "is_grad_enabled", "gradcheck", "gradgradcheck", "GradcheckError",
           "functional", "detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled"]
from . import functional  # noqa: E402  (it uses grad, defined above)
