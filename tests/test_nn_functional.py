"""Gradient checks (float64, finite differences) and behaviour of minitorch.nn.functional:
linear, activations, dropout, layer_norm, embedding, and the losses, on every kernel backend,
with broadcasting, non-contiguous inputs and edge shapes (size-1 dims, empty batches).
"""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck


def rand(*shape, requires_grad=True, seed=0):
    rng = np.random.default_rng(seed + sum(shape))
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- linear

def test_linear_gradcheck_batched_and_broadcast(backend):
    x, w, b = rand(2, 3, 4), rand(5, 4, seed=1), rand(5, seed=2)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(lambda x, w: F.linear(x, w), (rand(4, seed=3), w))  # 1-d input


def test_linear_gradcheck_non_contiguous_input(backend):
    base = rand(4, 2, 3)
    x = base.detach().transpose(0, 2).requires_grad_()  # (3, 2, 4), not contiguous
    assert not x.is_contiguous()
    assert gradcheck(F.linear, (x, rand(2, 4, seed=1), rand(2, seed=2)))


def test_linear_gradgradcheck(backend):
    assert gradgradcheck(F.linear, (rand(2, 3), rand(2, 3, seed=1), rand(2, seed=2)))


def test_linear_empty_batch_and_shape_error(backend):
    out = F.linear(mt.zeros(0, 3), mt.ones(2, 3))
    assert tuple(out.shape) == (0, 2)
    with pytest.raises(ValueError, match="in_features=3"):
        F.linear(mt.zeros(2, 4), mt.ones(2, 3))


# ----------------------------------------------------------------------------- activations

@pytest.mark.parametrize("fn", [F.relu, F.gelu, lambda x: F.gelu(x, approximate="tanh"),
                                F.tanh, F.sigmoid, lambda x: F.softmax(x, dim=1),
                                lambda x: F.log_softmax(x, dim=0), lambda x: F.softmax(x, -1)])
def test_activation_gradcheck(backend, fn):
    x = rand(2, 3, 1)
    x = x.detach().expand(2, 3, 2).contiguous().requires_grad_()
    with mt.no_grad():
        x._data[0, 0, 0] = 0.3  # keep relu away from its kink at 0
    assert gradcheck(fn, (x,))


@pytest.mark.parametrize("shape,implied", [((), 0), ((3,), 0), ((2, 3), 1), ((2, 3, 4), 0),
                                           ((2, 3, 4, 2), 1)])
def test_softmax_without_dim_warns_and_picks_pytorchs_dim(shape, implied):
    x = rand(*shape, requires_grad=False)
    for fn, op in ((F.softmax, mt.softmax), (F.log_softmax, mt.log_softmax)):
        with pytest.warns(UserWarning, match="Implicit dimension choice") as record:
            out = fn(x)
        assert record[0].filename == __file__  # the warning points at the caller's line
        np.testing.assert_array_equal(out.numpy(), op(x, implied).numpy())


# ----------------------------------------------------------------------------- dropout

def test_dropout_identity_paths(backend):
    x = rand(3, 4)
    assert F.dropout(x, 0.0) is x
    assert F.dropout(x, 0.7, training=False) is x
    assert gradcheck(lambda t: F.dropout(t, 0.0), (x,))
    assert not F.dropout(x, 1.0).detach().numpy().any()


def test_dropout_train_gradient_is_mask_over_keep_probability(backend):
    p = 0.4
    x = rand(50, 40)
    mt.manual_seed(7)
    y = F.dropout(x, p)
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), kept / (1 - p))
    np.testing.assert_allclose(y.detach().numpy(), x.detach().numpy() * kept / (1 - p))
    assert abs(kept.mean() - (1 - p)) < 0.05
    mt.manual_seed(7)  # the same seed draws the same mask
    np.testing.assert_array_equal(F.dropout(x, p).detach().numpy(), y.detach().numpy())
    mt.manual_seed(3)

    def fixed_mask(t):
        mt.manual_seed(3)
        return F.dropout(t, p)
    assert gradcheck(fixed_mask, (rand(3, 4),))


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_dropout_keeps_one_minus_p_scaled_in_the_input_dtype(p, dtype):
    """Each element is kept with probability 1 - p (within 5 standard deviations over 10^5
    draws) and scaled by 1/(1-p) rounded once to the input's dtype; odd counts, 0-d and empty
    inputs take their own draws."""
    x = mt.ones(317, 331, dtype=dtype)  # an odd count: the last draw's second half unused
    y = F.dropout(x, p).numpy()
    scale = np.dtype(y.dtype).type(1.0 / (1.0 - p))
    assert y.dtype == np.dtype(dtype.name) and set(np.unique(y).tolist()) <= {0.0, float(scale)}
    kept, n = (y != 0).mean(), y.size
    assert abs(kept - (1 - p)) < 5 * (p * (1 - p) / n) ** 0.5
    assert F.dropout(mt.ones(0, 4, dtype=dtype), p).shape == (0, 4)
    assert F.dropout(mt.tensor(2.0, dtype=dtype), p).numpy() in (0.0, 2 * scale)
    mt.manual_seed(11)
    first = F.dropout(x, p).numpy()
    mt.manual_seed(11)
    np.testing.assert_array_equal(F.dropout(x, p).numpy(), first)
    assert (F.dropout(x, p).numpy() != first).any()  # the stream moves on


def test_dropout_rejects_bad_p():
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(mt.ones(2), 1.5)


# ----------------------------------------------------------------------------- layer norm

@pytest.mark.parametrize("affine", ["both", "weight", "none", "bias_only"])
def test_layer_norm_gradcheck(backend, affine):
    x = rand(2, 3, 4)
    w = rand(4, seed=1) if affine in ("both", "weight") else None
    b = rand(4, seed=2) if affine in ("both", "bias_only") else None
    args = [t for t in (x, w, b) if t is not None]

    def fn(*ts):
        it = iter(ts[1:])
        ww = next(it) if w is not None else None
        bb = next(it) if b is not None else None
        return F.layer_norm(ts[0], 4, ww, bb)
    assert gradcheck(fn, tuple(args))


def test_layer_norm_multi_dim_normalized_shape(backend):
    x, w, b = rand(2, 3, 4), rand(3, 4, seed=1), rand(3, 4, seed=2)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (3, 4), w, b), (x, w, b))
    y = F.layer_norm(x, (3, 4)).detach().numpy()
    np.testing.assert_allclose(y.reshape(2, -1).mean(1), 0, atol=1e-12)
    np.testing.assert_allclose(y.reshape(2, -1).var(1), 1, rtol=1e-4)


def test_layer_norm_gradgradcheck_and_non_contiguous(backend):
    x = rand(4, 3).detach().mT.requires_grad_()
    assert gradgradcheck(lambda x, w, b: F.layer_norm(x, [4], w, b),
                         (x, rand(4, seed=1), rand(4, seed=2)))



def test_layer_norm_over_one_dim_is_one_node_on_the_parameters():
    # The Transformer's LayerNorms: no reshape node between the op and its weight and bias
    # (each would cost a forward and a backward call every step), and the same gradients.
    x, w, b = rand(2, 3, 4), rand(4, seed=1), rand(4, seed=2)
    y = F.layer_norm(x, 4, w, b)
    assert y.grad_fn.name() == "LayerNormBackward"
    assert y.grad_fn.inputs[1] is w and y.grad_fn.inputs[2] is b
    y.backward(rand(2, 3, 4, seed=3).detach())
    grads = [t.grad.numpy().copy() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    flat = F.layer_norm(x.reshape(6, 4), (4,), w.reshape(4), b.reshape(4))  # reshape nodes
    flat.reshape(2, 3, 4).backward(rand(2, 3, 4, seed=3).detach())
    for t, grad in zip((x, w, b), grads):
        np.testing.assert_array_equal(t.grad.numpy(), grad)

def test_layer_norm_shape_errors():
    with pytest.raises(ValueError, match="normalized_shape"):
        F.layer_norm(mt.ones(2, 3), (4,))
    with pytest.raises(ValueError, match="weight must have shape"):
        F.layer_norm(mt.ones(2, 3), 3, mt.ones(4))


# ----------------------------------------------------------------------------- embedding

def test_embedding_gradcheck_and_padding_row_gets_no_gradient(backend):
    ids = mt.tensor([[0, 2, 2], [3, 2, 0]])
    w = rand(4, 3)
    assert gradcheck(lambda w: F.embedding(ids, w), (w,))
    # With padding_idx the padding row is deliberately cut from the graph (PyTorch's rule):
    # the other rows still match finite differences.
    assert gradcheck(lambda w: F.embedding(ids, w, padding_idx=2)[ids != 2], (w,))
    F.embedding(ids, w, padding_idx=2).sum().backward()
    grad = w.grad.numpy()
    assert not grad[2].any()
    np.testing.assert_allclose(grad[0], 2.0)  # index 0 used twice: contributions add
    np.testing.assert_allclose(grad[1], 0.0)
    np.testing.assert_allclose(grad[3], 1.0)


def test_embedding_gradgradcheck(backend):
    ids = mt.tensor([1, 1, 0])
    assert gradgradcheck(lambda w: F.embedding(ids, w) ** 2, (rand(3, 2),))


def test_embedding_index_errors():
    with pytest.raises(IndexError, match="index 5 .*num_embeddings=4"):
        F.embedding(mt.tensor([1, 5]), mt.ones(4, 2))
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(mt.tensor([-1]), mt.ones(4, 2))
    with pytest.raises(TypeError, match="int64"):
        F.embedding(mt.tensor([1.0]), mt.ones(4, 2))


# ----------------------------------------------------------------------------- losses

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.25])
def test_cross_entropy_gradcheck(backend, reduction, smoothing):
    target = mt.tensor([1, -100, 3, 0])
    assert gradcheck(lambda x: F.cross_entropy(x, target, reduction=reduction,
                                               label_smoothing=smoothing), (rand(4, 5),))


@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_spatial_gradcheck(backend, reduction):
    target = mt.tensor([[1, 0, 7], [2, 2, 1]])
    out = F.cross_entropy(rand(2, 3, 3), target, ignore_index=7, reduction=reduction)
    assert tuple(out.shape) == ((2, 3) if reduction == "none" else ())
    assert gradcheck(lambda x: F.cross_entropy(x, target, ignore_index=7, reduction=reduction,
                                               label_smoothing=0.1), (rand(2, 3, 3),))


def test_cross_entropy_gradgradcheck_and_weights(backend):
    target = mt.tensor([1, 0, 2])
    assert gradgradcheck(lambda x: F.cross_entropy(x, target, label_smoothing=0.1),
                         (rand(3, 3),))
    w = mt.tensor([0.5, 2.0, 1.0], dtype=mt.float64)
    assert gradcheck(lambda x: F.cross_entropy(x, target, weight=w), (rand(3, 3),))
    assert gradcheck(lambda x: F.cross_entropy(x, target, weight=w, label_smoothing=0.1),
                     (rand(3, 3),))


def test_cross_entropy_value_and_all_ignored_mean_is_zero(backend):
    x = mt.tensor([[0.0, 0.0], [1.0, 3.0]], dtype=mt.float64)
    loss = F.cross_entropy(x, mt.tensor([0, 1]))
    want = (np.log(2) + np.log(1 + np.exp(-2))) / 2
    assert loss.item() == pytest.approx(want, rel=1e-12)
    empty = F.cross_entropy(x, mt.tensor([-100, -100]))
    assert empty.item() == 0.0  # PyTorch: NaN


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match="target must have shape"):
        F.cross_entropy(mt.ones(3, 4), mt.tensor([0, 1]))
    with pytest.raises(IndexError, match="target value 9"):
        F.cross_entropy(mt.ones(3, 4), mt.tensor([0, 1, 9]))
    with pytest.raises(ValueError, match="reduction"):
        F.cross_entropy(mt.ones(3, 4), mt.tensor([0, 1, 2]), reduction="avg")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_gradcheck(backend, reduction):
    target = mt.tensor([2, 0, -100])
    w = mt.tensor([1.0, 0.5, 2.0], dtype=mt.float64)
    assert gradcheck(lambda x: F.nll_loss(x, target, reduction=reduction), (rand(3, 3),))
    assert gradcheck(lambda x: F.nll_loss(x, target, w, reduction=reduction), (rand(3, 3),))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_gradcheck_with_broadcasting(backend, reduction):
    with pytest.warns(UserWarning, match="different to the input size"):  # as PyTorch
        assert gradcheck(lambda a, b: F.mse_loss(a, b, reduction=reduction),
                         (rand(2, 3), rand(1, 3, seed=1)))


def test_linear_with_zero_in_features_returns_the_bias(backend):
    # As PyTorch: an empty sum is zero, so x Wᵀ + b is b broadcast over the rows.
    torch = pytest.importorskip("torch")
    x, w, b = mt.randn(2, 4, 0, dtype=mt.float64), mt.randn(3, 0, dtype=mt.float64), rand(3)
    out = F.linear(x, w, b)
    expected = torch.nn.functional.linear(torch.zeros(2, 4, 0, dtype=torch.float64),
                                          torch.zeros(3, 0, dtype=torch.float64),
                                          torch.from_numpy(b.detach().numpy()))
    assert out.shape == tuple(expected.shape) == (2, 4, 3)
    assert np.array_equal(out.detach().numpy(), expected.numpy())
    assert gradcheck(lambda b_: F.linear(x, w, b_), (b,))
    layer = mt.nn.Linear(0, 3)
    assert np.array_equal(layer(mt.ones(5, 0)).detach().numpy(),
                          np.broadcast_to(layer.bias.detach().numpy(), (5, 3)))
