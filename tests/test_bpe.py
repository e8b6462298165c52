"""Tests of minitorch.text.bpe: merge order, round trips, unknowns, files, training speed."""
import json
import os
import random

import pytest

from minitorch.text.bpe import BPETokenizer, normalize, split_into_pieces
from minitorch.text.corpus import generate_pairs

# Sennrich et al.'s toy corpus: low ×5, lower ×2, newest ×6, widest ×3.
SENNRICH_TEXT = ["low " * 5 + "lower " * 2 + "newest " * 6 + "widest " * 3]

# Worked out by hand from the pair counts (ties → smallest pair):
#   (e,s)=9 ties (s,t</w>)=9, "e" < "s"        → es
#   (es,t</w>)=9                               → est</w>
#   (l,o)=7                                    → lo
#   (e,w)=(n,e)=(w,est</w>)=6, "e" smallest    → ew
#   (ew,est</w>)=(n,ew)=6, "ew" < "n"          → ewest</w>
#   (n,ewest</w>)=6                            → newest</w>
#   (lo,w</w>)=5                               → low</w>
#   (d,est</w>)=(i,d)=(w,i)=3                  → dest</w>, then idest</w>, then widest</w>
#   (e,r</w>)=(lo,w)=(w,e)=2                   → er</w>, then low, then lower</w>
SENNRICH_MERGES = [
    ("e", "s"), ("es", "t</w>"), ("l", "o"), ("e", "w"), ("ew", "est</w>"), ("n", "ewest</w>"),
    ("lo", "w</w>"), ("d", "est</w>"), ("i", "dest</w>"), ("w", "idest</w>"),
    ("e", "r</w>"), ("lo", "w"), ("low", "er</w>"),
]


@pytest.fixture(scope="module")
def corpus_tokenizer():
    pairs = generate_pairs(3000, seed=0)
    return BPETokenizer.train([text for pair in pairs for text in pair], vocab_size=600)


def test_merge_order_matches_hand_computation():
    tokenizer = BPETokenizer.train(SENNRICH_TEXT, vocab_size=1000)
    assert tokenizer.merges == SENNRICH_MERGES
    # Specials, then 7 letters × 2 forms, then one token per merge.
    assert tokenizer.vocab_size == 4 + 2 * len("delinorstw") + len(SENNRICH_MERGES)
    assert tokenizer.tokenize("lowest newer") == ["low", "est</w>", "n", "ew", "er</w>"]


def test_vocab_size_limits_the_number_of_merges():
    tokenizer = BPETokenizer.train(SENNRICH_TEXT, vocab_size=4 + 20 + 3)
    assert tokenizer.merges == SENNRICH_MERGES[:3]
    assert tokenizer.vocab_size == 27
    with pytest.raises(ValueError, match="vocab_size"):
        BPETokenizer.train(SENNRICH_TEXT, vocab_size=10)


def test_min_frequency_stops_training():
    tokenizer = BPETokenizer.train(SENNRICH_TEXT, vocab_size=1000, min_frequency=4)
    assert tokenizer.merges == SENNRICH_MERGES[:7]  # the next best pair occurs 3 times


def test_training_is_deterministic(corpus_tokenizer):
    pairs = generate_pairs(3000, seed=0)
    again = BPETokenizer.train([text for pair in pairs for text in pair], vocab_size=600)
    assert again.merges == corpus_tokenizer.merges
    assert [again.id_to_token(i) for i in range(again.vocab_size)] == \
        [corpus_tokenizer.id_to_token(i) for i in range(corpus_tokenizer.vocab_size)]


def test_special_tokens():
    tokenizer = BPETokenizer.train(["hola mundo"], vocab_size=100)
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert [tokenizer.id_to_token(i) for i in range(4)] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    ids = tokenizer.encode("hola", add_bos=True, add_eos=True)
    assert ids[0] == tokenizer.bos_id and ids[-1] == tokenizer.eos_id
    assert tokenizer.decode(ids) == "hola"
    assert tokenizer.decode(ids, skip_special_tokens=False) == "<bos> hola <eos>"
    assert tokenizer.token_to_id("<eos>") == 3


def test_pieces_put_the_end_marker_where_a_space_was():
    assert split_into_pieces("¿comes  pan?") == ["¿", "comes</w>", "pan", "?</w>"]
    assert split_into_pieces("it's 3.5") == ["it", "'", "s</w>", "3", ".", "5</w>"]


@pytest.mark.parametrize("text", [
    "¿comes pan?", "estamos comiendo pan", "do you have a red car?", "  extra   spaces\there ",
    "¡hola!", "¿¿qué??", "it's 3.5 km, isn't it?", "", "a",
])
def test_round_trip_is_exact_after_normalization(text):
    training = ["¿comes pan? estamos comiendo pan ¡hola! it's 3.5 km, isn't it? qué do you have"
                " a red car here extra spaces"]
    tokenizer = BPETokenizer.train(training, vocab_size=120)
    assert tokenizer.decode(tokenizer.encode(text)) == normalize(text)


def test_round_trip_on_the_generated_corpus(corpus_tokenizer):
    for english, spanish in generate_pairs(2000, seed=7):  # other sentences than the training ones
        for text in (english, spanish):
            assert corpus_tokenizer.decode(corpus_tokenizer.encode(text)) == text


def test_encode_batch_matches_encode(corpus_tokenizer):
    texts = ["I have a red car", "¿tienes un coche rojo?"]
    assert corpus_tokenizer.encode_batch(texts, add_eos=True) == \
        [corpus_tokenizer.encode(text, add_eos=True) for text in texts]
    assert corpus_tokenizer.decode_batch(corpus_tokenizer.encode_batch(texts)) == texts


def test_unknown_characters_become_unk():
    tokenizer = BPETokenizer.train(["abc abc"], vocab_size=50)
    ids = tokenizer.encode("abz abc")
    assert tokenizer.unk_id in ids
    assert ids.count(tokenizer.unk_id) == 1
    assert tokenizer.decode(ids, skip_special_tokens=False).startswith("ab<unk>")
    assert tokenizer.encode("€") == [tokenizer.unk_id]


def test_decode_out_of_range_names_the_id():
    tokenizer = BPETokenizer.train(["abc"], vocab_size=50)
    with pytest.raises(IndexError, match="12345"):
        tokenizer.decode([4, 12345])
    with pytest.raises(IndexError, match="-1"):
        tokenizer.id_to_token(-1)
    with pytest.raises(KeyError, match="zzz"):
        tokenizer.token_to_id("zzz")


def test_save_load_round_trip(tmp_path, corpus_tokenizer):
    path = tmp_path / "bpe.json"
    corpus_tokenizer.save(str(path))
    loaded = BPETokenizer.load(str(path))
    assert loaded.merges == corpus_tokenizer.merges
    assert loaded.vocab_size == corpus_tokenizer.vocab_size
    text = "¿mis padres quisieron mi zumo?"
    assert loaded.encode(text) == corpus_tokenizer.encode(text)
    assert os.listdir(tmp_path) == ["bpe.json"]  # the temporary file was renamed away


def _saved_payload(tmp_path):
    path = tmp_path / "good.json"
    BPETokenizer.train(SENNRICH_TEXT, vocab_size=1000).save(str(path))
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("corrupt, message", [
    (lambda p: "{not json", "not valid JSON"),
    (lambda p: json.dumps([1, 2]), "JSON object"),
    (lambda p: json.dumps({**p, "format": "other"}), "format"),
    (lambda p: json.dumps({**p, "version": 99}), "version"),
    (lambda p: json.dumps({**p, "vocab": p["vocab"][1:]}), "vocab must start"),
    (lambda p: json.dumps({**p, "vocab": p["vocab"] + ["l"]}), "duplicate"),
    (lambda p: json.dumps({**p, "merges": [["l", "o", "w"]]}), "merges"),
    (lambda p: json.dumps({**p, "merges": p["merges"] + [["x", "y"]]}), "not in the vocab"),
    (lambda p: json.dumps({k: v for k, v in p.items() if k != "vocab"}), "vocab"),
])
def test_malformed_file_raises_value_error(tmp_path, corrupt, message):
    path = tmp_path / "bad.json"
    path.write_text(corrupt(_saved_payload(tmp_path)), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        BPETokenizer.load(str(path))


def test_training_on_a_megabyte_round_trips():
    # Zipf-like text over 20,000 made-up words: many distinct words, like real text.
    rng = random.Random(0)
    syllables = ["ka", "to", "ri", "men", "sa", "lo", "de", "pu", "ne", "vi", "ra", "gon", "ñe"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(1, 4))) for _ in range(20000)]
    lines, size = [], 0
    while size < 1_000_000:
        line = " ".join(words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)]
                        if rng.random() < 0.5 else rng.choice(words)
                        for _ in range(12)) + rng.choice([".", "?", "!"])
        lines.append(line)
        size += len(line.encode("utf-8")) + 1
    tokenizer = BPETokenizer.train(lines, vocab_size=8000)
    assert 1000 < tokenizer.vocab_size <= 8000  # it stops early when no pair repeats
    for line in lines[:50]:
        assert tokenizer.decode(tokenizer.encode(line)) == line
