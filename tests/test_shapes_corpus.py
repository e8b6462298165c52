"""Tests of minitorch.vision.shapes: the captioned scenes of coloured shapes.

The captions must say what the renderer drew (checked on the pixels, through the generator's own
scene record), the held-out split must hold exactly the combinations training never shows, and
everything must be a function of the seed.
"""
import numpy as np
import pytest

from minitorch.vision import shapes
from minitorch.vision.shapes import (COLOURS, DEFAULT_HELD_OUT, INVERSE, KINDS, RELATIONS, SIZES,
                                     Vocabulary, generate_scenes, make_corpus, render)


@pytest.fixture(scope="module")
def corpus():
    return make_corpus(n_train=1500, n_seen=100, n_unseen=200, seed=5)


def test_the_corpus_is_a_function_of_its_seed(corpus):
    again = make_corpus(n_train=1500, n_seen=100, n_unseen=200, seed=5)
    for split in ("train", "seen", "unseen"):
        a, b = getattr(corpus, split), getattr(again, split)
        assert np.array_equal(a.images, b.images) and a.captions == b.captions
    other = make_corpus(n_train=1500, n_seen=100, n_unseen=200, seed=6)
    assert other.train.captions != corpus.train.captions
    assert not np.array_equal(other.unseen.images, corpus.unseen.images)


def test_the_held_out_images_do_not_depend_on_the_training_size(corpus):
    smaller = make_corpus(n_train=10, n_seen=100, n_unseen=200, seed=5)
    assert np.array_equal(smaller.unseen.images, corpus.unseen.images)
    assert smaller.seen.captions == corpus.seen.captions
    assert smaller.train.captions == corpus.train.captions[:10]


def test_shapes_and_dtypes(corpus):
    assert corpus.train.images.shape == (1500, 3, 32, 32)
    assert corpus.train.images.dtype == np.float32
    assert 0.0 <= corpus.train.images.min() and corpus.train.images.max() <= 1.0
    big = make_corpus(n_train=3, n_seen=1, n_unseen=1, image_size=48)
    assert big.unseen.images.shape == (1, 3, 48, 48) and big.image_size == 48
    tokens = corpus.vocab.encode_batch(corpus.train.captions[:50])
    assert tokens.dtype == np.int64 and tokens.shape == (50, 12)  # 10 words at most + bos, eos


def test_unseen_combinations_never_occur_in_training(corpus):
    held = set(DEFAULT_HELD_OUT)
    for split in (corpus.train, corpus.seen):
        assert not any(held & set(scene.pairs) for scene in split.scenes)
    assert all(held & set(scene.pairs) for scene in corpus.unseen.scenes)
    # Their parts do occur: every colour and every kind, and every other pair.
    train_pairs = {pair for scene in corpus.train.scenes for pair in scene.pairs}
    assert train_pairs == {(c, k) for c in COLOURS for k in KINDS} - held
    # ... and the captions say so: no held-out "colour kind" bigram in a training caption.
    bigrams = {f"{c} {k}" for c, k in held}
    assert not any(b in caption for caption in corpus.train.captions for b in bigrams)
    assert all(any(b in caption for b in bigrams) for caption in corpus.unseen.captions)


def test_every_word_of_the_vocabulary_is_used_and_relations_are_balanced(corpus):
    words = {w for caption in corpus.train.captions for w in caption.split()}
    assert words == set(corpus.vocab.words[3:])
    counts = np.array([sum(s.relation == r for s in corpus.train.scenes) for r in RELATIONS])
    assert counts.min() > 0.8 * counts.mean()


def _caption_fields(caption):
    """(size, colour, kind), relation, (size, colour, kind) read back from a caption."""
    words = caption.split()
    assert words[0] == "a" and words[-4] == "a"
    relation = " ".join(words[4:-4])
    return tuple(words[1:4]), relation, tuple(words[-3:])


def test_captions_say_what_the_scene_record_holds_and_both_references_agree(corpus):
    for scene, caption, refs in zip(corpus.train.scenes, corpus.train.captions,
                                    corpus.train.references):
        first, relation, second = _caption_fields(caption)
        assert first == (scene.first.size, scene.first.colour, scene.first.kind)
        assert second == (scene.second.size, scene.second.colour, scene.second.kind)
        assert relation == scene.relation and caption == refs[0]
        assert _caption_fields(refs[1]) == (second, INVERSE[relation], first)


def _holds(relation, a, b):
    """``a relation b`` for shapes a, b: apart along the axis, roughly aligned across it."""
    axis = 0 if relation in ("above", "below") else 1
    lead, trail = (a, b) if relation in ("above", "left of") else (b, a)
    gap = trail.center[axis] - trail.radius - (lead.center[axis] + lead.radius)
    along = trail.center[axis] - lead.center[axis]
    across = abs(a.center[1 - axis] - b.center[1 - axis])
    return gap >= 2.0 - 1e-9 and across <= 0.25 * along + 1e-9


def test_the_scene_record_places_the_shapes_as_the_relation_says(corpus):
    for split in (corpus.train, corpus.unseen):
        for scene in split.scenes:
            a, b = scene.first, scene.second
            assert _holds(scene.relation, a, b)
            others = [r for r in RELATIONS if r != scene.relation]
            assert not any(_holds(r, a, b) for r in others)  # exactly one relation is true
            for shape in (a, b):
                assert shape.radius == pytest.approx(SIZES[shape.size] * 32)
                y, x = shape.center
                assert shape.radius + 1 - 1e-9 <= min(y, x)
                assert max(y, x) <= 32 - 1 - shape.radius + 1e-9


def _nearest_colour(rgb):
    names = list(COLOURS)
    distances = [np.abs(np.subtract(rgb, COLOURS[n])).sum() for n in names]
    return names[int(np.argmin(distances))]


def test_the_pixels_show_each_shape_in_its_captioned_colour(corpus):
    for image, scene in zip(corpus.train.images[:300], corpus.train.scenes[:300]):
        for shape in (scene.first, scene.second):
            y, x = (int(c) for c in shape.center)
            pixel = image[:, y, x]
            assert _nearest_colour(pixel) == shape.colour
            assert np.abs(pixel - np.array(shape.rgb)).max() < 0.2


# Points (row, column offsets in half-widths) inside and outside each kind, 1.5 px from its edge
# at image size 64: only that kind's outline covers the first list and none of the second.
PROBES = {
    "circle": ([(0, 0), (0.8, 0), (0, -0.8)], [(0.8, 0.8), (-0.8, -0.8)]),
    "square": ([(0.7, 0.7), (-0.7, 0.7), (0.7, -0.7)], [(0, 1.0), (1.0, 0)]),
    "diamond": ([(0.7, 0), (0, 0.7), (-0.7, 0)], [(0.6, 0.6), (-0.6, -0.6)]),
    "triangle": ([(0.8, 0.7), (0.8, -0.7), (-0.5, 0)], [(-0.5, 0.5), (-0.5, -0.5)]),
    "cross": ([(0, 0.9), (0.9, 0), (-0.9, 0)], [(0.7, 0.7), (-0.7, 0.7)]),
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_is_drawn_with_its_own_outline(kind):
    scenes = [s for s in generate_scenes(400, seed=1, image_size=64)
              if s.first.kind == kind and s.first.size == "large"][:5]
    assert scenes
    images = render(scenes, image_size=64, seed=2)
    inside, outside = PROBES[kind]
    for image, scene in zip(images, scenes):
        shape = scene.first
        for points, is_inside in ((inside, True), (outside, False)):
            for dy, dx in points:
                y = int(shape.center[0] + dy * shape.radius)
                x = int(shape.center[1] + dx * shape.radius)
                pixel = image[:, y, x]
                if is_inside:
                    assert np.abs(pixel - np.array(shape.rgb)).max() < 0.15, (kind, dy, dx)
                else:
                    assert pixel.max() < 0.35, (kind, dy, dx)  # background: dark grey


def test_large_shapes_cover_more_pixels_than_small_ones(corpus):
    areas = {(kind, size): [] for kind in KINDS for size in SIZES}
    for image, scene in zip(corpus.train.images[:200], corpus.train.scenes[:200]):
        shape = scene.first
        close = np.abs(image - np.array(shape.rgb)[:, None, None]).max(axis=0) < 0.2
        yy, xx = np.mgrid[:32, :32] + 0.5
        near = np.maximum(np.abs(yy - shape.center[0]), np.abs(xx - shape.center[1])) \
            <= shape.radius + 1
        areas[shape.kind, shape.size].append((close & near).sum())
    for kind in KINDS:  # (21 / 13)² ≈ 2.6 times the area, less the anti-aliased rims
        assert min(areas[kind, "large"]) > 2 * max(areas[kind, "small"]), kind


def test_vocabulary_round_trip_and_padding(corpus):
    vocab = corpus.vocab
    caption = corpus.train.captions[0]
    ids = vocab.encode(caption)
    assert ids[0] == vocab.bos_id and ids[-1] == vocab.eos_id
    assert vocab.decode(ids) == caption
    assert vocab.decode(ids + [vocab.pad_id, 7]) == caption  # stops at <eos>
    short, long = "a small red square above a large blue cross", \
        "a small red square left of a large blue cross"
    tokens = vocab.encode_batch([short, long])
    assert tokens[0, -1] == vocab.pad_id and tokens[1, -1] == vocab.eos_id
    assert [vocab.decode(row) for row in tokens] == [short, long]
    assert len(vocab) == 3 + 1 + len(SIZES) + len(COLOURS) + len(KINDS) + 5


@pytest.mark.parametrize("call, message", [
    (lambda: Vocabulary().encode("a small pink circle"), "pink"),
    (lambda: Vocabulary().decode([1, 99]), "99"),
    (lambda: Vocabulary(["a", "a"]), "distinct"),
    (lambda: make_corpus(5, 5, 5, image_size=16), "image_size"),
    (lambda: render([], image_size=20), "image_size"),
    (lambda: make_corpus(5, 5, 5, held_out=[("pink", "circle")]), "pink"),
    (lambda: make_corpus(5, 5, 5, held_out=[("red", k) for k in KINDS]), "colour"),
    (lambda: make_corpus(5, 5, 5, held_out=[(c, "cross") for c in COLOURS]), "kind"),
    (lambda: generate_scenes(3, unseen=True, held_out=[]), "held_out"),
    (lambda: generate_scenes(-1), "n must be"),
])
def test_bad_arguments_raise_value_errors_naming_them(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_other_held_out_pairs_and_no_held_out_pairs():
    held = [("cyan", "circle")]
    corpus = make_corpus(n_train=300, n_seen=10, n_unseen=30, seed=0, held_out=held)
    assert corpus.held_out == (("cyan", "circle"),)
    assert all(("cyan", "circle") in s.pairs for s in corpus.unseen.scenes)
    assert not any(("cyan", "circle") in s.pairs for s in corpus.train.scenes)
    plain = generate_scenes(300, seed=0, held_out=[])
    assert {p for s in plain for p in s.pairs} == {(c, k) for c in COLOURS for k in KINDS}


def test_the_module_documents_what_it_may_import():
    assert "May import" in shapes.__doc__
