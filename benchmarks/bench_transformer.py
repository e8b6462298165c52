"""One training step of the same seq2seq Transformer in minitorch and in PyTorch, at two sizes.

small: d_model 128, 4 heads, 2+2 layers, feed-forward 512, batch 32, source and target length 32;
big: d_model 512, 8 heads, 6+6 layers, feed-forward 2048, batch 32, length 64; both vocabulary
1000, dropout 0, Adam, with 1 and 2 threads; minitorch's step eager and, at the small size,
captured (``minitorch.capture``: recorded once, then its kernel calls replayed without the
Python between them). Prints target tokens per second, ms per step, peak memory and the ratio PyTorch ms ÷
minitorch ms, all from one run. Each configuration runs in a
fresh subprocess, so its peak (the worker's own VmHWM) is that configuration's alone. The two
frameworks take turns for --rounds rounds and each keeps its best round: on a shared machine
whose speed drifts by tens of percent from minute to minute, one run of each, one after the
other, compares two different machines. Beside the ratio of the best rounds, the lowest and
highest ratio within one round show how far that drift moves it. PyTorch's rows are omitted,
with a note, where it is not installed.

Most of a step is matrix products, so the script also prints the floor they set: the step's
GEMM FLOPs (counted on minitorch's GEMM calls) over the FMA peak measured in the same run
(benchmarks/fma_peak.c). No framework's step can be shorter, so PyTorch's ms over that floor is
the highest "speed vs torch" any implementation could reach on this machine. Beside it, the step's
GEMMs alone: the products minitorch's step makes, replayed back to back with nothing between
them, by minitorch's kernel and by PyTorch's: what a step would cost if everything but its
GEMMs were free, with the GEMM kernels the machine has. And the same replay on cold operands:
each product's data spread over an arena many times the cache, none of it cached when the
product starts: each GEMM library's speed when its operands come from memory. Before each
2-thread round, the time a cache line takes between the two cores and back
(benchmarks/core_round_trip.c): every hand-off between the threads waits that long, and on a
shared VM it changes with the placement of the two vCPUs, and the 2-thread ratios with it.

    python benchmarks/bench_transformer.py [--size small|big|both] [--steps 20] [--big-steps 4]
        [--warmup 3] [--rounds 3] [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse
import contextlib
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


def _gemm_call(dtype, ta, tb, m, n, k, batch):
    """A recorded call's dict for a batch of contiguous products (the attention kernel's)."""
    return dict(dtype=dtype.name, ta=ta, tb=tb, m=m, n=n, k=k, alpha=1.0, lda=m if ta else k,
                sa=m * k, ldb=k if tb else n, sb=k * n, beta=0.0, ldc=n, sc=m * n, batch=batch)


# The products the fused attention kernels run on each of n·h heads, as (ta, tb, m, n, k) of
# the call's (length, s, d, dv).
_ATTENTION_PRODUCTS = {
    "attention_forward": lambda lq, s, d, dv: [(0, 1, lq, s, d), (0, 0, lq, dv, s)],
    "attention_backward": lambda lq, s, d, dv: [(0, 1, lq, s, dv), (0, 0, lq, d, s),
                                                (1, 0, s, d, lq), (1, 0, s, dv, lq)],
}


def _record_gemm_calls(step):
    """The GEMM calls one minitorch step makes, as dicts of their sizes, layouts and scalars
    (not their data), in order, the fused attention's per-head products among them (as one
    batched call each), a Linear's GEMM with its bias (mt_gemm_bias) and its weight gradient
    with the bias's (mt_linear_param_grads) as their products alone; [] where the C backend
    is not built."""
    try:
        from minitorch.backends import c_backend
    except ImportError:
        return []
    lib, calls = c_backend.lib, []
    dtypes = {"f32": np.dtype(np.float32), "f64": np.dtype(np.float64)}

    def gemm(kernel, dtype):
        def call(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch):
            calls.append(dict(dtype=dtype.name, ta=ta, tb=tb, m=m, n=n, k=k, alpha=alpha, lda=lda,
                              sa=sa, ldb=ldb, sb=sb, beta=beta, ldc=ldc, sc=sc, batch=batch))
            return kernel(ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, batch)
        return call

    def gemm_bias(kernel, dtype):
        def call(ta, tb, m, n, k, a, lda, b, ldb, bias, relu, c, ldc):
            calls.append(dict(_gemm_call(dtype, ta, tb, m, n, k, 1), lda=lda, ldb=ldb, ldc=ldc))
            return kernel(ta, tb, m, n, k, a, lda, b, ldb, bias, relu, c, ldc)
        return call

    def param_grads(kernel, dtype):
        def call(dy, ldy, x, ldx, rows, out, width, dw, ldw, db):
            calls.append(dict(_gemm_call(dtype, 1, 0, out, width, rows, 1), lda=ldy, ldb=ldx,
                              ldc=ldw))
            return kernel(dy, ldy, x, ldx, rows, out, width, dw, ldw, db)
        return call

    def attention(kernel, name, dtype):
        def call(*args):
            n, h, lq, s, d, dv = args[5:11] if name == "attention_forward" else args[8:14]
            calls.extend(_gemm_call(dtype, *shape, n * h)
                         for shape in _ATTENTION_PRODUCTS[name](lq, s, d, dv))
            return kernel(*args)
        return call

    class Noting:
        """c_backend's library, its GEMM and whole-sequence attention calls noted in calls."""
        def __getattr__(self, entry):
            kernel, name, dtype = getattr(lib, entry), entry[3:-4], dtypes.get(entry[-3:])
            if name == "gemm" and dtype is not None:
                return gemm(kernel, dtype)
            if name == "gemm_bias" and dtype is not None:
                return gemm_bias(kernel, dtype)
            if name == "linear_param_grads" and dtype is not None:
                return param_grads(kernel, dtype)
            if name in _ATTENTION_PRODUCTS and dtype is not None:
                return attention(kernel, name, dtype)
            return kernel
    with c_backend.replaced(lib=Noting()):
        step()
    return calls


def _count_gemm_flops(step):
    """The FLOPs of the GEMM calls one minitorch step makes (2·m·n·k per product)."""
    return sum(2.0 * c["m"] * c["n"] * c["k"] * c["batch"] for c in _record_gemm_calls(step))


def _operand_elements(rows, cols, ld, stride, batch):
    """Elements a strided batch of rows x cols matrices (rows ld apart) spans."""
    return (batch - 1) * stride + (rows - 1) * ld + cols


def _operand_sizes(c):
    """(elements of A, of B, of C) for recorded call ``c``: in its own layout, or packed
    batch x rows x cols (PyTorch's replay), whichever is more."""
    batch, m, n, k = c["batch"], c["m"], c["n"], c["k"]
    a_rows, a_cols = (k, m) if c["ta"] else (m, k)
    b_rows, b_cols = (n, k) if c["tb"] else (k, n)
    return (max(_operand_elements(a_rows, a_cols, c["lda"], c["sa"], batch), batch * m * k),
            max(_operand_elements(b_rows, b_cols, c["ldb"], c["sb"], batch), batch * k * n),
            max(_operand_elements(m, n, c["ldc"], c["sc"], batch), batch * m * n))


def _arena_sizes(calls):
    """{dtype name: [A, B, C elements]}: the largest of each operand over ``calls``. Every call
    of a replay takes its operands from the start of these three arenas, so that, as in the
    step, where a product reads what the op before it wrote, they are in cache, not in DRAM."""
    sizes = {}
    for c in calls:
        largest = sizes.setdefault(c["dtype"], [0, 0, 0])
        largest[:] = map(max, largest, _operand_sizes(c))
    return sizes


# Bytes of the arenas a cold replay spreads its operands over: many times the last-level cache
# of the machines this runs on, so that no call finds its operands in it.
COLD_ARENA_BYTES = 256 << 20


def _cold_places(calls):
    """({dtype name: arena elements}, [(A, B, C start) per call]) for a replay on cold operands:
    each call's operands are placed just past the last call's, back at the start of an arena of
    COLD_ARENA_BYTES where they would run past its end, so that what a call reads was last
    touched long before and comes from memory."""
    aligned = [[-(-n // 16) * 16 for n in _operand_sizes(c)] for c in calls]  # 64-byte starts
    sizes = {}
    for c, extents in zip(calls, aligned):
        least = max(COLD_ARENA_BYTES // np.dtype(c["dtype"]).itemsize, sum(extents))
        sizes[c["dtype"]] = max(sizes.get(c["dtype"], 0), least)
    places, cursor = [], dict.fromkeys(sizes, 0)
    for c, extents in zip(calls, aligned):
        at = cursor[c["dtype"]] if cursor[c["dtype"]] + sum(extents) <= sizes[c["dtype"]] else 0
        places.append(tuple(at + sum(extents[:i]) for i in range(3)))
        cursor[c["dtype"]] = at + sum(extents)
    return sizes, places


def _timed_steps(step, steps, in_kernels):
    """ms of each of ``steps`` calls of ``step``, and (``in_kernels``, and the C backend built)
    the ms each spent inside minitorch's C kernels, else None: the step with the Python between
    its kernels taken out, on the same steps. Every call through c_backend's library is timed:
    a few hundred calls a step, about 0.2 µs added to each."""
    walls, kernels, spent = [], [], [0.0]
    library = None
    if in_kernels:
        try:
            from minitorch.backends import c_backend
            library = c_backend.lib
        except ImportError:
            pass

    def timed(kernel):
        def call(*args):
            start = time.perf_counter()
            try:
                return kernel(*args)
            finally:
                spent[0] += time.perf_counter() - start
        return call

    class Timing:
        """c_backend's library, the time in its functions added to spent."""
        def __getattr__(self, entry):
            kernel = getattr(library, entry)
            return timed(kernel) if callable(kernel) else kernel
    with c_backend.replaced(lib=Timing()) if library else contextlib.nullcontext():
        for _ in range(steps):
            spent[0] = 0.0
            start = time.perf_counter()
            step()
            walls.append(1000 * (time.perf_counter() - start))
            kernels.append(1000 * spent[0])
    return walls, kernels if library else None


def _time_best(run, repeats):
    """Best wall time of ``run()`` over ``repeats`` calls, in ms."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def _replay_minitorch(calls, cold=False, repeats=5):
    """ms to run ``calls`` back to back through minitorch's GEMM kernel (the recorded layouts,
    operands in the arenas of _arena_sizes, or where _cold_places puts them if ``cold``): the
    step's products with nothing between them."""
    from minitorch.backends import c_backend
    rng = np.random.default_rng(0)
    if cold:
        sizes, places = _cold_places(calls)
        arenas = {dtype: rng.standard_normal(n).astype(dtype) for dtype, n in sizes.items()}
        bases = {dtype: c_backend._ptr(x) for dtype, x in arenas.items()}
        operands = [[bases[c["dtype"]] + at for at in starts] for c, starts in zip(calls, places)]
    else:
        arenas = {dtype: [rng.standard_normal(n).astype(dtype) for n in sizes]
                  for dtype, sizes in _arena_sizes(calls).items()}
        pointers = {dtype: [c_backend._ptr(x) for x in arrays] for dtype, arrays in arenas.items()}
        operands = [pointers[c["dtype"]] for c in calls]
    prepared = []
    for c, (a, b, out) in zip(calls, operands):
        prepared.append((c_backend._GEMM_KERNELS[np.dtype(c["dtype"])],
                         (c["ta"], c["tb"], c["m"], c["n"], c["k"], c["alpha"], a, c["lda"],
                          c["sa"], b, c["ldb"], c["sb"], c["beta"], out, c["ldc"], c["sc"],
                          c["batch"])))

    def run():
        for kernel, args in prepared:
            kernel(*args)
    return _time_best(run, repeats)


def _replay_torch(calls, threads, cold=False, repeats=5):
    """ms for PyTorch's GEMMs (mm/bmm into preallocated outputs) on the same calls, operands
    in arenas as for minitorch's (``cold`` too); None where PyTorch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    if cold:
        sizes, places = _cold_places(calls)
        whole = {dtype: torch.randn(n, dtype=getattr(torch, dtype), generator=gen)
                 for dtype, n in sizes.items()}
        operands = [[whole[c["dtype"]][at:] for at in starts] for c, starts in zip(calls, places)]
    else:
        arenas = {dtype: [torch.randn(n, dtype=getattr(torch, dtype), generator=gen)
                          for n in sizes] for dtype, sizes in _arena_sizes(calls).items()}
        operands = [arenas[c["dtype"]] for c in calls]

    def matrices(arena, batch, rows, cols, transposed, shared):
        """(batch, rows, cols) from the arena's start; stored transposed if ``transposed``;
        one matrix for the whole batch if ``shared`` (a stride of 0)."""
        stored = (cols, rows) if transposed else (rows, cols)
        x = arena[:(1 if shared else batch) * rows * cols].view(-1, *stored)
        x = x.transpose(1, 2) if transposed else x
        return x.expand(batch, rows, cols) if shared else x
    prepared = []
    for c, (a_arena, b_arena, c_arena) in zip(calls, operands):
        batch, m, n, k = c["batch"], c["m"], c["n"], c["k"]
        prepared.append((matrices(a_arena, batch, m, k, c["ta"], c["sa"] == 0),
                         matrices(b_arena, batch, k, n, c["tb"], c["sb"] == 0),
                         c_arena[:batch * m * n].view(batch, m, n), c["alpha"], c["beta"]))

    def run():
        with torch.no_grad():
            for a, b, out, alpha, beta in prepared:
                if len(a) == 1:
                    out[0].addmm_(a[0], b[0], beta=beta, alpha=alpha)
                else:
                    out.baddbmm_(a, b, beta=beta, alpha=alpha)
    return _time_best(run, repeats)


def training_step(framework, size, threads, device="cpu"):
    """(lib, step): one Adam step of the model on a fixed batch, built in ``framework``
    ("minitorch", "captured": minitorch's step through ``minitorch.capture``, or "torch") with
    ``threads`` threads, on ``device``; ``step()`` returns the loss. ``size`` names a SIZES
    entry or is a dict of them."""
    cfg = SIZES[size] if isinstance(size, str) else size
    rng = np.random.default_rng(0)
    src = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["src_len"]))
    tgt = rng.integers(4, cfg["vocab"], (cfg["batch"], cfg["tgt_len"] + 1))
    if framework == "torch":
        import torch as lib
        import torch.nn as nn
        import torch.nn.functional as F
    else:  # minitorch, eager or captured
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

    def train():
        logits = model(src_t, tgt_in, mask)
        loss = F.cross_entropy(logits.reshape(-1, cfg["vocab"]), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    if framework == "captured":  # recorded on its second call, replayed from its fourth
        train = lib.capture(train)

    def step():
        return train().item()
    return lib, step


def worker(framework, size, threads, steps, warmup):
    lib, step = training_step(framework, size, threads)
    if framework == "captured":  # its first three calls record and check: none of them timed
        warmup = max(warmup, 3)
    for _ in range(warmup):
        step()
    calls = _record_gemm_calls(step) if framework == "minitorch" else []
    times, in_kernels = _timed_steps(step, steps, in_kernels=framework == "minitorch")
    ms = float(np.median(times))
    cfg = SIZES[size]
    result = {"ms": ms, "tok_s": cfg["batch"] * cfg["tgt_len"] / (ms / 1000),
              "rss_mb": _peak_rss_mb(),
              "backend": "torch" if framework == "torch" else lib.backend()}
    if calls:  # after the timed steps, so that PyTorch's import cannot touch them
        result.update(gemm_flops=sum(2.0 * c["m"] * c["n"] * c["k"] * c["batch"] for c in calls),
                      gemm_alone_ms=_replay_minitorch(calls),
                      torch_gemm_alone_ms=_replay_torch(calls, threads),
                      gemm_cold_ms=_replay_minitorch(calls, cold=True),
                      torch_gemm_cold_ms=_replay_torch(calls, threads, cold=True),
                      kernel_ms=float(np.median(in_kernels)) if in_kernels else None)
    print(json.dumps(result))


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
           "per-round range", "in C kernels ms", "without Python", "GEMMs alone ms",
           "GEMMs cold ms", "GEMM floor ms", "highest possible"]


def _rows(size, threads, best, peak_gflops):
    """Table rows (strings) for one size and thread count: minitorch's eager and captured
    steps, then PyTorch's."""
    mt, th = best["minitorch"], best.get("torch")
    torch_ok = th is not None and "error" not in th
    rows = []
    for name, r in (("minitorch", mt), ("captured", best.get("captured")), ("torch", th)):
        if r is None:
            continue
        if "error" in r:
            rows.append([size, str(threads), name, f"error: {r['error']}"] + [""] * 10)
            continue
        ratio = spread = floor = reachable = in_kernels = unhindered = ""
        alone = cold = None
        if name != "torch" and torch_ok:
            ratio = f"{th['ms'] / r['ms']:.2f}x"
            spread = _round_range(r.get("rounds_ms", []), th.get("rounds_ms", []))
        if name != "captured":
            prefix = "" if name == "minitorch" else "torch_"
            alone, cold = mt.get(prefix + "gemm_alone_ms"), mt.get(prefix + "gemm_cold_ms")
        if name == "minitorch":
            if r.get("gemm_flops") and peak_gflops:
                floor_ms = r["gemm_flops"] / (peak_gflops * 1e9) * 1000
                floor = f"{floor_ms:.1f}"
                if torch_ok:
                    reachable = f"{th['ms'] / floor_ms:.2f}x"
            if r.get("kernel_ms"):
                in_kernels = f"{r['kernel_ms']:.1f}"
                if torch_ok:
                    unhindered = f"{th['ms'] / r['kernel_ms']:.2f}x"
        rows.append([size, str(threads), name, f"{r['ms']:.1f}", f"{r['tok_s']:.0f}",
                     f"{r['rss_mb']:.0f}", ratio, spread, in_kernels, unhindered,
                     f"{alone:.1f}" if alone else "",
                     f"{cold:.1f}" if cold else "", floor, reachable])
    return rows


def _round_range(mt_rounds, torch_rounds):
    """The lowest and highest PyTorch ms ÷ minitorch ms over the rounds both ran, as
    "low-highx" (each round runs the frameworks in turn, so a round's ratio compares one
    machine state); "" with fewer than two such rounds."""
    ratios = [t / m for m, t in zip(mt_rounds, torch_rounds) if m and t]
    return f"{min(ratios):.2f}-{max(ratios):.2f}x" if len(ratios) > 1 else ""


def _keep_best(best, name, result):
    """Fold one round's ``result`` into ``best[name]``: the fastest step (with its own time in
    the kernels), and the fastest replay of its GEMMs (each is the best of its own rounds);
    ``rounds_ms`` lists every round's step (None for a failed one), in order."""
    old = best.get(name)
    rounds_ms = (old or {}).get("rounds_ms", []) + [result.get("ms")]
    if old is None or "error" in old or result.get("ms", 1e300) < old["ms"]:
        best[name] = dict(result)
    for key in ("gemm_alone_ms", "torch_gemm_alone_ms", "gemm_cold_ms", "torch_gemm_cold_ms"):
        if old is not None and old.get(key) and result.get(key):
            best[name][key] = min(old[key], result[key])
    best[name]["rounds_ms"] = rounds_ms


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
    legend = ("captured = minitorch's step through minitorch.capture (recorded once, then its "
              "kernel calls replayed without the Python between them; small size only: the "
              "tape keeps a step's intermediates alive, and at the big size, where Python is "
              "a few percent of the step, that triples the peak memory); "
              "speed vs torch = PyTorch ms/step ÷ minitorch ms/step (> 1: minitorch is faster), "
              "each framework's best round; per-round range = the lowest and highest of that "
              "ratio within one round (the frameworks run in turn every round): how far this "
              "machine's drift moves it; in C kernels = the time minitorch's eager step "
              "spends inside its C kernels (every call timed, in the timed steps themselves; "
              "median, best round): the step with the Python between the kernels taken out; "
              "without Python = PyTorch ms/step ÷ that, the most that taking the Python away "
              "(capturing the step, or any leaner path to the kernels) could give with these "
              "kernels; "
              "GEMM floor = the step's GEMM FLOPs ÷ the FMA peak measured in the same run; "
              "highest possible = PyTorch ms/step ÷ that floor, the ratio a step of pure "
              "peak-speed GEMMs would reach; GEMMs alone = the matrix products of minitorch's "
              "step (same shapes, layouts, batch counts) replayed back to back, by that row's "
              "framework, on operands kept in cache (three buffers every call reuses; "
              "PyTorch: mm/bmm into preallocated outputs): the step less everything that is "
              "not a GEMM; GEMMs cold = the same products on operands spread over a "
              f"{COLD_ARENA_BYTES >> 20} MiB arena, none in cache when its product starts: "
              "each library's GEMMs on operands from memory")
    notes = [", ".join(f"{size}: " + " ".join(f"{k}={v}" for k, v in SIZES[size].items())
                       for size in sizes) + "; dropout=0, Adam", legend]
    print(notes[0])
    widths = (5, 7, 10, 9, 10, 8, 15, 15, 15, 14, 15, 14, 14, 17)
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    rows, round_trips = [], []
    for size in sizes:
        steps = args.steps if size == "small" else args.big_steps
        warmup = args.warmup if size == "small" else min(args.warmup, 1)
        for threads in (1, 2):
            best, peaks = {}, []
            for _ in range(args.rounds):
                peak = bench_kernels.fma_peak_gflops(np.float32, threads, 20_000_000)
                if peak is not None:
                    peaks.append(peak)
                trip = bench_kernels.core_round_trip_ns() if threads == 2 else None
                if trip is not None:
                    round_trips.append(trip)
                captured = ("captured",) if size == "small" else ()
                for name in ("minitorch",) + captured + (("torch",) if have_torch else ()):
                    _keep_best(best, name, _run(name, size, threads, steps, warmup))
            for row in _rows(size, threads, best, max(peaks) if peaks else None):
                print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
                rows.append(row)
    if round_trips:
        notes.append(f"core round trip before each 2-thread round: {min(round_trips):.0f}-"
                     f"{max(round_trips):.0f} ns (benchmarks/core_round_trip.c: a cache line "
                     "from one core to the other and back, what every hand-off between the two "
                     "threads waits; the longer it is, the less the second thread gains)")
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
