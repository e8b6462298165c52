"""Tests of minitorch.text.bleu: hand-computed cases, and agreement with sacrebleu when installed."""
import math
import random

import pytest

from minitorch.text.bleu import bleu, bleu_statistics, tokenize_13a


def test_perfect_match_is_100():
    sentences = ["the cat sat on the mat", "estamos comiendo pan ahora mismo"]
    assert bleu(sentences, sentences) == pytest.approx(100.0)


def test_no_overlap_is_0():
    assert bleu(["a b c d e"], ["v w x y z"]) == 0.0
    assert bleu(["a b c d e"], ["v w x y z"], smooth=True) == 0.0


def test_brevity_penalty_value():
    # The hypothesis is the first 4 of 8 reference words: every precision is 1, BP = exp(1 - 8/4).
    score = bleu(["a b c d"], ["a b c d e f g h"])
    assert score == pytest.approx(100.0 * math.exp(1 - 8 / 4))


def test_hand_computed_precisions():
    # hyp "a b c d x": 1-grams 4/5, 2-grams 3/4, 3-grams 2/3, 4-grams 1/2; same length: BP = 1.
    score = bleu(["a b c d x"], ["a b c d y"])
    assert score == pytest.approx(100.0 * (4 / 5 * 3 / 4 * 2 / 3 * 1 / 2) ** 0.25)


def test_clipping_counts_each_reference_word_once():
    matches, totals, _, _ = bleu_statistics(["the the the the"], ["the cat"], max_order=1)
    assert (matches, totals) == ([1], [4])


def test_closest_reference_length_shorter_wins_tie():
    _, _, hyp_len, ref_len = bleu_statistics(["a b c"], [["a b", "a b c d"]])
    assert (hyp_len, ref_len) == (3, 2)


def test_tokenized_input_equals_string_input():
    hyps = ["we are eating bread", "I have a car"]
    refs = ["we are eating the bread", "I have a red car"]
    expected = bleu(hyps, refs)
    assert bleu([h.split() for h in hyps], [r.split() for r in refs]) == expected
    assert bleu([h.split() for h in hyps], [[r.split()] for r in refs]) == expected
    assert bleu(hyps, [[r] for r in refs]) == expected


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="one entry per hypothesis"):
        bleu(["a b"], ["a b", "c d"])


def _random_corpus(rng, n_sentences, vocabulary):
    def sentence():
        return " ".join(rng.choice(vocabulary) for _ in range(rng.randint(0, 12)))
    hyps = [sentence() for _ in range(n_sentences)]
    refs = [[sentence() or "x" for _ in range(n_sentences)] for _ in range(3)]  # 3 streams
    return hyps, refs


HAND_MADE = [
    (["the cat is on the mat"], [["there is a cat on the mat"]]),
    (["estamos comiendo pan", "tengo un coche rojo", "¿tienes un coche?"],
     [["estamos comiendo pan", "tengo un coche rojo", "¿tienes un coche rojo?"]]),
    (["a b c d e f", "g h"], [["a b c d e f g", "g h i j"], ["a b c", "g h"]]),
    (["one two"], [["one two three four five"]]),
]


def test_matches_sacrebleu():
    sacrebleu = pytest.importorskip("sacrebleu", reason="sacrebleu not installed (pip install sacrebleu)")
    rng = random.Random(0)
    corpora = list(HAND_MADE)
    for _ in range(60):
        hyps, refs = _random_corpus(rng, rng.randint(1, 20), "a b c d e f g".split())
        corpora.append((hyps, refs[: rng.randint(1, 3)]))
    for hyps, streams in corpora:
        per_hypothesis = [list(refs) for refs in zip(*streams)]  # sacrebleu layout → ours
        for smooth, method in ((False, "none"), (True, "exp")):
            expected = sacrebleu.corpus_bleu(hyps, streams, tokenize="none", smooth_method=method,
                                             force=True).score
            assert bleu(hyps, per_hypothesis, smooth=smooth) == pytest.approx(expected, abs=1e-6)
            if len(streams) == 1:
                assert bleu(hyps, streams[0], smooth=smooth) == pytest.approx(expected, abs=1e-6)


REAL_SENTENCES = [
    "The appointment is part-time and remunerated with EUR 1,000.",
    "It can be found spelt \"Yeldon\" or \"Yelden\", with the latter version preferred.",
    "I’m not available until November.", "What's gotten into you?",
    "Can you pass these back, please?", "Prices rose 3-4% in 2019 (see p. 12) & fell.",
    "Tom & Jerry &amp; friends <skipped> met at 10.30 a.m.; it was fun!",
    "A line-\nbreak and a\nnewline.", "", "   spaced   out   ",
]


def test_tokenize_13a_matches_sacrebleu():
    tokenizers = pytest.importorskip("sacrebleu.tokenizers.tokenizer_13a",
                                     reason="sacrebleu not installed (pip install sacrebleu)")
    reference_tokenizer = tokenizers.Tokenizer13a()
    rng = random.Random(0)
    symbols = list("ab1 2.,-'\"&;:!?()[]{}<>/\\@#$%^*+=~`|’“”«»")
    randoms = ["".join(rng.choice(symbols) for _ in range(rng.randint(0, 30)))
               for _ in range(300)]
    for text in REAL_SENTENCES + randoms:
        assert tokenize_13a(text) == reference_tokenizer(text), text


def test_bleu_13a_with_smoothing_is_sacrebleus_default_score():
    sacrebleu = pytest.importorskip("sacrebleu",
                                    reason="sacrebleu not installed (pip install sacrebleu)")
    refs = REAL_SENTENCES[:7]
    hyps = ["The job is part-time, paid EUR 1,000.", "It is spelt \"Yeldon\".",
            "I am not available until November.", "What got into you?",
            "Could you pass these back please?", "Prices rose 3-4% in 2019.",
            "Tom & Jerry met at 10.30 a.m.!"]
    expected = sacrebleu.corpus_bleu(hyps, [refs]).score
    assert bleu(hyps, refs, tokenize="13a", smooth=True) == pytest.approx(expected, abs=1e-6)
    # Whitespace tokens see "November." and "November" as different words: a lower score here.
    assert bleu(hyps, refs, smooth=True) < expected


def test_bad_tokenize_raises_naming_the_choices():
    with pytest.raises(ValueError, match=r"tokenize must be one of \('none', '13a'\), got 'intl'"):
        bleu(["a b"], ["a b"], tokenize="intl")
