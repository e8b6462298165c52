"""Parity of minitorch.nn with torch.nn: the same layer built in both, PyTorch's state_dict
copied into minitorch's through numpy (so the keys must match one-to-one), then outputs, input
gradients and parameter gradients compared (float64: atol 1e-10; float32: 1e-5), on every
kernel backend. Dropout is 0 (or the module is compared in eval mode) so both are deterministic.
Skipped as a whole when PyTorch is not installed.
"""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F

torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")

TOL = {"float64": dict(atol=1e-10, rtol=1e-9), "float32": dict(atol=1e-5, rtol=1e-4)}
NP = {"float64": np.float64, "float32": np.float32}
DTYPES = ["float64", "float32"]


def _close(got, want, dtype, what):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != torch's {want.shape}"
    np.testing.assert_allclose(got, want, err_msg=what, **TOL[dtype])


def port(torch_module, mt_module, dtype):
    """Copy torch's state_dict into the minitorch module (keys must match exactly)."""
    torch_module.to(getattr(torch, dtype))
    mt_module.to(dtype)
    state = {k: v.detach().numpy() for k, v in torch_module.state_dict().items()}
    assert list(state) == list(mt_module.state_dict()), "state_dict keys differ from PyTorch's"
    mt_module.load_state_dict(state)


def compare(torch_fn, mt_fn, arrays, dtype, torch_module=None, mt_module=None, seed=0):
    """Run both on the same inputs; compare outputs, gradients of the float inputs and of the
    parameters (upstream gradient: a fixed random tensor per output)."""
    t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
            else a for a in arrays]
    m_in = [mt.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray)
            else a for a in arrays]
    t_out, m_out = torch_fn(*t_in), mt_fn(*m_in)
    t_outs = t_out if isinstance(t_out, tuple) else (t_out,)
    m_outs = m_out if isinstance(m_out, tuple) else (m_out,)
    rng = np.random.default_rng(seed)
    t_loss, m_loss = 0, 0
    for i, (t, m) in enumerate(zip(t_outs, m_outs)):
        if t is None:
            assert m is None, f"output {i}: torch gives None, minitorch does not"
            continue
        _close(m.detach().numpy(), t.detach().numpy(), dtype, f"output {i}")
        g = rng.standard_normal(tuple(t.shape)).astype(NP[dtype])
        t_loss = t_loss + (t * torch.tensor(g)).sum()
        m_loss = m_loss + (m * mt.tensor(g)).sum()
    t_loss.backward()
    m_loss.backward()
    for i, (t, m) in enumerate(zip(t_in, m_in)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            _close(m.grad.numpy(), t.grad.numpy(), dtype, f"gradient of input {i}")
    if torch_module is not None:
        m_params = dict(mt_module.named_parameters())
        for name, p in torch_module.named_parameters():
            assert name in m_params, f"parameter {name} missing in minitorch"
            if p.grad is None:
                assert m_params[name].grad is None or not m_params[name].grad.numpy().any()
                continue
            _close(m_params[name].grad.numpy(), p.grad.numpy(), dtype, f"gradient of {name}")


def randn(rng, *shape, dtype="float64"):
    return rng.standard_normal(shape).astype(NP[dtype])


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


# ----------------------------------------------------------------------------- simple layers

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
def test_linear(backend, rng, dtype, bias):
    tm, mm = torch.nn.Linear(5, 3, bias=bias), nn.Linear(5, 3, bias=bias)
    port(tm, mm, dtype)
    compare(tm, mm, [randn(rng, 2, 4, 5, dtype=dtype)], dtype, tm, mm)


@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_with_padding(backend, rng, dtype):
    tm, mm = torch.nn.Embedding(7, 4, padding_idx=2), nn.Embedding(7, 4, padding_idx=2)
    port(tm, mm, dtype)
    ids = np.array([[0, 2, 6], [2, 2, 1]])
    compare(lambda: tm(torch.tensor(ids)), lambda: mm(mt.tensor(ids)), [], dtype, tm, mm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,affine,bias", [(4, True, True), ((3, 4), True, True),
                                               (4, False, True), (4, True, False)])
def test_layer_norm(backend, rng, dtype, shape, affine, bias):
    tm = torch.nn.LayerNorm(shape, elementwise_affine=affine, bias=bias)
    mm = nn.LayerNorm(shape, elementwise_affine=affine, bias=bias)
    if affine:
        with torch.no_grad():
            tm.weight.normal_()
            if bias:
                tm.bias.normal_()
    port(tm, mm, dtype)
    compare(tm, mm, [randn(rng, 2, 3, 4, dtype=dtype)], dtype, tm, mm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,weighted,eps", [(4, True, None), ((3, 4), True, 1e-3),
                                                (4, False, None)])
def test_rms_norm(backend, rng, dtype, shape, weighted, eps):
    size = (shape,) if isinstance(shape, int) else shape
    arrays = [randn(rng, 2, 3, 4, dtype=dtype)] + ([randn(rng, *size, dtype=dtype)] if weighted
                                                   else [])
    compare(lambda *a: torch.nn.functional.rms_norm(a[0], size, *a[1:], eps=eps),
            lambda *a: F.rms_norm(a[0], size, *a[1:], eps=eps), arrays, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args", [("ReLU", ()), ("GELU", ()), ("GELU", ("tanh",)),
                                       ("Tanh", ()), ("Sigmoid", ()), ("Softmax", (-1,)),
                                       ("Softmax", (0,)), ("LogSoftmax", (1,)), ("Identity", ()),
                                       ("Dropout", (0.0,))])
def test_activations(backend, rng, dtype, name, args):
    tm, mm = getattr(torch.nn, name)(*args), getattr(nn, name)(*args)
    compare(tm, mm, [randn(rng, 3, 4, 5, dtype=dtype)], dtype)


# ----------------------------------------------------------------------------- losses

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy(backend, rng, dtype, reduction, smoothing):
    x = randn(rng, 5, 4, dtype=dtype)
    target = np.array([0, 3, -100, 2, 1])
    kw = dict(ignore_index=-100, reduction=reduction, label_smoothing=smoothing)
    compare(lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(target), **kw),
            lambda a: F.cross_entropy(a, mt.tensor(target), **kw), [x], dtype)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_spatial_and_unbatched(backend, rng, reduction):
    x = randn(rng, 2, 4, 3)
    target = np.array([[0, 3, 1], [2, 7, 1]])
    kw = dict(ignore_index=7, reduction=reduction, label_smoothing=0.1)
    compare(lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(target), **kw),
            lambda a: F.cross_entropy(a, mt.tensor(target), **kw), [x], "float64")
    compare(lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(2), reduction=reduction),
            lambda a: F.cross_entropy(a, mt.tensor(2), reduction=reduction),
            [randn(rng, 4)], "float64")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_weighted_cross_entropy_and_soft_targets(backend, rng, reduction):
    x, w = randn(rng, 5, 4), np.abs(randn(rng, 4)) + 0.1
    target = np.array([0, 3, -100, 2, 1])
    compare(lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(target), torch.tensor(w),
                                                        reduction=reduction),
            lambda a: F.cross_entropy(a, mt.tensor(target), mt.tensor(w), reduction=reduction),
            [x], "float64")
    probs = np.abs(randn(rng, 5, 4))
    probs /= probs.sum(1, keepdims=True)
    compare(lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(probs),
                                                        reduction=reduction, label_smoothing=0.1),
            lambda a: F.cross_entropy(a, mt.tensor(probs), reduction=reduction,
                                      label_smoothing=0.1), [x], "float64")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_loss(backend, rng, reduction, weighted):
    x = randn(rng, 2, 4, 3)
    w = np.abs(randn(rng, 4)) + 0.1 if weighted else None
    target = np.array([[0, 3, 1], [-100, 2, 1]])
    compare(lambda a: torch.nn.functional.nll_loss(
                a, torch.tensor(target), None if w is None else torch.tensor(w),
                reduction=reduction),
            lambda a: F.nll_loss(a, mt.tensor(target), None if w is None else mt.tensor(w),
                                 reduction=reduction), [x], "float64")


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(backend, rng, reduction):
    compare(lambda a, b: torch.nn.functional.mse_loss(a, b, reduction=reduction),
            lambda a, b: F.mse_loss(a, b, reduction=reduction),
            [randn(rng, 3, 4), randn(rng, 3, 4)], "float64")


# ----------------------------------------------------------------------------- attention

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_kind", ["none", "bool", "float", "causal", "causal_rect"])
def test_scaled_dot_product_attention(backend, rng, dtype, mask_kind):
    L, S = 3, (5 if mask_kind in ("bool", "float", "causal_rect") else 3)
    q, k, v = randn(rng, 2, 2, L, 4, dtype=dtype), randn(rng, 2, 2, S, 4, dtype=dtype), \
        randn(rng, 2, 2, S, 6, dtype=dtype)
    mask = None
    if mask_kind == "bool":
        mask = rng.random((L, S)) > 0.3
        mask[:, 0] = True  # no fully masked row: PyTorch gives NaN there
    elif mask_kind == "float":
        mask = randn(rng, 2, 1, L, S, dtype=dtype)
    causal = mask_kind.startswith("causal")

    def run(lib, fn):
        m = None if mask is None else lib.tensor(mask)
        return lambda a, b, c: fn(a, b, c, attn_mask=m, is_causal=causal)
    compare(run(torch, torch.nn.functional.scaled_dot_product_attention),
            run(mt, F.scaled_dot_product_attention), [q, k, v], dtype)
    compare(lambda a, b, c: torch.nn.functional.scaled_dot_product_attention(a, b, c, scale=0.3),
            lambda a, b, c: F.scaled_dot_product_attention(a, b, c, scale=0.3), [q, k, v], dtype)


def _mha_masks(rng, kind, n, heads, L, S):
    """(attn_mask, key_padding_mask) as numpy, in PyTorch's MHA convention (True = blocked)."""
    if kind == "none":
        return None, None
    if kind == "key_padding":
        kpm = np.zeros((n, S), dtype=bool)
        kpm[0, -2:] = True
        return None, kpm
    if kind == "bool":
        m = rng.random((L, S)) > 0.6
        m[:, 0] = False
        return m, None
    if kind == "float":
        return rng.standard_normal((L, S)), None
    if kind == "float3d":
        return rng.standard_normal((n * heads, L, S)), None
    if kind == "causal":
        return np.triu(np.ones((L, S), dtype=bool), 1), None
    if kind == "float+key_padding":
        kpm = np.zeros((n, S), dtype=bool)
        kpm[1, 1] = True
        return rng.standard_normal((L, S)), kpm
    raise AssertionError(kind)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kind", ["none", "key_padding", "bool", "float", "float3d", "causal",
                                  "float+key_padding"])
def test_multihead_self_attention(backend, rng, dtype, batch_first, kind):
    E, H, n, L = 4, 2, 2, 3
    tm = torch.nn.MultiheadAttention(E, H, batch_first=batch_first)
    mm = nn.MultiheadAttention(E, H, batch_first=batch_first)
    with torch.no_grad():
        tm.in_proj_bias.normal_()
        tm.out_proj.bias.normal_()
    port(tm, mm, dtype)
    attn_mask, kpm = _mha_masks(rng, kind, n, H, L, L)
    x = randn(rng, *((n, L, E) if batch_first else (L, n, E)), dtype=dtype)
    is_causal = kind == "causal"

    def call(lib, module, average):
        am = None if attn_mask is None else lib.tensor(attn_mask.astype(
            attn_mask.dtype if attn_mask.dtype == bool else NP[dtype]))
        pm = None if kpm is None else lib.tensor(kpm)
        return lambda a: module(a, a, a, key_padding_mask=pm, attn_mask=am, is_causal=is_causal,
                                average_attn_weights=average)
    for average in (True, False):
        tm.zero_grad()
        mm.zero_grad()
        compare(call(torch, tm, average), call(mt, mm, average), [x], dtype, tm, mm)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("kdim_vdim", [(None, None), (3, 5)])
def test_multihead_cross_attention(backend, rng, batch_first, kdim_vdim):
    E, H, n, L, S = 4, 2, 2, 3, 5
    kdim, vdim = kdim_vdim
    tm = torch.nn.MultiheadAttention(E, H, kdim=kdim, vdim=vdim, batch_first=batch_first)
    mm = nn.MultiheadAttention(E, H, kdim=kdim, vdim=vdim, batch_first=batch_first)
    port(tm, mm, "float64")
    def shape(length, d):
        return (n, length, d) if batch_first else (length, n, d)
    q, k, v = randn(rng, *shape(L, E)), randn(rng, *shape(S, kdim or E)), \
        randn(rng, *shape(S, vdim or E))
    kpm = np.zeros((n, S), dtype=bool)
    kpm[1, :2] = True
    compare(lambda a, b, c: tm(a, b, c, key_padding_mask=torch.tensor(kpm)),
            lambda a, b, c: mm(a, b, c, key_padding_mask=mt.tensor(kpm)),
            [q, k, v], "float64", tm, mm)


def test_multihead_attention_unbatched_and_no_weights(backend, rng):
    tm, mm = torch.nn.MultiheadAttention(4, 2), nn.MultiheadAttention(4, 2)
    port(tm, mm, "float64")
    x = randn(rng, 3, 4)
    compare(lambda a: tm(a, a, a), lambda a: mm(a, a, a), [x], "float64", tm, mm)
    compare(lambda a: tm(a, a, a, need_weights=False), lambda a: mm(a, a, a, need_weights=False),
            [x], "float64")


# ----------------------------------------------------------------------------- transformer

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_layer(backend, rng, dtype, norm_first, activation):
    kw = dict(dim_feedforward=8, dropout=0.0, activation=activation, norm_first=norm_first,
              batch_first=True)
    tm, mm = torch.nn.TransformerEncoderLayer(4, 2, **kw), nn.TransformerEncoderLayer(4, 2, **kw)
    port(tm, mm, dtype)
    kpm = np.array([[False, False, True], [False, False, False]])
    mask = np.triu(np.ones((3, 3), dtype=bool), 1)
    compare(lambda a: tm(a, src_mask=torch.tensor(mask),
                         src_key_padding_mask=torch.tensor(kpm)),
            lambda a: mm(a, src_mask=mt.tensor(mask), src_key_padding_mask=mt.tensor(kpm)),
            [randn(rng, 2, 3, 4, dtype=dtype)], dtype, tm, mm)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_decoder_layer(backend, rng, dtype, norm_first, activation):
    kw = dict(dim_feedforward=8, dropout=0.0, activation=activation, norm_first=norm_first)
    tm, mm = torch.nn.TransformerDecoderLayer(4, 2, **kw), nn.TransformerDecoderLayer(4, 2, **kw)
    port(tm, mm, dtype)
    tgt_mask = torch.nn.Transformer.generate_square_subsequent_mask(3).numpy().astype(NP[dtype])
    mem_kpm = np.array([[False, False, False, True], [False, False, False, False]])
    compare(lambda a, m: tm(a, m, tgt_mask=torch.tensor(tgt_mask),
                            memory_key_padding_mask=torch.tensor(mem_kpm)),
            lambda a, m: mm(a, m, tgt_mask=mt.tensor(tgt_mask),
                            memory_key_padding_mask=mt.tensor(mem_kpm)),
            [randn(rng, 3, 2, 4, dtype=dtype), randn(rng, 4, 2, 4, dtype=dtype)], dtype, tm, mm)


def test_encoder_and_decoder_stacks(backend, rng):
    enc_t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(4, 2, 8, 0.0), 2,
                                        norm=torch.nn.LayerNorm(4), enable_nested_tensor=False)
    enc_m = nn.TransformerEncoder(nn.TransformerEncoderLayer(4, 2, 8, 0.0), 2, norm=nn.LayerNorm(4))
    port(enc_t, enc_m, "float64")
    compare(enc_t, enc_m, [randn(rng, 3, 2, 4)], "float64", enc_t, enc_m)
    dec_t = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(4, 2, 8, 0.0), 2)
    dec_m = nn.TransformerDecoder(nn.TransformerDecoderLayer(4, 2, 8, 0.0), 2)
    port(dec_t, dec_m, "float64")
    compare(dec_t, dec_m, [randn(rng, 3, 2, 4), randn(rng, 5, 2, 4)], "float64", dec_t, dec_m)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_whole_transformer_with_masks(backend, rng, batch_first, norm_first):
    kw = dict(d_model=4, nhead=2, num_encoder_layers=2, num_decoder_layers=2,
              dim_feedforward=8, dropout=0.0, batch_first=batch_first, norm_first=norm_first)
    tm, mm = torch.nn.Transformer(**kw), nn.Transformer(**kw)
    port(tm, mm, "float64")
    n, S, T = 2, 4, 3
    src = randn(rng, *((n, S, 4) if batch_first else (S, n, 4)))
    tgt = randn(rng, *((n, T, 4) if batch_first else (T, n, 4)))
    tgt_mask = tm.generate_square_subsequent_mask(T, dtype=torch.float64).numpy()
    src_kpm = np.array([[False, False, False, True], [False, False, False, False]])
    tgt_kpm = np.array([[False, False, False], [False, False, True]])

    def call(lib, model):
        return lambda s, t: model(s, t, tgt_mask=lib.tensor(tgt_mask),
                                  src_key_padding_mask=lib.tensor(src_kpm),
                                  tgt_key_padding_mask=lib.tensor(tgt_kpm),
                                  memory_key_padding_mask=lib.tensor(src_kpm))
    compare(call(torch, tm), call(mt, mm), [src, tgt], "float64", tm, mm)


@pytest.mark.parametrize("size", [1, 4])
def test_generate_square_subsequent_mask(size):
    want = torch.nn.Transformer.generate_square_subsequent_mask(size).numpy()
    got = nn.Transformer.generate_square_subsequent_mask(size)
    assert got.dtype == mt.float32
    np.testing.assert_array_equal(got.numpy(), want)


def test_state_dict_keys_match_torch_for_every_layer():
    pairs = [
        (torch.nn.Linear(3, 2), nn.Linear(3, 2)),
        (torch.nn.Linear(3, 2, bias=False), nn.Linear(3, 2, bias=False)),
        (torch.nn.Embedding(5, 3), nn.Embedding(5, 3)),
        (torch.nn.LayerNorm(3, bias=False), nn.LayerNorm(3, bias=False)),
        (torch.nn.MultiheadAttention(4, 2, kdim=3, vdim=5),
         nn.MultiheadAttention(4, 2, kdim=3, vdim=5)),
        (torch.nn.MultiheadAttention(4, 2, bias=False), nn.MultiheadAttention(4, 2, bias=False)),
        (torch.nn.Transformer(4, 2, 2, 1, 8), nn.Transformer(4, 2, 2, 1, 8)),
        (torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU(), torch.nn.LayerNorm(2)),
         nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.LayerNorm(2))),
    ]
    for t, m in pairs:
        t_state, m_state = t.state_dict(), m.state_dict()
        assert list(t_state) == list(m_state), type(m).__name__
        for key in t_state:
            assert tuple(t_state[key].shape) == tuple(m_state[key].shape), key
        assert [n for n, _ in t.named_parameters()] == [n for n, _ in m.named_parameters()]
        assert sum(p.numel() for p in t.parameters()) == sum(p.numel() for p in m.parameters())


def test_repr_matches_torch_for_simple_layers():
    for t, m in [(torch.nn.Linear(3, 2), nn.Linear(3, 2)), (torch.nn.Embedding(5, 3, 1),
                                                            nn.Embedding(5, 3, 1)),
                 (torch.nn.LayerNorm(3), nn.LayerNorm(3)), (torch.nn.Dropout(0.1), nn.Dropout(0.1)),
                 (torch.nn.GELU("tanh"), nn.GELU("tanh")), (torch.nn.Softmax(-1), nn.Softmax(-1)),
                 (torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()),
                  nn.Sequential(nn.Linear(2, 2), nn.ReLU()))]:
        assert repr(m) == repr(t)


def test_init_statistics_match_torch_definitions():
    """Same bounds/std as torch.nn.init for the same shape (checked on large tensors)."""
    mt.manual_seed(0)
    w = mt.empty(200, 300)
    for fn, kw in [("kaiming_uniform_", dict(a=5 ** 0.5)), ("xavier_uniform_", {}),
                   ("kaiming_normal_", dict(nonlinearity="relu")),
                   ("xavier_normal_", dict(gain=2.0))]:
        getattr(nn.init, fn)(w, **kw)
        tw = getattr(torch.nn.init, fn)(torch.empty(200, 300), **kw)
        assert abs(w.numpy().std() - tw.numpy().std()) < 0.05 * tw.numpy().std(), fn
        if "uniform" in fn:  # the max of 60,000 uniform draws sits at the bound; of normals it wanders
            assert abs(np.abs(w.numpy()).max() - np.abs(tw.numpy()).max()) < 0.01 * np.abs(
                tw.numpy()).max(), fn
    for name in ["linear", "relu", "tanh", "sigmoid", "selu"]:
        assert nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2))
    for shape in [(3, 4), (5, 2, 3, 3)]:
        assert nn.init._calculate_fan_in_and_fan_out(mt.empty(*shape)) == \
            torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
