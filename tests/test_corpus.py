"""Tests of minitorch.text.corpus (generated English→Spanish pairs) and
minitorch.text.trans_de_en (sentence pairs from the trans-de-en dictionary)."""
import os

import pytest

from minitorch.text.corpus import build_pair, conjugate, generate_pairs, load_corpus, VERBS_BY_ENGLISH
from minitorch.text.trans_de_en import (DEFAULT_PATH, clean_entry, load_trans_de_en,
                                        sentence_pairs_from_line)

# ------------------------------------------------------------------ generated corpus


def test_the_two_required_examples():
    assert build_pair("we", "eat", "progressive", "statement", "", "bread") == \
        ("we are eating bread", "estamos comiendo pan")
    assert build_pair("I", "have", "present", "statement", "a", "car", "red") == \
        ("I have a red car", "tengo un coche rojo")


def test_negation_and_question():
    assert build_pair("I", "have", "present", "negation", "a", "car") == \
        ("I do not have a car", "no tengo un coche")
    assert build_pair("you", "have", "present", "question", "a", "car", "red") == \
        ("do you have a red car?", "¿tienes un coche rojo?")
    assert build_pair("the boy", "eat", "past", "question", "the", "apple", plural=True) == \
        ("did the boy eat the apples?", "¿el niño comió las manzanas?")
    assert build_pair("she", "read", "future", "negation", "a", "letter", adverb=True) == \
        ("she will not read a letter tomorrow", "no leerá una carta mañana")


@pytest.mark.parametrize("determiner, adjective, noun, plural, english, spanish", [
    ("the", "red", "car", True, "the red cars", "los coches rojos"),
    ("a", "white", "house", False, "a white house", "una casa blanca"),
    ("our", "new", "house", True, "our new houses", "nuestras casas nuevas"),
    ("", "blue", "bicycle", True, "blue bicycles", "bicicletas azules"),
    ("those", "big", "window", True, "those big windows", "esas ventanas grandes"),
    ("a", "old", "book", False, "an old book", "un libro viejo"),
    ("the", "cold", "water", False, "the cold water", "el agua fría"),
    ("this", None, "water", False, "this water", "esta agua"),
])
def test_determiner_and_adjective_agreement(determiner, adjective, noun, plural, english, spanish):
    sentence = build_pair("I", "want", "present", "statement", determiner, noun, adjective, plural)
    assert sentence == (f"I want {english}", f"quiero {spanish}")


def test_conjugation_tables():
    comer, tener, leer = (VERBS_BY_ENGLISH[v] for v in ("eat", "have", "read"))
    assert [conjugate(comer, "past", p) for p in range(5)] == ["comí", "comiste", "comió", "comimos", "comieron"]
    assert [conjugate(tener, "future", p) for p in range(5)] == \
        ["tendré", "tendrás", "tendrá", "tendremos", "tendrán"]
    assert conjugate(leer, "progressive", 1) == "estás leyendo"
    assert conjugate(VERBS_BY_ENGLISH["live"], "present", 3) == "vivimos"
    assert conjugate(VERBS_BY_ENGLISH["close"], "present", 0) == "cierro"


def test_generation_is_deterministic_by_seed():
    assert generate_pairs(500, seed=3) == generate_pairs(500, seed=3)
    assert generate_pairs(500, seed=3) != generate_pairs(500, seed=4)


def test_pairs_are_distinct_short_and_plentiful():
    pairs = generate_pairs(50_000, seed=0)
    assert len({english for english, _ in pairs}) == 50_000
    for english, spanish in pairs[:5000]:
        assert 3 <= len(english.split()) <= 12 and 2 <= len(spanish.split()) <= 12
        assert english == english.strip() and "  " not in spanish
        assert english.endswith("?") == spanish.endswith("?") == spanish.startswith("¿")


def test_held_out_sources_never_appear_in_training():
    splits = load_corpus(5000, 500, 500, seed=1)
    assert (len(splits.train), len(splits.valid), len(splits.test)) == (5000, 500, 500)
    train_sources = {english for english, _ in splits.train}
    assert not train_sources & {english for english, _ in splits.valid}
    assert not train_sources & {english for english, _ in splits.test}
    assert not {e for e, _ in splits.valid} & {e for e, _ in splits.test}
    assert load_corpus(5000, 500, 500, seed=1) == splits


# ------------------------------------------------------------------ trans-de-en


def test_cleaning_removes_annotations():
    assert clean_entry("Aalsuppe {f} [cook.] <Aalsupe>") == "Aalsuppe"
    assert clean_entry("I’m sorry – (that was) my bad [coll.]!") == "I’m sorry – my bad!"
    assert clean_entry("Er  kam (spät (sehr)) an .") == "Er kam an."


def test_sentence_pairs_are_aligned_by_alternative():
    line = ("etw. aufgeben {vt} | aufgebend | Die Regierung hat aufgegeben. [pol.] :: "
            "to abdicate sth. | abdicating | The government has abdicated. ")
    assert sentence_pairs_from_line(line) == [("Die Regierung hat aufgegeben.",
                                               "The government has abdicated.")]


@pytest.mark.parametrize("line", [
    "# Version :: devel 2023-01-30",
    "Aalsuppe {f} [cook.] | Aalsuppen {pl} :: eel soup | eel soups",
    "Er gibt auf. | Sie gibt auf. :: He gives up.",                 # misaligned alternatives
    "Das ist ganz/völlig klar. :: That is quite clear.",             # unresolved a/b
    "jdm. etw. geben. :: to give sb. sth.",                          # phrase pattern
    "Geh! :: Go!",                                                   # too short
])
def test_lines_without_sentence_pairs(line):
    assert sentence_pairs_from_line(line) == []


def test_first_synonym_is_kept():
    line = "Da bin ich ganz deiner Meinung.; Da bin ich bei dir. :: I quite agree with you.; I agree."
    assert sentence_pairs_from_line(line) == [("Da bin ich ganz deiner Meinung.", "I quite agree with you.")]


def test_missing_file_says_how_to_install(tmp_path):
    with pytest.raises(FileNotFoundError, match="apt-get install trans-de-en"):
        load_trans_de_en(str(tmp_path / "absent"))


def test_loader_on_a_small_file(tmp_path):
    path = tmp_path / "de-en"
    path.write_text("# comment\nIch bin müde. [ugs.] :: I am tired.\nIch bin müde. :: I am tired.\n"
                    "Hund {m} | Hunde {pl} :: dog | dogs\nWir essen Brot. :: We eat bread.\n",
                    encoding="utf-8")
    assert load_trans_de_en(str(path)) == [("Ich bin müde.", "I am tired."), ("Wir essen Brot.", "We eat bread.")]
    assert load_trans_de_en(str(path), max_pairs=1) == [("Ich bin müde.", "I am tired.")]


def test_loader_on_the_installed_dictionary():
    if not os.path.exists(DEFAULT_PATH):
        pytest.skip(f"trans-de-en not installed: {DEFAULT_PATH} absent")
    pairs = load_trans_de_en(max_pairs=300)
    assert len(pairs) == 300 and len(set(pairs)) == 300
    for german, english in pairs:
        for text in (german, english):
            assert text[-1] in ".!?" or text[-2] in ".!?"
            assert len(text.split()) >= 3
            assert not any(mark in text for mark in "{}[]<>/")
