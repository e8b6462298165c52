"""The C backend's planned decoder layer step (``backends/c_decoder_step.py``) held to the layer's
step through the checked kernels (``TransformerDecoderLayer._cached_step`` with no plan), bit for
bit: every step's output and both attentions' weights, across layouts, activations, masks,
dtypes, thread counts, beam search's reorders and the cache growing past its capacity; a plan
made again when a weight array is replaced; bad arrays a ValueError, never a crash. Skipped
where the C extension is not built (the plan is the C backend's)."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.nn import transformer

pytestmark = pytest.mark.skipif("c" not in mt.backends.available,
                                reason="the C extension is not built (the plan is the C backend's)")

D_MODEL, NHEAD, FF, STEPS = 16, 4, 24, 20


def make_decoder(dtype, norm_first, activation, bias, batch_first, seed=0):
    mt.manual_seed(seed)
    layer = nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=activation,
                                       norm_first=norm_first, bias=bias, batch_first=batch_first)
    decoder = nn.TransformerDecoder(layer, 2).to(dtype).eval()
    rng = np.random.default_rng(seed)
    with mt.no_grad():  # random norms and biases: ones and zeros would hide a swapped operand
        for p in decoder.parameters():
            p._data[...] = rng.standard_normal(p.shape) * 0.5 + (1.0 if p.ndim == 1 else 0.0)
    return decoder


def decode(decoder, dtype, planned, batch_first=True, tgt_padded=False, memory_padded=False,
           reorders=None, between=None):
    """Each step's output and the last step's attention weights, with or without the plan."""
    rng = np.random.default_rng(1)
    n, s = 3, 5
    tgt = rng.standard_normal((n, STEPS, D_MODEL))
    memory = mt.tensor(rng.standard_normal((n, s, D_MODEL)), dtype=dtype)
    memory_pad = mt.tensor([[False] * s, [False, False, True, True, True], [True] + [False] * 4])
    tgt_pad = rng.random((n, STEPS)) < 0.2
    tgt_pad[:, 0] = False
    if not batch_first:
        memory = memory.transpose(0, 1)
    cache = nn.TransformerDecoderCache(decoder.num_layers)
    outs, original = [], transformer.TransformerDecoderLayer._step_plan
    if not planned:
        transformer.TransformerDecoderLayer._step_plan = lambda *args: None
    try:
        with mt.no_grad():
            for t in range(STEPS):
                if reorders and t in reorders:
                    cache.reorder(reorders[t])
                    tgt, tgt_pad = tgt[reorders[t]], tgt_pad[reorders[t]]
                if between and t in between:
                    between[t](decoder)
                x = mt.tensor(tgt[:, t:t + 1], dtype=dtype)
                out = decoder(x if batch_first else x.transpose(0, 1), memory,
                              tgt_key_padding_mask=(mt.tensor(np.ascontiguousarray(
                                  tgt_pad[:, :t + 1])) if tgt_padded else None),
                              memory_key_padding_mask=memory_pad if memory_padded else None,
                              cache=cache)
                outs.append(out.numpy().copy())
    finally:
        transformer.TransformerDecoderLayer._step_plan = original
    plans = [pair[0].step_plan for pair in cache.layers]
    assert all((plan is not None) == planned for plan in plans), "not the path under test"
    weights = [cache_.weights.numpy().copy() for pair in cache.layers for cache_ in pair]
    return outs, weights


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
@pytest.mark.parametrize("norm_first,activation,bias", [(False, "relu", True),
                                                        (True, "gelu", True),
                                                        (False, "gelu", False)])
@pytest.mark.parametrize("tgt_padded,memory_padded", [(False, False), (True, True)])
@pytest.mark.parametrize("count", [1, 2])
def test_planned_steps_equal_the_checked_kernels_bit_for_bit(threads, count, dtype, norm_first,
                                                              activation, bias, tgt_padded,
                                                              memory_padded):
    threads(count)
    decoder = make_decoder(dtype, norm_first, activation, bias, batch_first=True)
    kwargs = dict(tgt_padded=tgt_padded, memory_padded=memory_padded,
                  reorders={4: [0, 0, 1], 9: [2, 1, 0], 17: [1, 1, 2]})
    planned = decode(decoder, dtype, True, **kwargs)
    checked = decode(decoder, dtype, False, **kwargs)
    for step, (p, c) in enumerate(zip(planned[0], checked[0])):
        np.testing.assert_array_equal(p, c, err_msg=f"step {step}")
    for p, c in zip(planned[1], checked[1]):
        np.testing.assert_array_equal(p, c, err_msg="attention weights")


def test_sequence_first_layers_take_the_plan_too():
    decoder = make_decoder(mt.float64, False, "relu", True, batch_first=False)
    planned = decode(decoder, mt.float64, True, batch_first=False, memory_padded=True)
    checked = decode(decoder, mt.float64, False, batch_first=False, memory_padded=True)
    for p, c in zip(planned[0], checked[0]):
        np.testing.assert_array_equal(p, c)


def test_a_replaced_weight_makes_a_new_plan():
    decoder = make_decoder(mt.float64, False, "relu", True, batch_first=True)
    replacement = np.random.default_rng(5).standard_normal((FF, D_MODEL))

    def replace(d):
        d.layers[1].linear1.weight.data = mt.tensor(replacement)
    planned = decode(decoder, mt.float64, True, between={6: replace})
    decoder = make_decoder(mt.float64, False, "relu", True, batch_first=True)
    checked = decode(decoder, mt.float64, False, between={6: replace})
    for p, c in zip(planned[0], checked[0]):
        np.testing.assert_array_equal(p, c)
    unchanged = decode(make_decoder(mt.float64, False, "relu", True, True), mt.float64, True)
    assert not np.array_equal(unchanged[0][-1], planned[0][-1])  # the new weight did count


def test_a_layer_with_an_unaligned_weight_takes_the_checked_path():
    decoder = make_decoder(mt.float64, False, "relu", True, batch_first=True)
    weight = decoder.layers[0].linear2.weight
    raw = np.empty(weight._data.nbytes + 1, np.uint8)
    unaligned = raw[1:].view(np.float64).reshape(weight.shape)  # as np.frombuffer at an odd offset
    unaligned[...] = weight._data
    weight._data = unaligned
    assert not weight._data.flags.aligned
    cache = nn.TransformerDecoderCache(decoder.num_layers)
    memory = mt.tensor(np.random.default_rng(2).standard_normal((2, 3, D_MODEL)))
    with mt.no_grad():
        for t in range(3):
            decoder(mt.tensor(np.random.default_rng(t).standard_normal((2, 1, D_MODEL))), memory,
                    cache=cache)
    assert cache.layers[0][0].step_plan is None and cache.layers[1][0].step_plan is not None


def test_greedy_and_beam_search_tokens_equal_without_the_plan():
    from minitorch.text.decoding import beam_search, greedy_decode
    from minitorch.text.model import Seq2SeqTransformer
    mt.manual_seed(0)
    model = Seq2SeqTransformer(40, 40, d_model=16, nhead=4, num_encoder_layers=1,
                               num_decoder_layers=2, dim_feedforward=32, dropout=0.0).eval()
    src = mt.tensor(np.random.default_rng(0).integers(4, 40, (3, 6)))
    special = dict(max_len=12, bos_id=2, eos_id=3, pad_id=0)
    runs = []
    for planned in (True, False):
        original = transformer.TransformerDecoderLayer._step_plan
        if not planned:
            transformer.TransformerDecoderLayer._step_plan = lambda *args: None
        try:
            runs.append((greedy_decode(model, src, **special),
                         beam_search(model, src, beam_size=3, **special)))
        finally:
            transformer.TransformerDecoderLayer._step_plan = original
    assert runs[0] == runs[1]


# ----------------------------------------------------------------------------- bad arrays

def plan_and_arrays(dtype=np.float64, n=2):
    from minitorch.backends.c_decoder_step import VECTORS, WEIGHTS, DecoderLayerStep
    rng = np.random.default_rng(0)
    e, h, d = D_MODEL, NHEAD, D_MODEL // NHEAD
    shapes = {"in_proj_weight": (3 * e, e), "cross_in_proj_weight": (3 * e, e),
              "linear1_weight": (FF, e), "linear2_weight": (e, FF), "in_proj_bias": (3 * e,),
              "cross_in_proj_bias": (3 * e,), "linear1_bias": (FF,)}
    arrays = {name: rng.standard_normal(shapes.get(name, (e, e) if name in WEIGHTS else (e,)))
              .astype(dtype) for name in WEIGHTS + VECTORS}
    plan = DecoderLayerStep(arrays, heads=h, norm_first=False, activation="relu",
                            eps=(1e-5,) * 3, n=n, length=1)
    step = dict(x=rng.standard_normal((n, 1, e)).astype(dtype),
                kt=np.zeros((n, h, d, 4), dtype), v=np.zeros((n, h, 4, d), dtype), past=2,
                mask=None, causal=False, cross_kt=rng.standard_normal((n, h, d, 3)).astype(dtype),
                cross_v=rng.standard_normal((n, h, 3, d)).astype(dtype), cross_mask=None,
                cross_causal=False)
    return DecoderLayerStep, arrays, plan, step


def test_a_good_step_runs_and_writes_the_new_keys_at_past():
    _, _, plan, step = plan_and_arrays()
    out, self_weights, cross_weights = plan(**step)
    assert out.shape == (2, 1, D_MODEL) and np.isfinite(out).all()
    assert self_weights.shape == (2, NHEAD, 1, 3) and cross_weights.shape == (2, NHEAD, 1, 3)
    np.testing.assert_allclose(self_weights.sum(-1), 1.0)
    assert step["kt"][..., 2].any() and not step["kt"][..., 3].any()


@pytest.mark.parametrize("name,value,message", [
    ("x", np.zeros((2, 1, D_MODEL), np.float32), "x must be"),
    ("x", np.zeros((3, 1, D_MODEL)), "x must be"),
    ("x", np.zeros((2, 1, 2 * D_MODEL))[..., ::2], "x must be"),
    ("kt", np.zeros((2, NHEAD, 3, 4)), "kt must be"),
    ("v", np.zeros((2, NHEAD, 8, 4))[:, :, ::2], "v must be"),
    ("past", 4, "do not fit"),
    ("past", -1, "do not fit"),
    ("cross_v", np.zeros((2, NHEAD, 2, 4)), "different lengths"),
    ("mask", np.zeros((2, 2), bool), "mask must be"),
    ("cross_mask", np.zeros((2, 3), np.int64), "cross_mask must be"),
])
def test_bad_step_arrays_raise(name, value, message):
    _, _, plan, step = plan_and_arrays()
    step[name] = value
    with pytest.raises(ValueError, match=message):
        plan(**step)


@pytest.mark.parametrize("name,value,message", [
    ("linear1_weight", np.zeros((FF, D_MODEL), np.float32), "linear1_weight must be .* float64"),
    ("in_proj_weight", np.zeros((3 * D_MODEL, D_MODEL), np.int64), "in_proj_weight must be"),
    ("linear2_weight", np.zeros((D_MODEL, FF + 1)), "linear2_weight must be"),
    ("norm1_bias", np.zeros(D_MODEL + 1), "norm1_bias must be"),
    ("out_proj_weight", np.zeros((D_MODEL, 2 * D_MODEL))[:, ::2], "out_proj_weight must be"),
])
def test_bad_weights_raise(name, value, message):
    plan_class, arrays, _, _ = plan_and_arrays()
    arrays[name] = value
    with pytest.raises(ValueError, match=message):
        plan_class(arrays, heads=NHEAD, norm_first=False, activation="relu", eps=(1e-5,) * 3,
                   n=2, length=1)
    arrays = plan_and_arrays()[1]
    with pytest.raises(ValueError, match="activation must be"):
        plan_class(arrays, heads=NHEAD, norm_first=False, activation="tanh", eps=(1e-5,) * 3,
                   n=2, length=1)
