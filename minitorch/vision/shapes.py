"""A seeded generator of captioned scenes: two coloured shapes, and a sentence saying where one is.

This file holds the scene record (:class:`Shape`, :class:`Scene`), the renderer
(:func:`render`), the caption vocabulary (:class:`Vocabulary`) and :func:`make_corpus`, which
draws the three splits the captioning example trains and evaluates on.
May import: numpy, the standard library.

A scene
-------
An RGB image, ``image_size`` pixels square (default 32), of two shapes on a dark, slightly noisy
background. Each shape has a *kind* (circle, square, triangle, diamond, cross), a *colour* (red,
green, blue, yellow, purple, cyan), a *size* (small: half-width 13% of the image, large: 21%)
and a position, drawn so that one relation holds unambiguously between the two: the shapes do
not overlap along the relation's axis and are roughly aligned along the other. Its caption::

    a small red circle above a large blue square
    a large cyan cross left of a large green triangle

``<size> <colour> <kind> <relation> <size> <colour> <kind>`` with "a" before each shape and the
relation one of "above", "below", "left of", "right of": 9 or 10 words. "A above B" and
"B below A" describe the same image, so every scene has two correct captions
(:attr:`Scene.references`); the generator draws the relation uniformly, so the caption it trains
on (:attr:`Scene.caption`) is either, with equal chance, and evaluation accepts both.

The splits (:func:`make_corpus`)
--------------------------------
``held_out`` names colour-kind pairs (default: a red circle, a green square, a blue triangle, a
yellow diamond, a purple cross; each colour and each kind still occurs in training with the
others). ``train`` and ``seen`` never draw a held-out pair; every scene of ``unseen`` has at
least one, so a model captions it correctly only if it composes a colour and a kind it has
seen, but never together. ``seen`` is new images of the training distribution, for contrast.
Each split draws from its own stream of the seed, so the held-out images do not change with
``n_train``.

Shapes and dtypes: ``images`` float32 (N, 3, image_size, image_size) in [0, 1] (channels first,
as ``nn.Conv2d`` takes them); token arrays int64 (N, L) from :meth:`Vocabulary.encode_batch`.
Rendering is vectorised over the batch: a few thousand 32×32 scenes take well under a second.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

KINDS = ("circle", "square", "triangle", "diamond", "cross")
COLOURS = {  # RGB in [0, 1]; a jitter of ±0.08 per channel is added per shape
    "red": (0.90, 0.12, 0.10), "green": (0.10, 0.75, 0.15), "blue": (0.15, 0.30, 1.00),
    "yellow": (0.95, 0.90, 0.10), "purple": (0.62, 0.18, 0.85), "cyan": (0.10, 0.85, 0.90),
}
SIZES = {"small": 0.13, "large": 0.21}  # half-width of the shape as a fraction of image_size
RELATIONS = ("above", "below", "left of", "right of")
INVERSE = {"above": "below", "below": "above", "left of": "right of", "right of": "left of"}
DEFAULT_HELD_OUT = (("red", "circle"), ("green", "square"), ("blue", "triangle"),
                    ("yellow", "diamond"), ("purple", "cross"))
MIN_IMAGE_SIZE = 24  # below this a small shape is a few pixels and kinds blur together
_SUPERSAMPLE = 2     # each pixel is the mean of 2×2 samples: anti-aliased edges


@dataclass(frozen=True)
class Shape:
    """One drawn shape: what it is and where. ``center`` is (row, column) in pixels, ``radius``
    the half-width of its bounding box in pixels; ``rgb`` the colour it was drawn in."""
    kind: str
    colour: str
    size: str
    center: Tuple[float, float]
    radius: float
    rgb: Tuple[float, float, float]

    @property
    def phrase(self) -> str:
        return f"a {self.size} {self.colour} {self.kind}"


@dataclass(frozen=True)
class Scene:
    """Two shapes and the relation ``first <relation> second`` that holds between them."""
    first: Shape
    second: Shape
    relation: str

    @property
    def caption(self) -> str:
        """The caption the generator drew: ``first relation second``."""
        return f"{self.first.phrase} {self.relation} {self.second.phrase}"

    @property
    def references(self) -> Tuple[str, str]:
        """Both correct captions: this one, and the same scene told from the other shape."""
        return (self.caption,
                f"{self.second.phrase} {INVERSE[self.relation]} {self.first.phrase}")

    @property
    def pairs(self) -> Tuple[Tuple[str, str], Tuple[str, str]]:
        """The (colour, kind) pairs of its two shapes."""
        return (self.first.colour, self.first.kind), (self.second.colour, self.second.kind)


class Vocabulary:
    """The caption words, with ``<pad>`` = 0, ``<bos>`` = 1, ``<eos>`` = 2 before them."""

    SPECIALS = ("<pad>", "<bos>", "<eos>")
    pad_id, bos_id, eos_id = 0, 1, 2

    def __init__(self, words: Optional[Sequence[str]] = None):
        if words is None:
            words = ["a", *SIZES, *COLOURS, *KINDS, "above", "below", "left", "right", "of"]
        self.words: List[str] = [*self.SPECIALS, *words]
        self.index = {word: i for i, word in enumerate(self.words)}
        if len(self.index) != len(self.words):
            raise ValueError("Vocabulary: words must be distinct and not a special token")

    def __len__(self) -> int:
        return len(self.words)

    def encode(self, caption: str) -> List[int]:
        """``<bos>`` + the caption's word ids + ``<eos>``."""
        unknown = [w for w in caption.split() if w not in self.index]
        if unknown:
            raise ValueError(f"Vocabulary.encode: words not in the vocabulary: {unknown}")
        return [self.bos_id, *(self.index[w] for w in caption.split()), self.eos_id]

    def encode_batch(self, captions: Sequence[str]) -> np.ndarray:
        """int64 (N, longest + 2): each row ``<bos> ids <eos>``, then ``<pad>``."""
        rows = [self.encode(c) for c in captions]
        tokens = np.full((len(rows), max((len(r) for r in rows), default=2)), self.pad_id,
                         dtype=np.int64)
        for i, row in enumerate(rows):
            tokens[i, :len(row)] = row
        return tokens

    def decode(self, ids: Sequence[int]) -> str:
        """The words of ``ids`` up to the first ``<eos>``, without ``<bos>``/``<pad>``."""
        words = []
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if not 0 <= i < len(self.words):
                raise ValueError(f"Vocabulary.decode: id {i} is not in [0, {len(self.words)})")
            if i not in (self.pad_id, self.bos_id):
                words.append(self.words[i])
        return " ".join(words)


# ----------------------------------------------------------------------------- scenes


def _check_image_size(image_size):
    if not isinstance(image_size, (int, np.integer)) or isinstance(image_size, bool) \
            or image_size < MIN_IMAGE_SIZE:
        raise ValueError(f"image_size must be an int >= {MIN_IMAGE_SIZE}, got {image_size!r}")


def check_held_out(held_out) -> Tuple[Tuple[str, str], ...]:
    """``held_out`` as a tuple of known (colour, kind) pairs; ValueError naming a bad one, or if
    holding them out would leave some colour or kind out of training altogether."""
    pairs = tuple(tuple(p) for p in held_out)
    for pair in pairs:
        if len(pair) != 2 or pair[0] not in COLOURS or pair[1] not in KINDS:
            raise ValueError(f"held_out: {pair!r} is not a (colour, kind) pair; colours "
                             f"{list(COLOURS)}, kinds {list(KINDS)}")
    seen = [(c, k) for c in COLOURS for k in KINDS if (c, k) not in pairs]
    for name, values, position in (("colour", COLOURS, 0), ("kind", KINDS, 1)):
        missing = [v for v in values if all(p[position] != v for p in seen)]
        if missing:
            raise ValueError(f"held_out: no training pair would have the {name} {missing}; an "
                             f"unseen combination must be made of seen parts")
    return pairs


def _draw_shape(rng, image_size, pairs):
    colour, kind = pairs[rng.integers(len(pairs))]
    size = ("small", "large")[rng.integers(2)]
    return colour, kind, size, SIZES[size] * image_size


def _place(rng, image_size, relation, r1, r2):
    """Centres (row, col) of two shapes with half-widths r1, r2 such that ``first relation
    second``: a gap of at least 2 pixels along the relation's axis, and an offset across it
    of at most a quarter of the distance along it (so no other relation could be read)."""
    margin, gap = 1.0, 2.0
    vertical = relation in ("above", "below")
    # Along the axis: the shape that comes first (top / left) and the one after it.
    lead, trail = (r1, r2) if relation in ("above", "left of") else (r2, r1)
    low, high = margin + lead, image_size - margin - trail - (lead + trail + gap)
    a = rng.uniform(low, high)
    b = rng.uniform(a + lead + trail + gap, image_size - margin - trail)
    along1, along2 = (a, b) if relation in ("above", "left of") else (b, a)
    # Across the axis: the first shape anywhere that fits both, the second near it.
    r_max = max(r1, r2)
    across1 = rng.uniform(margin + r_max, image_size - margin - r_max)
    offset = rng.uniform(-1, 1) * min(0.25 * (b - a), 3.0)
    across2 = float(np.clip(across1 + offset, margin + r_max, image_size - margin - r_max))
    if vertical:
        return (along1, across1), (along2, across2)
    return (across1, along1), (across2, along2)


def _jittered(rng, colour) -> Tuple[float, float, float]:
    r, g, b = np.clip(np.add(COLOURS[colour], rng.uniform(-0.08, 0.08, 3)), 0, 1)
    return float(r), float(g), float(b)


def generate_scenes(n: int, seed: int = 0, *, image_size: int = 32,
                    held_out: Sequence[Tuple[str, str]] = DEFAULT_HELD_OUT,
                    unseen: bool = False) -> List[Scene]:
    """``n`` scenes drawn from ``seed``; with ``unseen=False`` no shape is a ``held_out`` pair,
    with ``unseen=True`` at least one is (the other is drawn from every pair)."""
    _check_image_size(image_size)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    held = check_held_out(held_out)
    if unseen and not held:
        raise ValueError("generate_scenes(unseen=True) needs at least one held_out pair")
    every = [(c, k) for c in COLOURS for k in KINDS]
    allowed = [p for p in every if p not in held]
    rng = np.random.default_rng(seed)
    scenes = []
    for _ in range(n):
        if unseen:  # which of the two shapes is the held-out one, the other from every pair
            pools = (list(held), every) if rng.integers(2) == 0 else (every, list(held))
        else:
            pools = (allowed, allowed)
        (c1, k1, s1, r1), (c2, k2, s2, r2) = (_draw_shape(rng, image_size, p) for p in pools)
        relation = RELATIONS[rng.integers(len(RELATIONS))]
        centre1, centre2 = _place(rng, image_size, relation, r1, r2)
        rgb1, rgb2 = _jittered(rng, c1), _jittered(rng, c2)
        scenes.append(Scene(Shape(k1, c1, s1, centre1, r1, rgb1),
                            Shape(k2, c2, s2, centre2, r2, rgb2), relation))
    return scenes


# ----------------------------------------------------------------------------- rendering


def _coverage(kind, dy, dx, r):
    """Boolean mask of a shape of half-width ``r`` at offsets (dy, dx) from its centre."""
    if kind == "circle":
        return dy * dy + dx * dx <= r * r
    if kind == "square":
        return np.maximum(np.abs(dy), np.abs(dx)) <= 0.85 * r
    if kind == "diamond":
        return np.abs(dy) + np.abs(dx) <= r
    if kind == "triangle":  # apex at the top, base at the bottom, as wide as it is tall
        return (dy <= r) & (np.abs(dx) <= (dy + r) / 2)
    if kind == "cross":
        thin = 0.35 * r
        return ((np.abs(dx) <= thin) & (np.abs(dy) <= r)) | \
            ((np.abs(dy) <= thin) & (np.abs(dx) <= r))
    raise ValueError(f"unknown kind {kind!r}; kinds: {list(KINDS)}")


def render(scenes: Sequence[Scene], image_size: int = 32, seed: int = 0) -> np.ndarray:
    """float32 (N, 3, image_size, image_size) in [0, 1]: each scene's two shapes, anti-aliased,
    on a background of a random dark grey with a little pixel noise (drawn from ``seed``)."""
    _check_image_size(image_size)
    rng = np.random.default_rng(seed)
    n = len(scenes)
    samples = image_size * _SUPERSAMPLE
    grid = (np.arange(samples, dtype=np.float32) + 0.5) / _SUPERSAMPLE  # sample centres, px
    background = rng.uniform(0.0, 0.15, size=(n, 1, 1, 1)).astype(np.float32)
    images = np.broadcast_to(background, (n, 3, image_size, image_size)).copy()
    for i, scene in enumerate(scenes):
        for shape in (scene.first, scene.second):
            # Only the shape's bounding box (in samples) is evaluated.
            lo = [max(int((c - shape.radius - 1) * _SUPERSAMPLE), 0) for c in shape.center]
            hi = [min(int((c + shape.radius + 1) * _SUPERSAMPLE) + 1, samples)
                  for c in shape.center]
            lo = [v - v % _SUPERSAMPLE for v in lo]  # whole pixels
            hi = [min(v + (-v) % _SUPERSAMPLE, samples) for v in hi]
            dy = grid[lo[0]:hi[0], None] - shape.center[0]
            dx = grid[None, lo[1]:hi[1]] - shape.center[1]
            mask = _coverage(shape.kind, dy, dx, shape.radius).astype(np.float32)
            h, w = mask.shape[0] // _SUPERSAMPLE, mask.shape[1] // _SUPERSAMPLE
            alpha = mask.reshape(h, _SUPERSAMPLE, w, _SUPERSAMPLE).mean(axis=(1, 3))
            rows = slice(lo[0] // _SUPERSAMPLE, lo[0] // _SUPERSAMPLE + h)
            cols = slice(lo[1] // _SUPERSAMPLE, lo[1] // _SUPERSAMPLE + w)
            patch = images[i, :, rows, cols]
            colour = np.asarray(shape.rgb, dtype=np.float32)[:, None, None]
            images[i, :, rows, cols] = patch * (1 - alpha) + colour * alpha
    images += rng.normal(0.0, 0.03, size=images.shape).astype(np.float32)
    return np.clip(images, 0.0, 1.0, out=images)


# ----------------------------------------------------------------------------- corpus


class CaptionSet(NamedTuple):
    """One split: ``images`` float32 (N, 3, S, S), ``captions`` the N generated captions,
    ``references`` both correct captions of each image, ``scenes`` the records they came from."""
    images: np.ndarray
    captions: List[str]
    references: List[Tuple[str, str]]
    scenes: List[Scene]


class ShapesCorpus(NamedTuple):
    train: CaptionSet
    seen: CaptionSet      # new images of the training distribution
    unseen: CaptionSet    # every image has a held-out colour-kind pair
    vocab: Vocabulary
    held_out: Tuple[Tuple[str, str], ...]
    image_size: int


def _caption_set(scenes, image_size, seed):
    return CaptionSet(render(scenes, image_size, seed), [s.caption for s in scenes],
                      [s.references for s in scenes], scenes)


def make_corpus(n_train: int = 4000, n_seen: int = 300, n_unseen: int = 300, *,
                image_size: int = 32, seed: int = 0,
                held_out: Sequence[Tuple[str, str]] = DEFAULT_HELD_OUT) -> ShapesCorpus:
    """The three splits (module docstring), each from its own stream of ``seed``."""
    held = check_held_out(held_out)
    streams = np.random.SeedSequence(seed).spawn(6)  # scenes and pixels of each split
    seeds = [int(s.generate_state(1)[0]) for s in streams]
    train = generate_scenes(n_train, seeds[0], image_size=image_size, held_out=held)
    seen = generate_scenes(n_seen, seeds[1], image_size=image_size, held_out=held)
    unseen = generate_scenes(n_unseen, seeds[2], image_size=image_size, held_out=held,
                             unseen=True)
    return ShapesCorpus(_caption_set(train, image_size, seeds[3]),
                        _caption_set(seen, image_size, seeds[4]),
                        _caption_set(unseen, image_size, seeds[5]),
                        Vocabulary(), held, image_size)
