"""Property tests (hypothesis) of broadcasting and indexing against numpy.

Broadcasting: for random broadcastable shape pairs, ``a op b`` equals numpy's, and the gradient
of ``sum(a op b)`` w.r.t. each input equals the numpy-computed elementwise derivative summed over
the broadcast dims. Indexing: random basic indices (ints, slices with steps, None, Ellipsis) and
advanced ones (integer arrays, boolean masks) give numpy's result, and the backward of
``sum(w * x[index])`` is ``np.add.at`` of ``w`` into zeros (repeated indices accumulate).
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minitorch as mt

SETTINGS = settings(max_examples=60, deadline=None)

# d(a op b)/da and d(a op b)/db, elementwise, in numpy.
BINARY = {
    "add": (np.add, lambda a, b: np.ones_like(a * b), lambda a, b: np.ones_like(a * b)),
    "sub": (np.subtract, lambda a, b: np.ones_like(a * b), lambda a, b: -np.ones_like(a * b)),
    "mul": (np.multiply, lambda a, b: b * np.ones_like(a), lambda a, b: a * np.ones_like(b)),
    "div": (np.divide, lambda a, b: 1 / b * np.ones_like(a), lambda a, b: -a / b ** 2),
    "pow": (np.power, lambda a, b: b * a ** (b - 1), lambda a, b: a ** b * np.log(a)),
    "maximum": (np.maximum, lambda a, b: (a > b) * 1.0, lambda a, b: (b > a) * 1.0),
}
MINITORCH = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "maximum": mt.maximum}


def _reduce_to(grad, shape):
    """What unbroadcasting must do, computed independently: sum over broadcast dims."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    for i, n in enumerate(shape):
        if n == 1 and grad.shape[i] != 1:
            grad = grad.sum(axis=i, keepdims=True)
    return grad


@st.composite
def broadcastable_pair(draw):
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=4,
                                                    min_side=0, max_side=3))
    a_shape, b_shape = shapes.input_shapes
    # Distinct values keep maximum away from ties; positive values keep pow real.
    elements = st.floats(0.5, 2.0, allow_nan=False, width=64)
    a = draw(hnp.arrays(np.float64, a_shape, elements=elements))
    b = draw(hnp.arrays(np.float64, b_shape, elements=elements))
    return a, np.asarray(b + 1e-3 * np.arange(b.size).reshape(b.shape) + 0.01)


@SETTINGS
@given(pair=broadcastable_pair(), op=st.sampled_from(sorted(BINARY)))
def test_binary_broadcast_value_and_gradient(pair, op):
    a_np, b_np = pair
    np_fn, da, db = BINARY[op]
    a, b = mt.tensor(a_np, requires_grad=True), mt.tensor(b_np, requires_grad=True)
    out = MINITORCH[op](a, b)
    expected = np_fn(a_np, b_np)
    assert tuple(out.shape) == expected.shape
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12)
    out.sum().backward()
    full = np.broadcast_shapes(a_np.shape, b_np.shape)
    expected_da = _reduce_to(np.broadcast_to(da(a_np, b_np), full), a_np.shape)
    expected_db = _reduce_to(np.broadcast_to(db(a_np, b_np), full), b_np.shape)
    assert tuple(a.grad.shape) == a_np.shape and tuple(b.grad.shape) == b_np.shape
    np.testing.assert_allclose(a.grad.numpy(), expected_da, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), expected_db, rtol=1e-10, atol=1e-12)


@SETTINGS
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=3,
                                                min_side=1, max_side=3),
       data=st.data())
def test_non_broadcastable_shapes_raise(shapes, data):
    a_shape = shapes.input_shapes[0]
    dim = data.draw(st.integers(0, len(a_shape) - 1))
    if a_shape[dim] == 1:
        return
    bad = list(a_shape)
    bad[dim] = a_shape[dim] + 1  # neither equal nor 1: cannot broadcast
    with pytest.raises(ValueError, match=r"shape of input .* shape of other"):
        mt.zeros(a_shape) + mt.zeros(bad)


@st.composite
def basic_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=1, max_side=4))
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return shape, index


@st.composite
def advanced_index(draw):
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    kind = draw(st.sampled_from(["ints", "ints_on_dim1", "two_arrays", "mask", "mask_prefix"]))
    if kind == "ints":
        idx = draw(hnp.arrays(np.int64, draw(hnp.array_shapes(min_dims=1, max_dims=2,
                                                               max_side=4)),
                              elements=st.integers(-shape[0], shape[0] - 1)))
        return shape, idx
    if kind == "ints_on_dim1" and len(shape) >= 2:
        idx = draw(hnp.arrays(np.int64, (draw(st.integers(0, 5)),),
                              elements=st.integers(-shape[1], shape[1] - 1)))
        return shape, (slice(None), idx)
    if kind == "two_arrays" and len(shape) >= 2:
        n = draw(st.integers(1, 4))
        rows = draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, shape[0] - 1)))
        cols = draw(hnp.arrays(np.int64, (1, n), elements=st.integers(0, shape[1] - 1)))
        return shape, (rows, cols)
    if kind == "mask_prefix":
        return shape, draw(hnp.arrays(np.bool_, shape[:1]))
    return shape, draw(hnp.arrays(np.bool_, shape))


def _to_minitorch_index(index):
    items = index if isinstance(index, tuple) else (index,)
    converted = tuple(mt.tensor(i) if isinstance(i, np.ndarray) else i for i in items)
    return converted if isinstance(index, tuple) else converted[0]


def _check_index(shape, index):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(shape)
    expected = x_np[index]
    x = mt.tensor(x_np, requires_grad=True)
    out = x[_to_minitorch_index(index)]
    assert tuple(out.shape) == expected.shape
    np.testing.assert_array_equal(out.detach().numpy(), expected)
    weights = rng.standard_normal(expected.shape)
    (out * mt.tensor(weights)).sum().backward()
    expected_grad = np.zeros(shape)
    np.add.at(expected_grad, index, weights)
    np.testing.assert_allclose(x.grad.numpy(), expected_grad, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(case=basic_index())
def test_basic_indexing_matches_numpy_and_backward_scatters(case):
    _check_index(*case)


@SETTINGS
@given(case=advanced_index())
def test_advanced_indexing_matches_numpy_and_backward_scatter_adds(case):
    _check_index(*case)


@SETTINGS
@given(case=basic_index())
def test_basic_indexing_is_a_view(case):
    shape, index = case
    x = mt.zeros(shape)
    out = x[index]
    if out.numel():
        assert np.shares_memory(out.numpy(), x.numpy())
