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
numpy does (tests/test_optim_fused.py holds them equal bit for bit). A captured step runs the C
update a parameter at a time instead, each as soon as the backward is done with it
(``_split_update``).

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
        grads = [self._grad_array(p) for p in params]
        lists = self._arrays(group, params, grads)
        step_sizes, bias_correction2_sqrts = self._count_step(group, params)
        # One call updates them all: the C backend's is one fused kernel on every thread.
        backends.current().adam_step(*lists, step_sizes, bias_correction2_sqrts,
                                     **self._hyperparameters(group))
        for p in params:
            self._mark_updated(p)

    def _split_update(self, group, params, grads):
        """The update of ``params`` as one C kernel call each, for a captured step that runs
        each as soon as the backward is done with its parameter (backends/update_schedule.py):
        ``(prepare, [(arrays, call), ...], enable)``, or None where the backend has no such
        calls. ``prepare()``, run before any of them on each replay, counts the step and writes
        its scalars into the calls; ``enable(False)`` makes the calls do nothing."""
        make_calls = getattr(backends.current(), "adam_calls", None)
        if make_calls is None:
            return None
        lists = self._arrays(group, params, grads)
        calls = make_calls(*lists)
        if calls is None:
            return None

        def prepare():
            calls.set(*self._count_step(group, params), **self._hyperparameters(group))
            for p in params:
                self._mark_updated(p)
        updates = [([a[i] for a in lists if a is not None], call)
                   for i, call in enumerate(calls.calls)]
        return prepare, updates, calls.enable

    def _arrays(self, group, params, grads):
        """The per-parameter lists ``adam_step`` takes: parameters, ``grads`` (arrays), moments
        (made now as zeros where new), and the largest second moments (None without amsgrad)."""
        lists = [[p._data for p in params], grads, [], [], [] if group["amsgrad"] else None]
        for p in params:
            state = self.state.setdefault(p, {})
            lists[2].append(self._state_array(state, "exp_avg", p._data))
            lists[3].append(self._state_array(state, "exp_avg_sq", p._data))
            if group["amsgrad"]:
                lists[4].append(self._state_array(state, "max_exp_avg_sq", p._data))
        return lists

    def _count_step(self, group, params):
        """One more step for each of ``params``: their step sizes and bias corrections, as
        Python floats computed as PyTorch computes them."""
        lr, (beta1, beta2) = group["lr"], group["betas"]
        step_sizes, bias_correction2_sqrts, of_step = [], [], {}
        for p in params:
            state = self.state.setdefault(p, {})
            step = state["step"] = int(state.get("step", 0)) + 1
            if step not in of_step:  # (parameters mostly share one step count)
                of_step[step] = lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5
            step_size, bias_correction2_sqrt = of_step[step]
            step_sizes.append(step_size)
            bias_correction2_sqrts.append(bias_correction2_sqrt)
        return step_sizes, bias_correction2_sqrts

    @staticmethod
    def _hyperparameters(group):
        return dict(lr=group["lr"], beta1=group["betas"][0], beta2=group["betas"][1],
                    eps=group["eps"], weight_decay=group["weight_decay"],
                    decoupled_weight_decay=group["decoupled_weight_decay"],
                    maximize=group["maximize"])


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

