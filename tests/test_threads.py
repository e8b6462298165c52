"""Threads: the kernels' thread count bound, per-thread grad mode, and numpy's BLAS threads.

The thread-count cases run in a subprocess, so that a crash in OpenMP (what an unbounded count
used to give) is a failed test rather than the end of the run. The grad-mode cases run Python
threads against each other: the kernels release the GIL, so their ops interleave, and a short
switch interval makes the interleaving frequent.
"""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import minitorch
from minitorch import nn

needs_c = pytest.mark.skipif("c" not in minitorch.backends.available,
                             reason="C extension not built")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Prints "kernel ok <threads>" if a matmul runs after the lines above it in the child.
KERNEL = """
x = minitorch.randn(256, 256)
assert np.allclose((x @ x).numpy(), x.numpy() @ x.numpy(), rtol=1e-4, atol=1e-3)
print("kernel ok", minitorch.get_num_threads(), flush=True)
"""


def run_child(body, preexec_fn=None):
    """Run `body` (after importing minitorch on the C backend) in a fresh interpreter."""
    script = ("import resource, sys\nimport numpy as np\nimport minitorch\n"
              "from minitorch.backends import c_backend\n" + textwrap.dedent(body) + KERNEL)
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_THREAD_LIMIT", "OMP_STACKSIZE",
                                                            "GOMP_STACKSIZE")}
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["MINITORCH_BACKEND"] = "c"
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=preexec_fn, check=False)


def assert_survived(result):
    assert result.returncode == 0, (f"child died with {result.returncode}:\n"
                                    f"{result.stdout}\n{result.stderr}")
    assert "kernel ok" in result.stdout, result.stdout + result.stderr


# ---------------------------------------------------------------------------------------------
# The thread-count bound
# ---------------------------------------------------------------------------------------------
@needs_c
def test_a_huge_thread_count_is_refused_and_the_count_is_kept():
    result = run_child("""
        minitorch.set_num_threads(2)
        bound = c_backend.max_threads()
        assert bound >= 256, bound
        for n in (bound + 1, 40000, 65536):
            try:
                minitorch.set_num_threads(n)
            except ValueError as e:
                assert f"n must be <= {bound}" in str(e) and f"got {n}" in str(e), e
            else:
                raise AssertionError(f"set_num_threads({n}) was accepted")
        assert minitorch.get_num_threads() == 2
    """)
    assert_survived(result)
    assert "kernel ok 2" in result.stdout


@needs_c
def test_the_bound_itself_runs_a_kernel_or_raises_runtime_error():
    result = run_child("""
        try:
            minitorch.set_num_threads(c_backend.max_threads())
        except RuntimeError as e:
            assert "could not start" in str(e), e
    """)
    assert_survived(result)


@needs_c
def test_the_bound_under_a_6_gib_address_space_limit_does_not_kill_the_process():
    result = run_child("""
        limit = 6 << 30
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            minitorch.set_num_threads(c_backend.max_threads())
        except RuntimeError as e:
            assert "could not start" in str(e), e
    """)
    assert_survived(result)


def _stack_8_mib():
    # glibc sizes thread stacks from this limit at start-up: 8 MiB makes the arithmetic below
    # hold whatever the parent's limit is.
    import resource
    hard = resource.getrlimit(resource.RLIMIT_STACK)[1]
    resource.setrlimit(resource.RLIMIT_STACK, (8 << 20, hard))


@needs_c
def test_threads_that_cannot_start_are_a_runtime_error_and_the_count_is_kept():
    # 256 MiB of address space to spare: far fewer than the bound's 255 stacks of 8 MiB.
    result = run_child("""
        minitorch.set_num_threads(2)
        used = int(open("/proc/self/statm").read().split()[0]) * resource.getpagesize()
        limit = used + (256 << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        try:
            minitorch.set_num_threads(c_backend.max_threads())
        except RuntimeError as e:
            assert "could not start" in str(e) and "keep 2" in str(e), e
        else:
            raise AssertionError("the threads started within 256 MiB")
        assert minitorch.get_num_threads() == 2
    """, preexec_fn=_stack_8_mib)
    assert_survived(result)
    assert "kernel ok 2" in result.stdout


# ---------------------------------------------------------------------------------------------
# Grad mode is per thread
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def frequent_switches():
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(previous)


def run_threads(*targets):
    """Run each target in its own thread; re-raise the first exception one of them raised."""
    errors = []

    def guarded(target):
        try:
            target()
        except Exception as e:  # noqa: BLE001 - re-raised in the main thread
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_a_new_thread_starts_with_grad_enabled():
    seen = []
    with minitorch.no_grad():
        run_threads(lambda: seen.append(minitorch.is_grad_enabled()))
        assert not minitorch.is_grad_enabled()
    assert seen == [True]


def test_no_grad_in_one_thread_leaves_the_other_recording():
    inside, checked = threading.Event(), threading.Event()
    x = minitorch.ones(3, requires_grad=True)

    def quiet():
        with minitorch.no_grad():
            inside.set()
            assert checked.wait(10)
            assert not minitorch.is_grad_enabled()
            assert not (x * 2).requires_grad
        minitorch.set_grad_enabled(False)  # a plain call: this thread's mode for good
        assert not minitorch.is_grad_enabled()

    def recording():
        assert inside.wait(10)
        try:
            assert minitorch.is_grad_enabled()
            assert (x * 2).requires_grad
        finally:
            checked.set()

    run_threads(quiet, recording)
    assert minitorch.is_grad_enabled()


def test_two_threads_forward_and_backward_get_their_own_gradients(backend, frequent_switches):
    def worker(seed):
        rng = np.random.default_rng(seed)
        w_np = rng.standard_normal((48, 48))
        w = minitorch.tensor(w_np, requires_grad=True)
        for step in range(150):
            x_np = rng.standard_normal((16, 48))
            x = minitorch.tensor(x_np)
            if rng.random() < 0.3:
                with minitorch.no_grad():
                    assert not minitorch.tanh(x @ w).sum().requires_grad
                continue
            w.grad = None
            minitorch.tanh(x @ w).sum().backward()
            expected = x_np.T @ (1 - np.tanh(x_np @ w_np) ** 2)
            np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-10, atol=1e-10,
                                       err_msg=f"thread {seed}, step {step}")

    run_threads(lambda: worker(1), lambda: worker(2))


def _make_model(seed):
    minitorch.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))


def _train(model, seed, steps=40):
    rng = np.random.default_rng(seed)
    x = minitorch.tensor(rng.standard_normal((64, 32)).astype(np.float32))
    target = minitorch.tensor(rng.integers(0, 4, 64))
    optimizer = minitorch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(steps):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), target).backward()
        optimizer.step()
        if step % 5 == 0:
            with minitorch.no_grad():  # an evaluation, as a training loop has
                model(x)


def test_training_two_models_in_two_threads_equals_training_them_in_turn(frequent_switches):
    alone = [_make_model(seed) for seed in (1, 2)]
    together = [_make_model(seed) for seed in (1, 2)]
    for seed, model in zip((1, 2), alone):
        _train(model, seed)
    run_threads(lambda: _train(together[0], 1), lambda: _train(together[1], 2))
    for a, b in zip(alone, together):
        for (name, p), q in zip(a.named_parameters(), b.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)


# ---------------------------------------------------------------------------------------------
# numpy's BLAS threads
# ---------------------------------------------------------------------------------------------
def test_set_num_threads_sets_the_blas_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def blas_threads():
        return [p["num_threads"] for p in threadpoolctl.threadpool_info()
                if p["user_api"] == "blas"]

    if not blas_threads():
        pytest.skip("numpy has no BLAS with a thread pool threadpoolctl knows")
    previous = minitorch.get_num_threads()
    try:
        minitorch.set_num_threads(1)
        assert blas_threads() == [1] * len(blas_threads())
        minitorch.set_num_threads(2)
        assert blas_threads() == [2] * len(blas_threads())
        with minitorch.backends.using("numpy"):
            assert minitorch.get_num_threads() == 2
    finally:
        minitorch.set_num_threads(previous)
