"""Train a small MLP on the two-moons dataset, generated here, and watch the loss fall.

The shortest tour of the engine: tensors, ``nn.Sequential``, ``cross_entropy``, ``backward``
and ``optim.Adam``. Writes ``moons.png`` (the decision boundary) when matplotlib is installed.

    python examples/mlp_moons.py --epochs 200
"""
import argparse
import math
import os

import numpy as np

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--out", default="runs/moons")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    minitorch.manual_seed(args.seed)
    points, labels = make_moons(512, seed=args.seed)
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
    _plot(model, points, labels, args.out)
    return losses


def _plot(model, points, labels, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no picture (pip install 'minitorch[examples]')")
        return
    os.makedirs(out, exist_ok=True)
    xs, ys = np.meshgrid(np.linspace(-1.5, 2.5, 200), np.linspace(-1.0, 1.5, 200))
    grid = minitorch.tensor(np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32))
    with minitorch.no_grad():
        p = F.softmax(model(grid), -1)[:, 1].numpy().reshape(xs.shape)
    plt.figure(figsize=(6, 4))
    plt.contourf(xs, ys, p, levels=20, cmap="RdBu", alpha=0.6)
    plt.scatter(points[:, 0], points[:, 1], c=labels, cmap="RdBu", edgecolors="k", s=12)
    plt.title("minitorch MLP on two moons")
    path = os.path.join(out, "moons.png")
    plt.savefig(path, dpi=100, bbox_inches="tight")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
