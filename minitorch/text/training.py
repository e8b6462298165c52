"""The training-loop pieces the seq2seq examples share: loss, one training step, a progress bar.

This file holds :func:`seq2seq_loss` (label-smoothed cross-entropy that ignores padding),
:func:`train_step` (forward, backward, clip, optimizer and schedule step), :func:`evaluate_loss`
and :class:`Progress` (a tqdm bar on a terminal when tqdm is installed, plain periodic lines
otherwise).
May import: ``minitorch``, ``minitorch.nn``, ``minitorch.text.batching``.
"""
from __future__ import annotations

import sys
import time
from typing import Iterable, Optional

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.text.batching import Batch


def seq2seq_loss(logits, tgt_out, pad_id: int, label_smoothing: float = 0.0):
    """Mean cross-entropy over the non-pad target tokens; logits (N, T, V), tgt_out (N, T)."""
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1),
                           ignore_index=pad_id, label_smoothing=label_smoothing)


def train_step(model: nn.Module, batch: Batch, optimizer, scheduler=None, *, pad_id: int,
               label_smoothing: float = 0.0, clip_norm: Optional[float] = 1.0) -> float:
    """One optimizer step on ``batch``; returns the (label-smoothed) loss as a float."""
    logits = model(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                   batch.tgt_key_padding_mask, batch.tgt_mask)
    loss = seq2seq_loss(logits, batch.tgt_out, pad_id, label_smoothing)
    optimizer.zero_grad()
    loss.backward()
    if clip_norm is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return float(loss.item())


def evaluate_loss(model: nn.Module, batches: Iterable[Batch], pad_id: int) -> float:
    """Token-weighted mean cross-entropy (no smoothing) over ``batches``, in eval mode."""
    was_training = model.training
    model.eval()
    total, tokens = 0.0, 0
    try:
        with minitorch.no_grad():
            for batch in batches:
                logits = model(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                               batch.tgt_key_padding_mask, batch.tgt_mask)
                total += seq2seq_loss(logits, batch.tgt_out, pad_id).item() * batch.n_tokens
                tokens += batch.n_tokens
    finally:
        model.train(was_training)
    return total / max(tokens, 1)


class Progress:
    """A progress bar over ``total`` steps showing loss, tokens/s and lr.

    Uses tqdm when it is installed and stdout is a terminal; otherwise prints one line every
    ``print_every`` steps (and at the end): a bar's carriage-return refreshes would fill a log
    file with hundreds of partial lines.
    """

    def __init__(self, total: int, description: str = "", *, enabled: bool = True,
                 print_every: int = 50, initial: int = 0):
        self.total, self.description, self.enabled = total, description, enabled
        self.print_every, self.count = print_every, initial
        self.tokens, self.started = 0, time.perf_counter()
        self.last = {}
        self._bar = None
        if enabled and sys.stdout.isatty():
            try:
                from tqdm import tqdm
                self._bar = tqdm(total=total, initial=initial, desc=description, leave=True,
                                 dynamic_ncols=True, file=sys.stdout)
            except ImportError:
                self._bar = None

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / max(time.perf_counter() - self.started, 1e-9)

    def update(self, loss: float, tokens: int, lr: float) -> None:
        self.count += 1
        self.tokens += tokens
        self.last = dict(loss=f"{loss:.3f}", tok_s=f"{self.tokens_per_second:.0f}", lr=f"{lr:.2e}")
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.set_postfix(self.last, refresh=False)
            self._bar.update(1)
        elif self.count % self.print_every == 0 or self.count == self.total:
            print(f"{self.description} {self.count}/{self.total} loss {loss:.3f} "
                  f"tok/s {self.tokens_per_second:.0f} lr {lr:.2e}", flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
