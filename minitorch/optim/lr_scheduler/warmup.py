"""``TransformerLR`` (alias ``NoamLR``): the warmup schedule of "Attention is all you need".

May import: ``minitorch.optim.lr_scheduler.base``.
"""
from .base import LRScheduler


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
