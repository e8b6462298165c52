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
as Python floats), so float64 runs agree with PyTorch to rounding. The update itself is the
backend's ``adam_step``: numpy's, one numpy call per operation, is the readable reference; the
C backend's updates every parameter of a group in one fused call on every thread, rounding as
numpy does (tests/test_optim_fused.py holds them equal bit for bit).

May import: ``minitorch.backends``, ``minitorch.optim.optimizer``.
"""
from .. import backends
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
        lr, (beta1, beta2) = group["lr"], group["betas"]
        amsgrad = group["amsgrad"]
        arrays, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs = [], [], [], [], []
        step_sizes, bias_correction2_sqrts = [], []
        for p in params:
            data = p._data
            grads.append(self._grad_array(p))
            state = self.state.setdefault(p, {})
            step = state["step"] = int(state.get("step", 0)) + 1
            arrays.append(data)
            exp_avgs.append(self._state_array(state, "exp_avg", data))
            exp_avg_sqs.append(self._state_array(state, "exp_avg_sq", data))
            if amsgrad:
                max_exp_avg_sqs.append(self._state_array(state, "max_exp_avg_sq", data))
            # the bias corrections as Python floats, as PyTorch computes them
            step_sizes.append(lr / (1 - beta1 ** step))
            bias_correction2_sqrts.append((1 - beta2 ** step) ** 0.5)
        # One call updates them all: the C backend's is one fused kernel on every thread.
        backends.current().adam_step(
            arrays, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs if amsgrad else None,
            step_sizes, bias_correction2_sqrts, lr=lr, beta1=beta1, beta2=beta2,
            eps=group["eps"], weight_decay=group["weight_decay"],
            decoupled_weight_decay=group["decoupled_weight_decay"],
            maximize=group["maximize"])
        for p in params:
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

