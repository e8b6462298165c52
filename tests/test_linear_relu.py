"""ops/linalg.py's LinearReLU (relu(x Wᵀ + b) as one node: the GEMM, then bias + ReLU in one
pass) through nn/functional.py's _linear_relu, and FeedForwardReLU (linear2 after it, the
Transformer's feed-forward block without dropout, one node) through _feed_forward_relu.

Each equals the unfused calls (relu(linear(x, W, b)), and linear2 of that) bit for bit, forward
and every gradient, float32 and float64, one and two threads, on both backends, small (numpy's
bias add) and large (the C kernels') sizes; each gradchecks and differentiates twice; the
Transformer layers give the same values with them as without them; and they match PyTorch."""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch import backends, nn
from minitorch.autograd import gradcheck, gradgradcheck


BACKENDS = ["numpy"] + (["c"] if "c" in backends.available else [])


def run(fn, x_array, w_array, b_array, upstream):
    x, w, b = (minitorch.tensor(a, requires_grad=True) for a in (x_array, w_array, b_array))
    out = fn(x, w, b)
    (out * minitorch.tensor(upstream)).sum().backward()
    return out, [out.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()]


def unfused(x, w, b):
    return F.relu(F.linear(x, w, b))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("x_shape,out_features", [((5, 3), 4), ((2, 7, 16), 33),
                                                  ((4, 64, 48), 300), ((6, 0), 5)])
def test_linear_relu_equals_relu_of_linear(backend, dtype, count, x_shape, out_features,
                                           threads):
    threads(count)
    rng = np.random.default_rng(out_features)
    x = rng.standard_normal(x_shape).astype(dtype)
    w = rng.standard_normal((out_features, x_shape[-1])).astype(dtype)
    b = rng.standard_normal(out_features).astype(dtype)
    upstream = rng.standard_normal(x_shape[:-1] + (out_features,)).astype(dtype)
    with backends.using(backend):
        fused_out, fused = run(F._linear_relu, x, w, b, upstream)
        _, plain = run(unfused, x, w, b, upstream)
    assert fused_out.grad_fn.name() == "LinearReLUBackward"
    for f, p in zip(fused, plain):
        assert f.dtype == dtype
        np.testing.assert_array_equal(f, p)


def test_linear_relu_gradchecks_and_differentiates_twice():
    rng = np.random.default_rng(0)
    inputs = (minitorch.tensor(rng.standard_normal((2, 3, 4)), requires_grad=True),
              minitorch.tensor(rng.standard_normal((5, 4)), requires_grad=True),
              minitorch.tensor(rng.standard_normal(5), requires_grad=True))
    assert gradcheck(F._linear_relu, inputs)
    assert gradgradcheck(F._linear_relu, inputs)


def test_other_arguments_take_the_two_calls():
    x = minitorch.randn(3, 4, requires_grad=True)
    w = minitorch.randn(5, 4, requires_grad=True)
    for args in ((x, w, None), (x.double(), w, minitorch.zeros(5)), (x.half(), w.half(), None),
                 (x, w, minitorch.zeros(1))):
        out = F._linear_relu(*args)
        assert out.grad_fn.name() != "LinearReLUBackward"
        np.testing.assert_array_equal(out.detach().float().numpy(),
                                      unfused(*args).detach().float().numpy())


def layer_values(layer, inputs):
    for p in layer.parameters():
        p.grad = None
    out = layer(*inputs)
    (out * out).sum().backward()
    return [out.detach().numpy()] + [p.grad.numpy() for p in layer.parameters()]


@pytest.mark.parametrize("decoder", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_layers_equal_their_unfused_feed_forward(decoder, norm_first):
    minitorch.manual_seed(0)
    kind = nn.TransformerDecoderLayer if decoder else nn.TransformerEncoderLayer
    layer = kind(16, 2, dim_feedforward=40, dropout=0.0, batch_first=True,
                 norm_first=norm_first)
    x, memory = minitorch.randn(3, 5, 16), minitorch.randn(3, 6, 16)
    inputs = (x, memory) if decoder else (x,)
    fused = layer_values(layer, inputs)
    seen = []
    layer.linear1.register_forward_hook(lambda module, args, out: seen.append(out.grad_fn))
    plain = layer_values(layer, inputs)  # a hook on linear1: the module call, then F.relu
    assert seen and seen[0].name() == "LinearBackward"
    for f, p in zip(fused, plain):
        np.testing.assert_array_equal(f, p)


def test_linear_relu_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((4, 6, 8)), rng.standard_normal((10, 8)),
              rng.standard_normal(10)]
    ours = [minitorch.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = F._linear_relu(*ours)
    ref = torch.relu(torch.nn.functional.linear(*theirs))
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)


def feed_forward_values(fused, arrays, upstream):
    tensors = [minitorch.tensor(a, requires_grad=True) for a in arrays]
    if fused:
        out = F._feed_forward_relu(*tensors)
        assert out.grad_fn.name() == "FeedForwardReLUBackward"
    else:
        x, w1, b1, w2, b2 = tensors
        out = F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)
    (out * minitorch.tensor(upstream)).sum().backward()
    return [out.detach().numpy()] + [t.grad.numpy() for t in tensors]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("x_shape,hidden,out_features", [((5, 3), 4, 2), ((4, 64, 48), 300, 40),
                                                         ((6, 0), 5, 3)])
def test_feed_forward_relu_equals_the_calls_one_by_one(backend, dtype, count, x_shape, hidden,
                                                       out_features, threads):
    threads(count)
    rng = np.random.default_rng(hidden)
    arrays = [rng.standard_normal(shape).astype(dtype) for shape in
              (x_shape, (hidden, x_shape[-1]), (hidden,), (out_features, hidden),
               (out_features,))]
    upstream = rng.standard_normal(x_shape[:-1] + (out_features,)).astype(dtype)
    with backends.using(backend):
        fused = feed_forward_values(True, arrays, upstream)
        plain = feed_forward_values(False, arrays, upstream)
    for f, p in zip(fused, plain):
        assert f.dtype == dtype
        np.testing.assert_array_equal(f, p)


def test_feed_forward_relu_gradchecks_and_differentiates_twice():
    rng = np.random.default_rng(2)
    inputs = tuple(minitorch.tensor(rng.standard_normal(shape), requires_grad=True)
                   for shape in ((2, 3, 4), (5, 4), (5,), (3, 5), (3,)))
    assert gradcheck(F._feed_forward_relu, inputs)
    assert gradgradcheck(F._feed_forward_relu, inputs)


def test_feed_forward_block_takes_each_node_where_it_applies():
    """Dropout at work, or a hook on linear2, keep the block in pieces (LinearReLU where it
    still applies); every variant gives the plain values."""
    minitorch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=12, dropout=0.0, batch_first=True)
    x = minitorch.randn(2, 3, 8)
    fused = layer_values(layer, (x,))
    seen = []
    handle = layer.linear2.register_forward_hook(
        lambda module, args, out: seen.append(args[0].grad_fn.name()))
    assert all(np.array_equal(f, p) for f, p in zip(fused, layer_values(layer, (x,))))
    assert seen == ["LinearReLUBackward"]
    handle.remove()
    layer.dropout.p = 0.5
    seen_dropout = []
    layer.dropout.register_forward_hook(
        lambda module, args, out: seen_dropout.append(args[0].grad_fn.name()))
    layer(x)
    assert seen_dropout == ["LinearReLUBackward"]


def test_feed_forward_relu_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape) for shape in ((4, 6, 8), (10, 8), (10,), (7, 10), (7,))]
    ours = [minitorch.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = F._feed_forward_relu(*ours)
    x, w1, b1, w2, b2 = theirs
    ref = torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(x, w1, b1)), w2, b2)
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-11)
