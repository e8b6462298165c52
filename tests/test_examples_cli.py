"""The examples as programs: bad arguments, run folders, resuming for more, held-out filtering,
--translate's input handling and log-friendly output.

Each command runs as a subprocess in a scratch folder (the default run folders are relative),
with tiny settings so that a training run takes a few seconds.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

TRANSLATE_TINY = ["--n-train", "300", "--n-valid", "6", "--vocab-size", "150", "--d-model",
                  "16", "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "16",
                  "--warmup", "10", "--max-len", "40", "--seed", "3", "--no-plots"]
COPY_TINY = ["--symbols", "4", "--min-len", "2", "--max-len", "4", "--d-model", "16",
             "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "16",
             "--n-eval", "10", "--eval-every", "1000"]


def run(example, args, cwd):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, example), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)


def assert_one_line_error(process, *words):
    assert process.returncode == 2, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in process.stderr, process.stderr
    for word in words:
        assert word in lines[0]


BAD_ARGUMENTS = [
    ("translate.py", ["--epochs", "-1"], "--epochs"),
    ("translate.py", ["--max-steps", "-5"], "--max-steps"),
    ("translate.py", ["--layers", "0"], "--layers"),
    ("translate.py", ["--d-model", "7", "--heads", "4"], "--heads"),
    ("translate.py", ["--threads", "0"], "--threads"),
    ("translate.py", ["--dropout", "1.5"], "--dropout"),
    ("translate.py", ["--top-p", "0"], "--top-p"),
    ("translate.py", ["--lr-factor", "nan"], "--lr-factor"),
    ("translate.py", ["--out", "a_file"], "--out"),
    ("translate.py", ["--out", "/proc/no/such"], "--out"),
    ("translate.py", ["--resume"], "--resume"),
    ("translate.py", ["--resume", "--overwrite"], "--overwrite"),
    ("translate.py", ["--translate", "hello"], "no checkpoint"),
    ("translate.py", ["--vocab-size", "5"], "--vocab-size"),
    ("copy_task.py", ["--eval-every", "0"], "--eval-every"),
    ("copy_task.py", ["--d-model", "7", "--heads", "4"], "--heads"),
    ("copy_task.py", ["--threads", "0"], "--threads"),
    ("copy_task.py", ["--max-steps", "-5"], "--max-steps"),
    ("copy_task.py", ["--min-len", "5", "--max-len", "3"], "--min-len"),
    ("copy_task.py", ["--dropout", "-0.1"], "--dropout"),
    ("copy_task.py", ["--resume"], "--resume"),
    ("mlp_moons.py", ["--hidden", "0"], "--hidden"),
    ("mlp_moons.py", ["--epochs", "-1"], "--epochs"),
    ("mlp_moons.py", ["--lr", "-1"], "--lr"),
    ("mlp_moons.py", ["--out", "a_file"], "--out"),
]


@pytest.mark.parametrize("example, args, flag", BAD_ARGUMENTS)
def test_bad_arguments_exit_2_with_one_line_and_write_nothing(tmp_path, example, args, flag):
    (tmp_path / "a_file").write_text("not a folder")
    process = run(example, args, tmp_path)
    assert_one_line_error(process, flag)
    assert sorted(os.listdir(tmp_path)) == ["a_file"]  # no runs/ folder, nothing else


@pytest.mark.parametrize("example", ["translate.py", "copy_task.py", "mlp_moons.py"])
def test_help_shows_each_default_once(tmp_path, example):
    process = run(example, ["--help"], tmp_path)
    assert process.returncode == 0
    options = re.split(r"\n  (?=-)", process.stdout.split("options:")[1])[1:]
    assert len(options) > 5
    for option in options:
        if option.startswith("-h"):
            continue
        assert option.count("default") in (1, 2) and option.count("(default:") <= 1, option
        assert "(default: None)" not in option
    assert not os.listdir(tmp_path)


def test_translate_run_folders_overwrite_and_resume_for_more(tmp_path):
    first = run("translate.py", TRANSLATE_TINY + ["--max-steps", "6", "--epochs", "1"],
                tmp_path)
    assert first.returncode == 0, first.stderr
    run_folder = tmp_path / "runs" / "translate" / "en-es"
    assert (run_folder / "checkpoint.safetensors").exists()
    assert "after 6 steps (6 in all)" in first.stdout
    checkpoint = (run_folder / "checkpoint.safetensors").read_bytes()

    again = run("translate.py", TRANSLATE_TINY + ["--max-steps", "6"], tmp_path)
    assert_one_line_error(again, "--overwrite", "--resume")
    assert (run_folder / "checkpoint.safetensors").read_bytes() == checkpoint

    more = run("translate.py", ["--resume", "--max-steps", "4"], tmp_path)
    assert more.returncode == 0, more.stderr
    assert "after 4 steps (10 in all)" in more.stdout
    # --epochs on resume means more epochs; with --decode beam the BLEU is beam's, labelled.
    epoch = run("translate.py", ["--resume", "--epochs", "1", "--decode", "beam"], tmp_path)
    assert epoch.returncode == 0, epoch.stderr
    assert "(beam, " in epoch.stdout.splitlines()[-1]
    # 300 pairs in batches of at most 16: epoch 1 has >= 19 steps, of which 10 were done.
    steps = int(epoch.stdout.split(" after ")[1].split()[0])
    assert steps >= 9
    done = run("translate.py", ["--resume"], tmp_path)  # every planned epoch is trained
    assert_one_line_error(done, "--epochs N")
    conflict = run("translate.py", ["--resume", "--d-model", "32"], tmp_path)
    assert_one_line_error(conflict, "--d-model 16")

    replaced = run("translate.py", TRANSLATE_TINY + ["--max-steps", "2", "--overwrite"],
                   tmp_path)
    assert replaced.returncode == 0, replaced.stderr
    assert "after 2 steps (2 in all)" in replaced.stdout
    other = run("translate.py", TRANSLATE_TINY + ["--max-steps", "2", "--out", "elsewhere"],
                tmp_path)
    assert other.returncode == 0 and (tmp_path / "elsewhere" / "src_bpe.json").exists()


def test_translate_filters_long_held_out_pairs_instead_of_failing(tmp_path):
    # The last of a repeated flag wins: a max_len of 14 tokens leaves out many pairs.
    process = run("translate.py", TRANSLATE_TINY + ["--max-len", "14", "--n-valid", "40",
                                                    "--max-steps", "3"], tmp_path)
    assert process.returncode == 0, process.stderr
    dropped = next(line for line in process.stdout.splitlines() if "left out" in line)
    held_out = int(dropped.split(" training and ")[1].split()[0])
    assert 0 < held_out < 40
    assert f"({'greedy'}, {40 - held_out} sentences)" in process.stdout


def test_translate_input_is_normalised_and_checked(tmp_path):
    assert run("translate.py", TRANSLATE_TINY + ["--max-steps", "3"], tmp_path).returncode == 0
    process = run("translate.py", ["--translate", "We are eating PIZZA."], tmp_path)
    assert process.returncode == 0, process.stderr
    assert "read as 'we are eating pizza'" in process.stderr
    unknown = re.search(r"\((\d) of 4 source words unknown to the model: (.*)\)",
                        process.stderr)
    assert unknown and "pizza" in unknown[2].split(", ") and "we" not in unknown[2]
    assert int(unknown[1]) == len(unknown[2].split(", "))
    for empty in ("", "  .  "):
        assert_one_line_error(run("translate.py", ["--translate", empty], tmp_path), "empty")
    long = run("translate.py", ["--translate", " ".join(["bread"] * 60)], tmp_path)
    assert_one_line_error(long, "max_len 40")


def test_copy_task_refuses_a_second_run_and_resumes_for_more_steps(tmp_path):
    first = run("copy_task.py", COPY_TINY + ["--max-steps", "5"], tmp_path)
    assert first.returncode == 0, first.stderr
    assert "after 5 steps (5 in all)" in first.stdout
    assert (tmp_path / "runs" / "copy_task" / "copy" / "checkpoint.safetensors").exists()
    assert_one_line_error(run("copy_task.py", COPY_TINY, tmp_path), "--overwrite")
    more = run("copy_task.py", ["--resume", "--max-steps", "3"], tmp_path)
    assert more.returncode == 0, more.stderr
    assert "after 3 steps (8 in all)" in more.stdout
    reverse = run("copy_task.py", COPY_TINY + ["--max-steps", "2", "--reverse"], tmp_path)
    assert reverse.returncode == 0  # its own folder: runs/copy_task/reverse
    assert (tmp_path / "runs" / "copy_task" / "reverse" / "checkpoint.safetensors").exists()


def test_moons_refuses_to_replace_its_picture_without_overwrite(tmp_path):
    pytest.importorskip("matplotlib", reason="without matplotlib mlp_moons writes nothing")
    assert run("mlp_moons.py", ["--epochs", "2"], tmp_path).returncode == 0
    picture = tmp_path / "runs" / "moons" / "moons.png"
    assert picture.exists()
    assert_one_line_error(run("mlp_moons.py", ["--epochs", "2"], tmp_path), "--overwrite")
    assert run("mlp_moons.py", ["--epochs", "2", "--overwrite"], tmp_path).returncode == 0


def test_output_to_a_file_has_no_carriage_returns(tmp_path):
    process = run("translate.py", TRANSLATE_TINY + ["--max-steps", "3"], tmp_path)
    assert process.returncode == 0
    assert "\r" not in process.stdout + process.stderr
    assert "epoch 1" in process.stdout  # plain progress lines instead of a bar


def test_a_folder_where_the_checkpoint_goes_is_refused(tmp_path):
    (tmp_path / "run" / "checkpoint.safetensors").mkdir(parents=True)
    for args in (["--out", "run"], ["--out", "run", "--resume"]):
        assert_one_line_error(run("translate.py", args, tmp_path), "checkpoint.safetensors")
    assert os.listdir(tmp_path / "run") == ["checkpoint.safetensors"]
