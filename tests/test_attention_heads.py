"""ops/fused.py's split_heads and merge_heads (multi-head attention's layout changes as one node
each) give bit for bit what the plain reshape/permute/contiguous/unbind and transpose/reshape
chains give, forward and backward, float32 and float64, on one and on two threads; they
gradcheck, and differentiate twice as the chains do."""
import numpy as np
import pytest

import minitorch
from minitorch.autograd import gradcheck
from minitorch.ops import _threads
from minitorch.ops.fused import merge_heads, split_heads


def plain_split(x, parts, num_heads):
    n, length, width = x.shape
    heads = x.reshape(n, length, parts, num_heads, width // (parts * num_heads))
    return heads.permute(2, 0, 3, 1, 4).contiguous().unbind(0)


def plain_merge(x):
    n, heads, length, d = x.shape
    return x.transpose(1, 2).reshape(n, length, heads * d)


def run_split(split, x_array, parts, num_heads, upstream, used):
    """The parts, and x's gradient for sum(part_i * upstream_i) over the parts in ``used``."""
    x = minitorch.tensor(x_array, requires_grad=True)
    outs = split(x, parts, num_heads)
    sum(((outs[i] * minitorch.tensor(upstream[i])).sum() for i in used)).backward()
    return [o.detach().numpy() for o in outs], x.grad.numpy()


# (N, L, parts, H, D): the last is large enough to be split over two threads
SPLIT_SHAPES = [(2, 3, 3, 2, 4), (1, 5, 1, 4, 3), (3, 4, 2, 1, 5), (8, 32, 3, 4, 32)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SPLIT_SHAPES)
@pytest.mark.parametrize("count", [1, 2])
def test_split_heads_equals_the_plain_chain(shape, dtype, count, threads):
    threads(count)
    n, length, parts, heads, d = shape
    rng = np.random.default_rng(sum(shape))
    x = rng.standard_normal((n, length, parts * heads * d)).astype(dtype)
    upstream = [rng.standard_normal((n, heads, length, d)).astype(dtype) for _ in range(parts)]
    for used in (range(parts), [parts - 1]):  # every part, and one (the others' grads: zeros)
        fused_outs, fused_grad = run_split(split_heads, x, parts, heads, upstream, used)
        plain_outs, plain_grad = run_split(plain_split, x, parts, heads, upstream, used)
        for f, p in zip(fused_outs, plain_outs):
            assert f.flags.c_contiguous and f.dtype == dtype
            np.testing.assert_array_equal(f, p)
        assert fused_grad.dtype == dtype
        np.testing.assert_array_equal(fused_grad, plain_grad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 1, 7, 2), (8, 8, 32, 32)])
@pytest.mark.parametrize("count", [1, 2])
def test_merge_heads_equals_the_plain_chain(shape, dtype, count, threads):
    threads(count)
    rng = np.random.default_rng(sum(shape))
    x_array = rng.standard_normal(shape).astype(dtype)
    n, heads, length, d = shape
    upstream = minitorch.tensor(rng.standard_normal((n, length, heads * d)).astype(dtype))
    results = []
    for merge in (merge_heads, plain_merge):
        x = minitorch.tensor(x_array, requires_grad=True)
        out = merge(x)
        (out * upstream).sum().backward()
        results.append((out.detach().numpy(), x.grad.numpy()))
    (fused_out, fused_grad), (plain_out, plain_grad) = results
    assert fused_out.shape == (n, length, heads * d) and fused_out.dtype == dtype
    np.testing.assert_array_equal(fused_out, plain_out)
    np.testing.assert_array_equal(fused_grad, plain_grad)


def test_the_copies_are_split_over_two_threads(threads, monkeypatch):
    threads(2)
    parts_seen = []
    real = _threads.in_chunks

    def counting(fn, out, *inputs):
        result = real(lambda o, *a: (parts_seen.append(len(o)), fn(o, *a)), out, *inputs)
        return result
    monkeypatch.setattr("minitorch.ops.fused.in_chunks", counting)
    x = minitorch.randn(8, 64, 3 * 4 * 32, requires_grad=True)
    q, k, v = split_heads(x, 3, 4)
    merge_heads(q + k + v).sum().backward()
    assert parts_seen == [4, 4] * 4  # split fwd, merge fwd, merge bwd, split bwd: halves of N=8


def test_gradcheck_float64():
    rng = np.random.default_rng(1)
    x = minitorch.tensor(rng.standard_normal((2, 3, 2 * 2 * 3)), requires_grad=True)
    assert gradcheck(lambda t: split_heads(t, 2, 2), (x,))
    y = minitorch.tensor(rng.standard_normal((2, 2, 3, 3)), requires_grad=True)
    assert gradcheck(merge_heads, (y,))
    assert gradcheck(lambda t: merge_heads(split_heads(t, 2, 2)[1] * 2.0), (x,))


def test_second_derivatives_match_the_plain_chain():
    rng = np.random.default_rng(2)
    x_array = rng.standard_normal((2, 3, 2 * 2 * 4))
    results = []
    for split, merge in ((split_heads, merge_heads), (plain_split, plain_merge)):
        x = minitorch.tensor(x_array, requires_grad=True)
        q, k = split(x, 2, 2)
        y = (merge(q * k) ** 2).sum()
        (g,) = minitorch.autograd.grad([y], [x], create_graph=True)
        (gg,) = minitorch.autograd.grad([(g * g).sum()], [x])
        results.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-12)
