"""Train a Transformer to translate English → Spanish (or German → English), then use it.

    python examples/translate.py                       # train on the embedded corpus
    python examples/translate.py --translate "We are eating bread."
    python examples/translate.py --resume --epochs 2   # 2 more epochs of runs/translate/en-es

What it does: generates the embedded English→Spanish corpus (``minitorch.text.corpus``; held-out
sentences never occur in training) or reads the trans-de-en dictionary's sentences
(``--corpus trans-de-en``), trains one BPE tokenizer per language (saved next to the
checkpoint), trains ``Seq2SeqTransformer`` with Adam(0.9, 0.98, eps 1e-9), the warmup schedule
of "Attention is all you need" and label smoothing 0.1 on length-bucketed batches, and after
every epoch decodes the held-out split (batched, KV cache) and prints its BLEU and a few
source / reference / hypothesis triples. It saves ``checkpoint.safetensors`` atomically after
every epoch (model, optimizer, scheduler, epoch, step, RNG state, config, loss history) and
draws ``loss.png`` and ``attention.png`` (the last decoder layer's cross-attention, one panel
per head) when matplotlib is installed. Each corpus has its own run folder
(``runs/translate/en-es``, ``runs/translate/trans-de-en``); a new run never replaces another's
files unless ``--overwrite`` is given, and every argument is checked before anything is trained
or written. ``main(argv)`` runs it in-process (the tests do).

Under ``mpiexec -n N python examples/translate.py`` (needs ``pip install
'minitorch-edu[distributed]'``) it trains data-parallel: every rank draws the same batches and
trains on its 1/N of each (``DistributedDataParallel`` averages the gradients), on one C-kernel
thread by default, so the run takes the same steps as one process and reaches the same model up
to rounding and dropout; rank 0 alone prints, draws and writes the run folder, and every rank
loads the checkpoint it resumes from.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import time

import numpy as np

import minitorch
from minitorch import distributed as dist
from minitorch import nn, optim
from minitorch.text import BPETokenizer, bleu, load_corpus
from minitorch.text.batching import (bucket_indices, count_batches, encode_pairs,
                                     iterate_batches, make_batch)
from minitorch.text.decoding import greedy_decode, translate
from minitorch.text.model import Seq2SeqTransformer, count_parameters
from minitorch.text.training import Progress, seq2seq_loss, train_step

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, add_model_arguments, add_run_arguments,  # noqa: E402
                     check_resume_flags, check_run_folder, fraction, make_run_folder,
                     non_negative_int, positive_float, positive_int, run_main)

CHECKPOINT = "checkpoint.safetensors"
SRC_TOKENIZER, TGT_TOKENIZER = "src_bpe.json", "tgt_bpe.json"
RUN_FILES = (CHECKPOINT, SRC_TOKENIZER, TGT_TOKENIZER, "loss.png", "attention.png")
RUN_NAMES = {"embedded": "en-es", "trans-de-en": "trans-de-en"}  # runs/translate/<name>
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3  # BPETokenizer's fixed special ids
DEFAULT_EPOCHS = 3

# Settings the model and data depend on: stored in the checkpoint, restored by --resume and
# --translate (so the flags of a later run cannot silently build a different model).
CONFIG_KEYS = ("corpus", "n_train", "n_valid", "vocab_size", "d_model", "heads", "layers",
               "ff", "dropout", "max_len", "seed", "batch_size", "max_tokens", "warmup",
               "lr_factor", "label_smoothing", "epochs")


def build_parser():
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("embedded", "trans-de-en"), default="embedded",
                   help="embedded: generated English→Spanish; trans-de-en: German→English "
                        "sentences of Debian's dictionary, whose default settings are those of "
                        "minitorch.text.trans_de_en.TRAINING_DEFAULTS (e.g. 20 epochs, "
                        "--lr-factor 0.5, --max-len 96)")
    p.add_argument("--n-train", type=positive_int, default=20000, help="training pairs")
    p.add_argument("--n-valid", type=positive_int, default=500, help="held-out pairs (BLEU)")
    p.add_argument("--vocab-size", type=positive_int, default=1000,
                   help="BPE vocabulary per language")
    p.add_argument("--epochs", type=positive_int, default=None,
                   help=f"epochs to train (default {DEFAULT_EPOCHS}); with --resume: that many "
                        f"MORE epochs, a partly trained epoch being finished as the first "
                        f"(default: finish the epochs the run planned)")
    p.add_argument("--max-steps", type=positive_int, default=None,
                   help="stop after this many steps (default: no limit); with --resume: this "
                        "many MORE steps (alone, it may go past the planned epochs)")
    add_model_arguments(p, d_model=128, heads=4, layers=2, ff=512, dropout=0.1, warmup=300,
                        lr_factor=1.0)
    p.add_argument("--max-len", type=positive_int, default=64,
                   help="longest sentence in tokens: longer training and held-out pairs are "
                        "left out")
    p.add_argument("--batch-size", type=positive_int, default=64,
                   help="sentence pairs per batch at most")
    p.add_argument("--max-tokens", type=positive_int, default=None,
                   help="padded tokens per batch at most (default: no limit)")
    p.add_argument("--label-smoothing", type=fraction, default=0.1,
                   help="label smoothing of the loss")
    p.add_argument("--decode", choices=("greedy", "beam", "sample"), default="greedy",
                   help="decoding for BLEU and --translate")
    p.add_argument("--beam-size", type=positive_int, default=4, help="for --decode beam")
    p.add_argument("--temperature", type=positive_float, default=1.0,
                   help="for --decode sample")
    p.add_argument("--top-p", type=fraction_or_one, default=0.9,
                   help="for --decode sample: nucleus size in (0, 1] (label smoothing leaves "
                        "every token a little probability; the nucleus cuts that tail)")
    # One thread by default: this model's matrices are small, and a 2-thread GEMM team loses
    # far more to synchronisation than it gains (6x slower when other processes share the CPUs).
    # Under mpiexec, --threads is per rank.
    add_run_arguments(p, "run folder (default: runs/translate/en-es, or runs/translate/"
                         "trans-de-en with --corpus trans-de-en)")
    p.add_argument("--translate", metavar="SENTENCE", default=None,
                   help="translate SENTENCE with the saved model and exit; it is first written "
                        "the way the corpus is: embedded: lower case (but 'I'), single spaces, "
                        "no final '.' or '!'; trans-de-en: single spaces, a capital first "
                        "letter, a final '.' if none (default: train)")
    p.add_argument("--device", default="cpu",
                   help="where the model trains and decodes: cpu, or cuda / cuda:N where "
                        "minitorch.cuda.is_available() (CuPy and a GPU: pip install "
                        "'minitorch-edu[cuda]'); default cpu")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    p.add_argument("--quiet", action="store_true", help="no progress bar or examples")
    p.add_argument("--no-plots", action="store_true", help="skip loss.png and attention.png")
    return p


def fraction_or_one(text):
    """A number in (0, 1]: --top-p."""
    value = positive_float(text)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}")
    return value


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = build_parser()
    if p.parse_known_args(argv)[0].corpus == "trans-de-en":
        # The settings that learn this corpus (its docstring says why), unless given.
        from minitorch.text.trans_de_en import TRAINING_DEFAULTS
        p.set_defaults(**{k: v for k, v in TRAINING_DEFAULTS.items()
                          if k not in ("epochs", "max_words")})
    args = p.parse_args(argv)
    if args.out is None:
        args.out = os.path.join("runs", "translate", RUN_NAMES[args.corpus])
    if args.d_model % args.heads:
        p.error(f"--heads must divide --d-model, got --d-model {args.d_model} and "
                f"--heads {args.heads}")
    args.device = check_device(p, args.device)
    if args.translate is not None:
        if not normalize_input(args.translate, args.corpus):
            p.error("--translate: the sentence is empty")
        if not os.path.isfile(os.path.join(args.out, CHECKPOINT)):
            p.error(f"--translate: no checkpoint in {args.out} (no checkpoint at "
                    f"{os.path.join(args.out, CHECKPOINT)}): train first")
        return p, args
    if args.corpus == "trans-de-en" and not args.resume:
        from minitorch.text.trans_de_en import DEFAULT_PATH
        if not os.path.isfile(DEFAULT_PATH):
            p.error(f"--corpus trans-de-en reads {DEFAULT_PATH}: apt-get install trans-de-en")
    check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite, resume=args.resume,
                     checkpoint=CHECKPOINT)
    return p, args


def check_device(parser, text):
    """--device as a minitorch.device that this machine has (parser.error otherwise)."""
    try:
        device = minitorch.device(text)
    except (RuntimeError, TypeError) as error:
        parser.error(f"--device {text}: {error}")
    if device.type not in ("cpu", "cuda"):
        parser.error(f"--device {text}: minitorch trains on cpu or cuda")
    if device.type == "cuda":
        count = minitorch.cuda.device_count()
        if count == 0:
            parser.error(f"--device {text}: CUDA is not available here (minitorch.cuda."
                         "is_available() is False: it needs CuPy and a GPU; pip install "
                         "'minitorch-edu[cuda]')")
        if device.index is not None and device.index >= count:
            parser.error(f"--device {text}: there {'is' if count == 1 else 'are'} {count} GPU"
                         f"{'' if count == 1 else 's'} (cuda:0 to cuda:{count - 1})")
    return device


def normalize_input(text, corpus):
    """``text`` written the way ``corpus`` writes its sentences (see --translate's help)."""
    text = re.sub(r"\s+([?!.,])", r"\1", " ".join(text.split()))
    if corpus == "embedded":
        words = ["I" if w.lower() == "i" else w.lower() for w in text.split()]
        return " ".join(words).rstrip(".! ")
    if text and text[-1] not in ".!?":
        text += "."
    return text[:1].upper() + text[1:] if text.strip(".!?") else ""


# ----------------------------------------------------------------------------- data


def load_pairs(config):
    """(train, valid) lists of (source, target) sentences; no held-out source is in train."""
    if config["corpus"] == "embedded":
        splits = load_corpus(config["n_train"], config["n_valid"], seed=config["seed"])
        return list(splits.train), list(splits.valid)
    from minitorch.text.trans_de_en import TRAINING_DEFAULTS, load_trans_de_en, split_pairs
    pairs = load_trans_de_en(max_words=TRAINING_DEFAULTS["max_words"])
    return split_pairs(pairs, config["n_valid"], n_train=config["n_train"], seed=config["seed"])


def fit_pairs(pairs, src_tok, tgt_tok, max_len):
    """(pairs, token ids) of the pairs that fit ``max_len``, and how many did not: training and
    held-out pairs are filtered alike (``minitorch.text.batching.encode_pairs``)."""
    ids, kept = encode_pairs(pairs, src_tok, tgt_tok, max_len)
    return kept, ids, len(pairs) - len(kept)


def source_words(sentence):
    return re.findall(r"\w+", sentence.lower())


def unknown_words(sentence, known, src_tok):
    """The words of ``sentence`` the model never saw in training: not among ``known`` (the
    training sources' words; None for a checkpoint without them), or with a character the
    tokenizer maps to <unk>."""
    return [w for w in source_words(sentence)
            if (known is not None and w not in known)
            or src_tok.unk_id in src_tok.encode(w)]


def fresh_tokenizers(config, train):
    """One BPE tokenizer per language, trained on ``train``."""
    return (BPETokenizer.train([s for s, _ in train], config["vocab_size"]),
            BPETokenizer.train([t for _, t in train], config["vocab_size"]))


def save_tokenizers(out, src_tok, tgt_tok):
    src_tok.save(os.path.join(out, SRC_TOKENIZER))
    tgt_tok.save(os.path.join(out, TGT_TOKENIZER))


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
        "src_words": json.dumps(sorted(state["src_words"])),  # for --translate's unknown words
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
    device = next(model.parameters()).device
    out_ids, weights = greedy_decode(model, minitorch.tensor([src_ids], device=device), None,
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


# ----------------------------------------------------------------------------- ranks


def join_ranks():
    """(rank, world size): under mpiexec, this process's place in the job (the process group is
    set up here); started alone, (0, 1), without importing MPI."""
    if not dist.is_mpiexec_launched():
        return 0, 1
    if not dist.is_initialized():
        try:
            dist.init_process_group("mpi")
        except ImportError as error:
            sys.exit(f"{os.path.basename(sys.argv[0])}: error: started by mpiexec, but {error}")
    return dist.get_rank(), dist.get_world_size()


def rank_batches(train_ids, config, epoch, rank, world):
    """The epoch's batches as (this rank's share, its loss weight, the batch's target tokens).

    Every rank draws the same batches (same seed and epoch) and trains on pairs ``rank``,
    ``rank + world``, ... of each. A share's mean loss is weighted by ``world`` times its part of
    the batch's target tokens, so that the average of the ranks' gradients is the gradient of
    the whole batch's mean loss: a run takes the same steps as one process. A share left empty
    (a batch of fewer pairs than ranks) trains on one pair with weight 0: the rank still takes
    part in the averaging, which every rank must.
    """
    if world == 1:
        for batch in iterate_batches(train_ids, config["batch_size"], PAD_ID, BOS_ID, EOS_ID,
                                     max_tokens=config["max_tokens"], seed=config["seed"],
                                     epoch=epoch):
            yield batch, 1.0, batch.n_tokens
        return
    lengths = [max(len(src), len(tgt) + 1) for src, tgt in train_ids]  # as iterate_batches
    for indices in bucket_indices(lengths, config["batch_size"], max_tokens=config["max_tokens"],
                                  seed=config["seed"], epoch=epoch):
        tokens = sum(len(train_ids[i][1]) + 1 for i in indices)  # what Batch.n_tokens counts
        share = indices[rank::world]
        batch = make_batch([train_ids[i] for i in share or indices[:1]], PAD_ID, BOS_ID, EOS_ID)
        yield batch, (world * batch.n_tokens / tokens if share else 0.0), tokens


def data_parallel_step(ddp, batch, weight, optimizer, scheduler, label_smoothing):
    """``train_step`` for one rank's share of a batch (see :func:`rank_batches`); returns the
    whole batch's loss, the same on every rank."""
    logits = ddp(batch.src, batch.tgt_in, batch.src_key_padding_mask,
                 batch.tgt_key_padding_mask, batch.tgt_mask)
    loss = seq2seq_loss(logits, batch.tgt_out, PAD_ID, label_smoothing) * weight
    optimizer.zero_grad()
    loss.backward()  # DDP averages the gradients over the ranks on the way
    nn.utils.clip_grad_norm_(ddp.module.parameters(), 1.0)  # as train_step
    optimizer.step()
    scheduler.step()
    total = loss.detach() / dist.get_world_size()
    dist.all_reduce(total)
    return float(total.item())


# ----------------------------------------------------------------------------- commands


def decoding_options(args):
    return dict(method=args.decode, beam_size=args.beam_size, temperature=args.temperature,
                top_p=args.top_p, seed=args.seed)


def run_translate(args):
    model, src_tok, tgt_tok, checkpoint = restore_model(args.out)
    model.to(args.device)
    config = checkpoint["config"]
    sentence = normalize_input(args.translate, config["corpus"])
    n_tokens = len(src_tok.encode(sentence, add_eos=True))
    if n_tokens > model.max_len:
        build_parser().error(f"--translate: the sentence has {n_tokens} tokens, more than the "
                             f"model's max_len {model.max_len}")
    known = set(json.loads(checkpoint["src_words"])) if "src_words" in checkpoint else None
    unknown = unknown_words(sentence, known, src_tok)
    output = translate(model, [sentence], src_tok, tgt_tok, **decoding_options(args))[0]
    print(output)
    if sentence != args.translate:
        print(f"(read as {sentence!r}, the way the {RUN_NAMES[config['corpus']]} corpus is "
              f"written)", file=sys.stderr)
    words = len(source_words(sentence))
    print(f"({len(unknown)} of {words} source words unknown to the model"
          + (f": {', '.join(unknown)})" if unknown else ")"), file=sys.stderr)
    return {"translation": output, "input": sentence, "unknown": unknown}


def setup_backend(args):
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)


def resume_config(parser, args, checkpoint):
    """The resumed run's config; a flag given now that contradicts it is an error."""
    config = checkpoint["config"]
    check_resume_flags(parser, args, config, CONFIG_KEYS, free=("epochs",))
    return config


def training_budget(parser, args, checkpoint, config):
    """(last epoch, last step) to train to: both None-or-int; see --epochs and --max-steps."""
    if checkpoint is None:
        if args.epochs is not None:
            epochs = args.epochs
        elif args.corpus == "trans-de-en":
            from minitorch.text.trans_de_en import TRAINING_DEFAULTS
            epochs = TRAINING_DEFAULTS["epochs"]
        else:
            epochs = DEFAULT_EPOCHS
        return epochs, args.max_steps
    done_epochs, done_steps = checkpoint["epoch"], checkpoint["step"]
    max_steps = None if args.max_steps is None else done_steps + args.max_steps
    if args.epochs is not None:
        return done_epochs + args.epochs, max_steps
    if args.max_steps is not None:
        return None, max_steps  # N more steps, across the planned epochs' end if need be
    if done_epochs >= config["epochs"]:
        parser.error(f"--resume: the run in {args.out} has trained all its {config['epochs']} "
                     f"planned epochs: pass --epochs N or --max-steps N to train N more")
    return config["epochs"], None


def main(argv=None):
    """Train (or with --translate, translate); returns a dict of results for tests."""
    parser, args = parse_args(argv)
    setup_backend(args)
    rank, world = join_ranks()
    if args.translate is not None:
        return run_translate(args) if rank == 0 else None
    if world > 1:
        dist.barrier()  # every rank has checked the run folder before rank 0 writes in it
    checkpoint_path = os.path.join(args.out, CHECKPOINT)
    quiet = args.quiet or rank != 0  # rank 0 alone prints, draws and writes
    say = (lambda *a: None) if quiet else print

    if args.resume:
        checkpoint = load_checkpoint(checkpoint_path)
        config = resume_config(parser, args, checkpoint)
    else:
        checkpoint = None
        config = {k: getattr(args, k) for k in CONFIG_KEYS}
    last_epoch, last_step = training_budget(parser, args, checkpoint, config)
    if checkpoint is None:
        config["epochs"] = last_epoch

    minitorch.manual_seed(config["seed"])
    started = time.perf_counter()
    train_text, valid_text = load_pairs(config)
    if checkpoint is not None:
        src_tok, tgt_tok = load_tokenizers(args.out)
    else:
        try:
            src_tok, tgt_tok = fresh_tokenizers(config, train_text)
        except ValueError as error:  # too small for the corpus's characters
            parser.error(f"--vocab-size: {error}")
    train_text, train_ids, long_train = fit_pairs(train_text, src_tok, tgt_tok, config["max_len"])
    valid_text, _, long_valid = fit_pairs(valid_text, src_tok, tgt_tok, config["max_len"])
    if not train_ids:
        parser.error(f"--max-len {config['max_len']}: no training pair is that short")
    if world > 1 and args.device.type != "cpu":
        parser.error(f"--device {args.device}: runs under mpiexec train on the CPU")
    model = build_model(config, src_tok.vocab_size, tgt_tok.vocab_size).to(args.device)
    optimizer, scheduler = build_optimizer(config, model)
    state = {"epoch": 0, "batch_in_epoch": 0, "step": 0, "losses": [], "bleus": [],
             "src_words": {w for s, _ in train_text for w in source_words(s)}}
    if checkpoint is not None:
        load_weights(model, checkpoint, args.out)
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
        minitorch.set_rng_state(json.loads(checkpoint["rng"]))
        state.update(epoch=checkpoint["epoch"], batch_in_epoch=checkpoint["batch_in_epoch"],
                     step=checkpoint["step"], losses=list(checkpoint["history"]["loss"]),
                     bleus=list(checkpoint["history"]["bleu"]))
        say(f"resumed from {checkpoint_path}: epoch {state['epoch'] + 1}, step {state['step']}")
    elif rank == 0:
        make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
        save_tokenizers(args.out, src_tok, tgt_tok)
    ddp = None
    if world > 1:
        ddp = nn.parallel.DistributedDataParallel(model)
        # Dropout: each rank its own masks, drawn from the seed, the rank and the step.
        minitorch.manual_seed(config["seed"] + 1_000_003 * rank + state["step"])
    if long_train or long_valid:
        say(f"left out for --max-len {config['max_len']}: {long_train} training and "
            f"{long_valid} held-out pairs")
    say(f"{config['corpus']} corpus: {len(train_ids)} training pairs, {len(valid_text)} held out;"
        f" vocab {src_tok.vocab_size} / {tgt_tok.vocab_size}; model "
        f"{count_parameters(model) / 1e6:.2f}M parameters; "
        + (f"backend {minitorch.backend()}, {minitorch.get_num_threads()} threads"
           if args.device.type == "cpu" else f"device {args.device}")
        + (f" x {world} ranks" if world > 1 else ""))

    batches_per_epoch = count_batches(train_ids, config["batch_size"],
                                      max_tokens=config["max_tokens"])
    first_step, new_losses, final_bleu, hyps = state["step"], [], float("nan"), None
    label = f"{args.decode}, {len(valid_text)} sentences"

    def more_to_do():
        return ((last_epoch is None or state["epoch"] < last_epoch)
                and (last_step is None or state["step"] < last_step))

    while more_to_do():
        model.train()
        of = "" if last_epoch is None else f"/{last_epoch}"
        progress = Progress(batches_per_epoch, f"epoch {state['epoch'] + 1}{of}",
                            enabled=not quiet, initial=state["batch_in_epoch"])
        batches = rank_batches(train_ids, config, state["epoch"], rank, world)
        for index, (batch, weight, n_tokens) in enumerate(batches):
            if index < state["batch_in_epoch"]:
                continue  # already trained on before the checkpoint we resumed from
            if not more_to_do():
                break
            if ddp is None:
                loss = train_step(model, batch.to(args.device), optimizer, scheduler, pad_id=PAD_ID,
                                  label_smoothing=config["label_smoothing"])
            else:
                loss = data_parallel_step(ddp, batch, weight, optimizer, scheduler,
                                          config["label_smoothing"])
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss} at step {state['step']}: "
                                         f"lower --lr-factor")
            state["step"] += 1
            state["batch_in_epoch"] = index + 1
            state["losses"].append(loss)
            new_losses.append(loss)
            progress.update(loss, n_tokens, scheduler.get_last_lr()[0])
        progress.close()
        if state["batch_in_epoch"] == batches_per_epoch:
            state["epoch"] += 1
            state["batch_in_epoch"] = 0
        where = (f"epoch {state['epoch']}" if state["batch_in_epoch"] == 0 else
                 f"epoch {state['epoch'] + 1}, batch {state['batch_in_epoch']}")
        if valid_text and rank == 0:
            final_bleu, hyps = evaluate_bleu(model, valid_text, src_tok, tgt_tok, args)
            state["bleus"].append(final_bleu)
            say(f"{where}: step {state['step']}, held-out BLEU {final_bleu:.2f} ({label}), "
                f"{time.perf_counter() - started:.0f}s elapsed")
            for (src, ref), hyp in list(zip(valid_text, hyps))[:3]:
                say(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}")
        config["epochs"] = max(config["epochs"], state["epoch"] if last_epoch is None
                               else last_epoch)
        if rank == 0:
            save_checkpoint(checkpoint_path, model, optimizer, scheduler, state, config)

    if not args.no_plots and rank == 0:
        plot_loss(state["losses"], os.path.join(args.out, "loss.png"))
    if valid_text and not args.no_plots and rank == 0:
        plot_attention(model, valid_text[0][0], src_tok, tgt_tok,
                       os.path.join(args.out, "attention.png"))
    elapsed = time.perf_counter() - started
    # and with sacreBLEU's standard tokenisation, the figure papers quote
    bleu_13a = float("nan") if hyps is None else bleu(hyps, [t for _, t in valid_text],
                                                       tokenize="13a", smooth=True)
    score = (f"Final held-out BLEU {final_bleu:.2f}, sacreBLEU-13a {bleu_13a:.2f} ({label})"
             if valid_text else
             f"No held-out pair fits --max-len {config['max_len']}: no BLEU")
    if rank == 0:
        print(f"{score} after {state['step'] - first_step} steps ({state['step']} in all), "
              f"{elapsed:.0f}s (checkpoint: {checkpoint_path})")
    return {"bleu": final_bleu, "losses": new_losses, "all_losses": state["losses"],
            "step": state["step"], "seconds": elapsed, "out": args.out,
            "dropped": (long_train, long_valid)}


if __name__ == "__main__":
    run_main(main)
