"""examples/bert_classify.py: tiny smoke runs of both phases (masked-token pre-training, then
fine-tuning with and without it) whose losses fall, the disjoint data cuts and their labels,
and bad arguments (one line, exit status 2, nothing written)."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "bert_classify.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("bert_classify_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bert_classify = _load_example()

TINY = ["--n-unlabelled", "500", "--n-labelled", "40", "--n-held-out", "100",
        "--pretrain-steps", "60", "--finetune-steps", "40", "--eval-every", "20",
        "--d-model", "16", "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "16",
        "--finetune-batch-size", "8", "--pretrain-lr", "1e-2", "--finetune-lr", "1e-2",
        "--quiet"]


@pytest.fixture(autouse=True)
def _restore_thread_count():
    # --threads changes a process-wide setting: give the other tests theirs back.
    import minitorch
    threads = minitorch.get_num_threads()
    yield
    minitorch.set_num_threads(threads)


def falls(losses, k=10):
    return np.mean(losses[-k:]) < np.mean(losses[:k])


def test_both_phases_run_and_their_losses_fall(tmp_path):
    result = bert_classify.main(TINY + ["--out", str(tmp_path)])
    assert len(result["pretrain_losses"]) == 60 and falls(result["pretrain_losses"])
    assert set(result["finetune_losses"]) == {"pre-trained", "from scratch"}
    for name, losses in result["finetune_losses"].items():
        assert len(losses) == 40 and falls(losses), name
    # the same evaluation points for both: the same budget
    steps = [[step for step, _ in curve] for curve in result["curves"].values()]
    assert steps[0] == steps[1] == [0, 20, 40]
    assert all(0.0 <= a <= 1.0 for a in result["accuracy"].values())
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["accuracy"] == result["accuracy"]
    assert (tmp_path / "pretrained.safetensors").exists()
    import minitorch
    checkpoint = minitorch.load(str(tmp_path / "pretrained.safetensors"))
    assert json.loads(checkpoint["vocabulary"])[:3] == ["[PAD]", "[CLS]", "[MASK]"]
    assert "encoder.layers.0.self_attn.in_proj_weight" in checkpoint["model"]


def test_data_cuts_are_disjoint_and_labelled_from_the_grammar(tmp_path):
    args = bert_classify.parse_args(["--task", "person", "--n-unlabelled", "300",
                                     "--n-labelled", "50", "--n-held-out", "200",
                                     "--out", str(tmp_path)])[1]
    vocab, unlabelled, (labelled, labels), (held_out, held_labels), dropped = \
        bert_classify.load_data(args)
    assert len(unlabelled) == 300 and len(labelled) == 50 and len(held_out) + dropped == 200
    as_text = {tuple(ids) for ids in unlabelled + labelled}
    assert not any(tuple(ids) in as_text for ids in held_out)
    for ids, label in zip(labelled, labels):  # pronoun subjects name their person
        first = vocab.tokens[ids[1]]
        if first in ("I", "you", "we", "they"):
            assert label == {"I": 0, "you": 1, "we": 3, "they": 4}[first]
    assert set(labels) <= set(range(5)) and set(held_labels) <= set(range(5))


def run(args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, EXAMPLE, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("args, flag", [
    (["--d-model", "10", "--heads", "4"], "--heads"),
    (["--mask-prob", "0"], "--mask-prob"),
    (["--task", "mood"], "--task"),
    (["--finetune-steps", "0"], "--finetune-steps"),
    (["--out", "a_file"], "--out"),
])
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, args, flag):
    (tmp_path / "a_file").write_text("not a folder")
    process = run(args, tmp_path)
    assert process.returncode == 2, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0], process.stderr
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_a_second_run_does_not_replace_the_first(tmp_path):
    (tmp_path / "results.json").write_text("{}")
    with pytest.raises(SystemExit):
        bert_classify.parse_args(["--out", str(tmp_path)])
    assert (tmp_path / "results.json").read_text() == "{}"


def test_generate_sentences_gives_generate_pairs_pairs_with_their_slots():
    from minitorch.text.corpus import build_pair, generate_pairs, generate_sentences
    sentences = generate_sentences(300, seed=5)
    assert [(s.english, s.spanish) for s in sentences] == generate_pairs(300, seed=5)
    for sentence in sentences:
        assert build_pair(**sentence.slots) == (sentence.english, sentence.spanish)
    we = [s for s in sentences if s.slots["subject"] == "we"]
    assert we and all(s.person == 3 for s in we)  # FIRST_PL
