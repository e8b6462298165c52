"""Benchmark of minitorch's C kernels against numpy (OpenBLAS) and PyTorch, in one run.

Prints, for 1 and 2 threads:
  - the machine's measured FMA peak (f32/f64) and copy bandwidth (see copy_through_cache),
  - GEMM GFLOP/s: minitorch vs numpy vs PyTorch (square, transformer shapes, batched heads),
    with ratio columns and % of the FMA peak measured in the same rounds,
  - row kernels (softmax, masked/causal softmax, log-softmax, cross-entropy, layer norm; forward
    and backward) in GB/s: minitorch vs a numpy composite vs PyTorch, ratios (PyTorch's also
    as a paired median, see paired_ratio), and % of the copy bandwidth timed in the same rounds;
    for the exp-bound ones (EXP_BOUND) also their floor, the vector exp alone over as many
    elements (exp_floor.c), and % of the lower of the two; softmax and log-softmax also on rows
    that stay in L2 (see IN_L2_BYTES),
  - attention forward + backward over whole sequences in GFLOP/s: the fused C kernels vs the C
    chain they replace vs the numpy backend vs PyTorch's scaled_dot_product_attention.
PyTorch's columns are empty ("-") where ``import torch`` fails. The tables also go to
docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.

Run from the repository root (after ``python setup.py build_ext --inplace``):
    unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE   # if set: they mis-tune OpenBLAS on this machine
    PYTHONPATH=. python benchmarks/bench_kernels.py            # ~8 minutes
    PYTHONPATH=. python benchmarks/bench_kernels.py --quick    # smaller, shorter: ~4 minutes
Bytes for GB/s count what each kernel must move at least once (e.g. softmax forward: read x,
write y). Timings are the best of several calls per library, measured in rounds (each library,
and the yardstick of the row, timed in a block of its own per round: see best_times) so that
load from other processes affects all columns alike.
Outputs are reused memory on both sides, as in a training loop: minitorch's large ones are
large_buffers blocks, and PyTorch's come from glibc's heap, which minitorch's import keeps
(large_buffers.keep_freed_heap) and the earlier cases have grown. Timed alone in a fresh
process, PyTorch instead maps (and faults in) a new 32 MiB output per call, 6x slower on
float64 layer_norm 8192x512: that is why such figures differ from this table's.
"""
import argparse
from concurrent.futures import ThreadPoolExecutor
import functools
import importlib.util
import itertools
import math
import ctypes
import os
import platform
import sys
import tempfile
import time

import numpy as np

import minitorch
import report
from minitorch.backends import c_backend as mt

try:
    import torch
    import torch.nn.functional as F
except Exception as exc:  # noqa: BLE001 - any import problem means "no torch column"
    torch = None
    TORCH_ERROR = f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# Thread control for all three libraries
# ---------------------------------------------------------------------------------------------
def _openblas_setter():
    """numpy's OpenBLAS set_num_threads, found among the loaded libraries (None if absent)."""
    np.ones((64, 64)) @ np.ones((64, 64))
    try:
        paths = {line.split()[-1] for line in open("/proc/self/maps") if "openblas" in line.lower()}
    except OSError:
        return None
    for path in paths:
        lib = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                     "openblas_set_num_threads64_", "openblas_set_num_threads"):
            if hasattr(lib, name):
                return getattr(lib, name)
    return None


OPENBLAS_SET_THREADS = _openblas_setter()


def set_threads(n):
    mt.set_num_threads(n)
    if OPENBLAS_SET_THREADS is not None:
        OPENBLAS_SET_THREADS(ctypes.c_int(n))
    if torch is not None:
        torch.set_num_threads(n)


# ---------------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------------
# How long other libraries' idle worker threads may keep spinning after their last call.
SPIN_SETTLE_SECONDS = 0.15


def best_time(fn, budget=0.25, min_reps=3, max_reps=200):
    """Best wall time of one call of fn, over repeated calls within ~budget seconds."""
    fn()  # warm-up: page faults, lazy init, thread start
    best, spent, reps = float("inf"), 0.0, 0
    while reps < min_reps or (spent < budget and reps < max_reps):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent, reps = min(best, dt), spent + dt, reps + 1
    return best


def best_times(fns, budget=0.3, rounds=3):
    """Best wall time of each fn (None entries stay None), measured in `rounds` rounds; each
    round times every fn in a block of its own, so slow drifts of the machine's speed hit all
    of them alike. Blocks, not call-by-call alternation: after a call, OpenBLAS's and OpenMP's
    worker threads spin for a while (up to ~0.1 s) waiting for more work, and on a 2-core
    machine a spinning thread of one library takes a core from the next library's call. A
    short sleep between blocks lets the spinners go to sleep."""
    best = [None] * len(fns)
    for _ in range(rounds):
        for i, f in enumerate(fns):
            if f:
                time.sleep(SPIN_SETTLE_SECONDS)
                t = best_time(f, budget=budget / rounds)
                best[i] = t if best[i] is None else min(best[i], t)
    return best


def paired_ratio(first, second, budget):
    """Median of first's time ÷ second's over pairs of calls run back to back, for ``budget``
    seconds (at least 11 pairs): both timed at the same moment, so that the machine's drift,
    which best_times' separate blocks can catch on one side only, hits each pair alike."""
    first(), second()
    ratios, end = [], time.perf_counter() + budget
    while len(ratios) < 11 or time.perf_counter() < end:
        t0 = time.perf_counter()
        first()
        t1 = time.perf_counter()
        second()
        ratios.append((t1 - t0) / (time.perf_counter() - t1))
    return float(np.median(ratios))


# Bytes per array of the copies below: twice the development machine's L3, so they reach DRAM.
COPY_BYTES = 64 * 2**20


def memcpy_bandwidth(nbytes=512 * 2**20):
    """GB/s (read + write counted) of np.copyto on 512 MiB float32 arrays: glibc's memcpy, which
    at this size writes around the cache (non-temporal stores), so 2 bytes cross the memory bus
    per 2 counted. Printed for reference: no kernel whose output is read next can do this."""
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    t = best_time(lambda: np.copyto(dst, src), budget=0.5)
    return 2 * nbytes / t / 1e9


def copy_through_cache(src, dst, threads):
    """A function copying src into dst with ordinary stores on `threads` threads (np.multiply(src,
    1, out=dst) on equal slices; numpy releases the GIL in the loop), as STREAM's loops do and
    as every row kernel must: its output is read next, so it goes through the cache, and each
    store first fetches its line (3 bytes cross the bus per 2 counted). On COPY_BYTES arrays
    this is the roofline the row kernels' "% of copy" is measured against, timed in the same
    rounds as each row."""
    if threads == 1:
        return lambda: np.multiply(src, 1, out=dst)
    pool = ThreadPoolExecutor(threads)
    slices = list(zip(np.array_split(src, threads), np.array_split(dst, threads)))
    return lambda: list(pool.map(lambda pair: np.multiply(pair[0], 1, out=pair[1]), slices))


def copy_arrays():
    """(src, dst): two float32 arrays of COPY_BYTES for copy_through_cache."""
    src = np.ones(COPY_BYTES // 4, np.float32)
    return src, np.empty_like(src)


def fmt(x, width=8, digits=1):
    return f"{x:{width}.{digits}f}" if x is not None else " " * (width - 1) + "-"


def ratio(a, b):
    return None if (a is None or b is None or b == 0) else a / b


# ---------------------------------------------------------------------------------------------
# GEMM
# ---------------------------------------------------------------------------------------------
def gemm_cases(quick):
    squares = [64, 128, 256, 512, 1024] + ([] if quick else [2048])
    cases = [(f"square n={n}", (n, n), (n, n)) for n in squares]
    cases += [("4096x128 . 128x512", (4096, 128), (128, 512)),
              ("4096x512 . 512x128", (4096, 512), (512, 128)),
              ("batched 32*4 heads 32x32.32x32", (32, 4, 32, 32), (32, 4, 32, 32))]
    return cases


def _compile_yardstick(name, prototypes, compile_args, include_dirs=()):
    """benchmarks/<name>.c compiled with cffi (``prototypes`` its C declarations) into a
    temporary directory and loaded as a module; None, with a note, if that fails (no compiler,
    no OpenMP, ...): the tables then go without that column."""
    try:
        from cffi import FFI
        ffi = FFI()
        ffi.cdef(prototypes)
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.c")
        ffi.set_source(f"_minitorch_{name}", "#include <stdint.h>\n" + prototypes,
                       sources=[source], include_dirs=list(include_dirs),
                       extra_compile_args=compile_args, extra_link_args=["-fopenmp"])
        path = ffi.compile(tmpdir=tempfile.mkdtemp(prefix=f"minitorch_{name}_"), verbose=False)
        spec = importlib.util.spec_from_file_location(f"_minitorch_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception as exc:  # noqa: BLE001 - whatever stops the build: no column
        print(f"NOTE: benchmarks/{name}.c did not build ({exc}): its column is left out")
        return None


@functools.lru_cache(maxsize=None)
def _fma_peak_lib():
    """fma_peak.c's functions, or None where it does not build: the tables then print no peak."""
    module = _compile_yardstick(
        "fma_peak", "double fma_peak_gflops_f32(int num_threads, int64_t iterations);\n"
                    "double fma_peak_gflops_f64(int num_threads, int64_t iterations);\n",
        ["-O2", "-fopenmp"])
    return None if module is None else module.lib


def fma_peak_gflops(dtype=np.float32, num_threads=1, iterations=50_000_000):
    """Measured FMA throughput of this machine (GFLOP/s) with the widest supported vectors;
    None if fma_peak.c could not be built."""
    lib = _fma_peak_lib()
    if lib is None:
        return None
    fn = lib.fma_peak_gflops_f32 if np.dtype(dtype) == np.float32 else lib.fma_peak_gflops_f64
    return float(fn(int(num_threads), int(iterations)))


@functools.lru_cache(maxsize=None)
def _core_round_trip_lib():
    """core_round_trip.c's function, or None where it does not build."""
    module = _compile_yardstick("core_round_trip", "double core_round_trip_ns(int64_t trips);\n",
                                ["-O2", "-fopenmp"])
    return None if module is None else module.lib


def core_round_trip_ns(trips=20_000, samples=5):
    """The median over ``samples`` runs of the time (ns) a cache line takes from one core to
    the other and back (benchmarks/core_round_trip.c); None where it cannot be measured (no
    build, or fewer than 2 threads)."""
    lib = _core_round_trip_lib()
    if lib is None:
        return None
    runs = sorted(lib.core_round_trip_ns(trips) for _ in range(samples))
    return None if runs[0] < 0 else runs[len(runs) // 2]


def fma_peak_probe(dtype, threads, samples):
    """A call that measures the FMA peak once (a few ms) and appends its GFLOP/s to samples
    (nothing if it cannot be measured). Timed in the same rounds as a GEMM row, so that %peak
    compares figures taken at the same clock speed: on a shared VM the clock drifts by a third
    within minutes."""
    def probe():
        gflops = fma_peak_gflops(dtype, threads, 2_000_000)
        if gflops is not None:
            samples.append(gflops)
    return probe


GEMM_COLUMNS = ["dtype", "threads", "shape", "minitorch GFLOP/s", "numpy GFLOP/s",
                "torch GFLOP/s", "mt/np", "mt/torch", "peak GFLOP/s", "%peak"]
GEMM_NOTE = ("mt/np, mt/torch = minitorch GFLOP/s ÷ numpy's, PyTorch's (> 1: minitorch is faster); "
             "%peak = minitorch ÷ peak, the FMA peak (benchmarks/fma_peak.c): the best of its "
             "runs timed in the same rounds and at the start, '-' where that is below the "
             "GEMM's own rate (each run lost a core to the VM's other tenants)")


def causal_exps(shape, itemsize):
    """How many exps a causal softmax over scores of `shape` (..., queries, keys; as many queries
    as keys) takes: query q's row is scored up to its causal limit q + 1, rounded up to whole
    32-byte vectors (masked_row in csrc/tuned/softmax_rows.h); a padding mask inside that width
    saves none."""
    *heads, queries, keys = shape
    lanes = 32 // itemsize
    return math.prod(heads) * sum(min(-(-(q + 1) // lanes) * lanes, keys) for q in range(queries))


MASKED_SHAPE = (8, 8, 256, 256)  # the masked softmax's scores: batch, heads, queries, keys

# The exp-bound row kernels, by the start of their row's name: (exps per element, arrays of the
# kernel's shape counted in its bytes), or (a function of the itemsize giving the exps, None).
# Their exp pass alone (exp_floor.c) is their floor.
EXP_BOUND = {"softmax fwd": (1, 2), "log_softmax fwd": (1, 2), "log_softmax bwd": (1, 3),
             "cross_entropy fwd+bwd": (2, 3),
             "masked+causal softmax": (functools.partial(causal_exps, MASKED_SHAPE), None)}


@functools.lru_cache(maxsize=None)
def _exp_floor_lib():
    """exp_floor.c (with csrc/tuned/fast_exp.c) as a module, or None where it does not build:
    the table then prints no exp floor."""
    csrc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "csrc")
    return _compile_yardstick(
        "exp_floor", "void exp_pass_f32(int isa, int threads, const float *x, float *out, "
                     "int64_t n);\n"
                     "void exp_pass_f64(int isa, int threads, const double *x, double *out, "
                     "int64_t n);\n",
        ["-O3", "-std=gnu11", "-fno-math-errno", "-fopenmp"],
        include_dirs=[csrc, os.path.join(csrc, "tuned")])


def exp_floor_call(name, dtype, nbytes, threads):
    """For an exp-bound row (EXP_BOUND), a call running the row kernels' exp pass alone over as
    many elements, as many times as the kernel takes exps, on ``threads`` threads, at the ISA
    level the kernels run; None for other rows, at the reference level (libm's exp) or where
    exp_floor.c did not build."""
    bound = next((v for prefix, v in EXP_BOUND.items() if name.startswith(prefix)), None)
    isa = mt.ISA_LEVELS.index(mt.get_isa())
    module = _exp_floor_lib() if bound else None
    if module is None or isa == 0:
        return None
    passes, arrays = bound
    dtype = np.dtype(dtype)
    if callable(passes):
        elements, passes = passes(dtype.itemsize), 1
    else:
        elements = nbytes // arrays // dtype.itemsize
    x = -np.abs(np.random.default_rng(0).standard_normal(elements))
    x, out = x.astype(dtype), np.empty(x.size, dtype)
    kind = "float" if dtype == np.float32 else "double"
    run = module.lib.exp_pass_f32 if dtype == np.float32 else module.lib.exp_pass_f64
    px, pout = module.ffi.from_buffer(f"{kind}[]", x), module.ffi.from_buffer(f"{kind}[]", out)

    def call():
        for _ in range(passes):
            run(isa, threads, px, pout, x.size)
    return call


def show(row, name_width):
    """Print one table row (dtype, threads, name, then figures) in aligned columns."""
    dtype, threads, name, *figures = row
    print(f"{dtype:7} {threads:>3} {name:{name_width}} " + " ".join(figures), flush=True)


def bench_gemm(threads_list, quick, start_peaks=None):
    """Print the GEMM table; return its rows (strings, in GEMM_COLUMNS' order). ``start_peaks``:
    {(dtype name, threads): FMA peak measured at the start}, joined to each row's own samples
    (a row's few probes can all miss a core on a shared VM, reading one core's peak)."""
    print("\n## GEMM  (GFLOP/s; " + GEMM_NOTE + ")")
    header = (f"{'dtype':7} {'thr':>3} {'shape':32} {'minitorch':>9} {'numpy':>8} {'torch':>8} "
              f"{'mt/np':>6} {'mt/torch':>8} {'peak':>6} {'%peak':>6}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    rows = []
    for dtype in (np.float32, np.float64):
        for threads in threads_list:
            set_threads(threads)
            for name, sa, sb in gemm_cases(quick):
                a = rng.standard_normal(sa).astype(dtype)
                b = rng.standard_normal(sb).astype(dtype)
                flops = 2.0 * np.prod(sa[:-1]) * sa[-1] * sb[-1]
                budget = (0.9 if flops > 1e9 else 0.45) * (0.5 if quick else 1)
                f_th = None
                if torch is not None:
                    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
                    f_th = lambda: torch.matmul(ta, tb)  # noqa: E731
                peaks = []
                t_mt, t_np, t_th, _ = best_times(
                    [lambda: mt.matmul(a, b), lambda: np.matmul(a, b), f_th,
                     fma_peak_probe(dtype, threads, peaks)], budget, rounds=2 if quick else 3)
                g_mt, g_np = flops / t_mt / 1e9, flops / t_np / 1e9
                g_th = flops / t_th / 1e9 if t_th else None
                start_peak = (start_peaks or {}).get((np.dtype(dtype).name, threads))
                peaks += [start_peak] if start_peak is not None else []
                peak = max(peaks, default=None)  # a busy moment only ever lowers a sample
                if peak is not None and peak < g_mt:  # every sample missed a core: no peak
                    peak = None
                row = [np.dtype(dtype).name, str(threads), name, fmt(g_mt, 9), fmt(g_np),
                       fmt(g_th), fmt(ratio(g_mt, g_np), 6, 2), fmt(ratio(g_mt, g_th), 8, 2),
                       fmt(peak, 6), fmt(ratio(100 * g_mt, peak), 6, 0)]
                show(row, 32)
                rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Row kernels: numpy composites (what one writes in plain numpy, in the input dtype)
# ---------------------------------------------------------------------------------------------
def np_softmax(x, scale=1.0, mask=None):
    z = x * scale
    if mask is not None:
        z = np.where(mask, -np.inf, z)
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def np_softmax_backward(y, dy):
    return y * (dy - (dy * y).sum(-1, keepdims=True))


def np_log_softmax(x):
    m = x.max(-1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(-1, keepdims=True)))


def np_log_softmax_backward(y, dy):
    return dy - np.exp(y) * dy.sum(-1, keepdims=True)


def np_cross_entropy_fwd_bwd(x, t):
    m = x.max(-1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(-1, keepdims=True))
    loss = (lse[:, 0] - x[np.arange(len(t)), t]).mean()
    d = np.exp(x - lse)
    d[np.arange(len(t)), t] -= 1
    d /= len(t)
    return loss, d


def np_layer_norm(x, w, b, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    xc = x - mean
    rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    return xc * rstd * w + b, mean, rstd


def np_layer_norm_backward(dy, x, w, mean, rstd):
    xhat = (x - mean) * rstd
    g = dy * w
    dx = rstd * (g - g.mean(-1, keepdims=True) - xhat * (g * xhat).mean(-1, keepdims=True))
    return dx, (dy * xhat).sum(0), dy.sum(0)


# Two sizes per kernel: one whose operands stay in the L2/L3 caches (the activations of a small
# Transformer: 1024 tokens x 512 features), where the kernels are bound by arithmetic, and one
# of ~16 MB per operand, bound by DRAM bandwidth. (softmax/log-softmax shape, layer-norm shape,
# cross-entropy shapes, with the masked-attention case)
ROW_SIZES = [((1024, 512), (1024, 512), [(1024, 1000)], False),
             ((4096, 1000), (8192, 512), [(4096, 1000), (2048, 32000)], True)]


# Rows that stay in a core's L2 between calls (256 KiB of input, as many of output, in either
# dtype: 512 KiB of float64 each would fill a 1 MiB L2): no memory traffic, so these rows time
# the arithmetic alone, the kernel's passes over a row with the exp in one of them; the exp
# floor column times that exp alone.
IN_L2_BYTES, IN_L2_COLS = 256 * 1024, 1024
# A small Transformer's layer-norm rows (bench_transformer's d_model): 512 bytes of float32, where
# a row's chain of sums costs more than its memory traffic.
SHORT_LN_SHAPE = (1024, 128)


def in_l2_cases(rng, dtype):
    """Softmax and log-softmax forward on IN_L2_BYTES of rows: their arithmetic alone."""
    shape = (IN_L2_BYTES // (IN_L2_COLS * np.dtype(dtype).itemsize), IN_L2_COLS)
    x = rng.standard_normal(shape).astype(dtype)
    tx = torch.from_numpy(x) if torch is not None else None
    name = "x".join(map(str, shape)) + " in L2"
    return [(f"softmax fwd {name}", dtype, 2 * x.nbytes, lambda: mt.softmax_forward(x),
             lambda: np_softmax(x), tx is not None and (lambda: torch.softmax(tx, -1))),
            (f"log_softmax fwd {name}", dtype, 2 * x.nbytes, lambda: mt.log_softmax_forward(x),
             lambda: np_log_softmax(x), tx is not None and (lambda: torch.log_softmax(tx, -1)))]


def masked_softmax_case(rng, dtype):
    """Attention scores (MASKED_SHAPE), key padding + causal. Its compulsory traffic: the
    scores that neither mask excludes, read, and every output, written (0 where masked)."""
    batch, _, queries, keys = MASKED_SHAPE
    s = rng.standard_normal(MASKED_SHAPE).astype(dtype)
    pad = np.zeros((batch, 1, 1, keys), bool)
    pad[:, :, :, 200:] = True
    causal = np.triu(np.ones((queries, keys), bool), 1)
    live_scores = int(np.broadcast_to(~(pad | causal), s.shape).sum())
    torch_fn = None
    if torch is not None:
        ts, tmask = torch.from_numpy(s), torch.from_numpy(pad | causal)
        torch_fn = lambda: torch.softmax((ts * 0.125).masked_fill(tmask, float("-inf")), -1)
    return ("masked+causal softmax " + "x".join(map(str, MASKED_SHAPE)), dtype,
            s.nbytes + live_scores * s.itemsize,
            lambda: mt.softmax_forward(s, scale=0.125, mask=pad, causal=True),
            lambda: np_softmax(s, 0.125, pad | causal), torch_fn)


def layer_norm_cases(rng, dtype, shape):
    """Layer norm forward and backward over the last dim of `shape`, with weight and bias."""
    rows, cols = shape
    x = rng.standard_normal(shape).astype(dtype)
    w, b = rng.standard_normal(cols).astype(dtype), rng.standard_normal(cols).astype(dtype)
    dy = rng.standard_normal(shape).astype(dtype)
    _, mean, rstd = mt.layer_norm_forward(x, w, b)
    _, np_mean, np_rstd = np_layer_norm(x, w, b)
    torch_fwd = torch_bwd = None
    if torch is not None:
        tx, tw, tb, tdy = (torch.from_numpy(v) for v in (x, w, b, dy))
        _, tmean, trstd = torch.native_layer_norm(tx, [cols], tw, tb, 1e-5)
        torch_fwd = lambda: torch.native_layer_norm(tx, [cols], tw, tb, 1e-5)
        torch_bwd = lambda: torch.ops.aten.native_layer_norm_backward(
            tdy, tx, [cols], tmean, trstd, tw, tb, [True, True, True])
    name = f"{rows}x{cols}"
    return [(f"layer_norm fwd {name}", dtype, 2 * x.nbytes, lambda: mt.layer_norm_forward(x, w, b),
             lambda: np_layer_norm(x, w, b), torch_fwd),
            (f"layer_norm bwd {name}", dtype, 3 * x.nbytes,
             lambda: mt.layer_norm_backward(dy, x, w, mean, rstd),
             lambda: np_layer_norm_backward(dy, x, w, np_mean, np_rstd), torch_bwd)]


def row_cases(quick):
    """(name, dtype, bytes moved, minitorch fn, numpy fn, torch fn or None)."""
    rng = np.random.default_rng(1)
    cases = []
    for dtype, (sm_shape, ln_shape, ce_shapes, with_masked) in itertools.product(
            (np.float32, np.float64), ROW_SIZES):
        tdt = None if torch is None else {np.float32: torch.float32, np.float64: torch.float64}[dtype]
        sm_name = "x".join(map(str, sm_shape))
        x = rng.standard_normal(sm_shape).astype(dtype)
        dy = rng.standard_normal(x.shape).astype(dtype)
        y = mt.softmax_forward(x)
        nb = x.nbytes
        tx = ty = tdy = None
        if torch is not None:
            tx, ty, tdy = torch.from_numpy(x), torch.from_numpy(y), torch.from_numpy(dy)
        cases.append((f"softmax fwd {sm_name}", dtype, 2 * nb, lambda x=x: mt.softmax_forward(x),
                      lambda x=x: np_softmax(x),
                      tx is not None and (lambda tx=tx: torch.softmax(tx, -1))))
        cases.append((f"softmax bwd {sm_name}", dtype, 3 * nb, lambda y=y, dy=dy: mt.softmax_backward(y, dy),
                      lambda y=y, dy=dy: np_softmax_backward(y, dy),
                      tx is not None and (lambda ty=ty, tdy=tdy, tdt=tdt:
                                          torch.ops.aten._softmax_backward_data(tdy, ty, -1, tdt))))
        if with_masked:
            cases.append(masked_softmax_case(rng, dtype))
        else:
            cases += in_l2_cases(rng, dtype)
            cases += layer_norm_cases(rng, dtype, SHORT_LN_SHAPE)
        cases.append((f"log_softmax fwd {sm_name}", dtype, 2 * nb, lambda x=x: mt.log_softmax_forward(x),
                      lambda x=x: np_log_softmax(x),
                      tx is not None and (lambda tx=tx: torch.log_softmax(tx, -1))))
        ly = mt.log_softmax_forward(x)
        tly = torch.from_numpy(ly) if torch is not None else None
        cases.append((f"log_softmax bwd {sm_name}", dtype, 3 * nb,
                      lambda ly=ly, dy=dy: mt.log_softmax_backward(ly, dy),
                      lambda ly=ly, dy=dy: np_log_softmax_backward(ly, dy),
                      tx is not None and (lambda tly=tly, tdy=tdy, tdt=tdt:
                                          torch.ops.aten._log_softmax_backward_data(tdy, tly, -1, tdt))))
        for rows, vocab in ce_shapes:
            if vocab > 1000 and (quick or dtype == np.float64):
                continue
            logits = rng.standard_normal((rows, vocab)).astype(dtype)
            target = rng.integers(0, vocab, rows).astype(np.int64)
            tl = tt = None
            if torch is not None:
                tl, tt = torch.from_numpy(logits), torch.from_numpy(target)

            def mt_ce(logits=logits, target=target):
                loss, lse = mt.cross_entropy_forward(logits, target)
                return mt.cross_entropy_backward(logits, target, lse, np.ones((), logits.dtype))

            def torch_ce(tl=tl, tt=tt):
                leaf = tl.detach().requires_grad_()
                F.cross_entropy(leaf, tt).backward()
                return leaf.grad

            # forward reads the logits once, backward reads them again and writes dlogits
            cases.append((f"cross_entropy fwd+bwd {rows}x{vocab}", dtype, 3 * logits.nbytes, mt_ce,
                          lambda logits=logits, target=target: np_cross_entropy_fwd_bwd(logits, target),
                          tl is not None and torch_ce))
        cases += layer_norm_cases(rng, dtype, ln_shape)
    return cases


ROW_COLUMNS = ["dtype", "threads", "kernel", "minitorch GB/s", "numpy GB/s", "torch GB/s",
               "mt/np", "mt/torch", "paired", "copy GB/s", "%copy", "exp GB/s", "%roof"]
ROW_NOTE = ("GB/s of compulsory traffic; mt/np, mt/torch = minitorch GB/s ÷ the numpy composite's, "
            "PyTorch's (> 1: minitorch is faster); paired = the median of PyTorch's time ÷ "
            "minitorch's over call pairs run back to back (mt/torch compares each library's "
            "best call, which a drift of the machine's speed can favour either way); %copy = "
            "minitorch ÷ copy, a copy through the cache on as many threads timed in the same "
            "rounds; exp = the exp-bound kernels' "
            "floor, their vector exp alone over as many elements (benchmarks/exp_floor.c; the "
            "causal softmax: those within its causal limits), as GB/s of the kernel's traffic, "
            "timed in the same rounds; %roof = minitorch ÷ the lower of copy and exp")


def bench_rows(threads_list, quick):
    """Print the row-kernel table; return its rows (strings, in ROW_COLUMNS' order)."""
    print("\n## Row kernels  (" + ROW_NOTE + ")")
    header = (f"{'dtype':7} {'thr':>3} {'kernel':40} {'minitorch':>9} {'numpy':>8} {'torch':>8} "
              f"{'mt/np':>6} {'mt/torch':>8} {'paired':>6} {'copy':>6} {'%copy':>6} {'exp':>6} "
              f"{'%roof':>6}")
    print(header)
    print("-" * len(header))
    cases = row_cases(quick)
    rows = []
    for threads in threads_list:
        set_threads(threads)
        f_copy = copy_through_cache(*copy_arrays(), threads)
        for name, dtype, nbytes, f_mt, f_np, f_th in cases:
            f_exp = exp_floor_call(name, dtype, nbytes, threads)
            budget = 0.3 if quick else 0.6
            t_mt, t_np, t_th, t_copy, t_exp = best_times([f_mt, f_np, f_th, f_copy, f_exp],
                                                         budget=budget, rounds=2 if quick else 3)
            paired = paired_ratio(f_th, f_mt, budget / 3) if f_th else None
            g_mt, g_np = nbytes / t_mt / 1e9, nbytes / t_np / 1e9
            g_th = nbytes / t_th / 1e9 if t_th else None
            g_copy = 2 * COPY_BYTES / t_copy / 1e9
            g_exp = nbytes / t_exp / 1e9 if t_exp else None
            roof = min(g_copy, g_exp) if g_exp else g_copy
            row = [np.dtype(dtype).name, str(threads), name, fmt(g_mt, 9), fmt(g_np), fmt(g_th),
                   fmt(ratio(g_mt, g_np), 6, 2), fmt(ratio(g_mt, g_th), 8, 2),
                   fmt(paired, 6, 2), fmt(g_copy, 6),
                   fmt(100 * g_mt / g_copy, 6, 0), fmt(g_exp, 6), fmt(100 * g_mt / roof, 6, 0)]
            show(row, 40)
            rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Attention over whole sequences: the fused kernels against the chain they replace
# ---------------------------------------------------------------------------------------------
ATTENTION_COLUMNS = ["dtype", "threads", "heads", "dropout", "fused GF/s", "unfused GF/s",
                     "numpy GF/s", "torch GF/s", "fused/unfused", "mt/np", "mt/torch"]
ATTENTION_NOTE = ("forward + backward of softmax(q kᵀ·scale, causal) v over N x H heads of L x L "
                  "x D, q, k, v read in place in (N, L, 3·H·D) rows, with dropout p on the "
                  "weights (its mask drawn in every call, as in training); GF/s of the six "
                  "products' FLOPs; fused = the C attention kernels (a head at a time; dropout's "
                  "factors made by the C dropout_keep), unfused = the C chain they replace "
                  "(batched matmul_into, softmax, the factors' product, matmul_into), numpy = "
                  "the numpy backend's, torch = PyTorch's scaled_dot_product_attention with its "
                  "backward; ratios > 1: minitorch's fused kernels are faster")


def attention_cases(quick):
    """(name, n, heads, length, head dim): the benchmark Transformer's two sizes."""
    cases = [("32x4 heads 32x32x32 (small)", 32, 4, 32, 32)]
    return cases if quick else cases + [("32x8 heads 64x64x64 (big)", 32, 8, 64, 64)]


def _heads_of(rows, part, num_heads):
    n, length, width = rows.shape[0], rows.shape[1], rows.shape[2] // 3
    return rows[:, :, part * width:(part + 1) * width].reshape(
        n, length, num_heads, width // num_heads).swapaxes(1, 2)  # numpy and torch alike


def attention_runs(rows, dout, num_heads, scale, dropout=0.0):
    """The four fwd+bwd callables (fused, unfused, numpy, torch or None) on the same operands;
    each returns (out, dq, dk, dv) (torch: None). With dropout, each call draws its factors
    from the seed 0 stream, so the three minitorch runs compute the same values."""
    from minitorch.backends import c_backend as C, numpy_backend as N
    q, k, v = (_heads_of(rows, i, num_heads) for i in range(3))
    scores = q.shape[:3] + k.shape[2:3]

    def factors(kernels):
        if not dropout:
            return None
        count = int(np.prod(scores))
        return kernels.dropout_keep(count, 0, round(dropout * 2 ** 32), 1 / (1 - dropout),
                                    q.dtype).reshape(scores)

    def fused():
        keep = factors(C)
        out, w = C.attention_forward(q, k, v, scale, None, True, keep=keep)
        return (out,) + C.attention_backward(q, k, v, w, dout, scale, keep=keep)

    def unfused():
        keep = factors(C)
        s = C.matmul_into(q, k.swapaxes(-1, -2), out=np.empty(scores, q.dtype))
        w = C.softmax_forward(s, scale, None, True)
        kept = w if keep is None else w * keep
        out = C.matmul_into(kept, v, out=np.empty(q.shape, q.dtype))
        dkept = C.matmul_into(dout, v.swapaxes(-1, -2), out=np.empty_like(w))
        dz = C.softmax_backward(w, dkept if keep is None else dkept * keep, scale)
        return (out,) + tuple(C.matmul_into(a, b, out=np.empty(like.shape, q.dtype))
                              for a, b, like in ((dz, k, q), (dz.swapaxes(-1, -2), q, k),
                                                 (kept.swapaxes(-1, -2), dout, v)))

    def with_numpy():
        keep = factors(N)
        out, w = N.attention_forward(q, k, v, scale, None, True, keep=keep)
        return (out,) + N.attention_backward(q, k, v, w, dout, scale, keep=keep)
    f_th = None
    if torch is not None:
        t_rows = torch.from_numpy(rows).requires_grad_()
        t_dout = torch.from_numpy(dout)

        def f_th():
            tq, tk, tv = (_heads_of(t_rows, i, num_heads) for i in range(3))
            out = torch.nn.functional.scaled_dot_product_attention(
                tq, tk, tv, dropout_p=dropout, is_causal=True, scale=scale)
            out.backward(t_dout)
            t_rows.grad = None
    return fused, unfused, with_numpy, f_th


def bench_attention(threads_list, quick):
    """Print the attention table; return its rows (strings, in ATTENTION_COLUMNS' order)."""
    print("\n## Attention  (" + ATTENTION_NOTE + ")")
    header = (f"{'dtype':7} {'thr':>3} {'heads':28} {'drop':>4} {'fused':>9} {'unfused':>8} "
              f"{'numpy':>8} {'torch':>8} {'fu/unf':>6} {'mt/np':>6} {'mt/torch':>8}")
    print(header)
    print("-" * len(header))
    rng = np.random.default_rng(0)
    rows = []
    for dtype in (np.float32, np.float64):
        for threads in threads_list:
            set_threads(threads)
            for (name, n, num_heads, length, d), dropout in itertools.product(
                    attention_cases(quick), (0.0, 0.1)):
                packed = rng.standard_normal((n, length, 3 * num_heads * d)).astype(dtype)
                dout = rng.standard_normal((n, num_heads, length, d)).astype(dtype)
                flops = 6 * 2.0 * n * num_heads * length * length * d
                runs = attention_runs(packed, dout, num_heads, d ** -0.5, dropout)
                times = best_times(list(runs), budget=0.3 if quick else 0.6,
                                   rounds=2 if quick else 3)
                g_fused, g_unf, g_np, g_th = (flops / t / 1e9 if t else None for t in times)
                row = [np.dtype(dtype).name, str(threads), name, f"{dropout:4}", fmt(g_fused, 9),
                       fmt(g_unf), fmt(g_np), fmt(g_th), fmt(ratio(g_fused, g_unf), 6, 2),
                       fmt(ratio(g_fused, g_np), 6, 2), fmt(ratio(g_fused, g_th), 8, 2)]
                show(row, 28)
                rows.append(row)
    return rows


def print_load():
    """Print the 1-minute load average, with a warning when other work holds the cores; return
    it (None where the OS does not say)."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if load is not None:
        print(f"load average (1 min): {load:.2f}" + (
            "  WARNING: the machine is busy; every column below is unreliable"
            if load > 0.5 * (os.cpu_count() or 1) else ""))
    return load


def print_header(title):
    """A benchmark's first lines: its title, the library versions, the backend, the ISA level,
    whether PyTorch is there, and the load; returns the load (see print_load)."""
    print(title)
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch is not None else 'not available'}, "
          f"minitorch backend {minitorch.backends.backend()}, ISA level "
          f"{mt.get_isa()}, OpenMP {mt.has_openmp()}")
    if torch is None:
        print(f"NOTE: PyTorch columns omitted ({TORCH_ERROR})")
    return print_load()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="smaller sizes, 2 rounds, half the timing budget (~4 minutes)")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--only", choices=["gemm", "rows", "attention"],
                        help="run one of the three tables")
    report.add_no_report_flag(parser)
    args = parser.parse_args()
    start = time.perf_counter()
    print("# minitorch kernel benchmark")
    print(f"python {platform.python_version()}, numpy {np.__version__}, "
          f"torch {torch.__version__ if torch is not None else 'not available'}")
    if torch is None:
        print(f"NOTE: PyTorch columns omitted ({TORCH_ERROR})")
    print(f"cpu: {platform.processor() or platform.machine()}, os.cpu_count={os.cpu_count()}, "
          f"ISA level: {mt.get_isa()}, OpenMP: {mt.has_openmp()}")
    env = {k: v for k, v in os.environ.items() if k.startswith(("OPENBLAS", "OMP_", "MKL_"))}
    print(f"thread env: {env or 'none'}; numpy OpenBLAS thread control: "
          f"{'yes' if OPENBLAS_SET_THREADS else 'NOT FOUND (numpy uses its default)'}")
    print_load()
    peaks = {}
    for threads in args.threads:
        for dtype in (np.float32, np.float64):
            # best of several short runs: a busy machine only ever makes a run slower
            samples = [fma_peak_gflops(dtype, threads, 5_000_000) for _ in range(7)]
            if None not in samples:
                peaks[(np.dtype(dtype).name, threads)] = max(samples)
    if peaks:
        print("FMA peak at start (GFLOP/s; the GEMM table measures it again with each row and "
              "takes the best): "
              + ", ".join(f"{d} {t} thr {g:.1f}" for (d, t), g in peaks.items()))
    cached_gbs = 2 * COPY_BYTES / best_time(copy_through_cache(*copy_arrays(), 1)) / 1e9
    print(f"copy bandwidth, 1 thread: {memcpy_bandwidth():.1f} GB/s memcpy (np.copyto, 512 MiB, "
          f"non-temporal stores), {cached_gbs:.1f} GB/s through the cache (copy_through_cache, "
          f"as in the row table)")
    torch_note = [] if torch is not None else [f"PyTorch columns empty: {TORCH_ERROR}"]
    tables = []
    if args.only in (None, "gemm"):
        gemm_rows = bench_gemm(args.threads, args.quick, peaks)
        tables.append(("bench_kernels.py: GEMM", GEMM_COLUMNS, gemm_rows, GEMM_NOTE))
    if args.only in (None, "rows"):
        tables.append(("bench_kernels.py: row kernels", ROW_COLUMNS,
                       bench_rows(args.threads, args.quick), ROW_NOTE))
    if args.only in (None, "attention"):
        tables.append(("bench_kernels.py: attention", ATTENTION_COLUMNS,
                       bench_attention(args.threads, args.quick), ATTENTION_NOTE))
    if not args.no_report:
        for section, columns, rows, note in tables:
            path = report.write_table(section, columns, rows, threads=args.threads,
                                      notes=[note] + torch_note)
        print(f"tables written to {path}")
    print(f"\n(total {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
