"""minitorch.models.gpt: the decoder-only language model and its generation.

KV-cached forward and generation against the uncached ones (float64, 1e-10), causality (the
logits at position i do not move, and the gradient with respect to later tokens' embeddings is
exactly zero), top-k/top-p sampling drawing only from the allowed set and reproducibly by seed,
weight tying and GPT-2's initialisation, gradients (gradcheck), and the errors bad input gets.
The same model in PyTorch is compared in test_gpt_parity_torch.py; the example in
test_gpt_example.py.
"""
import math

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn
from minitorch.autograd import gradcheck
from minitorch.models import GPT, GPTConfig
from minitorch.models.gpt import filter_logits

TINY = dict(vocab_size=13, block_size=10, n_layer=2, n_head=2, n_embd=8)


def tiny_model(seed=0, dtype=mt.float64, scale=1.0, **changes):
    """A tiny GPT whose weights are scaled up by ``scale`` (GPT-2's N(0, 0.02) gives nearly
    uniform next-token distributions, which would let sampling tests pass by luck)."""
    mt.manual_seed(seed)
    model = GPT(GPTConfig(**{**TINY, **changes})).to(dtype)
    if scale != 1.0:
        with mt.no_grad():
            for p in model.parameters():
                if p.ndim > 1:
                    p._data[...] *= scale
    return model.eval()


def logits_of(model, idx, **kwargs):
    """The logits as a numpy array (no graph)."""
    with mt.no_grad():
        return model(idx, **kwargs)[0].numpy()


def ids(*shape, seed=0, vocab=TINY["vocab_size"]):
    return mt.tensor(np.random.default_rng(seed).integers(0, vocab, shape), dtype=mt.int64)


# ------------------------------------------------------------------------- the model


def test_config_checks_its_sizes():
    with pytest.raises(ValueError, match="divisible"):
        GPTConfig(n_embd=10, n_head=3)
    with pytest.raises(ValueError, match="block_size"):
        GPTConfig(block_size=0)
    with pytest.raises(ValueError, match="dropout"):
        GPTConfig(dropout=1.0)
    with pytest.raises(TypeError, match="GPTConfig"):
        GPT(dict(TINY))


def test_state_dict_names_follow_pytorchs_blocks_and_the_head_is_tied():
    model = tiny_model()
    names = list(model.state_dict())
    assert names[:3] == ["token_embedding.weight", "position_embedding.weight",
                         "blocks.0.self_attn.in_proj_weight"]
    for key in ("blocks.1.self_attn.out_proj.weight", "blocks.1.linear1.bias",
                "blocks.1.linear2.weight", "blocks.1.norm1.weight", "blocks.1.norm2.bias",
                "ln_f.weight", "lm_head.weight"):
        assert key in names
    assert model.lm_head.weight is model.token_embedding.weight
    # parameters() counts the tied matrix once, as PyTorch does
    assert "lm_head.weight" not in dict(model.named_parameters())
    assert len(list(model.parameters())) == len(names) - 1


def test_bias_false_leaves_out_every_bias():
    names = list(tiny_model(bias=False).state_dict())
    assert not [n for n in names if n.endswith("bias")]


def test_gpt2_initialisation():
    mt.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=512, block_size=64, n_layer=4, n_head=4, n_embd=64))
    residual = 0.02 / math.sqrt(2 * 4)
    block = model.blocks[2]
    for p, std in ((model.token_embedding.weight, 0.02), (model.position_embedding.weight, 0.02),
                   (block.self_attn.in_proj_weight, 0.02), (block.linear1.weight, 0.02),
                   (block.self_attn.out_proj.weight, residual), (block.linear2.weight, residual)):
        assert abs(p.detach().numpy().std() / std - 1) < 0.05
        assert abs(p.detach().numpy().mean()) < 0.1 * std
    for p in (block.linear1.bias, block.self_attn.in_proj_bias, block.norm1.bias):
        assert not p.detach().numpy().any()
    assert (block.norm1.weight.detach().numpy() == 1).all()


def test_loss_is_cross_entropy_of_the_logits_and_ignores_minus_100():
    model = tiny_model()
    idx, targets = ids(3, 6, seed=1), ids(3, 6, seed=2)
    logits, loss = model(idx, targets)
    assert tuple(logits.shape) == (3, 6, TINY["vocab_size"])
    z = logits.detach().numpy().reshape(-1, TINY["vocab_size"])
    log_probs = z - z.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    t = targets.numpy().reshape(-1)
    np.testing.assert_allclose(loss.item(), -log_probs[np.arange(t.size), t].mean(), rtol=1e-12)
    masked = targets.numpy().copy()
    masked[:, 3:] = -100
    _, loss_masked = model(idx, mt.tensor(masked))
    keep = (masked.reshape(-1) != -100)
    np.testing.assert_allclose(loss_masked.item(),
                               -log_probs[np.arange(t.size), t][keep].mean(), rtol=1e-12)
    assert model(idx)[1] is None


def test_gradients_pass_gradcheck():
    model = tiny_model(n_layer=1, block_size=5, scale=3.0)
    idx, targets = ids(2, 4, seed=3), ids(2, 4, seed=4)
    params = list(model.parameters())

    def loss(*weights):
        return model(idx, targets)[1]
    assert gradcheck(loss, params, fast_mode=True)


# ------------------------------------------------------------------------- causality


def test_output_at_position_i_ignores_later_tokens():
    model = tiny_model(scale=3.0)
    idx = ids(2, 9, seed=5)
    logits = logits_of(model, idx)
    for i in (0, 4, 7):
        changed = idx.numpy().copy()
        changed[:, i + 1:] = (changed[:, i + 1:] + 1 + np.arange(9 - i - 1)) % 13
        other = logits_of(model, mt.tensor(changed))
        np.testing.assert_array_equal(other[:, :i + 1], logits[:, :i + 1])
        assert not np.allclose(other[:, i + 1:], logits[:, i + 1:])  # later positions do move


def test_gradient_wrt_later_token_embeddings_is_exactly_zero():
    model = tiny_model(scale=3.0)
    captured = []
    model.token_embedding.register_forward_hook(lambda m, inputs, out: captured.append(out))
    model.token_embedding.register_forward_hook(lambda m, inputs, out: out.retain_grad())
    idx = ids(2, 8, seed=6)
    logits = model(idx)[0]
    i = 3
    logits[:, i].sum().backward()
    grad = captured[0].grad.numpy()
    assert (grad[:, i + 1:] == 0).all()
    assert (np.abs(grad[:, :i + 1]).sum(-1) > 0).all()  # the earlier ones do get gradient


# ------------------------------------------------------------------------- the KV cache


@pytest.mark.parametrize("chunks", [(1,) * 9, (4, 1, 1, 3), (9,)])
def test_cached_forward_equals_the_full_forward(chunks):
    model = tiny_model(scale=2.0)
    idx = ids(3, 9, seed=7)
    full = logits_of(model, idx)
    cache, start, pieces = model.new_cache(), 0, []
    for size in chunks:
        pieces.append(logits_of(model, idx[:, start:start + size], cache=cache))
        start += size
    assert len(cache[0]) == 9
    np.testing.assert_allclose(np.concatenate(pieces, axis=1), full, rtol=0, atol=1e-10)


@pytest.mark.parametrize("new_tokens", [5, 12])  # within block_size, and past it (cropping)
def test_greedy_generation_with_and_without_cache_is_identical(new_tokens):
    model = tiny_model(scale=2.0)
    prompt = ids(4, 3, seed=8)
    cached = model.generate(prompt, new_tokens, do_sample=False)
    uncached = model.generate(prompt, new_tokens, do_sample=False, use_cache=False)
    assert tuple(cached.shape) == (4, 3 + new_tokens)
    np.testing.assert_array_equal(cached.numpy(), uncached.numpy())
    np.testing.assert_array_equal(cached.numpy()[:, :3], prompt.numpy())
    # each greedy token is the argmax of the full forward over the (cropped) context
    out = cached.numpy()
    for t in range(3, 3 + new_tokens):
        context = mt.tensor(out[:, max(0, t - TINY["block_size"]):t])
        np.testing.assert_array_equal(out[:, t], logits_of(model, context)[:, -1].argmax(-1))


def test_sampled_generation_with_and_without_cache_is_identical():
    model = tiny_model(scale=2.0)
    prompt = ids(3, 2, seed=9)
    runs = [model.generate(prompt, 14, top_k=5, generator=mt.Generator().manual_seed(3),
                           use_cache=use_cache).numpy() for use_cache in (True, False)]
    np.testing.assert_array_equal(*runs)


def test_generate_restores_training_mode_and_records_no_graph():
    model = tiny_model(dropout=0.5)
    model.train()
    out = model.generate(ids(1, 2), 3)
    assert model.training and not out.requires_grad
    model.eval()
    model.generate(ids(1, 2), 3)
    assert not model.training


# ------------------------------------------------------------------------- sampling


def _allowed(logits, top_k=None, top_p=None):
    """Per row, the set of tokens top-k / top-p allow: the formula written out with numpy."""
    rows = []
    for z in logits:
        keep = np.ones(z.size, bool)
        if top_k is not None:
            keep &= z >= np.sort(z)[-top_k]
        if top_p is not None:
            p = np.exp(np.where(keep, z, -np.inf) - z.max())
            p /= p.sum()
            order = np.argsort(-p, kind="stable")
            before = np.cumsum(p[order]) - p[order]
            keep[order[before >= top_p]] = False
        rows.append(set(np.flatnonzero(keep)))
    return rows


def test_filter_logits_on_known_distributions():
    logits = mt.tensor(np.log([[0.5, 0.3, 0.15, 0.05], [0.05, 0.15, 0.3, 0.5]]))

    def kept(**kw):
        return [set(np.flatnonzero(np.isfinite(row))) for row in
                filter_logits(logits, **kw).numpy()]
    assert kept(top_k=2) == [{0, 1}, {2, 3}]
    assert kept(top_k=99) == [{0, 1, 2, 3}] * 2
    assert kept(top_p=0.5) == [{0}, {3}]           # the top token alone reaches 0.5
    assert kept(top_p=0.6) == [{0, 1}, {2, 3}]
    assert kept(top_p=0.79) == [{0, 1}, {2, 3}]    # 0.5 + 0.3 reaches 0.79
    assert kept(top_p=0.81) == [{0, 1, 2}, {1, 2, 3}]
    assert kept(top_p=1e-9) == [{0}, {3}]          # never empty
    assert kept(top_k=3, top_p=0.9) == [{0, 1, 2}, {1, 2, 3}]


@pytest.mark.parametrize("options", [dict(top_k=3), dict(top_p=0.6), dict(top_k=4, top_p=0.7),
                                     dict(top_k=1)])
def test_sampling_never_draws_outside_the_allowed_set(options):
    model = tiny_model(scale=4.0)
    prompt = ids(24, 2, seed=10)
    out = model.generate(prompt, 6, generator=mt.Generator().manual_seed(0), **options).numpy()
    drawn_outside_top1 = 0
    for t in range(2, 8):
        logits = logits_of(model, mt.tensor(out[:, :t]))[:, -1]
        allowed = _allowed(logits, **options)
        for row, token in enumerate(out[:, t]):
            assert token in allowed[row], (t, row, token, allowed[row])
        drawn_outside_top1 += int((out[:, t] != logits.argmax(-1)).sum())
    if options.get("top_k") != 1:
        assert drawn_outside_top1 > 0  # it does sample, not just take the argmax
    else:
        assert drawn_outside_top1 == 0


def test_sampling_is_reproducible_by_seed():
    model = tiny_model(scale=2.0)
    prompt = ids(4, 2, seed=11)

    def draw(seed):
        return model.generate(prompt, 10, temperature=1.5, top_p=0.95,
                              generator=mt.Generator().manual_seed(seed)).numpy()
    np.testing.assert_array_equal(draw(1), draw(1))
    assert (draw(1) != draw(2)).any()
    mt.manual_seed(7)
    first = model.generate(prompt, 10).numpy()
    mt.manual_seed(7)
    np.testing.assert_array_equal(model.generate(prompt, 10).numpy(), first)


def test_low_temperature_sampling_becomes_greedy():
    model = tiny_model(scale=2.0)
    prompt = ids(3, 2, seed=12)
    cold = model.generate(prompt, 8, temperature=1e-4, generator=mt.Generator().manual_seed(0))
    np.testing.assert_array_equal(cold.numpy(),
                                  model.generate(prompt, 8, do_sample=False).numpy())


# ------------------------------------------------------------------------- bad input


def test_prompt_longer_than_the_context_is_refused():
    model = tiny_model()
    with pytest.raises(ValueError, match="block_size=10"):
        model.generate(ids(1, 11), 2)
    with pytest.raises(ValueError, match="longer than block_size 10"):
        model(ids(1, 11))
    cache = model.new_cache()
    model(ids(1, 8), cache=cache)
    with pytest.raises(ValueError, match="8 cached \\+ 3 new"):
        model(ids(1, 3), cache=cache)


@pytest.mark.parametrize("bad", [13, -1, 100])
def test_token_ids_outside_the_vocabulary_are_refused(bad):
    model = tiny_model()
    prompt = ids(2, 4).numpy()
    prompt[1, 2] = bad
    with pytest.raises(IndexError, match=f"token id {bad}, outside the vocabulary \\[0, 13\\)"):
        model.generate(mt.tensor(prompt), 2)
    with pytest.raises(IndexError, match="outside the vocabulary"):
        model(mt.tensor(prompt))


@pytest.mark.parametrize("call, error, words", [
    (lambda m: m(mt.tensor([1, 2, 3])), ValueError, "(N, T)"),
    (lambda m: m(mt.tensor([[1.0, 2.0]])), TypeError, "integer"),
    (lambda m: m([[1, 2]]), TypeError, "Tensor"),
    (lambda m: m(ids(2, 3), ids(2, 4)), ValueError, "targets"),
    (lambda m: m.generate(mt.zeros(1, 0, dtype=mt.int64), 2), ValueError, "1 to block_size"),
    (lambda m: m.generate(ids(1, 2), -1), ValueError, "max_new_tokens"),
    (lambda m: m.generate(ids(1, 2), 2, temperature=0), ValueError, "temperature"),
    (lambda m: m.generate(ids(1, 2), 2, temperature=float("nan")), ValueError, "temperature"),
    (lambda m: m.generate(ids(1, 2), 2, top_k=0), ValueError, "top_k"),
    (lambda m: m.generate(ids(1, 2), 2, top_p=0.0), ValueError, "top_p"),
    (lambda m: m.generate(ids(1, 2), 2, top_p=1.5), ValueError, "top_p"),
    (lambda m: m(ids(1, 2), cache=[nn.KVCache()]), ValueError, "one KVCache per block"),
])
def test_bad_calls_raise_clear_errors(call, error, words):
    with pytest.raises(error, match=words.replace("(", "\\(").replace(")", "\\)")):
        call(tiny_model())


def test_greedy_generation_ignores_sampling_options():
    model = tiny_model()
    out = model.generate(ids(1, 2), 3, do_sample=False, temperature=0, top_k=0)
    assert tuple(out.shape) == (1, 5)


def test_readme_snippet_runs():
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                 if "GPTConfig(" in b)
    namespace = {}
    exec(compile(block, "README.md:gpt", "exec"), namespace)
    assert tuple(namespace["logits"].shape) == (4, 16, 65)
    assert tuple(namespace["out"].shape) == (4, 23) == tuple(namespace["greedy"].shape)
    assert namespace["model"].token_embedding.weight.grad is not None
