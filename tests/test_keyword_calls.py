"""PyTorch programs call ops by keyword and through their less common overloads: each here."""
import numpy as np
import pytest

import minitorch as mt


def _values(t):
    return np.asarray(t.detach().numpy())


def test_binary_ops_take_input_and_other_by_keyword():
    x, y = mt.tensor([1.0, 4.0]), mt.tensor([2.0, 3.0])
    np.testing.assert_array_equal(_values(mt.add(input=x, other=y, alpha=2)), [5.0, 10.0])
    np.testing.assert_array_equal(_values(mt.sub(input=x, other=y)), [-1.0, 1.0])
    np.testing.assert_array_equal(_values(mt.div(input=x, other=y, rounding_mode="floor")),
                                  [0.0, 1.0])
    np.testing.assert_array_equal(_values(x.mul(other=y)), [2.0, 12.0])
    np.testing.assert_array_equal(_values(mt.where(x > 2, input=x, other=y)), [2.0, 4.0])
    assert mt.lt(input=x, other=y).tolist() == [True, False]
    np.testing.assert_array_equal(_values(mt.matmul(input=x, other=y)), 14.0)


def test_max_and_min_take_other():
    x, y = mt.tensor([1.0, 5.0]), mt.tensor([3.0, 2.0])
    assert mt.max(x, other=y).tolist() == [3.0, 5.0] == mt.max(x, y).tolist()
    assert x.min(other=y).tolist() == [1.0, 2.0]
    values, indices = mt.max(mt.tensor([[1.0, 7.0]]), dim=1)
    assert values.tolist() == [7.0] and indices.tolist() == [1]


def test_split_names_its_argument_as_pytorch_does():
    a = mt.arange(6.0).reshape(2, 3)
    assert [t.shape[1] for t in a.split(split_size=2, dim=1)] == [2, 1]
    assert len(mt.split(tensor=a, split_size_or_sections=[1, 1])) == 2


def test_swapaxes_and_swapdims():
    a = mt.zeros(2, 3, 4)
    assert a.swapaxes(axis0=0, axis1=2).shape == (4, 3, 2)
    assert mt.swapdims(a, 0, 1).shape == (3, 2, 4)


def test_view_as_another_dtype_reads_the_same_bytes():
    x = mt.tensor([1.0, -2.0], dtype=mt.float32)
    bits = x.view(mt.int32)
    assert bits.dtype == mt.int32
    assert bits.tolist() == np.array([1.0, -2.0], np.float32).view(np.int32).tolist()
    assert x.view(mt.int16).shape == (4,)
    assert x.view(size=(2, 1)).shape == (2, 1)
    assert x.view(dtype=mt.uint8).shape == (8,)
    with pytest.raises(RuntimeError, match="0-d"):
        mt.tensor(1.0).view(mt.float64)


def test_softmax_casts_to_dtype_first():
    out = mt.softmax(mt.tensor([1.0, 2.0]), 0, mt.float64)
    assert out.dtype == mt.float64
    assert mt.log_softmax(mt.tensor([1.0, 2.0]), dim=0, dtype=mt.float64).dtype == mt.float64


def test_copy_takes_other_and_non_blocking():
    x = mt.zeros(2)
    x.copy_(other=mt.tensor([1.0, 2.0]), non_blocking=True)
    assert x.tolist() == [1.0, 2.0]


def test_multinomial_arange_and_from_dlpack_keywords():
    draws = mt.multinomial(input=mt.tensor([0.0, 1.0]), num_samples=3, replacement=True,
                           generator=mt.Generator().manual_seed(0))
    assert draws.tolist() == [1, 1, 1]
    assert mt.arange(start=1, end=4, step=2).tolist() == [1, 3]
    source = np.arange(3.0)
    shared, copied = mt.from_dlpack(source), mt.from_dlpack(source, copy=True, device="cpu")
    source[0] = 9.0
    assert shared.tolist()[0] == 9.0 and copied.tolist()[0] == 0.0
