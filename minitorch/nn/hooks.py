"""The machinery of ``Module`` hooks, as ``torch.utils.hooks``: ``RemovableHandle`` (what every
``register_*_hook`` returns) and ``BackwardHook`` (how a module's full backward hooks see the
gradients of its inputs and outputs).

A backward hook needs the gradients with respect to the module's inputs and outputs, which the
graph has no node for (the module is many ops). So, as PyTorch does, one module call wraps its
input tensors and then its output tensors in an identity Function (``BackwardHookFunction``)
each: the outputs' node is the first of the module's nodes that backward reaches, and records
the output gradients (after the backward pre-hooks, which may replace them); the inputs' node is
the last, and calls the hooks with both, which may replace the input gradients.
May import: ``minitorch.tensor``, ``minitorch.autograd``.
"""
import itertools
import warnings
import weakref

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor


class RemovableHandle:
    """Removes the hook it was returned for: ``handle.remove()``, or leaving ``with handle:``.

    ``hooks_dict`` maps hook ids to hooks; ``extra_dict`` (a dict or a list of them) holds the
    id's flags (with_kwargs, always_call), removed with it. Weak references, as PyTorch's, so a
    handle does not keep a deleted module's hooks alive.
    """

    _ids = itertools.count()

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = next(RemovableHandle._ids)
        extras = extra_dict if isinstance(extra_dict, list) else \
            ([] if extra_dict is None else [extra_dict])
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras)

    def remove(self):
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            hooks = ref()
            if hooks is not None:
                hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.remove()


class BackwardHookFunction(Function):
    """Identity on tensors whose backward passes the incoming gradients through
    ``on_gradients(grads)``, which may replace them. The outputs are views of the inputs (one
    version counter), and those of inputs that need no gradient need none either."""

    @staticmethod
    def forward(ctx, on_gradients, *tensors):
        ctx.on_gradients = on_gradients
        outputs = tuple(Tensor._make_view(t._data, t) for t in tensors)
        ctx.mark_non_differentiable(*[o for o, t in zip(outputs, tensors) if not t.requires_grad])
        return outputs

    @staticmethod
    def backward(ctx, *grads):
        # A tensor that needs no gradient gets zeros here (PyTorch's), which the engine drops.
        return (None,) + tuple(ctx.on_gradients(grads))


def _as_tuple(value):
    return (value,) if isinstance(value, Tensor) else tuple(value)


class BackwardHook:
    """The full backward hooks and backward pre-hooks of one module call (PyTorch's semantics:
    ``hook(module, grad_input, grad_output)`` may return new input gradients;
    ``pre_hook(module, grad_output)`` may return new output gradients; non-tensor arguments
    get None, tensors that need no gradient zeros)."""

    def __init__(self, module, hooks, pre_hooks):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = 0
        self.input_positions = self.output_positions = None

    def setup_input_hook(self, args):
        self.n_inputs = len(args)
        args, self.input_positions = self._wrap(args, self._input_gradients)
        return args

    def setup_output_hook(self, result):
        outputs = result if isinstance(result, tuple) else (result,)
        self.n_outputs = len(outputs)
        outputs, self.output_positions = self._wrap(outputs, self._output_gradients)
        return outputs if isinstance(result, tuple) else outputs[0]

    @staticmethod
    def _wrap(values, on_gradients):
        """``values`` with their tensors through one BackwardHookFunction, and the tensors'
        positions; unchanged (and None) when no tensor needs a gradient."""
        positions = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
        tensors = [values[i] for i in positions]
        if not (is_grad_enabled() and any(t.requires_grad for t in tensors)):
            return values, None
        wrapped = list(values)
        for i, t in zip(positions, BackwardHookFunction.apply(on_gradients, *tensors)):
            wrapped[i] = t
        return tuple(wrapped), positions

    @staticmethod
    def _spread(positions, grads, size):
        """One entry per argument: the tensors' gradients at their positions, None elsewhere."""
        spread = [None] * size
        for i, g in zip(positions, grads):
            spread[i] = g
        return tuple(spread)

    def _output_gradients(self, grads):
        self.grad_outputs = self._spread(self.output_positions, grads, self.n_outputs)
        for pre_hook in self.pre_hooks:
            new = pre_hook(self.module, self.grad_outputs)
            if new is None:
                continue
            new = _as_tuple(new)
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, "
                                   f"got {len(new)}, but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        grad_outputs = self.grad_outputs
        if self.input_positions is None:
            # No input needs a gradient, so the inputs' node never runs: call the hooks here.
            warnings.warn("Full backward hook is firing when gradients are computed with respect "
                          "to module outputs since no inputs require gradients.", UserWarning)
            for hook in self.hooks:
                result = hook(self.module, (None,) * self.n_inputs, grad_outputs)
                if result is not None and not (isinstance(result, tuple)
                                               and all(r is None for r in result)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_positions)

    def _input_gradients(self, grads):
        if self.grad_outputs is None:
            # The gradient reached the inputs without passing through the outputs (a double
            # backward, say): nothing for the hooks to pair it with, as in PyTorch.
            return grads
        grad_inputs = self._spread(self.input_positions, grads, self.n_inputs)
        for hook in self.hooks:
            new = hook(self.module, grad_inputs, self.grad_outputs)
            if new is None:
                continue
            new = _as_tuple(new)
            if len(new) != len(grad_inputs):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, "
                                   f"got {len(new)}, but expected {len(grad_inputs)}")
            grad_inputs = new
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_positions)
