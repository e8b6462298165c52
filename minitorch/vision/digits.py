"""The 8×8 handwritten digits: 1,797 real images of the digits 0-9, shipped with minitorch.

They are the test set of the UCI "Optical Recognition of Handwritten Digits" data (E. Alpaydin
and C. Kaynak, 1998; CC BY 4.0), the copy scikit-learn carries as ``load_digits``: 32×32
bitmaps of digits written by 13 people, each 4×4 block summed into one pixel of 0..16.
``data/README.md`` says where the file comes from and how to cite it.

:func:`read_digits` reads the file as it is; :func:`load_digits` gives the images scaled to
[0, 1] as (N, 1, 8, 8) float32, their int64 labels, and a held-out split that is the same for
the same seed.
May import: numpy, the standard library.
"""
from __future__ import annotations

import gzip
import os
from typing import NamedTuple

import numpy as np

DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "digits.csv.gz")
NUM_CLASSES = 10


class Digits(NamedTuple):
    """A split of the digits: images (n, 1, 8, 8) float32 in [0, 1], labels (n,) int64."""
    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def read_digits(path: str = DATA_PATH) -> tuple[np.ndarray, np.ndarray]:
    """(pixels (1797, 8, 8) uint8 in 0..16, labels (1797,) int64) from the shipped file (a
    gzipped CSV: 64 pixel values, row by row, then the label, one image a line)."""
    try:
        with gzip.open(path, "rt") as lines:
            table = np.loadtxt(lines, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, ValueError) as error:
        raise ValueError(f"{path}: not a readable digits file ({error})") from None
    if table.shape[1:] != (65,) or len(table) == 0:
        raise ValueError(f"{path}: expected rows of 64 pixels and a label, got a table of "
                         f"shape {table.shape}")
    pixels, labels = table[:, :64], table[:, 64]
    if pixels.min() < 0 or pixels.max() > 16 or labels.min() < 0 or labels.max() >= NUM_CLASSES:
        raise ValueError(f"{path}: pixels must be in 0..16 and labels in 0..9")
    return pixels.reshape(-1, 8, 8).astype(np.uint8), labels


def load_digits(test_size: float = 0.2, seed: int = 0, path: str = DATA_PATH) -> Digits:
    """The digits split into training and held-out images, each class in proportion.

    From each digit's images, a seeded random ``test_size`` share (rounded) is held out; the
    same ``seed`` gives the same split. Both parts keep the file's order. Images are the pixel
    counts divided by 16: (n, 1, 8, 8) float32 in [0, 1], one channel, as a model of images
    (N, C, H, W) takes them.
    """
    if isinstance(test_size, bool) or not isinstance(test_size, (int, float)) \
            or not 0.0 <= test_size < 1.0:
        raise ValueError(f"load_digits: test_size must be a fraction in [0, 1), got "
                         f"{test_size!r}")
    pixels, labels = read_digits(path)
    rng = np.random.default_rng(seed)
    held_out = np.zeros(len(labels), dtype=bool)
    for digit in range(NUM_CLASSES):
        members = np.flatnonzero(labels == digit)
        held_out[rng.permutation(members)[:round(len(members) * test_size)]] = True
    images = (pixels.astype(np.float32) / 16.0)[:, None, :, :]
    return Digits(images[~held_out], labels[~held_out], images[held_out], labels[held_out])
