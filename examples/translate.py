"""Train a Transformer to translate English → Spanish (or German → English), then use it.

    python examples/translate.py                       # train on the embedded corpus (~10 min)
    python examples/translate.py --translate "we are eating bread"
    python examples/translate.py --resume              # continue from runs/translate/

What it does: generates the embedded English→Spanish corpus (``minitorch.text.corpus``; held-out
sentences never occur in training) or reads the trans-de-en dictionary's sentences
(``--corpus trans-de-en``), trains one BPE tokenizer per language (saved next to the
checkpoint), trains ``Seq2SeqTransformer`` with Adam(0.9, 0.98, eps 1e-9), the warmup schedule
of "Attention is all you need" and label smoothing 0.1 on length-bucketed batches, and after
every epoch decodes the held-out split (batched, KV cache) and prints its BLEU and a few
source / reference / hypothesis triples. It saves ``checkpoint.safetensors`` atomically after
every epoch (model, optimizer, scheduler, epoch, step, RNG state, config, loss history) and
draws ``loss.png`` and ``attention.png`` (the last decoder layer's cross-attention, one panel
per head) when matplotlib is installed. ``main(argv)`` runs it in-process (the tests do).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np

import minitorch
from minitorch import optim
from minitorch.text import BPETokenizer, bleu, load_corpus
from minitorch.text.batching import count_batches, iterate_batches
from minitorch.text.decoding import greedy_decode, translate
from minitorch.text.model import Seq2SeqTransformer, count_parameters
from minitorch.text.training import Progress, train_step

CHECKPOINT = "checkpoint.safetensors"
SRC_TOKENIZER, TGT_TOKENIZER = "src_bpe.json", "tgt_bpe.json"
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3  # BPETokenizer's fixed special ids
DEFAULT_EPOCHS = 3

# Settings the model and data depend on: stored in the checkpoint, restored by --resume and
# --translate (so the flags of a later run cannot silently build a different model).
CONFIG_KEYS = ("corpus", "n_train", "n_valid", "vocab_size", "d_model", "heads", "layers",
               "ff", "dropout", "max_len", "seed", "batch_size", "max_tokens", "warmup",
               "lr_factor", "label_smoothing", "epochs")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", choices=("embedded", "trans-de-en"), default="embedded")
    p.add_argument("--n-train", type=int, default=20000, help="training pairs")
    p.add_argument("--n-valid", type=int, default=500, help="held-out pairs (BLEU)")
    p.add_argument("--vocab-size", type=int, default=1000, help="BPE vocabulary per language")
    p.add_argument("--epochs", type=int, default=None,
                   help=f"training epochs (default {DEFAULT_EPOCHS}; with --resume: the "
                        f"checkpoint's)")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--layers", type=int, default=2, help="encoder and decoder layers each")
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--ff", type=int, default=512, help="feed-forward width")
    p.add_argument("--dropout", type=float, default=0.1)
    p.add_argument("--max-len", type=int, default=64, help="longest sentence in tokens")
    p.add_argument("--batch-size", type=int, default=64, help="sentence pairs per batch at most")
    p.add_argument("--max-tokens", type=int, default=None,
                   help="padded tokens per batch at most (default: no limit)")
    p.add_argument("--warmup", type=int, default=300, help="warmup steps of the lr schedule")
    p.add_argument("--lr-factor", type=float, default=1.0, help="scale of the lr schedule")
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--decode", choices=("greedy", "beam", "sample"), default="greedy",
                   help="decoding for BLEU and --translate")
    p.add_argument("--beam-size", type=int, default=4)
    p.add_argument("--temperature", type=float, default=1.0, help="for --decode sample")
    p.add_argument("--top-p", type=float, default=0.9,
                   help="for --decode sample: nucleus size (label smoothing leaves every token "
                        "a little probability; the nucleus cuts that tail)")
    # One thread by default: this model's matrices are small, and a 2-thread GEMM team loses
    # far more to synchronisation than it gains (6x slower when other processes share the CPUs).
    p.add_argument("--threads", type=int, default=1, help="C kernel threads")
    p.add_argument("--backend", choices=("c", "numpy"), default=None)
    p.add_argument("--out", default=os.path.join("runs", "translate"), help="output folder")
    p.add_argument("--max-steps", type=int, default=None, help="stop after this many steps")
    p.add_argument("--resume", action="store_true", help="continue from OUT/checkpoint")
    p.add_argument("--translate", metavar="SENTENCE", default=None,
                   help="translate SENTENCE with the saved model and exit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quiet", action="store_true", help="no progress bar or examples")
    p.add_argument("--no-plots", action="store_true", help="skip loss.png and attention.png")
    args = p.parse_args(argv)
    if args.epochs is not None and args.epochs < 1:
        p.error(f"--epochs must be >= 1, got {args.epochs}")
    for name in ("n_train", "n_valid", "vocab_size", "d_model", "layers", "heads",
                 "ff", "max_len", "batch_size", "warmup"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    return args


# ----------------------------------------------------------------------------- data


def load_pairs(config):
    """(train, valid) lists of (source, target) sentences; no held-out source is in train."""
    if config["corpus"] == "embedded":
        splits = load_corpus(config["n_train"], config["n_valid"], seed=config["seed"])
        return list(splits.train), list(splits.valid)
    from minitorch.text import load_trans_de_en
    pairs = load_trans_de_en(max_pairs=None)
    by_source = {}
    for src, tgt in pairs:  # one pair per source sentence, so the split below cannot leak
        by_source.setdefault(src, tgt)
    unique = sorted(by_source.items())
    random.Random(config["seed"]).shuffle(unique)
    need = config["n_train"] + config["n_valid"]
    if len(unique) < need:
        print(f"note: trans-de-en has {len(unique)} distinct sentences, fewer than the "
              f"{need} requested; using them all")
    valid = unique[:config["n_valid"]]
    return unique[config["n_valid"]:need], valid


def encode_pairs(pairs, src_tok, tgt_tok, max_len):
    """Token ids of each pair (source + <eos>; target bare), dropping pairs over max_len."""
    encoded = []
    for src, tgt in pairs:
        src_ids, tgt_ids = src_tok.encode(src, add_eos=True), tgt_tok.encode(tgt)
        if len(src_ids) <= max_len and len(tgt_ids) + 1 <= max_len:
            encoded.append((src_ids, tgt_ids))
    return encoded


def fresh_tokenizers(config, train, out):
    """Train one BPE tokenizer per language on ``train`` and save them in ``out``."""
    src_tok = BPETokenizer.train([s for s, _ in train], config["vocab_size"])
    tgt_tok = BPETokenizer.train([t for _, t in train], config["vocab_size"])
    src_tok.save(os.path.join(out, SRC_TOKENIZER))
    tgt_tok.save(os.path.join(out, TGT_TOKENIZER))
    return src_tok, tgt_tok


def load_tokenizers(out):
    """The tokenizers saved next to the checkpoint in ``out`` (never retrained: ids must match)."""
    try:
        return (BPETokenizer.load(os.path.join(out, SRC_TOKENIZER)),
                BPETokenizer.load(os.path.join(out, TGT_TOKENIZER)))
    except FileNotFoundError as error:
        raise FileNotFoundError(f"{error.filename}: the tokenizer saved with the checkpoint "
                                f"is missing") from None


# ----------------------------------------------------------------------------- model + state


def build_model(config, src_vocab, tgt_vocab):
    return Seq2SeqTransformer(src_vocab, tgt_vocab, d_model=config["d_model"],
                              nhead=config["heads"], num_encoder_layers=config["layers"],
                              num_decoder_layers=config["layers"],
                              dim_feedforward=config["ff"], dropout=config["dropout"],
                              max_len=config["max_len"], pad_id=PAD_ID)


def build_optimizer(config, model):
    optimizer = optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = optim.lr_scheduler.TransformerLR(optimizer, config["d_model"],
                                                 warmup_steps=config["warmup"],
                                                 factor=config["lr_factor"])
    return optimizer, scheduler


def save_checkpoint(path, model, optimizer, scheduler, state, config):
    """Everything needed to continue exactly where training stopped, written atomically."""
    minitorch.save({
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "epoch": state["epoch"], "batch_in_epoch": state["batch_in_epoch"],
        "step": state["step"],
        "history": {"loss": state["losses"], "bleu": state["bleus"]},
        "rng": json.dumps(minitorch.get_rng_state()),
        "config": json.dumps(config),
    }, path)


def load_checkpoint(path):
    """The checkpoint at ``path`` as a dict; ValueError saying what is wrong if it is unusable."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"no checkpoint at {path}: train first "
                                f"(python examples/translate.py --out {os.path.dirname(path)})")
    try:
        checkpoint = minitorch.load(path)
    except ValueError as error:
        raise ValueError(f"checkpoint {path} is corrupted or not a minitorch checkpoint: "
                         f"{error}") from None
    missing = [k for k in ("model", "optimizer", "scheduler", "epoch", "step", "config", "rng")
               if not isinstance(checkpoint, dict) or k not in checkpoint]
    if missing:
        raise ValueError(f"checkpoint {path} lacks {missing}: not written by translate.py")
    try:
        checkpoint["config"] = json.loads(checkpoint["config"])
    except (TypeError, json.JSONDecodeError) as error:
        raise ValueError(f"checkpoint {path}: its config is not valid JSON ({error})") from None
    return checkpoint


def load_weights(model, checkpoint, out):
    try:
        model.load_state_dict(checkpoint["model"])
    except (KeyError, ValueError, RuntimeError) as error:
        raise ValueError(f"checkpoint in {out} does not fit its config/tokenizers: {error}") \
            from None


def restore_model(out):
    """(model, src_tokenizer, tgt_tokenizer, checkpoint) from the files in ``out``."""
    checkpoint = load_checkpoint(os.path.join(out, CHECKPOINT))
    src_tok, tgt_tok = load_tokenizers(out)
    model = build_model(checkpoint["config"], src_tok.vocab_size, tgt_tok.vocab_size)
    load_weights(model, checkpoint, out)
    return model, src_tok, tgt_tok, checkpoint


# ----------------------------------------------------------------------------- evaluation


def evaluate_bleu(model, valid, src_tok, tgt_tok, args):
    sources = [s for s, _ in valid]
    hyps = translate(model, sources, src_tok, tgt_tok, batch_size=100, **decoding_options(args))
    return bleu(hyps, [t for _, t in valid]), hyps


def plot_loss(losses, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib not installed, loss.png skipped")
        return False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(np.arange(1, len(losses) + 1), losses, lw=0.8)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (label-smoothed)")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _token_labels(tokenizer, ids):
    return [tokenizer.id_to_token(i).replace("</w>", "_") for i in ids]


def plot_attention(model, sentence, src_tok, tgt_tok, path):
    """Cross-attention of the last decoder layer while translating ``sentence``, per head."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: matplotlib not installed, attention.png skipped")
        return False
    src_ids = src_tok.encode(sentence, add_eos=True)
    model.eval()
    out_ids, weights = greedy_decode(model, minitorch.tensor([src_ids]), None,
                                     bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID,
                                     record_attention=True)
    out_ids = out_ids[0] + [EOS_ID]
    weights = weights[0][:, :len(out_ids), :]  # (heads, steps, S)
    heads = weights.shape[0]
    fig, axes = plt.subplots(1, heads, figsize=(3.2 * heads, 3.6), squeeze=False)
    for head, ax in enumerate(axes[0]):
        ax.imshow(weights[head], cmap="viridis", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(src_ids)))
        ax.set_xticklabels(_token_labels(src_tok, src_ids), rotation=90, fontsize=7)
        ax.set_yticks(range(len(out_ids)))
        ax.set_yticklabels(_token_labels(tgt_tok, out_ids) if head == 0 else [], fontsize=7)
        ax.set_title(f"head {head}", fontsize=9)
    fig.suptitle(f"cross-attention, last decoder layer: {sentence!r}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


# ----------------------------------------------------------------------------- commands


def decoding_options(args):
    return dict(method=args.decode, beam_size=args.beam_size, temperature=args.temperature,
                top_p=args.top_p, seed=args.seed)


def run_translate(args):
    model, src_tok, tgt_tok, _ = restore_model(args.out)
    output = translate(model, [args.translate], src_tok, tgt_tok, **decoding_options(args))[0]
    print(output)
    return {"translation": output}


def setup_backend(args):
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    if args.threads is not None:
        minitorch.set_num_threads(args.threads)


def main(argv=None):
    """Train (or with --translate, translate); returns a dict of results for tests."""
    args = parse_args(argv)
    setup_backend(args)
    if args.translate is not None:
        return run_translate(args)
    os.makedirs(args.out, exist_ok=True)
    checkpoint_path = os.path.join(args.out, CHECKPOINT)
    say = (lambda *a: None) if args.quiet else print

    if args.resume:
        checkpoint = load_checkpoint(checkpoint_path)
        config = checkpoint["config"]
        if args.epochs is not None:  # train a resumed run for longer than first planned
            config["epochs"] = args.epochs
    else:
        checkpoint = None
        config = {k: getattr(args, k) for k in CONFIG_KEYS}
        config["epochs"] = DEFAULT_EPOCHS if args.epochs is None else args.epochs

    minitorch.manual_seed(config["seed"])
    started = time.perf_counter()
    train_text, valid_text = load_pairs(config)
    if checkpoint is not None:
        src_tok, tgt_tok = load_tokenizers(args.out)
    else:
        src_tok, tgt_tok = fresh_tokenizers(config, train_text, args.out)
    train_ids = encode_pairs(train_text, src_tok, tgt_tok, config["max_len"])
    model = build_model(config, src_tok.vocab_size, tgt_tok.vocab_size)
    optimizer, scheduler = build_optimizer(config, model)
    state = {"epoch": 0, "batch_in_epoch": 0, "step": 0, "losses": [], "bleus": []}
    if checkpoint is not None:
        load_weights(model, checkpoint, args.out)
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        minitorch.set_rng_state(json.loads(checkpoint["rng"]))
        state.update(epoch=checkpoint["epoch"], batch_in_epoch=checkpoint["batch_in_epoch"],
                     step=checkpoint["step"], losses=list(checkpoint["history"]["loss"]),
                     bleus=list(checkpoint["history"]["bleu"]))
        say(f"resumed from {checkpoint_path}: epoch {state['epoch'] + 1}, step {state['step']}")
    say(f"{config['corpus']} corpus: {len(train_ids)} training pairs, {len(valid_text)} held out;"
        f" vocab {src_tok.vocab_size} / {tgt_tok.vocab_size}; model "
        f"{count_parameters(model) / 1e6:.2f}M parameters; backend {minitorch.backend()}, "
        f"{minitorch.get_num_threads()} threads")

    batches_per_epoch = count_batches(train_ids, config["batch_size"],
                                      max_tokens=config["max_tokens"])
    max_steps = args.max_steps
    new_losses = []
    stopped = False
    while state["epoch"] < config["epochs"] and not stopped:
        if max_steps is not None and state["step"] >= max_steps:
            break
        model.train()
        progress = Progress(batches_per_epoch, f"epoch {state['epoch'] + 1}/{config['epochs']}",
                            enabled=not args.quiet, initial=state["batch_in_epoch"])
        batches = iterate_batches(train_ids, config["batch_size"], PAD_ID, BOS_ID, EOS_ID,
                                  max_tokens=config["max_tokens"], seed=config["seed"],
                                  epoch=state["epoch"])
        for index, batch in enumerate(batches):
            if index < state["batch_in_epoch"]:
                continue  # already trained on before the checkpoint we resumed from
            if max_steps is not None and state["step"] >= max_steps:
                stopped = True
                break
            loss = train_step(model, batch, optimizer, scheduler, pad_id=PAD_ID,
                              label_smoothing=config["label_smoothing"])
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss} at step {state['step']}: "
                                         f"lower --lr-factor")
            state["step"] += 1
            state["batch_in_epoch"] = index + 1
            state["losses"].append(loss)
            new_losses.append(loss)
            progress.update(loss, batch.n_tokens, scheduler.get_last_lr()[0])
        progress.close()
        if not stopped:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
        score, hyps = evaluate_bleu(model, valid_text, src_tok, tgt_tok, args)
        state["bleus"].append(score)
        say(f"epoch {state['epoch'] + (0 if not stopped else 1)}: step {state['step']}, "
            f"held-out BLEU {score:.2f} ({args.decode}, {len(valid_text)} sentences), "
            f"{time.perf_counter() - started:.0f}s elapsed")
        for (src, ref), hyp in list(zip(valid_text, hyps))[:3]:
            say(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}")
        save_checkpoint(checkpoint_path, model, optimizer, scheduler, state, config)

    final_bleu = state["bleus"][-1] if state["bleus"] else float("nan")
    if not args.no_plots:
        plot_loss(state["losses"], os.path.join(args.out, "loss.png"))
    if valid_text and not args.no_plots:
        plot_attention(model, valid_text[0][0], src_tok, tgt_tok,
                       os.path.join(args.out, "attention.png"))
    elapsed = time.perf_counter() - started
    print(f"Final held-out BLEU: {final_bleu:.2f} after {state['step']} steps, {elapsed:.0f}s "
          f"(checkpoint: {checkpoint_path})")
    return {"bleu": final_bleu, "losses": new_losses, "all_losses": state["losses"],
            "step": state["step"], "seconds": elapsed, "out": args.out}


if __name__ == "__main__":
    try:
        main()
    except (ValueError, FileNotFoundError) as error:
        sys.exit(f"error: {error}")
