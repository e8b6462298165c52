"""Pre-train a small BERT by masked-token prediction, then fine-tune it to classify sentences.

    python examples/bert_classify.py                      # object number, English (~3 minutes)
    python examples/bert_classify.py --task person --language es

What it does: draws sentences of the generated English→Spanish corpus
(``minitorch.text.corpus.generate_sentences``, which also returns the grammar slots each
sentence was built from) and cuts them into three disjoint parts: ``--n-unlabelled`` sentences
whose text alone pre-trains ``minitorch.models.bert.BERT`` by masked-token prediction (BERT's
15% selection, 80/10/10 [MASK]/random/kept), a SMALL set of ``--n-labelled`` sentences with
their label, and ``--n-held-out`` sentences to measure accuracy on. The label is read from the
generator's slots (``--task``): ``number``, whether the object is singular or plural ("a red
car" / "two red cars"; mass nouns count as singular); ``person``, the subject's person (I, you,
he/she, we, they; in Spanish the pronoun is dropped and only the verb ending tells);
``tense`` (present, progressive, past, future) or ``form`` (statement, negation, question).
Then it fine-tunes twice with the same budget, seed, batches and classifier initialisation: the
pre-trained model, and the same model from scratch, and prints their held-out accuracy side by
side every ``--eval-every`` steps. Tokens are words (``WordVocabulary``): a word the small
labelled set never shows is exactly where what pre-training learnt from the unlabelled text
can help. The run folder (``runs/bert_classify/<task>-<language>``) receives
``pretrained.safetensors`` (the pre-trained weights and vocabulary), ``results.json`` (figures
and curves) and ``curves.png`` (pre-training loss; fine-tuning accuracy with and without
pre-training) when matplotlib is installed; a run never replaces another's files unless
``--overwrite`` is given, and every argument is checked before anything is trained or written.
``main(argv)`` runs it in-process and returns the results (the tests do).
"""
from __future__ import annotations

import json
import math
import os
import sys
import time

import numpy as np

import minitorch
from minitorch import optim
from minitorch.models.bert import (BERT, WordVocabulary, mask_tokens, masked_lm_loss,
                                   pad_batch)
from minitorch.nn import functional as F
from minitorch.nn.utils import clip_grad_norm_
from minitorch.text.corpus import FORMS, TENSES, generate_sentences
from minitorch.text.training import Progress

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # for _common when imported
from _common import (Parser, check_run_folder, fraction, make_run_folder,  # noqa: E402
                     non_negative_int, positive_float, positive_int, run_main)

PRETRAINED, RESULTS, PICTURE = "pretrained.safetensors", "results.json", "curves.png"
RUN_FILES = (PRETRAINED, RESULTS, PICTURE)
MAX_POSITIONS = 16  # the corpus's longest sentence is 13 tokens with [CLS], "¿" and "?"
EVAL_BATCH = 500

# task -> (class names, label of a corpus.Sentence)
TASKS = {
    "number": (("singular", "plural"), lambda s: int(s.slots["plural"])),
    "person": (("I", "you", "he/she", "we", "they"), lambda s: s.person),
    "tense": (TENSES, lambda s: TENSES.index(s.slots["tense"])),
    "form": (FORMS, lambda s: FORMS.index(s.slots["form"])),
}


def parse_args(argv=None):
    """(parser, args), every argument checked; nothing is created or written yet."""
    p = Parser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", choices=sorted(TASKS), default="number",
                   help="what the label says about a sentence (see the module docstring)")
    p.add_argument("--language", choices=("en", "es"), default="en",
                   help="classify the English or the Spanish side of the corpus")
    p.add_argument("--n-unlabelled", type=positive_int, default=20000,
                   help="sentences for masked-token pre-training (text only)")
    p.add_argument("--n-labelled", type=positive_int, default=100,
                   help="labelled sentences to fine-tune on")
    p.add_argument("--n-held-out", type=positive_int, default=1000,
                   help="held-out sentences to measure accuracy on")
    p.add_argument("--pretrain-steps", type=positive_int, default=3000,
                   help="masked-token pre-training steps")
    p.add_argument("--finetune-steps", type=positive_int, default=300,
                   help="fine-tuning steps, with and without pre-training alike")
    p.add_argument("--batch-size", type=positive_int, default=64,
                   help="sentences per pre-training step")
    p.add_argument("--finetune-batch-size", type=positive_int, default=32,
                   help="sentences per fine-tuning step (drawn from the labelled set)")
    p.add_argument("--pretrain-lr", type=positive_float, default=1e-3,
                   help="AdamW peak learning rate of pre-training")
    p.add_argument("--finetune-lr", type=positive_float, default=5e-4,
                   help="AdamW peak learning rate of fine-tuning")
    p.add_argument("--mask-prob", type=fraction, default=0.15,
                   help="share of each sentence's words selected for prediction")
    p.add_argument("--d-model", type=positive_int, default=64, help="model width")
    p.add_argument("--heads", type=positive_int, default=4,
                   help="attention heads (must divide --d-model)")
    p.add_argument("--layers", type=positive_int, default=2, help="encoder layers")
    p.add_argument("--ff", type=positive_int, default=256, help="feed-forward width")
    p.add_argument("--dropout", type=fraction, default=0.1, help="dropout probability")
    p.add_argument("--eval-every", type=positive_int, default=25,
                   help="fine-tuning steps between held-out evaluations")
    p.add_argument("--seed", type=non_negative_int, default=0, help="random seed")
    p.add_argument("--threads", type=positive_int, default=1,
                   help="C kernel threads (small matrices: one thread is fastest)")
    p.add_argument("--backend", choices=("c", "numpy"), default=None,
                   help="kernel backend (default: C when built, else numpy)")
    p.add_argument("--out", default=None,
                   help="run folder (default: runs/bert_classify/<task>-<language>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the run already in --out (its files are deleted)")
    p.add_argument("--quiet", action="store_true", help="no progress bars, only the results")
    p.add_argument("--no-plots", action="store_true", help=f"skip {PICTURE}")
    args = p.parse_args(argv)
    if args.d_model % args.heads:
        p.error(f"--heads must divide --d-model, got --d-model {args.d_model} and "
                f"--heads {args.heads}")
    if args.mask_prob == 0:
        p.error("--mask-prob must be > 0: pre-training needs words to predict")
    if args.out is None:
        args.out = os.path.join("runs", "bert_classify", f"{args.task}-{args.language}")
    check_run_folder(p, args.out, RUN_FILES, overwrite=args.overwrite)
    return p, args


# ----------------------------------------------------------------------------- data


def load_data(args):
    """(vocabulary, unlabelled ids, labelled (ids, labels), held-out (ids, labels), dropped).

    The three parts are disjoint cuts of one ``generate_sentences`` call (distinct English
    sentences). The vocabulary is the words of the unlabelled and labelled text; a held-out
    sentence with another word, or whose text occurs in training (Spanish can render two
    English sentences alike), is left out and counted in ``dropped``.
    """
    sentences = generate_sentences(args.n_unlabelled + args.n_labelled + args.n_held_out,
                                   seed=args.seed)
    text = (lambda s: s.english) if args.language == "en" else (lambda s: s.spanish)
    label = TASKS[args.task][1]
    unlabelled = sentences[:args.n_unlabelled]
    labelled = sentences[args.n_unlabelled:args.n_unlabelled + args.n_labelled]
    held_out = sentences[args.n_unlabelled + args.n_labelled:]
    training_text = [text(s) for s in unlabelled + labelled]
    vocab = WordVocabulary.from_sentences(training_text)
    seen, known = set(training_text), set(vocab.tokens)
    kept = [s for s in held_out if text(s) not in seen
            and all(w in known for w in vocab.tokenize(text(s)))]

    def encode(part):
        return [vocab.encode(text(s)) for s in part], np.array([label(s) for s in part])

    return (vocab, [vocab.encode(t) for t in training_text[:args.n_unlabelled]],
            encode(labelled), encode(kept), len(held_out) - len(kept))


def batches_of(n, batch_size, rng):
    """Index batches over ``n`` items, a fresh shuffle every epoch, forever."""
    while True:
        order = rng.permutation(n)
        for start in range(0, n - batch_size + 1 if n >= batch_size else 1, batch_size):
            yield order[start:start + batch_size]


# ----------------------------------------------------------------------------- training


def build_model(args, vocab):
    return BERT(len(vocab), len(TASKS[args.task][0]), d_model=args.d_model, nhead=args.heads,
                num_layers=args.layers, dim_feedforward=args.ff, dropout=args.dropout,
                max_positions=MAX_POSITIONS, pad_id=vocab.pad_id)


def warmup_then_linear_decay(optimizer, steps):
    """Linear warmup over 10% of ``steps`` (BERT's schedule), then linear decay to zero."""
    warmup = max(1, steps // 10)
    return optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: min((t + 1) / warmup, max(0.0, (steps - t) / max(1, steps - warmup))))


def step_on(model, optimizer, scheduler, loss):
    if not math.isfinite(loss.item()):
        raise FloatingPointError(f"the training loss became {loss.item()}: lower the learning "
                                 f"rate")
    optimizer.zero_grad()
    loss.backward()
    clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    return loss.item()


def pretrain(args, model, vocab, sequences, rng):
    """Masked-token pre-training on ``sequences``; the loss of every step."""
    optimizer = optim.AdamW(model.parameters(), lr=args.pretrain_lr, weight_decay=0.01)
    scheduler = warmup_then_linear_decay(optimizer, args.pretrain_steps)
    progress = Progress(args.pretrain_steps, "pre-training (masked tokens)",
                        enabled=not args.quiet, print_every=500)
    losses = []
    model.train()
    for _, index in zip(range(args.pretrain_steps), batches_of(len(sequences), args.batch_size,
                                                                rng)):
        ids, padding = pad_batch([sequences[i] for i in index], vocab.pad_id)
        inputs, labels = mask_tokens(ids, mask_id=vocab.mask_id, vocab_size=len(vocab),
                                     special_ids=vocab.special_ids, mask_prob=args.mask_prob,
                                     rng=rng)
        loss = masked_lm_loss(model.masked_lm_logits(inputs, padding), labels)
        losses.append(step_on(model, optimizer, scheduler, loss))
        progress.update(losses[-1], int((~padding.numpy()).sum()), scheduler.get_last_lr()[0])
    progress.close()
    return losses


def masked_token_accuracy(model, vocab, sequences, mask_prob, seed):
    """(accuracy, loss) of predicting the selected words of ``sequences`` (masked as in
    pre-training, with ``seed``)."""
    model.eval()
    hits = total = 0
    loss_sum = 0.0
    rng = np.random.default_rng(seed)
    with minitorch.no_grad():
        for start in range(0, len(sequences), EVAL_BATCH):
            ids, padding = pad_batch(sequences[start:start + EVAL_BATCH], vocab.pad_id)
            inputs, labels = mask_tokens(ids, mask_id=vocab.mask_id, vocab_size=len(vocab),
                                         special_ids=vocab.special_ids, mask_prob=mask_prob,
                                         rng=rng)
            logits = model.masked_lm_logits(inputs, padding)
            selected = labels.numpy() != -100
            count = int(selected.sum())
            hits += int((logits.numpy().argmax(-1) == labels.numpy())[selected].sum())
            loss_sum += masked_lm_loss(logits, labels).item() * count
            total += count
    model.train()
    return hits / total, loss_sum / total


def accuracy(model, vocab, data):
    """Share of ``data`` = (ids, labels) whose class the model gets right."""
    sequences, labels = data
    model.eval()
    predictions = []
    with minitorch.no_grad():
        for start in range(0, len(sequences), EVAL_BATCH):
            ids, padding = pad_batch(sequences[start:start + EVAL_BATCH], vocab.pad_id)
            predictions.append(model.classify(ids, padding).numpy().argmax(-1))
    model.train()
    return float(np.mean(np.concatenate(predictions) == labels))


def finetune(args, vocab, labelled, held_out, pretrained_state, name):
    """Fine-tune a fresh model (with ``pretrained_state`` loaded but for the classifier, or
    none): (loss per step, [(step, held-out accuracy)]). Both runs start from the same seed, so
    their classifier heads, batches and dropout masks are the same."""
    minitorch.manual_seed(args.seed + 1)
    model = build_model(args, vocab)
    if pretrained_state is not None:
        state = model.state_dict()
        state.update({k: v for k, v in pretrained_state.items()
                      if not k.startswith("classifier.")})
        model.load_state_dict(state)
    optimizer = optim.AdamW(model.parameters(), lr=args.finetune_lr, weight_decay=0.01)
    scheduler = warmup_then_linear_decay(optimizer, args.finetune_steps)
    rng = np.random.default_rng(args.seed + 2)
    sequences, labels = labelled
    progress = Progress(args.finetune_steps, f"fine-tuning ({name})", enabled=not args.quiet,
                        print_every=100)
    losses, curve = [], [(0, accuracy(model, vocab, held_out))]
    model.train()
    for step, index in zip(range(1, args.finetune_steps + 1),
                           batches_of(len(sequences), args.finetune_batch_size, rng)):
        ids, padding = pad_batch([sequences[i] for i in index], vocab.pad_id)
        loss = F.cross_entropy(model.classify(ids, padding), minitorch.tensor(labels[index]))
        losses.append(step_on(model, optimizer, scheduler, loss))
        progress.update(losses[-1], int((~padding.numpy()).sum()), scheduler.get_last_lr()[0])
        if step % args.eval_every == 0 or step == args.finetune_steps:
            curve.append((step, accuracy(model, vocab, held_out)))
    progress.close()
    return losses, curve


# ----------------------------------------------------------------------------- reporting


def plot_curves(path, pretrain_losses, curves, majority, title):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"note: matplotlib not installed, {PICTURE} skipped")
        return False
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    window = max(1, len(pretrain_losses) // 100)
    smooth = np.convolve(pretrain_losses, np.ones(window) / window, mode="valid")
    left.plot(np.arange(window, len(pretrain_losses) + 1), smooth, lw=1)
    left.set_xlabel("pre-training step")
    left.set_ylabel("masked-token loss")
    left.set_title("pre-training on unlabelled text", fontsize=10)
    left.grid(alpha=0.3)
    for name, curve in curves.items():
        steps, values = zip(*curve)
        right.plot(steps, 100 * np.array(values), marker=".", label=name)
    right.axhline(100 * majority, color="grey", ls="--", lw=1, label="majority class")
    right.set_xlabel("fine-tuning step")
    right.set_ylabel("held-out accuracy (%)")
    right.set_title(title, fontsize=10)
    right.legend()
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def write_json(path, data):
    temporary = path + ".tmp"
    with open(temporary, "w") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, path)


def main(argv=None):
    """Pre-train, fine-tune with and without pre-training; returns a dict of results."""
    _, args = parse_args(argv)
    if args.backend is not None:
        minitorch.backends.use(args.backend)
    minitorch.set_num_threads(args.threads)
    say = (lambda *a: None) if args.quiet else print
    started = time.perf_counter()
    classes = TASKS[args.task][0]

    vocab, unlabelled, labelled, held_out, dropped = load_data(args)
    if len(held_out[0]) == 0:
        raise ValueError(f"no held-out sentence uses only words of the training text: raise "
                         f"--n-unlabelled (now {args.n_unlabelled})")
    make_run_folder(args.out, RUN_FILES, overwrite=args.overwrite)
    counts = np.bincount(labelled[1], minlength=len(classes))
    majority = float(np.mean(held_out[1] == np.argmax(counts)))
    say(f"task {args.task} ({', '.join(classes)}), {args.language} side: {len(unlabelled)} "
        f"unlabelled sentences, {len(labelled[0])} labelled ({', '.join(map(str, counts))}), "
        f"{len(held_out[0])} held out" + (f" ({dropped} left out: unknown words or seen text)"
                                          if dropped else "")
        + f"; vocabulary {len(vocab)} words; backend {minitorch.backend()}, "
        f"{minitorch.get_num_threads()} thread(s)")

    minitorch.manual_seed(args.seed)
    model = build_model(args, vocab)
    pretrain_losses = pretrain(args, model, vocab, unlabelled, np.random.default_rng(args.seed))
    mlm_accuracy, mlm_loss = masked_token_accuracy(model, vocab, held_out[0], args.mask_prob,
                                                   seed=args.seed)
    say(f"pre-trained {args.pretrain_steps} steps: held-out masked-token accuracy "
        f"{100 * mlm_accuracy:.1f}% (loss {mlm_loss:.3f}), "
        f"{time.perf_counter() - started:.0f}s elapsed")
    pretrained_state = model.state_dict()
    minitorch.save({"model": pretrained_state, "vocabulary": json.dumps(vocab.tokens),
                    "config": json.dumps(vars(args))}, os.path.join(args.out, PRETRAINED))

    runs = {"pre-trained": pretrained_state, "from scratch": None}
    losses, curves = {}, {}
    for name, state in runs.items():
        losses[name], curves[name] = finetune(args, vocab, labelled, held_out, state, name)
    final = {name: curve[-1][1] for name, curve in curves.items()}

    print(f"held-out accuracy, {args.task} ({args.language}), {len(held_out[0])} sentences; "
          f"{len(labelled[0])} labelled, same steps and seed (majority class "
          f"{100 * majority:.1f}%):")
    print(f"  {'step':>5}  {'pre-trained':>11}  {'from scratch':>12}")
    for (step, with_pre), (_, without) in zip(curves["pre-trained"], curves["from scratch"]):
        if not args.quiet or step == args.finetune_steps:
            print(f"  {step:>5}  {100 * with_pre:>10.1f}%  {100 * without:>11.1f}%")
    elapsed = time.perf_counter() - started
    print(f"pre-training {'adds' if final['pre-trained'] >= final['from scratch'] else 'costs'} "
          f"{100 * abs(final['pre-trained'] - final['from scratch']):.1f} points: "
          f"{100 * final['pre-trained']:.1f}% vs {100 * final['from scratch']:.1f}% after "
          f"{args.finetune_steps} fine-tuning steps, {elapsed:.0f}s (run folder: {args.out})")

    results = {"config": vars(args), "accuracy": final, "majority": majority,
               "masked_token_accuracy": mlm_accuracy, "masked_token_loss": mlm_loss,
               "curves": curves, "pretrain_losses": pretrain_losses,
               "finetune_losses": losses, "held_out": len(held_out[0]),
               "dropped": dropped, "vocabulary": len(vocab), "seconds": elapsed}
    write_json(os.path.join(args.out, RESULTS), results)
    if not args.no_plots:
        title = (f"{args.task} ({args.language}): {len(labelled[0])} labelled sentences")
        plot_curves(os.path.join(args.out, PICTURE), pretrain_losses, curves, majority, title)
    return dict(results, out=args.out)


if __name__ == "__main__":
    run_main(main)
