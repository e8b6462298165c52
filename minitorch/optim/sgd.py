"""``SGD``: stochastic gradient descent with momentum, dampening, Nesterov and weight decay.

The update is PyTorch's (``torch.optim.SGD``), for each parameter ``p`` with gradient ``g``::

    g = -g if maximize
    g = g + weight_decay * p                              if weight_decay != 0
    b = g (first step) or momentum * b + (1 - dampening) * g   if momentum != 0
    g = g + momentum * b if nesterov else b               if momentum != 0
    p = p - lr * g

May import: numpy, ``minitorch.tensor``, ``minitorch.optim.optimizer``.
"""
import numpy as np

from ..tensor import Tensor
from .optimizer import Optimizer, implementation_options


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD``.

    State per parameter: ``"momentum_buffer"`` (a tensor) once a step with momentum ran.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
                 *, maximize=False, foreach=None, differentiable=False, fused=None):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        **implementation_options(foreach=foreach, differentiable=differentiable,
                                                 fused=fused))
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        if not group["momentum"] >= 0:
            raise ValueError(f"Invalid momentum value: momentum must be >= 0, got "
                             f"{group['momentum']}")
        if not group["weight_decay"] >= 0:
            raise ValueError(f"Invalid weight_decay value: weight_decay must be >= 0, got "
                             f"{group['weight_decay']}")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"Nesterov momentum requires a momentum > 0 and zero dampening, "
                             f"got momentum={group['momentum']}, dampening={group['dampening']}")

    def _update_group(self, group, params):
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov, maximize = group["weight_decay"], group["nesterov"], \
            group["maximize"]
        for p in params:
            data = p._data
            grad = self._grad_array(p)
            # A new array only when the gradient must change; p.grad itself is never written.
            direction = -grad if maximize else grad
            if weight_decay != 0:
                direction = direction + weight_decay * data
            if momentum != 0:
                state = self.state.setdefault(p, {})
                buffer = state.get("momentum_buffer")
                if buffer is None:
                    state["momentum_buffer"] = buffer = Tensor._make(np.array(direction, copy=True))
                else:
                    buffer._data *= momentum
                    buffer._data += (1 - dampening) * direction
                direction = direction + momentum * buffer._data if nesterov else buffer._data
            data -= lr * direction
            self._mark_updated(p)

