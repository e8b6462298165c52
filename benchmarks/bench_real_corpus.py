"""The same Transformer trained on trans-de-en in minitorch and in PyTorch: held-out BLEU of each.

Both frameworks get the same architecture (``Seq2SeqTransformer``, rebuilt in PyTorch with the
same parameter names), the same initial weights (minitorch's, copied through numpy), the same
batches in the same order, the same loss (label-smoothed cross-entropy ignoring padding), Adam,
gradient clipping and warmup schedule, for the same number of steps; then each decodes the
held-out set greedily (batches sorted by length, up to ``2 * source length + 10`` tokens) and
gets scored twice by ``minitorch.text.bleu``: the project's BLEU (whitespace tokens) and
sacreBLEU's standard one (``tokenize="13a", smooth=True``: punctuation split off words; equal
to ``sacrebleu.corpus_bleu(hyps, [refs]).score``, which tests/test_bleu.py checks). Only the
dropout masks differ (each framework draws its own), so the two figures should be close, not
equal. Settings are ``minitorch.text.trans_de_en.TRAINING_DEFAULTS`` unless overridden.

    python benchmarks/bench_real_corpus.py [--steps N] [--n-valid 500] [--no-report]

Skips with a message (exit 0) where /usr/share/trans/de-en or PyTorch is absent. The table goes
to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse
import math
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import report  # noqa: E402
import minitorch  # noqa: E402
from minitorch import optim  # noqa: E402
from minitorch.text import BPETokenizer, bleu  # noqa: E402
from minitorch.text.batching import Batch, encode_pairs, iterate_batches  # noqa: E402
from minitorch.text.decoding import translate  # noqa: E402
from minitorch.text.model import Seq2SeqTransformer  # noqa: E402
from minitorch.text.trans_de_en import (DEFAULT_PATH, TRAINING_DEFAULTS,  # noqa: E402
                                        load_trans_de_en, split_pairs)
from minitorch.text.training import train_step  # noqa: E402

PAD_ID, BOS_ID, EOS_ID = 0, 2, 3  # BPETokenizer's fixed special ids


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=None,
                   help="training steps (default: TRAINING_DEFAULTS' epochs over the corpus)")
    p.add_argument("--n-valid", type=int, default=TRAINING_DEFAULTS["n_valid"])
    p.add_argument("--threads", type=int, default=1, help="threads of each framework")
    p.add_argument("--seed", type=int, default=0)
    report.add_no_report_flag(p)
    args = p.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        p.error(f"--steps must be >= 1, got {args.steps}")
    return args


def lr_at(step, cfg):
    """The warmup schedule of ``optim.lr_scheduler.TransformerLR`` at ``step`` (from 1)."""
    return cfg["lr_factor"] * cfg["d_model"] ** -0.5 * min(step ** -0.5,
                                                            step * cfg["warmup"] ** -1.5)


def load_data(cfg, n_valid, seed):
    """(train id pairs, held-out text pairs, source tokenizer, target tokenizer)."""
    pairs = load_trans_de_en(max_words=cfg["max_words"])
    train, valid = split_pairs(pairs, n_valid, seed=seed)
    src_tok = BPETokenizer.train([s for s, _ in train], cfg["vocab_size"])
    tgt_tok = BPETokenizer.train([t for _, t in train], cfg["vocab_size"])
    train_ids, _ = encode_pairs(train, src_tok, tgt_tok, cfg["max_len"])
    _, valid = encode_pairs(valid, src_tok, tgt_tok, cfg["max_len"])  # the same filter
    return train_ids, valid, src_tok, tgt_tok


def batch_plan(train_ids, cfg, steps, seed):
    """The first ``steps`` batches, epoch after epoch, as numpy arrays (shared by both runs)."""
    plan, epoch = [], 0
    while len(plan) < steps:
        for b in iterate_batches(train_ids, cfg["batch_size"], PAD_ID, BOS_ID, EOS_ID, seed=seed,
                                 epoch=epoch):
            plan.append({k: getattr(b, k).numpy() for k in
                         ("src", "tgt_in", "tgt_out", "src_key_padding_mask",
                          "tgt_key_padding_mask", "tgt_mask")})
            if len(plan) == steps:
                break
        epoch += 1
    return plan


def build_minitorch(cfg, src_vocab, tgt_vocab):
    return Seq2SeqTransformer(src_vocab, tgt_vocab, d_model=cfg["d_model"], nhead=cfg["heads"],
                              num_encoder_layers=cfg["layers"], num_decoder_layers=cfg["layers"],
                              dim_feedforward=cfg["ff"], dropout=cfg["dropout"],
                              max_len=cfg["max_len"], pad_id=PAD_ID)


def train_minitorch(model, plan, cfg):
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.TransformerLR(optimizer, cfg["d_model"],
                                                 warmup_steps=cfg["warmup"],
                                                 factor=cfg["lr_factor"])
    model.train()
    losses = []
    for arrays in plan:
        batch = Batch(**{k: minitorch.from_numpy(v)
                                                 for k, v in arrays.items()},
                                              n_tokens=int((arrays["tgt_out"] != PAD_ID).sum()))
        losses.append(train_step(model, batch, optimizer, scheduler, pad_id=PAD_ID,
                                 label_smoothing=cfg["label_smoothing"]))
    return losses


def torch_model_class(torch):
    """``Seq2SeqTransformer`` in PyTorch, with the same parameter names and forward."""
    nn = torch.nn

    class TorchSeq2Seq(nn.Module):
        def __init__(self, cfg, src_vocab, tgt_vocab):
            super().__init__()
            d, self.d_model, self.max_len = cfg["d_model"], cfg["d_model"], cfg["max_len"]
            self.src_embed = nn.Embedding(src_vocab, d, padding_idx=PAD_ID)
            self.tgt_embed = nn.Embedding(tgt_vocab, d, padding_idx=PAD_ID)
            position = torch.arange(cfg["max_len"], dtype=torch.float64)[:, None]
            div_term = torch.exp(torch.arange(0, d, 2, dtype=torch.float64)
                                 * (-math.log(10000.0) / d))
            pe = torch.zeros(cfg["max_len"], d, dtype=torch.float64)
            pe[:, 0::2] = torch.sin(position * div_term)
            pe[:, 1::2] = torch.cos(position * div_term)
            self.register_buffer("pe", pe.float(), persistent=False)
            self.dropout = nn.Dropout(cfg["dropout"])
            self.transformer = nn.Transformer(d, cfg["heads"], cfg["layers"], cfg["layers"],
                                              cfg["ff"], cfg["dropout"], batch_first=True)
            self.generator = nn.Linear(d, tgt_vocab)

        def embed(self, ids, table):
            x = table(ids) * math.sqrt(self.d_model)
            return self.dropout(x + self.pe[:ids.shape[1]])

        def encode(self, src, src_pad):
            return self.transformer.encoder(self.embed(src, self.src_embed),
                                            src_key_padding_mask=src_pad)

        def decode(self, tgt_in, memory, src_pad, tgt_pad, tgt_mask):
            hidden = self.transformer.decoder(self.embed(tgt_in, self.tgt_embed), memory,
                                              tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_pad,
                                              memory_key_padding_mask=src_pad)
            return self.generator(hidden)

    return TorchSeq2Seq


def train_torch(torch, model, plan, cfg):
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda e: lr_at(e + 1, cfg))
    model.train()
    losses = []
    for arrays in plan:
        t = {k: torch.from_numpy(v) for k, v in arrays.items()}
        memory = model.encode(t["src"], t["src_key_padding_mask"])
        logits = model.decode(t["tgt_in"], memory, t["src_key_padding_mask"],
                              t["tgt_key_padding_mask"], t["tgt_mask"])
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), t["tgt_out"].reshape(-1), ignore_index=PAD_ID,
            label_smoothing=cfg["label_smoothing"])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    return losses


def initial_logit_gap(torch, mt_model, th_model, arrays):
    """Largest logit difference of the two models on one batch without dropout: ~1e-5 when the
    architectures and weights are the same."""
    mt_model.eval()
    th_model.eval()
    with minitorch.no_grad():
        mt_logits = mt_model(*(minitorch.from_numpy(arrays[k]) for k in
                               ("src", "tgt_in", "src_key_padding_mask", "tgt_key_padding_mask",
                                "tgt_mask"))).numpy()
    with torch.no_grad():
        t = {k: torch.from_numpy(v) for k, v in arrays.items()}
        memory = th_model.encode(t["src"], t["src_key_padding_mask"])
        th_logits = th_model.decode(t["tgt_in"], memory, t["src_key_padding_mask"],
                                    t["tgt_key_padding_mask"], t["tgt_mask"]).numpy()
    # Rows past a sentence's end are padding: compare only positions the loss counts.
    counted = arrays["tgt_out"] != PAD_ID
    return float(np.abs(mt_logits - th_logits)[counted].max())


def translate_torch(torch, model, sentences, src_tok, tgt_tok, batch_size=100):
    """Greedy decoding as ``minitorch.text.decoding.translate`` does it (no KV cache)."""
    encoded = [src_tok.encode(s, add_eos=True) for s in sentences]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    outputs = [""] * len(encoded)
    model.eval()
    with torch.no_grad():
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            width = max(len(encoded[i]) for i in chunk)
            src = np.full((len(chunk), width), PAD_ID, dtype=np.int64)
            for row, i in enumerate(chunk):
                src[row, :len(encoded[i])] = encoded[i]
            src_pad = torch.from_numpy(src == PAD_ID)
            memory = model.encode(torch.from_numpy(src), src_pad)
            prefix = torch.full((len(chunk), 1), BOS_ID, dtype=torch.int64)
            finished = torch.zeros(len(chunk), dtype=torch.bool)
            for _ in range(min(model.max_len, 2 * width + 10)):
                mask = torch.triu(torch.ones(prefix.shape[1], prefix.shape[1], dtype=torch.bool), 1)
                logits = model.decode(prefix, memory, src_pad, None, mask)[:, -1]
                next_tokens = torch.where(finished, PAD_ID, logits.argmax(-1))
                prefix = torch.cat([prefix, next_tokens[:, None]], 1)
                finished |= next_tokens == EOS_ID
                if bool(finished.all()):
                    break
            for row, i in zip(prefix[:, 1:].tolist(), chunk):
                outputs[i] = tgt_tok.decode(row[:row.index(EOS_ID)] if EOS_ID in row else row)
    return outputs


def scores(hypotheses, references):
    """(the project's BLEU: whitespace tokens, no smoothing; sacreBLEU's default: 13a, exp)."""
    return bleu(hypotheses, references), bleu(hypotheses, references, tokenize="13a", smooth=True)


def main(argv=None):
    args = parse_args(argv)
    if not os.path.exists(DEFAULT_PATH):
        print(f"skipped: {DEFAULT_PATH} not found (apt-get install trans-de-en)")
        return None
    try:
        import torch
    except ImportError:
        print("skipped: PyTorch is not installed (pip install torch)")
        return None
    warnings.filterwarnings("ignore", module="torch")  # nested-tensor notes of nn.Transformer
    cfg = dict(TRAINING_DEFAULTS)
    minitorch.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    minitorch.manual_seed(args.seed)
    torch.manual_seed(args.seed)

    train_ids, valid, src_tok, tgt_tok = load_data(cfg, args.n_valid, args.seed)
    batches_per_epoch = len(list(iterate_batches(train_ids, cfg["batch_size"], PAD_ID, BOS_ID,
                                                 EOS_ID, shuffle=False)))
    steps = args.steps or cfg["epochs"] * batches_per_epoch
    plan = batch_plan(train_ids, cfg, steps, args.seed)
    print(f"trans-de-en: {len(train_ids)} training pairs, {len(valid)} held out; vocab "
          f"{src_tok.vocab_size}/{tgt_tok.vocab_size}; {steps} steps "
          f"({steps / batches_per_epoch:.1f} epochs); settings {cfg}", flush=True)

    mt_model = build_minitorch(cfg, src_tok.vocab_size, tgt_tok.vocab_size)
    th_model = torch_model_class(torch)(cfg, src_tok.vocab_size, tgt_tok.vocab_size)
    state = {k: torch.from_numpy(v.numpy().copy()) for k, v in mt_model.state_dict().items()}
    th_model.load_state_dict(state, strict=True)  # same names, same initial weights
    start_gap = initial_logit_gap(torch, mt_model, th_model, plan[0])
    print(f"initial logits on the first batch (eval mode), max |minitorch - torch|: "
          f"{start_gap:.2e}", flush=True)

    sources, references = [s for s, _ in valid], [t for _, t in valid]
    results = {}
    for name in ("minitorch", "torch"):
        started = time.perf_counter()
        if name == "minitorch":
            losses = train_minitorch(mt_model, plan, cfg)
            trained = time.perf_counter()
            hyps = translate(mt_model, sources, src_tok, tgt_tok, batch_size=100)
        else:
            losses = train_torch(torch, th_model, plan, cfg)
            trained = time.perf_counter()
            hyps = translate_torch(torch, th_model, sources, src_tok, tgt_tok)
        own, sacre = scores(hyps, references)
        results[name] = dict(own=own, sacre=sacre, first=float(np.mean(losses[:50])),
                             last=float(np.mean(losses[-50:])), train_s=trained - started,
                             distinct=len(set(hyps)), hyps=hyps)
        print(f"{name}: loss {results[name]['first']:.3f} -> {results[name]['last']:.3f}, "
              f"BLEU {own:.2f} (sacreBLEU {sacre:.2f}), {len(set(hyps))} distinct outputs, "
              f"{trained - started:.0f} s training", flush=True)
    for (src, ref), mt_hyp, th_hyp in list(zip(valid, results["minitorch"]["hyps"],
                                              results["torch"]["hyps"]))[:3]:
        print(f"  src: {src}\n  ref: {ref}\n  minitorch: {mt_hyp}\n  torch: {th_hyp}")

    columns = ["framework", "steps", "loss first 50 → last 50", "BLEU (own)", "sacreBLEU",
               "distinct outputs", "training s"]
    rows = [[name, steps, f"{r['first']:.3f} → {r['last']:.3f}", f"{r['own']:.2f}",
             f"{r['sacre']:.2f}", f"{r['distinct']}/{len(valid)}", f"{r['train_s']:.0f}"]
            for name, r in results.items()]
    results["initial_logit_gap"] = start_gap
    print(report.markdown_table(columns, rows))
    if not args.no_report:
        notes = [f"Before training, the two models' logits differ by at most {start_gap:.1e}.",
                 f"Greedy decoding of {len(valid)} held-out pairs; settings: "
                 + ", ".join(f"{k} {v}" for k, v in cfg.items()),
                 "Same initial weights and batches; dropout masks differ between the frameworks."]
        report.write_table("bench_real_corpus.py", columns, rows, threads=args.threads,
                           notes=notes)
    return results


if __name__ == "__main__":
    main()
