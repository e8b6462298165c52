"""Where a training step's time goes: the share in the C kernels, numpy, the Python interpreter,
libc and the OS, measured with Linux ``perf`` on bench_transformer.py's model.

A worker process builds the model, takes a few warm-up steps, then ``perf record`` attaches to
it for the timed steps only (no import or warm-up time in the profile). Samples are grouped by
the shared object they fall in:

    C kernels   minitorch's extension (_C.abi3.so) and the OpenMP runtime
    numpy       numpy's compiled modules
    Python      the interpreter, cffi's call layer, the other extension modules
    libc        memcpy, malloc and the maths library
    OS          the kernel: page faults, thread wake-ups, system calls

For each thread count the table gives the share of all samples, and the main thread's own
shares: at 2 threads the OpenMP worker only ever runs kernels, so the main thread's non-kernel
share is the single-threaded part of the step. This checkout's step is profiled eager and
captured (``minitorch.capture``: its kernels replayed without the Python between them).
``--compare CHECKOUT`` profiles another minitorch checkout (its C extension built, its step
eager) in the same run, for a before/after table.

    python benchmarks/profile_step.py [--size small|big] [--steps 20] [--threads 1 2]
        [--compare /tmp/baseline] [--no-report]

Needs ``perf`` (linux-tools) and the permission to attach to a process
(/proc/sys/kernel/perf_event_paranoid <= 1, or root); says so and exits otherwise. The table
also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report or --compare is given.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATEGORIES = ["C kernels", "numpy", "Python", "libc", "OS", "other"]
COLUMNS = ["checkout", "step", "threads", "samples of", "ms/step"] + [f"{c} %" for c in CATEGORIES]


def category(dso):
    """The group a perf ``dso`` name belongs to."""
    name = os.path.basename(dso.strip("[]"))
    if name.startswith(("_C.abi3", "_C.cpython", "libgomp")):
        return "C kernels"
    if name.startswith(("_multiarray", "_umath", "_pocketfft", "lapack_lite", "_generator",
                        "_pcg64", "_common", "_bounded_integers", "_mt19937", "bit_generator",
                        "libopenblas", "libscipy_openblas")):
        return "numpy"
    if name.startswith(("libpython", "python", "_cffi_backend")) or ".cpython-" in name:
        return "Python"
    if name.startswith(("libc.", "libc-", "libm.", "libm-", "ld-linux", "libpthread")):
        return "libc"
    if name.startswith("kernel") or name in ("vdso", "unknown"):
        return "OS"
    return "other"


# A line of ``perf report --sort pid,dso``: percent, thread id:command, shared object (the
# columns two or more spaces apart)
REPORT_LINE = re.compile(r"^\s*([\d.]+)%\s+(\d+):.*?\s{2,}(\S.*?)\s*$")


def shares(report_text, tid=None):
    """{category: percent of samples} from the text of ``perf report --sort pid,dso`` (of one
    thread's samples if ``tid``). (perf report's own --tid leaves such a report whole in perf
    6.1: the main thread's shares came out as every thread's.)"""
    total = dict.fromkeys(CATEGORIES, 0.0)
    for line in report_text.splitlines():
        match = None if line.startswith("#") else REPORT_LINE.match(line)
        if match and (tid is None or int(match.group(2)) == tid):
            total[category(match.group(3))] += float(match.group(1))
    whole = sum(total.values())
    return {name: 100 * part / whole if whole else 0.0 for name, part in total.items()}


def perf_report(perf_data):
    """``perf report``'s samples by thread and shared object, as text."""
    command = ["perf", "report", "-i", perf_data, "--sort", "pid,dso", "--stdio"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout


WORKER = r"""
import json, sys, time
sys.path.insert(0, {bench!r})
import bench_transformer
_, step = bench_transformer.training_step({framework!r}, {size!r}, {threads})
for _ in range(3):  # (a captured step: recorded, checked, then replayed from the fourth call)
    step()
print("ready", flush=True)
sys.stdin.readline()
start = time.perf_counter()
for _ in range({steps}):
    step()
print(json.dumps({{"ms": (time.perf_counter() - start) / {steps} * 1000}}), flush=True)
"""


def profile(checkout, size, threads, steps, framework="minitorch"):
    """(ms per step under perf, shares of all samples, shares of the main thread's samples);
    ``framework``: "minitorch" (eager) or "captured" (bench_transformer's names)."""
    code = WORKER.format(bench=os.path.join(ROOT, "benchmarks"), size=size, threads=threads,
                         steps=steps, framework=framework)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=checkout)
    # cwd: ``python -c`` puts the working directory first on sys.path, before PYTHONPATH (run
    # from this checkout's root, every worker imported this checkout's minitorch)
    worker = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env, cwd=checkout)
    try:
        if worker.stdout.readline().strip() != "ready":
            raise RuntimeError("the worker failed before its timed steps")
        with tempfile.TemporaryDirectory(prefix="minitorch_profile_") as tmp:
            data = os.path.join(tmp, "perf.data")
            recorder = subprocess.Popen(["perf", "record", "-q", "-F", "2000", "-p",
                                         str(worker.pid), "-o", data],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # perf attaches to every thread before the steps start
            worker.stdin.write("go\n")
            worker.stdin.flush()
            ms = float(__import__("json").loads(worker.stdout.readline())["ms"])
            worker.wait()
            _, error = recorder.communicate(timeout=60)
            if recorder.returncode not in (0, None) or not os.path.exists(data):
                raise RuntimeError(f"perf record failed: {error.decode().strip()[-300:]}")
            text = perf_report(data)
            return ms, shares(text), shares(text, tid=worker.pid)
    finally:
        if worker.poll() is None:
            worker.kill()


def _perf_problem():
    """Why perf cannot profile here, or None."""
    if shutil.which("perf") is None:
        return "perf is not installed (apt-get install linux-perf / linux-tools)"
    probe = subprocess.run(["perf", "stat", "-e", "task-clock", "true"], capture_output=True,
                           text=True)
    if probe.returncode != 0:
        return f"perf cannot count here: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "big"], default="small")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--compare", metavar="CHECKOUT",
                        help="another minitorch checkout to profile in the same run")
    report.add_no_report_flag(parser)
    args = parser.parse_args()
    if args.steps < 1 or min(args.threads) < 1:
        parser.error("--steps and --threads must be >= 1")
    if args.compare and not os.path.isdir(os.path.join(args.compare, "minitorch")):
        parser.error(f"--compare {args.compare}: no minitorch package there")
    problem = _perf_problem()
    if problem:
        sys.exit(f"profile_step.py: {problem}")
    checkouts = [("this", ROOT)] + ([(args.compare, args.compare)] if args.compare else [])
    widths = (max(len(name) for name, _ in checkouts) + 2, 9, 7, 11, 8) + (11,) * len(CATEGORIES)
    print(f"training step, size {args.size}, {args.steps} steps under perf record")
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    rows = []
    for threads in args.threads:
        # this checkout's step eager and captured (minitorch.capture); another's eager only
        runs = [(name, path, "eager") for name, path in checkouts] + [("this", ROOT, "captured")]
        for name, path, kind in runs:
            ms, every, main_thread = profile(path, args.size, threads, args.steps,
                                             "captured" if kind == "captured" else "minitorch")
            for label, part in (("all threads", every), ("main thread", main_thread)):
                row = [name, kind, str(threads), label, f"{ms:.1f}"] + \
                      [f"{part[c]:.1f}" for c in CATEGORIES]
                rows.append(row)
                print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
    notes = [f"one training step of bench_transformer.py's {args.size} model; % = share of "
             "perf's samples (2,000 per second per thread) in each group of shared objects; "
             "ms/step is slowed a little by perf itself"]
    print(notes[0])
    if not args.no_report and not args.compare:
        path = report.write_table("profile_step.py", COLUMNS, rows, threads=args.threads,
                                  notes=notes)
        print(f"table written to {path}")


if __name__ == "__main__":
    main()
