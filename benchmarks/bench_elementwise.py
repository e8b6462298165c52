"""The common ops one by one on a (32, 32, 512) float32 tensor: minitorch vs numpy vs PyTorch.

Prints, for 1 and 2 threads, each op's time in microseconds without grad (forward) and with
grad (forward + backward), minitorch beside PyTorch and, for the forward, beside the numpy
composite one would write by hand; then minitorch's time ÷ PyTorch's (> 1: minitorch is
slower) and ÷ numpy's. The ops: arithmetic (tensor and scalar operand), neg, pow with the
common constant exponents, unary math and activations, dropout (p 0.1), clamp, where,
masked_fill, reductions over the last dim and over everything, var, softmax, log_softmax, erf,
maximum, softplus, cumsum, topk, tril, gather, cat, stack, transpose + contiguous, slicing and
integer indexing.

Each op is one function ``fn(lib, F, inputs)`` called with minitorch and with PyTorch
(minitorch copies PyTorch's API, so the same code runs on both): what is timed is the same
program. Times are the best call of each library, measured in interleaved rounds (each library
timed in a block of its own per round, bench_kernels.best_times), so that load from other
processes hits every column alike. Forward + backward: the inputs require grad, one call makes
the output, back-propagates a fixed random gradient and clears the inputs' ``.grad``.
Rows whose minitorch ÷ PyTorch ratio is above 3 are flagged: the issue counts those as
defects. Rows where the two differ by more than 3x either way are measured again later (twice
at most, each library keeping its best time): on a shared machine, another process on one of
the cores stalls every thread team's wake-up for seconds at a time. PyTorch's columns are
empty ("-") where ``import torch`` fails. The table also goes to docs/benchmarks.md
(benchmarks/report.py) unless --no-report is given.

Run from the repository root (after ``python setup.py build_ext --inplace``):
    PYTHONPATH=. python benchmarks/bench_elementwise.py            # 3 rounds: ~5 minutes
    PYTHONPATH=. python benchmarks/bench_elementwise.py --quick    # 1 round: ~2 minutes
    PYTHONPATH=. python benchmarks/bench_elementwise.py --only pow gelu --threads 2 --no-report
"""
import argparse
import sys
import time
from dataclasses import dataclass

import numpy as np

import bench_kernels as bk
import report
import minitorch
import minitorch.nn.functional as mF

SHAPE = (32, 32, 512)
# Above this minitorch ÷ PyTorch time ratio an op is a defect (the bar).
DEFECT_RATIO = 3.0


@dataclass
class Case:
    name: str
    fn: object             # fn(lib, F, t) -> tensor, for minitorch and PyTorch (t: Inputs)
    np_fn: object = None   # np_fn(t) -> array: the numpy composite of the forward (t: arrays)
    positive: bool = False  # t.x is |N(0, 1)| + 0.5, not N(0, 1) (sqrt, log, pow 0.5 ...)
    uses_y: bool = False    # t.y is an input that needs its gradient too
    differentiable: bool = True
    keep_scale: float = 0.0  # dropout: a random draw, each element 0 or x * keep_scale


@dataclass
class Inputs:
    """One library's inputs to a case: x, y (like x), a bool mask, int64 row indices, int64
    indices into the last dim of x's shape (for gather)."""
    x: object
    y: object
    mask: object
    idx: object
    gather_idx: object


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


_DROPOUT_RNG = np.random.default_rng(0)


def _np_dropout(t):
    """Inverted dropout as one writes it in numpy: a uniform draw per element, kept where >= p,
    scaled by 1/(1-p)."""
    keep = _DROPOUT_RNG.random(t.x.shape, dtype=np.float32) >= f32(0.1)
    return t.x * (keep * f32(1 / 0.9))


def _np_erf(x):
    """erf for the numpy column: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), numpy having
    none; vectorized, so the column is what a numpy user would write."""
    t = 1 / (1 + 0.3275911 * np.abs(x))
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                          + t * 1.061405429))))
    return np.sign(x) * (1 - poly * np.exp(-x * x))


def _np_gelu(x):
    return 0.5 * x * (1 + _np_erf(x * np.float32(0.5 ** 0.5)))


def _np_gelu_tanh(x):
    inner = np.float32(np.sqrt(2 / np.pi)) * (x + np.float32(0.044715) * x * x * x)
    return 0.5 * x * (1 + np.tanh(inner))


f32 = np.float32


def cases():
    """Every op of the table, in its order."""
    return [
        Case("add", lambda m, F, t: t.x + t.y, lambda t: t.x + t.y, uses_y=True),
        Case("sub", lambda m, F, t: t.x - t.y, lambda t: t.x - t.y, uses_y=True),
        Case("mul", lambda m, F, t: t.x * t.y, lambda t: t.x * t.y, uses_y=True),
        Case("div", lambda m, F, t: t.x / t.y, lambda t: t.x / t.y, positive=True, uses_y=True),
        Case("add scalar", lambda m, F, t: t.x + 1.5, lambda t: t.x + f32(1.5)),
        Case("sub scalar", lambda m, F, t: t.x - 1.5, lambda t: t.x - f32(1.5)),
        Case("mul scalar", lambda m, F, t: t.x * 1.5, lambda t: t.x * f32(1.5)),
        Case("div scalar", lambda m, F, t: t.x / 1.5, lambda t: t.x / f32(1.5)),
        Case("neg", lambda m, F, t: -t.x, lambda t: -t.x),
        Case("pow 2.0", lambda m, F, t: t.x ** 2.0, lambda t: t.x * t.x),
        Case("pow 3.0", lambda m, F, t: t.x ** 3.0, lambda t: t.x * t.x * t.x),
        Case("pow 0.5", lambda m, F, t: t.x ** 0.5, lambda t: np.sqrt(t.x), positive=True),
        Case("pow -1", lambda m, F, t: t.x ** -1, lambda t: 1 / t.x, positive=True),
        Case("pow 2.5", lambda m, F, t: t.x ** 2.5, lambda t: np.power(t.x, f32(2.5)),
             positive=True),
        Case("sqrt", lambda m, F, t: t.x.sqrt(), lambda t: np.sqrt(t.x), positive=True),
        Case("rsqrt", lambda m, F, t: t.x.rsqrt(), lambda t: 1 / np.sqrt(t.x), positive=True),
        Case("exp", lambda m, F, t: t.x.exp(), lambda t: np.exp(t.x)),
        Case("log", lambda m, F, t: t.x.log(), lambda t: np.log(t.x), positive=True),
        Case("tanh", lambda m, F, t: t.x.tanh(), lambda t: np.tanh(t.x)),
        Case("sigmoid", lambda m, F, t: t.x.sigmoid(), lambda t: _np_sigmoid(t.x)),
        Case("relu", lambda m, F, t: F.relu(t.x), lambda t: np.maximum(t.x, 0)),
        Case("dropout 0.1", lambda m, F, t: F.dropout(t.x, 0.1), _np_dropout,
             keep_scale=1 / 0.9),
        Case("gelu", lambda m, F, t: F.gelu(t.x), lambda t: _np_gelu(t.x)),
        Case("gelu tanh", lambda m, F, t: F.gelu(t.x, approximate="tanh"),
             lambda t: _np_gelu_tanh(t.x)),
        Case("silu", lambda m, F, t: F.silu(t.x), lambda t: t.x * _np_sigmoid(t.x)),
        Case("abs", lambda m, F, t: t.x.abs(), lambda t: np.abs(t.x)),
        Case("clamp", lambda m, F, t: t.x.clamp(-0.5, 0.5),
             lambda t: np.clip(t.x, f32(-0.5), f32(0.5))),
        Case("where", lambda m, F, t: m.where(t.mask, t.x, t.y),
             lambda t: np.where(t.mask, t.x, t.y), uses_y=True),
        Case("masked_fill", lambda m, F, t: t.x.masked_fill(t.mask, 0.0),
             lambda t: np.where(t.mask, f32(0), t.x)),
        Case("sum(-1)", lambda m, F, t: t.x.sum(-1), lambda t: t.x.sum(-1)),
        Case("sum()", lambda m, F, t: t.x.sum(), lambda t: t.x.sum()),
        Case("mean(-1)", lambda m, F, t: t.x.mean(-1), lambda t: t.x.mean(-1)),
        Case("mean()", lambda m, F, t: t.x.mean(), lambda t: t.x.mean()),
        Case("amax(-1)", lambda m, F, t: t.x.amax(-1), lambda t: t.x.max(-1)),
        Case("amax()", lambda m, F, t: t.x.amax(), lambda t: t.x.max()),
        Case("var(-1)", lambda m, F, t: t.x.var(-1), lambda t: t.x.var(-1, ddof=1)),
        Case("softmax(-1)", lambda m, F, t: t.x.softmax(-1), lambda t: bk.np_softmax(t.x)),
        Case("log_softmax(-1)", lambda m, F, t: t.x.log_softmax(-1),
             lambda t: bk.np_log_softmax(t.x)),
        Case("cat(-1)", lambda m, F, t: m.cat([t.x, t.y], -1),
             lambda t: np.concatenate([t.x, t.y], -1), uses_y=True),
        Case("stack", lambda m, F, t: m.stack([t.x, t.y]), lambda t: np.stack([t.x, t.y]),
             uses_y=True),
        Case("transpose+contiguous", lambda m, F, t: t.x.transpose(1, 2).contiguous(),
             lambda t: np.ascontiguousarray(t.x.transpose(0, 2, 1))),
        Case("erf", lambda m, F, t: t.x.erf(), lambda t: _np_erf(t.x)),
        Case("maximum", lambda m, F, t: m.maximum(t.x, t.y), lambda t: np.maximum(t.x, t.y),
             uses_y=True),
        Case("softplus", lambda m, F, t: F.softplus(t.x),
             lambda t: np.logaddexp(f32(0), t.x)),
        Case("cumsum(-1)", lambda m, F, t: t.x.cumsum(-1), lambda t: np.cumsum(t.x, -1)),
        Case("topk(5, -1)", lambda m, F, t: t.x.topk(5, -1)[0],
             lambda t: np.sort(t.x, -1)[..., :-6:-1]),
        Case("tril", lambda m, F, t: t.x.tril(), lambda t: np.tril(t.x)),
        Case("gather(-1)", lambda m, F, t: t.x.gather(-1, t.gather_idx),
             lambda t: np.take_along_axis(t.x, t.gather_idx, -1)),
        Case("slice [:, 1:, ::2]", lambda m, F, t: t.x[:, 1:, ::2], lambda t: t.x[:, 1:, ::2]),
        Case("index [idx]", lambda m, F, t: t.x[t.idx], lambda t: t.x[t.idx]),
    ]


# ---------------------------------------------------------------------------------------------
# The two libraries' inputs and calls
# ---------------------------------------------------------------------------------------------
def arrays(shape=SHAPE, seed=0):
    """numpy inputs: x (normal, and positive), y, a bool mask, shape[0] int64 row indices into
    dim 0 (repeats included, as an embedding lookup has), int64 indices into the last dim."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32)
    return {"x": x, "x_positive": (np.abs(x) + 0.5).astype(np.float32),
            "y": rng.standard_normal(shape, dtype=np.float32),
            "mask": rng.random(shape) < 0.5,
            "idx": rng.integers(0, shape[0], shape[0]).astype(np.int64),
            "gather_idx": rng.integers(0, shape[-1], shape).astype(np.int64)}


class Library:
    """One framework (minitorch or torch) with the case inputs as its tensors."""

    def __init__(self, lib, functional, data):
        self.lib, self.F = lib, functional
        self.tensors = {k: lib.from_numpy(v.copy()) for k, v in data.items()}

    def no_grad(self):
        return self.lib.no_grad()

    def inputs(self, case, requires_grad):
        t = self.tensors
        x = t["x_positive"] if case.positive else t["x"]
        y = t["y"]
        if requires_grad:
            x = x.detach().requires_grad_(True)
            y = y.detach().requires_grad_(case.uses_y)
        return Inputs(x, y, t["mask"], t["idx"], t["gather_idx"])

    def forward(self, case):
        """A call that runs the op without grad."""
        inputs, lib, F = self.inputs(case, False), self.lib, self.F

        def call():
            with self.no_grad():
                return case.fn(lib, F, inputs)
        return call

    def forward_backward(self, case, seed=1):
        """A call that runs the op with grad and back-propagates a fixed random gradient."""
        inputs, lib, F = self.inputs(case, True), self.lib, self.F
        with self.no_grad():
            shape = tuple(case.fn(lib, F, inputs).shape)
        rng = np.random.default_rng(seed)
        grad = self.lib.from_numpy(rng.standard_normal(shape).astype(np.float32))
        leaves = [inputs.x, inputs.y] if case.uses_y else [inputs.x]

        def call():
            out = case.fn(lib, F, inputs)
            out.backward(grad)
            grads = tuple(leaf.grad for leaf in leaves)
            for leaf in leaves:
                leaf.grad = None
            return out, grads
        return call


def numpy_forward(case, data):
    x = data["x_positive"] if case.positive else data["x"]
    inputs = Inputs(x, data["y"], data["mask"], data["idx"], data["gather_idx"])
    return lambda: case.np_fn(inputs)


def libraries(data):
    """{"minitorch": Library, "torch": Library or None}."""
    libs = {"minitorch": Library(minitorch, mF, data), "torch": None}
    if bk.torch is not None:
        libs["torch"] = Library(bk.torch, bk.F, data)
    return libs


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------
COLUMNS = ["threads", "op", "pass", "minitorch µs", "numpy µs", "torch µs", "mt/torch",
           "mt/np", "> 3x torch"]
NOTE = ("time per call (best of interleaved rounds), (32, 32, 512) float32; fwd: no grad; "
        "fwd+bwd: forward with grad, backward of a random gradient; mt/torch, mt/np = "
        "minitorch's time ÷ PyTorch's, numpy's (> 1: minitorch is slower); numpy: the forward "
        "written as a numpy composite (erf, also for gelu: Abramowitz-Stegun 7.1.26)")


def us(seconds):
    return None if seconds is None else seconds * 1e6


def _row(threads, case, label, times):
    """A table row (strings) from the best times (µs) of minitorch, numpy and PyTorch."""
    t_mt, t_np, t_th = times
    over_torch = bk.ratio(t_mt, t_th)
    flag = "yes" if over_torch is not None and over_torch > DEFECT_RATIO else ""
    return [str(threads), case.name, label, bk.fmt(t_mt, 10), bk.fmt(t_np, 9), bk.fmt(t_th, 9),
            bk.fmt(over_torch, 8, 2), bk.fmt(bk.ratio(t_mt, t_np), 6, 2), flag]


def _suspect(times):
    """Whether a measurement may be a busy moment's: minitorch and PyTorch more than
    DEFECT_RATIO apart either way. On a shared machine another process taking a core stalls
    each wake-up of a thread team by a scheduler tick (~4 ms) for seconds at a time, every
    round of one row included."""
    over_torch = bk.ratio(times[0], times[2])
    return over_torch is not None and not 1 / DEFECT_RATIO <= over_torch <= DEFECT_RATIO


def bench(case_list, threads_list, rounds, budget, data, retries=2):
    """The table's rows. Each thread count's suspect rows (_suspect) are measured again, up to
    `retries` times, a while later: each library keeps its best time of all measurements."""
    libs = libraries(data)
    header = (f"{'thr':>3} {'op':22} {'pass':8} {'minitorch':>10} {'numpy':>9} {'torch':>9} "
              f"{'mt/torch':>8} {'mt/np':>6}")
    print(header)
    print("-" * len(header))
    rows = []
    for threads in threads_list:
        bk.set_threads(threads)
        measured = {}  # (case index, label) -> (calls, best times)
        for i, case in enumerate(case_list):
            passes = [("fwd", "forward")] + ([("fwd+bwd", "forward_backward")]
                                             if case.differentiable else [])
            for label, method in passes:
                calls = [getattr(libs["minitorch"], method)(case),
                         numpy_forward(case, data) if label == "fwd" and case.np_fn else None,
                         getattr(libs["torch"], method)(case) if libs["torch"] else None]
                times = [us(t) for t in bk.best_times(calls, budget, rounds)]
                measured[i, label] = calls, times
                print(f"{threads:3d} {case.name:22} {label:8} "
                      + " ".join(_row(threads, case, label, times)[3:]), flush=True)
        for attempt in range(retries):
            suspects = [key for key, (_, times) in measured.items() if _suspect(times)]
            for i, label in suspects:
                calls, times = measured[i, label]
                again = [us(t) for t in bk.best_times(calls, budget, rounds)]
                times = [None if t is None else min(t, u) for t, u in zip(times, again)]
                measured[i, label] = calls, times
                print(f"{threads:3d} {case_list[i].name:22} {label:8} "
                      + " ".join(_row(threads, case_list[i], label, times)[3:])
                      + f"  (measured again, {attempt + 1})", flush=True)
        rows += [_row(threads, case_list[i], label, times)
                 for (i, label), (_, times) in measured.items()]
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one round instead of three (~2 minutes)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int,
                        help="timing rounds per op (default 3, --quick 1): on a shared machine, "
                             "more rounds give each column more chances of a quiet moment")
    parser.add_argument("--only", nargs="+", metavar="OP",
                        help="the ops whose name starts with one of these (e.g. pow gelu sum)")
    report.add_no_report_flag(parser)
    args = parser.parse_args(argv)
    case_list = [c for c in cases() if not args.only or c.name.startswith(tuple(args.only))]
    if not case_list:
        parser.error(f"--only {' '.join(args.only)}: no such op; the ops are "
                     f"{', '.join(c.name for c in cases())}")
    start = time.perf_counter()
    load = bk.print_header("# minitorch elementwise, reduction and shape ops vs numpy and "
                           f"PyTorch, {SHAPE} float32")
    rounds = args.rounds or (1 if args.quick else 3)
    with np.errstate(all="ignore"):  # the numpy composites of gelu/sigmoid may overflow exp
        rows = bench(case_list, args.threads, rounds=rounds, budget=0.1 * rounds, data=arrays())
    flagged = sorted({f"{r[1]} ({r[2]}, {r[0]} thr)" for r in rows if r[-1]})
    print(f"\nover {DEFECT_RATIO:g}x PyTorch's time: " + (", ".join(flagged) or "none"))
    if not args.no_report:
        notes = [NOTE, f"{rounds} rounds; load average at the start: "
                       f"{'unknown' if load is None else f'{load:.2f}'}"]
        notes += [] if bk.torch is not None else [f"PyTorch columns empty: {bk.TORCH_ERROR}"]
        path = report.write_table("bench_elementwise.py", COLUMNS, rows, threads=args.threads,
                                  notes=notes)
        print(f"table written to {path}")
    print(f"(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
