"""``Adam`` and ``AdamW``: adaptive moment estimation, with L2 or decoupled weight decay.

The update is PyTorch's (``torch.optim.Adam``/``AdamW``), for parameter ``p``, gradient ``g``,
step count ``t`` (from 1)::

    g = -g if maximize
    g = g + weight_decay * p          (Adam: L2 penalty folded into the gradient)
    p = p * (1 - lr * weight_decay)   (AdamW: decoupled decay, before the moment update)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g * g
    v_max = max(v_max, v)             (amsgrad: normalise by the largest v seen)
    p = p - lr / (1 - beta1^t) * m / (sqrt(v or v_max) / sqrt(1 - beta2^t) + eps)

The arithmetic follows PyTorch's order of operations (``m`` by ``lerp``, the bias corrections
as Python floats), so float64 runs agree with PyTorch to rounding.

May import: numpy, ``minitorch.optim.optimizer``.
"""
import numpy as np

from .optimizer import Optimizer, implementation_options


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam``.

    State per parameter: ``"step"`` (an int), ``"exp_avg"``, ``"exp_avg_sq"`` and, with
    ``amsgrad``, ``"max_exp_avg_sq"`` (tensors shaped like the parameter).
    ``decoupled_weight_decay=True`` makes it AdamW.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize,
                        decoupled_weight_decay=decoupled_weight_decay,
                        **implementation_options(foreach=foreach, capturable=capturable,
                                                 differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)

    def _check_hyperparameters(self, group):
        super()._check_hyperparameters(group)
        if not group["eps"] >= 0:
            raise ValueError(f"Invalid epsilon value: eps must be >= 0, got {group['eps']}")
        betas = group["betas"]
        if len(betas) != 2:
            raise ValueError(f"Invalid betas: expected a pair (beta1, beta2), got {betas!r}")
        for index, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {index}: betas[{index}] must "
                                 f"be in [0, 1), got {beta}")
        if not group["weight_decay"] >= 0:
            raise ValueError(f"Invalid weight_decay value: weight_decay must be >= 0, got "
                             f"{group['weight_decay']}")

    def _update_group(self, group, params):
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        for p in params:
            data = p._data
            grad = self._grad_array(p)
            state = self.state.setdefault(p, {})
            step = state["step"] = int(state.get("step", 0)) + 1
            exp_avg = self._state_array(state, "exp_avg", data)
            exp_avg_sq = self._state_array(state, "exp_avg_sq", data)

            if maximize:
                grad = -grad
            if weight_decay != 0:
                if group["decoupled_weight_decay"]:
                    data *= 1 - lr * weight_decay
                else:
                    grad = grad + weight_decay * data

            # One scratch array per parameter serves every temporary of the update.
            scratch = np.empty_like(data)
            _lerp_(exp_avg, grad, 1 - beta1, scratch)
            exp_avg_sq *= beta2
            np.multiply(grad, 1 - beta2, out=scratch)
            scratch *= grad
            exp_avg_sq += scratch

            bias_correction1 = 1 - beta1 ** step
            bias_correction2 = 1 - beta2 ** step
            step_size = lr / bias_correction1
            bias_correction2_sqrt = bias_correction2 ** 0.5

            second_moment = exp_avg_sq
            if amsgrad:
                second_moment = self._state_array(state, "max_exp_avg_sq", data)
                np.maximum(second_moment, exp_avg_sq, out=second_moment)
            # denominator and update reuse the scratch array: no temporaries of the param's size
            np.sqrt(second_moment, out=scratch)
            scratch /= bias_correction2_sqrt
            scratch += eps
            np.divide(exp_avg, scratch, out=scratch)
            scratch *= -step_size
            data += scratch
            self._mark_updated(p)


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as ``torch.optim.AdamW``.

    The parameter shrinks by ``lr * weight_decay`` of itself each step, outside the adaptive
    scaling; the default ``weight_decay`` is 1e-2.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


def _lerp_(start, end, weight, scratch):
    """``start += weight * (end - start)`` in place, rounded as ``torch.lerp`` rounds it;
    ``scratch`` (shaped like ``start``) holds the temporary."""
    np.subtract(end, start, out=scratch)
    if abs(weight) < 0.5:
        scratch *= weight
        start += scratch
    else:
        scratch *= 1 - weight
        np.subtract(end, scratch, out=start)
