"""One training step of the same seq2seq Transformer in minitorch and in PyTorch, at two sizes.

small: d_model 128, 4 heads, 2+2 layers, feed-forward 512, batch 32, source and target length 32;
big: d_model 512, 8 heads, 6+6 layers, feed-forward 2048, batch 32, length 64; both vocabulary
1000, dropout 0, Adam, with 1 and 2 threads. Prints target tokens per second, ms per step, peak
memory and the ratio PyTorch ms ÷ minitorch ms, all from one run. Each configuration runs in a
fresh subprocess, so its peak (the worker's own VmHWM) is that configuration's alone. The two
frameworks take turns for --rounds rounds and each keeps its best round: on a shared machine
whose speed drifts by tens of percent from minute to minute, one run of each, one after the
other, compares two different machines. PyTorch's rows are omitted, with a note, where it is
not installed.

Most of a step is matrix products, so the script also prints the floor they set: the step's
GEMM FLOPs (counted on minitorch's GEMM calls) over the FMA peak measured in the same run
(benchmarks/fma_peak.c). No framework's step can be shorter, so PyTorch's ms over that floor is
the highest "speed vs torch" any implementation could reach on this machine.

    python benchmarks/bench_transformer.py [--size small|big|both] [--steps 20] [--big-steps 4]
        [--warmup 3] [--rounds 3] [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

import report

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SIZES = {
    "small": dict(d_model=128, nhead=4, layers=2, ff=512, batch=32, src_len=32, tgt_len=32,
                  vocab=1000),
    "big": dict(d_model=512, nhead=8, layers=6, ff=2048, batch=32, src_len=64, tgt_len=64,
                vocab=1000),
}
CONFIG = SIZES["small"]


def _build(lib, nn, cfg):
    """Embeddings → nn.Transformer(batch_first) → Linear to the vocabulary; same code for both."""
    class Seq2Seq(nn.Module):
        def __init__(self):
            super().__init__()
            self.src_embed = nn.Embedding(cfg["vocab"], cfg["d_model"])
            self.tgt_embed = nn.Embedding(cfg["vocab"], cfg["d_model"])
            self.transformer = nn.Transformer(cfg["d_model"], cfg["nhead"], cfg["layers"],
                                              cfg["layers"], cfg["ff"], dropout=0.0,
                                              batch_first=True)
            self.generator = nn.Linear(cfg["d_model"], cfg["vocab"])

        def forward(self, src, tgt, tgt_mask):
            h = self.transformer(self.src_embed(src), self.tgt_embed(tgt), tgt_mask=tgt_mask)
            return self.generator(h)
    return Seq2Seq()


def _peak_rss_mb():
    """This process's own peak resident memory (VmHWM): ru_maxrss would carry the parent's over
    exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _count_gemm_flops(step):
    """The FLOPs of the GEMM calls one minitorch step makes (2·m·n·k per product)."""
    from minitorch.backends import c_backend
    if not hasattr(c_backend, "_GEMM_KERNELS"):
        return None
    kernels = dict(c_backend._GEMM_KERNELS)
    flops = [0.0]

    def counting(kernel):
        def call(ta, tb, m, n, k, *rest):
            flops[0] += 2.0 * m * n * k * rest[-1]  # the last argument: the batch count
            return kernel(ta, tb, m, n, k, *rest)
        return call
    c_backend._GEMM_KERNELS.update({d: counting(k) for d, k in kernels.items()})
    try:
        step()
    finally:
        c_backend._GEMM_KERNELS.update(kernels)
    return flops[0]


def training_step(framework, size, threads, device="cpu"):
    """(lib, step): one Adam step of the model on a fixed batch, built in ``framework``
    ("minitorch" or "torch") with ``threads`` threads, on ``device``; ``step()`` returns the
    loss. ``size`` names a SIZES entry or is a dict of them."""
    cfg = SIZES[size] if isinstance(size, str) else size
    rng = np.random.default_rng(0)
    src = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["src_len"]))
    tgt = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["tgt_len"] + 1))
    if framework == "torch":
        import torch as lib
        import torch.nn as nn
        import torch.nn.functional as F
    else:
        import minitorch as lib
        import minitorch.nn as nn
        import minitorch.nn.functional as F
    lib.set_num_threads(threads)
    lib.manual_seed(0)
    model = _build(lib, nn, cfg).to(device)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-4)
    src_t = lib.tensor(src, device=device)
    tgt_in, tgt_out = lib.tensor(tgt[:, :-1], device=device), lib.tensor(tgt[:, 1:], device=device)
    mask = nn.Transformer.generate_square_subsequent_mask(cfg["tgt_len"], device=device)

    def step():
        logits = model(src_t, tgt_in, mask)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    return lib, step


def worker(framework, size, threads, steps, warmup):
    lib, step = training_step(framework, size, threads)
    for _ in range(warmup):
        step()
    gemm_flops = _count_gemm_flops(step) if framework == "minitorch" else None
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    ms = 1000 * float(np.median(times))
    cfg = SIZES[size]
    print(json.dumps({"ms": ms, "tok_s": cfg["batch"] * cfg["tgt_len"] / (ms / 1000),
                      "rss_mb": _peak_rss_mb(), "gemm_flops": gemm_flops,
                      "backend": lib.backend() if framework == "minitorch" else "torch"}))


def _run(framework, size, threads, steps, warmup):
    # The worker imports this checkout's minitorch unless PYTHONPATH already names another.
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), ROOT) if p)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=path)
    out = subprocess.run([sys.executable, __file__, "--worker", framework, size, str(threads),
                          "--steps", str(steps), "--warmup", str(warmup)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = ["size", "threads", "framework", "ms/step", "tgt tok/s", "peak MB", "speed vs torch",
           "GEMM floor ms", "highest possible"]


def _rows(size, threads, best, peak_gflops):
    """Table rows (strings) for one size and thread count: minitorch's, then PyTorch's."""
    mt, th = best["minitorch"], best.get("torch")
    torch_ok = th is not None and "error" not in th
    rows = []
    for name, r in (("minitorch", mt), ("torch", th)):
        if r is None:
            continue
        if "error" in r:
            rows.append([size, str(threads), name, f"error: {r['error']}", "", "", "", "", ""])
            continue
        ratio = floor = reachable = ""
        if name == "minitorch":
            if torch_ok:
                ratio = f"{th['ms'] / r['ms']:.2f}x"
            if r.get("gemm_flops") and peak_gflops:
                floor_ms = r["gemm_flops"] / (peak_gflops * 1e9) * 1000
                floor = f"{floor_ms:.1f}"
                if torch_ok:
                    reachable = f"{th['ms'] / floor_ms:.2f}x"
        rows.append([size, str(threads), name, f"{r['ms']:.1f}", f"{r['tok_s']:.0f}",
                     f"{r['rss_mb']:.0f}", ratio, floor, reachable])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=["small", "big", "both"], default="both")
    parser.add_argument("--steps", type=int, default=20, help="timed steps, small size")
    parser.add_argument("--big-steps", type=int, default=4, help="timed steps, big size")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=3, metavar=("FRAMEWORK", "SIZE", "THREADS"),
                        help=argparse.SUPPRESS)
    report.add_no_report_flag(parser)
    args = parser.parse_args()
    if min(args.steps, args.big_steps, args.rounds) < 1 or args.warmup < 0:
        parser.error("--steps, --big-steps and --rounds must be >= 1, --warmup >= 0")
    if args.worker:
        framework, size, threads = args.worker
        worker(framework, size, int(threads), args.steps, args.warmup)
        return
    sys.path.append(ROOT)  # bench_kernels (the FMA peak) imports minitorch
    import bench_kernels
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    sizes = ["small", "big"] if args.size == "both" else [args.size]
    legend = ("speed vs torch = PyTorch ms/step ÷ minitorch ms/step (> 1: minitorch is faster); "
              "GEMM floor = the step's GEMM FLOPs ÷ the FMA peak measured in the same run; "
              "highest possible = PyTorch ms/step ÷ that floor, the ratio a step of pure "
              "peak-speed GEMMs would reach")
    notes = [", ".join(f"{size}: " + " ".join(f"{k}={v}" for k, v in SIZES[size].items())
                       for size in sizes) + "; dropout=0, Adam", legend]
    print(notes[0])
    widths = (5, 7, 10, 9, 10, 8, 15, 14, 17)
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    rows = []
    for size in sizes:
        steps = args.steps if size == "small" else args.big_steps
        warmup = args.warmup if size == "small" else min(args.warmup, 1)
        for threads in (1, 2):
            best, peaks = {}, []
            for _ in range(args.rounds):
                peak = bench_kernels.fma_peak_gflops(np.float32, threads, 20_000_000)
                if peak is not None:
                    peaks.append(peak)
                for name in ("minitorch", "torch") if have_torch else ("minitorch",):
                    r = _run(name, size, threads, steps, warmup)
                    if name not in best or "error" in best[name] or \
                            r.get("ms", 1e300) < best[name]["ms"]:
                        best[name] = r
            for row in _rows(size, threads, best, max(peaks) if peaks else None):
                print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
                rows.append(row)
    if not have_torch:
        notes.append("PyTorch not installed: its rows are omitted (pip install torch==2.13.0)")
    print("\n".join(notes[1:]))
    if any("error" in row[3] for row in rows):
        print("a run failed: docs/benchmarks.md is left as it was")
    elif not args.no_report:
        path = report.write_table("bench_transformer.py", COLUMNS, rows, threads=[1, 2],
                                  notes=notes)
        print(f"table written to {path}")


if __name__ == "__main__":
    main()
