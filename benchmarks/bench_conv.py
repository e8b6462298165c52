"""A small CNN's layers one by one: minitorch vs PyTorch's CPU kernels (and numpy), float32.

The layers of a CIFAR-sized network, batch 32: Conv2d 3→32 on 32×32 and 32→64 on 16×16 (3×3,
padding 1), a 1×1 Conv2d 64→64, MaxPool2d(2), AvgPool2d(2), AdaptiveAvgPool2d(1) and
BatchNorm2d (training mode). Prints, for 1 and 2 threads, each layer's time in milliseconds
without grad (forward) and with grad (forward, then backward of a fixed random gradient into
the input and the parameters), minitorch beside PyTorch, and for the forward beside a numpy
version (conv: im2col as a strided view, copied, then numpy's matmul; pools: a reshape and a
max or mean; batch norm: the formula); then minitorch's time ÷ PyTorch's and ÷ numpy's (> 1:
minitorch is slower).

Both libraries run the same module with the same weights (PyTorch's state_dict loaded into
minitorch's). Times are each library's best call in interleaved rounds
(bench_kernels.best_times): wall time, or with ``--clock cpu`` the process's CPU time
(``time.process_time``), which on a machine other jobs are loading still measures what a
1-thread call costs (time spent descheduled does not count); with more threads it is the sum
over the threads, so only ``--threads 1`` makes sense with it. PyTorch's columns are empty
("-") where ``import torch`` fails. The table also goes to docs/benchmarks.md
(benchmarks/report.py; the CPU-time table in a section of its own) unless --no-report is
given.

Run from the repository root (after ``python setup.py build_ext --inplace``):
    PYTHONPATH=. python benchmarks/bench_conv.py                          # ~3 minutes
    PYTHONPATH=. python benchmarks/bench_conv.py --clock cpu --threads 1  # ~1 minute
    PYTHONPATH=. python benchmarks/bench_conv.py --quick     # 1 round, batch 8: ~1 minute
"""
import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

import bench_kernels as bk
import report
import minitorch
import minitorch.nn as mnn

BATCH = 32


@dataclass
class Case:
    name: str
    make: object        # make(nn) -> the module, for minitorch's nn and torch.nn alike
    shape: tuple        # the input's shape without the batch
    np_fn: object       # np_fn(x, params) -> array: the numpy forward (params: state arrays)


def np_conv2d(x, params, padding):
    """im2col as a strided view of the padded input, copied into a matrix, times the weight
    matrix with numpy's matmul: what a numpy user would write."""
    w, b = params["weight"], params.get("bias")
    o, c, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    n, _, hp, wp = xp.shape
    oh, ow = hp - kh + 1, wp - kw + 1
    sn, sc, sh, sw = xp.strides
    fields = np.lib.stride_tricks.as_strided(xp, (n, oh, ow, c, kh, kw),
                                             (sn, sh, sw, sc, sh, sw))
    col = fields.reshape(n * oh * ow, c * kh * kw)       # the copy im2col makes
    y = col @ w.reshape(o, -1).T
    if b is not None:
        y += b
    return np.ascontiguousarray(y.reshape(n, oh, ow, o).transpose(0, 3, 1, 2))


def np_pool(x, reduce):
    n, c, h, w = x.shape
    return reduce(x.reshape(n, c, h // 2, 2, w // 2, 2), axis=(3, 5))


def np_batch_norm(x, params, eps=1e-5):
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    var = x.var(axis=(0, 2, 3), keepdims=True)
    w = params["weight"].reshape(1, -1, 1, 1)
    b = params["bias"].reshape(1, -1, 1, 1)
    return (x - mean) / np.sqrt(var + eps) * w + b


def cases():
    return [
        Case("Conv2d 3→32 3×3 32×32", lambda nn: nn.Conv2d(3, 32, 3, padding=1), (3, 32, 32),
             lambda x, p: np_conv2d(x, p, 1)),
        Case("Conv2d 32→64 3×3 16×16", lambda nn: nn.Conv2d(32, 64, 3, padding=1),
             (32, 16, 16), lambda x, p: np_conv2d(x, p, 1)),
        Case("Conv2d 64→64 1×1 16×16", lambda nn: nn.Conv2d(64, 64, 1), (64, 16, 16),
             lambda x, p: np_conv2d(x, p, 0)),
        Case("MaxPool2d(2) 32×32×32", lambda nn: nn.MaxPool2d(2), (32, 32, 32),
             lambda x, p: np_pool(x, np.max)),
        Case("AvgPool2d(2) 32×32×32", lambda nn: nn.AvgPool2d(2), (32, 32, 32),
             lambda x, p: np_pool(x, np.mean)),
        Case("AdaptiveAvgPool2d(1) 64×16×16", lambda nn: nn.AdaptiveAvgPool2d(1), (64, 16, 16),
             lambda x, p: x.mean(axis=(2, 3), keepdims=True)),
        Case("BatchNorm2d(32) train 32×32", lambda nn: nn.BatchNorm2d(32), (32, 32, 32),
             np_batch_norm),
    ]


class Layer:
    """One case in one library: the module, its input, a fixed upstream gradient."""

    def __init__(self, lib, nn, case, x, state):
        self.lib, self.module = lib, case.make(nn)
        if state is not None:  # minitorch takes PyTorch's weights
            self.module.load_state_dict(state)
        self.x = lib.from_numpy(x.copy())
        self.x_grad = self.x.detach().requires_grad_(True)
        with lib.no_grad():
            shape = tuple(self.module(self.x).shape)
        rng = np.random.default_rng(1)
        self.grad = lib.from_numpy(rng.standard_normal(shape).astype(np.float32))

    def forward(self):
        def call():
            with self.lib.no_grad():
                return self.module(self.x)
        return call

    def forward_backward(self):
        def call():
            out = self.module(self.x_grad)
            out.backward(self.grad)
            grads = (self.x_grad.grad,) + tuple(p.grad for p in self.module.parameters())
            self.x_grad.grad = None
            for p in self.module.parameters():
                p.grad = None
            return out, grads
        return call


def layers(case, batch, seed=0):
    """({"minitorch", "torch", "numpy"} -> calls' owner, the numpy input and parameters)."""
    x = np.random.default_rng(seed).standard_normal((batch,) + case.shape).astype(np.float32)
    if bk.torch is not None:
        bk.torch.manual_seed(seed)
        torch_layer = Layer(bk.torch, bk.torch.nn, case, x, None)
        state = {k: v.detach().numpy().copy() for k, v in torch_layer.module.state_dict().items()}
    else:
        torch_layer = None
        minitorch.manual_seed(seed)
        state = {k: v.numpy(force=True) for k, v in case.make(mnn).state_dict().items()}
    mt_layer = Layer(minitorch, mnn, case, x, state)
    params = {k: v for k, v in state.items() if v.dtype == np.float32}
    return mt_layer, torch_layer, x, params


COLUMNS = ["threads", "layer", "pass", "minitorch ms", "numpy ms", "torch ms", "mt/torch",
           "mt/np"]
CLOCKS = {"wall": "wall time", "cpu": "the process's CPU time (time.process_time)"}
NOTE = ("{clock} per call (best of interleaved rounds), float32, batch {batch}; fwd: no grad; "
        "fwd+bwd: forward with grad and backward of a random gradient into the input and the "
        "parameters; mt/torch, mt/np = minitorch's time ÷ PyTorch's, numpy's (> 1: minitorch "
        "is slower); numpy: the forward written in numpy (conv: im2col copy + matmul)")


def ms(seconds):
    return None if seconds is None else seconds * 1e3


def best_cpu_time(fn, budget=0.25, min_reps=3, max_reps=200):
    """bench_kernels.best_time with the process's CPU time instead of the wall clock."""
    fn()
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or (spent < budget and reps < max_reps):
        t0 = time.process_time()
        fn()
        dt = time.process_time() - t0
        best, spent, reps = min(best, dt), spent + dt, reps + 1
    return best


def best_cpu_times(fns, budget, rounds):
    """bench_kernels.best_times on CPU time: interleaved rounds, each library in a block."""
    best = [None] * len(fns)
    for _ in range(rounds):
        for i, f in enumerate(fns):
            if f:
                time.sleep(bk.SPIN_SETTLE_SECONDS)
                t = best_cpu_time(f, budget=budget / rounds)
                best[i] = t if best[i] is None else min(best[i], t)
    return best


def bench(case_list, threads_list, rounds, budget, batch, clock="wall"):
    header = (f"{'thr':>3} {'layer':30} {'pass':8} {'minitorch':>10} {'numpy':>9} "
              f"{'torch':>9} {'mt/torch':>8} {'mt/np':>6}")
    print(header)
    print("-" * len(header))
    rows = []
    for threads in threads_list:
        bk.set_threads(threads)
        for case in case_list:
            mt_layer, torch_layer, x, params = layers(case, batch)
            for label, method in (("fwd", "forward"), ("fwd+bwd", "forward_backward")):
                calls = [getattr(mt_layer, method)(),
                         (lambda: case.np_fn(x, params)) if label == "fwd" else None,
                         getattr(torch_layer, method)() if torch_layer else None]
                timer = bk.best_times if clock == "wall" else best_cpu_times
                t_mt, t_np, t_th = (ms(t) for t in timer(calls, budget, rounds))
                row = [str(threads), case.name, label, bk.fmt(t_mt, 10, 2), bk.fmt(t_np, 9, 2),
                       bk.fmt(t_th, 9, 2), bk.fmt(bk.ratio(t_mt, t_th), 8, 2),
                       bk.fmt(bk.ratio(t_mt, t_np), 6, 2)]
                print(f"{threads:3d} {case.name:30} {label:8} " + " ".join(row[3:]), flush=True)
                rows.append(row)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one round and batch 8 instead of three and 32 (~1 minute)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, help="timing rounds per layer (default 3, "
                                                   "--quick 1)")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                        help="wall time (default), or the process's CPU time: robust on a "
                             "loaded machine, for --threads 1 only")
    report.add_no_report_flag(parser)
    args = parser.parse_args(argv)
    if any(t < 1 for t in args.threads):
        parser.error(f"--threads: every count must be >= 1, got {args.threads}")
    if args.clock == "cpu" and args.threads != [1]:
        parser.error("--clock cpu sums the CPU time of every thread: use it with --threads 1")
    if args.rounds is not None and args.rounds < 1:
        parser.error(f"--rounds must be >= 1, got {args.rounds}")
    rounds = args.rounds or (1 if args.quick else 3)
    batch = 8 if args.quick else BATCH
    start = time.perf_counter()
    load = bk.print_header(f"# minitorch CNN layers vs PyTorch and numpy, float32, "
                           f"batch {batch}, {args.clock} time")
    rows = bench(cases(), args.threads, rounds, budget=0.3 * rounds, batch=batch,
                 clock=args.clock)
    if not args.no_report:
        notes = [NOTE.format(batch=batch, clock=CLOCKS[args.clock]),
                 f"{rounds} rounds; load average at the start: "
                 f"{'unknown' if load is None else f'{load:.2f}'}"]
        notes += [] if bk.torch is not None else [f"PyTorch columns empty: {bk.TORCH_ERROR}"]
        section = "bench_conv.py" + ("" if args.clock == "wall" else ": CPU time")
        path = report.write_table(section, COLUMNS, rows, threads=args.threads, notes=notes)
        print(f"table written to {path}")
    print(f"(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
