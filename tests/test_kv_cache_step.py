"""The inference path of cached decoding: ``KVCache``'s preallocated buffers (written in place,
grown past their capacity, reordered into spare buffers, a static cache's reorders skipped when
rows keep their origin) and the decoder layer's ``_cached_step`` (GEMMs, one attention_step
per attention, layer norms on the arrays), each held to the general path with autograd, which
joins the cache with ``cat`` and attends with matmul, softmax and matmul.
"""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn

D_MODEL, NHEAD, FF = 8, 2, 12


def tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype is mt.float32 else dict(rtol=1e-12, atol=1e-12)


def rand(*shape, seed=0, dtype=mt.float64):
    return mt.tensor(np.random.default_rng(seed).standard_normal(shape), dtype=dtype)


def make_decoder(norm_first, activation="relu", dtype=mt.float64, batch_first=True, seed=0):
    mt.manual_seed(seed)
    layer = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=activation,
                                       norm_first=norm_first, batch_first=batch_first)
    decoder = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(D_MODEL)).to(dtype).eval()
    rng = np.random.default_rng(seed)
    with mt.no_grad():  # random norms and biases too: ones and zeros would hide mistakes
        for p in decoder.parameters():
            p._data[...] = rng.standard_normal(p.shape) * 0.5 + (1.0 if p.ndim == 1 else 0.0)
    return decoder


def decode_steps(decoder, tgt, memory, pad, inference, reorders=()):
    """Each step's output, feeding ``tgt`` one position at a time with a cache; ``inference``
    runs under no_grad (the array path), else with autograd (the general path). ``reorders``:
    {step: rows} applied to the cache (and the inputs) before that step."""
    reorders = dict(reorders)
    cache = nn.TransformerDecoderCache(decoder.num_layers)
    outs = []
    for t in range(tgt.shape[1]):
        if t in reorders:
            rows = reorders[t]
            cache.reorder(rows)
            tgt = tgt[rows]
        with mt.no_grad() if inference else mt.enable_grad():
            outs.append(decoder(tgt[:, t:t + 1], memory, memory_key_padding_mask=pad,
                                cache=cache).detach().numpy())
    took_arrays = cache.layers[0][0]._keys_t is not None
    assert took_arrays == inference, "the path under test was not the one taken"
    return outs


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
@pytest.mark.parametrize("padded", [False, True])
def test_inference_steps_equal_the_autograd_path(backend, dtype, norm_first, activation, padded):
    decoder = make_decoder(norm_first, activation, dtype)
    tgt, memory = rand(3, 6, D_MODEL, dtype=dtype), rand(3, 4, D_MODEL, seed=1, dtype=dtype)
    pad = mt.tensor([[False] * 4, [False, False, True, True], [True] * 3 + [False]]) \
        if padded else None
    fast = decode_steps(decoder, tgt, memory, pad, inference=True)
    general = decode_steps(decoder, tgt, memory, pad, inference=False)
    for step, (f, g) in enumerate(zip(fast, general)):
        assert f.dtype == g.dtype
        np.testing.assert_allclose(f, g, err_msg=f"step {step}", **tol(dtype))


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_inference_steps_with_reorders_equal_the_autograd_path(backend, dtype):
    """Beam search's reorders (repeats, a permutation, rows moved across sources), past the
    cache's initial capacity of 16 positions and into its spare buffers several times."""
    decoder = make_decoder(False, dtype=dtype, batch_first=False)
    tgt = rand(3, 20, D_MODEL, dtype=dtype)
    memory = rand(4, 3, D_MODEL, seed=1, dtype=dtype)  # (S, N, E): sequence first
    tgt_seq_first = tgt.transpose(0, 1)

    def steps(inference):
        reorders = {2: [0, 0, 1], 5: [2, 1, 0], 9: [1, 1, 1], 17: [2, 0, 1]}
        cache = nn.TransformerDecoderCache(decoder.num_layers)
        x, outs = tgt_seq_first, []
        for t in range(20):
            if t in reorders:
                cache.reorder(reorders[t])
                x = x[:, reorders[t]]
            with mt.no_grad() if inference else mt.enable_grad():
                outs.append(decoder(x[t:t + 1], memory, cache=cache).detach().numpy())
        return outs, cache
    fast, cache = steps(True)
    general, _ = steps(False)
    own = cache.layers[0][0]
    assert own._keys_t.shape[3] == 32 and len(own) == 20  # grown from 16, by doubling
    for step, (f, g) in enumerate(zip(fast, general)):
        np.testing.assert_allclose(f, g, err_msg=f"step {step}", **tol(dtype))


def test_a_growing_cache_past_its_capacity_equals_the_causal_whole(backend):
    attn = nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True).double().eval()
    x = rand(2, 7, D_MODEL)
    causal = mt.tensor(np.triu(np.ones((7, 7), bool), 1))
    with mt.no_grad():
        whole = attn(x, x, x, attn_mask=causal)[0].numpy()
        cache = nn.KVCache(capacity=2)
        capacities = []
        for t in range(7):
            step = x[:, t:t + 1]
            out = attn(step, step, step, cache=cache)[0].numpy()
            np.testing.assert_allclose(out[:, 0], whole[:, t], rtol=1e-12, atol=1e-12)
            capacities.append(cache._keys_t.shape[3])
            assert tuple(cache.keys.shape) == (2, NHEAD, t + 1, D_MODEL // NHEAD)
    assert capacities == [2, 2, 4, 4, 8, 8, 8]
    with pytest.raises(ValueError, match="capacity must be a positive int"):
        nn.KVCache(capacity=0)
    with pytest.raises(ValueError, match="holds 2 batch rows, the new keys 3"):
        cache.update(rand(3, NHEAD, 1, D_MODEL // NHEAD), rand(3, NHEAD, 1, D_MODEL // NHEAD))


def test_chunks_of_positions_with_is_causal_equal_the_whole(backend):
    """Several new positions per call: the kernel's causal offset masks each one's future."""
    attn = nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True).double().eval()
    x = rand(2, 6, D_MODEL, seed=3)
    pad = mt.tensor([[False] * 6, [False, True, False, False, True, False]])
    causal = mt.tensor(np.triu(np.ones((6, 6), bool), 1))
    with mt.no_grad():
        whole = attn(x, x, x, attn_mask=causal, key_padding_mask=pad)[0].numpy()
        cache, outs = nn.KVCache(capacity=3), []
        for start, stop in ((0, 2), (2, 5), (5, 6)):
            chunk = x[:, start:stop]
            outs.append(attn(chunk, chunk, chunk, is_causal=True, key_padding_mask=pad[:, :stop],
                             cache=cache)[0].numpy())
    np.testing.assert_allclose(np.concatenate(outs, axis=1), whole, rtol=1e-12, atol=1e-12)


def test_a_static_cache_moves_rows_only_when_their_origin_changes():
    attn = nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True).double().eval()
    memory = rand(3, 4, D_MODEL, seed=2)
    cache = nn.KVCache(static=True)
    with mt.no_grad():
        attn(rand(3, 1, D_MODEL), memory, memory, cache=cache)
    keys = cache._keys_t
    cache.reorder(mt.tensor(np.array([0, 1, 2])))
    assert cache._keys_t is keys  # every row keeps its own: nothing copied
    cache.reorder(mt.tensor(np.array([2, 2, 0])))
    assert cache._keys_t is not keys
    np.testing.assert_array_equal(cache._keys_t, keys[[2, 2, 0]])
    moved = cache._keys_t
    cache.reorder(mt.tensor(np.array([1, 0, -1])))  # rows 0 and 1 both hold source 2
    assert cache._keys_t is moved
    cache.reorder(mt.tensor(np.array([2, 0, 1])))
    assert cache._keys_t is not moved
    np.testing.assert_array_equal(cache._keys_t, keys[[0, 2, 2]])
    with pytest.raises(IndexError, match="index out of range for 3 rows"):
        cache.reorder(mt.tensor(np.array([0, 3, 1])))


def test_autograd_steps_then_inference_steps_share_one_cache(backend):
    """A cache started with autograd (Tensors joined by cat) and continued without: its
    positions move into buffers, and every step equals the whole causal run."""
    attn = nn.MultiheadAttention(D_MODEL, NHEAD, batch_first=True).double().eval()
    x = rand(2, 5, D_MODEL, seed=4)
    causal = mt.tensor(np.triu(np.ones((5, 5), bool), 1))
    with mt.no_grad():
        whole = attn(x, x, x, attn_mask=causal)[0].numpy()
    cache = nn.KVCache()
    for t in range(5):
        step = x[:, t:t + 1]
        with mt.no_grad() if t >= 2 else mt.enable_grad():
            out = attn(step, step, step, cache=cache)[0].detach().numpy()
        assert (cache._keys_t is None) == (t < 2)
        np.testing.assert_allclose(out[:, 0], whole[:, t], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
def test_the_models_step_embedding_and_generator_equal_its_modules(backend, dtype):
    """Seq2SeqTransformer.decode_step's array forms of _embed and the generator: bit for bit."""
    from minitorch.text.model import Seq2SeqTransformer
    mt.manual_seed(0)
    model = Seq2SeqTransformer(50, 40, d_model=8, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=1, dim_feedforward=12, max_len=16).to(dtype)
    tokens = mt.tensor(np.array([[0], [7], [39]]))
    hidden = rand(3, 1, 8, seed=5, dtype=dtype)
    with mt.no_grad():
        model.eval()
        np.testing.assert_array_equal(model._embed_step(tokens, 9).numpy(),
                                      model._embed(tokens, model.tgt_embed, 9).numpy())
        np.testing.assert_array_equal(model._generate_step(hidden).numpy(),
                                      model.generator(hidden).numpy())
