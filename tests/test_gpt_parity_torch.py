"""minitorch's GPT against the same model written with torch.nn pieces (Embedding,
TransformerEncoderLayer(norm_first=True, activation="gelu", batch_first=True) under a causal
mask, LayerNorm, a Linear tied to the token embedding), the state_dict loaded one-to-one:
float64 logits, loss and every parameter's gradient, and greedy generation. Skipped without
PyTorch.
"""
import numpy as np
import pytest

import minitorch as mt
from minitorch.models import GPT, GPTConfig

torch = pytest.importorskip("torch")


class TorchGPT(torch.nn.Module):
    """The reference: GPT written in PyTorch, with minitorch's parameter names."""

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.token_embedding = torch.nn.Embedding(config.vocab_size, config.n_embd)
        self.position_embedding = torch.nn.Embedding(config.block_size, config.n_embd)
        self.dropout = torch.nn.Dropout(config.dropout)
        self.blocks = torch.nn.ModuleList([
            torch.nn.TransformerEncoderLayer(config.n_embd, config.n_head, 4 * config.n_embd,
                                             config.dropout, activation="gelu",
                                             batch_first=True, norm_first=True, bias=config.bias)
            for _ in range(config.n_layer)])
        self.ln_f = torch.nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = torch.nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, idx, targets=None):
        n, t = idx.shape
        x = self.dropout(self.token_embedding(idx) + self.position_embedding(torch.arange(t)))
        mask = torch.nn.Transformer.generate_square_subsequent_mask(t, dtype=x.dtype)
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else torch.nn.functional.cross_entropy(
            logits.reshape(n * t, -1), targets.reshape(n * t))
        return logits, loss


def models(bias=True, seed=0):
    config = GPTConfig(vocab_size=17, block_size=12, n_layer=2, n_head=4, n_embd=16, bias=bias)
    mt.manual_seed(seed)
    ours = GPT(config).double()
    rng = np.random.default_rng(seed)
    with mt.no_grad():  # away from GPT-2's small init, LayerNorm's ones and the zero biases
        for p in ours.parameters():
            p._data[...] = rng.standard_normal(p.shape) * (0.3 if p.ndim > 1 else 0.5)
    theirs = TorchGPT(config).double()
    state = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()}
    theirs.load_state_dict(state, strict=True)  # one-to-one: no key missing or left over
    assert theirs.lm_head.weight is theirs.token_embedding.weight
    return ours, theirs


@pytest.mark.parametrize("bias", [True, False])
def test_logits_loss_and_gradients_match_pytorch(bias):
    ours, theirs = models(bias)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    rng = np.random.default_rng(1)
    idx, targets = rng.integers(0, 17, (3, 12)), rng.integers(0, 17, (3, 12))
    logits, loss = ours(mt.tensor(idx), mt.tensor(targets))
    loss.backward()
    ref_logits, ref_loss = theirs(torch.from_numpy(idx), torch.from_numpy(targets))
    ref_loss.backward()
    np.testing.assert_allclose(logits.detach().numpy(), ref_logits.detach().numpy(),
                               rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-12)
    ref_params = dict(theirs.named_parameters())
    named = dict(ours.named_parameters())
    assert named.keys() == ref_params.keys()
    for name, p in named.items():
        np.testing.assert_allclose(p.grad.numpy(), ref_params[name].grad.numpy(),
                                   rtol=1e-9, atol=1e-11, err_msg=name)


def test_greedy_generation_matches_pytorch():
    ours, theirs = models()
    prompt = np.random.default_rng(2).integers(0, 17, (2, 3))
    out = ours.generate(mt.tensor(prompt), 7, do_sample=False).numpy()
    ref = torch.from_numpy(prompt)
    with torch.no_grad():
        for _ in range(7):
            ref = torch.cat([ref, theirs(ref)[0][:, -1].argmax(-1, keepdim=True)], dim=1)
    np.testing.assert_array_equal(out, ref.numpy())
