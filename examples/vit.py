"""Train a Vision Transformer on the 8×8 handwritten digits that ship with minitorch.

    python examples/vit.py                          # the run in runs/vit/digits
    python examples/vit.py --epochs 10 --out runs/vit/short

What it does: loads the 1,797 digits (``minitorch.vision.digits``; a seeded fifth of each digit
held out), fits two baselines on the raw pixels for scale (a logistic regression and a
one-hidden-layer MLP, full batch), then trains ``minitorch.models.VisionTransformer`` (2×2
patches: a 4×4 grid of 16 patches and a class token, learned positions, pre-norm encoder) with
AdamW and a cosine learning-rate schedule on shuffled mini-batches, printing the training loss
and held-out accuracy after every epoch. At the end it prints the held-out accuracy of all
three, saves ``model.safetensors`` (state_dict and settings) and draws ``curves.png`` (loss per
step, held-out accuracy per epoch) and ``attention.png`` (where the class token looks among the
patches of a few held-out digits, per layer, averaged over heads) when matplotlib is installed.
A new run never replaces another run's files unless ``--overwrite`` is given, and every
argument is checked before anything is trained or written. ``main(argv)`` runs it in-process
and returns its results (the tests do).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch import optim
from minitorch.models.vit import VisionTransformer
from minitorch.vision.digits import NUM_CLASSES, load_digits

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, check_run_folder, fraction, make_run_folder,  # noqa: E402
                     non_negative_int, positive_float, positive_int, run_main)

IMAGE_SIZE = 8
MODEL, CURVES, ATTENTION = "model.safetensors", "curves.png", "attention.png"
RUN_FILES = (MODEL, CURVES, ATTENTION)


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--epochs", type=positive_int, default=60, help="passes over the training set")
    p.add_argument("--max-steps", type=positive_int, default=None,
                   help="stop after this many steps (default: no limit)")
    p.add_argument("--batch-size", type=positive_int, default=64, help="images per step")
    p.add_argument("--lr", type=positive_float, default=3e-3, help="AdamW's peak learning rate")
    p.add_argument("--weight-decay", type=non_negative_float, default=0.05,
                   help="AdamW's decoupled weight decay")
    p.add_argument("--patch-size", type=positive_int, default=2,
                   help=f"side of the square patches (must divide {IMAGE_SIZE})")
    p.add_argument("--d-model", type=positive_int, default=32, help="model width")
    p.add_argument("--heads", type=positive_int, default=4,
                   help="attention heads (must divide --d-model)")
    p.add_argument("--layers", type=positive_int, default=4, help="encoder layers")
    p.add_argument("--ff", type=positive_int, default=64, help="feed-forward width")
    p.add_argument("--dropout", type=fraction, default=0.1, help="dropout probability")
    p.add_argument("--test-size", type=fraction, default=0.2,
                   help="share of each digit's images held out, in (0, 1)")
    p.add_argument("--baseline-steps", type=non_negative_int, default=300,
                   help="full-batch steps of each baseline (both have converged by 300; "
                        "0: no baselines)")
    p.add_argument("--panels", type=positive_int, default=8,
                   help="held-out digits drawn in attention.png")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    p.add_argument("--no-capture", action="store_true",
                   help="run every training step eagerly (default: minitorch.capture records "
                        "the step once per batch shape and then replays its kernels)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="C kernel threads (small matrices: one thread is fastest)")
    p.add_argument("--backend", choices=("c", "numpy"), default=None,
                   help="kernel backend (default: C when built, else numpy)")
    p.add_argument("--out", default=None, help="run folder (default: runs/vit/digits)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its files are deleted)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or per-epoch lines")
    p.add_argument("--no-plots", action="store_true", help="skip curves.png and attention.png")
    args = p.parse_args(argv)
    if IMAGE_SIZE % args.patch_size:
        p.error(f"--patch-size must divide the {IMAGE_SIZE}×{IMAGE_SIZE} digits, got "
                f"{args.patch_size}")
    if args.d_model % args.heads:
        p.error(f"--heads must divide --d-model, got --d-model {args.d_model} and "
                f"--heads {args.heads}")
    if args.test_size == 0:
        p.error("--test-size must be > 0: the accuracy is measured on the held-out digits")
    if args.out is None:
        args.out = os.path.join("runs", "vit", "digits")
    check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite)
    return p, args


def non_negative_float(text):
    """A finite number >= 0: --weight-decay."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value < float("inf"):  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


# ----------------------------------------------------------------------------- training


class EpochBar:
    """A tqdm bar over one epoch's steps when tqdm is installed and stdout is a terminal;
    otherwise nothing (the per-epoch line says how it went)."""

    def __init__(self, total, description, enabled):
        self.bar = None
        if enabled and sys.stdout.isatty():
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, desc=description, leave=False, dynamic_ncols=True)
            except ImportError:
                pass

    def update(self, loss):
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def accuracy(model, images, labels, batch_size=512):
    """Share of ``images`` (numpy, N×C×H×W) whose argmax logit is the label, in eval mode."""
    model.eval()
    correct = 0
    with minitorch.no_grad():
        for start in range(0, len(labels), batch_size):
            logits = model(minitorch.tensor(images[start:start + batch_size]))
            correct += int((logits.argmax(-1).numpy() == labels[start:start + batch_size]).sum())
    return correct / len(labels)


def fit_baseline(model, data, lr, steps):
    """Full-batch AdamW on the flattened pixels; the held-out accuracy."""
    optimizer = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    pixels = minitorch.tensor(data.train_images.reshape(len(data.train_labels), -1))
    labels = minitorch.tensor(data.train_labels)
    model.train()
    for _ in range(steps):
        loss = F.cross_entropy(model(pixels), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    flat = data.test_images.reshape(len(data.test_labels), -1)
    return accuracy(model, flat, data.test_labels)


def baselines(data, steps):
    """{name: held-out accuracy} of a logistic regression and an MLP on the raw 64 pixels."""
    if steps == 0:
        return {}
    pixels = IMAGE_SIZE * IMAGE_SIZE
    mlp = nn.Sequential(nn.Linear(pixels, 128), nn.ReLU(), nn.Linear(128, NUM_CLASSES))
    return {"logistic regression": fit_baseline(nn.Linear(pixels, NUM_CLASSES), data, 0.05,
                                                steps),
            "MLP (64-128-10)": fit_baseline(mlp, data, 0.01, steps)}


def build_model(config):
    return VisionTransformer(image_size=IMAGE_SIZE, patch_size=config["patch_size"],
                             in_channels=1, num_classes=NUM_CLASSES, d_model=config["d_model"],
                             nhead=config["heads"], num_layers=config["layers"],
                             dim_feedforward=config["ff"], dropout=config["dropout"])


def train(model, data, args, say):
    """Mini-batch AdamW with a cosine schedule; (losses per step, held-out accuracy per epoch)."""
    steps_per_epoch = math.ceil(len(data.train_labels) / args.batch_size)
    total_steps = steps_per_epoch * args.epochs
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    optimizer = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=total_steps)
    rng = np.random.default_rng(args.seed)

    def train_step(images, labels):
        loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    # two batch shapes: the full one and an epoch's shorter last batch
    run_step = train_step if args.no_capture else minitorch.capture(train_step, max_shapes=2)
    losses, accuracies, step = [], [], 0
    for epoch in range(1, args.epochs + 1):
        if step == total_steps:
            break
        model.train()
        order = rng.permutation(len(data.train_labels))
        bar = EpochBar(min(steps_per_epoch, total_steps - step), f"epoch {epoch}/{args.epochs}",
                       enabled=not args.quiet)
        for start in range(0, len(order), args.batch_size):
            if step == total_steps:
                break
            batch = order[start:start + args.batch_size]
            loss = run_step(minitorch.tensor(data.train_images[batch]),
                            minitorch.tensor(data.train_labels[batch]))
            scheduler.step()
            step += 1
            losses.append(loss.item())
            if not math.isfinite(losses[-1]):
                raise FloatingPointError(f"training loss became {losses[-1]} at step {step}: "
                                         f"lower --lr")
            bar.update(losses[-1])
        bar.close()
        accuracies.append(accuracy(model, data.test_images, data.test_labels))
        seen = losses[-min(steps_per_epoch, len(losses)):]
        say(f"epoch {epoch:3d}  step {step:5d}  loss {np.mean(seen):.4f}  "
            f"held-out accuracy {accuracies[-1]:.2%}")
    return losses, accuracies


# ----------------------------------------------------------------------------- pictures


def _pyplot(name):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib not installed, {name} skipped")
        return None
    return plt


def plot_curves(losses, accuracies, steps_per_epoch, path):
    plt = _pyplot(CURVES)
    if plt is None:
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5))
    left.plot(np.arange(1, len(losses) + 1), losses, lw=0.6)
    left.set_xlabel("step")
    left.set_ylabel("training loss (cross-entropy)")
    left.set_yscale("log")
    left.grid(alpha=0.3)
    epochs_end = np.minimum(np.arange(1, len(accuracies) + 1) * steps_per_epoch, len(losses))
    right.plot(epochs_end, 100 * np.asarray(accuracies), marker=".")
    right.set_xlabel("step")
    right.set_ylabel("held-out accuracy (%)")
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_attention(model, data, panels, path):
    """Per held-out digit (columns): the image, then for each layer (rows) the class token's
    attention over the patches (mean of heads) as a heat map, the digit's outline on top."""
    plt = _pyplot(ATTENTION)
    if plt is None:
        return False
    images, labels = data.test_images[:panels], data.test_labels[:panels]
    model.eval()
    with minitorch.no_grad():
        batch = minitorch.tensor(images)
        maps = model.class_token_attention(batch).mean(dim=2).numpy()  # (N, layers, gh, gw)
        predicted = model(batch).argmax(-1).numpy()
    layers = maps.shape[1]
    fig, axes = plt.subplots(1 + layers, len(labels), squeeze=False,
                             figsize=(1.3 * len(labels), 1.4 * (1 + layers)))
    extent = (-0.5, IMAGE_SIZE - 0.5, IMAGE_SIZE - 0.5, -0.5)  # the grid covers the pixels
    for column, (image, label, guess) in enumerate(zip(images, labels, predicted)):
        axes[0, column].imshow(image[0], cmap="gray_r", vmin=0, vmax=1)
        axes[0, column].set_title(f"{label} → {guess}", fontsize=8,
                                  color="black" if label == guess else "red")
        for layer in range(layers):
            ax = axes[1 + layer, column]
            # One colour scale for the figure, so a layer that looks everywhere stays dim.
            ax.imshow(maps[column, layer], cmap="viridis", extent=extent, vmin=0,
                      vmax=maps.max(), interpolation="nearest")
            ax.contour(image[0], levels=[0.4], colors="white", linewidths=0.8)
    for ax in axes.ravel():
        ax.set_xticks([])
        ax.set_yticks([])
    for layer in range(layers):
        axes[1 + layer, 0].set_ylabel(f"layer {layer + 1}", fontsize=8)
    axes[0, 0].set_ylabel("digit", fontsize=8)
    fig.suptitle("the class token's attention over the patches (mean of heads; outline: the "
                 "digit); titles: label → prediction", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- main


def main(argv=None):
    """Train and evaluate; returns a dict of results for tests."""
    parser, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    say = (lambda *a: None) if args.quiet else print
    started = time.perf_counter()

    minitorch.manual_seed(args.seed)
    data = load_digits(test_size=args.test_size, seed=args.seed)
    baseline = baselines(data, args.baseline_steps)
    config = {k: getattr(args, k) for k in ("patch_size", "d_model", "heads", "layers", "ff",
                                            "dropout", "test_size", "seed")}
    model = build_model(config)
    make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
    grid = IMAGE_SIZE // args.patch_size
    say(f"digits: {len(data.train_labels)} training and {len(data.test_labels)} held-out "
        f"images; ViT: a {grid}×{grid} grid of {args.patch_size}×{args.patch_size} patches, "
        f"{sum(p.numel() for p in model.parameters())} parameters; backend "
        f"{minitorch.backend()}, {minitorch.get_num_threads()} threads")
    for name, value in baseline.items():
        say(f"baseline {name}: held-out accuracy {value:.2%}")

    losses, accuracies = train(model, data, args, say)
    minitorch.save({"model": model.state_dict(), "config": json.dumps(config)},
                   os.path.join(args.out, MODEL))
    if not args.no_plots:
        steps_per_epoch = math.ceil(len(data.train_labels) / args.batch_size)
        plot_curves(losses, accuracies, steps_per_epoch, os.path.join(args.out, CURVES))
        plot_attention(model, data, args.panels, os.path.join(args.out, ATTENTION))
    elapsed = time.perf_counter() - started
    final = accuracies[-1]
    scale = "".join(f", {name} {value:.2%}" for name, value in baseline.items())
    print(f"Held-out accuracy ({len(data.test_labels)} digits): ViT {final:.2%} after "
          f"{len(losses)} steps{scale}; {elapsed:.0f}s (run folder: {args.out})")
    return {"losses": losses, "accuracies": accuracies, "accuracy": final,
            "baselines": baseline, "seconds": elapsed, "out": args.out}


if __name__ == "__main__":
    run_main(main)
