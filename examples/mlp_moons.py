"""Train a small MLP on the two-moons dataset, generated here, and watch the loss fall.

The shortest tour of the engine: tensors, ``nn.Sequential``, ``cross_entropy``, ``backward``
and ``optim.Adam``. Writes ``moons.png`` (the decision boundary) in ``runs/moons`` when
matplotlib is installed; a second run refuses to replace it without ``--overwrite``, and every
argument is checked before anything is trained or written.

    python examples/mlp_moons.py --epochs 200
"""
import math
import os
import sys

import numpy as np

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, check_run_folder, make_run_folder,  # noqa: E402
                     non_negative_int, positive_float, positive_int, run_main)

PICTURE = "moons.png"


def make_moons(n, noise=0.1, seed=0):
    """Two interleaving half circles, labelled 0 and 1 (as sklearn.datasets.make_moons)."""
    rng = np.random.default_rng(seed)
    half = n // 2
    angles = rng.uniform(0, math.pi, n)
    upper = np.stack([np.cos(angles[:half]), np.sin(angles[:half])], 1)
    lower = np.stack([1 - np.cos(angles[half:]), 0.5 - np.sin(angles[half:])], 1)
    points = np.concatenate([upper, lower]) + rng.normal(0, noise, (n, 2))
    labels = np.concatenate([np.zeros(half), np.ones(n - half)]).astype(np.int64)
    return points.astype(np.float32), labels


def parse_args(argv=None):
    """The arguments, every one checked; nothing is created or written yet."""
    parser = Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=positive_int, default=200,
                        help="full-batch training steps")
    parser.add_argument("--hidden", type=positive_int, default=32, help="hidden layer width")
    parser.add_argument("--lr", type=positive_float, default=0.01, help="Adam learning rate")
    parser.add_argument("--points", type=positive_int, default=512, help="data set size (>= 2)")
    parser.add_argument("--out", default=os.path.join("runs", "moons"),
                        help="folder of moons.png")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the moons.png already in --out")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    args = parser.parse_args(argv)
    if args.points < 2:
        parser.error(f"--points must be >= 2 (one per moon), got {args.points}")
    check_run_folder(parser, args.out, (PICTURE,), overwrite=args.overwrite)
    return args


def main(argv=None):
    args = parse_args(argv)

    minitorch.manual_seed(args.seed)
    points, labels = make_moons(args.points, seed=args.seed)
    x, y = minitorch.tensor(points), minitorch.tensor(labels)
    model = nn.Sequential(nn.Linear(2, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                          nn.Linear(args.hidden, 2))
    optimizer = minitorch.optim.Adam(model.parameters(), lr=args.lr)
    print(f"backend: {minitorch.backend()}, parameters: "
          f"{sum(p.numel() for p in model.parameters())}")
    losses = []
    for epoch in range(1, args.epochs + 1):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        if epoch == 1 or epoch % max(args.epochs // 10, 1) == 0:
            accuracy = (model(x).argmax(-1) == y).float().mean().item()
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  accuracy {accuracy:.3f}")
    _plot(model, points, labels, args.out, args.overwrite)
    return losses


def _plot(model, points, labels, out, overwrite):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no picture (pip install 'minitorch[examples]')")
        return
    make_run_folder(out, (PICTURE,), overwrite=overwrite)
    xs, ys = np.meshgrid(np.linspace(-1.5, 2.5, 200), np.linspace(-1.0, 1.5, 200))
    grid = minitorch.tensor(np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32))
    with minitorch.no_grad():
        p = F.softmax(model(grid), -1)[:, 1].numpy().reshape(xs.shape)
    plt.figure(figsize=(6, 4))
    plt.contourf(xs, ys, p, levels=20, cmap="RdBu", alpha=0.6)
    plt.scatter(points[:, 0], points[:, 1], c=labels, cmap="RdBu", edgecolors="k", s=12)
    plt.title("minitorch MLP on two moons")
    path = os.path.join(out, PICTURE)
    plt.savefig(path, dpi=100, bbox_inches="tight")
    print(f"wrote {path}")


if __name__ == "__main__":
    run_main(main)
