"""The engine's in-place gradient accumulation (autograd/engine.py's _summed): where a node's
output is used more than once, the gradients reaching it are added into the first one's memory
when nothing else can see it, else into a fresh array. Either way the sums are those of the
plain a + b, bit for bit (checked against backward with create_graph=True, which never adds in
place), and a gradient something else holds (AddBackward's, handed to both inputs; one the
caller passed in; an earlier .grad) is never written."""
import numpy as np
import pytest

import minitorch
from minitorch import nn
from minitorch.autograd import engine


@pytest.fixture
def count_in_place(monkeypatch):
    """Counts the sums _summed made in place (the result is the tensor already in the slot)."""
    counts = {"in place": 0, "fresh": 0}
    summed = engine._summed

    def counting(grads, index, grad):
        before = id(grads[index])  # an id, not a reference: a reference would block the add
        result = summed(grads, index, grad)
        counts["in place" if id(result) == before else "fresh"] += 1
        return result
    monkeypatch.setattr(engine, "_summed", counting)
    return counts


def grads_both_ways(fn, *arrays):
    """The inputs' gradients of fn(*inputs).sum() from backward(), and from autograd.grad with
    create_graph=True (no in-place sums)."""
    results = []
    for create_graph in (False, True):
        inputs = [minitorch.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*inputs).sum()
        if create_graph:
            results.append([g.detach().numpy() for g in
                            minitorch.autograd.grad(out, inputs, create_graph=True)])
        else:
            out.backward()
            results.append([t.grad.numpy() for t in inputs])
    return results


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_residual_blocks_sum_in_place_and_equal_the_plain_sums(dtype, count_in_place):
    minitorch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=24, dropout=0.0, batch_first=True,
                                       dtype=minitorch.float64 if dtype == np.float64 else None)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 16)).astype(dtype)

    def fn(x):
        return layer(layer(x)) * 1.5
    plain, graph = grads_both_ways(fn, x)
    assert count_in_place["in place"] > 0
    for a, b in zip(plain, graph):
        np.testing.assert_array_equal(a, b)


def test_shared_and_held_gradients_are_never_written(count_in_place):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 5)) for _ in range(2)]

    def fn(x, y):
        p, q = x * 1.5, y * 2.5
        s = p + q            # AddBackward hands one gradient to p and to q
        t = s * p + s * q    # ... each of which is used again
        return t + t.exp() + (p + p)  # p + p: the same gradient twice into one slot
    plain, graph = grads_both_ways(fn, *arrays)
    for a, b in zip(plain, graph):
        np.testing.assert_array_equal(a, b)
    # a gradient the caller passes in, reaching one output used twice, stays as it was
    x = minitorch.tensor(arrays[0], requires_grad=True)
    y = x * 2.0
    given = minitorch.tensor(np.ones((4, 5)))
    minitorch.autograd.backward([y, y], [given, given * 3.0])
    np.testing.assert_array_equal(given.numpy(), np.ones((4, 5)))
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 5), 8.0))


def test_a_view_of_a_kept_array_is_never_written(count_in_place):
    """Two gradients that are views of one array (a split's backward) are not written."""
    x = minitorch.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    a, b = x.unbind(0)[0], x.unbind(0)[1]
    h = a * b
    (h + h * h).sum().backward()
    xa, xb = np.arange(4.0), np.arange(4.0, 8.0)
    want = np.zeros((3, 4))
    want[0] = xb * (1 + 2 * xa * xb)
    want[1] = xa * (1 + 2 * xa * xb)
    np.testing.assert_allclose(x.grad.numpy(), want)
