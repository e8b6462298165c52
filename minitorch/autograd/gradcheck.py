"""Gradient checking: the analytical Jacobian from backward against central differences.

``gradcheck(fn, inputs)`` perturbs every element of every input that requires grad by ±eps,
builds the numerical Jacobian column by column, and compares it with the rows that backward
gives for one-hot output gradients: |analytical − numerical| ≤ atol + rtol·|numerical|.
``fast_mode=True`` compares one random projection vᵀJu per input/output pair instead.
``gradgradcheck`` runs the same check on the gradient itself (built with create_graph=True).

A failure raises ``GradcheckError`` that names the input, the output, the element and both
values, so a wrong backward formula is found at once. Semantics and defaults are PyTorch's.
"""
import warnings

import numpy as np

from ..device_arrays import is_writeable
from .grad_mode import enable_grad, no_grad


class GradcheckError(RuntimeError):
    """A Jacobian entry (or projection) of backward differs from the finite-difference one."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _differentiable_outputs(fn, inputs):
    return [o for o in _as_tuple(fn(*inputs)) if o is not None and o.dtype.is_floating_point]


def _evaluate(fn, inputs):
    with no_grad():
        return [o._data.astype(np.float64).ravel().copy()
                for o in _differentiable_outputs(fn, inputs)]


def _numerical_columns(fn, inputs, t, eps):
    """Yield (element index, [d output / d t[index] for each output]) by central differences."""
    data = t._data
    for index in np.ndindex(*data.shape):
        original = data[index]
        data[index] = original + eps
        plus = _evaluate(fn, inputs)
        data[index] = original - eps
        minus = _evaluate(fn, inputs)
        data[index] = original
        yield index, [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


def _vjp(fn, inputs, wanted, output_index, grad_output):
    """Gradients of one output, contracted with ``grad_output``, for the wanted inputs."""
    from . import grad as autograd_grad
    outputs = _differentiable_outputs(fn, inputs)
    out = outputs[output_index]
    if not out.requires_grad:
        return [np.zeros(t.shape) for t in wanted]
    from ..tensor import Tensor
    grads = autograd_grad(out, wanted, Tensor._make(grad_output.astype(out._data.dtype)),
                          allow_unused=True)
    return [np.zeros(t.shape) if g is None else g._data.astype(np.float64) for t, g in
            zip(wanted, grads)]


def _index_text(index):
    """An element index as plain ints, ``(2, 0)``, whatever integer types numpy gave."""
    return str(tuple(int(i) for i in index))


def _fail(message, raise_exception):
    if raise_exception:
        raise GradcheckError(message)
    return False


def _refuse_modes(caller, **modes):
    """NotImplementedError for the checks PyTorch has and minitorch has no machinery for."""
    for name, (value, missing) in modes.items():
        if value:
            raise NotImplementedError(f"{caller}({name}=True): minitorch has no {missing}")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
              check_batched_grad=False, check_batched_forward_grad=False, check_forward_ad=False,
              check_backward_ad=True, fast_mode=False, masked=None):
    """Check the gradients of ``func(*inputs)`` against finite differences; True if they match.

    PyTorch's options: ``check_grad_dtypes`` also checks each gradient has its input's dtype;
    ``check_backward_ad=False`` skips the Jacobian comparison; ``check_undefined_grad`` is
    accepted with nothing to check (every backward here receives a gradient tensor); the
    batched, forward-mode and masked (sparse) checks raise NotImplementedError."""
    _refuse_modes("gradcheck", check_batched_grad=(check_batched_grad, "vmap"),
                  check_batched_forward_grad=(check_batched_forward_grad, "vmap"),
                  check_forward_ad=(check_forward_ad, "forward-mode autograd"),
                  masked=(masked, "sparse tensors"))
    fn = func
    inputs = _as_tuple(inputs)
    wanted = [(i, t) for i, t in enumerate(inputs) if getattr(t, "requires_grad", False)]
    if not wanted:
        raise ValueError("gradcheck: at least one input must be a tensor with requires_grad=True")
    for i, t in wanted:
        if t.dtype.name != "float64":
            warnings.warn(f"gradcheck: input #{i} requires gradient and is not a double precision "
                          "floating point tensor; the check is likely to fail in float32",
                          UserWarning, stacklevel=2)
        if not is_writeable(t._data):
            raise ValueError(f"gradcheck: input #{i} is a read-only (expanded) view; pass "
                             ".contiguous() or the tensor it was expanded from")
    outputs = _evaluate(fn, inputs)
    with no_grad():
        shapes = [tuple(o.shape) for o in _differentiable_outputs(fn, inputs)]
    if check_grad_dtypes and not _gradient_dtypes_match(fn, inputs, wanted, raise_exception):
        return False
    if not check_backward_ad:
        return True
    if fast_mode:
        return _check_projection(fn, inputs, wanted, outputs, shapes, eps, atol, rtol,
                                 raise_exception)
    tensors = [t for _, t in wanted]
    for position, (i, t) in enumerate(wanted):
        numerical = {index: cols for index, cols in _numerical_columns(fn, inputs, t, eps)}
        for o, out in enumerate(outputs):
            shape = shapes[o]
            for k in range(out.size):
                one_hot = np.zeros(out.size)
                one_hot[k] = 1.0
                rows = _vjp(fn, inputs, tensors, o, one_hot.reshape(shape))
                again = _vjp(fn, inputs, tensors, o, one_hot.reshape(shape))
                if np.max(np.abs(rows[position] - again[position]), initial=0.0) > nondet_tol:
                    return _fail(f"Backward is not reentrant: for input #{i} and output #{o}, two "
                                 f"runs gave different gradients (max difference "
                                 f"{np.max(np.abs(rows[position] - again[position])):.3e})",
                                 raise_exception)
                for index, cols in numerical.items():
                    n, a = cols[o][k], rows[position][index]
                    if not abs(a - n) <= atol + rtol * abs(n):
                        return _fail(
                            f"Jacobian mismatch for output {o} with respect to input {i}: "
                            f"d output[{_index_text(np.unravel_index(k, shape))}] / "
                            f"d input[{_index_text(index)}]: numerical {n:.10g}, "
                            f"analytical {a:.10g} "
                            f"(atol={atol}, rtol={rtol})", raise_exception)
    return True


def _gradient_dtypes_match(fn, inputs, wanted, raise_exception):
    """Whether backward gives every input a gradient of its own dtype."""
    from . import grad as autograd_grad
    with enable_grad():
        outputs = [o for o in _differentiable_outputs(fn, inputs) if o.requires_grad]
        if not outputs:
            return True
        total = outputs[0].sum()
        for o in outputs[1:]:
            total = total + o.sum()
        grads = autograd_grad(total, [t for _, t in wanted], allow_unused=True)
    for (i, t), g in zip(wanted, grads):
        if g is not None and g.dtype != t.dtype:
            return _fail(f"Gradient has dtype mismatch: input #{i} is {t.dtype}, its gradient "
                         f"{g.dtype}", raise_exception)
    return True


def _check_projection(fn, inputs, wanted, outputs, shapes, eps, atol, rtol, raise_exception):
    """Fast mode: vᵀ(J u) by differences against (vᵀJ)·u by backward, random u and v."""
    rng = np.random.default_rng(0)
    tensors = [t for _, t in wanted]
    for position, (i, t) in enumerate(wanted):
        u = rng.standard_normal(t.shape)
        data, original = t._data, t._data.copy()
        data += eps * u
        plus = _evaluate(fn, inputs)
        data[...] = original - eps * u
        minus = _evaluate(fn, inputs)
        data[...] = original
        for o, out in enumerate(outputs):
            v = rng.standard_normal(out.size)
            numerical = float(v @ ((plus[o] - minus[o]) / (2 * eps)))
            analytical = float(np.sum(_vjp(fn, inputs, tensors, o, v.reshape(shapes[o]))[position]
                                      * u))
            if not abs(analytical - numerical) <= atol + rtol * abs(numerical):
                return _fail(f"Jacobian mismatch (fast mode) for output {o} with respect to input "
                             f"{i}: vᵀJu numerical {numerical:.10g}, analytical {analytical:.10g} "
                             f"(atol={atol}, rtol={rtol})", raise_exception)
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0,
                  check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
                  check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the gradient: checks second derivatives through create_graph=True.

    ``gen_non_contig_grad_outputs`` makes the random output gradients non-contiguous;
    ``check_rev_over_rev=False`` skips the check; the batched, forward-over-reverse and masked
    checks raise NotImplementedError, as in ``gradcheck``."""
    _refuse_modes("gradgradcheck", check_batched_grad=(check_batched_grad, "vmap"),
                  check_fwd_over_rev=(check_fwd_over_rev, "forward-mode autograd"),
                  masked=(masked, "sparse tensors"))
    if not check_rev_over_rev:
        return True
    fn = func
    from . import grad as autograd_grad
    from ..tensor import Tensor
    inputs = _as_tuple(inputs)
    wanted = [t for t in inputs if getattr(t, "requires_grad", False)]
    with no_grad():
        outputs = _differentiable_outputs(fn, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        grad_outputs = [Tensor._make(_random_array(rng, o.shape, o._data.dtype,
                                                   gen_non_contig_grad_outputs),
                                     requires_grad=True) for o in outputs]
    grad_outputs = list(_as_tuple(grad_outputs))
    count = len(inputs)

    def first_gradients(*args):
        # Grad mode on even when gradcheck evaluates this under no_grad (finite differences):
        # otherwise there would be no graph, no gradient, and nothing would be checked.
        with enable_grad():
            ins, gos = args[:count], args[count:]
            pairs = [(o, g) for o, g in zip(_differentiable_outputs(fn, ins), gos)
                     if o.requires_grad]
            wanted_now = [t for t in ins if getattr(t, "requires_grad", False)]
            if not pairs:
                return tuple(t.detach() * 0.0 for t in wanted_now)
            grads = autograd_grad([o for o, _ in pairs], wanted_now, [g for _, g in pairs],
                                  create_graph=True, allow_unused=True)
            # An unused input's gradient is zero (not absent), so the outputs keep their count.
            return tuple(t.detach() * 0.0 if g is None else g for t, g in zip(wanted_now, grads))

    return gradcheck(first_gradients, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode)


def _random_array(rng, shape, dtype, non_contiguous):
    """Standard-normal values; with ``non_contiguous``, every other element of a wider array."""
    if not non_contiguous or not shape:
        return rng.standard_normal(shape).astype(dtype)
    return rng.standard_normal(tuple(shape[:-1]) + (2 * shape[-1],)).astype(dtype)[..., ::2]
