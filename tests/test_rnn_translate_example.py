"""examples/rnn_translate.py end to end on a tiny model: training, its files, BLEU by length and
the comparison of runs, --translate, and bad arguments."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "rnn_translate.py")


def _load_example():
    sys.path.insert(0, os.path.join(ROOT, "examples"))  # it imports translate.py's helpers
    try:
        spec = importlib.util.spec_from_file_location("rnn_translate_example", EXAMPLE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.pop(0)
    return module


rnn_translate = _load_example()

TINY = ["--n-train", "300", "--n-valid", "8", "--vocab-size", "150", "--embed-size", "16",
        "--hidden-size", "16", "--batch-size", "16", "--warmup", "2", "--lr", "0.01",
        "--max-len", "40", "--beam-size", "2", "--quiet", "--seed", "3", "--threads", "1"]


@pytest.fixture(autouse=True)
def _restore_thread_count():
    # --threads changes a process-wide setting: give the other tests theirs back.
    import minitorch
    threads = minitorch.get_num_threads()
    yield
    minitorch.set_num_threads(threads)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two tiny 16-step runs in their default folders: with attention, then without (which
    finds the first run's BLEU-by-length table and draws both curves)."""
    root = tmp_path_factory.mktemp("rnn_translate")
    cwd = os.getcwd()
    os.chdir(root)  # the default run folders are relative
    try:
        additive = rnn_translate.main(TINY + ["--max-steps", "16"])
        none = rnn_translate.main(TINY + ["--max-steps", "16", "--no-attention"])
    finally:
        os.chdir(cwd)
    return root, additive, none


@pytest.mark.slow
def test_smoke_run_loss_falls_and_the_run_folder_holds_its_files(runs):
    root, additive, none = runs
    for result in (additive, none):
        losses = result["losses"]
        assert len(losses) == 16 and result["step"] == 16
        assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.3  # it learns
        assert 0.0 <= result["greedy_bleu"] <= 100.0 and 0.0 <= result["beam_bleu"] <= 100.0
    assert os.path.normpath(additive["out"]) == os.path.join("runs", "rnn_translate",
                                                             "en-es-additive")
    assert os.path.normpath(none["out"]) == os.path.join("runs", "rnn_translate", "en-es-none")
    folder = root / additive["out"]
    for name in ("checkpoint.safetensors", "src_bpe.json", "tgt_bpe.json", "bleu_by_length.json"):
        assert (folder / name).exists()
    table = json.loads((folder / "bleu_by_length.json").read_text())
    assert table["attention"] == "additive" and table["by_length"] == additive["by_length"]
    assert sum(row["sentences"] for row in table["by_length"]) == 8
    pytest.importorskip("matplotlib", reason="matplotlib not installed: plots are skipped")
    for name in ("loss.png", "attention.png", "bleu_by_length.png"):
        assert (folder / name).exists()
    none_folder = root / none["out"]
    assert (none_folder / "bleu_by_length.png").exists()
    assert not (none_folder / "attention.png").exists()  # no attention, no heatmap


def test_bleu_by_length_groups_the_held_out_sentences():
    valid = [("a b c", "x y z"), ("a b c d", "x y z w"), ("a b c d", "x q"),
             ("a b c d e f", "u v w t s"), ("a", "q"), ("a b c d e f g", "u v w t s")]
    hyps = ["x y z", "x y z q", "x q", "u v w t s", "q", "u v w t s"]
    table = rnn_translate.bleu_by_length(valid, hyps, min_sentences=2)
    assert [row["words"] for row in table] == [[1, 3], [4, 4], [6, 7]]
    assert [row["sentences"] for row in table] == [2, 2, 2]
    assert table[2]["bleu"] == pytest.approx(100.0)
    assert 0 < table[1]["bleu"] < 100  # smoothed: no 4-gram matches, yet not 0
    # a last group too small joins the one before: [1..4] has 4 sentences, [6, 7] only 2
    merged = rnn_translate.bleu_by_length(valid, hyps, min_sentences=3)
    assert [(row["words"], row["sentences"]) for row in merged] == [([1, 7], 6)]
    assert [row["sentences"] for row in rnn_translate.bleu_by_length(valid, hyps, 100)] == [6]


@pytest.mark.slow
def test_translate_flag_uses_the_saved_model(runs, capsys):
    root, additive, _ = runs
    result = rnn_translate.main(["--translate", "We are eating bread.", "--out",
                                 str(root / additive["out"])])
    assert result["input"] == "we are eating bread" and isinstance(result["translation"], str)
    assert result["translation"] in capsys.readouterr().out


BAD_ARGUMENTS = [
    (["--attention", "bahdanau"], "--attention"),
    (["--hidden-size", "0"], "--hidden-size"),
    (["--teacher-forcing", "1.5"], "--teacher-forcing"),
    (["--dropout", "1"], "--dropout"),
    (["--compare", "nowhere"], "--compare"),
    (["--translate", "hello"], "no checkpoint"),
    (["--out", "a_file"], "--out"),
]


@pytest.mark.parametrize("args, flag", BAD_ARGUMENTS)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                              args, flag):
    (tmp_path / "a_file").write_text("not a folder")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        rnn_translate.main(args)
    assert stopped.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0]
    assert sorted(os.listdir(tmp_path)) == ["a_file"]


def test_as_a_program_a_bad_argument_is_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    process = subprocess.run([sys.executable, EXAMPLE, "--no-attention", "--compare", "nowhere"],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert process.stderr.startswith("rnn_translate.py: error: --compare nowhere")
    assert not os.listdir(tmp_path)


def test_help_shows_each_default_once(capsys):
    with pytest.raises(SystemExit):
        rnn_translate.main(["--help"])
    options = re.split(r"\n  (?=-)", capsys.readouterr().out.split("options:")[1])[1:]
    assert len(options) > 20
    for option in options:
        assert option.count("(default:") <= 1 and "(default: None)" not in option, option


@pytest.mark.slow
def test_a_run_never_overwrites_another_runs_files(runs):
    root, additive, _ = runs
    with pytest.raises(SystemExit) as stopped:
        rnn_translate.main(TINY + ["--max-steps", "1", "--out", str(root / additive["out"])])
    assert stopped.value.code == 2
