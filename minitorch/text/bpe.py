"""Byte-pair encoding (BPE) sub-word tokenizer, trained and applied in pure Python.

This file holds :class:`BPETokenizer`: the classic algorithm of Sennrich, Haddow and Birch (2016),
"Neural Machine Translation of Rare Words with Subword Units". It imports only the standard
library and ``minitorch.files`` (itself standard library only), so it can be used (and tested)
without the tensor core.

How text becomes symbols
------------------------
1. **Normalization.** ``normalize(text)`` collapses every run of whitespace to one space and strips
   both ends. Nothing else is changed (no lower-casing, no Unicode normalization).
2. **Pre-tokenization.** The normalized text is cut at its spaces into *chunks*; each chunk is cut
   by the regex ``PIECE_PATTERN = r"\\w+|[^\\w\\s]"`` into *pieces*: a run of word characters
   (letters, digits, underscore, any script) or one punctuation character. ``"¿comes pan?"`` gives
   the chunks ``"¿comes"``, ``"pan?"`` and the pieces ``"¿" "comes" | "pan" "?"``.
3. **End-of-word marker.** The last piece of every chunk carries the marker ``</w>`` on its last
   character: ``"¿" "c o m e s</w>" | "p a n" "?</w>"``. A marker therefore stands exactly where a
   space stood, which is why decoding is exact: concatenate the tokens, turn each ``</w>`` into a
   space, drop the final space. Merges never cross a piece boundary, so punctuation stays its own
   token and the vocabulary is not spent on ``"pan?"`` next to ``"pan"``.

Round trip: ``decode(encode(s)) == normalize(s)`` for every ``s`` whose characters were all seen
in training. A character never seen in training becomes ``<unk>`` (and is dropped by ``decode``
unless ``skip_special_tokens=False``).

Training (:meth:`BPETokenizer.train`)
-------------------------------------
Count the pieces, start from their characters (each seen character in both its plain and its
``</w>`` form, so any text over the training alphabet can be encoded), then repeatedly merge the
most frequent adjacent pair of symbols. Ties are broken deterministically: highest count first,
then the lexicographically smallest pair ``(left, right)``. Pair counts are updated incrementally
(only words containing the merged pair are touched) and the best pair is kept in a heap with lazy
deletion, so training on a megabyte of text takes about a second.

Vocabulary layout
-----------------
``<pad>=0 <unk>=1 <bos>=2 <eos>=3``, then the base symbols in sorted order, then one token per
merge in the order the merges were learned.

Files
-----
``save(path)`` writes JSON ``{"format": "minitorch-bpe", "version": 1, "end_of_word": "</w>",
"special_tokens": [...], "vocab": [...], "merges": [[left, right], ...]}`` atomically, as
``minitorch.save`` does (``minitorch.files.atomic_write``: temporary file in the same folder,
flush, fsync, ``os.replace``; umask honoured, symlinks written through).
``BPETokenizer.load(path)`` reads only a regular file of at most ``MAX_FILE_BYTES``, checks every
field and raises ``ValueError`` on a malformed file (invalid UTF-8 or JSON, a key repeated in
one object, nesting deeper than the JSON parser goes).
"""
from __future__ import annotations

import heapq
import json
import operator
import re
from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

from minitorch.files import atomic_write, json_loads_strict, read_regular_file

END_OF_WORD = "</w>"
PIECE_PATTERN = re.compile(r"\w+|[^\w\s]")
SPECIAL_TOKENS = ("<pad>", "<unk>", "<bos>", "<eos>")
FILE_FORMAT = "minitorch-bpe"
FILE_VERSION = 1
# A tokenizer file larger than this is refused unread (a 1M-token vocabulary takes ~30 MB).
MAX_FILE_BYTES = 1 << 28

Pair = Tuple[str, str]


def normalize(text: str) -> str:
    """Collapse whitespace runs to single spaces and strip the ends: what ``decode`` gives back."""
    return " ".join(text.split())


def split_into_pieces(text: str) -> List[str]:
    """Pre-tokenize ``text`` into pieces; the last piece of each space-separated chunk ends in ``</w>``.

    The returned strings are cache keys for encoding, not symbols: ``"comes</w>"`` means the
    piece ``comes`` at the end of a word.
    """
    pieces: List[str] = []
    for chunk in text.split():
        chunk_pieces = PIECE_PATTERN.findall(chunk)
        chunk_pieces[-1] += END_OF_WORD
        pieces.extend(chunk_pieces)
    return pieces


def piece_to_symbols(piece: str) -> List[str]:
    """Characters of a piece, with the end-of-word marker glued to the last one."""
    if piece.endswith(END_OF_WORD):
        characters = list(piece[: -len(END_OF_WORD)])
        characters[-1] += END_OF_WORD
        return characters
    return list(piece)


def merge_pair_in(symbols: List[str], pair: Pair) -> List[str]:
    """Replace every non-overlapping occurrence of ``pair`` (scanning left to right) by its merge."""
    left, right = pair
    merged: List[str] = []
    i = 0
    while i < len(symbols):
        if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
            merged.append(left + right)
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


class BPETokenizer:
    """A trained BPE vocabulary plus the merges that produce it.

    Build one with :meth:`train` (from text) or :meth:`load` (from a JSON file); the constructor
    takes the learned ``vocab`` (tokens in id order, specials first) and ``merges`` directly.
    """

    def __init__(self, vocab: Sequence[str], merges: Sequence[Pair]):
        self._id_to_token: List[str] = list(vocab)
        self._token_to_id: Dict[str, int] = {tok: i for i, tok in enumerate(self._id_to_token)}
        self.merges: List[Pair] = [tuple(pair) for pair in merges]  # type: ignore[misc]
        # A lower rank merges first when encoding, reproducing the training order.
        self._merge_rank: Dict[Pair, int] = {pair: rank for rank, pair in enumerate(self.merges)}
        self._piece_cache: Dict[str, List[int]] = {}
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = (
            self._token_to_id[tok] for tok in SPECIAL_TOKENS)
        self.special_ids = frozenset((self.pad_id, self.unk_id, self.bos_id, self.eos_id))

    # ------------------------------------------------------------------ training

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, min_frequency: int = 2) -> "BPETokenizer":
        """Learn merges from ``texts`` until the vocabulary holds ``vocab_size`` tokens.

        ``vocab_size`` counts everything: the 4 special tokens, the base symbols (every training
        character, plain and with ``</w>``) and one token per merge. Training stops earlier when
        no pair occurs at least ``min_frequency`` times. A ``vocab_size`` too small to hold the
        specials and the base symbols raises ``ValueError``.
        """
        if min_frequency < 1:
            raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
        piece_counts: Counter = Counter()
        for text in texts:
            piece_counts.update(split_into_pieces(text))

        alphabet = sorted({ch for piece in piece_counts for ch in piece.removesuffix(END_OF_WORD)})
        base_symbols = sorted(alphabet + [ch + END_OF_WORD for ch in alphabet])
        minimum_size = len(SPECIAL_TOKENS) + len(base_symbols)
        if vocab_size < minimum_size:
            raise ValueError(f"vocab_size must be >= {minimum_size} (4 specials + "
                             f"{len(base_symbols)} base symbols), got {vocab_size}")

        # Each distinct piece is one "word": its current symbols and how often it occurs.
        words: List[List[str]] = []
        word_freqs: List[int] = []
        for piece, count in sorted(piece_counts.items()):
            words.append(piece_to_symbols(piece))
            word_freqs.append(count)

        pair_counts: Counter = Counter()
        words_with_pair: Dict[Pair, set] = {}
        for index, symbols in enumerate(words):
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] += word_freqs[index]
                words_with_pair.setdefault(pair, set()).add(index)

        # Max-heap on count via negation; the pair itself breaks ties (smallest first).
        # Entries go stale when counts change; a popped entry is trusted only if it still matches.
        heap = [(-count, pair) for pair, count in pair_counts.items()]
        heapq.heapify(heap)

        merges: List[Pair] = []
        while minimum_size + len(merges) < vocab_size and heap:
            negative_count, pair = heapq.heappop(heap)
            count = -negative_count
            if pair_counts.get(pair, 0) != count:
                continue  # stale entry
            if count < min_frequency:
                break
            merges.append(pair)
            touched: set = set()
            for index in words_with_pair.pop(pair, ()):
                old_symbols = words[index]
                new_symbols = merge_pair_in(old_symbols, pair)
                freq = word_freqs[index]
                for old_pair in zip(old_symbols, old_symbols[1:]):
                    pair_counts[old_pair] -= freq
                    touched.add(old_pair)
                    if old_pair in words_with_pair:
                        words_with_pair[old_pair].discard(index)
                for new_pair in zip(new_symbols, new_symbols[1:]):
                    pair_counts[new_pair] += freq
                    touched.add(new_pair)
                    words_with_pair.setdefault(new_pair, set()).add(index)
                words[index] = new_symbols
            for changed in touched:
                remaining = pair_counts[changed]
                if remaining > 0:
                    heapq.heappush(heap, (-remaining, changed))
                else:
                    del pair_counts[changed]
                    words_with_pair.pop(changed, None)

        vocab = list(SPECIAL_TOKENS) + base_symbols + [left + right for left, right in merges]
        return cls(vocab, merges)

    # ------------------------------------------------------------------ vocabulary

    @property
    def vocab_size(self) -> int:
        """Number of tokens, special tokens included: valid ids are ``0 .. vocab_size - 1``."""
        return len(self._id_to_token)

    def token_to_id(self, token: str) -> int:
        """Id of ``token``; ``KeyError`` naming it when it is not in the vocabulary."""
        try:
            return self._token_to_id[token]
        except KeyError:
            raise KeyError(f"token {token!r} is not in the vocabulary") from None

    def id_to_token(self, token_id: int) -> str:
        """Token string of ``token_id``; ``IndexError`` naming the id when out of range."""
        if not 0 <= token_id < len(self._id_to_token):
            raise IndexError(f"token id {token_id} is out of range [0, {len(self._id_to_token)})")
        return self._id_to_token[token_id]

    # ------------------------------------------------------------------ encoding

    def _encode_piece(self, piece: str) -> List[int]:
        cached = self._piece_cache.get(piece)
        if cached is not None:
            return cached
        symbols = piece_to_symbols(piece)
        while len(symbols) > 1:
            # Apply the earliest-learned merge present, exactly as training would have.
            ranked = [(self._merge_rank.get(pair, -1), pair) for pair in zip(symbols, symbols[1:])]
            ranked = [item for item in ranked if item[0] >= 0]
            if not ranked:
                break
            symbols = merge_pair_in(symbols, min(ranked)[1])
        ids = [self._token_to_id.get(symbol, self.unk_id) for symbol in symbols]
        self._piece_cache[piece] = ids
        return ids

    def tokenize(self, text: str) -> List[str]:
        """The token strings ``encode`` would produce (without bos/eos), for inspection."""
        return [self._id_to_token[i] for i in self.encode(text)]

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> List[int]:
        """Token ids of ``text``; unseen characters become ``unk_id``."""
        ids = [self.bos_id] if add_bos else []
        for piece in split_into_pieces(text):
            ids.extend(self._encode_piece(piece))
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def encode_batch(self, texts: Iterable[str], add_bos: bool = False,
                     add_eos: bool = False) -> List[List[int]]:
        """``encode`` of each text (no padding: batching pads)."""
        return [self.encode(text, add_bos=add_bos, add_eos=add_eos) for text in texts]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """Text of ``ids``: tokens joined, each ``</w>`` turned into a space, the ends stripped.

        Ids are ints (numpy integers and one-element integer tensors too); anything else, bools
        included, raises ``TypeError`` naming it and its position.
        """
        parts: List[str] = []
        for position, token_id in enumerate(ids):
            token_id = _as_token_id(token_id, position)
            token = self.id_to_token(token_id)
            if token_id in self.special_ids:
                if not skip_special_tokens:
                    parts.append(token + " ")  # keep specials readable as separate words
            elif token.endswith(END_OF_WORD):
                # Per token, not a global replace: the text itself may contain "</w>".
                parts.append(token[: -len(END_OF_WORD)] + " ")
            else:
                parts.append(token)
        return normalize("".join(parts))

    def decode_batch(self, batch: Iterable[Iterable[int]], skip_special_tokens: bool = True) -> List[str]:
        """``decode`` of each id sequence."""
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in batch]

    # ------------------------------------------------------------------ files

    def save(self, path: str) -> None:
        """Write the tokenizer as JSON, atomically: a crash never leaves half a file at ``path``."""
        payload = {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "end_of_word": END_OF_WORD,
            "special_tokens": list(SPECIAL_TOKENS),
            "vocab": self._id_to_token,
            "merges": [list(pair) for pair in self.merges],
        }
        text = json.dumps(payload, ensure_ascii=False, indent=0)
        atomic_write(path, lambda stream: stream.write(text.encode("utf-8")),
                     "BPETokenizer.save")

    @classmethod
    def load(cls, path: str) -> "BPETokenizer":
        """Read a file written by :meth:`save`; ``ValueError`` saying what is wrong if malformed."""
        raw = read_regular_file(path, "BPETokenizer.load", MAX_FILE_BYTES)
        try:
            payload = json_loads_strict(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{path}: not valid UTF-8 ({exc})") from None
        except RecursionError:
            raise ValueError(f"{path}: not a tokenizer file: its JSON is nested too deeply "
                             "to parse") from None
        except ValueError as exc:  # json.JSONDecodeError, or a duplicate key
            raise ValueError(f"{path}: not valid JSON ({exc})") from None
        if not isinstance(payload, dict):
            raise ValueError(f"{path}: expected a JSON object, got {type(payload).__name__}")
        if payload.get("format") != FILE_FORMAT:
            raise ValueError(f"{path}: format must be {FILE_FORMAT!r}, got {payload.get('format')!r}")
        version = payload.get("version")
        if version != FILE_VERSION or isinstance(version, bool):  # True == 1
            raise ValueError(f"{path}: unsupported version {version!r} "
                             f"(expected {FILE_VERSION})")
        if payload.get("end_of_word") != END_OF_WORD:
            raise ValueError(f"{path}: end_of_word must be {END_OF_WORD!r}, "
                             f"got {payload.get('end_of_word')!r}")
        if payload.get("special_tokens") != list(SPECIAL_TOKENS):
            raise ValueError(f"{path}: special_tokens must be {list(SPECIAL_TOKENS)}, "
                             f"got {payload.get('special_tokens')!r}")
        vocab = payload.get("vocab")
        if not isinstance(vocab, list) or not all(isinstance(tok, str) and tok for tok in vocab):
            raise ValueError(f"{path}: vocab must be a list of non-empty strings")
        if vocab[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
            raise ValueError(f"{path}: vocab must start with {list(SPECIAL_TOKENS)}, "
                             f"got {vocab[: len(SPECIAL_TOKENS)]}")
        if len(set(vocab)) != len(vocab):
            raise ValueError(f"{path}: vocab has duplicate tokens")
        merges = payload.get("merges")
        if not isinstance(merges, list) or not all(
                isinstance(pair, list) and len(pair) == 2 and all(isinstance(s, str) for s in pair)
                for pair in merges):
            raise ValueError(f"{path}: merges must be a list of [left, right] string pairs")
        known = set(vocab)
        for left, right in merges:
            if left not in known or right not in known or left + right not in known:
                raise ValueError(f"{path}: merge {[left, right]} uses or makes a token "
                                 f"not in the vocab")
        return cls(vocab, [tuple(pair) for pair in merges])

    def __repr__(self) -> str:
        return f"BPETokenizer(vocab_size={self.vocab_size}, merges={len(self.merges)})"


def _as_token_id(token_id, position: int) -> int:
    """``token_id`` as an int; TypeError for floats, strings, bools (a bool id is a bug, even
    though True == 1)."""
    if not isinstance(token_id, bool):
        try:
            return operator.index(token_id)  # ints, numpy integers, integer tensors
        except TypeError:
            pass
    raise TypeError(f"decode: ids must be ints, got {token_id!r} of type "
                    f"{type(token_id).__name__} at position {position}")

