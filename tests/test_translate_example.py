"""examples/translate.py end to end on a tiny model: training, resume, checkpoints, --translate."""
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example():
    spec = importlib.util.spec_from_file_location(
        "translate_example", os.path.join(ROOT, "examples", "translate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


translate_example = _load_example()

TINY = ["--n-train", "400", "--n-valid", "6", "--vocab-size", "150", "--d-model", "16",
        "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "16", "--warmup", "10",
        "--max-len", "40", "--quiet", "--seed", "3", "--threads", "1"]


@pytest.fixture(autouse=True)
def _restore_thread_count():
    # --threads changes a process-wide setting: give the other tests theirs back.
    import minitorch
    threads = minitorch.get_num_threads()
    yield
    minitorch.set_num_threads(threads)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny 16-step run, shared by the tests that only read its outputs."""
    out = str(tmp_path_factory.mktemp("translate"))
    result = translate_example.main(TINY + ["--max-steps", "16", "--epochs", "1", "--out", out])
    return out, result


def test_smoke_run_trains_evaluates_and_saves(trained):
    out, result = trained
    losses = result["losses"]
    assert len(losses) == 16 and result["step"] == 16
    assert np.mean(losses[-4:]) < np.mean(losses[:4]) - 0.25  # it learns
    assert 0.0 <= result["bleu"] <= 100.0
    for name in ("checkpoint.safetensors", "src_bpe.json", "tgt_bpe.json"):
        assert os.path.exists(os.path.join(out, name))
    pytest.importorskip("matplotlib", reason="matplotlib not installed: plots are skipped")
    for name in ("loss.png", "attention.png"):
        assert os.path.exists(os.path.join(out, name))


def test_resume_continues_with_exactly_the_same_losses(tmp_path):
    straight = translate_example.main(TINY + ["--max-steps", "8", "--epochs", "1", "--no-plots",
                                              "--out", str(tmp_path / "a")])
    first = translate_example.main(TINY + ["--max-steps", "4", "--epochs", "1", "--no-plots",
                                           "--out", str(tmp_path / "b")])
    # --max-steps on resume counts the steps to train on top of the checkpoint's 4.
    resumed = translate_example.main(["--resume", "--max-steps", "4", "--quiet", "--no-plots",
                                      "--out", str(tmp_path / "b")])
    assert first["losses"] == pytest.approx(straight["losses"][:4], abs=1e-6)
    # Dropout is on (0.1): equal losses need the RNG state, optimizer and schedule restored.
    assert resumed["losses"] == pytest.approx(straight["losses"][4:], abs=1e-5)
    assert resumed["all_losses"] == pytest.approx(straight["losses"], abs=1e-5)


def test_translate_flag_uses_the_saved_checkpoint(trained, capsys):
    out, _ = trained
    result = translate_example.main(["--translate", "We are eating bread.", "--out", out])
    assert isinstance(result["translation"], str) and result["input"] == "we are eating bread"
    assert result["translation"] in capsys.readouterr().out
    # Bad input never crashes: unseen characters translate too, and are reported as unknown;
    # an empty or too long sentence is refused with a message (exit status 2).
    unseen = translate_example.main(["--translate", "§§ ñandú", "--out", out])
    assert isinstance(unseen["translation"], str) and unseen["unknown"] == ["ñandú"]
    assert "(1 of 1 source words unknown to the model: ñandú)" in capsys.readouterr().err
    for sentence in ("", " ".join(["bread"] * 50)):
        with pytest.raises(SystemExit) as exit_:
            translate_example.main(["--translate", sentence, "--out", out])
        assert exit_.value.code == 2


def test_corrupted_checkpoint_gives_a_clear_error(trained, tmp_path):
    out, _ = trained
    broken = tmp_path / "broken"
    broken.mkdir()
    for name in ("src_bpe.json", "tgt_bpe.json"):
        (broken / name).write_bytes(open(os.path.join(out, name), "rb").read())
    data = open(os.path.join(out, "checkpoint.safetensors"), "rb").read()
    (broken / "checkpoint.safetensors").write_bytes(data[: len(data) // 2])  # truncated
    with pytest.raises(ValueError, match="corrupted or not a minitorch checkpoint"):
        translate_example.main(["--translate", "we eat", "--out", str(broken)])
    (broken / "checkpoint.safetensors").write_bytes(b"\x00garbage" * 10)
    with pytest.raises(ValueError, match="corrupted"):
        translate_example.main(["--resume", "--out", str(broken), "--quiet"])
    with pytest.raises(SystemExit):  # a one-line error naming the missing checkpoint
        translate_example.main(["--translate", "we eat", "--out", str(tmp_path / "none")])


def test_command_line_reports_errors_without_a_traceback(tmp_path):
    process = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "translate.py"), "--translate", "hi",
         "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert process.returncode != 0
    assert process.returncode == 2 and "Traceback" not in process.stderr
    assert "no checkpoint" in process.stderr and len(process.stderr.splitlines()) == 1


def test_loss_ignores_padding_positions():
    import minitorch
    from minitorch.text.training import seq2seq_loss
    logits = minitorch.randn(2, 3, 5)
    target = minitorch.tensor([[1, 4, 0], [2, 0, 0]])  # 0 = pad
    loss = seq2seq_loss(logits, target, pad_id=0).item()
    lp = minitorch.log_softmax(logits, -1).numpy()
    manual = -np.mean([lp[0, 0, 1], lp[0, 1, 4], lp[1, 0, 2]])
    assert loss == pytest.approx(manual, rel=1e-5)
    changed = logits.detach().clone()
    changed[0, 2] = 100.0  # a padded position's logits do not matter
    assert seq2seq_loss(changed, target, pad_id=0).item() == pytest.approx(loss, rel=1e-6)


def test_progress_prints_plain_lines_without_tqdm(monkeypatch, capsys):
    from minitorch.text.training import Progress
    monkeypatch.setitem(sys.modules, "tqdm", None)  # makes `from tqdm import tqdm` fail
    progress = Progress(4, "epoch 1/1", print_every=2)
    for _ in range(4):
        progress.update(1.5, tokens=10, lr=1e-3)
    progress.close()
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and lines[-1].startswith("epoch 1/1 4/4 loss 1.500")
    assert "tok/s" in lines[-1] and "lr 1.00e-03" in lines[-1]


def test_device_flag_is_checked_before_anything_is_written(tmp_path, capsys):
    import minitorch
    out = tmp_path / "run"
    bad = ["mps", "gpu"] + ([] if minitorch.cuda.is_available() else ["cuda", "cuda:0"])
    for device in bad:
        with pytest.raises(SystemExit) as info:
            translate_example.main(TINY + ["--max-steps", "1", "--device", device,
                                           "--out", str(out)])
        assert info.value.code == 2
        assert f"--device {device}" in capsys.readouterr().err
    assert not out.exists()
