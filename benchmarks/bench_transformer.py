"""One training step of the same small seq2seq Transformer in minitorch and in PyTorch.

d_model 128, 4 heads, 2+2 layers, feed-forward 512, dropout 0, batch 32, source and target
length 32, vocabulary 1000, Adam; with 1 and 2 threads. Prints target tokens per second, ms per
step, peak RSS, and the ratio minitorch / PyTorch, all from one run. Each configuration runs in
a fresh subprocess, so peak RSS is that configuration's own. The two frameworks take turns for
--rounds rounds and each keeps its best round: on a shared machine whose speed drifts by tens of
percent from minute to minute, one run of each, one after the other, compares two different
machines. PyTorch's rows are omitted, with a note, where it is not installed.

    python benchmarks/bench_transformer.py [--steps 20] [--warmup 3] [--rounds 3] [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

import report

CONFIG = dict(d_model=128, nhead=4, layers=2, ff=512, batch=32, src_len=32, tgt_len=32, vocab=1000)


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


def worker(framework, threads, steps, warmup):
    cfg = CONFIG
    rng = np.random.default_rng(0)
    src = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["src_len"]))
    tgt = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["tgt_len"] + 1))
    if framework == "torch":
        import torch as lib
        import torch.nn as nn
        import torch.nn.functional as F
        lib.set_num_threads(threads)
    else:
        import minitorch as lib
        import minitorch.nn as nn
        import minitorch.nn.functional as F
        lib.set_num_threads(threads)
    lib.manual_seed(0)
    model = _build(lib, nn, cfg)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-4)
    src_t = lib.tensor(src)
    tgt_in, tgt_out = lib.tensor(tgt[:, :-1]), lib.tensor(tgt[:, 1:])
    mask = nn.Transformer.generate_square_subsequent_mask(cfg["tgt_len"])

    def step():
        logits = model(src_t, tgt_in, mask)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    ms = 1000 * float(np.median(times))
    print(json.dumps({"ms": ms, "tok_s": cfg["batch"] * cfg["tgt_len"] / (ms / 1000),
                      "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "backend": lib.backend() if framework == "minitorch" else "torch"}))


def _run(framework, threads, steps, warmup):
    # The worker imports this checkout's minitorch unless PYTHONPATH already names another.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), root) if p)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=path)
    out = subprocess.run([sys.executable, __file__, "--worker", framework, str(threads),
                          "--steps", str(steps), "--warmup", str(warmup)],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = ["threads", "framework", "ms/step", "tgt tok/s", "peak RSS MB", "speed vs torch"]


def _rows(threads, best):
    """Table rows (strings) for one thread count: minitorch's, then PyTorch's if it ran."""
    mt, th = best["minitorch"], best.get("torch")
    rows = []
    for name, r in (("minitorch", mt), ("torch", th)):
        if r is None:
            continue
        if "error" in r:
            rows.append([str(threads), name, f"error: {r['error']}", "", "", ""])
            continue
        ratio = ""
        if name == "minitorch" and th and "error" not in th:
            ratio = f"{th['ms'] / r['ms']:.2f}x"
        rows.append([str(threads), name, f"{r['ms']:.1f}", f"{r['tok_s']:.0f}",
                     f"{r['rss_mb']:.0f}", ratio])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--worker", nargs=2, metavar=("FRAMEWORK", "THREADS"))
    report.add_no_report_flag(parser)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]), args.steps, args.warmup)
        return
    try:
        import torch  # noqa: F401
        have_torch = True
    except ImportError:
        have_torch = False
    config = ("small seq2seq Transformer, one training step: "
              + ", ".join(f"{k}={v}" for k, v in CONFIG.items()) + ", dropout=0, Adam")
    legend = "speed vs torch = PyTorch ms/step ÷ minitorch ms/step (> 1: minitorch is faster)"
    print(config)
    widths = (7, 10, 9, 10, 12, 15)
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    rows = []
    for threads in (1, 2):
        best = {}
        for _ in range(max(args.rounds, 1)):
            for name in ("minitorch", "torch") if have_torch else ("minitorch",):
                r = _run(name, threads, args.steps, args.warmup)
                if name not in best or "error" in best[name] or r.get("ms", 1e300) < best[name]["ms"]:
                    best[name] = r
        for row in _rows(threads, best):
            print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
            rows.append(row)
    notes = [config, legend]
    if not have_torch:
        notes.append("PyTorch not installed: its rows are omitted (pip install torch==2.13.0)")
    print("\n".join(notes[1:]))
    if any("error" in row[2] for row in rows):
        print("a run failed: docs/benchmarks.md is left as it was")
    elif not args.no_report:
        path = report.write_table("bench_transformer.py", COLUMNS, rows, threads=[1, 2],
                                  notes=notes)
        print(f"table written to {path}")


if __name__ == "__main__":
    main()
