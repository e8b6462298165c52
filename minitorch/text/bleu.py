"""Corpus BLEU (Papineni et al., 2002), computed the way sacrebleu computes it.

This file holds :func:`bleu`, :func:`bleu_statistics` and :func:`tokenize_13a`. It imports only
the standard library.

The score is ``100 · BP · exp(mean over n = 1..max_order of log p_n)`` where

* ``p_n`` is the corpus n-gram precision: n-gram matches summed over all sentences, each
  hypothesis n-gram counted at most as often as it occurs in the reference that has it most
  ("clipping"), divided by the number of hypothesis n-grams;
* ``BP = exp(1 - r / c)`` when the total hypothesis length ``c`` is below the total reference
  length ``r`` (else 1); per sentence, ``r`` adds the length of the reference closest in length
  to the hypothesis (the shorter one on a tie).

Without smoothing, a corpus with no match at some order scores 0. ``smooth=True`` uses
sacrebleu's default "exp" smoothing (NIST mteval-v13a): the k-th order with zero matches gets the
precision ``1 / (2^k · total_n)``.

Input layout
------------
``hypotheses`` is a list of sentences; ``references[i]`` holds the reference(s) of
``hypotheses[i]``. A sentence is either a string, split on whitespace (no other tokenization:
sacrebleu's ``tokenize="none"``), or an already tokenized list of strings. So:

* strings: ``references[i]`` is a string (one reference) or a list of strings (several);
* tokens: ``references[i]`` is a list of tokens (one reference) or a list of token lists (several).

sacrebleu's ``corpus_bleu(hypotheses, reference_streams)`` takes the transpose: one list per
reference *stream*, each as long as ``hypotheses``. ``bleu(h, r)`` with single string references
equals ``sacrebleu.corpus_bleu(h, [r], tokenize="none", smooth_method="none").score``, and with
``smooth=True`` the same call with ``smooth_method="exp"`` (sacrebleu's default).

Tokenisation
------------
``tokenize="none"`` (the default, the project's own figure) splits on whitespace only, so
``"tired."`` and ``"tired"`` are different words. ``tokenize="13a"`` first applies mteval-v13a's
tokenisation, as sacreBLEU does by default (punctuation split off words, except ``.``/``,``
between digits): ``bleu(h, r, tokenize="13a", smooth=True)`` equals
``sacrebleu.corpus_bleu(h, [r]).score``, the figure papers report. On real sentences the two
differ by a point or two; on the embedded corpus (punctuation already spaced) hardly at all.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from typing import List, Sequence, Tuple, Union

Sentence = Union[str, Sequence[str]]


# mteval-v13a's rules, in sacreBLEU's order (sacrebleu/tokenizers/tokenizer_re.py).
_13A_RULES = (
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),  # punctuation and symbols
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),  # period/comma unless after a digit
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),  # period/comma unless before a digit
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),  # dash after a digit
)
_TOKENIZERS = ("none", "13a")


def tokenize_13a(text: str) -> str:
    """``text`` tokenised as mteval-v13a (sacreBLEU's default), tokens joined by single spaces."""
    text = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in text:
        text = (text.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                .replace("&gt;", ">"))
    text = f" {text} "
    for pattern, replacement in _13A_RULES:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())


def _tokenized(sentence, tokenize: str):
    """A string sentence through the chosen tokeniser; token lists stay as they are."""
    return tokenize_13a(sentence) if tokenize == "13a" and isinstance(sentence, str) else sentence


def _tokens(sentence: Sentence) -> List[str]:
    return sentence.split() if isinstance(sentence, str) else list(sentence)


def _references_of(hypothesis: Sentence, reference_entry) -> List[List[str]]:
    """The references of one hypothesis as token lists, whichever layout they came in."""
    if isinstance(reference_entry, str):
        return [reference_entry.split()]
    entry = list(reference_entry)
    if isinstance(hypothesis, str):
        return [_tokens(reference) for reference in entry]  # several string references
    if entry and not isinstance(entry[0], str):
        return [_tokens(reference) for reference in entry]  # several token-list references
    return [entry]  # one token-list reference


def _ngram_counts(tokens: List[str], max_order: int) -> Counter:
    counts: Counter = Counter()
    for n in range(1, max_order + 1):
        for start in range(len(tokens) - n + 1):
            counts[tuple(tokens[start:start + n])] += 1
    return counts


def bleu_statistics(hypotheses: Sequence[Sentence], references: Sequence,
                    max_order: int = 4,
                    tokenize: str = "none") -> Tuple[List[int], List[int], int, int]:
    """Sufficient statistics ``(matches per order, totals per order, hyp length, ref length)``."""
    if tokenize not in _TOKENIZERS:
        raise ValueError(f"tokenize must be one of {_TOKENIZERS}, got {tokenize!r}")
    if tokenize != "none":
        hypotheses = [_tokenized(h, tokenize) for h in hypotheses]
        references = [_tokenized(r, tokenize) if isinstance(r, str)
                      else [_tokenized(x, tokenize) for x in r] for r in references]
    if len(hypotheses) != len(references):
        raise ValueError(f"references must have one entry per hypothesis: got {len(references)} "
                         f"for {len(hypotheses)} hypotheses")
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    matches = [0] * max_order
    totals = [0] * max_order
    hypothesis_length = reference_length = 0
    for hypothesis, reference_entry in zip(hypotheses, references):
        hypothesis_tokens = _tokens(hypothesis)
        reference_token_lists = _references_of(hypothesis, reference_entry)
        if not reference_token_lists:
            raise ValueError("every hypothesis needs at least one reference, got an empty list")
        length = len(hypothesis_tokens)
        hypothesis_length += length
        # Closest reference length; the shorter one wins a tie (as in sacrebleu and mteval).
        reference_length += min((abs(len(ref) - length), len(ref)) for ref in reference_token_lists)[1]

        max_reference_counts: Counter = Counter()
        for reference_tokens in reference_token_lists:
            max_reference_counts |= _ngram_counts(reference_tokens, max_order)  # |= keeps the max
        for ngram, count in _ngram_counts(hypothesis_tokens, max_order).items():
            order = len(ngram) - 1
            totals[order] += count
            matches[order] += min(count, max_reference_counts[ngram])
    return matches, totals, hypothesis_length, reference_length


def bleu(hypotheses: Sequence[Sentence], references: Sequence, max_order: int = 4,
         smooth: bool = False, tokenize: str = "none") -> float:
    """Corpus BLEU in [0, 100] of ``hypotheses`` against ``references`` (layout and
    ``tokenize``: module docstring)."""
    matches, totals, hypothesis_length, reference_length = bleu_statistics(
        hypotheses, references, max_order, tokenize)
    if not any(matches):
        return 0.0
    log_precision_sum = 0.0
    zero_match_orders = 0
    for order_matches, order_total in zip(matches, totals):
        if order_total == 0:
            return 0.0  # hypotheses too short to have n-grams of this order: BLEU is 0
        if order_matches == 0:
            if not smooth:
                return 0.0
            zero_match_orders += 1
            precision = 1.0 / (2 ** zero_match_orders * order_total)
        else:
            precision = order_matches / order_total
        log_precision_sum += math.log(precision)
    if hypothesis_length < reference_length:
        brevity_penalty = math.exp(1.0 - reference_length / hypothesis_length)
    else:
        brevity_penalty = 1.0
    return 100.0 * brevity_penalty * math.exp(log_precision_sum / max_order)
