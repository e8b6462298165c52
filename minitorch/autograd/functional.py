"""Derivatives of whole functions, as ``torch.autograd.functional``: ``jacobian``, ``hessian``,
``vjp``, ``jvp``, ``vhp``, ``hvp``.

Each takes ``func`` (Tensors in, a Tensor or a tuple of Tensors out) and ``inputs`` (a Tensor
or a tuple of Tensors) and returns structures shaped as PyTorch's: a Tensor where the inputs
(or outputs) are one Tensor, a tuple where they are a tuple; ``jacobian`` of output ``i``
with respect to input ``j`` has shape ``outputs[i].shape + inputs[j].shape``.

Everything goes through the engine's ``grad`` (reverse mode):

- ``vjp``: one backward pass with ``v`` as the output gradient: ``vᵀ J``.
- ``jacobian``: one backward pass per output element, with a one-hot output gradient (a row
  of ``J`` each); ``hessian`` is the jacobian of the jacobian, built with ``create_graph``.
- ``jvp`` (``J v``) by the double-backward trick: ``g(u) = uᵀ J`` is linear in a dummy output
  gradient ``u``, so its own vjp with ``v`` is ``J v``: two reverse passes, no forward mode.
- ``vhp`` (``vᵀ H``): the vjp of the gradient; ``hvp`` (``H v``): the double-backward trick on it.

The inputs are detached copies that require grad (views of them with ``create_graph=True``,
so the results stay differentiable with respect to the originals), and unless
``create_graph`` the results are detached. An input that the outputs do not depend on gets a
zero derivative, or a RuntimeError with ``strict=True``.

Differs from PyTorch: ``vectorize=True`` and ``strategy="forward-mode"`` are accepted (with
PyTorch's checks of the combinations it refuses) and compute the same values row by row in
reverse mode; a function with an empty output has a jacobian of zeros (PyTorch raises).

May import: numpy, ``minitorch.autograd``; ``minitorch.tensor`` and ``minitorch.ops`` lazily
(they import this package).
"""
import numpy as np

from . import grad as _engine_grad
from .function import _tensor_class
from .grad_mode import enable_grad, is_grad_enabled, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# ------------------------------------------------------------------ helpers
def _as_tuple(value, arg_name, fn_name):
    """``(was it a tuple, the tuple)``, checking that every element is a Tensor."""
    tensor = _tensor_class()
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for index, item in enumerate(items):
        if not isinstance(item, tensor):
            where = f"the value at index {index}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but {where} has type {type(item).__name__}.")
    return is_tuple, items


def _tuple_postprocess(result, to_unpack):
    """Undo ``_as_tuple``: unwrap one level per flag that says the original was no tuple."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            result = tuple(item[0] for item in result)
        if not to_unpack[0]:
            result = result[0]
    elif not to_unpack:
        result = result[0]
    return result


def _grad_preprocess(inputs, create_graph, need_graph):
    """New tensor objects for the inputs: views (still attached to the caller's graph) when
    ``create_graph`` and the input requires grad, detached copies otherwise. New objects
    always, so that an input the function also captures from outside is told apart."""
    return tuple(inp.view_as(inp) if create_graph and inp.requires_grad
                 else inp.detach().requires_grad_(need_graph) for inp in inputs)


def _grad_postprocess(results, create_graph):
    if isinstance(results[0], _tensor_class()):
        return results if create_graph else tuple(r.detach() for r in results)
    return tuple(_grad_postprocess(r, create_graph) for r in results)


def _validate_v(v, other, is_other_tuple):
    if len(v) != len(other):
        if is_other_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for index, (el_v, el_other) in enumerate(zip(v, other)):
        if tuple(el_v.shape) != tuple(el_other.shape):
            prefix = f"Entry {index} in " if is_other_tuple else ""
            raise RuntimeError(f"{prefix}v has invalid size: should be {tuple(el_other.shape)} "
                               f"but got {tuple(el_v.shape)}.")


def _check_requires_grad(tensors, kind, strict):
    """With ``strict``, refuse a derivative that is identically zero (a tensor that does not
    depend on the inputs), saying which."""
    if not strict:
        return
    for index, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {index}. This is not allowed in strict mode.")
        if t.requires_grad:
            continue
        if kind == "hessian":
            raise RuntimeError(f"The hessian of the user-provided function with respect to "
                               f"input {index} is independent of the input. This is not allowed "
                               "in strict mode.")
        if kind == "jacobian":
            raise RuntimeError(f"While computing the hessian, found that the jacobian of the "
                               f"user-provided function with respect to input {index} is "
                               "independent of the input. This is not allowed in strict mode.")
        if kind == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {index} is independent of "
                               "the inputs of the user-provided function. This is not allowed "
                               "in strict mode.")
        raise RuntimeError(f"Output {index} of the user-provided function does not require "
                           "gradients. The outputs must be computed in a differentiable manner "
                           "from the input when running in strict mode.")


def _autograd_grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``grad`` over the outputs that require grad (None for every input if none does)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(out, g) for out, g in zip(outputs, grad_outputs)
             if out is not None and out.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return _engine_grad([out for out, _ in pairs], list(inputs),
                        grad_outputs=[g for _, g in pairs], retain_graph=retain_graph,
                        create_graph=create_graph, allow_unused=True)


_ZERO_MESSAGES = {
    "back": "The output of the user-provided function is independent of input {i}. This is "
            "not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
                  "grad_outputs when using the double backward trick to compute forward mode "
                  "gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
                   "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry "
                         "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                         "prevents from using the double backward trick to replace forward "
                         "mode AD.",
}


def _fill_in_zeros(grads, refs, strict, create_graph, stage):
    """Zeros (shaped as ``refs``) where no gradient came; in strict mode, an error instead."""
    results = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_ZERO_MESSAGES[stage].format(i=i))
            g = _zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        results.append(g)
    return tuple(results)


def _zeros_like(t, requires_grad=False):
    zeros = _tensor_class()._make(np.zeros(tuple(t.shape), dtype=t._data.dtype))
    return zeros.requires_grad_(True) if requires_grad else zeros


def _check_v_or_single_element(v, tensors, is_tuple, fn_name, what):
    """``v`` as a tuple checked against ``tensors``; None only where ``tensors`` is a single
    one-element Tensor."""
    if v is not None:
        _, v = _as_tuple(v, "v", fn_name)
        _validate_v(v, tensors, is_tuple)
        return v
    if len(tensors) != 1 or tensors[0].numel() != 1:
        raise RuntimeError(f"The vector v can only be None if {what} a single Tensor with a "
                           "single element.")
    return None


# ------------------------------------------------------------------ products
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), vᵀ J)``: the vector-Jacobian product, shaped as the inputs. ``v`` is
    shaped as the outputs; it may be None for a one-element output (then it is 1)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs),
                                              "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _check_v_or_single_element(v, outputs, is_outputs_tuple, "vjp",
                                       "the user-provided function returns")
        if v is not None:
            v = _grad_preprocess(v, create_graph, need_graph=False)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _autograd_grad(outputs, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "back")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), J v)``: the Jacobian-vector product, shaped as the outputs. ``v`` is
    shaped as the inputs; it may be None for one one-element input. Computed by the double
    backward trick (see the module's docstring)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        v = _check_v_or_single_element(v, inputs, is_inputs_tuple, "jvp",
                                       "the input to the user-provided function is")
        if v is not None:
            v = _grad_preprocess(v, create_graph, need_graph=False)
        is_outputs_tuple, outputs = _as_tuple(func(*inputs),
                                              "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u's value never matters (uᵀ J is linear in u): zeros, which hold no inf or nan
        dummies = tuple(_zeros_like(out, requires_grad=True) for out in outputs)
        grad_inputs = _autograd_grad(outputs, inputs, dummies, create_graph=True)
        _check_requires_grad(grad_inputs, "grad_inputs", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _autograd_grad(grad_inputs, dummies, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, outputs, strict, create_graph, "back_trick")
    return (_tuple_postprocess(_grad_postprocess(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_outputs_tuple))


def _gradient_of_scalar_function(func, inputs, v, fn_name, strict, create_graph):
    """The shared start of ``vhp``/``hvp``: inputs, ``v``, the output and its gradient (with a
    graph of its own)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", fn_name)
    inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
    v = _check_v_or_single_element(v, inputs, is_inputs_tuple, fn_name,
                                   "the input to the user-provided function is")
    if v is not None:
        v = _grad_preprocess(v, create_graph, need_graph=False)
    is_outputs_tuple, outputs = _as_tuple(func(*inputs),
                                          "outputs of the user-provided function", fn_name)
    _check_requires_grad(outputs, "outputs", strict)
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    jac = _autograd_grad(outputs, inputs, create_graph=True)
    _check_requires_grad(jac, "jacobian", strict)
    return is_inputs_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), vᵀ H)`` for a scalar ``func``: the vjp of its gradient."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _gradient_of_scalar_function(
            func, inputs, v, "vhp", strict, create_graph)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _autograd_grad(jac, inputs, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back")
    return (_grad_postprocess(outputs, create_graph)[0],
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(*inputs), H v)`` for a scalar ``func``, by the double backward trick on its
    gradient (equal to ``vhp`` for a twice continuously differentiable ``func``, H being
    symmetric)."""
    with enable_grad():
        is_inputs_tuple, inputs, v, outputs, jac = _gradient_of_scalar_function(
            func, inputs, v, "hvp", strict, create_graph)
        dummies = tuple(_zeros_like(inp, requires_grad=True) for inp in inputs)
        double_back = _autograd_grad(jac, inputs, dummies, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(create_graph or is_grad_enabled()):
        grads = _autograd_grad(double_back, dummies, v, create_graph=create_graph)
        result = _fill_in_zeros(grads, inputs, strict, create_graph, "double_back_trick")
    return (_grad_postprocess(outputs, create_graph)[0],
            _tuple_postprocess(_grad_postprocess(result, create_graph), is_inputs_tuple))


# ------------------------------------------------------------------ full matrices
def _check_strategy(strategy, vectorize, strict, create_graph, name):
    if strategy not in _STRATEGIES:
        raise ValueError(f"{name} must be either \"forward-mode\" or \"reverse-mode\", got "
                         f"{strategy!r}")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("jacobian: `create_graph=True` and "
                                      "`strategy=\"forward-mode\"` are not supported together")
        if strict:
            raise RuntimeError("jacobian: `strict=True` and `strategy=\"forward-mode\"` are not "
                               "supported together")
        if not vectorize:
            raise NotImplementedError("jacobian: `strategy=\"forward-mode\"` is only "
                                      "implemented with `vectorize=True`")
    if vectorize and strict:
        raise RuntimeError("jacobian: `strict=True` and `vectorize=True` are not supported "
                           "together")


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for output ``i`` and input ``j``, a Tensor of
    shape ``outputs[i].shape + inputs[j].shape``, nested as the outputs and inputs are (a
    Tensor, a tuple, or a tuple of tuples indexed ``[i][j]``)."""
    from ..ops.shape import stack

    _check_strategy(strategy, vectorize, strict, create_graph, "strategy")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _grad_preprocess(inputs, create_graph, need_graph=True)
        is_outputs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)

        jacobians = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]  # rows[j]: d out.flat[k] / d inputs[j], k = 0, 1, ...
            for k in range(out.numel()):
                one_hot = np.zeros(out.numel(), dtype=out._data.dtype)
                one_hot[k] = 1
                grad_output = _tensor_class()._make(one_hot.reshape(tuple(out.shape)))
                row = _autograd_grad((out,), inputs, (grad_output,), create_graph=create_graph,
                                     retain_graph=True)
                for j, (g, inp) in enumerate(zip(row, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is "
                                               f"independent of input {j}. This is not allowed "
                                               "in strict mode.")
                        g = _zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is "
                                           f"independent of input {i}. This is not allowed in "
                                           "strict mode when create_graph=True.")
                    rows[j].append(g)
            jacobians.append(tuple(
                stack(rows[j], 0).reshape(tuple(out.shape) + tuple(inp.shape)) if rows[j]
                else _tensor_class()._make(np.zeros(tuple(out.shape) + tuple(inp.shape),
                                                    dtype=inp._data.dtype))
                for j, inp in enumerate(inputs)))
        jacobians = _grad_postprocess(tuple(jacobians), create_graph)
        return _tuple_postprocess(jacobians, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a scalar ``func``: for inputs ``i`` and ``j``, a Tensor of shape
    ``inputs[i].shape + inputs[j].shape`` (a Tensor for one input, a tuple of tuples for a
    tuple of them). The jacobian of the jacobian, the inner one built with a graph."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise ValueError(f"outer_jacobian_strategy must be either \"forward-mode\" or "
                         f"\"reverse-mode\", got {outer_jacobian_strategy!r}")

    def scalar_function(*inp):
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function",
                                        "hessian")
        _check_requires_grad(t_out, "outputs", strict)
        if is_out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               "contain a single element")
        return out.reshape(())

    def jacobian_function(*inp):
        jac = jacobian(scalar_function, inp, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(jacobian_function, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _tuple_postprocess(result, (is_inputs_tuple, is_inputs_tuple))
