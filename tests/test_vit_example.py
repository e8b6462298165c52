"""examples/vit.py on a tiny model: a short run whose loss falls and that writes its files, and
arguments checked before anything is trained or written."""
import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import minitorch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "vit.py")


def _load_example():
    spec = importlib.util.spec_from_file_location("vit_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


vit_example = _load_example()

TINY = ["--d-model", "16", "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "32",
        "--lr", "1e-2", "--dropout", "0", "--baseline-steps", "20", "--panels", "3",
        "--quiet", "--threads", "1"]


@pytest.fixture(autouse=True)
def _restore_thread_count():
    # --threads changes a process-wide setting: give the other tests theirs back.
    threads = minitorch.get_num_threads()
    yield
    minitorch.set_num_threads(threads)


@pytest.mark.slow
def test_a_short_run_learns_and_writes_its_run_folder(tmp_path):
    out = str(tmp_path / "run")
    result = vit_example.main(TINY + ["--epochs", "2", "--max-steps", "40", "--out", out])
    losses = result["losses"]
    assert len(losses) == 40 and len(result["accuracies"]) == 1  # 45 steps an epoch: cut
    assert np.mean(losses[-5:]) < np.mean(losses[:5]) - 0.25  # it learns (2.27 → 1.79)
    assert result["accuracy"] > 0.2  # above chance (0.1) after 40 steps (0.33)
    assert set(result["baselines"]) == {"logistic regression", "MLP (64-128-10)"}
    # the saved model loads into the model its saved settings build
    saved = minitorch.load(os.path.join(out, "model.safetensors"))
    model = vit_example.build_model(json.loads(saved["config"]))
    model.load_state_dict(saved["model"])
    assert tuple(model.pos_embedding.shape) == (1, 17, 16)
    pytest.importorskip("matplotlib", reason="matplotlib not installed: plots are skipped")
    for name in ("curves.png", "attention.png"):
        assert os.path.getsize(os.path.join(out, name)) > 0


def test_a_second_run_refuses_the_first_runs_folder_unless_told(tmp_path, capsys):
    out = str(tmp_path / "run")
    args = TINY + ["--epochs", "1", "--max-steps", "2", "--baseline-steps", "0", "--no-plots",
                   "--out", out]
    vit_example.main(args)
    with pytest.raises(SystemExit) as exit_:
        vit_example.main(args)
    assert exit_.value.code == 2 and "--overwrite" in capsys.readouterr().err
    assert vit_example.main(args + ["--overwrite"])["baselines"] == {}


BAD_ARGUMENTS = [
    (["--patch-size", "3"], "--patch-size must divide the 8×8 digits"),
    (["--d-model", "32", "--heads", "3"], "--heads must divide --d-model"),
    (["--test-size", "0"], "--test-size must be > 0"),
    (["--test-size", "1"], "--test-size"),
    (["--epochs", "0"], "--epochs"),
    (["--weight-decay", "-1"], "--weight-decay"),
    (["--weight-decay", "nan"], "--weight-decay"),
    (["--lr", "inf"], "--lr"),
    (["--dropout", "1.5"], "--dropout"),
    (["--resume"], "unrecognized arguments: --resume"),  # it trains in minutes: no resuming
    (["--out", "a_file"], "--out"),
]


@pytest.mark.parametrize("args, message", BAD_ARGUMENTS)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, monkeypatch, capsys,
                                                              args, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a_file").write_text("not a folder")
    with pytest.raises(SystemExit) as exit_:
        vit_example.main(args)
    error = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(error.splitlines()) == 1 and message in error, error
    assert sorted(os.listdir(tmp_path)) == ["a_file"]  # no runs/ folder, nothing else


def test_as_a_program_a_bad_argument_is_one_line_without_traceback(tmp_path):
    process = subprocess.run([sys.executable, EXAMPLE, "--patch-size", "5"], cwd=tmp_path,
                             env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
                             text=True, timeout=120)
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert process.stderr.strip().splitlines() == [
        "vit.py: error: --patch-size must divide the 8×8 digits, got 5 (see --help)"]
    assert os.listdir(tmp_path) == []
