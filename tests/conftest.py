"""Shared fixtures and the hypothesis profiles of the fuzzing campaign.

``backend`` runs a test once per built kernel backend: a test that takes it runs inside
``minitorch.backends.using(name)`` for every name in ``minitorch.backends.available`` ("numpy"
always, "c" when the extension is built); the fixture's value is that name. Tests that
parametrize ``backend`` themselves override this fixture. ``threads`` is
``minitorch.set_num_threads`` with the thread count put back after the test. ``without_gpu``
makes minitorch see no GPU for one test (as on CI's machines), so that what it says without one
is checked on a GPU machine too.

Hypothesis example counts come from one place, the profile loaded here: "quick" (the default,
what CI runs: few examples, derandomized, so every run draws the same cases) or "long"
(``MINITORCH_FUZZ=long``: many more examples from random seeds, for a campaign before a
release or after a kernel change). A test's own ``@settings`` may still set other options.
"""
import os

# README's command runs the suite on pytest-xdist workers, one per core: one OpenMP thread each
# (unless the environment says otherwise), so that they share the cores instead of fighting over
# them; tests that want more threads ask for them. Set before minitorch loads its kernels.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

import minitorch  # noqa: E402

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("quick", max_examples=12, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=400, derandomize=False, **_COMMON)
FUZZ = os.environ.get("MINITORCH_FUZZ", "").strip().lower() or "quick"
if FUZZ not in ("quick", "long"):
    raise pytest.UsageError(f"MINITORCH_FUZZ must be 'quick' or 'long', got {FUZZ!r}")
settings.load_profile(FUZZ)


@pytest.fixture
def threads():
    """``minitorch.set_num_threads``, for a test to call; the count is put back afterwards."""
    before = minitorch.get_num_threads()
    yield minitorch.set_num_threads
    minitorch.set_num_threads(before)


@pytest.fixture
def without_gpu():
    """minitorch as where CuPy is absent, for the test; the GPU library state put back after."""
    from minitorch import device_arrays
    saved = dict(device_arrays._gpu)
    device_arrays._gpu.update(module=None, kernels=None, ndarray=(), loaded=True,
                              error="CuPy is not installed (the test's without_gpu fixture)")
    yield
    device_arrays._gpu.update(saved)


@pytest.fixture(params=sorted(minitorch.backends.available))
def backend(request):
    with minitorch.backends.using(request.param):
        yield request.param


def make_function(name, forward, backward):
    """A Function named ``name`` whose forward is ``forward(x)`` and whose backward returns
    ``backward(grad)``: for tests of what the engine does with a Function's gradients."""
    from minitorch.autograd import Function
    return type(name, (Function,), {"forward": staticmethod(lambda ctx, x: forward(x)),
                                    "backward": staticmethod(lambda ctx, g: backward(g))})


def doubling_function(backward, name="Twice"):
    """A Function whose forward is 2x and whose backward returns ``backward(grad)``."""
    return make_function(name, lambda x: x * 2.0, backward)
