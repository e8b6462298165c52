"""examples/gpt.py on tiny settings: the loss falls and beats the unigram baseline, the run
folder gets its files, --generate samples the saved model reproducibly, --resume goes on, and
bad arguments exit 2 with one line before anything is written. Also the shipped text itself.

The example runs in-process (``main(argv)``) in a scratch folder: its run folders are relative.
"""
import importlib.util
import os

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = importlib.util.spec_from_file_location("gpt_example", os.path.join(ROOT, "examples",
                                                                         "gpt.py"))
gpt_example = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(gpt_example)

TINY = ["--n-layer", "1", "--n-embd", "32", "--n-head", "2", "--block-size", "32",
        "--batch-size", "16", "--lr", "1e-2", "--min-lr", "1e-3", "--warmup", "5",
        "--eval-every", "40", "--eval-windows", "8", "--sample-length", "40", "--quiet"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One tiny training run of 80 steps, shared by the tests that read its results."""
    folder = tmp_path_factory.mktemp("gpt_run")
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        result = gpt_example.main(TINY + ["--max-steps", "80"])
    finally:
        os.chdir(cwd)
    return folder, result


def test_the_shipped_text_is_english_verse_in_speeches():
    with open(gpt_example.SHAKESPEARE, encoding="utf-8") as handle:
        text = handle.read()
    assert 800_000 < len(text) < 1_000_000
    assert text.startswith("Prologue:\nTwo households, both alike in dignity,\n")
    assert "HAMLET:\nTo be, or not to be: that is the question:\n" in text
    assert set(text) <= set("\n !&',-.:;?") | set("abcdefghijklmnopqrstuvwxyz") | \
        set("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    assert not any(c in text for c in "_*#[]\\")  # no Markdown left from the source


def test_split_holds_out_the_last_tenth_from_a_speech_on():
    train, held_out = gpt_example.load_text("shakespeare")
    assert 0.09 < len(held_out) / (len(train) + len(held_out)) < 0.11
    assert train.endswith("\n\n") and held_out.split("\n")[0].endswith(":")


def test_unigram_baseline_is_the_cross_entropy_of_smoothed_frequencies():
    train, held_out = np.array([0, 0, 0, 1]), np.array([0, 1, 2])
    p = np.array([4, 2, 1]) / 7
    expected = -np.log(p).mean()
    assert gpt_example.unigram_loss(train, held_out, 3) == pytest.approx(expected)


def test_learning_rate_warms_up_then_decays_to_min_lr():
    config = dict(lr=1.0, min_lr=0.1, warmup=10, max_steps=110)
    lrs = [gpt_example.learning_rate(s, config) for s in range(130)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert lrs[60] == pytest.approx(0.55)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[110:] == [0.1] * 20


def test_training_loss_falls_below_the_unigram_baseline(tiny_run):
    folder, result = tiny_run
    losses = result["losses"]
    assert len(losses) == 80 and result["step"] == 80
    assert np.mean(losses[-10:]) < np.mean(losses[:10]) - 0.5
    assert result["held_out_loss"] < result["unigram_loss"] - 0.3  # it uses the context
    assert [step for step, _, _ in result["history"]["eval"]] == [40, 80]
    out = folder / "runs" / "gpt" / "shakespeare"
    assert (out / "checkpoint.safetensors").is_file()
    samples = (out / "samples.txt").read_text()
    assert samples.count("=== step") == 2
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (out / "loss.png").exists()
    else:
        assert (out / "loss.png").stat().st_size > 0


def test_generate_samples_the_saved_model_reproducibly(tiny_run, capsys):
    folder, _ = tiny_run
    out = str(folder / "runs" / "gpt" / "shakespeare")
    args = ["--out", out, "--generate", "50", "--prompt", "KING:", "--top-k", "5",
            "--seed", "3"]
    first = gpt_example.main(args)["text"]
    assert first.startswith("KING:") and len(first) == 55
    assert gpt_example.main(args)["text"] == first
    assert first in capsys.readouterr().out
    greedy = gpt_example.main(args + ["--top-k", "1"])["text"]
    assert gpt_example.main(args + ["--top-k", "1", "--seed", "4"])["text"] == greedy


def test_resume_trains_more_steps(tiny_run, tmp_path):
    folder, _ = tiny_run
    copy = tmp_path / "copy"
    copy.mkdir()
    src = folder / "runs" / "gpt" / "shakespeare"
    for name in ("checkpoint.safetensors", "samples.txt"):
        (copy / name).write_bytes((src / name).read_bytes())
    result = gpt_example.main(["--out", str(copy), "--resume", "--max-steps", "5",
                               "--quiet", "--no-plots"])
    assert result["step"] == 85 and len(result["losses"]) == 5
    assert len(result["history"]["train"]) == 85


@pytest.mark.parametrize("args, words", [
    (["--n-embd", "30", "--n-head", "4"], "--n-head"),
    (["--top-p", "1.5"], "--top-p"),
    (["--top-k", "0"], "--top-k"),
    (["--temperature", "0"], "--temperature"),
    (["--dropout", "1"], "--dropout"),
    (["--lr", "1e-4", "--min-lr", "1e-3"], "--min-lr"),
    (["--prompt", ""], "--prompt"),
    (["--prompt", "Caf\u00e9"], "--prompt holds characters"),
    (["--prompt", "x" * 200], "more than the model's context"),
    (["--resume"], "--resume"),
    (["--generate", "10"], "--generate"),
    (["--out", "a_file"], "--out"),
    (["--corpus", "gutenberg"], "--corpus"),
])
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                             args, words):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("not a folder")
    with pytest.raises(SystemExit) as exit_info:
        gpt_example.main(args + ["--max-steps", "1"])
    assert exit_info.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], lines
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_another_runs_folder_is_not_overwritten(tiny_run, capsys):
    folder, _ = tiny_run
    out = str(folder / "runs" / "gpt" / "shakespeare")
    with pytest.raises(SystemExit):
        gpt_example.main(["--out", out, "--max-steps", "1"])
    assert "--overwrite" in capsys.readouterr().err


@pytest.mark.slow  # reads the dictionary twice: ~3 s of CPU
def test_trans_de_en_corpus_is_its_english_side():
    from minitorch.text.trans_de_en import (DEFAULT_PATH, TRAINING_DEFAULTS, load_trans_de_en,
                                            split_pairs)
    if not os.path.exists(DEFAULT_PATH):
        pytest.skip("trans-de-en not installed (apt-get install trans-de-en)")
    train, held_out = gpt_example.load_text("trans-de-en")
    pairs_train, pairs_held_out = split_pairs(load_trans_de_en(), TRAINING_DEFAULTS["n_valid"])
    assert held_out.splitlines() == [english for _, english in pairs_held_out]
    assert train.splitlines() == [english for _, english in pairs_train]
    assert pairs_held_out[0][0] not in held_out  # not the German side
