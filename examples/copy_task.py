"""The copy task of "The Annotated Transformer": learn to output the input symbols, in order.

    python examples/copy_task.py              # copy random symbol sequences (< 1 minute)
    python examples/copy_task.py --reverse    # output them reversed

Sources are random sequences of ``--symbols`` symbols, ``--min-len`` to ``--max-len`` long
(then ``<eos>``); the target is the same sequence (or reversed). A small
``Seq2SeqTransformer`` trains on freshly drawn batches until greedy decoding copies every
held-out sequence exactly (or ``--max-steps``), then prints some decodes. The smallest sanity
check of the whole stack: embeddings, masks, attention, training loop, KV-cached decoding.
``main(argv)`` runs it in-process and returns the results (the tests do).
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

import minitorch
from minitorch import optim
from minitorch.text.batching import make_batch
from minitorch.text.decoding import greedy_decode
from minitorch.text.model import Seq2SeqTransformer
from minitorch.text.training import train_step

PAD_ID, BOS_ID, EOS_ID = 0, 2, 3
FIRST_SYMBOL = 4  # ids 0-3 are the specials, as in BPETokenizer


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--reverse", action="store_true", help="target = reversed source")
    p.add_argument("--symbols", type=int, default=10, help="distinct symbols")
    p.add_argument("--min-len", type=int, default=3)
    p.add_argument("--max-len", type=int, default=10)
    p.add_argument("--d-model", type=int, default=32)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=1, help="encoder and decoder layers each")
    p.add_argument("--ff", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--lr-factor", type=float, default=0.5)
    p.add_argument("--max-steps", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--n-eval", type=int, default=200, help="held-out sequences")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="C kernel threads (tiny matrices: one thread is fastest)")
    p.add_argument("--backend", choices=("c", "numpy"), default=None)
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    if not 1 <= args.min_len <= args.max_len:
        p.error(f"need 1 <= --min-len <= --max-len, got {args.min_len} and {args.max_len}")
    if args.symbols < 2:
        p.error(f"--symbols must be >= 2, got {args.symbols}")
    return args


def random_sequences(rng, n, symbols, min_len, max_len):
    lengths = rng.integers(min_len, max_len + 1, size=n)
    return [(FIRST_SYMBOL + rng.integers(0, symbols, size=k)).tolist() for k in lengths]


def as_pairs(sequences, reverse):
    """(source + <eos>, target) id pairs; the batching adds <bos>/<eos> to the target."""
    return [(seq + [EOS_ID], seq[::-1] if reverse else list(seq)) for seq in sequences]


def exact_match(model, pairs, batch_size=200):
    """Fraction of pairs whose greedy decode equals the target exactly, and the decodes."""
    model.eval()
    decoded = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start:start + batch_size]
        batch = make_batch(chunk, PAD_ID, BOS_ID, EOS_ID)
        decoded += greedy_decode(model, batch.src, batch.src_key_padding_mask,
                                 max_len=min(batch.tgt_out.shape[1] + 1, model.max_len),
                                 bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID)
    model.train()
    hits = sum(out == tgt for out, (_, tgt) in zip(decoded, pairs))
    return hits / len(pairs), decoded


def main(argv=None):
    args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    if args.threads is not None:
        minitorch.set_num_threads(args.threads)
    say = (lambda *a: None) if args.quiet else print
    minitorch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    held_out = as_pairs(random_sequences(rng, args.n_eval, args.symbols, args.min_len,
                                         args.max_len), args.reverse)
    vocab = FIRST_SYMBOL + args.symbols
    model = Seq2SeqTransformer(vocab, vocab, d_model=args.d_model, nhead=args.heads,
                               num_encoder_layers=args.layers, num_decoder_layers=args.layers,
                               dim_feedforward=args.ff, dropout=args.dropout,
                               max_len=args.max_len + 2, pad_id=PAD_ID)
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.TransformerLR(optimizer, args.d_model,
                                                 warmup_steps=args.warmup, factor=args.lr_factor)
    task = "reverse" if args.reverse else "copy"
    started = time.perf_counter()
    accuracy, losses, step = 0.0, [], 0
    while step < args.max_steps:
        pairs = as_pairs(random_sequences(rng, args.batch_size, args.symbols, args.min_len,
                                          args.max_len), args.reverse)
        losses.append(train_step(model, make_batch(pairs, PAD_ID, BOS_ID, EOS_ID), optimizer,
                                 scheduler, pad_id=PAD_ID))
        step += 1
        if step % args.eval_every == 0 or step == args.max_steps:
            accuracy, _ = exact_match(model, held_out)
            say(f"{task} step {step}: loss {np.mean(losses[-args.eval_every:]):.4f}, held-out "
                f"exact match {100 * accuracy:.1f}%, {time.perf_counter() - started:.1f}s")
            if accuracy == 1.0:
                break
    accuracy, decoded = exact_match(model, held_out)
    for (src, tgt), out in list(zip(held_out, decoded))[:5]:
        mark = "ok" if out == tgt else "WRONG"
        say(f"  src {_symbols(src[:-1])} -> {_symbols(out)}  [{mark}]")
    elapsed = time.perf_counter() - started
    print(f"{task} task: held-out exact match {100 * accuracy:.1f}% after {step} steps, "
          f"{elapsed:.1f}s")
    return {"accuracy": accuracy, "steps": step, "losses": losses, "seconds": elapsed}


def _symbols(ids):
    return " ".join(str(i - FIRST_SYMBOL) for i in ids)


if __name__ == "__main__":
    main()
