"""``Adagrad``: per-coordinate learning rates that shrink with the sum of squared gradients.

The update is PyTorch's (``torch.optim.Adagrad``, Duchi et al. 2011), for parameter ``p``,
gradient ``g`` and step count ``t`` (from 1)::

    g = -g if maximize
    g = g + weight_decay * p                   if weight_decay != 0
    clr = lr / (1 + (t - 1) * lr_decay)
    s = s + g * g                              ("sum", starts at initial_accumulator_value)
    p = p - clr * g / (sqrt(s) + eps)

``s`` only grows, so every coordinate's step shrinks over time: well suited to sparse features,
too cautious for long training runs (which is what RMSprop and Adam fix).

May import: numpy, ``minitorch.tensor``, ``minitorch.optim.optimizer``.
"""
import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, implementation_options


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad``.

    State per parameter: ``"step"`` (an int) and ``"sum"`` (a tensor shaped like the
    parameter). As in PyTorch, the state exists from construction (``sum`` filled with
    ``initial_accumulator_value``, ``step`` 0), before any ``step()``.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                 eps=1e-10, foreach=None, *, maximize=False, differentiable=False, fused=None):
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, eps=eps,
                        maximize=maximize,
                        **implementation_options(foreach=foreach, differentiable=differentiable,
                                                 fused=fused))
        super().__init__(params, defaults)

    def add_param_group(self, param_group):
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self.state[p] = {"step": 0, "sum": Tensor._make(
                np.full_like(p._data, group["initial_accumulator_value"]))}

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        for name in ("lr_decay", "weight_decay", "initial_accumulator_value", "eps"):
            if not group[name] >= 0:
                label = "epsilon" if name == "eps" else name
                raise ValueError(f"Invalid {label} value: {name} must be >= 0, got "
                                 f"{group[name]}")

    def _update_group(self, group, params):
        lr, lr_decay, eps = group["lr"], group["lr_decay"], group["eps"]
        weight_decay, maximize = group["weight_decay"], group["maximize"]
        for p in params:
            data = p._data
            grad = self._grad_array(p)
            state = self.state.setdefault(p, {})
            step = state["step"] = int(state.get("step", 0)) + 1
            state_sum = self._state_array(state, "sum", data)

            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + weight_decay * data
            clr = lr / (1 + (step - 1) * lr_decay)

            scratch = np.multiply(grad, grad)
            state_sum += scratch
            np.sqrt(state_sum, out=scratch)
            scratch += eps
            np.divide(grad, scratch, out=scratch)
            scratch *= -clr
            data += scratch
            self._mark_updated(p)
