"""large_buffers.keep_freed_heap: with glibc, the arrays of a repeated forward and backward
pass reuse freed heap memory instead of faulting in fresh pages (counted with getrusage's minor
page faults, not timed); MINITORCH_MALLOC_TUNING=0 leaves malloc alone."""
import os
import resource
import subprocess
import sys

import pytest

import minitorch
from minitorch.backends import large_buffers

glibc = pytest.mark.skipif(not sys.platform.startswith("linux") or os.environ.get(
    "MINITORCH_MALLOC_TUNING", "").strip() == "0", reason="the tuning is glibc's (Linux)")


def _faults_per_step(step, steps=20):
    for _ in range(3):  # warm-up: the heap grows to the step's size once
        step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(steps):
        step()
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / steps


@glibc
def test_a_backward_pass_of_large_temporaries_reuses_the_heap():
    x = minitorch.randn(32, 32, 512, requires_grad=True)
    grad = minitorch.randn(32, 32)

    def step():
        x.var(-1).backward(grad)  # a dozen 2 MiB temporaries, freed as backward goes
        x.grad = None

    # without the tuning: ~2,000 faults a step (each 2 MiB array on fresh 4 KiB pages)
    assert _faults_per_step(step) < 100


@glibc
def test_the_tuning_is_taken_and_can_be_turned_off():
    assert large_buffers.keep_freed_heap()
    code = "from minitorch.backends import large_buffers; print(large_buffers.keep_freed_heap())"
    env = dict(os.environ, MINITORCH_MALLOC_TUNING="0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
