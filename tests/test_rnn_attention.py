"""AdditiveAttention and DotProductAttention: gradients, weights that sum to 1 and vanish on
padding, padding that changes nothing for the real positions, one step equal to many, the
formulas written out in PyTorch (where installed), and bad input."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.autograd import gradcheck


def rand(*shape, seed=0, requires_grad=True):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=requires_grad)


def make(kind, query_size=4, key_size=6, seed=0):
    mt.manual_seed(seed)
    if kind == "additive":
        return nn.AdditiveAttention(query_size, key_size, hidden_size=5).double()
    return nn.DotProductAttention(query_size, key_size).double()


PADDING = mt.tensor([[False, False, True, True], [False, False, False, False],
                     [False, True, True, True]])
KINDS = ["additive", "dot"]


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_with_padding_and_separate_values(backend, kind):
    att = make(kind)
    query, keys, values = rand(3, 4, seed=1), rand(3, 4, 6, seed=2), rand(3, 4, 2, seed=3)
    assert gradcheck(lambda q, k, v, *params: att(q, k, v, key_padding_mask=PADDING)[0],
                     (query, keys, values, *att.parameters()))
    assert gradcheck(lambda q, k: att(q, k, key_padding_mask=PADDING)[1], (query, keys))


@pytest.mark.parametrize("kind", KINDS)
def test_gradcheck_many_queries_and_non_contiguous_keys(backend, kind):
    att = make(kind)
    keys = rand(6, 3, 2, seed=4).permute(2, 1, 0)                   # (2, 3, 6), not contiguous
    assert not keys.is_contiguous()
    assert gradcheck(lambda q, k: att(q, k)[0], (rand(2, 5, 4, seed=5), keys))


@pytest.mark.parametrize("kind", KINDS)
def test_weights_sum_to_one_and_vanish_on_padding(kind):
    att = make(kind)
    context, weights = att(rand(3, 4, seed=1), rand(3, 4, 6, seed=2), key_padding_mask=PADDING)
    w = weights.detach().numpy()
    assert context.shape == (3, 6) and w.shape == (3, 4)
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (w[PADDING.numpy()] == 0).all()
    assert (w[~PADDING.numpy()] > 0).all()


@pytest.mark.parametrize("kind", KINDS)
def test_padding_changes_nothing_for_real_positions(kind):
    """A source alone gives what it gives inside a padded batch, whatever the padding holds."""
    att = make(kind)
    query, keys = rand(3, 4, seed=1, requires_grad=False), rand(3, 4, 6, seed=2)
    context, weights = att(query, keys, key_padding_mask=PADDING)
    for row, length in enumerate((2, 4, 1)):
        alone_context, alone_weights = att(query[row:row + 1], keys[row:row + 1, :length])
        np.testing.assert_allclose(context[row].detach().numpy(),
                                   alone_context[0].detach().numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(weights[row, :length].detach().numpy(),
                                   alone_weights[0].detach().numpy(), rtol=1e-12, atol=1e-14)
    garbage = keys.detach().numpy().copy()
    garbage[PADDING.numpy()] = 1e3
    again, _ = att(query, mt.tensor(garbage), key_padding_mask=PADDING)
    np.testing.assert_allclose(again.detach().numpy(), context.detach().numpy(), rtol=1e-12)
    # and no gradient reaches the padded keys
    context.sum().backward()
    assert (keys.grad.numpy()[PADDING.numpy()] == 0).all()


@pytest.mark.parametrize("kind", KINDS)
def test_many_queries_equal_one_step_at_a_time_and_projected_keys(kind):
    att = make(kind)
    queries, keys = rand(3, 5, 4, seed=6), rand(3, 4, 6, seed=2)
    context, weights = att(queries, keys, key_padding_mask=PADDING)
    projected = att.project_keys(keys)
    for t in range(5):
        step_context, step_weights = att(queries[:, t], keys, key_padding_mask=PADDING,
                                         projected_keys=projected)
        np.testing.assert_allclose(step_context.detach().numpy(),
                                   context[:, t].detach().numpy(), rtol=1e-12)
        np.testing.assert_allclose(step_weights.detach().numpy(),
                                   weights[:, t].detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
def test_matches_the_formula_in_pytorch(kind):
    torch = pytest.importorskip("torch")
    att = make(kind)
    query, keys = rand(3, 4, seed=1), rand(3, 4, 6, seed=2)
    context, weights = att(query, keys, key_padding_mask=PADDING)
    (context.sum() + (weights * weights).sum()).backward()

    p = {name: torch.tensor(v.detach().numpy(), requires_grad=True)
         for name, v in att.named_parameters()}
    tq = torch.tensor(query.detach().numpy(), requires_grad=True)
    tk = torch.tensor(keys.detach().numpy(), requires_grad=True)
    if kind == "additive":  # e = v^T tanh(W_q s + W_k h + b)
        hidden = torch.tanh((tq @ p["query_proj.weight"].T)[:, None, :]
                            + tk @ p["key_proj.weight"].T + p["key_proj.bias"])
        e = (hidden @ p["score_proj.weight"].T).squeeze(-1)
    else:  # e = (W s)^T h / sqrt(d_k)
        e = torch.einsum("bd,btd->bt", tq @ p["query_proj.weight"].T, tk) / 6 ** 0.5
    a = torch.softmax(e.masked_fill(torch.tensor(PADDING.numpy()), float("-inf")), dim=-1)
    c = torch.einsum("bt,btd->bd", a, tk)
    (c.sum() + (a * a).sum()).backward()

    np.testing.assert_allclose(context.detach().numpy(), c.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(weights.detach().numpy(), a.detach().numpy(), rtol=1e-10,
                               atol=1e-15)
    np.testing.assert_allclose(query.grad.numpy(), tq.grad.numpy(), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(keys.grad.numpy(), tk.grad.numpy(), rtol=1e-10, atol=1e-14)
    for name, param in att.named_parameters():
        np.testing.assert_allclose(param.grad.numpy(), p[name].grad.numpy(), rtol=1e-10,
                                   atol=1e-14)


@pytest.mark.parametrize("kind", KINDS)
def test_bad_input_is_a_clear_error(kind):
    att = make(kind)
    query, keys = rand(3, 4, seed=1), rand(3, 4, 6, seed=2)
    with pytest.raises(ValueError, match="query must be"):
        att(rand(3, 5), keys)
    with pytest.raises(ValueError, match="keys must be"):
        att(query, rand(3, 4, 5))
    with pytest.raises(ValueError, match="batch size 3"):
        att(query, rand(2, 4, 6))
    with pytest.raises(ValueError, match="values must be"):
        att(query, keys, rand(3, 5, 2))
    with pytest.raises(ValueError, match="key_padding_mask must be a bool tensor of shape"):
        att(query, keys, key_padding_mask=mt.zeros(3, 4))
    with pytest.raises(ValueError, match="every key of a row"):
        att(query, keys, key_padding_mask=mt.ones(3, 4, dtype=mt.bool))
    with pytest.raises(ValueError, match="must be a positive int"):
        make(kind, query_size=0)


def test_state_dict_names_and_repr():
    assert sorted(make("additive").state_dict()) == [
        "key_proj.bias", "key_proj.weight", "query_proj.weight", "score_proj.weight"]
    assert sorted(make("dot").state_dict()) == ["query_proj.weight"]
    assert "hidden_size=5" in repr(make("additive"))
