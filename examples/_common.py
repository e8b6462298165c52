"""What the examples share on the command line: checked arguments, run folders, one-line errors.

This file holds :class:`Parser` (argparse that shows each default once in ``--help`` and
reports a bad argument in one line, exit status 2), the argument types :func:`positive_int`,
:func:`non_negative_int`, :func:`positive_float` and :func:`fraction`,
:func:`check_run_folder` and :func:`make_run_folder` (a run never overwrites another run's
files unless told to), :func:`check_resume_flags` (a resumed run keeps its settings) and
:func:`run_main` (a program's expected errors as one line instead of a traceback). The
examples import it by path (``examples/`` is the script's folder).
May import: the standard library.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Appends "(default: X)" to each option's help, except where the default is None: those
    options say in their help what leaving them out means."""

    def _get_help_string(self, action):
        if action.default is None:
            return action.help
        return super()._get_help_string(action)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line (usage is in ``--help``) and whose help
    appends each option's default once."""

    def __init__(self, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(**kwargs)

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _number(text, kind, low, strict, what):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
    if value != value or (value <= low if strict else value < low):  # value != value: NaN
        raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
    return value


def positive_int(text):
    return _number(text, int, 0, True, "an integer >= 1")


def non_negative_int(text):
    return _number(text, int, 0, False, "an integer >= 0")


def positive_float(text):
    value = _number(text, float, 0.0, True, "a number > 0")
    if value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def fraction(text):
    """A probability-like number in [0, 1): dropout, label smoothing."""
    value = _number(text, float, 0.0, False, "a number in [0, 1)")
    if value >= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1), got {text!r}")
    return value


def add_model_arguments(parser, *, d_model, heads, layers, ff, dropout, warmup, lr_factor):
    """The Transformer's size and its learning-rate schedule, with this example's defaults."""
    parser.add_argument("--d-model", type=positive_int, default=d_model, help="model width")
    parser.add_argument("--heads", type=positive_int, default=heads,
                        help="attention heads (must divide --d-model)")
    parser.add_argument("--layers", type=positive_int, default=layers,
                        help="encoder and decoder layers each")
    parser.add_argument("--ff", type=positive_int, default=ff, help="feed-forward width")
    parser.add_argument("--dropout", type=fraction, default=dropout, help="dropout probability")
    parser.add_argument("--warmup", type=positive_int, default=warmup,
                        help="warmup steps of the lr schedule")
    parser.add_argument("--lr-factor", type=positive_float, default=lr_factor,
                        help="scale of the lr schedule")


def add_run_arguments(parser, out_help):
    """The options every training example shares: kernel threads and backend, and its run
    folder (--out, --overwrite, --resume)."""
    parser.add_argument("--threads", type=positive_int, default=1,
                        help="C kernel threads (small matrices: one thread is fastest)")
    parser.add_argument("--backend", choices=("c", "numpy"), default=None,
                        help="kernel backend (default: C when built, else numpy)")
    parser.add_argument("--out", default=None, help=out_help)
    parser.add_argument("--overwrite", action="store_true",
                        help="replace the run already in --out (its files are deleted)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run in --out from its checkpoint")


def check_run_folder(parser, out, run_files, *, overwrite=False, resume=False,
                     checkpoint=None):
    """Check that ``out`` can hold this run (``parser.error`` otherwise); create nothing.

    ``run_files`` are the names this program writes in ``out``. A folder that already holds
    any of them belongs to another run: it is refused unless ``resume`` (continue that run:
    ``checkpoint`` must be there; None for a program that cannot resume) or ``overwrite``
    (see :func:`make_run_folder`).
    """
    if overwrite and resume:
        parser.error("--overwrite and --resume exclude each other: --resume continues the run "
                     f"in {out}, --overwrite replaces it")
    if os.path.exists(out) and not os.path.isdir(out):
        parser.error(f"--out {out} is a file, not a folder")
    for name in run_files:
        if os.path.isdir(os.path.join(out, name)):
            parser.error(f"--out {out}: {name} there is a folder; it must be a file")
    existing = [n for n in run_files if os.path.exists(os.path.join(out, n))]
    if resume:
        if checkpoint is not None and checkpoint not in existing:
            parser.error(f"--resume: no {checkpoint} in {out} to continue from (train first, "
                         f"without --resume)")
    elif existing and not overwrite:
        resume_hint = "--resume to continue it, " if checkpoint else ""
        parser.error(f"--out {out} holds another run ({', '.join(existing)}): pass "
                     f"{resume_hint}--overwrite to replace it, or another --out")
    parent = os.path.abspath(out)
    while not os.path.exists(parent):  # the nearest folder that exists must let us write
        parent = os.path.dirname(parent)
    try:  # a real probe, not os.access: root passes that on read-only mounts and /proc
        os.rmdir(tempfile.mkdtemp(dir=parent, prefix=".write-probe-"))
    except OSError as error:
        parser.error(f"--out {out}: cannot write in {parent} ({error.strerror or error})")


def check_resume_flags(parser, args, config, keys, *, free=()):
    """With --resume, a flag given now (not at its default) that contradicts the saved run's
    ``config`` is a one-line error; the keys in ``free`` (e.g. a step budget) may change."""
    for key in keys:
        value = getattr(args, key, None)
        if key not in free and value != parser.get_default(key) and value != config.get(key):
            flag = "--" + key.replace("_", "-")
            parser.error(f"--resume: the run in {args.out} has {flag} {config.get(key)}, not "
                         f"{value}: leave {flag} out, or start a new run (--overwrite or "
                         f"another --out)")


def make_run_folder(out, run_files, *, overwrite=False):
    """Create ``out`` (checked by :func:`check_run_folder`); with ``overwrite``, delete the
    previous run's ``run_files`` so none of its files is mistaken for this run's."""
    os.makedirs(out, exist_ok=True)
    if overwrite:
        for name in run_files:
            if os.path.exists(os.path.join(out, name)):
                os.remove(os.path.join(out, name))


def run_main(main):
    """Run ``main()`` as a program: expected failures (bad files, a diverging run) become one
    line on stderr and exit status 1, not a traceback."""
    try:
        main()
    except (ValueError, OSError, FloatingPointError) as error:
        prog = os.path.basename(sys.argv[0])
        sys.exit(f"{prog}: error: {error}")
    except KeyboardInterrupt:
        sys.exit(130)

