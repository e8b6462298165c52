"""Train a recurrent encoder-decoder with attention to translate English → Spanish (or German →
English), and show what attention buys: the heatmap of a sentence and BLEU by source length.

    python examples/rnn_translate.py                     # GRU, additive attention
    python examples/rnn_translate.py --no-attention      # the fixed-vector bottleneck
    python examples/rnn_translate.py --translate "we are eating bread"

What it does: the corpora, BPE tokenizers and batches of ``examples/translate.py`` (whose
helpers it imports), and ``minitorch.text.rnn_model.Seq2SeqRNN``: a bidirectional GRU (or LSTM)
encoder, ``s_0`` predicted from its last states, and a GRUCell decoder that at every step scores
each source position against ``s_{t-1}`` (``--attention additive``: an MLP, ``dot``: a bilinear
form; ``none``: no attention, the decoder reads one fixed vector). Trained with teacher forcing
(``--teacher-forcing`` below 1 adds scheduled sampling), Adam and a warmup-then-decay schedule;
after every epoch it decodes the held-out split (greedy) and prints BLEU; at the end it prints
greedy and beam-search BLEU and BLEU by source length. The run folder
(``runs/rnn_translate/<corpus>-<attention>``) gets ``checkpoint.safetensors``, the tokenizers,
``bleu_by_length.json`` and, with matplotlib, ``loss.png``, ``attention.png`` (source words ×
target words while translating "we are eating bread" and "I bought two red cars") and
``bleu_by_length.png``, which draws this run's curve beside the other attention variants' runs
found next to it (or ``--compare RUN_FOLDER``'s). A run never replaces another run's files
unless ``--overwrite``; every argument is checked before anything is trained or written.
``main(argv)`` runs it in-process.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time


import minitorch
from minitorch import optim
from minitorch.text import bleu
from minitorch.text.batching import count_batches, iterate_batches
from minitorch.text.decoding import translate
from minitorch.text.model import count_parameters
from minitorch.text.rnn_decoding import decode_with_attention
from minitorch.text.rnn_model import Seq2SeqRNN
from minitorch.text.training import Progress, train_step

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, check_run_folder, fraction, make_run_folder,  # noqa: E402
                     non_negative_int, positive_float, positive_int, run_main)
from translate import (BOS_ID, EOS_ID, PAD_ID, RUN_NAMES, SRC_TOKENIZER,  # noqa: E402
                       TGT_TOKENIZER, _token_labels, fit_pairs, fresh_tokenizers, load_pairs,
                       load_tokenizers, normalize_input, plot_loss, save_tokenizers,
                       source_words, unknown_words)

CHECKPOINT, LENGTH_TABLE = "checkpoint.safetensors", "bleu_by_length.json"
RUN_FILES = (CHECKPOINT, SRC_TOKENIZER, TGT_TOKENIZER, LENGTH_TABLE, "loss.png",
             "attention.png", "bleu_by_length.png")
ATTENTIONS = ("additive", "dot", "none")
# The lecture's sentence ("estamos comiendo pan"), and one whose adjective Spanish moves after
# its noun ("compré dos coches rojos"): the off-diagonal of the heatmap.
HEATMAP_SENTENCES = ("we are eating bread", "I bought two red cars")

# What the model and data depend on: stored in the checkpoint, read back by --translate.
CONFIG_KEYS = ("corpus", "n_train", "n_valid", "vocab_size", "max_len", "cell", "attention",
               "embed_size", "hidden_size", "attention_size", "layers", "unidirectional",
               "dropout", "seed")


def build_parser():
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=("embedded", "trans-de-en"), default="embedded",
                   help="embedded: generated English→Spanish; trans-de-en: German→English "
                        "sentences of Debian's dictionary")
    p.add_argument("--n-train", type=positive_int, default=20000, help="training pairs")
    p.add_argument("--n-valid", type=positive_int, default=500, help="held-out pairs (BLEU)")
    p.add_argument("--vocab-size", type=positive_int, default=1000,
                   help="BPE vocabulary per language")
    p.add_argument("--max-len", type=positive_int, default=64,
                   help="longest sentence in tokens: longer pairs are left out (96 with "
                        "--corpus trans-de-en)")
    p.add_argument("--attention", choices=ATTENTIONS, default="additive",
                   help="f_att: additive (an MLP of s_{t-1} and h_i), dot (s^T W h / sqrt(d)), "
                        "or none (the decoder reads one fixed vector)")
    p.add_argument("--no-attention", dest="attention", action="store_const", const="none",
                   help="the same as --attention none")
    p.add_argument("--cell", choices=("gru", "lstm"), default="gru",
                   help="recurrent cell of the encoder and decoder")
    p.add_argument("--embed-size", type=positive_int, default=64, help="token embedding size")
    p.add_argument("--hidden-size", type=positive_int, default=64,
                   help="hidden state size (each encoder direction, and the decoder)")
    p.add_argument("--attention-size", type=positive_int, default=None,
                   help="hidden width of the additive attention's MLP (default: --hidden-size)")
    p.add_argument("--layers", type=positive_int, default=1, help="encoder layers")
    p.add_argument("--unidirectional", action="store_true",
                   help="a forward-only encoder instead of the bidirectional one")
    p.add_argument("--dropout", type=fraction, default=0.1, help="dropout probability")
    p.add_argument("--epochs", type=positive_int, default=3, help="epochs to train")
    p.add_argument("--max-steps", type=positive_int, default=None,
                   help="stop after this many steps (default: no limit)")
    p.add_argument("--batch-size", type=positive_int, default=64,
                   help="sentence pairs per batch at most")
    p.add_argument("--lr", type=positive_float, default=3e-3, help="peak learning rate (Adam)")
    p.add_argument("--warmup", type=non_negative_int, default=100,
                   help="steps of linear warmup; then the lr decays as a cosine to 5%% of the "
                        "peak at the last planned step")
    p.add_argument("--clip", type=positive_float, default=1.0, help="gradient norm clipping")
    p.add_argument("--label-smoothing", type=fraction, default=0.1,
                   help="label smoothing of the loss")
    p.add_argument("--teacher-forcing", type=unit_fraction, default=1.0,
                   help="teacher-forcing ratio at the end of training: below 1, scheduled "
                        "sampling lowers it linearly from 1 to this value, each step feeding a "
                        "sentence its own prediction with probability 1 - ratio")
    p.add_argument("--decode", choices=("greedy", "beam"), default="greedy",
                   help="decoding for BLEU by length, the heatmap and --translate (the final "
                        "report gives both)")
    p.add_argument("--beam-size", type=positive_int, default=4, help="for beam search")
    p.add_argument("--compare", metavar="RUN_FOLDER", default=None,
                   help=f"another run of this example (a folder with its {LENGTH_TABLE}): "
                        f"bleu_by_length.png draws its curve beside this run's (default: the "
                        f"runs of the other --attention variants in their default folders, "
                        f"when this run uses its default folder)")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="C kernel threads (small matrices: one thread is fastest)")
    p.add_argument("--backend", choices=("c", "numpy"), default=None,
                   help="kernel backend (default: C when built, else numpy)")
    p.add_argument("--out", default=None,
                   help="run folder (default: runs/rnn_translate/<corpus>-<attention>, e.g. "
                        "runs/rnn_translate/en-es-additive)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its files are deleted)")
    p.add_argument("--translate", metavar="SENTENCE", default=None,
                   help="translate SENTENCE with the model saved in --out and exit (written "
                        "first the way the corpus is, as examples/translate.py does)")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    p.add_argument("--quiet", action="store_true", help="no progress bar or examples")
    p.add_argument("--no-plots", action="store_true", help="skip the pictures")
    return p


def unit_fraction(text):
    """A number in [0, 1]: --teacher-forcing."""
    value = non_negative_float(text)
    if value > 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return value


def non_negative_float(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}") from None
    if not value >= 0.0:  # also NaN
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text!r}")
    return value


def default_out(corpus, attention):
    return os.path.join("runs", "rnn_translate", f"{RUN_NAMES[corpus]}-{attention}")


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = build_parser()
    if p.parse_known_args(argv)[0].corpus == "trans-de-en":
        # its longer sentences (up to 25 words), as examples/translate.py reads them
        from minitorch.text.trans_de_en import TRAINING_DEFAULTS
        p.set_defaults(max_len=TRAINING_DEFAULTS["max_len"])
    args = p.parse_args(argv)
    default_folder = args.out is None
    if default_folder:
        args.out = default_out(args.corpus, args.attention)
    if args.translate is not None:
        if not normalize_input(args.translate, args.corpus):
            p.error("--translate: the sentence is empty")
        if not os.path.isfile(os.path.join(args.out, CHECKPOINT)):
            p.error(f"--translate: no checkpoint in {args.out}: train first")
        return p, args
    if args.compare is not None and not os.path.isfile(os.path.join(args.compare,
                                                                     LENGTH_TABLE)):
        p.error(f"--compare {args.compare}: no {LENGTH_TABLE} there (a finished run of "
                f"rnn_translate.py writes one)")
    if args.corpus == "trans-de-en":
        from minitorch.text.trans_de_en import DEFAULT_PATH
        if not os.path.isfile(DEFAULT_PATH):
            p.error(f"--corpus trans-de-en reads {DEFAULT_PATH}: apt-get install trans-de-en")
    check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite)
    args.default_folder = default_folder
    return p, args


# ----------------------------------------------------------------------------- model


def build_model(config, src_vocab, tgt_vocab):
    return Seq2SeqRNN(src_vocab, tgt_vocab, config["embed_size"], config["hidden_size"],
                      cell=config["cell"], bidirectional=not config["unidirectional"],
                      attention=config["attention"], attention_size=config["attention_size"],
                      num_layers=config["layers"], dropout=config["dropout"],
                      max_len=config["max_len"], pad_id=PAD_ID)


def build_optimizer(args, model, total_steps):
    """Adam, a linear warmup to ``--lr``, then a cosine decay to 5% of it at ``total_steps``."""
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    warmup, floor = args.warmup, 0.05

    def factor(step):
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total_steps - warmup))
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return optimizer, optim.lr_scheduler.LambdaLR(optimizer, factor)


def save_checkpoint(path, model, config, state):
    minitorch.save({"model": model.state_dict(), "config": json.dumps(config),
                    "step": state["step"], "history": {"loss": state["losses"],
                                                       "bleu": state["bleus"]}}, path)


def restore_model(out):
    """(model, src_tokenizer, tgt_tokenizer, config) from the files in ``out``."""
    path = os.path.join(out, CHECKPOINT)
    try:
        checkpoint = minitorch.load(path)
        config = json.loads(checkpoint["config"])
        src_tok, tgt_tok = load_tokenizers(out)
        model = build_model(config, src_tok.vocab_size, tgt_tok.vocab_size)
        model.load_state_dict(checkpoint["model"])
    except (KeyError, TypeError, RuntimeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a checkpoint of rnn_translate.py, or does not fit "
                         f"the tokenizers next to it ({error})") from None
    return model, src_tok, tgt_tok, config


# ----------------------------------------------------------------------------- evaluation


def evaluate(model, valid, src_tok, tgt_tok, method, beam_size):
    """(BLEU, hypotheses) of the held-out pairs."""
    hyps = translate(model, [s for s, _ in valid], src_tok, tgt_tok, method=method,
                     batch_size=100, beam_size=beam_size)
    return bleu(hyps, [t for _, t in valid]), hyps


def bleu_by_length(valid, hyps, min_sentences=30):
    """Corpus BLEU of the held-out pairs grouped by source length in words: a list of
    {"words": [shortest, longest], "sentences": n, "bleu": b}. Consecutive lengths join one
    group until it holds ``min_sentences`` (a last smaller group joins the one before): BLEU of
    a handful of sentences says little. sacreBLEU's tokenisation and smoothing (``tokenize=
    "13a", smooth=True``): the shortest targets (two or three words) have few 4-grams, and a
    group's plain BLEU would be 0 as soon as none of them matched."""
    lengths = [len(src.split()) for src, _ in valid]
    groups, current = [], []
    for length in sorted(set(lengths)):
        current += [i for i, n in enumerate(lengths) if n == length]
        if len(current) >= min_sentences:
            groups.append(current)
            current = []
    if current:
        if groups:
            groups[-1] += current
        else:
            groups.append(current)
    return [{"words": [min(lengths[i] for i in group), max(lengths[i] for i in group)],
             "sentences": len(group),
             "bleu": bleu([hyps[i] for i in group], [valid[i][1] for i in group],
                          tokenize="13a", smooth=True)}
            for group in groups]


def heatmap_sentences(config, train_text, valid_text, src_tok):
    """The sentences attention.png draws: ``HEATMAP_SENTENCES`` where the corpus can say them
    (every word seen in training, no unknown character), else held-out sources; and a note
    saying what was replaced."""
    known = {w for s, _ in train_text for w in source_words(s)}
    chosen, replaced = [], []
    for index, sentence in enumerate(HEATMAP_SENTENCES):
        if config["corpus"] == "embedded" and not unknown_words(sentence, known, src_tok):
            chosen.append(sentence)
        else:
            chosen.append(valid_text[index % len(valid_text)][0])
            replaced.append(repr(sentence))
    note = (f"{' and '.join(replaced)}: not a sentence this corpus can express; attention.png "
            f"shows a held-out sentence instead") if replaced else None
    return chosen, note


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt
    except ImportError:
        return None


def plot_attention(model, sentences, src_tok, tgt_tok, path, args):
    """The decoder's attention weights while translating each of ``sentences``, one panel each:
    a row per output token, a column per source token. Returns the translations."""
    plt = _pyplot()
    if plt is None:
        print("note: matplotlib not installed, attention.png skipped")
        return None
    panels = []
    for sentence in sentences:
        src_ids = src_tok.encode(sentence, add_eos=True)
        tokens, weights = decode_with_attention(
            model, minitorch.tensor([src_ids]), method=args.decode, beam_size=args.beam_size,
            max_len=model.max_len, bos_id=BOS_ID, eos_id=EOS_ID, pad_id=PAD_ID)
        out_ids = (tokens[0] + [EOS_ID])[:len(weights[0])]
        panels.append((sentence, src_ids, tokens[0], out_ids, weights[0]))
    widths = [len(panel[1]) for panel in panels]
    fig, axes = plt.subplots(1, len(panels), squeeze=False, gridspec_kw={"width_ratios": widths},
                             figsize=(1.5 + 0.6 * sum(widths),
                                      1.6 + 0.42 * max(len(p[3]) for p in panels)))
    for ax, (sentence, src_ids, tokens, out_ids, weights) in zip(axes[0], panels):
        ax.imshow(weights, cmap="gray", vmin=0, vmax=1, aspect="auto")
        ax.set_xticks(range(len(src_ids)))
        ax.set_xticklabels(_token_labels(src_tok, src_ids), rotation=90, fontsize=8)
        ax.set_yticks(range(len(out_ids)))
        ax.set_yticklabels(_token_labels(tgt_tok, out_ids), fontsize=8)
        ax.set_title(f"{sentence!r}\n→ {tgt_tok.decode(tokens)!r}", fontsize=8)
    fig.suptitle(f"{args.attention} attention a_t,i ({args.decode} decoding)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [tgt_tok.decode(panel[2]) for panel in panels]


def comparison_runs(args):
    """Folders of runs to draw beside this one: --compare's, or the other attention variants'
    default folders when this run uses its default folder."""
    if args.compare is not None:
        return [args.compare]
    if not args.default_folder:
        return []
    others = [default_out(args.corpus, a) for a in ATTENTIONS if a != args.attention]
    return [o for o in others if os.path.isfile(os.path.join(o, LENGTH_TABLE))]


def plot_bleu_by_length(tables, path):
    """One curve per run: BLEU against source length; ``tables`` maps a label to a table."""
    plt = _pyplot()
    if plt is None:
        print("note: matplotlib not installed, bleu_by_length.png skipped")
        return False
    fig, ax = plt.subplots(figsize=(6.5, 4))
    ticks = {}
    for label, table in tables.items():
        middles = [(row["words"][0] + row["words"][1]) / 2 for row in table]
        ax.plot(middles, [row["bleu"] for row in table], marker="o", label=label)
        for middle, row in zip(middles, table):
            low, high = row["words"]
            ticks[middle] = f"{low}" if low == high else f"{low}-{high}"
    ax.set_xticks(list(ticks), list(ticks.values()))
    ax.set_xlabel("source length (words; each point a group of held-out sentences)")
    ax.set_ylabel("held-out BLEU (13a, smoothed)")
    lowest = min((row["bleu"] for table in tables.values() for row in table), default=0.0)
    ax.set_ylim(max(0.0, lowest - 5.0), 100.5)  # the differences, not the empty space below
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def read_length_table(folder):
    try:
        with open(os.path.join(folder, LENGTH_TABLE)) as f:
            saved = json.load(f)
        return f"{saved['attention']} ({saved['cell']}, {saved['decode']})", saved["by_length"]
    except (OSError, KeyError, TypeError, json.JSONDecodeError) as error:
        print(f"note: {folder}/{LENGTH_TABLE} unreadable ({error}), left out of the plot")
        return None


# ----------------------------------------------------------------------------- commands


def run_translate(args):
    model, src_tok, tgt_tok, config = restore_model(args.out)
    sentence = normalize_input(args.translate, config["corpus"])
    output = translate(model, [sentence], src_tok, tgt_tok, method=args.decode,
                       beam_size=args.beam_size)[0]
    print(output)
    return {"translation": output, "input": sentence}


def main(argv=None):
    """Train (or with --translate, translate); returns a dict of results for tests."""
    parser, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    if args.translate is not None:
        return run_translate(args)
    say = (lambda *a: None) if args.quiet else print
    config = {k: getattr(args, k) for k in CONFIG_KEYS}

    minitorch.manual_seed(args.seed)
    started = time.perf_counter()
    train_text, valid_text = load_pairs(config)
    try:
        src_tok, tgt_tok = fresh_tokenizers(config, train_text)
    except ValueError as error:  # too small for the corpus's characters
        parser.error(f"--vocab-size: {error}")
    train_text, train_ids, long_train = fit_pairs(train_text, src_tok, tgt_tok, args.max_len)
    valid_text, _, long_valid = fit_pairs(valid_text, src_tok, tgt_tok, args.max_len)
    if not train_ids:
        parser.error(f"--max-len {args.max_len}: no training pair is that short")
    model = build_model(config, src_tok.vocab_size, tgt_tok.vocab_size)
    batches_per_epoch = count_batches(train_ids, args.batch_size)
    total_steps = args.epochs * batches_per_epoch
    if args.max_steps is not None:
        total_steps = min(total_steps, args.max_steps)
    optimizer, scheduler = build_optimizer(args, model, total_steps)
    make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
    save_tokenizers(args.out, src_tok, tgt_tok)
    if long_train or long_valid:
        say(f"left out for --max-len {args.max_len}: {long_train} training and {long_valid} "
            f"held-out pairs")
    say(f"{args.corpus} corpus: {len(train_ids)} training pairs, {len(valid_text)} held out; "
        f"vocab {src_tok.vocab_size} / {tgt_tok.vocab_size}; {args.cell.upper()} "
        f"encoder-decoder, attention {args.attention}, "
        f"{count_parameters(model) / 1e6:.2f}M parameters; backend {minitorch.backend()}, "
        f"{minitorch.get_num_threads()} threads")

    state = {"step": 0, "losses": [], "bleus": []}
    train_seconds, final_bleu = 0.0, float("nan")
    for epoch in range(args.epochs):
        if state["step"] >= total_steps:
            break
        model.train()
        progress = Progress(batches_per_epoch, f"epoch {epoch + 1}/{args.epochs}",
                            enabled=not args.quiet)
        epoch_started = time.perf_counter()
        for batch in iterate_batches(train_ids, args.batch_size, PAD_ID, BOS_ID, EOS_ID,
                                     seed=args.seed, epoch=epoch):
            if state["step"] >= total_steps:
                break
            # scheduled sampling: the ratio falls linearly from 1 to --teacher-forcing
            model.teacher_forcing_ratio = 1.0 - (1.0 - args.teacher_forcing) * (
                state["step"] / max(1, total_steps - 1))
            loss = train_step(model, batch, optimizer, scheduler, pad_id=PAD_ID,
                              label_smoothing=args.label_smoothing, clip_norm=args.clip)
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss became {loss} at step "
                                         f"{state['step']}: lower --lr")
            state["step"] += 1
            state["losses"].append(loss)
            progress.update(loss, batch.n_tokens, scheduler.get_last_lr()[0])
        progress.close()
        train_seconds += time.perf_counter() - epoch_started
        if valid_text:
            final_bleu, hyps = evaluate(model, valid_text, src_tok, tgt_tok, "greedy", 1)
            state["bleus"].append(final_bleu)
            say(f"epoch {epoch + 1}: step {state['step']}, held-out BLEU {final_bleu:.2f} "
                f"(greedy, {len(valid_text)} sentences), {time.perf_counter() - started:.0f}s "
                f"elapsed ({1000 * train_seconds / max(1, state['step']):.0f} ms per training "
                f"step)")
            for (src, ref), hyp in list(zip(valid_text, hyps))[:3]:
                say(f"  src: {src}\n  ref: {ref}\n  hyp: {hyp}")
        save_checkpoint(os.path.join(args.out, CHECKPOINT), model, config, state)

    result = {"losses": state["losses"], "step": state["step"], "out": args.out,
              "bleu": final_bleu, "train_seconds": train_seconds}
    if valid_text:
        scores = {}
        for method in ("greedy", "beam"):
            scores[method], method_hyps = evaluate(model, valid_text, src_tok, tgt_tok, method,
                                                   args.beam_size)
            if method == args.decode:
                hyps = method_hyps
        table = bleu_by_length(valid_text, hyps)
        with open(os.path.join(args.out, LENGTH_TABLE), "w") as f:
            json.dump({"attention": args.attention, "cell": args.cell, "decode": args.decode,
                       "corpus": args.corpus, "bleu": scores[args.decode], "by_length": table},
                      f, indent=1)
        print(f"Final held-out BLEU: greedy {scores['greedy']:.2f}, beam (size "
              f"{args.beam_size}) {scores['beam']:.2f}; {state['step']} steps, "
              f"{train_seconds:.0f}s of training, {time.perf_counter() - started:.0f}s in all")
        print(f"BLEU by source length ({args.decode}): " + ", ".join(
            f"{r['words'][0]}-{r['words'][1]} words {r['bleu']:.1f} (n={r['sentences']})"
            for r in table))
        result.update(greedy_bleu=scores["greedy"], beam_bleu=scores["beam"], by_length=table)
    if not args.no_plots:
        plot_loss(state["losses"], os.path.join(args.out, "loss.png"))
        if valid_text:
            tables = {f"{args.attention} ({args.cell}, {args.decode}), this run": table}
            for folder in comparison_runs(args):
                read = read_length_table(folder)
                if read is not None:
                    tables[f"{read[0]}: {folder}"] = read[1]
            plot_bleu_by_length(tables, os.path.join(args.out, "bleu_by_length.png"))
        if args.attention == "none":
            say("attention.png skipped: a model without attention has no weights to draw")
        elif valid_text:
            sentences, note = heatmap_sentences(config, train_text, valid_text, src_tok)
            if note:
                say(note)
            outputs = plot_attention(model, sentences, src_tok, tgt_tok,
                                     os.path.join(args.out, "attention.png"), args)
            for sentence, output in zip(sentences, outputs or []):
                say(f"attention.png: {sentence!r} → {output!r}")
    return result


if __name__ == "__main__":
    run_main(main)
