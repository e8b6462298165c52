"""topk's small-k path (k passes of argmax/argmin, ops/sorting.py) gives exactly what the full
stable sort gives: the same values and indices, ties to the first, NaN as the largest, infinities,
any dim, both directions, and the same gradient."""
import numpy as np
import pytest

import minitorch


def _by_sort(x, k, dim, largest):
    values, indices = x.sort(dim, descending=largest)
    return values.narrow(dim, 0, k), indices.narrow(dim, 0, k)


def _data(kind, shape, rng):
    x = rng.standard_normal(shape)
    if kind == "ties":
        x = np.round(x * 2) / 2                      # many equal values
    elif kind == "nan":
        x[rng.random(shape) < 0.1] = np.nan
    elif kind == "inf":
        x[rng.random(shape) < 0.2] = -np.inf
        x[rng.random(shape) < 0.05] = np.inf
    return x


@pytest.mark.parametrize("kind", ["normal", "ties", "nan", "inf"])
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_small_k_equals_the_sort(kind, dtype, largest, dim):
    rng = np.random.default_rng(abs(hash((kind, largest, dim))) % 2**32)
    x = minitorch.tensor(_data(kind, (40, 48, 3) if dim == 1 else (40, 6, 48), rng), dtype=dtype)
    if dim == 0:
        x = minitorch.tensor(_data(kind, (48, 5, 7), rng), dtype=dtype)
    for k in (1, 3, 8):
        values, indices = x.topk(k, dim, largest=largest)
        expected_values, expected_indices = _by_sort(x, k, dim, largest)
        np.testing.assert_array_equal(indices.numpy(), expected_indices.numpy())
        np.testing.assert_array_equal(values.numpy(), expected_values.numpy())


def test_a_row_of_infinities_falls_back_to_the_sort():
    x = minitorch.tensor([[-np.inf, -np.inf, 1.0, -np.inf, 2.0, -np.inf, -np.inf, -np.inf,
                           -np.inf, -np.inf, -np.inf, -np.inf]])
    values, indices = x.topk(3)
    assert indices.tolist() == [[4, 2, 0]]
    assert values.tolist() == [[2.0, 1.0, -np.inf]]


def test_the_gradient_goes_to_the_picked_elements():
    rng = np.random.default_rng(0)
    x = minitorch.tensor(rng.standard_normal((6, 32)), requires_grad=True)
    values, indices = x.topk(4, -1)
    (values * minitorch.arange(1.0, 5.0, dtype=minitorch.float64)).sum().backward()
    expected = np.zeros((6, 32))
    np.put_along_axis(expected, indices.numpy(), np.arange(1.0, 5.0), axis=-1)
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    assert minitorch.autograd.gradcheck(lambda t: t.topk(3, -1)[0], (x,))


def test_the_passes_are_taken_for_a_small_k_and_not_for_a_large_one():
    from minitorch.ops.sorting import _first_k_by_passes
    x = np.random.default_rng(1).standard_normal((4, 64))
    assert _first_k_by_passes(x, 1, True, 5) is not None
    assert _first_k_by_passes(x, 1, True, 32) is None       # a sort is cheaper
    assert _first_k_by_passes(x.astype(np.int64), 1, True, 5) is None
