"""Transformer layers, stacks, the whole nn.Transformer and the positional encodings: gradient
checks (float64; inputs in full, parameters by random projections), both norm_first ways, relu
and gelu, masks, deep-copied layers, causal decoding, and the positional encodings' formulas.
"""
import copy
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.autograd import gradcheck

D_MODEL, NHEAD, FF = 4, 2, 6


def rand(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


def randomize(module, seed=0):
    """Random values for every parameter (LayerNorm's ones/zeros hide gradient errors)."""
    rng = np.random.default_rng(seed)
    with mt.no_grad():
        for p in module.parameters():
            p._data[...] = rng.standard_normal(p.shape) * 0.5 + (1.0 if p.ndim == 1 else 0.0)
    return module


def check(fn, inputs, module):
    assert gradcheck(fn, inputs)
    assert gradcheck(lambda *args: fn(*args[:len(inputs)]), (*inputs, *module.parameters()),
                     fast_mode=True)


# Each norm_first way and each activation once here (all four combinations are compared
# with PyTorch in test_nn_parity_torch.py).
@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_encoder_layer_gradcheck(backend, norm_first, activation):
    layer = randomize(nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                                 activation=activation,
                                                 norm_first=norm_first).double())
    pad = mt.tensor([[False, False, True], [False, False, False]])
    check(lambda x: layer(x, src_key_padding_mask=pad), (rand(3, 2, D_MODEL),), layer)


# Each norm_first way and each activation once here (all four combinations are compared
# with PyTorch in test_nn_parity_torch.py).
@pytest.mark.parametrize("norm_first,activation", [(False, "relu"), (True, "gelu")])
def test_decoder_layer_gradcheck(backend, norm_first, activation):
    layer = randomize(nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0,
                                                 activation=activation, norm_first=norm_first,
                                                 batch_first=True).double())
    mask = nn.Transformer.generate_square_subsequent_mask(3, dtype=mt.float64)
    check(lambda t, m: layer(t, m, tgt_mask=mask), (rand(2, 3, D_MODEL), rand(2, 2, D_MODEL,
                                                                               seed=1)), layer)


@pytest.mark.slow
def test_whole_transformer_gradcheck(backend):
    mt.manual_seed(0)
    model = nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, dropout=0.0).double()
    mask = model.generate_square_subsequent_mask(3, dtype=mt.float64)
    src_pad = mt.tensor([[False, False, False, True], [False] * 4])
    check(lambda s, t: model(s, t, tgt_mask=mask, src_key_padding_mask=src_pad,
                             memory_key_padding_mask=src_pad),
          (rand(4, 2, D_MODEL), rand(3, 2, D_MODEL, seed=1)), model)


def test_encoder_stack_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF)
    enc = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(D_MODEL))
    weights = [m.linear1.weight for m in enc.layers]
    assert len({id(w) for w in weights}) == 3 and all(w is not layer.linear1.weight
                                                      for w in weights)
    np.testing.assert_array_equal(weights[0].detach().numpy(), weights[2].detach().numpy())
    with mt.no_grad():
        weights[0]._data[...] = 0
    assert weights[1].detach().numpy().any()
    assert sum(p.numel() for p in enc.parameters()) == \
        3 * sum(p.numel() for p in layer.parameters()) + 2 * D_MODEL
    assert list(enc.state_dict())[0] == "layers.0.self_attn.in_proj_weight"
    assert list(enc.state_dict())[-1] == "norm.bias"


def test_transformer_shapes_batch_first_and_causal_decoding(backend):
    mt.manual_seed(1)
    model = nn.Transformer(D_MODEL, NHEAD, 2, 2, FF, dropout=0.0, batch_first=True).eval()
    model.requires_grad_(False)
    src, tgt = mt.randn(2, 5, D_MODEL), mt.randn(2, 3, D_MODEL)
    mask = model.generate_square_subsequent_mask(3)
    out = model(src, tgt, tgt_mask=mask)
    assert tuple(out.shape) == (2, 3, D_MODEL) and out.dtype == mt.float32
    # a causal decoder's output at step i depends on tgt[:i+1] only
    changed = tgt.numpy().copy()
    changed[:, 2] += 5.0
    out2 = model(src, mt.tensor(changed), tgt_mask=mask)
    np.testing.assert_allclose(out2.numpy()[:, :2], out.numpy()[:, :2], atol=1e-5)
    # is_causal without a mask means the same
    same = model(src, tgt, tgt_is_causal=True, tgt_mask=None)
    np.testing.assert_allclose(same.numpy(), out.numpy(), atol=1e-5)
    # changing the encoder input changes every decoder output
    assert not np.allclose(model(src * 2.0, tgt, tgt_mask=mask).numpy()[:, 0], out.numpy()[:, 0])


def test_transformer_errors_and_mask():
    model = nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    with pytest.raises(ValueError, match="batch number"):
        model(mt.randn(3, 2, D_MODEL), mt.randn(3, 1, D_MODEL))
    with pytest.raises(ValueError, match="d_model=4"):
        model(mt.randn(3, 2, 5), mt.randn(3, 2, 5))
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerEncoderLayer(4, 2, activation="swish")
    m = nn.Transformer.generate_square_subsequent_mask(3).numpy()
    assert m[0, 1] == -math.inf and m[1, 0] == 0 and m[2, 2] == 0 and m.dtype == np.float32
    assert nn.Transformer.generate_square_subsequent_mask(0, device="cpu").shape == (0, 0)


def test_square_subsequent_mask_has_the_default_dtype():
    """As PyTorch's: without dtype=, the mask has the default float dtype."""
    previous = mt.get_default_dtype()
    mt.set_default_dtype(mt.float64)
    try:
        mask = nn.Transformer.generate_square_subsequent_mask(2)
    finally:
        mt.set_default_dtype(previous)
    assert mask.dtype == mt.float64
    assert mask.tolist() == [[0.0, -math.inf], [0.0, 0.0]]


def test_transformer_dropout_trains_and_evals(backend):
    mt.manual_seed(0)
    layer = nn.TransformerEncoderLayer(D_MODEL, NHEAD, FF, dropout=0.5).requires_grad_(False)
    x = mt.randn(3, 2, D_MODEL)
    layer.eval()
    np.testing.assert_array_equal(layer(x).numpy(), layer(x).numpy())
    layer.train()
    assert not np.allclose(layer(x).numpy(), layer(x).numpy())


def test_xavier_reinit_of_matrices():
    mt.manual_seed(0)
    model = nn.Transformer(8, 2, 1, 1, 16)
    w = model.encoder.layers[0].linear1.weight.detach().numpy()
    assert np.abs(w).max() <= math.sqrt(6 / (8 + 16))
    assert not model.encoder.layers[0].self_attn.in_proj_bias.detach().numpy().any()


# ----------------------------------------------------------------------------- positions

def test_sinusoidal_encoding_formula_and_buffer(backend):
    pe = nn.SinusoidalPositionalEncoding(6, max_len=10)
    assert "pe" not in pe.state_dict() and dict(pe.named_buffers())["pe"].shape == (10, 6)
    x = mt.zeros(4, 2, 6)
    out = pe(x).numpy()
    pos, i = 3, 1
    assert out[pos, 1, 2 * i] == pytest.approx(math.sin(pos / 10000 ** (2 * i / 6)), abs=1e-6)
    assert out[pos, 0, 2 * i + 1] == pytest.approx(math.cos(pos / 10000 ** (2 * i / 6)),
                                                   abs=1e-6)
    shifted = pe(mt.zeros(1, 2, 6), start=3).numpy()
    np.testing.assert_array_equal(shifted[0], out[3])
    first = nn.SinusoidalPositionalEncoding(6, 10, batch_first=True)(mt.zeros(2, 4, 6)).numpy()
    np.testing.assert_array_equal(first[1], out[:, 1])
    assert tuple(nn.SinusoidalPositionalEncoding(5, 10)(mt.zeros(3, 5)).shape) == (3, 5)


def test_positional_encodings_gradcheck_and_dtype(backend):
    pe = nn.SinusoidalPositionalEncoding(4, 8).double()
    assert gradcheck(lambda x: pe(x, start=2), (rand(3, 2, 4),))
    mt.manual_seed(0)
    learned = nn.LearnedPositionalEmbedding(8, 4, batch_first=True).double()
    assert list(learned.state_dict()) == ["weight"]
    assert gradcheck(lambda x, w: learned(x, start=1), (rand(2, 3, 4), learned.weight))
    learned(rand(2, 3, 4), start=1).sum().backward()
    g = learned.weight.grad.numpy()
    assert not g[0].any() and not g[4:].any() and (g[1:4] == 2).all()


def test_positions_past_max_len_raise():
    with pytest.raises(ValueError, match=r"start=3 \+ length=3.*max_len=5"):
        nn.SinusoidalPositionalEncoding(4, max_len=5)(mt.zeros(3, 1, 4), start=3)
    with pytest.raises(ValueError, match="max_len=2"):
        nn.LearnedPositionalEmbedding(2, 4)(mt.zeros(3, 1, 4))


def test_copy_deepcopy_of_whole_model_is_independent():
    model = nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    twin = copy.deepcopy(model)
    for (name, a), (_, b) in zip(model.named_parameters(), twin.named_parameters()):
        assert a is not b and type(b) is nn.Parameter, name
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_empty_batch_flows_through_every_layer(backend):
    model = nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, batch_first=True)
    src = mt.zeros(0, 3, D_MODEL, requires_grad=True)
    out = model(src, mt.zeros(0, 2, D_MODEL))
    assert tuple(out.shape) == (0, 2, D_MODEL)
    out.sum().backward()
    assert tuple(src.grad.shape) == (0, 3, D_MODEL)
    emb = nn.Embedding(3, D_MODEL)
    assert tuple(emb(mt.zeros(0, 4, dtype=mt.int64)).shape) == (0, 4, D_MODEL)


# ----------------------------------------------------------------------------- KV cache

def _decoder(norm_first, num_layers=2, batch_first=True):
    mt.manual_seed(0)
    layer = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, norm_first=norm_first,
                                       batch_first=batch_first)
    decoder = nn.TransformerDecoder(layer, num_layers, norm=nn.LayerNorm(D_MODEL))
    return randomize(decoder.double()).eval().requires_grad_(False)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_cached_decoder_one_position_at_a_time_equals_the_causal_whole(backend, norm_first,
                                                                        padded):
    decoder = _decoder(norm_first)
    tgt, memory = rand(2, 5, D_MODEL, requires_grad=False), rand(2, 3, D_MODEL, seed=1,
                                                                 requires_grad=False)
    pad = mt.tensor([[False, False, True], [False, False, False]]) if padded else None
    causal = nn.Transformer.generate_square_subsequent_mask(5, dtype=mt.float64)
    whole = decoder(tgt, memory, tgt_mask=causal, memory_key_padding_mask=pad).numpy()
    cache = nn.TransformerDecoderCache(decoder.num_layers)
    for t in range(5):
        step = decoder(tgt[:, t:t + 1], memory, memory_key_padding_mask=pad, cache=cache)
        np.testing.assert_allclose(step.numpy()[:, 0], whole[:, t], atol=1e-12, rtol=0)
        assert cache.length == t + 1
    own, cross = cache.layers[1]
    assert len(own) == 5 and len(cross) == 3  # the memory's K/V once, the target's growing


def test_cached_decoder_layer_sequence_first(backend):
    layer = _decoder(False, batch_first=False).layers[0]
    tgt, memory = rand(4, 2, D_MODEL, requires_grad=False), rand(3, 2, D_MODEL, seed=1,
                                                                 requires_grad=False)
    whole = layer(tgt, memory, tgt_mask=nn.Transformer.generate_square_subsequent_mask(
        4, dtype=mt.float64)).numpy()
    cache = (nn.KVCache(), nn.KVCache(static=True))
    steps = [layer(tgt[t:t + 1], memory, cache=cache).numpy() for t in range(4)]
    np.testing.assert_allclose(np.concatenate(steps), whole, atol=1e-12, rtol=0)


def test_decoder_cache_reorder_moves_hypotheses_between_rows(backend):
    decoder = _decoder(True)
    tgt, memory = rand(3, 3, D_MODEL, requires_grad=False), rand(3, 2, D_MODEL, seed=1,
                                                                 requires_grad=False)
    rows = [2, 2, 0]
    cache = nn.TransformerDecoderCache(decoder.num_layers)
    for t in range(2):
        decoder(tgt[:, t:t + 1], memory, cache=cache)
    cache.reorder(rows)  # a list, as beam search passes; an int64 Tensor works too
    moved = decoder(tgt[rows, 2:3], memory, cache=cache).numpy()  # memory: cached, not read
    reference = decoder(tgt[rows], memory[rows], tgt_is_causal=True, tgt_mask=nn.Transformer.
                        generate_square_subsequent_mask(3, dtype=mt.float64)).numpy()
    np.testing.assert_allclose(moved[:, 0], reference[:, 2], atol=1e-12, rtol=0)


def test_decoder_cache_errors():
    decoder = _decoder(False)
    with pytest.raises(ValueError, match="cache has 3 layers, the decoder 2"):
        decoder(mt.ones(1, 1, D_MODEL, dtype=mt.float64), mt.ones(1, 2, D_MODEL,
                                                                   dtype=mt.float64),
                cache=nn.TransformerDecoderCache(3))
