"""ops/_threads.py: numpy work split over the threads gives exactly the one-thread result, for
any thread count and sizes around the split, and runs once below the threshold."""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch.ops import _threads


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1000])
@pytest.mark.parametrize("count", [1, 2, 3])
def test_parts_cover_every_row_once(rows, count, threads, monkeypatch):
    monkeypatch.setattr(_threads, "MIN_ELEMENTS", 1)
    threads(count)
    x = np.arange(rows * 3, dtype=np.float64).reshape(rows, 3)
    seen = []

    def double(out, a):
        seen.append(len(out))
        np.multiply(a, 2, out=out)
    out = _threads.in_chunks(double, np.full_like(x, np.nan), x)
    np.testing.assert_array_equal(out, 2 * x)
    assert sum(seen) == rows and len(seen) == min(max(count, 1), rows)


def test_small_arrays_run_once(threads):
    threads(2)
    calls = []
    _threads.in_chunks(lambda out, a: calls.append(out.shape), np.empty((4, 4)), np.empty((4, 4)))
    assert calls == [(4, 4)]


@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
def test_gather_and_softplus_are_the_same_on_one_and_on_two_threads(dtype, threads):
    rng = np.random.default_rng(0)
    x = minitorch.tensor(rng.standard_normal((64, 40, 33)) * 30, dtype=dtype)
    index = minitorch.tensor(rng.integers(-33, 33, (64, 40, 20)))
    results = []
    for count in (1, 2):
        threads(count)
        results.append((x.gather(2, index).numpy(), F.softplus(x).numpy(),
                        F.softplus(x, beta=0.5, threshold=5.0).numpy()))
    for one, two in zip(*results):
        np.testing.assert_array_equal(one, two)
