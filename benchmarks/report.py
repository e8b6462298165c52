"""Writes a benchmark script's latest table into docs/benchmarks.md.

docs/benchmarks.md holds one section per script (``## bench_transformer.py``), each with that
script's latest run only: a line with the date (UTC), CPU, SIMD level, threads, library versions
and the exact command, then a Markdown table. ``write_table`` replaces the calling script's
section and leaves the others as they are. A script calls, after printing its table::

    report.write_table("bench_x.py", columns, rows, threads=[1, 2], notes=["x/y = ..."])

and gives its parser ``report.add_no_report_flag(parser)`` so that quick runs can skip it.
Imports only the standard library.
"""
import datetime
import importlib.metadata
import os
import pathlib
import platform
import shlex
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_PATH = ROOT / "docs" / "benchmarks.md"
PREAMBLE = ("# Benchmarks\n\n"
            "Written by the scripts in `benchmarks/`: each run replaces its script's section "
            "below; run the command shown in a section to regenerate it.\n")


def add_no_report_flag(parser):
    """Add ``--no-report`` (print only, leave docs/benchmarks.md alone) to an argparse parser."""
    parser.add_argument("--no-report", action="store_true",
                        help="print the table only; do not write it to docs/benchmarks.md")


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, with its family and model numbers where it gives
    them (one name covers several generations: "AMD EPYC" is Zen 4 as family 25, Zen 5 as 26),
    else what platform knows."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block is enough
                key, _, value = line.partition(":")
                fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    name = fields.get("model name") or fields.get("Model") or fields.get("Hardware")
    if not name:
        return platform.processor() or platform.machine() or "unknown CPU"
    if "cpu family" in fields and "model" in fields:
        name += f", family {fields['cpu family']} model {fields['model']}"
    return name


def simd_level():
    """The widest vector extension /proc/cpuinfo lists ("AVX-512", "AVX2", ...), or None."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith(("flags", "Features")) and ":" in line:
                    flags.update(line.split(":", 1)[1].split())
    except OSError:
        return None
    for flag, name in (("avx512f", "AVX-512"), ("avx2", "AVX2"), ("avx", "AVX"),
                       ("sse4_2", "SSE4.2"), ("sve", "SVE"), ("asimd", "NEON")):
        if flag in flags:
            return name
    return None


def command_line(argv=None):
    """The command that ran this script, as typed from the repository root."""
    argv = list(sys.argv if argv is None else argv)
    script = pathlib.Path(argv[0]).resolve()
    try:
        argv[0] = script.relative_to(ROOT).as_posix()
    except ValueError:
        argv[0] = str(script)
    return "python " + " ".join(shlex.quote(arg) for arg in argv)


def _version(package):
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def run_line(threads, command, now=None):
    """The line above a table: when, on what, with how many threads, by which command."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    threads = ", ".join(str(t) for t in threads) if isinstance(threads, (list, tuple)) else threads
    simd = simd_level()
    parts = [now.strftime("%Y-%m-%d %H:%M UTC"),
             cpu_model() + (f" ({simd})" if simd else ""),
             f"threads {threads} of {os.cpu_count()} CPUs",
             f"Python {platform.python_version()}, numpy {_version('numpy')}, "
             f"PyTorch {_version('torch')}",
             f"`{command}`"]
    return " · ".join(parts)


def _cell(value):
    if value is None:
        return ""
    return str(value).strip().replace("|", "\\|").replace("\n", " ")


def markdown_table(columns, rows):
    """columns and rows (sequences of values; None is an empty cell) as a Markdown table."""
    for row in rows:
        if len(row) != len(columns):
            raise ValueError(f"rows: each row needs {len(columns)} cells (columns {columns!r}), "
                             f"got {len(row)}: {row!r}")
    lines = ["| " + " | ".join(_cell(c) for c in columns) + " |",
             "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _split_sections(text):
    """(preamble, {heading line: section text}) of a file of ``## `` sections, in order."""
    preamble, sections, current = [], {}, None
    for line in text.splitlines(keepends=True):
        if line.startswith("## "):
            current = line.rstrip("\n")
            sections[current] = ""
        if current is None:
            preamble.append(line)
        else:
            sections[current] += line
    return "".join(preamble), sections


def write_table(script, columns, rows, *, threads, command=None, notes=(), path=DEFAULT_PATH,
                now=None):
    """Replace ``script``'s section of ``path`` (created if missing) with this run's table.

    ``script`` names the section; a script with several tables gives each its own
    (``"bench_kernels.py: GEMM"``). ``notes`` are short lines printed under the table (what a
    ratio column means, the configuration); ``command`` defaults to this process's command line.
    """
    if not script or "\n" in script:
        raise ValueError(f"script: expected a file name such as 'bench_x.py', got {script!r}")
    path = pathlib.Path(path)
    body = [f"## {script}", "", run_line(threads, command or command_line(), now), "",
            markdown_table(columns, rows)]
    for note in notes:
        body += ["", note]
    section = "\n".join(body)

    preamble, sections = _split_sections(path.read_text() if path.exists() else PREAMBLE)
    sections[f"## {script}"] = section
    parts = [preamble] + list(sections.values())
    text = "\n\n".join(part.strip("\n") for part in parts if part.strip()) + "\n"

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            os.fchmod(f.fileno(), 0o644)  # mkstemp's 0600 would hide the file from others
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path
