"""ops/linalg.py's LinearReLU (relu(x Wᵀ + b) as one node: the GEMM, then bias + ReLU in one
pass) through nn/functional.py's _linear_relu, as the Transformer's feed-forward blocks call it.

It equals the unfused relu(linear(x, W, b)) bit for bit, forward and every gradient, float32 and
float64, one and two threads, on both backends, small (numpy's bias add) and large (the C
kernels') sizes; it gradchecks and differentiates twice; the Transformer layers give the same
values with it as without it; and it matches PyTorch."""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch import backends, nn
from minitorch.autograd import gradcheck, gradgradcheck


@pytest.fixture
def threads():
    before = minitorch.get_num_threads()
    yield minitorch.set_num_threads
    minitorch.set_num_threads(before)


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
