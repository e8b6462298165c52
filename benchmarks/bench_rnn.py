"""nn.LSTM and nn.GRU in minitorch and in PyTorch (CPU), forward and forward+backward, same run.

Two sizes: a sequence (seq 32, batch 32, input 128, hidden 256) and a decoder-like single step
(seq 1, batch 32, input 256, hidden 256, the hidden state given), float32, with 1 and 2
threads. Both frameworks run in this process and take turns, case by case, for --rounds rounds;
each keeps its best time (a shared machine drifts by tens of percent from minute to minute, so
one run after the other compares two different machines). The two layers hold the same
weights (PyTorch's state_dict loaded into minitorch's) and read the same input.
``--unfused`` adds minitorch's composite path (``ops.recurrent.unfused``: one graph node per op
and step) as a column, to show what the fused Functions gain. numpy has no recurrent layer, so
there is no numpy column. PyTorch's columns are left empty, with a note, where it is not
installed.

    python benchmarks/bench_rnn.py [--rounds 5] [--quick] [--unfused] [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse
import os
import time

import numpy as np

import report

SIZES = {"seq 32": dict(steps=32, batch=32, input=128, hidden=256),
         "1 step": dict(steps=1, batch=32, input=256, hidden=256)}
KINDS = ("LSTM", "GRU")
PASSES = ("forward", "forward+backward")


def build(lib, kind, size, seed=0):
    """(layer, input, initial state) in library ``lib`` (minitorch or torch), float32."""
    cfg = SIZES[size]
    rng = np.random.default_rng(seed)
    layer = getattr(lib.nn, kind)(cfg["input"], cfg["hidden"])
    x = lib.tensor(rng.standard_normal((cfg["steps"], cfg["batch"], cfg["input"]))
                   .astype(np.float32), requires_grad=True)
    h0 = lib.tensor(rng.standard_normal((1, cfg["batch"], cfg["hidden"])).astype(np.float32))
    state = (h0, h0 * 0.5) if kind == "LSTM" else h0
    return layer, x, state


def same_weights(torch_layer, mt_layer):
    """Load the PyTorch layer's weights into the minitorch layer."""
    import minitorch
    mt_layer.load_state_dict({k: minitorch.tensor(v.detach().numpy().copy())
                              for k, v in torch_layer.state_dict().items()})


def step_function(lib, layer, x, state, which):
    """A callable running one pass: ``forward`` without grad, or forward and backward."""
    def forward():
        with lib.no_grad():
            return layer(x, state)

    def forward_backward():
        out, _ = layer(x, state)
        out.sum().backward()
        return out
    return forward if which == "forward" else forward_backward


def _best_ms(fn, reps):
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def measure(torch, threads, rounds, reps, unfused):
    """{(kind, size, pass): {"minitorch": ms, "torch": ms, "unfused": ms}} at ``threads``."""
    import minitorch
    from minitorch.ops import recurrent
    minitorch.set_num_threads(threads)
    if torch is not None:
        torch.set_num_threads(threads)
    results = {}
    for kind in KINDS:
        for size in SIZES:
            ours, x, state = build(minitorch, kind, size)
            runs = {}
            if torch is not None:
                theirs, tx, tstate = build(torch, kind, size)
                same_weights(theirs, ours)
            for which in PASSES:
                runs["minitorch"] = step_function(minitorch, ours, x, state, which)
                if torch is not None:
                    runs["torch"] = step_function(torch, theirs, tx, tstate, which)
                if unfused:
                    fused_run = runs["minitorch"]

                    def unfused_run(run=fused_run):
                        with recurrent.unfused():
                            return run()
                    runs["unfused"] = unfused_run
                best = {}
                for run in runs.values():  # warm-up
                    run()
                for _ in range(rounds):
                    for name, run in runs.items():
                        best[name] = min(best.get(name, float("inf")), _best_ms(run, reps))
                results[(kind, size, which)] = best
    return results


def columns(unfused):
    cols = ["threads", "layer", "size", "pass", "minitorch ms", "torch ms", "speed vs torch"]
    return cols + (["unfused ms", "fused gain"] if unfused else [])


def rows(threads, results, unfused):
    table = []
    for (kind, size, which), best in results.items():
        ours, theirs = best["minitorch"], best.get("torch")
        row = [str(threads), kind, size, which, f"{ours:.2f}",
               "" if theirs is None else f"{theirs:.2f}",
               "" if theirs is None else f"{theirs / ours:.2f}x"]
        if unfused:
            row += [f"{best['unfused']:.2f}", f"{best['unfused'] / ours:.1f}x"]
        table.append(row)
    return table


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true",
                        help="2 rounds of 2 repetitions (a smoke run; noisier figures)")
    parser.add_argument("--unfused", action="store_true",
                        help="also time minitorch's composite (unfused) path")
    report.add_no_report_flag(parser)
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    rounds, reps = (2, 2) if args.quick else (args.rounds, 5)
    try:
        import torch
    except ImportError:
        torch = None
    config = ("float32; " + "; ".join(f"{name}: " + ", ".join(f"{k} {v}" for k, v in cfg.items())
                                      for name, cfg in SIZES.items())
              + f"; best of {rounds} rounds x {reps} runs, frameworks alternating")
    legend = ("speed vs torch = PyTorch ms ÷ minitorch ms (> 1: minitorch is faster)"
              + ("; fused gain = unfused ms ÷ minitorch ms" if args.unfused else ""))
    cols = columns(args.unfused)
    load = os.getloadavg()[0]
    widths = [7, 5, 6, 16, 12, 9, 14] + ([10, 10] if args.unfused else [])
    print(config)
    print(" ".join(f"{c:>{w}}" for c, w in zip(cols, widths)))
    table = []
    for threads in (1, 2):
        for row in rows(threads, measure(torch, threads, rounds, reps, args.unfused),
                        args.unfused):
            print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
            table.append(row)
    notes = [config, legend, f"load average at the start: {load:.2f} (other processes on "
             f"these {os.cpu_count()} CPUs inflate every column, the 2-thread rows most)"]
    if torch is None:
        notes.append("PyTorch not installed: its columns are empty (pip install torch==2.13.0)")
    print("\n".join(notes[1:]))
    if not args.no_report:
        path = report.write_table("bench_rnn.py", cols, table, threads=[1, 2], notes=notes)
        print(f"table written to {path}")


if __name__ == "__main__":
    main()
