"""Bad arguments to tensor creation, ``narrow`` and attention raise a Python error naming them,
as PyTorch does, instead of wrapping around, returning less, filling NaNs or dividing by zero."""
import itertools

import numpy as np
import pytest

import minitorch
from minitorch.nn import functional as F

try:  # the reference where installed; every minitorch check runs without it
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed: no reference")

INT64_MAX = 2 ** 63 - 1


# ------------------------------------------------------------------ integers beyond int64
@pytest.mark.parametrize("data", [
    [2 ** 63], 2 ** 63, [2 ** 64], [-2 ** 63 - 1], [1, 2 ** 63], [[1], [2 ** 63]],
    [True, 2 ** 63], (5, 2 ** 70),
], ids=str)
def test_ints_beyond_int64_raise_like_pytorch(data):
    if torch is not None:
        with pytest.raises(ValueError):
            torch.tensor(data)
    with pytest.raises(ValueError, match="does not fit in int64"):
        minitorch.tensor(data)
    with pytest.raises(ValueError, match="does not fit in int64"):
        minitorch.tensor(data, dtype=minitorch.int64)


@pytest.mark.parametrize("data", [[1.0, 2 ** 63], [2 ** 63, float("nan")], [[0.5], [2 ** 63]]],
                         ids=str)
@needs_torch
def test_a_float_among_the_data_makes_big_ints_floats_like_pytorch(data):
    np.testing.assert_allclose(minitorch.tensor(data).numpy(), torch.tensor(data).numpy())
    assert minitorch.tensor(data).dtype == minitorch.float32


def test_int64_limits_and_big_ints_as_floats_are_accepted():
    assert minitorch.tensor([INT64_MAX, -INT64_MAX - 1]).tolist() == [INT64_MAX, -INT64_MAX - 1]
    assert minitorch.tensor([2 ** 63], dtype=minitorch.float64).item() == 2.0 ** 63
    assert minitorch.tensor(2 ** 64, dtype=minitorch.float32).dtype == minitorch.float32


def test_uint64_arrays_above_int64_max_raise():
    big = np.array([1, 2 ** 64 - 1], dtype=np.uint64)
    for make in (minitorch.tensor, minitorch.from_numpy,
                 lambda a: minitorch.tensor(a, dtype=minitorch.int64),
                 lambda a: minitorch.tensor(a[1], dtype=minitorch.int64)):
        with pytest.raises(ValueError, match="18446744073709551615 does not fit in int64"):
            make(big)
    small = np.array([0, INT64_MAX], dtype=np.uint64)
    for make in (minitorch.tensor, minitorch.from_numpy):
        t = make(small)
        assert t.dtype == minitorch.int64 and t.tolist() == [0, INT64_MAX]
    assert minitorch.tensor(big, dtype=minitorch.float64).tolist() == [1.0, 2.0 ** 64]


def test_setting_data_to_an_overflowing_int_raises():
    t = minitorch.zeros(1)
    with pytest.raises(ValueError, match="does not fit in int64"):
        t.data = [2 ** 63]


# ------------------------------------------------------------------ full
@pytest.mark.parametrize("fill_value", [None, "a", [1, 2], complex(1, 2), minitorch.ones(2)],
                         ids=repr)
def test_full_refuses_a_fill_value_that_is_not_a_number(fill_value):
    if torch is not None:
        with pytest.raises(TypeError):
            torch.full((2,), fill_value if not isinstance(fill_value, (minitorch.Tensor, complex))
                       else None)
    with pytest.raises(TypeError, match="fill_value must be a number"):
        minitorch.full((2,), fill_value)


def test_full_accepts_numbers_and_one_element_tensors():
    assert minitorch.full((2,), np.float32(1.5)).tolist() == [1.5, 1.5]
    assert minitorch.full((2,), minitorch.tensor(3.0)).tolist() == [3.0, 3.0]
    assert minitorch.full((1,), True).dtype == minitorch.bool
    assert minitorch.full((1,), 2 ** 63, dtype=minitorch.float64).item() == 2.0 ** 63
    if torch is not None:
        with pytest.raises(RuntimeError):  # PyTorch: RuntimeError; minitorch: ValueError
            torch.full((1,), 2 ** 63)
    with pytest.raises(ValueError, match="full: the integer 9223372036854775808"):
        minitorch.full((1,), 2 ** 63)


# ------------------------------------------------------------------ narrow
def outcome(fn):
    try:
        return fn().tolist()
    except (IndexError, RuntimeError, TypeError) as error:
        return type(error)


@needs_torch
@pytest.mark.parametrize("dim", [0, -1])
def test_narrow_checks_start_and_length_as_pytorch(dim):
    ours, theirs = minitorch.arange(5), torch.arange(5)
    for start, length in itertools.product(range(-7, 8), range(-2, 8)):
        expected = outcome(lambda: theirs.narrow(dim, start, length))
        assert outcome(lambda: ours.narrow(dim, start, length)) == expected, (start, length)


def test_narrow_errors_name_the_problem_and_take_int_tensors():
    t = minitorch.arange(5)
    with pytest.raises(RuntimeError, match=r"start \(3\) \+ length \(5\) exceeds dimension "
                                           r"size \(5\)"):
        t.narrow(0, 3, 5)
    with pytest.raises(IndexError, match=r"start out of range .*\[-5, 5\], but got -6"):
        t.narrow(0, -6, 1)
    with pytest.raises(TypeError, match="start must be an int, got 1.5"):
        t.narrow(0, 1.5, 1)
    with pytest.raises(TypeError, match="length must be an int"):
        t.narrow(0, 1, "2")
    assert t.narrow(0, minitorch.tensor(1), np.int64(2)).tolist() == [1, 2]
    m = minitorch.arange(6).reshape(2, 3)
    assert m.narrow(1, -2, 2).tolist() == [[1, 2], [4, 5]]


def test_narrow_gradient():
    x = minitorch.randn(4, 3, dtype=minitorch.float64, requires_grad=True)
    assert minitorch.autograd.gradcheck(lambda a: a.narrow(0, -3, 2), (x,))


# ------------------------------------------------------------------ attention sizes
def test_attention_with_zero_features_matches_pytorch(backend):
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 3, 0)), rng.standard_normal((2, 5, 0)), \
        rng.standard_normal((2, 5, 4))
    value = minitorch.tensor(v, requires_grad=True)
    out = F.scaled_dot_product_attention(minitorch.tensor(q), minitorch.tensor(k), value)
    # no features: every score is 0, so each query averages the values
    np.testing.assert_allclose(out.detach().numpy(), np.repeat(v.mean(1, keepdims=True), 3, 1),
                               atol=1e-12)
    if torch is not None:
        expected = torch.nn.functional.scaled_dot_product_attention(
            torch.tensor(q), torch.tensor(k), torch.tensor(v)).numpy()
        np.testing.assert_allclose(out.detach().numpy(), expected, atol=1e-12)
    out.sum().backward()  # uniform weights: each key gets 1/5 of each of the 3 queries
    np.testing.assert_allclose(value.grad.numpy(), np.full((2, 5, 4), 3 / 5))
    empty = F.scaled_dot_product_attention(minitorch.zeros(2, 3, 0), minitorch.zeros(2, 5, 0),
                                           minitorch.zeros(2, 5, 0))
    assert empty.shape == (2, 3, 0)


@pytest.mark.parametrize("embed_dim, num_heads", [(0, 1), (4, 0), (-4, 2), (4, 8), (6, 4)])
def test_multihead_attention_refuses_empty_or_uneven_heads(embed_dim, num_heads):
    if torch is not None:
        with pytest.raises((ValueError, AssertionError)):
            torch.nn.MultiheadAttention(embed_dim, num_heads)
    with pytest.raises(ValueError, match=f"embed_dim.*{embed_dim}.*num_heads.*{num_heads}"):
        minitorch.nn.MultiheadAttention(embed_dim, num_heads)
