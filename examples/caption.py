"""Train a CNN + attention RNN to caption generated scenes of shapes, then show where it looks.

    python examples/caption.py                         # train on 6,000 scenes (< 10 minutes)
    python examples/caption.py --resume --max-steps 300   # 300 more steps of that run
    python examples/caption.py --decode beam           # evaluate with beam search

What it does: generates the captioned scenes of ``minitorch.vision.shapes`` ("a small red
circle above a large blue square"), trains ``minitorch.vision.captioning.AttentionCaptioner``
(a small CNN whose feature grid an LSTM decoder attends over with additive attention; teacher
forcing, Adam with a cosine learning-rate decay, gradient clipping) and evaluates two held-out
splits: *seen* (new images of combinations training shows) and *unseen* (every image has a
colour-kind pair training never shows, e.g. a red circle). It prints BLEU and exact match for
both (a caption is right if it equals either correct caption: "A above B" or "B below A"),
saves ``checkpoint.safetensors`` after every evaluation, and draws ``attention.png`` (an
unseen-split image and, one panel per generated word, where that step looked: the image lit by
its attention weights, upsampled), ``samples.png`` (held-out images with their captions) and
``loss.png`` when matplotlib is installed. The run goes to ``runs/caption/shapes`` and never
replaces another run's files unless ``--overwrite``; every argument is checked before anything
is trained or written. ``main(argv)`` runs it in-process and returns the results (the tests do).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time
import types

import numpy as np

import minitorch
from minitorch import nn, optim
from minitorch.text import bleu
from minitorch.text.training import Progress
from minitorch.vision.captioning import AttentionCaptioner, caption_loss
from minitorch.vision.shapes import MIN_IMAGE_SIZE, make_corpus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, add_run_arguments, check_resume_flags,  # noqa: E402
                     check_run_folder, make_run_folder, non_negative_int, positive_float,
                     positive_int, run_main)

CHECKPOINT = "checkpoint.safetensors"
RUN_FILES = (CHECKPOINT, "loss.png", "attention.png", "samples.png")
MAX_CAPTION_STEPS = 12  # the longest caption is 10 words and <eos>
# What the model and data depend on: stored in the checkpoint, so --resume rebuilds the same.
CONFIG_KEYS = ("n_train", "n_eval", "image_size", "width", "embed_size", "hidden_size",
               "attention_size", "cell", "batch_size", "lr", "seed")
FINAL_LR_FRACTION = 0.1  # the cosine schedule ends at --lr / 10


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n-train", type=positive_int, default=6000, help="training scenes")
    p.add_argument("--n-eval", type=positive_int, default=300,
                   help="scenes in each held-out split (seen and unseen)")
    p.add_argument("--image-size", type=positive_int, default=32,
                   help=f"image side in pixels: a multiple of 4, at least {MIN_IMAGE_SIZE}")
    p.add_argument("--width", type=positive_int, default=32,
                   help="channels of the first conv block (then 2x, 2x)")
    p.add_argument("--embed-size", type=positive_int, default=32, help="word embedding size")
    p.add_argument("--hidden-size", type=positive_int, default=128, help="decoder state size")
    p.add_argument("--attention-size", type=positive_int, default=64,
                   help="hidden units of the attention MLP")
    p.add_argument("--cell", choices=("lstm", "gru"), default="lstm", help="decoder cell")
    p.add_argument("--batch-size", type=positive_int, default=64, help="images per step")
    p.add_argument("--lr", type=positive_float, default=3e-3, help="Adam learning rate")
    p.add_argument("--max-steps", type=positive_int, default=1200,
                   help="training steps; with --resume: this many MORE steps")
    p.add_argument("--decay-steps", type=positive_int, default=None,
                   help="steps over which the learning rate decays from --lr to a tenth "
                        "(cosine), then stays (default: the first run's --max-steps)")
    p.add_argument("--eval-every", type=positive_int, default=200,
                   help="steps between held-out evaluations (and checkpoints)")
    p.add_argument("--decode", choices=("greedy", "beam"), default="greedy",
                   help="decoding of the held-out captions")
    p.add_argument("--beam-size", type=positive_int, default=3, help="for --decode beam")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    p.add_argument("--no-capture", action="store_true",
                   help="run every training step eagerly (default: minitorch.capture records "
                        "the step once and then replays its kernels, ~10%% faster here)")
    add_run_arguments(p, "run folder (default: runs/caption/shapes)")
    p.add_argument("--quiet", action="store_true", help="only the final lines")
    p.add_argument("--no-plots", action="store_true",
                   help="skip loss.png, attention.png and samples.png")
    args = p.parse_args(argv)
    if args.image_size % 4 or args.image_size < MIN_IMAGE_SIZE:
        p.error(f"--image-size must be a multiple of 4 and at least {MIN_IMAGE_SIZE}, got "
                f"{args.image_size}")
    if args.batch_size > args.n_train:
        p.error(f"--batch-size {args.batch_size} is more than --n-train {args.n_train}")
    if args.out is None:
        args.out = os.path.join("runs", "caption", "shapes")
    check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite, resume=args.resume,
                     checkpoint=CHECKPOINT)
    return p, args


def build_model(c, vocab_size):
    return AttentionCaptioner(vocab_size, image_size=c.image_size,
                              channels=(c.width, 2 * c.width, 2 * c.width),
                              embed_size=c.embed_size, hidden_size=c.hidden_size,
                              attention_size=c.attention_size, cell=c.cell)


def learning_rate(step, config):
    """Cosine decay from ``lr`` to ``lr`` / 10 over the first run's steps, then constant."""
    progress = min(step / config["decay_steps"], 1.0)
    cosine = 0.5 * (1 + math.cos(math.pi * progress))
    fraction = FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * cosine
    return config["lr"] * fraction


def batch_indices(step, n_train, batch_size, seed):
    """The training images of ``step``: epochs of a fresh permutation each, from (seed,
    epoch) alone, so a resumed run draws exactly the batches the uninterrupted one would."""
    per_epoch = n_train // batch_size
    epoch, index = divmod(step, per_epoch)
    order = np.random.default_rng([seed, epoch]).permutation(n_train)
    return order[index * batch_size:(index + 1) * batch_size]


# ----------------------------------------------------------------------------- evaluation


def decode(model, images, args, batch_size=200):
    """Captions (id lists) of ``images`` and each one's attention maps (steps, H, W)."""
    ids, maps = [], []
    for start in range(0, len(images), batch_size):
        chunk = minitorch.tensor(images[start:start + batch_size])
        if args.decode == "beam":
            chunk_ids, chunk_maps = model.beam_search(chunk, args.beam_size, MAX_CAPTION_STEPS)
        else:
            chunk_ids, batch_maps = model.greedy_decode(chunk, MAX_CAPTION_STEPS)
            chunk_maps = list(batch_maps)
        ids += chunk_ids
        maps += chunk_maps
    return ids, maps


def evaluate(model, split, vocab, args):
    """{"bleu", "exact", "captions", "maps"} of ``split``: multi-reference BLEU (either correct
    caption counts) and the fraction of captions equal to one of the two."""
    ids, maps = decode(model, split.images, args)
    captions = [vocab.decode(row) for row in ids]
    exact = float(np.mean([c in refs for c, refs in zip(captions, split.references)]))
    score = bleu(captions, [list(refs) for refs in split.references])
    return {"bleu": score, "exact": exact, "captions": captions, "maps": maps}


# ----------------------------------------------------------------------------- pictures


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def plot_loss(losses, path):
    plt = _pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (cross-entropy per word)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def upsample(weights, size):
    """An (H, W) grid of weights stretched to (size, size) by bilinear interpolation between
    the cells' centres (the border cells' values extend to the edges)."""
    rows, cols = weights.shape
    pixels = np.arange(size) + 0.5
    row_centres = (np.arange(rows) + 0.5) * size / rows
    col_centres = (np.arange(cols) + 0.5) * size / cols
    by_rows = np.stack([np.interp(pixels, row_centres, weights[:, j]) for j in range(cols)], 1)
    return np.stack([np.interp(pixels, col_centres, row) for row in by_rows])


def plot_attention(image, words, maps, path, title):
    """The image, then one panel per generated word: the image lit by that step's attention
    weights (upsampled to the image, scaled to the step's largest weight), so what the step
    looks at keeps its colour and the rest goes dark."""
    plt = _pyplot()
    if plt is None:
        return False
    size = image.shape[-1]
    picture = image.transpose(1, 2, 0)
    panels = len(words) + 1
    cols = min(panels, 6)
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.1 * cols, 2.5 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    axes.flat[0].imshow(picture, interpolation="nearest")
    axes.flat[0].set_title("image", fontsize=9)
    for ax, word, weights in zip(axes.flat[1:], words, maps):
        light = upsample(weights, size)
        light = light / max(float(light.max()), 1e-12)
        ax.imshow(picture * (0.15 + 0.85 * light[:, :, None]), interpolation="nearest")
        ax.set_title(f"{word}  (max {weights.max():.2f})", fontsize=8)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_samples(split, captions, path, count=12):
    """Held-out images with the model's caption, marked right or wrong."""
    plt = _pyplot()
    if plt is None:
        return False
    count = min(count, len(captions))
    if count == 0:
        return False
    cols = min(count, 4)
    rows = math.ceil(count / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.7 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, image, caption, refs in zip(axes.flat, split.images, captions, split.references):
        ax.imshow(image.transpose(1, 2, 0), interpolation="nearest")
        mark = "right" if caption in refs else "WRONG"
        ax.set_title(f"{caption.replace(' a ', chr(10) + 'a ', 1)}\n[{mark}]", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def draw_pictures(model, corpus, unseen, losses, args, say):
    if _pyplot() is None:
        say("note: matplotlib not installed: loss.png, attention.png and samples.png skipped")
        return
    plot_loss(losses, os.path.join(args.out, "loss.png"))
    # The first unseen image the model captions right (else the first): the slides' picture.
    right = [i for i, (c, refs) in enumerate(zip(unseen["captions"], corpus.unseen.references))
             if c in refs]
    index = right[0] if right else 0
    words = unseen["captions"][index].split() + ["<eos>"]
    maps = unseen["maps"][index][:len(words)]
    plot_attention(corpus.unseen.images[index], words[:len(maps)], maps,
                   os.path.join(args.out, "attention.png"),
                   f"an unseen-combination image, captioned {unseen['captions'][index]!r} "
                   f"({'right' if right else 'wrong'}); each panel: where the step looked")
    plot_samples(corpus.unseen, unseen["captions"], os.path.join(args.out, "samples.png"))


# ----------------------------------------------------------------------------- the run


def load_run(parser, args):
    """The checkpoint in ``args.out`` and its config; flags given now must agree with it."""
    path = os.path.join(args.out, CHECKPOINT)
    try:
        checkpoint = minitorch.load(path)
        config = json.loads(checkpoint["config"])
        checkpoint["step"], checkpoint["model"], checkpoint["optimizer"], config["decay_steps"]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a caption checkpoint ({error})") from None
    check_resume_flags(parser, args, config, CONFIG_KEYS)
    return checkpoint, config


def save_run(path, model, optimizer, step, losses, config):
    minitorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "step": step, "config": json.dumps(config), "losses": json.dumps(losses),
                    "rng": json.dumps(minitorch.get_rng_state())}, path)


def report(name, result, say):
    say(f"  {name:6s} BLEU {result['bleu']:5.1f}, exact match {100 * result['exact']:5.1f}%")


def main(argv=None):
    """Train and evaluate; returns a dict of results for tests."""
    parser, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    say = (lambda *a: None) if args.quiet else print
    checkpoint, config = (load_run(parser, args) if args.resume else
                          (None, {k: getattr(args, k) for k in CONFIG_KEYS}))
    if args.resume and args.decay_steps is not None and args.decay_steps != config["decay_steps"]:
        parser.error(f"--resume: the run in {args.out} has --decay-steps "
                     f"{config['decay_steps']}, not {args.decay_steps}: leave it out")
    if not args.resume:
        config["decay_steps"] = args.decay_steps or args.max_steps
    c = types.SimpleNamespace(**config)  # the run's settings, spelled as its flags
    minitorch.manual_seed(c.seed)
    started = time.perf_counter()
    corpus = make_corpus(c.n_train, c.n_eval, c.n_eval, image_size=c.image_size, seed=c.seed)
    vocab = corpus.vocab
    train_tokens = vocab.encode_batch(corpus.train.captions)
    model = build_model(c, len(vocab))
    optimizer = optim.Adam(model.parameters(), lr=c.lr)
    step, losses = 0, []
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        minitorch.set_rng_state(json.loads(checkpoint["rng"]))
        step, losses = int(checkpoint["step"]), json.loads(checkpoint["losses"])
        say(f"resumed from {os.path.join(args.out, CHECKPOINT)} at step {step}")
    else:
        make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
    held = ", ".join(f"{colour} {kind}" for colour, kind in corpus.held_out)
    parameters = sum(p.numel() for p in model.parameters())
    say(f"{c.n_train} training scenes ({c.image_size}x{c.image_size}), {c.n_eval} seen + "
        f"{c.n_eval} unseen held out (never in training: {held}); {parameters / 1e3:.0f}k "
        f"parameters; backend {minitorch.backend()}, {minitorch.get_num_threads()} threads; "
        f"data in {time.perf_counter() - started:.1f}s")

    def train_step(images, tokens):
        loss = caption_loss(model, images, tokens)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss
    # every batch has the same shapes, so the step can be recorded once and replayed
    run_step = train_step if args.no_capture else minitorch.capture(train_step)

    first_step, last_step = step, step + args.max_steps
    progress = Progress(args.max_steps, "training", enabled=not args.quiet)
    model.train()
    while step < last_step:
        lr = learning_rate(step, config)
        for group in optimizer.param_groups:
            group["lr"] = lr
        index = batch_indices(step, c.n_train, c.batch_size, c.seed)
        tokens = train_tokens[index]
        loss = run_step(minitorch.tensor(corpus.train.images[index]), minitorch.tensor(tokens))
        value = float(loss.item())
        if not math.isfinite(value):
            raise FloatingPointError(f"training loss became {value} at step {step}: lower --lr")
        step += 1
        losses.append(value)
        progress.update(value, int((tokens[:, 1:] != vocab.pad_id).sum()), lr)
        if (step - first_step) % args.eval_every == 0 and step < last_step:
            seen = evaluate(model, corpus.seen, vocab, args)
            unseen = evaluate(model, corpus.unseen, vocab, args)
            say(f"\nstep {step}: loss {np.mean(losses[-args.eval_every:]):.4f}, "
                f"{time.perf_counter() - started:.0f}s")
            report("seen", seen, say)
            report("unseen", unseen, say)
            save_run(os.path.join(args.out, CHECKPOINT), model, optimizer, step, losses, config)
    progress.close()

    seen = evaluate(model, corpus.seen, vocab, args)
    unseen = evaluate(model, corpus.unseen, vocab, args)
    save_run(os.path.join(args.out, CHECKPOINT), model, optimizer, step, losses, config)
    for caption, reference in list(zip(unseen["captions"], corpus.unseen.captions))[:4]:
        say(f"  unseen ref: {reference}\n         hyp: {caption}")
    if not args.no_plots:
        draw_pictures(model, corpus, unseen, losses, args, say)
    elapsed = time.perf_counter() - started
    label = "greedy" if args.decode == "greedy" else f"beam {args.beam_size}"
    print(f"after {step - first_step} steps ({step} in all), {elapsed:.0f}s ({label}, "
          f"{c.n_eval} images each; run folder {args.out}):")
    report("seen", seen, print)
    report("unseen", unseen, print)
    return {"losses": losses[first_step:], "all_losses": losses, "step": step,
            "seen": {k: seen[k] for k in ("bleu", "exact")},
            "unseen": {k: unseen[k] for k in ("bleu", "exact")},
            "seconds": elapsed, "out": args.out}


if __name__ == "__main__":
    run_main(main)
