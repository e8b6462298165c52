"""The decoding benchmark times like against like: on its quick configuration, each case
decodes the same tokens (cached or not, minitorch or PyTorch), the PyTorch copy computes the
minitorch model's logits, and every run takes all its steps. (Timings are never asserted.)"""
import pathlib
import sys

import numpy as np
import pytest

import minitorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
bench = pytest.importorskip("bench_decoding")

CFG = bench.QUICK


def _torch_available():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def test_minitorch_cases_agree_and_decode_every_step(backend):
    runs = {name: run() for name, run in bench.cases(CFG, bench.MINITORCH_CASES).items()}
    assert runs["greedy"] == runs["greedy, no cache"]
    assert runs["beam 4"] == runs["beam 4, no cache"]
    for tokens in runs.values():
        assert len(tokens) == CFG["batch"] and all(len(row) == CFG["steps"] for row in tokens)


@pytest.mark.skipif(not _torch_available(), reason="PyTorch is not installed")
def test_torch_cases_compute_the_minitorch_model():
    names = bench.MINITORCH_CASES + bench.TORCH_CASES
    runs = {name: run() for name, run in bench.cases(CFG, names).items()}
    for name in bench.TORCH_CASES:
        kind = "greedy" if "greedy" in name else "beam 4"
        assert runs[name] == runs[kind], name

    model, src, mask = bench.build(CFG)
    reference = bench.TorchModel(model)
    with minitorch.no_grad():
        tgt = minitorch.tensor(np.array([[bench.BOS, 5, 7]] * CFG["batch"]))
        ours = model.decode(tgt, model.encode(src, mask), mask).numpy()[:, -1]
        memory = reference.encode(src, mask)
        theirs = reference.decode(tgt, memory, mask).numpy()[:, -1]
        cache = reference.start_decoding(memory, mask)
        for t in range(3):
            stepped = reference.decode_step(tgt[:, t], cache).numpy()
    np.testing.assert_allclose(theirs, ours, atol=1e-4)
    np.testing.assert_allclose(stepped, ours, atol=1e-4)


def test_table_rows_hold_each_case_to_its_matching_reference():
    best = {"greedy": 0.1, "greedy, no cache": 0.4, "beam 4": 0.2,
            "torch greedy, kv cache": 0.05, "torch greedy, prefix": 0.8}
    rows = {row[1]: row for row in bench.table_rows(best, tokens=100, threads=2)}
    assert rows["greedy"] == ["2", "greedy", "100.0", "1000", "0.50x", "4.00x"]
    assert rows["greedy, no cache"][4:] == ["2.00x", None]  # against the prefix rerun
    assert rows["beam 4"][4:] == [None, None]  # its references were not run
    assert all(len(row) == len(bench.COLUMNS) for row in rows.values())
