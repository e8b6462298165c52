"""``RMSprop``: divide the gradient by a running root-mean-square of its recent magnitudes.

The update is PyTorch's (``torch.optim.RMSprop``, Hinton's lecture 6e with Graves' centred
variant), for parameter ``p`` and gradient ``g``::

    g = -g if maximize
    g = g + weight_decay * p                        if weight_decay != 0
    v = alpha * v + (1 - alpha) * g * g             (running mean of g², "square_avg")
    avg = sqrt(v - m * m) + eps, with m = lerp(m, g, 1 - alpha)   if centered ("grad_avg")
    avg = sqrt(v) + eps                                           otherwise
    b = momentum * b + g / avg;  p = p - lr * b     if momentum > 0 ("momentum_buffer")
    p = p - lr * g / avg                            otherwise

Unlike Adam there is no bias correction: ``v`` starts at zero, so the first steps are large
(``|g| / sqrt(1 - alpha)``) — the reason PyTorch's default ``lr`` is 1e-2 and not 1e-3.

May import: numpy, ``minitorch.backends.numpy_backend`` (torch.lerp's rounding, shared with
Adam's update), ``minitorch.optim.optimizer``.
"""
import numpy as np

from ..backends.numpy_backend import _lerp_
from .optimizer import Optimizer, implementation_options


class RMSprop(Optimizer):
    """RMSprop, as ``torch.optim.RMSprop``.

    State per parameter: ``"step"`` (an int), ``"square_avg"``, and ``"momentum_buffer"`` when
    ``momentum > 0``, ``"grad_avg"`` when ``centered`` (tensors shaped like the parameter).
    ``maximize`` is keyword-only: PyTorch's positional slots there are ``capturable`` and
    ``foreach``, which minitorch does not have.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                        momentum=momentum, centered=centered, maximize=maximize,
                        **implementation_options(foreach=foreach, capturable=capturable,
                                                 differentiable=differentiable))
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        for name in ("eps", "momentum", "weight_decay", "alpha"):
            if not group[name] >= 0:
                label = "epsilon" if name == "eps" else name
                raise ValueError(f"Invalid {label} value: {name} must be >= 0, got "
                                 f"{group[name]}")

    def _update_group(self, group, params):
        lr, alpha, eps = group["lr"], group["alpha"], group["eps"]
        weight_decay, momentum = group["weight_decay"], group["momentum"]
        centered, maximize = group["centered"], group["maximize"]
        for p in params:
            data = p._data
            grad = self._grad_array(p)
            state = self.state.setdefault(p, {})
            state["step"] = int(state.get("step", 0)) + 1
            square_avg = self._state_array(state, "square_avg", data)

            if maximize:
                grad = -grad
            if weight_decay != 0:
                grad = grad + weight_decay * data

            scratch = np.empty_like(data)
            square_avg *= alpha
            np.multiply(grad, 1 - alpha, out=scratch)
            scratch *= grad
            square_avg += scratch
            if centered:
                grad_avg = self._state_array(state, "grad_avg", data)
                _lerp_(grad_avg, grad, 1 - alpha, scratch)
                np.multiply(grad_avg, grad_avg, out=scratch)
                np.subtract(square_avg, scratch, out=scratch)
                np.sqrt(scratch, out=scratch)
            else:
                np.sqrt(square_avg, out=scratch)
            scratch += eps  # scratch is now the denominator
            np.divide(grad, scratch, out=scratch)
            if momentum > 0:
                buffer = self._state_array(state, "momentum_buffer", data)
                buffer *= momentum
                buffer += scratch
                np.multiply(buffer, -lr, out=scratch)
            else:
                scratch *= -lr
            data += scratch
            self._mark_updated(p)
