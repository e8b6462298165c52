"""minitorch.distributed on two ranks: ``mpiexec -n 2`` runs tests/distributed_ranks.py (and
examples/translate.py), each under a time limit, so that a rank waiting forever fails the test
instead of hanging the suite. Skipped, saying so, without mpi4py or mpiexec (pip install
'minitorch-edu[distributed]'); the world of one runs in tests/test_distributed.py."""
import os
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANKS = os.path.join(ROOT, "tests", "distributed_ranks.py")


def _mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")  # the mpich wheel's
    return beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")


pytest.importorskip("mpi4py", reason="mpi4py not installed: pip install "
                                     "'minitorch-edu[distributed]' to run the 2-rank tests")
MPIEXEC = _mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install mpich)")


def run_ranks(args, timeout=120, ranks=2, cwd=ROOT):
    """(exit status, stdout, stderr) of ``mpiexec -n ranks python args``; fails the test if it
    has not ended after ``timeout`` seconds (every process of the job is then killed)."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path, OMP_NUM_THREADS="1")
    process = subprocess.Popen([MPIEXEC, "-n", str(ranks), sys.executable, *args], cwd=cwd,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        pytest.fail(f"mpiexec -n {ranks} {' '.join(args)} still ran after {timeout}s (a rank "
                    f"waiting for another forever?)\nstdout:\n{out}\nstderr:\n{err}")
    return process.returncode, out, err


def test_two_ranks_on_half_batches_reach_the_whole_batch_parameters():
    """Collectives, sampler shards, and DDP against one process on the whole batch (1e-12,
    float64, several SGD steps; one bucket, many, no_sync, unused parameters): see
    tests/distributed_ranks.py."""
    status, out, err = run_ranks([RANKS, "check"])
    assert status == 0, f"stdout:\n{out}\nstderr:\n{err}"
    for check in ("collectives", "sampler", "one bucket", "many buckets", "no_sync accumulation",
                  "gradient_as_bucket_view", "unused parameters", "buffers"):
        assert f"OK {check}" in out, out
    assert out.rstrip().endswith("ALL OK")


def test_a_rank_that_raises_ends_the_job_with_an_error():
    status, out, err = run_ranks([RANKS, "raise"], timeout=60)
    assert status != 0
    assert "rank 1 fails on purpose" in err and "rank 1 raised RuntimeError" in err
    assert "passed a barrier" not in out


def test_a_rank_that_exits_with_an_error_ends_the_job():
    status, out, _ = run_ranks([RANKS, "exit"], timeout=60)
    assert status == 3 and "passed a barrier" not in out


def test_a_rank_that_ends_first_lets_the_others_finish():
    status, out, err = run_ranks([RANKS, "early"], timeout=60)
    assert status == 0 and "rank 0 finished its work" in out, err


TRANSLATE_TINY = ["--n-train", "400", "--n-valid", "6", "--vocab-size", "150", "--d-model", "16",
                  "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "15",
                  "--warmup", "10", "--max-len", "40", "--seed", "3", "--dropout", "0",
                  "--epochs", "1", "--no-plots"]


def _losses(out):
    import minitorch
    return minitorch.load(os.path.join(out, "checkpoint.safetensors"))["history"]["loss"]


@pytest.mark.slow
def test_translate_on_two_ranks_takes_the_steps_of_one_process(tmp_path):
    """The same command under mpiexec: each rank trains on half of every batch (an odd batch
    size leaves the halves uneven) and the losses are one process's; rank 0 alone prints and
    writes; both ranks resume from the checkpoint."""
    translate = os.path.join(ROOT, "examples", "translate.py")
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    alone = subprocess.run([sys.executable, translate, *TRANSLATE_TINY, "--max-steps", "8",
                            "--out", one], capture_output=True, text=True, cwd=ROOT, timeout=300,
                           env=dict(os.environ, PYTHONPATH=ROOT))
    assert alone.returncode == 0, alone.stderr
    status, out, err = run_ranks([translate, *TRANSLATE_TINY, "--max-steps", "5", "--out", two],
                                 timeout=300)
    assert status == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert out.count("Final held-out BLEU") == 1 and "threads x 2 ranks" in out
    status, out, err = run_ranks([translate, "--resume", "--max-steps", "3", "--no-plots",
                                  "--out", two], timeout=300)
    assert status == 0, f"stdout:\n{out}\nstderr:\n{err}"
    assert out.count("after 3 steps (8 in all)") == 1
    np.testing.assert_allclose(_losses(two), _losses(one), rtol=0, atol=1e-4)
    assert sorted(os.listdir(two)) == ["checkpoint.safetensors", "src_bpe.json", "tgt_bpe.json"]


def _bench_worker(framework, ranks):
    """One bench_distributed.py worker's JSON result (3 steps of the quick model, no dropout)."""
    import json
    args = [os.path.join(ROOT, "benchmarks", "bench_distributed.py"), "--worker", framework,
            "--quick", "--steps", "3", "--warmup", "0", "--dropout", "0", "--threads", "1"]
    if ranks > 1:
        status, out, err = run_ranks(args, timeout=300, ranks=ranks)
    else:
        done = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              timeout=300, env=dict(os.environ, PYTHONPATH=ROOT,
                                                    OMP_NUM_THREADS="1"))
        status, out, err = done.returncode, done.stdout, done.stderr
    assert status == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.slow
def test_the_benchmark_times_like_against_like():
    """bench_distributed.py's configurations train on the same global batches: one rank and
    two give the same losses, and PyTorch (same architecture and initial weights) too."""
    alone, two = _bench_worker("minitorch", 1), _bench_worker("minitorch", 2)
    assert (alone["world"], two["world"]) == (1, 2)
    assert alone["tokens"] == two["tokens"] and alone["n_params"] == two["n_params"]
    np.testing.assert_allclose(two["losses"], alone["losses"], rtol=0, atol=1e-4)
    assert two["comm_ms"] > 0 and two["alone_ms"] > 0
    try:
        import torch  # noqa: F401
    except ImportError:
        return  # PyTorch's rows are left out of the benchmark too
    theirs = _bench_worker("torch", 1)
    assert theirs["tokens"] == alone["tokens"] and theirs["n_params"] == alone["n_params"]
    np.testing.assert_allclose(theirs["losses"], alone["losses"], rtol=0, atol=1e-4)
