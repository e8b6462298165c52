"""Train a small GPT on Shakespeare, one character at a time, and sample from it.

    python examples/gpt.py                              # train on defaults (< 10 min, 2 cores)
    python examples/gpt.py --generate 600 --prompt "HAMLET:" --top-k 10   # sample the saved model
    python examples/gpt.py --resume --max-steps 500     # 500 more steps of runs/gpt/shakespeare
    python examples/gpt.py --corpus trans-de-en         # English sentences of trans-de-en

What it does: reads the text (by default the speeches of seven of Shakespeare's tragedies,
which ship with minitorch as ``minitorch/text/data/shakespeare.txt``: public domain, see the
note beside it; or the English side of Debian's trans-de-en dictionary sentences with
``--corpus trans-de-en``), takes its characters as the vocabulary, holds out the last 10% of
the text (trans-de-en: the held-out sentences every user of that corpus shares) and trains
``minitorch.models.GPT`` on random windows of the rest with AdamW, a warmup and a cosine decay
of the learning rate. Every ``--eval-every`` steps it prints the training and held-out loss and
a sample; at the end it prints the held-out perplexity per character, over the whole held-out
split, beside that of the unigram model (character frequencies of the training split) on the
same split. It saves ``checkpoint.safetensors`` (model, optimizer, step, history, vocabulary,
config) at each evaluation, appends the samples to ``samples.txt`` and draws ``loss.png`` (the
training and held-out loss) when matplotlib is installed. The run folder is
``runs/gpt/<corpus>``; a new run never replaces another's files unless ``--overwrite`` is given,
and every argument is checked before anything is trained or written. ``main(argv)`` runs it
in-process and returns the results (the tests do).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import types

import numpy as np

import minitorch
from minitorch import nn, optim
from minitorch.models import GPT, GPTConfig
from minitorch.text.training import Progress

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, add_run_arguments, check_resume_flags,  # noqa: E402
                     check_run_folder, fraction, make_run_folder, non_negative_int, positive_float,
                     positive_int, run_main)

CHECKPOINT, PLOT, SAMPLES = "checkpoint.safetensors", "loss.png", "samples.txt"
RUN_FILES = (CHECKPOINT, PLOT, SAMPLES)
SHAKESPEARE = os.path.join(os.path.dirname(minitorch.__file__), "text", "data",
                           "shakespeare.txt")
HELD_OUT_FRACTION = 0.1
# What the model and its data depend on: stored in the checkpoint, so that --resume and
# --generate rebuild the same model (a flag given then that contradicts it is an error).
CONFIG_KEYS = ("corpus", "block_size", "n_layer", "n_head", "n_embd", "dropout", "batch_size",
               "lr", "min_lr", "warmup", "weight_decay", "max_steps", "seed")


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is read, created or written yet."""
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("shakespeare", "trans-de-en"), default="shakespeare",
                   help="shakespeare: seven tragedies, shipped with minitorch; trans-de-en: the "
                        "English sentences of Debian's dictionary (apt-get install trans-de-en)")
    p.add_argument("--block-size", type=positive_int, default=64,
                   help="context length in characters")
    p.add_argument("--n-layer", type=positive_int, default=4, help="Transformer blocks")
    p.add_argument("--n-head", type=positive_int, default=4,
                   help="attention heads (must divide --n-embd)")
    p.add_argument("--n-embd", type=positive_int, default=128, help="model width")
    p.add_argument("--dropout", type=fraction, default=0.0,
                   help="dropout probability (the default run reads the text about 5 times "
                        "and barely overfits; dropout would slow it)")
    p.add_argument("--batch-size", type=positive_int, default=64, help="windows per step")
    p.add_argument("--max-steps", type=positive_int, default=1000,
                   help="training steps; with --resume: this many MORE steps")
    p.add_argument("--lr", type=positive_float, default=8e-3, help="peak learning rate")
    p.add_argument("--min-lr", type=positive_float, default=8e-4,
                   help="learning rate at the end of the cosine decay (and after it)")
    p.add_argument("--warmup", type=non_negative_int, default=50,
                   help="steps of linear warmup of the learning rate")
    p.add_argument("--weight-decay", type=fraction, default=0.1,
                   help="AdamW's decoupled weight decay (matrices only)")
    p.add_argument("--eval-every", type=positive_int, default=100,
                   help="steps between evaluations, samples and checkpoints")
    p.add_argument("--eval-windows", type=positive_int, default=64,
                   help="windows of each split the periodic evaluation reads (the final one "
                        "reads the whole held-out split)")
    p.add_argument("--prompt", default=None,
                   help="the samples start with this text (its characters must occur in the "
                        "corpus; default: a newline, which starts a new speech)")
    p.add_argument("--sample-length", type=positive_int, default=300,
                   help="characters generated per sample")
    p.add_argument("--temperature", type=positive_float, default=0.8,
                   help="sampling temperature (lower: more conservative)")
    p.add_argument("--top-k", type=positive_int, default=None,
                   help="sample among the k most likely characters (default: all)")
    p.add_argument("--top-p", type=probability, default=None,
                   help="sample from the smallest set of most likely characters whose "
                        "probability reaches p, in (0, 1] (default: all)")
    p.add_argument("--generate", type=positive_int, default=None, metavar="N",
                   help="print N characters sampled from the model saved in --out and exit "
                        "(default: train)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    add_run_arguments(p, "run folder (default: runs/gpt/<corpus>)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, losses or samples")
    p.add_argument("--no-plots", action="store_true", help="skip loss.png")
    args = p.parse_args(argv)
    if args.n_embd % args.n_head:
        p.error(f"--n-head must divide --n-embd, got --n-embd {args.n_embd} and --n-head "
                f"{args.n_head}")
    if args.min_lr > args.lr:
        p.error(f"--min-lr ({args.min_lr}) must not exceed --lr ({args.lr})")
    if args.prompt is None:
        args.prompt = "\n"
    if not args.prompt:
        p.error("--prompt must hold at least one character")
    if args.out is None:
        args.out = os.path.join("runs", "gpt", args.corpus)
    if args.generate is not None:
        if args.resume or args.overwrite:
            p.error("--generate reads the run in --out: it takes neither --resume nor "
                    "--overwrite")
        if not os.path.isfile(os.path.join(args.out, CHECKPOINT)):
            p.error(f"--generate: no {CHECKPOINT} in {args.out} (train first: "
                    f"python examples/gpt.py --out {args.out})")
    else:
        check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite, resume=args.resume,
                         checkpoint=CHECKPOINT)
    return p, args


def probability(text):
    """A number in (0, 1]: --top-p."""
    value = positive_float(text)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


# ----------------------------------------------------------------------------- the text


def load_text(corpus):
    """(training text, held-out text) of ``corpus``."""
    if corpus == "shakespeare":
        with open(SHAKESPEARE, encoding="utf-8") as handle:
            text = handle.read()
        split = int(len(text) * (1 - HELD_OUT_FRACTION))
        split = text.index("\n\n", split) + 2  # the held-out part starts with a speech
        return text[:split], text[split:]
    from minitorch.text.trans_de_en import TRAINING_DEFAULTS, load_trans_de_en, split_pairs
    train, held_out = split_pairs(load_trans_de_en(), TRAINING_DEFAULTS["n_valid"])
    return ("".join(english + "\n" for _, english in train),
            "".join(english + "\n" for _, english in held_out))


class Characters:
    """The vocabulary: one id per character of the training text, in code-point order."""

    def __init__(self, chars):
        self.chars = list(chars)
        self.index = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def of(cls, text):
        return cls(sorted(set(text)))

    def __len__(self):
        return len(self.chars)

    def unknown(self, text):
        return sorted(set(text) - set(self.index))

    def encode(self, text):
        return np.array([self.index[c] for c in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def unigram_loss(train_ids, held_out_ids, vocab_size):
    """Cross-entropy (nats per character) on ``held_out_ids`` of the character frequencies of
    ``train_ids``, add-one smoothed: the baseline that knows no context at all."""
    counts = np.bincount(train_ids, minlength=vocab_size) + 1.0
    log_p = np.log(counts / counts.sum())
    return float(-log_p[held_out_ids].mean())


def random_windows(ids, rng, batch_size, block_size):
    """(inputs, targets) (batch_size, block_size): windows at random offsets, shifted by one."""
    starts = rng.integers(0, len(ids) - block_size, batch_size)
    x = np.stack([ids[s:s + block_size] for s in starts])
    y = np.stack([ids[s + 1:s + block_size + 1] for s in starts])
    return minitorch.tensor(x), minitorch.tensor(y)


def evaluate(model, ids, block_size, windows=None, batch_size=64):
    """Mean cross-entropy per character on ``ids``: every character predicted once, from the
    non-overlapping windows it falls in (or from ``windows`` of them, evenly spaced)."""
    starts = np.arange(0, len(ids) - 1, block_size)
    if windows is not None and windows < len(starts):
        starts = starts[np.linspace(0, len(starts) - 1, windows).astype(int)]
    model.eval()
    total, count = 0.0, 0
    with minitorch.no_grad():
        for length in sorted({min(block_size, len(ids) - 1 - s) for s in starts}):
            same = [s for s in starts if min(block_size, len(ids) - 1 - s) == length]
            for i in range(0, len(same), batch_size):
                chunk = same[i:i + batch_size]
                x = minitorch.tensor(np.stack([ids[s:s + length] for s in chunk]))
                y = minitorch.tensor(np.stack([ids[s + 1:s + length + 1] for s in chunk]))
                total += model(x, y)[1].item() * x.numel()
                count += x.numel()
    model.train()
    return total / count


# ----------------------------------------------------------------------------- the model


def build_model(config, vocab_size):
    return GPT(GPTConfig(vocab_size=vocab_size, block_size=config["block_size"],
                         n_layer=config["n_layer"], n_head=config["n_head"],
                         n_embd=config["n_embd"], dropout=config["dropout"]))


def build_optimizer(model, config):
    """AdamW; weight decay on the matrices only (not on biases and LayerNorm gains)."""
    params = list(model.parameters())
    groups = [{"params": [p for p in params if p.ndim >= 2],
               "weight_decay": config["weight_decay"]},
              {"params": [p for p in params if p.ndim < 2], "weight_decay": 0.0}]
    return optim.AdamW(groups, lr=config["lr"], betas=(0.9, 0.99))


def learning_rate(step, config):
    """Linear warmup to ``lr``, then a cosine decay to ``min_lr`` at ``max_steps`` (and
    ``min_lr`` after it, when --resume trains further)."""
    lr, min_lr, warmup, total = (config["lr"], config["min_lr"], config["warmup"],
                                 config["max_steps"])
    if step < warmup:
        return lr * (step + 1) / warmup
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(1, total - warmup)
    return min_lr + 0.5 * (lr - min_lr) * (1 + math.cos(math.pi * progress))


def train_step(model, optimizer, lr, x, y):
    """One AdamW step at learning rate ``lr`` on windows ``x`` → ``y``; returns the loss."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    _, loss = model(x, y)
    optimizer.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def sample(model, chars, args, length, generator):
    """``args.prompt`` followed by ``length`` sampled characters (one row, KV-cached)."""
    prompt = chars.encode(args.prompt)[-model.config.block_size:]
    out = model.generate(minitorch.tensor(prompt[None]), length, temperature=args.temperature,
                         top_k=args.top_k, top_p=args.top_p, generator=generator)
    return args.prompt + chars.decode(out.numpy()[0, len(prompt):])


# ----------------------------------------------------------------------------- saving


def save_checkpoint(path, model, optimizer, state, config, chars, data_rng):
    minitorch.save({
        "model": model.state_dict(), "optimizer": optimizer.state_dict(),
        "step": state["step"], "config": json.dumps(config), "chars": json.dumps(chars.chars),
        "history": json.dumps(state["history"]),
        "rng": json.dumps(minitorch.get_rng_state()),
        "data_rng": json.dumps(data_rng.bit_generator.state),
    }, path)


def load_checkpoint(path):
    try:
        checkpoint = minitorch.load(path)
        missing = [key for key in ("model", "optimizer", "step") if key not in checkpoint]
        if missing:
            raise KeyError(f"no {', '.join(missing)}")
        for key in ("config", "chars", "history", "rng", "data_rng"):
            checkpoint[key] = json.loads(checkpoint[key])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a checkpoint of examples/gpt.py ({error})") from None
    return checkpoint


def restore_model(path):
    checkpoint = load_checkpoint(path)
    chars = Characters(checkpoint["chars"])
    model = build_model(checkpoint["config"], len(chars))
    try:
        model.load_state_dict(checkpoint["model"])
    except (KeyError, ValueError, RuntimeError) as error:
        raise ValueError(f"{path}: the weights do not fit its config ({error})") from None
    return model, chars, checkpoint


def resume_config(parser, args, checkpoint):
    """The resumed run's config; a flag given now that contradicts it is an error."""
    config = checkpoint["config"]
    check_resume_flags(parser, args, config, CONFIG_KEYS, free=("max_steps",))
    return config


def plot_loss(history, unigram, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib not installed, {os.path.basename(path)} skipped")
        return False
    train = np.array(history["train"])
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    ax.plot(np.arange(1, len(train) + 1), train, lw=0.5, alpha=0.35, color="C0")
    window = min(25, len(train))
    smooth = np.convolve(train, np.ones(window) / window, mode="valid")
    ax.plot(np.arange(window, len(train) + 1), smooth, color="C0", label="training (batches)")
    if history["eval"]:
        steps, _, held_out = zip(*history["eval"])
        ax.plot(steps, held_out, "o-", color="C1", label="held-out")
    ax.axhline(unigram, ls="--", color="gray", label="unigram baseline, held-out")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy (nats per character)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- commands


def check_prompt(parser, args, chars, block_size):
    unknown = chars.unknown(args.prompt)
    if unknown:
        parser.error(f"--prompt holds characters the corpus does not have: {unknown!r}")
    if len(args.prompt) > block_size:
        parser.error(f"--prompt has {len(args.prompt)} characters, more than the model's "
                     f"context (--block-size {block_size})")


def run_generate(parser, args):
    model, chars, checkpoint = restore_model(os.path.join(args.out, CHECKPOINT))
    check_prompt(parser, args, chars, model.config.block_size)
    generator = minitorch.Generator().manual_seed(args.seed)
    text = sample(model, chars, args, args.generate, generator)
    print(text)
    return {"text": text, "step": checkpoint["step"]}


def main(argv=None):
    """Train (or with --generate, sample); returns a dict of results for tests."""
    parser, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    if args.generate is not None:
        return run_generate(parser, args)
    say = (lambda *a, **k: None) if args.quiet else print
    checkpoint_path = os.path.join(args.out, CHECKPOINT)
    checkpoint = load_checkpoint(checkpoint_path) if args.resume else None
    config = (resume_config(parser, args, checkpoint) if checkpoint is not None
              else {k: getattr(args, k) for k in CONFIG_KEYS})
    c = types.SimpleNamespace(**config)

    train_text, held_out_text = load_text(c.corpus)
    chars = Characters(checkpoint["chars"]) if checkpoint else Characters.of(train_text)
    check_prompt(parser, args, chars, c.block_size)
    held_out_text = "".join(ch for ch in held_out_text if ch in chars.index)
    train_ids, held_out_ids = chars.encode(train_text), chars.encode(held_out_text)
    if len(train_ids) <= c.block_size or len(held_out_ids) < 2:
        parser.error(f"--block-size {c.block_size}: the corpus is too short for it")

    minitorch.manual_seed(c.seed)
    data_rng = np.random.default_rng(c.seed)
    model = build_model(config, len(chars))
    optimizer = build_optimizer(model, config)
    state = {"step": 0, "history": {"train": [], "eval": []}}
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        minitorch.set_rng_state(checkpoint["rng"])
        data_rng.bit_generator.state = checkpoint["data_rng"]
        state.update(step=checkpoint["step"], history=checkpoint["history"])
        say(f"resumed from {checkpoint_path} at step {state['step']}")
    else:
        make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
    generator = minitorch.Generator().manual_seed(c.seed)
    unigram = unigram_loss(train_ids, held_out_ids, len(chars))
    n_params = sum(p.numel() for p in model.parameters())
    say(f"{c.corpus}: {len(train_ids):,} training and {len(held_out_ids):,} held-out characters, "
        f"vocabulary {len(chars)}; model {n_params / 1e6:.2f}M parameters; unigram held-out "
        f"perplexity {math.exp(unigram):.2f}; backend {minitorch.backend()}, "
        f"{minitorch.get_num_threads()} thread(s)")

    started = time.perf_counter()
    first_step = state["step"]
    last_step = first_step + args.max_steps
    model.train()
    while state["step"] < last_step:
        # One progress bar per stretch between evaluations: what they print goes between bars.
        stretch = min(args.eval_every - state["step"] % args.eval_every,
                      last_step - state["step"])
        progress = Progress(stretch, f"steps {state['step'] + 1}-{state['step'] + stretch}",
                            enabled=not args.quiet, print_every=stretch)
        for _ in range(stretch):
            lr = learning_rate(state["step"], config)
            loss = train_step(model, optimizer, lr,
                              *random_windows(train_ids, data_rng, c.batch_size, c.block_size))
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss} at step "
                                         f"{state['step']}: lower --lr")
            state["step"] += 1
            state["history"]["train"].append(loss)
            progress.update(loss, c.batch_size * c.block_size, lr)
        progress.close()
        train_loss = evaluate(model, train_ids, c.block_size, args.eval_windows)
        held_out_loss = evaluate(model, held_out_ids, c.block_size, args.eval_windows)
        state["history"]["eval"].append((state["step"], train_loss, held_out_loss))
        text = sample(model, chars, args, args.sample_length, generator)
        say(f"step {state['step']}: loss {train_loss:.3f} training, {held_out_loss:.3f} "
            f"held-out (perplexity {math.exp(held_out_loss):.2f}; unigram "
            f"{math.exp(unigram):.2f}), {time.perf_counter() - started:.0f}s\n"
            f"--- sample ---\n{text}\n--------------", flush=True)
        with open(os.path.join(args.out, SAMPLES), "a", encoding="utf-8") as handle:
            handle.write(f"=== step {state['step']} (held-out loss {held_out_loss:.3f}) "
                         f"===\n{text}\n\n")
        save_checkpoint(checkpoint_path, model, optimizer, state, config, chars, data_rng)

    final = evaluate(model, held_out_ids, c.block_size)
    if not args.no_plots:
        plot_loss(state["history"], unigram, os.path.join(args.out, PLOT))
    elapsed = time.perf_counter() - started
    print(f"held-out perplexity {math.exp(final):.2f} per character (loss {final:.3f}), "
          f"unigram baseline {math.exp(unigram):.2f} (loss {unigram:.3f}), after "
          f"{state['step'] - first_step} steps ({state['step']} in all), {elapsed:.0f}s "
          f"(run folder: {args.out})")
    return {"held_out_loss": final, "unigram_loss": unigram, "step": state["step"],
            "losses": state["history"]["train"][first_step:], "history": state["history"],
            "seconds": elapsed, "out": args.out, "vocab_size": len(chars)}


if __name__ == "__main__":
    run_main(main)
