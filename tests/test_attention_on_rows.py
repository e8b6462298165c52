"""ops/fused.py's attention_on_rows (multi-head attention reading q, k, v in the projections'
layout, writing its output and the gradients in place), the backends' matmul_into under it,
and ops/linalg.py's LinearPair (the cross-attention's two projections from one packed weight,
as one node).

The fused node equals the chain it replaces (split_heads, the products, the fused softmax,
dropout's product, merge_heads) bit for bit, forward and backward, float32 and float64, one and
two threads; it gradchecks and differentiates twice. nn.MultiheadAttention takes it when the
weights are not wanted, with dropout in training too: its output and every gradient equal the
general path's (need_weights=True, the same seed) bit for bit, and PyTorch's within float
tolerance. matmul_into equals np.matmul on strided outputs; LinearPair
equals two F.linear calls on the weight's slices bit for bit and gradchecks.
scaled_dot_product_attention on 4-D heads is one ``Attention`` node on the same kernels: it
equals the composite (with dropout, on the same draws), gradchecks, differentiates twice and
matches PyTorch; other calls (3-D, a learned or widening mask) keep the composite."""
import numpy as np
import pytest

import minitorch
import minitorch.nn.functional as F
from minitorch import backends, nn
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.ops.dropout import dropout_factors
from minitorch.ops.fused import _attention_on_rows_composite, attention_on_rows
from minitorch.ops.linalg import LinearPair


BACKENDS = ["numpy"] + (["c"] if "c" in backends.available else [])


# ----------------------------------------------------------------------------- matmul_into

def heads_view(rows, start, width, num_heads):
    n, length = rows.shape[:2]
    return rows[:, :, start:start + width].reshape(
        n, length, num_heads, width // num_heads).transpose(0, 2, 1, 3)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("n,heads,length,d", [(2, 3, 4, 5), (32, 2, 16, 8), (1, 1, 1, 3)])
def test_matmul_into_writes_the_product_into_a_heads_view(backend, dtype, count, n, heads,
                                                          length, d, threads):
    threads(count)
    rng = np.random.default_rng(n * heads + d)
    rows = rng.standard_normal((n, length, 3 * heads * d)).astype(dtype)
    q, k = heads_view(rows, 0, heads * d, heads), heads_view(rows, heads * d, heads * d, heads)
    weights = rng.standard_normal((n, heads, length, length)).astype(dtype)
    kernels = backends.available[backend]
    out_rows = np.full((n, length, 2 * heads * d), 7.0, dtype)
    out = heads_view(out_rows, heads * d, heads * d, heads)
    assert kernels.matmul_into(weights, q, out=out) is out
    np.testing.assert_allclose(out, np.matmul(weights.astype(np.float64), q),
                               rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-5)
    assert (out_rows[:, :, :heads * d] == 7.0).all()  # nothing written outside the view
    # the transposed operand (scores = q kᵀ) into a fresh array equals the backend's matmul
    scores = np.empty((n, heads, length, length), dtype)
    kernels.matmul_into(q, k.swapaxes(-1, -2), out=scores)
    np.testing.assert_array_equal(scores, kernels.matmul(q, k.swapaxes(-1, -2)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_into_plain_and_empty_shapes(dtype):
    rng = np.random.default_rng(0)
    for backend in BACKENDS:
        kernels = backends.available[backend]
        a, b = rng.standard_normal((5, 0)).astype(dtype), rng.standard_normal((0, 4)).astype(dtype)
        out = np.full((5, 4), 3.0, dtype)
        np.testing.assert_array_equal(kernels.matmul_into(a, b, out=out), np.zeros((5, 4)))
        a, b = rng.standard_normal((6, 7)).astype(dtype), rng.standard_normal((4, 7)).astype(dtype)
        wide = np.zeros((6, 9), dtype)
        kernels.matmul_into(a, b.T, out=wide[:, 2:6])
        np.testing.assert_allclose(wide[:, 2:6], a @ b.T, rtol=1e-5)
        assert (wide[:, :2] == 0).all() and (wide[:, 6:] == 0).all()


def test_matmul_into_takes_out_by_keyword_only():
    """A positional out is refused: the float16/bfloat16 wrapper writes back a keyword out only."""
    a = np.ones((2, 2))
    for backend in BACKENDS:
        with pytest.raises(TypeError):
            backends.available[backend].matmul_into(a, a, np.empty((2, 2)))


# ----------------------------------------------------------------------------- the fused node

def run(fn, q_array, kv_array, num_heads, mask, causal, scale, upstream, keep=None):
    q = minitorch.tensor(q_array, requires_grad=True)
    kv = None if kv_array is None else minitorch.tensor(kv_array, requires_grad=True)
    out = fn(q, kv, num_heads, mask, causal, scale, keep)
    (out * minitorch.tensor(upstream)).sum().backward()
    return out.detach().numpy(), q.grad.numpy(), None if kv is None else kv.grad.numpy()


def masks(n, length, src_len, dtype):
    rng = np.random.default_rng(3)
    pad = np.zeros((n, 1, 1, src_len), bool)
    pad[0, ..., -1] = True
    yield None, False
    yield None, True
    yield minitorch.tensor(pad), False
    yield minitorch.tensor(rng.standard_normal((length, src_len)).astype(dtype)), False
    yield minitorch.tensor(np.ones((n, 1, 1, src_len), bool)), False  # every key excluded


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("packed", [True, False])
@pytest.mark.parametrize("n,heads,length,src_len,d", [(2, 3, 4, 5, 2), (16, 4, 16, 8, 16)])
def test_attention_on_rows_equals_the_chain_it_fuses(dtype, count, packed, n, heads, length,
                                                     src_len, d, threads):
    threads(count)
    width = heads * d
    rng = np.random.default_rng(length + d)
    if packed:
        src_len = length
        q_array, kv_array = rng.standard_normal((n, length, 3 * width)).astype(dtype), None
    else:
        q_array = rng.standard_normal((n, length, width)).astype(dtype)
        kv_array = rng.standard_normal((n, src_len, 2 * width)).astype(dtype)
    upstream = rng.standard_normal((n, length, width)).astype(dtype)
    dropped = dropout_factors((n, heads, length, src_len), 0.25, dtype)
    for keep in (None, dropped):
        for mask, causal in masks(n, length, src_len, dtype):
            fused = run(attention_on_rows, q_array, kv_array, heads, mask, causal, 0.3, upstream,
                        keep)
            chain = run(_attention_on_rows_composite, q_array, kv_array, heads, mask, causal,
                        0.3, upstream, keep)
            assert fused[0].shape == (n, length, width) and fused[0].dtype == dtype
            for f, c in zip(fused, chain):
                if c is not None:
                    np.testing.assert_array_equal(f, c)


@pytest.mark.parametrize("dropout", [False, True])
@pytest.mark.parametrize("packed", [True, False])
def test_attention_on_rows_gradchecks_and_differentiates_twice(packed, dropout):
    rng = np.random.default_rng(5)
    mask = minitorch.tensor(np.array([[False, False, True]] * 2))  # (L, S) = (2, 3)
    length, src_len = (3, 3) if packed else (2, 3)
    keep = dropout_factors((2, 2, length, src_len), 0.4, np.float64) if dropout else None
    if packed:
        inputs = (minitorch.tensor(rng.standard_normal((2, 3, 12)), requires_grad=True),)
        mask = None

        def fn(q):
            return attention_on_rows(q, None, 2, None, True, 0.7, keep)
    else:
        inputs = (minitorch.tensor(rng.standard_normal((2, 2, 4)), requires_grad=True),
                  minitorch.tensor(rng.standard_normal((2, 3, 8)), requires_grad=True))

        def fn(q, kv):
            return attention_on_rows(q, kv, 2, mask, False, 0.7, keep)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# ----------------------------------------------------------------------------- MultiheadAttention

def attend(need_weights, dtype, cross, batch_first, options, seed=0, dropout=0.0):
    minitorch.manual_seed(seed)
    module = nn.MultiheadAttention(16, 4, dropout=dropout, batch_first=batch_first, dtype=dtype)
    rng = np.random.default_rng(seed)
    n, length, src_len = 3, 5, 6 if cross else 5
    shape_q = (n, length, 16) if batch_first else (length, n, 16)
    shape_kv = (n, src_len, 16) if batch_first else (src_len, n, 16)
    x = minitorch.tensor(rng.standard_normal(shape_q), dtype=dtype, requires_grad=True)
    memory = (minitorch.tensor(rng.standard_normal(shape_kv), dtype=dtype, requires_grad=True)
              if cross else x)
    out, weights = module(x, memory, memory, need_weights=need_weights, **options(n, length,
                                                                                  src_len))
    upstream = minitorch.tensor(rng.standard_normal(out.shape), dtype=dtype)
    (out * upstream).sum().backward()
    grads = [x.grad.numpy()] + ([memory.grad.numpy()] if cross else [])
    after = minitorch.rand(3).numpy()  # the generator's state after the call
    return ([out.detach().numpy()] + grads + [p.grad.numpy() for p in module.parameters()]
            + [after], weights)


OPTIONS = {
    "none": lambda n, length, src_len: {},
    "float mask": lambda n, length, src_len: {"attn_mask": minitorch.tensor(
        np.triu(np.full((length, src_len), -np.inf), 1))},
    "bool mask + causal": lambda n, length, src_len: {"attn_mask": minitorch.tensor(
        np.triu(np.ones((length, src_len), bool), 1)), "is_causal": True},
    "padding": lambda n, length, src_len: {"key_padding_mask": minitorch.tensor(
        np.arange(src_len) >= src_len - np.arange(n)[:, None])},
    "3-d mask": lambda n, length, src_len: {"attn_mask": minitorch.tensor(
        np.random.default_rng(1).random((n * 4, length, src_len)) < 0.3)},
}


@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("option", list(OPTIONS))
def test_multihead_attention_without_weights_equals_the_general_path(dtype, cross, batch_first,
                                                                     option):
    fast, none = attend(False, dtype, cross, batch_first, OPTIONS[option])
    general, weights = attend(True, dtype, cross, batch_first, OPTIONS[option])
    assert none is None and weights is not None
    for f, g in zip(fast, general):
        np.testing.assert_array_equal(f, g)


@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("cross", [False, True])
@pytest.mark.parametrize("option", ["none", "bool mask + causal", "padding"])
def test_dropout_in_training_takes_the_fused_node_with_the_general_paths_draws(dtype, cross,
                                                                               option):
    """The same seed: the same weights dropped, so the output, every gradient and the
    generator's state after equal the general path's bit for bit; and the drop is real."""
    fast, _ = attend(False, dtype, cross, True, OPTIONS[option], dropout=0.3)
    general, _ = attend(True, dtype, cross, True, OPTIONS[option], dropout=0.3)
    for f, g in zip(fast, general):
        np.testing.assert_array_equal(f, g)
    undropped, _ = attend(False, dtype, cross, True, OPTIONS[option])
    assert not np.array_equal(fast[0], undropped[0])


def test_multihead_attention_takes_the_fused_node_only_where_it_applies():
    """The node appears in the graph for a call without weights, dropout in training or not,
    and not with a learned mask."""
    module = nn.MultiheadAttention(8, 2, batch_first=True)
    x = minitorch.randn(2, 3, 8, requires_grad=True)

    def names(out):
        seen, stack = set(), [out.grad_fn]
        while stack:
            node = stack.pop()
            if node is not None and node.name() not in seen:
                seen.add(node.name())
                stack.extend(edge[0] for edge in node.input_edges if edge is not None)
        return seen
    assert any("AttentionOnRows" in s for s in names(module(x, x, x, need_weights=False)[0]))
    assert not any("AttentionOnRows" in s for s in names(module(x, x, x)[0]))
    learned = minitorch.zeros(3, 3, requires_grad=True)
    out = module(x, x, x, need_weights=False, attn_mask=learned)[0]
    assert not any("AttentionOnRows" in s for s in names(out))
    out.sum().backward()
    assert learned.grad is not None
    dropping = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    assert any("AttentionOnRows" in s for s in names(dropping(x, x, x, need_weights=False)[0]))
    dropping.eval()
    assert any("AttentionOnRows" in s for s in names(dropping(x, x, x, need_weights=False)[0]))


def test_unbatched_input_takes_the_fused_node_too():
    module = nn.MultiheadAttention(8, 2)
    x = minitorch.randn(3, 8)
    fast, _ = module(x, x, x, need_weights=False)
    general, _ = module(x, x, x)
    assert fast.shape == (3, 8)
    np.testing.assert_array_equal(fast.detach().numpy(), general.detach().numpy())


def test_multihead_attention_without_weights_matches_pytorch():
    torch = pytest.importorskip("torch")
    ours = nn.MultiheadAttention(16, 4, batch_first=True, dtype=minitorch.float64)
    theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        for name, p in theirs.named_parameters():
            p.copy_(torch.tensor(dict(ours.named_parameters())[name].detach().numpy()))
    rng = np.random.default_rng(2)
    x_np, m_np = rng.standard_normal((2, 5, 16)), rng.standard_normal((2, 6, 16))
    mask = np.triu(np.ones((5, 6), bool), 1)
    x, m = minitorch.tensor(x_np, requires_grad=True), minitorch.tensor(m_np, requires_grad=True)
    xt = torch.tensor(x_np, requires_grad=True)
    mt = torch.tensor(m_np, requires_grad=True)
    out = ours(x, m, m, need_weights=False, attn_mask=minitorch.tensor(mask))[0]
    ref = theirs(xt, mt, mt, need_weights=False, attn_mask=torch.tensor(mask))[0]
    out.sum().backward()
    ref.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(m.grad.numpy(), mt.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(ours.in_proj_weight.grad.numpy(),
                               theirs.in_proj_weight.grad.numpy(), atol=1e-12)


# ----------------------------------------------------------------------------- LinearPair

def pair_values(fused, x_array, y_array, w_array, b_array, split, upstream):
    x, y, w = (minitorch.tensor(a, requires_grad=True) for a in (x_array, y_array, w_array))
    b = None if b_array is None else minitorch.tensor(b_array, requires_grad=True)
    if fused:
        out_x, out_y = LinearPair.apply(x, y, w, b, split)
    else:
        out_x = F.linear(x, w[:split], None if b is None else b[:split])
        out_y = F.linear(y, w[split:], None if b is None else b[split:])
    ((out_x * minitorch.tensor(upstream[0])).sum()
     + (out_y * minitorch.tensor(upstream[1])).sum()).backward()
    return [out_x.detach().numpy(), out_y.detach().numpy(), x.grad.numpy(), y.grad.numpy(),
            w.grad.numpy()] + ([] if b is None else [b.grad.numpy()])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("n,length,src_len,width", [(2, 3, 4, 6), (8, 32, 16, 96)])
def test_linear_pair_equals_two_linears_on_slices(backend, dtype, count, with_bias, n, length,
                                                  src_len, width, threads):
    threads(count)
    rng = np.random.default_rng(width)
    split = width // 3
    x = rng.standard_normal((n, length, width // 3)).astype(dtype)
    y = rng.standard_normal((n, src_len, width // 3)).astype(dtype)
    w = rng.standard_normal((width, width // 3)).astype(dtype)
    b = rng.standard_normal(width).astype(dtype) if with_bias else None
    upstream = (rng.standard_normal((n, length, split)).astype(dtype),
                rng.standard_normal((n, src_len, width - split)).astype(dtype))
    with backends.using(backend):
        fused = pair_values(True, x, y, w, b, split, upstream)
        plain = pair_values(False, x, y, w, b, split, upstream)
    for f, p in zip(fused, plain):
        assert f.dtype == dtype
        np.testing.assert_array_equal(f, p)


def test_linear_pair_gradchecks_and_differentiates_twice():
    rng = np.random.default_rng(4)
    inputs = tuple(minitorch.tensor(rng.standard_normal(shape), requires_grad=True)
                   for shape in ((2, 3, 4), (2, 5, 4), (6, 4), (6,)))

    def fn(x, y, w, b):
        out_x, out_y = LinearPair.apply(x, y, w, b, 2)
        return out_x.sum(-1, keepdim=True) * out_y.mean(1, keepdim=True)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_half_precision_attention_takes_the_general_path():
    module = nn.MultiheadAttention(8, 2, batch_first=True).to(minitorch.float16)
    x = minitorch.randn(2, 3, 8).to(minitorch.float16)
    fast, _ = module(x, x, x, need_weights=False)
    general, _ = module(x, x, x)
    assert fast.dtype == minitorch.float16
    np.testing.assert_array_equal(fast.detach().numpy(), general.detach().numpy())


# ----------------------------------------------------------------------------- Attention (SDPA)

def sdpa_cases(dtype):
    """(name, attn_mask, is_causal) in scaled_dot_product_attention's convention, for heads of
    (2, 3, 5, ·) queries over 6 keys."""
    rng = np.random.default_rng(6)
    keep = rng.random((2, 1, 5, 6)) < 0.7
    keep[0, 0, 1] = False  # one query with every key masked: zeros
    yield "none", None, False
    yield "causal", None, True
    yield "bool", minitorch.tensor(keep), False
    yield "float", minitorch.tensor(rng.standard_normal((5, 6)).astype(dtype)), False


def sdpa_values(fused, backend, dtype, attn_mask, is_causal, upstream, arrays, dropout_p=0.0):
    q, k, v = (minitorch.tensor(a, requires_grad=True) for a in arrays)
    minitorch.manual_seed(9)
    with backends.using(backend):
        if fused:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p,
                                                 is_causal=is_causal)
            assert out.grad_fn.name().startswith("Attention")
        else:
            mask = F._as_kernel_mask(attn_mask, q.dtype, "mask", true_means_excluded=False)
            out = F._attention(q, k, v, mask, is_causal, 1 / np.sqrt(q.shape[-1]), dropout_p)[0]
        (out * minitorch.tensor(upstream)).sum().backward()
    return [out.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("dropout_p", [0.0, 0.4, 1.0])
def test_sdpa_on_4d_heads_is_one_node_equal_to_the_chain(backend, dtype, count, dropout_p,
                                                         threads):
    """q, k, v as the (N, H, L, D) transposes of (N, L, H, D) arrays (non-contiguous), every
    mask kind, with and without dropout (the same seed): the fused node's output and gradients
    equal the composite's."""
    threads(count)
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((2, length, 3, d)).astype(dtype).swapaxes(1, 2)
              for length, d in ((5, 4), (6, 4), (6, 3))]
    upstream = rng.standard_normal((2, 3, 5, 3)).astype(dtype)
    for name, attn_mask, is_causal in sdpa_cases(dtype):
        fused = sdpa_values(True, backend, dtype, attn_mask, is_causal, upstream, arrays,
                            dropout_p)
        chain = sdpa_values(False, backend, dtype, attn_mask, is_causal, upstream, arrays,
                            dropout_p)
        for f, c in zip(fused, chain):
            np.testing.assert_allclose(f, c, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-6 if dtype == np.float32 else 1e-13,
                                       err_msg=name)
        if name == "bool":
            assert not fused[0][0, 0, 1].any()  # the query with nothing to attend to


def test_sdpa_takes_the_fused_node_only_where_it_applies():
    q, k, v = (minitorch.randn(2, 2, 3, 4, requires_grad=True) for _ in range(3))

    def node(out):
        return out.grad_fn.name()
    assert node(F.scaled_dot_product_attention(q, k, v)).startswith("Attention")
    assert not node(F.scaled_dot_product_attention(q[0], k[0], v[0])).startswith("Attention")
    assert node(F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)).startswith("Attention")
    learned = minitorch.zeros(3, 3, requires_grad=True)
    assert not node(F.scaled_dot_product_attention(q, k, v, attn_mask=learned)).startswith(
        "Attention")
    wide = minitorch.ones(3, 2, 3, 3, dtype=minitorch.bool)  # widens the batch: 3 x 2 x 3 x 3
    out = F.scaled_dot_product_attention(q[:1], k[:1], v[:1], attn_mask=wide)
    assert out.shape == (3, 2, 3, 4) and not node(out).startswith("Attention")
    with pytest.raises(ValueError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, k, v,
                                       attn_mask=minitorch.ones(4, 4, dtype=minitorch.bool))


@pytest.mark.parametrize("kind", ["none", "causal", "bool", "float"])
def test_sdpa_fused_node_gradchecks_and_differentiates_twice(kind):
    rng = np.random.default_rng(8)
    q, k, v = (minitorch.tensor(rng.standard_normal((2, 3, 2, 5)).swapaxes(1, 2),
                                requires_grad=True) for _ in range(3))
    attn_mask, is_causal = {"none": (None, False), "causal": (None, True),
                            "bool": (minitorch.tensor(np.array([[True, False, True]] * 3)), False),
                            "float": (minitorch.tensor(rng.standard_normal((3, 3))), False)}[kind]

    def fn(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal)
    assert fn(q, k, v).grad_fn.name().startswith("Attention")
    assert gradcheck(fn, (q, k, v))
    assert gradgradcheck(fn, (q, k, v))


def test_sdpa_fused_node_matches_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal((2, 3, 7, 4)) for _ in range(3)]
    keep = rng.random((2, 1, 7, 7)) < 0.8
    keep[..., 0] = True
    upstream = rng.standard_normal((2, 3, 7, 4))
    for attn_mask, is_causal in ((None, True), (keep, False)):
        ours = [minitorch.tensor(a, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
        out = F.scaled_dot_product_attention(
            *ours, attn_mask=None if attn_mask is None else minitorch.tensor(attn_mask),
            is_causal=is_causal)
        ref = torch.nn.functional.scaled_dot_product_attention(
            *theirs, attn_mask=None if attn_mask is None else torch.tensor(attn_mask),
            is_causal=is_causal)
        (out * minitorch.tensor(upstream)).sum().backward()
        (ref * torch.tensor(upstream)).sum().backward()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-12)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), atol=1e-12)
