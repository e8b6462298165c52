"""A decoder-only language model, GPT-2 style: :class:`GPTConfig` and :class:`GPT`.

The model reads token ids (N, T) and gives, at every position t, the logits of the token at
t + 1 given tokens 0..t::

    x = dropout(token_embedding(idx) + position_embedding(0..T-1))
    x = block(x)                  n_layer times: x = x + attn(ln1(x)); x = x + mlp(ln2(x))
    logits = lm_head(ln_f(x))     lm_head's weight IS token_embedding's (weight tying)

A block is a pre-LN ``nn.TransformerEncoderLayer`` (``norm_first=True``, GELU, batch first)
whose self-attention is causal: a decoder-only model needs no cross-attention, so its decoder
block is an encoder layer under a causal mask (PyTorch users build GPTs the same way). Its
parameters therefore carry PyTorch's names (``blocks.0.self_attn.in_proj_weight``,
``blocks.0.linear1.weight``, ``blocks.0.norm1.weight``, ...), and a model made of
``torch.nn.Embedding``, ``torch.nn.TransformerEncoderLayer``, ``torch.nn.LayerNorm`` and
``torch.nn.Linear`` loads its ``state_dict`` one-to-one (``tests/test_gpt_parity_torch.py``).

Generation keeps, per block, an ``nn.KVCache`` of the keys and values of the positions seen:
the prompt is run once (prefill), then each new token is one position through the blocks, its
attention reading the cached keys: O(length) per token instead of rerunning the whole prefix.

Differs from GPT-2: the MLP's GELU is the exact one (``nn.TransformerEncoderLayer``'s
``activation="gelu"``), not the tanh approximation.
May import: ``minitorch``, ``minitorch.nn``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List

import numpy as np

import minitorch
from minitorch import nn
from minitorch.nn import functional as F
from minitorch.tensor import Tensor


@dataclass
class GPTConfig:
    """The model's sizes; the defaults are GPT-2 small's (124M parameters, with a vocabulary
    padded to 50304 as nanoGPT's).

    ``block_size``: the longest context (positions of the learned position table);
    ``dropout``: on the embeddings, the attention weights, the MLP's hidden layer and each
    residual branch; ``bias``: biases in the Linears and LayerNorms.
    """

    vocab_size: int = 50304
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True

    def __post_init__(self):
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GPTConfig: {name} must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be divisible by n_head "
                             f"({self.n_head})")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"GPTConfig: dropout must be in [0, 1), got {self.dropout!r}")


class Block(nn.TransformerEncoderLayer):
    """One pre-LN decoder block: ``x + attn(norm1(x))`` then ``x + mlp(norm2(x))``, the MLP
    being ``linear2(gelu(linear1(.)))`` with a 4·n_embd hidden layer.

    ``forward(x, cache=None)``: x (N, T, n_embd). The attention is causal; with ``cache`` (an
    ``nn.KVCache``), x holds the positions that follow the cached ones, whose keys and values
    are appended to the cache.
    """

    def __init__(self, config: GPTConfig):
        super().__init__(config.n_embd, config.n_head, dim_feedforward=4 * config.n_embd,
                         dropout=config.dropout, activation="gelu", batch_first=True,
                         norm_first=True, bias=config.bias)

    def forward(self, x, cache=None):
        x = x + self._causal_self_attention(self.norm1(x), cache)
        return x + self._ff_block(self.norm2(x))

    def _causal_self_attention(self, x, cache):
        out = self.self_attn(x, x, x, need_weights=False, is_causal=True, cache=cache)[0]
        return self.dropout1(out)


class GPT(nn.Module):
    """The language model: ``forward(idx, targets=None)`` → ``(logits, loss)`` and
    :meth:`generate`. See the module docstring for the architecture.

    Initialisation as GPT-2's: every Linear, embedding and attention projection ~ N(0, 0.02),
    biases zero, LayerNorms one/zero, and the projections that end a residual branch
    (``self_attn.out_proj`` and ``linear2``) ~ N(0, 0.02 / sqrt(2 · n_layer)), so that the
    residual stream's variance does not grow with depth.
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT: config must be a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.token_embedding = nn.Embedding(config.vocab_size, config.n_embd)
        self.position_embedding = nn.Embedding(config.block_size, config.n_embd)
        self.dropout = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # one Parameter, two names
        self._init_weights()

    def _init_weights(self):
        residual_std = 0.02 / math.sqrt(2 * self.config.n_layer)
        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
            if isinstance(module, nn.MultiheadAttention):
                nn.init.normal_(module.in_proj_weight, mean=0.0, std=0.02)
        for block in self.blocks:
            nn.init.normal_(block.self_attn.out_proj.weight, mean=0.0, std=residual_std)
            nn.init.normal_(block.linear2.weight, mean=0.0, std=residual_std)

    # ------------------------------------------------------------------ checks

    def _check_ids(self, idx, name: str) -> None:
        if not isinstance(idx, Tensor):
            raise TypeError(f"GPT: {name} must be a Tensor of token ids, got "
                            f"{type(idx).__name__}")
        if idx.ndim != 2:
            raise ValueError(f"GPT: {name} must be (N, T) token ids, got shape "
                             f"{tuple(idx.shape)}")
        if idx.dtype not in (minitorch.int64, minitorch.int32):
            raise TypeError(f"GPT: {name} must hold integer token ids (int64), got {idx.dtype}")
        values = idx.cpu().numpy()  # checked on the host (a copy for a GPU tensor)
        outside = (values < 0) | (values >= self.config.vocab_size)
        if outside.any():
            raise IndexError(f"GPT: {name} holds token id {int(values[outside][0])}, outside "
                             f"the vocabulary [0, {self.config.vocab_size})")

    # ------------------------------------------------------------------ the model

    def new_cache(self) -> List[nn.KVCache]:
        """An empty KV cache for :meth:`forward`'s ``cache``: one ``nn.KVCache`` per block."""
        return [nn.KVCache() for _ in self.blocks]

    def forward(self, idx, targets=None, cache=None):
        """Logits (N, T, vocab_size) for ids ``idx`` (N, T), and the mean cross-entropy against
        ``targets`` (N, T) (None without targets; ids of -100 are ignored, as F.cross_entropy).

        With ``cache`` (from :meth:`new_cache`), ``idx`` holds the positions that follow the
        ones the cache has seen; their keys/values are appended to it. The positions fed so far
        may not exceed ``block_size`` (the position table's size): ValueError.
        """
        self._check_ids(idx, "idx")
        past = 0 if cache is None else len(cache[0])
        n, t = idx.shape
        if t == 0:
            raise ValueError("GPT: idx must hold at least one position, got shape "
                             f"{tuple(idx.shape)}")
        if past + t > self.config.block_size:
            fed = f"{past} cached + {t} new" if past else f"{t}"
            raise ValueError(f"GPT: the context would be {fed} = {past + t} tokens, longer than "
                             f"block_size {self.config.block_size}")
        if cache is not None and len(cache) != len(self.blocks):
            raise ValueError(f"GPT: cache must hold one KVCache per block ({len(self.blocks)}), "
                             f"got {len(cache)}")
        positions = minitorch.arange(past, past + t, device=idx.device)
        x = self.dropout(self.token_embedding(idx) + self.position_embedding(positions))
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i])
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        if tuple(targets.shape) != (n, t):
            raise ValueError(f"GPT: targets must have idx's shape {(n, t)}, got "
                             f"{tuple(targets.shape)}")
        loss = F.cross_entropy(logits.reshape(n * t, -1), targets.reshape(n * t))
        return logits, loss

    # ------------------------------------------------------------------ generation

    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None,
                 do_sample=True, generator=None, use_cache=True):
        """``idx`` (N, T) followed by ``max_new_tokens`` generated ids: (N, T + max_new_tokens).

        Each new token is drawn from ``softmax(logits / temperature)`` over the tokens left by
        ``top_k`` (the k most likely) and ``top_p`` (the smallest most-likely set whose
        probability reaches p; never empty), from ``generator`` (a ``minitorch.Generator``;
        None: the global one, which ``minitorch.manual_seed`` fixes). ``do_sample=False`` takes
        the most likely token instead (greedy: temperature, top_k and top_p are not used).

        ``use_cache=True`` runs the prompt once, then one position per new token, attending to
        the blocks' KV caches; ``use_cache=False`` reruns the whole context at every step (the
        slow reference: both give the same tokens). Runs under ``no_grad``, as in eval mode.

        The prompt must hold 1 to ``block_size`` tokens (ValueError otherwise). Generating past
        ``block_size`` crops the context to its last ``block_size`` tokens, as nanoGPT does:
        positions are absolute, so the cache cannot slide, and is rebuilt from the cropped
        context at every such step (those steps cost a full ``block_size`` forward each).
        """
        self._check_ids(idx, "idx")
        block_size = self.config.block_size
        if not 1 <= idx.shape[1] <= block_size:
            raise ValueError(f"GPT.generate: the prompt has {idx.shape[1]} tokens; it must have "
                             f"1 to block_size={block_size}")
        if not isinstance(max_new_tokens, (int, np.integer)) or max_new_tokens < 0:
            raise ValueError(f"GPT.generate: max_new_tokens must be an int >= 0, got "
                             f"{max_new_tokens!r}")
        if do_sample:
            _check_sampling(temperature, top_k, top_p)
        was_training = self.training
        self.eval()
        try:
            with minitorch.no_grad():
                return self._generate(idx, int(max_new_tokens), temperature, top_k, top_p,
                                      do_sample, generator, use_cache)
        finally:
            self.train(was_training)

    def _generate(self, idx, max_new_tokens, temperature, top_k, top_p, do_sample, generator,
                  use_cache):
        block_size = self.config.block_size
        cache = self.new_cache() if use_cache else None
        new = idx  # the positions not yet fed to the cache
        for _ in range(max_new_tokens):
            if idx.shape[1] > block_size:  # past the position table: keep the last block_size
                idx_cond = idx[:, -block_size:]
                cache = self.new_cache() if use_cache else None
                new = idx_cond
            else:
                idx_cond = idx
            logits, _ = self(new if use_cache else idx_cond, cache=cache)
            logits = logits[:, -1, :]
            if do_sample:
                probs = F.softmax(filter_logits(logits / temperature, top_k, top_p), dim=-1)
                next_ids = minitorch.multinomial(probs, 1, generator=generator)
            else:
                next_ids = logits.argmax(dim=-1, keepdim=True)
            idx = minitorch.cat([idx, next_ids], dim=1)
            new = next_ids
        return idx


def _check_sampling(temperature, top_k, top_p):
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not 0 < temperature < math.inf:
        raise ValueError(f"GPT.generate: temperature must be a number > 0, got {temperature!r}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer))
                              or top_k < 1):
        raise ValueError(f"GPT.generate: top_k must be an int >= 1 or None, got {top_k!r}")
    if top_p is not None and (isinstance(top_p, bool) or not isinstance(top_p, (int, float))
                              or not 0 < top_p <= 1):
        raise ValueError(f"GPT.generate: top_p must be a number in (0, 1] or None, got "
                         f"{top_p!r}")


def filter_logits(logits, top_k=None, top_p=None):
    """``logits`` (N, V) with -inf outside each row's top-k and outside its top-p nucleus.

    Top-p keeps a token when the probability of the tokens more likely than it is below p:
    the smallest set of most likely tokens whose mass reaches p (the most likely token always
    stays). Ties at the k-th logit are all kept.
    """
    if top_k is not None:
        kth = logits.topk(min(int(top_k), logits.shape[-1]), dim=-1)[0][:, -1:]
        logits = logits.masked_fill(logits < kth, -math.inf)
    if top_p is not None:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = F.softmax(sorted_logits, dim=-1)
        drop_sorted = probs.cumsum(dim=-1) - probs >= top_p  # the mass before each token
        drop = minitorch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)  # unsort
        logits = logits.masked_fill(drop, -math.inf)
    return logits
