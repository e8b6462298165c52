"""The copy task of "The Annotated Transformer": learn to output the input symbols, in order.

    python examples/copy_task.py              # copy random symbol sequences (< 1 minute)
    python examples/copy_task.py --reverse    # output them reversed
    python examples/copy_task.py --resume --max-steps 200   # 200 more steps of the copy run

Sources are random sequences of ``--symbols`` symbols, ``--min-len`` to ``--max-len`` long
(then ``<eos>``); the target is the same sequence (or reversed). A small
``Seq2SeqTransformer`` trains on freshly drawn batches until greedy decoding copies every
held-out sequence exactly (or ``--max-steps``), then prints some decodes. The smallest sanity
check of the whole stack: embeddings, masks, attention, training loop, KV-cached decoding.
The run is saved in ``runs/copy_task/copy`` (or ``reverse``) as ``checkpoint.safetensors``, which
``--resume`` continues; every argument is checked before anything is trained or written.
``main(argv)`` runs it in-process and returns the results (the tests do).
"""
from __future__ import annotations

import json
import os
import sys
import time
import types

import numpy as np

import minitorch
from minitorch import optim
from minitorch.text.batching import make_batch
from minitorch.text.decoding import greedy_decode
from minitorch.text.model import Seq2SeqTransformer
from minitorch.text.training import train_step

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, add_model_arguments, add_run_arguments,  # noqa: E402
                     check_resume_flags, check_run_folder, make_run_folder, non_negative_int,
                     positive_int, run_main)

PAD_ID, BOS_ID, EOS_ID = 0, 2, 3
FIRST_SYMBOL = 4  # ids 0-3 are the specials, as in BPETokenizer
CHECKPOINT = "checkpoint.safetensors"
# What the model depends on: stored in the checkpoint, so --resume rebuilds the same model.
CONFIG_KEYS = ("reverse", "symbols", "min_len", "max_len", "d_model", "heads", "layers", "ff",
               "dropout", "batch_size", "warmup", "lr_factor", "n_eval", "seed")


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reverse", action="store_true", help="target = reversed source")
    p.add_argument("--symbols", type=positive_int, default=10, help="distinct symbols (>= 2)")
    p.add_argument("--min-len", type=positive_int, default=3, help="shortest sequence")
    p.add_argument("--max-len", type=positive_int, default=10, help="longest sequence")
    add_model_arguments(p, d_model=32, heads=4, layers=1, ff=64, dropout=0.0, warmup=50,
                        lr_factor=0.5)
    p.add_argument("--batch-size", type=positive_int, default=256, help="sequences per step")
    p.add_argument("--max-steps", type=positive_int, default=1000,
                   help="steps to train at most (stops early at 100%% held-out exact match); "
                        "with --resume: this many MORE steps")
    p.add_argument("--eval-every", type=positive_int, default=50,
                   help="steps between held-out evaluations (and checkpoints)")
    p.add_argument("--n-eval", type=positive_int, default=200, help="held-out sequences")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    add_run_arguments(p, "run folder (default: runs/copy_task/copy, or runs/copy_task/reverse "
                         "with --reverse)")
    p.add_argument("--quiet", action="store_true", help="only the final line")
    args = p.parse_args(argv)
    if not args.min_len <= args.max_len:
        p.error(f"need --min-len <= --max-len, got {args.min_len} and {args.max_len}")
    if args.symbols < 2:
        p.error(f"--symbols must be >= 2, got {args.symbols}")
    if args.d_model % args.heads:
        p.error(f"--heads must divide --d-model, got --d-model {args.d_model} and "
                f"--heads {args.heads}")
    if args.out is None:
        args.out = os.path.join("runs", "copy_task", "reverse" if args.reverse else "copy")
    check_run_folder(p, args.out, (CHECKPOINT,), overwrite=args.overwrite, resume=args.resume,
                     checkpoint=CHECKPOINT)
    return p, args


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


def load_run(parser, args):
    """The checkpoint in ``args.out`` and its config; flags given now must agree with it."""
    path = os.path.join(args.out, CHECKPOINT)
    try:
        checkpoint = minitorch.load(path)
        config = json.loads(checkpoint["config"])
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a copy_task checkpoint ({error})") from None
    check_resume_flags(parser, args, config, CONFIG_KEYS)
    return checkpoint, config


def main(argv=None):
    parser, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    say = (lambda *a: None) if args.quiet else print
    checkpoint, config = (load_run(parser, args) if args.resume else
                          (None, {k: getattr(args, k) for k in CONFIG_KEYS}))
    c = types.SimpleNamespace(**config)  # the run's settings, spelled as its flags
    minitorch.manual_seed(c.seed)
    rng = np.random.default_rng(c.seed)
    held_out = as_pairs(random_sequences(rng, c.n_eval, c.symbols, c.min_len, c.max_len),
                        c.reverse)
    vocab = FIRST_SYMBOL + c.symbols
    model = Seq2SeqTransformer(vocab, vocab, d_model=c.d_model, nhead=c.heads,
                               num_encoder_layers=c.layers, num_decoder_layers=c.layers,
                               dim_feedforward=c.ff, dropout=c.dropout,
                               max_len=c.max_len + 2, pad_id=PAD_ID)
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.TransformerLR(optimizer, c.d_model,
                                                 warmup_steps=c.warmup, factor=c.lr_factor)
    step = 0
    if checkpoint is not None:
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        minitorch.set_rng_state(json.loads(checkpoint["rng"]))
        rng.bit_generator.state = json.loads(checkpoint["data_rng"])
        step = checkpoint["step"]
        say(f"resumed from {os.path.join(args.out, CHECKPOINT)} at step {step}")
    else:
        make_run_folder(args.out, (CHECKPOINT,), overwrite=args.overwrite)
    task = "reverse" if c.reverse else "copy"
    started = time.perf_counter()
    first_step, last_step = step, step + args.max_steps
    accuracy, losses = 0.0, []
    while step < last_step:
        pairs = as_pairs(random_sequences(rng, c.batch_size, c.symbols, c.min_len, c.max_len),
                         c.reverse)
        losses.append(train_step(model, make_batch(pairs, PAD_ID, BOS_ID, EOS_ID), optimizer,
                                 scheduler, pad_id=PAD_ID))
        step += 1
        if (step - first_step) % args.eval_every == 0 or step == last_step:
            accuracy, _ = exact_match(model, held_out)
            say(f"{task} step {step}: loss {np.mean(losses[-args.eval_every:]):.4f}, held-out "
                f"exact match {100 * accuracy:.1f}%, {time.perf_counter() - started:.1f}s")
            minitorch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "step": step,
                            "config": json.dumps(config),
                            "rng": json.dumps(minitorch.get_rng_state()),
                            "data_rng": json.dumps(rng.bit_generator.state)},
                           os.path.join(args.out, CHECKPOINT))
            if accuracy == 1.0:
                break
    accuracy, decoded = exact_match(model, held_out)
    for (src, tgt), out in list(zip(held_out, decoded))[:5]:
        mark = "ok" if out == tgt else "WRONG"
        say(f"  src {_symbols(src[:-1])} -> {_symbols(out)}  [{mark}]")
    elapsed = time.perf_counter() - started
    print(f"{task} task: held-out exact match {100 * accuracy:.1f}% after {step - first_step} "
          f"steps ({step} in all), {elapsed:.1f}s (checkpoint: {args.out})")
    return {"accuracy": accuracy, "steps": step - first_step, "step": step, "losses": losses,
            "seconds": elapsed}


def _symbols(ids):
    return " ".join(str(i - FIRST_SYMBOL) for i in ids)


if __name__ == "__main__":
    run_main(main)
