"""Learning-rate schedules: ``LRScheduler`` and ``LambdaLR``, ``StepLR``,
``CosineAnnealingLR``, ``TransformerLR`` (the warmup schedule of "Attention is all you need").

A scheduler writes ``group["lr"]`` of its optimizer's param groups; call ``scheduler.step()``
after ``optimizer.step()``, once per epoch (or per batch for ``TransformerLR``). As in PyTorch,
creating a scheduler already takes the first step (``last_epoch`` becomes 0) and stores each
group's starting lr as ``group["initial_lr"]``. ``StepLR`` and ``CosineAnnealingLR`` use
PyTorch's recursive forms, so their values match PyTorch's to the last bit.

May import: math, ``minitorch.optim.optimizer``.
"""
import math
import types

from .optimizer import Optimizer


class LRScheduler:
    """Base class: subclasses define ``get_lr()`` from ``last_epoch`` (and the current lrs)."""

    def __init__(self, optimizer, last_epoch=-1):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"optimizer must be an Optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for index, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{index}]"
                                   f" when resuming a scheduler with last_epoch={last_epoch}: "
                                   "load the optimizer's state_dict first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._step_count = 0
        self._is_initial = True
        self.step()
        self._is_initial = False

    def get_lr(self):
        """The lr of each param group at ``self.last_epoch``."""
        raise NotImplementedError

    def get_last_lr(self):
        """The lrs the last ``step()`` set, one per param group."""
        return list(self._last_lr)

    def step(self):
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        """Every attribute but the optimizer (numbers and lists, which minitorch.save stores)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(last_epoch)``; ``lr_lambda`` is one function or a list
    with one per param group. As in PyTorch, plain functions are not saved in ``state_dict``
    (only the ``__dict__`` of callable objects is)."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1):
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas (one per "
                                 f"param group), but got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        for index, fn in enumerate(self.lr_lambdas):
            if not callable(fn):
                raise TypeError(f"lr_lambda[{index}] must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        return [base_lr * fn(self.last_epoch) for fn, base_lr in zip(self.lr_lambdas,
                                                                     self.base_lrs)]

    def state_dict(self):
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else dict(fn.__dict__)
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lr_lambdas = state_dict.pop("lr_lambdas", [])
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lr_lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply the lr by ``gamma`` every ``step_size`` epochs:
    ``lr = initial_lr * gamma ** (last_epoch // step_size)``."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1):
        if not isinstance(step_size, int) or isinstance(step_size, bool) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        # Recursive, as PyTorch: chained with another scheduler it scales whatever lr is there.
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from ``initial_lr`` down to ``eta_min`` over ``T_max`` epochs:
    ``lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * last_epoch / T_max)) / 2``.

    Computed recursively from the current lr as PyTorch does (so the values are PyTorch's, and
    past ``T_max`` the lr climbs back up, a period of ``2 * T_max``).
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1):
        if not T_max > 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be > 0, got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        groups, eta_min, T_max, epoch = self.optimizer.param_groups, self.eta_min, self.T_max, \
            self.last_epoch
        if self._is_initial:
            return [group["lr"] for group in groups]
        if self._step_count == 1 and epoch > 0:
            # resumed with last_epoch > 0: no current lr to recurse from, use the closed form
            return [eta_min + (base_lr - eta_min) * (1 + math.cos(epoch * math.pi / T_max)) / 2
                    for base_lr in self.base_lrs]
        if (epoch - 1 - T_max) % (2 * T_max) == 0:
            # at the bottom of the cosine the ratio below would divide by zero
            return [group["lr"] + (base_lr - eta_min) * (1 - math.cos(math.pi / T_max)) / 2
                    for base_lr, group in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * epoch / T_max))
                / (1 + math.cos(math.pi * (epoch - 1) / T_max))
                * (group["lr"] - eta_min) + eta_min
                for group in groups]


class TransformerLR(LRScheduler):
    """The warmup schedule of "Attention is all you need" (Vaswani et al., 2017, eq. 3)::

        lr = factor * d_model ** -0.5 * min(step ** -0.5, step * warmup_steps ** -1.5)

    with ``step = last_epoch + 1`` (counted from 1): linear warmup for ``warmup_steps`` steps,
    then decay as the inverse square root of the step. Call ``step()`` once per optimizer step.
    The optimizer's own lr is *replaced* by this value (not multiplied), so pass any lr to the
    optimizer (the paper's setting is Adam with ``betas=(0.9, 0.98), eps=1e-9``).
    PyTorch has no such class: ``LambdaLR`` with ``lr=1`` and this formula is the equivalent.
    """

    def __init__(self, optimizer, d_model, warmup_steps=4000, factor=1.0, last_epoch=-1):
        if not isinstance(d_model, int) or isinstance(d_model, bool) or d_model <= 0:
            raise ValueError(f"TransformerLR: d_model must be a positive int, got {d_model!r}")
        if not isinstance(warmup_steps, int) or isinstance(warmup_steps, bool) \
                or warmup_steps <= 0:
            raise ValueError(f"TransformerLR: warmup_steps must be a positive int, got "
                             f"{warmup_steps!r}")
        if not factor > 0:
            raise ValueError(f"TransformerLR: factor must be > 0, got {factor!r}")
        self.d_model = d_model
        self.warmup_steps = warmup_steps
        self.factor = factor
        super().__init__(optimizer, last_epoch)

    def get_lr(self):
        step = self.last_epoch + 1
        lr = self.factor * self.d_model ** -0.5 * min(step ** -0.5,
                                                       step * self.warmup_steps ** -1.5)
        return [lr for _ in self.optimizer.param_groups]


NoamLR = TransformerLR  # the name used by "The Annotated Transformer"
