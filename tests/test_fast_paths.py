"""The speed-motivated paths of the Python layers behave exactly like the general ones.

Covers: ``unbind`` as one multi-output node, the sorted row scatter-add behind embedding and
integer-array indexing, the fused ``Linear`` Function and its fallback, the checked-once
fast path of ``matmul``, reshape's fast shape check, ``Function.apply`` without graph work,
and multi-head attention's contiguous heads (parity with PyTorch).
"""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.ops.linalg import Linear as LinearFunction


def _double(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return minitorch.tensor(rng.standard_normal(shape), dtype=minitorch.float64,
                            requires_grad=True)


# ----------------------------------------------------------------------------- unbind

def test_unbind_is_one_node_and_gradchecks_on_every_dim():
    x = _double(3, 1, 2)
    parts = x.unbind(0)
    assert len(parts) == 3 and all(p.grad_fn is parts[0].grad_fn for p in parts)
    for dim in (0, 1, -1):
        assert gradcheck(lambda t, d=dim: [p * (i + 1) for i, p in enumerate(t.unbind(d))], (x,))
    assert gradgradcheck(lambda t: (t.unbind(2)[1] ** 2).sum(), (x,))


def test_unbind_unused_slices_get_zero_gradient_and_views_share_memory():
    x = _double(3, 4)
    first, _, third = x.unbind(0)
    (first * 2 + third).sum().backward()
    expected = np.zeros((3, 4))
    expected[0], expected[2] = 2.0, 1.0
    np.testing.assert_array_equal(x.grad.numpy(), expected)
    plain = minitorch.zeros(2, 3)
    row = plain.unbind(0)[1]
    assert np.shares_memory(row.numpy(), plain.numpy())


def test_unbind_of_an_empty_dim_and_a_bad_dim():
    assert minitorch.zeros(0, 3).unbind(0) == ()
    with pytest.raises(IndexError, match="dim"):
        minitorch.zeros(2, 3).unbind(2)


# ----------------------------------------------------------------------------- row scatter-add

def test_integer_array_index_gradient_accumulates_repeats_and_negative_rows():
    w = _double(6, 3)
    rows = np.array([[1, 2, 1], [5, -1, 0]])
    w[rows].sum().backward()
    expected = np.zeros((6, 3))
    np.add.at(expected, rows, 1.0)
    np.testing.assert_array_equal(w.grad.numpy(), expected)
    assert gradcheck(lambda t: t[rows] * 3.0, (w,))
    assert gradgradcheck(lambda t: (t[rows] ** 2).sum(), (w,))


def test_embedding_gradient_matches_numpy_add_at(backend):
    rng = np.random.default_rng(1)
    weight = minitorch.tensor(rng.standard_normal((50, 4)), requires_grad=True)
    ids = rng.integers(0, 50, (7, 9))
    upstream = rng.standard_normal((7, 9, 4)).astype(np.float32)
    F.embedding(minitorch.tensor(ids), weight).backward(minitorch.tensor(upstream))
    expected = np.zeros((50, 4), np.float32)
    np.add.at(expected, ids, upstream)
    np.testing.assert_allclose(weight.grad.numpy(), expected, rtol=1e-6, atol=1e-6)


# ----------------------------------------------------------------------------- linear

@pytest.mark.parametrize("shape", [(4, 3), (2, 1, 3), (3,), (0, 3)])
def test_linear_is_one_node_and_gradchecks(shape, backend):
    x, w, b = _double(*shape), _double(5, 3, seed=1), _double(5, seed=2)
    out = F.linear(x, w, b)
    assert out.grad_fn.fn is LinearFunction
    assert tuple(out.shape) == shape[:-1] + (5,)
    assert gradcheck(F.linear, (x, w, b))
    assert gradcheck(F.linear, (x.detach().requires_grad_(), w))


def test_linear_on_a_transposed_input_and_only_weight_needing_grad(backend):
    x = _double(3, 4).detach().mT  # non-contiguous (4, 3)
    w, b = _double(2, 3, seed=1), _double(2, seed=2)
    np.testing.assert_allclose(F.linear(x, w, b).detach().numpy(),
                               x.numpy() @ w.detach().numpy().T + b.detach().numpy())
    assert gradcheck(lambda w_: F.linear(x, w_, b), (w,))


def test_linear_with_mixed_dtypes_promotes_through_the_composite():
    x = minitorch.ones(2, 3, dtype=minitorch.float64)
    w = minitorch.ones(4, 3, requires_grad=True)
    out = F.linear(x, w, minitorch.zeros(4))
    assert out.dtype is minitorch.float64
    out.sum().backward()
    assert w.grad.dtype is minitorch.float32
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 3), 2.0, np.float32))


# ----------------------------------------------------------------------------- matmul, reshape

def test_matmul_fast_path_still_reports_bad_shapes_by_name():
    with pytest.raises(ValueError, match=r"matmul: shapes \(2, 3\) and \(4, 5\)"):
        minitorch.zeros(2, 3) @ minitorch.zeros(4, 5)
    with pytest.raises(ValueError, match="batch dims"):
        minitorch.zeros(2, 2, 3) @ minitorch.zeros(3, 3, 4)
    a, b = _double(2, 3, 4), _double(2, 4, 5, seed=1)
    assert gradcheck(lambda x, y: x @ y, (a, b))


def test_matmul_backward_through_a_transposed_gradient(backend):
    q, k = _double(2, 3, 4, 2), _double(2, 3, 4, 2, seed=1)
    # The gradient reaching the matmul is a transposed (non-contiguous) view.
    assert gradcheck(lambda a, b: (a @ b.mT).transpose(1, 2), (q, k))


def test_reshape_fast_path_keeps_the_errors():
    x = minitorch.zeros(2, 3)
    assert tuple(x.reshape(3, 2).shape) == (3, 2)
    assert tuple(x.reshape(-1).shape) == (6,)
    with pytest.raises(ValueError, match=r"shape \(4, 2\) is invalid for input of size 6"):
        x.reshape(4, 2)
    with pytest.raises(ValueError, match="invalid"):
        x.reshape(-2, -3)
    with pytest.raises(TypeError, match="expected ints"):
        x.reshape(2.0, 3)


# ----------------------------------------------------------------------------- Function.apply

def test_apply_without_grad_records_nothing_but_keeps_needs_input_grad():
    seen = {}

    class Probe(minitorch.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen["needs"] = ctx.needs_input_grad
            return a * 2

    x = minitorch.ones(2, requires_grad=True)
    y = Probe.apply(minitorch.ones(2), 3.0)
    assert y.grad_fn is None and not y.requires_grad and seen["needs"] == (False, False)
    with minitorch.no_grad():
        z = Probe.apply(x, 3.0)
    assert z.grad_fn is None and seen["needs"] == (True, False)
    w = Probe.apply(x, 3.0)
    assert w.grad_fn is not None and w.grad_fn.input_edges == (None, None)


def test_hook_on_one_output_of_a_multi_output_node():
    x = _double(2, 3)
    first, second = x.unbind(0)
    first.register_hook(lambda g: g * 10)
    (first + second).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.array([[10.0] * 3, [1.0] * 3]))


# ----------------------------------------------------------------------------- attention

@pytest.mark.parametrize("kind", ["self", "cross_kv_shared", "separate", "kdim"])
def test_multihead_attention_matches_pytorch(kind, backend):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    rng = np.random.default_rng(3)
    extra = dict(kdim=6, vdim=5) if kind == "kdim" else {}
    ours = minitorch.nn.MultiheadAttention(8, 2, batch_first=True, **extra)
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True, **extra)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy())
                            for k, v in ours.state_dict().items()})
    q = rng.standard_normal((3, 4, 8)).astype(np.float32)
    kv = rng.standard_normal((3, 5, 8)).astype(np.float32)
    k_in = rng.standard_normal((3, 5, 6 if kind == "kdim" else 8)).astype(np.float32)
    v_in = rng.standard_normal((3, 5, 5 if kind == "kdim" else 8)).astype(np.float32)
    inputs = {"self": (q, q, q), "cross_kv_shared": (q, kv, kv), "separate": (q, kv, k_in),
              "kdim": (q, k_in, v_in)}[kind]
    mine = [minitorch.tensor(a, requires_grad=True) for a in inputs]
    if inputs[1] is inputs[2]:
        mine[2] = mine[1]
    if inputs[0] is inputs[1]:
        mine[1] = mine[2] = mine[0]
    ref = [torch.tensor(a, requires_grad=True) for a in inputs]
    if inputs[1] is inputs[2]:
        ref[2] = ref[1]
    if inputs[0] is inputs[1]:
        ref[1] = ref[2] = ref[0]
    out, _ = ours(*mine, need_weights=False)
    expected, _ = theirs(*ref, need_weights=False)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), atol=1e-5)
    out.sum().backward()
    expected.sum().backward()
    np.testing.assert_allclose(mine[0].grad.numpy(), ref[0].grad.numpy(), atol=1e-4)
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), dict(theirs.named_parameters())[name].grad
                                   .numpy(), atol=1e-4, err_msg=name)
