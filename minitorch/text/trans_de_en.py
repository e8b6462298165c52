"""Loader of German→English sentence pairs from Debian's ``trans-de-en`` dictionary.

This file holds :func:`load_trans_de_en`, the line-cleaning helpers it is built from,
:func:`split_pairs` (the held-out split every user of the corpus shares) and ``TRAINING_DEFAULTS``
(the training settings that learn this corpus, see below). It imports only the standard library
and ``minitorch.files`` (to refuse a FIFO or a device as the file). The data is the Ding
dictionary of TU Chemnitz (GPL v2+), installed by ``apt-get install trans-de-en`` as
``/usr/share/trans/de-en``.

The file format
---------------
UTF-8, one entry per line, ``#`` lines are comments::

    German :: English
    Aalsuppe {f} [cook.] | Aalsuppen {pl} :: eel soup | eel soups
    ... | Die Regierung hat sich ... entzogen. :: ... | The government has largely abdicated ...

* `` | `` separates *alternatives*; the i-th German alternative translates the i-th English one.
* ``; `` separates synonyms inside an alternative.
* Annotations: ``{m} {f} {n} {pl} {vt} {adj}`` (grammar), ``[coll.] [Br.] [cook.]`` (usage,
  region, field), ``<...>`` (spelling variants, search keys), ``(...)`` (explanations).
* ``a/b`` offers alternative words; ``sth. sb. etw. jdm.`` are placeholders of a phrase pattern.

What counts as a sentence pair
------------------------------
From each aligned pair of alternatives take the *first* synonym on each side, then clean it
(:func:`clean_entry`: drop every ``{...}``, ``[...]``, ``<...>``, ``(...)``, collapse spaces, glue
punctuation back to the previous word). Keep the pair when both cleaned sides

* start with an upper-case letter or a digit and end in ``.``, ``!`` or ``?`` (possibly followed
  by a closing quote),
* have at least ``min_words`` (default 3) and, if given, at most ``max_words`` words,
* contain no ``/`` (unresolved alternatives), no placeholder (``sth. sb. etw. jdm. jdn. jds.
  jd.``) and no leftover bracket.

Pairs are returned German first, in file order, without duplicates. The installed file
(2023-01-30) yields about 17,000 pairs.

Training on it
--------------
The pairs are dictionary examples: open-domain, idiomatic, each built around a rare word, so a
small model learns only the frequent patterns and held-out BLEU stays low (3.2 after 20 epochs
of ``TRAINING_DEFAULTS``; sacreBLEU 3.9).
What decides whether it learns at all is the learning rate: the warmup schedule of "Attention is
all you need" at ``factor=1`` peaks at ``d_model**-0.5 * warmup**-0.5`` (5e-3 for d_model 128 and
300 warmup steps), at which this post-norm model ignores its source and emits the same few
memorised sentences for every input. ``TRAINING_DEFAULTS`` holds settings that learn it.
"""
from __future__ import annotations

import io
import os
import re
import random
from typing import List, Optional, Tuple

from minitorch.files import open_regular_file

DEFAULT_PATH = "/usr/share/trans/de-en"

_ANNOTATION = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>")
_PARENTHESIS = re.compile(r"\([^()]*\)")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,!?;:])")
_SENTENCE_END = re.compile(r"[.!?][\"'”“’»«]?$")
_PLACEHOLDER = re.compile(r"\b(sth|sb|etw|jdm|jdn|jds|jd)\.", re.IGNORECASE)
_LEFTOVER = re.compile(r"[{}\[\]<>()/]")
# Cheap test on a raw line: some alternative or synonym may end like a sentence. Most lines are
# single words and fail it, which makes loading the whole file several times faster.
_MAYBE_SENTENCE = re.compile(r"[.!?][\"'”“’»«]?(?:\s*[\[{(<][^|]*?)?(?: \| | :: |;|\s*$)")


def clean_entry(text: str) -> str:
    """Text without dictionary annotations, single-spaced, punctuation glued to its word."""
    text = _ANNOTATION.sub(" ", text)
    # Parentheses can nest one level ("(a (b) c)"): strip inner ones first.
    previous = None
    while previous != text:
        previous, text = text, _PARENTHESIS.sub(" ", text)
    text = " ".join(text.split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def is_sentence(text: str, min_words: int = 3, max_words: Optional[int] = None) -> bool:
    """Whether a cleaned entry is a full sentence by the rules in the module docstring."""
    if not text or not (text[0].isupper() or text[0].isdigit()):
        return False
    if not _SENTENCE_END.search(text):
        return False
    if _LEFTOVER.search(text) or _PLACEHOLDER.search(text):
        return False
    n_words = len(text.split())
    return n_words >= min_words and (max_words is None or n_words <= max_words)


def sentence_pairs_from_line(line: str, min_words: int = 3,
                             max_words: Optional[int] = None) -> List[Tuple[str, str]]:
    """The (German, English) sentence pairs of one dictionary line (often none)."""
    line = line.strip()
    if not line or line.startswith("#") or " :: " not in line or not _MAYBE_SENTENCE.search(line):
        return []
    german_side, english_side = line.split(" :: ", 1)
    german_alternatives = german_side.split(" | ")
    english_alternatives = english_side.split(" | ")
    if len(german_alternatives) != len(english_alternatives):
        return []  # misaligned entry: no way to tell which alternative translates which
    pairs = []
    for german, english in zip(german_alternatives, english_alternatives):
        german = clean_entry(german.split("; ")[0])
        english = clean_entry(english.split("; ")[0])
        if is_sentence(german, min_words, max_words) and is_sentence(english, min_words, max_words):
            pairs.append((german, english))
    return pairs


def load_trans_de_en(path: str = DEFAULT_PATH, max_pairs: Optional[int] = None,
                     min_words: int = 3, max_words: Optional[int] = None) -> List[Tuple[str, str]]:
    """German→English sentence pairs from the ``trans-de-en`` dictionary file at ``path``.

    Stops after ``max_pairs`` pairs when given. A missing file raises ``FileNotFoundError``
    telling how to install it.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found: install the dictionary with "
                                f"`apt-get install trans-de-en` (Debian/Ubuntu)")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError(f"max_pairs must be >= 0 or None, got {max_pairs}")
    pairs: List[Tuple[str, str]] = []
    seen = set()
    with io.TextIOWrapper(open_regular_file(path, "load_trans_de_en"), encoding="utf-8") as handle:
        for line in handle:
            if max_pairs is not None and len(pairs) >= max_pairs:
                break
            for pair in sentence_pairs_from_line(line, min_words, max_words):
                if pair not in seen:
                    seen.add(pair)
                    pairs.append(pair)
                    if max_pairs is not None and len(pairs) >= max_pairs:
                        break
    return pairs


def split_pairs(pairs: List[Tuple[str, str]], n_valid: int, n_train: Optional[int] = None,
                seed: int = 0) -> Tuple[List[Tuple[str, str]], List[Tuple[str, str]]]:
    """``(train, valid)``: one pair per German sentence, shuffled by ``seed``, ``n_valid`` held out.

    Keeping one pair per source sentence means no held-out source also occurs in training.
    ``n_train`` (default: all the rest) caps the training pairs.
    """
    if n_valid < 0 or (n_train is not None and n_train < 0):
        raise ValueError(f"n_valid and n_train must be >= 0, got {n_valid} and {n_train}")
    by_source: dict = {}
    for source, target in pairs:
        by_source.setdefault(source, target)
    unique = sorted(by_source.items())
    random.Random(seed).shuffle(unique)
    end = None if n_train is None else n_valid + n_train
    return unique[n_valid:end], unique[:n_valid]


# Settings for Seq2SeqTransformer on this corpus (flag names of examples/translate.py). Why
# these: the module docstring and README's "German → English" section; the measured runs are
# in docs/benchmarks.md (benchmarks/bench_real_corpus.py).
TRAINING_DEFAULTS = dict(
    n_valid=500,          # held-out pairs
    max_words=25,         # longest sentence kept, either side, train and held-out alike (99.9%)
    max_len=96,           # positions: 25-word sentences take up to 73 BPE tokens here
    vocab_size=1000,      # BPE per language
    d_model=128, heads=4, layers=2, ff=512, dropout=0.1,
    batch_size=64,
    warmup=400,
    lr_factor=0.5,        # peak lr 2.2e-3 at d_model 128, warmup 400 (factor 1: 4.4e-3)
    label_smoothing=0.1,
    epochs=20,
)
