"""examples/copy_task.py: the Annotated Transformer's copy task, small and fast."""
import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example():
    spec = importlib.util.spec_from_file_location(
        "copy_task_example", os.path.join(ROOT, "examples", "copy_task.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


copy_task = _load_example()


@pytest.fixture(autouse=True)
def _restore_thread_count():
    # --threads changes a process-wide setting: give the other tests theirs back.
    import minitorch
    threads = minitorch.get_num_threads()
    yield
    minitorch.set_num_threads(threads)


SMALL = ["--symbols", "4", "--min-len", "2", "--max-len", "4", "--d-model", "16", "--heads",
         "2", "--layers", "1", "--ff", "32", "--batch-size", "32", "--n-eval", "30",
         "--eval-every", "40", "--quiet"]


def test_copy_smoke_learns_to_copy_short_sequences(tmp_path):
    result = copy_task.main(SMALL + ["--max-steps", "200", "--out", str(tmp_path)])
    losses = result["losses"]
    assert losses[-1] < losses[0] / 3
    assert result["accuracy"] >= 0.9  # exact match of whole held-out sequences


def test_reverse_variant_runs_and_learns(tmp_path):
    result = copy_task.main(SMALL + ["--reverse", "--max-steps", "40", "--out", str(tmp_path)])
    assert result["steps"] <= 40
    assert sum(result["losses"][-5:]) < sum(result["losses"][:5])


def test_pairs_and_arguments():
    assert copy_task.as_pairs([[4, 5, 6]], reverse=True) == [([4, 5, 6, 3], [6, 5, 4])]
    assert copy_task.as_pairs([[4, 5, 6]], reverse=False) == [([4, 5, 6, 3], [4, 5, 6])]
    with pytest.raises(SystemExit):
        copy_task.parse_args(["--min-len", "5", "--max-len", "3"])
