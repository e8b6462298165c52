"""The Annotated Transformer (Harvard NLP, 2022 edition), shrunk to its copy-task example: the
model written out module by module (clones, a hand-written LayerNorm with unbiased std,
SublayerConnection, attention with masked_fill, MultiHeadedAttention, the sinusoidal
PositionalEncoding buffer, xavier-initialised make_model), the Batch masks (subsequent_mask
through torch.triu and uint8), the LabelSmoothing criterion (nn.KLDivLoss(reduction="sum") on
a true distribution built by fill_, scatter_ and index_fill_), SimpleLossCompute, Adam with the
"rate" warmup through LambdaLR, run_epoch and greedy_decode.

A PyTorch program: tests/test_torch_compat.py runs it as it is, and again with only its import
lines rewritten to minitorch's, from the same initial weights, and compares what each run hands
to ``report``. The harness calls ``build_model()``, copies the PyTorch run's weights into the
minitorch run's model, then calls ``main(model, report)``. The data come from Python's
``random`` (the original draws them with torch.randint) and dropout is 0, so that nothing
depends on the library's own random stream. ``python annotated_transformer.py`` runs it alone.
"""
import copy
import math
import random

import torch
import torch.nn as nn
from torch.nn.functional import log_softmax
from torch.optim.lr_scheduler import LambdaLR

torch.set_default_dtype(torch.float64)


class EncoderDecoder(nn.Module):
    """A standard Encoder-Decoder architecture."""

    def __init__(self, encoder, decoder, src_embed, tgt_embed, generator):
        super(EncoderDecoder, self).__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.src_embed = src_embed
        self.tgt_embed = tgt_embed
        self.generator = generator

    def forward(self, src, tgt, src_mask, tgt_mask):
        return self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask)

    def encode(self, src, src_mask):
        return self.encoder(self.src_embed(src), src_mask)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        return self.decoder(self.tgt_embed(tgt), memory, src_mask, tgt_mask)


class Generator(nn.Module):
    """Linear + log_softmax generation step."""

    def __init__(self, d_model, vocab):
        super(Generator, self).__init__()
        self.proj = nn.Linear(d_model, vocab)

    def forward(self, x):
        return log_softmax(self.proj(x), dim=-1)


def clones(module, N):
    """Produce N identical layers."""
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


class Encoder(nn.Module):
    """Core encoder is a stack of N layers."""

    def __init__(self, layer, N):
        super(Encoder, self).__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, mask):
        for layer in self.layers:
            x = layer(x, mask)
        return self.norm(x)


class LayerNorm(nn.Module):
    """Construct a layernorm module (See citation for details)."""

    def __init__(self, features, eps=1e-6):
        super(LayerNorm, self).__init__()
        self.a_2 = nn.Parameter(torch.ones(features))
        self.b_2 = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.a_2 * (x - mean) / (std + self.eps) + self.b_2


class SublayerConnection(nn.Module):
    """A residual connection followed by a layer norm (the norm first, for code simplicity)."""

    def __init__(self, size, dropout):
        super(SublayerConnection, self).__init__()
        self.norm = LayerNorm(size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, sublayer):
        return x + self.dropout(sublayer(self.norm(x)))


class EncoderLayer(nn.Module):
    """Encoder is made up of self-attn and feed forward."""

    def __init__(self, size, self_attn, feed_forward, dropout):
        super(EncoderLayer, self).__init__()
        self.self_attn = self_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 2)
        self.size = size

    def forward(self, x, mask):
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, mask))
        return self.sublayer[1](x, self.feed_forward)


class Decoder(nn.Module):
    """Generic N layer decoder with masking."""

    def __init__(self, layer, N):
        super(Decoder, self).__init__()
        self.layers = clones(layer, N)
        self.norm = LayerNorm(layer.size)

    def forward(self, x, memory, src_mask, tgt_mask):
        for layer in self.layers:
            x = layer(x, memory, src_mask, tgt_mask)
        return self.norm(x)


class DecoderLayer(nn.Module):
    """Decoder is made of self-attn, src-attn, and feed forward."""

    def __init__(self, size, self_attn, src_attn, feed_forward, dropout):
        super(DecoderLayer, self).__init__()
        self.size = size
        self.self_attn = self_attn
        self.src_attn = src_attn
        self.feed_forward = feed_forward
        self.sublayer = clones(SublayerConnection(size, dropout), 3)

    def forward(self, x, memory, src_mask, tgt_mask):
        m = memory
        x = self.sublayer[0](x, lambda x: self.self_attn(x, x, x, tgt_mask))
        x = self.sublayer[1](x, lambda x: self.src_attn(x, m, m, src_mask))
        return self.sublayer[2](x, self.feed_forward)


def subsequent_mask(size):
    """Mask out subsequent positions."""
    attn_shape = (1, size, size)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(torch.uint8)
    return subsequent_mask == 0


def attention(query, key, value, mask=None, dropout=None):
    """Compute 'Scaled Dot Product Attention'"""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):

    def __init__(self, h, d_model, dropout=0.1):
        """Take in model size and number of heads."""
        super(MultiHeadedAttention, self).__init__()
        assert d_model % h == 0
        # We assume d_v always equals d_k
        self.d_k = d_model // h
        self.h = h
        self.linears = clones(nn.Linear(d_model, d_model), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            # Same mask applied to all h heads.
            mask = mask.unsqueeze(1)
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip(self.linears, (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query
        del key
        del value
        return self.linears[-1](x)


class PositionwiseFeedForward(nn.Module):
    """Implements FFN equation."""

    def __init__(self, d_model, d_ff, dropout=0.1):
        super(PositionwiseFeedForward, self).__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.w_2(self.dropout(self.w_1(x).relu()))


class Embeddings(nn.Module):

    def __init__(self, d_model, vocab):
        super(Embeddings, self).__init__()
        self.lut = nn.Embedding(vocab, d_model)
        self.d_model = d_model

    def forward(self, x):
        return self.lut(x) * math.sqrt(self.d_model)


class PositionalEncoding(nn.Module):
    """Implement the PE function."""

    def __init__(self, d_model, dropout, max_len=5000):
        super(PositionalEncoding, self).__init__()
        self.dropout = nn.Dropout(p=dropout)

        # Compute the positional encodings once in log space.
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer("pe", pe)

    def forward(self, x):
        x = x + self.pe[:, : x.size(1)].requires_grad_(False)
        return self.dropout(x)


def make_model(src_vocab, tgt_vocab, N=6, d_model=512, d_ff=2048, h=8, dropout=0.1):
    """Helper: Construct a model from hyperparameters."""
    c = copy.deepcopy
    attn = MultiHeadedAttention(h, d_model, dropout)
    ff = PositionwiseFeedForward(d_model, d_ff, dropout)
    position = PositionalEncoding(d_model, dropout)
    model = EncoderDecoder(
        Encoder(EncoderLayer(d_model, c(attn), c(ff), dropout), N),
        Decoder(DecoderLayer(d_model, c(attn), c(attn), c(ff), dropout), N),
        nn.Sequential(Embeddings(d_model, src_vocab), c(position)),
        nn.Sequential(Embeddings(d_model, tgt_vocab), c(position)),
        Generator(d_model, tgt_vocab),
    )

    # This was important from their code. Initialize parameters with Glorot / fan_avg.
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model


class Batch:
    """Object for holding a batch of data with mask during training."""

    def __init__(self, src, tgt=None, pad=2):  # 2 = <blank>
        self.src = src
        self.src_mask = (src != pad).unsqueeze(-2)
        if tgt is not None:
            self.tgt = tgt[:, :-1]
            self.tgt_y = tgt[:, 1:]
            self.tgt_mask = self.make_std_mask(self.tgt, pad)
            self.ntokens = (self.tgt_y != pad).data.sum()

    @staticmethod
    def make_std_mask(tgt, pad):
        """Create a mask to hide padding and future words."""
        tgt_mask = (tgt != pad).unsqueeze(-2)
        tgt_mask = tgt_mask & subsequent_mask(tgt.size(-1)).type_as(tgt_mask.data)
        return tgt_mask


class LabelSmoothing(nn.Module):
    """Implement label smoothing."""

    def __init__(self, size, padding_idx, smoothing=0.0):
        super(LabelSmoothing, self).__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, true_dist.clone().detach())


class SimpleLossCompute:
    """A simple loss compute and train function."""

    def __init__(self, generator, criterion):
        self.generator = generator
        self.criterion = criterion

    def __call__(self, x, y, norm):
        x = self.generator(x)
        sloss = (
            self.criterion(x.contiguous().view(-1, x.size(-1)), y.contiguous().view(-1)) / norm
        )
        return sloss.data * norm, sloss


def rate(step, model_size, factor, warmup):
    """Default the step to 1 for LambdaLR, to avoid zero raising to a negative power."""
    if step == 0:
        step = 1
    return factor * (model_size ** (-0.5) * min(step ** (-0.5), step * warmup ** (-1.5)))


def data_gen(V, batch_size, nbatches, rng):
    """Random data for a src-tgt copy task: sequences of 3 to 10 symbols, padded with 0."""
    for i in range(nbatches):
        rows = []
        for _ in range(batch_size):
            length = rng.randint(3, 10)
            rows.append([1] + [rng.randrange(3, V) for _ in range(length - 1)]
                        + [0] * (10 - length))
        data = torch.tensor(rows)
        src = data.requires_grad_(False).clone().detach()
        tgt = data.requires_grad_(False).clone().detach()
        yield Batch(src, tgt, 0)


def run_epoch(data_iter, model, loss_compute, optimizer, scheduler, report, mode="train"):
    """Train a single epoch."""
    total_tokens = 0
    total_loss = 0
    for i, batch in enumerate(data_iter):
        out = model.forward(batch.src, batch.tgt, batch.src_mask, batch.tgt_mask)
        loss, loss_node = loss_compute(out, batch.tgt_y, batch.ntokens)
        if mode == "train":
            loss_node.backward()
            if i == 0:
                report("first gradients", {n: p.grad for n, p in model.named_parameters()})
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
        total_loss += loss
        total_tokens += batch.ntokens
        lr = optimizer.param_groups[0]["lr"]
        report(f"{mode} step {i}", "Epoch Step: %6d | Loss: %6.2f | Learning Rate: %6.1e"
               % (i, loss / batch.ntokens, lr))
        report(f"{mode} step {i} loss", loss)
        del loss
        del loss_node
    return total_loss / total_tokens


def greedy_decode(model, src, src_mask, max_len, start_symbol):
    memory = model.encode(src, src_mask)
    ys = torch.zeros(1, 1).fill_(start_symbol).type_as(src.data)
    for i in range(max_len - 1):
        out = model.decode(memory, src_mask, ys, subsequent_mask(ys.size(1)).type_as(src.data))
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.data[0]
        ys = torch.cat([ys, torch.zeros(1, 1).type_as(src.data).fill_(next_word)], dim=1)
    return ys


class DummyOptimizer(torch.optim.Optimizer):
    def __init__(self):
        self.param_groups = [{"lr": 0}]
        None

    def step(self):
        None

    def zero_grad(self, set_to_none=False):
        None


class DummyScheduler:
    def step(self):
        None


V = 11


def build_model():
    return make_model(V, V, N=2, d_model=16, d_ff=32, h=2, dropout=0.0)


def example_label_smoothing(report):
    """The article's example of the smoothed target distribution and of its penalty (its
    predictions hold a 0 where the target holds a 0, whose 0 * log(0) KLDivLoss makes NaN: the
    zeros are 1e-9 here)."""
    crit = LabelSmoothing(5, 0, 0.4)
    predict = torch.tensor([[1e-9, 0.2, 0.7, 0.1, 1e-9], [1e-9, 0.2, 0.7, 0.1, 1e-9],
                            [1e-9, 0.2, 0.7, 0.1, 1e-9], [1e-9, 0.2, 0.7, 0.1, 1e-9],
                            [1e-9, 0.2, 0.7, 0.1, 1e-9]])
    loss = crit(x=predict.log(), target=torch.LongTensor([2, 1, 0, 3, 3]))
    report("label smoothing: target distribution", crit.true_dist)
    report("label smoothing: loss", loss)

    def penalization(x):
        d = x + 3 * 1
        predict = torch.tensor([[1e-9, x / d, 1 / d, 1 / d, 1 / d]])
        return crit(predict.log(), torch.LongTensor([1])).data

    report("label smoothing: penalization", [penalization(x).item() for x in range(1, 10)])


def main(model, report):
    example_label_smoothing(report)

    rng = random.Random(0)
    criterion = LabelSmoothing(size=V, padding_idx=0, smoothing=0.1)
    # eps: the article's 1e-9 would divide the rounding noise of the key projections' bias
    # gradients (zero but for rounding: softmax ignores a shift of all scores) by 1e-9, and
    # the two libraries' noise differs; 1e-6 keeps their runs within 1e-10 of each other.
    optimizer = torch.optim.Adam(model.parameters(), lr=0.5, betas=(0.9, 0.98), eps=1e-6)
    lr_scheduler = LambdaLR(optimizer=optimizer,
                            lr_lambda=lambda step: rate(step, model_size=model.src_embed[0].d_model,
                                                        factor=1.0, warmup=4))
    batch_size = 8
    for epoch in range(2):
        model.train()
        run_epoch(data_gen(V, batch_size, 3, rng), model,
                  SimpleLossCompute(model.generator, criterion), optimizer, lr_scheduler, report,
                  mode="train")
        model.eval()
        loss = run_epoch(data_gen(V, batch_size, 1, rng), model,
                         SimpleLossCompute(model.generator, criterion), DummyOptimizer(),
                         DummyScheduler(), report, mode="eval")
        report(f"epoch {epoch} eval loss", loss)
    report("parameters after training", model.state_dict())

    model.eval()
    src = torch.LongTensor([[1, 3, 4, 5, 6, 7, 8, 9, 10, 3]])
    max_len = src.shape[1]
    src_mask = torch.ones(1, 1, max_len)
    with torch.no_grad():
        report("greedy decoding", greedy_decode(model, src, src_mask, max_len=max_len,
                                                start_symbol=1))
    # The attention maps the article draws: each attention module keeps its last p_attn.
    report("encoder self-attention", model.encoder.layers[0].self_attn.attn)
    report("decoder source attention", model.decoder.layers[-1].src_attn.attn)


def print_text(name, value):
    """A report for a person: the log lines only."""
    if isinstance(value, str):
        print(f"{name}: {value}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main(build_model(), print_text)
