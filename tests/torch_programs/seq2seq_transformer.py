"""An encoder-decoder that learns to reverse sequences, in the idiom of PyTorch's "Language
translation with nn.Transformer" tutorial: a ``Dataset`` of variable-length integer sequences,
a ``DataLoader`` whose ``collate_fn`` pads them with ``pad_sequence``, token embeddings scaled
by sqrt(d_model) plus the tutorial's sinusoidal ``PositionalEncoding`` buffer, ``nn.Transformer``
(batch_first) with causal and padding masks, ``CrossEntropyLoss(ignore_index=PAD,
label_smoothing=0.1)``, Adam with a warmup ``LambdaLR``, and greedy decoding.

A PyTorch program: tests/test_torch_compat.py runs it as it is, and again with only its import
lines rewritten to minitorch's, from the same initial weights, and compares what each run hands
to ``report``. The harness calls ``build_model()``, copies the PyTorch run's weights into the
minitorch run's model, then calls ``main(model, report)``. The data come from Python's
``random`` and the loader does not shuffle, so that neither depends on the library's own random
stream; dropout is 0 for the same reason. ``python seq2seq_transformer.py`` runs it alone.
"""
import math
import random

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

torch.set_default_dtype(torch.float64)
device = "cuda" if torch.cuda.is_available() else "cpu"

PAD_IDX, BOS_IDX, EOS_IDX = 0, 1, 2
VOCAB_SIZE = 11  # the three specials and eight symbols
MAX_LEN = 12


class ReverseDataset(Dataset):
    """Pairs (symbols, the same symbols reversed), of random lengths."""

    def __init__(self, num_samples, min_len, max_len, seed):
        rng = random.Random(seed)
        self.samples = []
        for _ in range(num_samples):
            length = rng.randint(min_len, max_len)
            src = [rng.randrange(3, VOCAB_SIZE) for _ in range(length)]
            self.samples.append((src, src[::-1]))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, idx):
        src, tgt = self.samples[idx]
        return (torch.tensor(src, dtype=torch.long),
                torch.tensor([BOS_IDX] + tgt + [EOS_IDX], dtype=torch.long))


def collate_fn(batch):
    src_batch, tgt_batch = [], []
    for src_sample, tgt_sample in batch:
        src_batch.append(src_sample)
        tgt_batch.append(tgt_sample)
    src_batch = pad_sequence(src_batch, batch_first=True, padding_value=PAD_IDX)
    tgt_batch = pad_sequence(tgt_batch, batch_first=True, padding_value=PAD_IDX)
    return src_batch, tgt_batch


class PositionalEncoding(nn.Module):

    def __init__(self, d_model, dropout=0.1, max_len=5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):
        """x: (batch, seq_len, d_model)"""
        x = x + self.pe[:, :x.size(1)]
        return self.dropout(x)


class TokenEmbedding(nn.Module):

    def __init__(self, vocab_size, emb_size):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size, padding_idx=PAD_IDX)
        self.emb_size = emb_size

    def forward(self, tokens):
        return self.embedding(tokens.long()) * math.sqrt(self.emb_size)


class Seq2SeqTransformer(nn.Module):

    def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, vocab_size,
                 dim_feedforward=512, dropout=0.1):
        super().__init__()
        self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead,
                                          num_encoder_layers=num_encoder_layers,
                                          num_decoder_layers=num_decoder_layers,
                                          dim_feedforward=dim_feedforward, dropout=dropout,
                                          batch_first=True)
        self.generator = nn.Linear(emb_size, vocab_size)
        self.src_tok_emb = TokenEmbedding(vocab_size, emb_size)
        self.tgt_tok_emb = TokenEmbedding(vocab_size, emb_size)
        self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

    def forward(self, src, tgt, src_padding_mask, tgt_mask, tgt_padding_mask):
        src_emb = self.positional_encoding(self.src_tok_emb(src))
        tgt_emb = self.positional_encoding(self.tgt_tok_emb(tgt))
        outs = self.transformer(src_emb, tgt_emb, tgt_mask=tgt_mask,
                                src_key_padding_mask=src_padding_mask,
                                tgt_key_padding_mask=tgt_padding_mask,
                                memory_key_padding_mask=src_padding_mask)
        return self.generator(outs)

    def encode(self, src, src_padding_mask=None):
        return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)),
                                        src_key_padding_mask=src_padding_mask)

    def decode(self, tgt, memory, tgt_mask):
        return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)),
                                        memory, tgt_mask)


def generate_square_subsequent_mask(sz):
    """True above the diagonal: a position may not look at the ones after it."""
    return torch.triu(torch.ones(sz, sz, dtype=torch.bool, device=device), diagonal=1)


def create_mask(src, tgt):
    tgt_mask = generate_square_subsequent_mask(tgt.shape[1])
    src_padding_mask = src == PAD_IDX
    tgt_padding_mask = tgt == PAD_IDX
    return src_padding_mask, tgt_mask, tgt_padding_mask


def greedy_decode(model, src, max_len, start_symbol):
    src = src.to(device)
    memory = model.encode(src)
    ys = torch.ones(1, 1).fill_(start_symbol).type(torch.long).to(device)
    for i in range(max_len - 1):
        memory = memory.to(device)
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(ys.size(1), device=device)
        out = model.decode(ys, memory, tgt_mask)
        prob = model.generator(out[:, -1])
        _, next_word = torch.max(prob, dim=1)
        next_word = next_word.item()
        ys = torch.cat([ys, torch.ones(1, 1).type_as(src.data).fill_(next_word)], dim=1)
        if next_word == EOS_IDX:
            break
    return ys


def build_model():
    model = Seq2SeqTransformer(num_encoder_layers=2, num_decoder_layers=2, emb_size=16, nhead=2,
                               vocab_size=VOCAB_SIZE, dim_feedforward=32, dropout=0.0)
    for p in model.parameters():
        if p.dim() > 1:
            nn.init.xavier_uniform_(p)
    return model.to(device)


def main(model, report):
    train_data = ReverseDataset(num_samples=24, min_len=2, max_len=8, seed=0)
    val_data = ReverseDataset(num_samples=8, min_len=2, max_len=8, seed=1)
    train_loader = DataLoader(train_data, batch_size=8, collate_fn=collate_fn)
    val_loader = DataLoader(val_data, batch_size=4, collate_fn=collate_fn)
    report("batches per epoch", len(train_loader))

    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)
    # eps: the tutorial's 1e-9 would divide the rounding noise of the key projections' bias
    # gradients (zero but for rounding: softmax ignores a shift of all scores) by 1e-9, and
    # the two libraries' noise differs; 1e-6 keeps their runs within 1e-10 of each other.
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01, betas=(0.9, 0.98), eps=1e-6)
    warmup = 4
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, (warmup / (step + 1)) ** 0.5))

    step = 0
    for epoch in range(2):
        model.train()
        losses = 0.0
        for src, tgt in train_loader:
            src, tgt = src.to(device), tgt.to(device)
            tgt_input = tgt[:, :-1]
            src_padding_mask, tgt_mask, tgt_padding_mask = create_mask(src, tgt_input)
            logits = model(src, tgt_input, src_padding_mask, tgt_mask, tgt_padding_mask)
            optimizer.zero_grad()
            tgt_out = tgt[:, 1:]
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            loss.backward()
            if step == 0:
                report("first batch", (src, tgt))
                report("first logits", logits)
                report("first gradients",
                       {name: p.grad for name, p in model.named_parameters()})
            optimizer.step()
            scheduler.step()
            report(f"step {step} loss", loss)
            report(f"step {step} lr", scheduler.get_last_lr())
            losses += loss.item()
            step += 1
        report(f"epoch {epoch}", f"train loss {losses / len(train_loader):.4f}")
    report("parameters after training", model.state_dict())

    model.eval()
    with torch.inference_mode():
        val_loss = 0.0
        for src, tgt in val_loader:
            tgt_input = tgt[:, :-1]
            src_padding_mask, tgt_mask, tgt_padding_mask = create_mask(src, tgt_input)
            logits = model(src, tgt_input, src_padding_mask, tgt_mask, tgt_padding_mask)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1))
            val_loss += loss.item()
        report("validation loss", f"{val_loss / len(val_loader):.4f}")
        for i in range(3):
            src, _ = val_data[i]
            tokens = greedy_decode(model, src.view(1, -1), max_len=MAX_LEN,
                                   start_symbol=BOS_IDX).flatten()
            report(f"greedy decoding of sample {i}", tokens)
            report(f"greedy decoding of sample {i} as a list", tokens.tolist())


def print_text(name, value):
    """A report for a person: the log lines only."""
    if isinstance(value, str):
        print(f"{name}: {value}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main(build_model(), print_text)
