"""Attention: gradient checks of scaled_dot_product_attention and MultiheadAttention with every
mask kind, and the theory they must obey — permutation equivariance of self-attention, causality
(outputs and gradients), cross-attention wiring, and zeros (never NaN) for fully masked rows.
"""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck


def rand(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


def mha(seed=0, **kw):
    mt.manual_seed(seed)
    m = nn.MultiheadAttention(4, 2, **kw).double()
    with mt.no_grad():  # non-zero biases so their gradients are exercised
        m.in_proj_bias._data[...] = np.random.default_rng(seed).standard_normal(12)
        m.out_proj.bias._data[...] = np.random.default_rng(seed + 1).standard_normal(4)
    return m


# ----------------------------------------------------------------------------- SDPA

def _sdpa_masks():
    keep = np.array([[True, False, True], [True, True, False], [False, True, True]])
    return {"none": (None, False), "bool": (mt.tensor(keep), False),
            "float": (rand(3, 3, seed=9, requires_grad=False), False), "causal": (None, True)}


@pytest.mark.parametrize("kind", ["none", "bool", "float", "causal"])
def test_sdpa_gradcheck_each_mask(backend, kind):
    mask, causal = _sdpa_masks()[kind]
    q, k, v = rand(2, 3, 4), rand(2, 3, 4, seed=1), rand(2, 3, 2, seed=2)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, is_causal=causal), (q, k, v))


def test_sdpa_gradcheck_broadcast_batch_and_non_contiguous(backend):
    q = rand(2, 2, 3, 4)
    k = rand(4, 3, seed=1).detach().mT.requires_grad_()  # (3, 4), broadcast over (2, 2)
    v = rand(2, 1, 3, 2, seed=2)
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, scale=0.7),
                     (q, k, v))


def test_sdpa_learned_float_mask_gets_gradient(backend):
    q, k, v, bias = rand(3, 4), rand(3, 4, seed=1), rand(3, 2, seed=2), rand(3, 3, seed=3)
    assert gradcheck(lambda q, k, v, b: F.scaled_dot_product_attention(q, k, v, attn_mask=b),
                     (q, k, v, bias))


def test_sdpa_gradgradcheck(backend):
    q, k, v = rand(1, 3, 2), rand(1, 3, 2, seed=1), rand(1, 3, 2, seed=2)
    assert gradgradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                         (q, k, v))


def test_sdpa_matches_the_formula(backend):
    q, k, v = rand(2, 3, 4), rand(2, 5, 4, seed=1), rand(2, 5, 3, seed=2)
    keep = np.random.default_rng(0).random((3, 5)) > 0.3
    keep[:, 0] = True
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mt.tensor(keep)).detach().numpy()
    scores = q.detach().numpy() @ k.detach().numpy().transpose(0, 2, 1) / 2.0
    scores = np.where(keep, scores, -np.inf)
    w = np.exp(scores - scores.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(out, w @ v.detach().numpy(), atol=1e-12)


def test_sdpa_fully_masked_row_gives_zeros_not_nan(backend):
    keep = mt.tensor([[True, True, False], [False, False, False], [True, False, True]])
    q, k, v = rand(3, 4), rand(3, 4, seed=1), rand(3, 2, seed=2)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
    assert np.isfinite(out.detach().numpy()).all()
    assert not out.detach().numpy()[1].any()
    out.sum().backward()
    for t in (q, k, v):
        assert np.isfinite(t.grad.numpy()).all()
    assert not q.grad.numpy()[1].any()
    float_mask = mt.tensor([[0.0, -math.inf, -math.inf]] * 2 + [[-math.inf] * 3],
                           dtype=mt.float64)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=float_mask).detach().numpy()
    assert np.isfinite(out).all() and not out[2].any()


def test_sdpa_argument_errors():
    q = mt.ones(2, 3, 4)
    with pytest.raises(ValueError, match="same last dim"):
        F.scaled_dot_product_attention(q, mt.ones(2, 3, 5), mt.ones(2, 3, 4))
    with pytest.raises(ValueError, match="same length"):
        F.scaled_dot_product_attention(q, q, mt.ones(2, 4, 4))
    with pytest.raises(ValueError, match="not both"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mt.ones(3, 3).bool(), is_causal=True)
    with pytest.raises(ValueError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mt.ones(2, 2).bool())
    with pytest.raises(TypeError, match="bool or floating"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=mt.ones(3, 3, dtype=mt.int64))


# ----------------------------------------------------------------------------- MHA gradchecks

def _mha_mask_kwargs(kind, n=2, heads=2, length=3):
    blocked = np.array([[False, True, False], [False, False, True], [True, False, False]])
    if kind == "key_padding":
        return dict(key_padding_mask=mt.tensor([[False, False, True], [False, False, False]]))
    if kind == "bool":
        return dict(attn_mask=mt.tensor(blocked))
    if kind == "float":
        return dict(attn_mask=rand(length, length, seed=5, requires_grad=False))
    if kind == "float3d":
        return dict(attn_mask=rand(n * heads, length, length, seed=5, requires_grad=False))
    if kind == "causal":
        return dict(is_causal=True)
    return {}


@pytest.mark.parametrize("kind", ["none", "key_padding", "bool", "float", "float3d", "causal"])
def test_mha_self_attention_gradcheck(backend, kind):
    m = mha()
    kw = _mha_mask_kwargs(kind)
    x = rand(3, 2, 4, seed=3)
    assert gradcheck(lambda x: m(x, x, x, **kw), (x,))
    # parameters: a random projection of the Jacobian per tensor (the full one is slow)
    assert gradcheck(lambda x, *ps: m(x, x, x, **kw), (x, *m.parameters()), fast_mode=True)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_cross_attention_kdim_vdim_gradcheck(backend, batch_first):
    m = mha(kdim=3, vdim=5, batch_first=batch_first)
    assert m.in_proj_weight is None and tuple(m.k_proj_weight.shape) == (4, 3)
    if batch_first:
        q, k, v = rand(2, 3, 4), rand(2, 2, 3, seed=1), rand(2, 2, 5, seed=2)
    else:
        q, k, v = rand(3, 2, 4), rand(2, 2, 3, seed=1), rand(2, 2, 5, seed=2)
    out, w = m(q, k, v)
    assert tuple(w.shape) == (2, 3, 2)
    assert gradcheck(lambda q, k, v: m(q, k, v, need_weights=False)[0], (q, k, v))
    assert gradcheck(lambda q, k, v, *ps: m(q, k, v, average_attn_weights=False),
                     (q, k, v, *m.parameters()), fast_mode=True)


def test_mha_unbatched_gradcheck_and_shapes(backend):
    m = mha()
    x, mem = rand(3, 4), rand(5, 4, seed=1)
    out, w = m(x, mem, mem, key_padding_mask=mt.tensor([False, False, True, False, False]))
    assert tuple(out.shape) == (3, 4) and tuple(w.shape) == (3, 5)
    assert not w.detach().numpy()[:, 2].any()
    assert gradcheck(lambda x, mem: m(x, mem, mem, need_weights=False)[0], (x, mem))


def test_mha_gradgradcheck(backend):
    m = nn.MultiheadAttention(2, 1).double()
    x = rand(2, 1, 2)
    assert gradgradcheck(lambda x: m(x, x, x)[0], (x,))


def test_mha_dropout_only_in_training(backend):
    m = mha(dropout=0.5).requires_grad_(False)
    x = rand(4, 2, 4, requires_grad=False)
    m.eval()
    a, b = m(x, x, x)[0], m(x, x, x)[0]
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    m.train()
    mt.manual_seed(1)
    c = m(x, x, x)[1]
    assert (c.numpy() == 0).any() or not np.allclose(c.numpy(), m.eval()(x, x, x)[1].numpy())


def test_mha_errors():
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(5, 2)
    with pytest.raises(NotImplementedError, match="add_bias_kv"):
        nn.MultiheadAttention(4, 2, add_bias_kv=True)
    m = nn.MultiheadAttention(4, 2)
    x = mt.ones(3, 2, 4)
    with pytest.raises(ValueError, match="2D attn_mask"):
        m(x, x, x, attn_mask=mt.ones(2, 3).bool())
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape \(2, 3\)"):
        m(x, x, x, key_padding_mask=mt.ones(3, 2).bool())
    with pytest.raises(ValueError, match="last dim must be 4"):
        m(mt.ones(3, 2, 5), x, x)


# ----------------------------------------------------------------------------- theory

def test_self_attention_is_permutation_equivariant(backend):
    m = mha().requires_grad_(False)
    x = rand(5, 2, 4, requires_grad=False)
    perm = np.array([3, 0, 4, 1, 2])
    out = m(x, x, x)[0].numpy()
    xp = mt.tensor(x.numpy()[perm])
    out_p = m(xp, xp, xp)[0].numpy()
    np.testing.assert_allclose(out_p, out[perm], atol=1e-12)
    # key padding permuted along with the keys keeps the equivariance
    pad = np.zeros((2, 5), dtype=bool)
    pad[0, 1] = True
    out = m(x, x, x, key_padding_mask=mt.tensor(pad))[0].numpy()
    out_p = m(xp, xp, xp, key_padding_mask=mt.tensor(pad[:, perm]))[0].numpy()
    np.testing.assert_allclose(out_p, out[perm], atol=1e-12)


@pytest.mark.parametrize("how", ["is_causal", "bool_mask", "float_mask"])
def test_causal_outputs_ignore_the_future_and_get_zero_gradient_from_it(backend, how):
    m = mha()
    length = 5
    kw = {"is_causal": dict(is_causal=True),
          "bool_mask": dict(attn_mask=mt.tensor(np.triu(np.ones((length,) * 2, bool), 1))),
          "float_mask": dict(attn_mask=nn.Transformer.generate_square_subsequent_mask(
              length, dtype=mt.float64))}[how]
    x = rand(length, 2, 4)
    out = m(x, x, x, **kw)[0]
    changed = x.detach().numpy().copy()
    changed[3:] += 10.0
    out2 = m(mt.tensor(changed), mt.tensor(changed), mt.tensor(changed), **kw)[0]
    np.testing.assert_allclose(out2.detach().numpy()[:3], out.detach().numpy()[:3], atol=1e-12)
    assert not np.allclose(out2.detach().numpy()[3:], out.detach().numpy()[3:])
    for i in range(length):
        (g,) = mt.autograd.grad(out[i].sum(), x, retain_graph=True)
        assert (g.numpy()[i + 1:] == 0).all(), f"position {i} sees the future"
        assert g.numpy()[:i + 1].any()


def test_cross_attention_wiring(backend):
    m = mha().requires_grad_(False)
    tgt, memory = rand(2, 2, 4, requires_grad=False), rand(6, 2, 4, seed=1, requires_grad=False)
    out, w = m(tgt, memory, memory)
    assert tuple(out.shape) == (2, 2, 4)  # length follows the queries
    assert tuple(w.shape) == (2, 2, 6)
    np.testing.assert_allclose(w.numpy().sum(-1), 1.0)
    other = rand(6, 2, 4, seed=7, requires_grad=False)
    assert not np.allclose(m(tgt, other, other)[0].numpy(), out.numpy())
    # values enter only through the value projection: new values, same weights, and the output
    # is affine in the values
    out_v, w_v = m(tgt, memory, other)
    np.testing.assert_allclose(w_v.numpy(), w.numpy())
    assert not np.allclose(out_v.numpy(), out.numpy())
    mix = mt.tensor(0.3 * memory.numpy() + 0.7 * other.numpy())
    np.testing.assert_allclose(m(tgt, memory, mix)[0].numpy(),
                               0.3 * out.numpy() + 0.7 * out_v.numpy(), atol=1e-12)


def test_mha_fully_masked_query_gives_zeros_not_nan(backend):
    m = mha()
    x = rand(3, 2, 4)
    blocked = mt.tensor(np.array([[False, False, True], [True, True, True], [False, True, True]]))
    out, w = m(x, x, x, attn_mask=blocked)
    assert np.isfinite(out.detach().numpy()).all()
    assert not w.detach().numpy()[:, 1].any()
    # the fully masked query keeps only the output projection's bias
    np.testing.assert_allclose(out.detach().numpy()[1],
                               np.broadcast_to(m.out_proj.bias.detach().numpy(), (2, 4)))
    out.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    assert all(np.isfinite(p.grad.numpy()).all() for p in m.parameters())


# ----------------------------------------------------------------------------- KV cache

def _causal(length):
    return mt.tensor(np.triu(np.ones((length, length), bool), 1))


@pytest.mark.parametrize("batch_first", [False, True])
def test_cached_self_attention_one_position_at_a_time_equals_the_causal_whole(backend,
                                                                               batch_first):
    m = mha(batch_first=batch_first).requires_grad_(False)
    x = rand(2, 5, 4, requires_grad=False) if batch_first else rand(5, 2, 4, requires_grad=False)
    seq = 1 if batch_first else 0
    whole, whole_w = m(x, x, x, attn_mask=_causal(5), average_attn_weights=False)
    cache = nn.KVCache()
    for t in range(5):
        step = x[:, t:t + 1] if batch_first else x[t:t + 1]
        out, w = m(step, step, step, cache=cache, average_attn_weights=False)  # no mask needed
        np.testing.assert_allclose(out.numpy(), whole.numpy().take([t], axis=seq), atol=1e-12)
        np.testing.assert_allclose(w.numpy()[:, :, 0], whole_w.numpy()[:, :, t, :t + 1],
                                   atol=1e-12)
        assert len(cache) == t + 1 and tuple(cache.keys.shape) == (2, 2, t + 1, 2)
        assert cache.weights is not None and tuple(cache.weights.shape) == (2, 2, 1, t + 1)


def test_cached_self_attention_in_chunks_with_is_causal_and_key_padding(backend):
    m = mha(batch_first=True).requires_grad_(False)
    x = rand(2, 6, 4, seed=1, requires_grad=False)
    pad = mt.tensor([[False] * 6, [False, True, False, False, True, False]])
    whole = m(x, x, x, attn_mask=_causal(6), key_padding_mask=pad)[0].numpy()
    cache, outs = nn.KVCache(), []
    for start, stop in ((0, 2), (2, 5), (5, 6)):  # several new positions per call
        chunk = x[:, start:stop]
        outs.append(m(chunk, chunk, chunk, is_causal=True, key_padding_mask=pad[:, :stop],
                      cache=cache)[0].numpy())
    np.testing.assert_allclose(np.concatenate(outs, axis=1), whole, atol=1e-12)


def test_static_cache_projects_the_memory_once_and_reads_it_no_more(backend):
    m = mha(kdim=3, vdim=5, batch_first=True).requires_grad_(False)
    q, k, v = (rand(*shape, seed=i, requires_grad=False)
               for i, shape in enumerate(((2, 4, 4), (2, 3, 3), (2, 3, 5))))
    pad = mt.tensor([[False, False, True], [False, False, False]])
    whole = m(q, k, v, key_padding_mask=pad)[0].numpy()
    cache = nn.KVCache(static=True)
    first = m(q[:, :1], k, v, key_padding_mask=pad, cache=cache)[0].numpy()
    keys = cache.keys
    later = m(q[:, 1:], None, None, key_padding_mask=pad, cache=cache)[0].numpy()
    assert cache.keys is keys and len(cache) == 3
    np.testing.assert_allclose(np.concatenate([first, later], axis=1), whole, atol=1e-12)


def test_kv_cache_reorder_moves_rows(backend):
    m = mha(batch_first=True).requires_grad_(False)
    x = rand(3, 4, 4, requires_grad=False)
    index = mt.tensor(np.array([2, 2, 0]))
    cache = nn.KVCache()
    m(x[:, :2], x[:, :2], x[:, :2], cache=cache)
    cache.reorder(index)
    assert cache.weights is None  # the last call's weights belong to the old rows
    moved = m(x[[2, 2, 0], 2:3], x[[2, 2, 0], 2:3], x[[2, 2, 0], 2:3], cache=cache)[0].numpy()
    y = mt.tensor(x.numpy()[[2, 2, 0], :3])
    expected = m(y, y, y, attn_mask=_causal(3))[0].numpy()[:, 2:3]
    np.testing.assert_allclose(moved, expected, atol=1e-12)


def test_cached_attention_gradcheck(backend):
    m = mha(batch_first=True)
    x, mem = rand(2, 2, 4), rand(2, 3, 4, seed=1)

    def two_steps(x, mem):
        own, cross = nn.KVCache(), nn.KVCache(static=True)
        outs = []
        for t in range(2):
            step = x[:, t:t + 1]
            h = m(step, step, step, cache=own, need_weights=False)[0]
            outs.append(m(h, mem, mem, cache=cross, need_weights=False)[0])
        return mt.cat(outs, dim=1)
    assert gradcheck(two_steps, (x, mem))


def test_kv_cache_errors():
    m = nn.MultiheadAttention(4, 2, batch_first=True)
    cache = nn.KVCache()
    x = mt.ones(2, 1, 4)
    m(x, x, x, cache=cache)
    y = mt.ones(3, 1, 4)
    with pytest.raises(ValueError, match="cache holds 2 batch rows, but the query has 3"):
        m(y, y, y, cache=cache)
    with pytest.raises(ValueError, match=r"2D attn_mask is \(1, 1\), but should be \(1, 2\)"):
        m(x, x, x, attn_mask=mt.ones(1, 1).bool(), cache=cache)
