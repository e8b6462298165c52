"""A GPT-style character language model in nanoGPT's idiom (Karpathy's model.py, train.py and
sample.py, shrunk): token and learned position embeddings, pre-LayerNorm blocks of causal
self-attention (by hand with a registered triangular buffer, masked_fill and softmax, or
through F.scaled_dot_product_attention) and a GELU MLP, the language-model head tied to the
token embedding, AdamW with decay / no-decay parameter groups, a warmup-cosine learning rate
set by hand on every group, gradient clipping, a checkpoint saved and training resumed from
it, forward hooks, and generate() with temperature and top-k.

A PyTorch program: tests/test_torch_compat.py runs it as it is, and again with only its import
lines rewritten to minitorch's, from the same initial weights, and compares what each run hands
to ``report``. The harness calls ``build_model()``, copies the PyTorch run's weights into the
minitorch run's model, then calls ``main(model, report)``. Batches come from Python's
``random`` and sampling keeps the top 1 token, so that neither depends on the library's own
random stream. ``python gpt.py`` runs it alone.
"""
import inspect
import math
import os
import random
import tempfile
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
from torch.nn import functional as F

torch.set_default_dtype(torch.float64)
device = "cuda" if torch.cuda.is_available() else "cpu"

TEXT = """\
the owl looked at the moon and the moon looked back.
a small fox ran past the old mill, then back again.
rain fell on the roof all night; by morning the river was high.
the owl and the fox met by the mill and spoke of the rain.
"""
chars = sorted(set(TEXT))
stoi = {ch: i for i, ch in enumerate(chars)}
itos = {i: ch for i, ch in enumerate(chars)}


def encode(s):
    return [stoi[c] for c in s]


def decode(ids):
    return "".join(itos[i] for i in ids)


@dataclass
class GPTConfig:
    block_size: int = 16
    vocab_size: int = len(chars)
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 16
    dropout: float = 0.0
    bias: bool = True
    flash: bool = True  # F.scaled_dot_product_attention, or attention written out


class LayerNorm(nn.Module):
    """LayerNorm with an optional bias (PyTorch's nn.LayerNorm had no bias=False until 2.1)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # key, query, value projections for all heads, in a batch
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = config.flash and hasattr(F, "scaled_dot_product_attention")
        # the causal mask: each position sees itself and the ones before it
        self.register_buffer("bias", torch.tril(torch.ones(config.block_size, config.block_size))
                             .view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None,
                                               dropout_p=self.dropout if self.training else 0,
                                               is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # weight tying: the token embedding and the output projection are one matrix
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        # scaled init of the residual projections, per GPT-2
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding=True):
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of length {t} > {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)  # shape (t)
        tok_emb = self.transformer.wte(idx)  # (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)  # (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            # inference: the lm_head on the very last position only (the list keeps the dim)
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # 2-D parameters (matmul weights, embeddings) decay; biases and layernorms don't
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"num decayed parameter tensors: {len(decay_params)}, "
              f"with {num_decay_params:,} parameters")
        print(f"num non-decayed parameter tensors: {len(nodecay_params)}, "
              f"with {num_nodecay_params:,} parameters")
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == "cuda"
        extra_args = dict(fused=True) if use_fused else dict()
        return torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)

    @torch.no_grad()
    def next_token_probs(self, idx, temperature=1.0, top_k=None):
        """The distribution of the token after idx, sharpened by temperature, cut to top_k."""
        idx_cond = idx if idx.size(1) <= self.config.block_size \
            else idx[:, -self.config.block_size:]
        logits, _ = self(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        return F.softmax(logits, dim=-1)

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        for _ in range(max_new_tokens):
            probs = self.next_token_probs(idx, temperature, top_k)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# training settings (train.py's, scaled down)
batch_size = 4
max_iters = 40
eval_iters = 2
learning_rate = 3e-2
warmup_iters = 4
lr_decay_iters = 40
min_lr = 1e-3
weight_decay = 1e-1
beta1, beta2 = 0.9, 0.95
grad_clip = 1.0

data = torch.tensor(encode(TEXT), dtype=torch.long)
n = int(0.8 * len(data))
train_data, val_data = data[:n], data[n:]


def get_batch(split, rng):
    source = train_data if split == "train" else val_data
    block_size = GPTConfig.block_size
    ix = [rng.randrange(len(source) - block_size) for _ in range(batch_size)]
    x = torch.stack([source[i:i + block_size] for i in ix])
    y = torch.stack([source[i + 1:i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


def get_lr(it):
    if it < warmup_iters:  # linear warmup
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))  # from 1 to 0
    return min_lr + coeff * (learning_rate - min_lr)


@torch.no_grad()
def estimate_loss(model, rng):
    out = {}
    model.eval()
    for split in ["train", "val"]:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split, rng)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


def build_model():
    # train.py's bias=False; with biases, the key projection's (whose gradient is zero but for
    # rounding: softmax ignores a shift of all scores) would drift on rounding noise under
    # AdamW, differently in each library
    return GPT(GPTConfig(bias=False)).to(device)


def train(model, optimizer, iter_num, end_iter, rng, report):
    """Train.py's loop from iter_num to end_iter; returns the next iteration's number."""
    model.train()
    while iter_num < end_iter:
        lr = get_lr(iter_num)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        X, Y = get_batch("train", rng)
        logits, loss = model(X, Y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if iter_num == 0:
            report("logits", logits)
            report("gradients", {name: p.grad for name, p in model.named_parameters()})
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        report(f"iter {iter_num}", f"loss {loss.item():.4f}, lr {lr:.4e}, norm {norm:.4f}")
        report(f"iter {iter_num} loss", loss.item())
        report(f"iter {iter_num} gradient norm", norm)
        iter_num += 1
    return iter_num


def main(model, report):
    rng = random.Random(1337)
    report("number of parameters", model.get_num_params())
    report("lm_head and wte are one tensor", model.lm_head.weight is model.transformer.wte.weight)
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device)
    report("param group sizes", [len(g["params"]) for g in optimizer.param_groups])
    iter_num = train(model, optimizer, 0, max_iters, rng, report)
    report("parameters after training", model.state_dict())
    report("optimizer state",
           {i: s["exp_avg_sq"] for i, s in enumerate(optimizer.state.values())})
    losses = estimate_loss(model, rng)
    report("estimated losses", f"train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")
    report("estimated loss values", losses)

    # A checkpoint as train.py writes it, and training resumed from it as train.py resumes.
    with tempfile.TemporaryDirectory() as out_dir:
        ckpt_path = os.path.join(out_dir, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "model_args": asdict(model.config), "iter_num": iter_num,
                    "best_val_loss": losses["val"]}, ckpt_path)
        checkpoint = torch.load(ckpt_path, map_location=device)
    model = GPT(GPTConfig(**checkpoint["model_args"])).to(device)
    model.load_state_dict(checkpoint["model"])
    report("lm_head and wte are one tensor after loading",
           model.lm_head.weight is model.transformer.wte.weight)
    optimizer = model.configure_optimizers(weight_decay, learning_rate, (beta1, beta2), device)
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num, best_val_loss = checkpoint["iter_num"], checkpoint["best_val_loss"]
    report("resuming", f"iter {iter_num}, best val loss {best_val_loss:.4f}")
    train(model, optimizer, iter_num, iter_num + 2, rng, report)
    report("parameters after resuming", model.state_dict())

    # Each block's output, caught by forward hooks; the written-out attention gives what
    # F.scaled_dot_product_attention gives.
    model.eval()
    X, _ = get_batch("val", rng)
    activations = {}

    def save_output(name):
        def hook(module, input, output):
            activations[name] = output.detach()
        return hook

    handles = [block.register_forward_hook(save_output(f"h.{i}"))
               for i, block in enumerate(model.transformer.h)]
    with torch.no_grad():
        flash_logits = model(X)[0]
        for handle in handles:
            handle.remove()
        report("block outputs (forward hooks)", activations)
        activations.clear()
        for block in model.transformer.h:
            block.attn.flash = False
        manual_logits = model(X)[0]
    report("hooks removed", len(activations))
    report("last-position logits (flash attention)", flash_logits)
    report("last-position logits (attention written out)", manual_logits)

    # Sampling: the top-k distribution, and the tokens drawn when only the best survives.
    start_ids = encode("the owl ")
    x = torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...]
    report("top-5 probabilities at temperature 0.8", model.next_token_probs(x, 0.8, top_k=5))
    torch.manual_seed(1337)
    y = model.generate(x, max_new_tokens=20, temperature=0.8, top_k=1)
    report("generated tokens", y)
    report("generated text", decode(y[0].tolist()))


def print_text(name, value):
    """A report for a person: the log lines only."""
    if isinstance(value, str):
        print(f"{name}: {value}")


if __name__ == "__main__":
    torch.manual_seed(1337)
    main(build_model(), print_text)
