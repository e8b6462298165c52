"""Two builds of the C extension on the benchmark's training step, in one process, step by step.

A kernel change worth a few percent of a step cannot be seen by timing one build, then the other:
on a shared VM the speed of one process differs from the next by 10-40%. Here this checkout's
extension and another build of it (a copy of its minitorch/_C.abi3.so made before rebuilding)
are loaded into one process; bench_transformer.py's step runs with this checkout's Python layer
and takes the GEMM and fused-attention kernels from each build in turn, step after step (the
order reversed every round). The time inside those kernels and the whole step are summed per
step, and the script prints the median over the rounds of each step's ratio: other build ÷ this
one. Two copies of one build read 0.98-1.02 here (a paired median), where two processes of one
build differ by 10% and more.

    python benchmarks/compare_builds.py OTHER_SO [--size small|big] [--threads 1]
        [--rounds 16] [--warmup 2]

OTHER_SO must export the GEMM and attention entry points of this checkout's minitorch.h with the
same arguments (a build of a kernel change, not of a change to the C API). Nothing is written to
docs/benchmarks.md: this is a tool for deciding whether a kernel change is worth keeping.
"""
import argparse
import importlib.util
import os
import sys
import time

import numpy as np

import bench_transformer

# The kernels each build supplies, by their c_backend lookup: GEMM by dtype, the fused attention
# by (name, dtype).
ATTENTION = ("attention_forward", "attention_backward")
DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def load_build(path, threads, isa):
    """The cffi ``lib`` of the extension at ``path``, loaded beside minitorch's own, with
    ``threads`` threads at ISA level ``isa`` (an index, as ``mt_set_isa`` takes)."""
    spec = importlib.util.spec_from_file_location("_C", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if module.lib.mt_set_num_threads(threads) != 0:
        raise RuntimeError(f"{path}: could not start {threads} threads")
    module.lib.mt_set_isa(isa)
    return module.lib


class Timed:
    """The kernels of one build, each call timed into ``seconds[kind]`` ("gemm", "attention")."""

    def __init__(self, lib):
        self.seconds = {"gemm": 0.0, "attention": 0.0}
        self.calls = 0
        self.gemm = {dtype: self._timed(getattr(lib, f"mt_gemm_{sfx}"), "gemm")
                     for dtype, sfx in DTYPES.items()}
        self.attention = {(name, dtype): self._timed(getattr(lib, f"mt_{name}_{sfx}"),
                                                     "attention")
                          for name in ATTENTION for dtype, sfx in DTYPES.items()}

    def _timed(self, kernel, kind):
        def call(*args):
            start = time.perf_counter()
            status = kernel(*args)
            self.seconds[kind] += time.perf_counter() - start
            self.calls += 1
            return status
        return call

    def install(self, c_backend):
        """Make ``c_backend`` call this build's kernels; zero the step's sums."""
        c_backend._GEMM_KERNELS.update(self.gemm)
        c_backend._KERNELS.update(self.attention)
        self.seconds = dict.fromkeys(self.seconds, 0.0)


def paired_rounds(step, builds, c_backend, rounds):
    """{build index: {"gemm", "attention", "step": [seconds per round]}}: each round runs one step
    with each build's kernels, in turn (the order reversed every other round)."""
    times = [{"gemm": [], "attention": [], "step": []} for _ in builds]
    for r in range(rounds):
        for i in (range(len(builds)) if r % 2 == 0 else reversed(range(len(builds)))):
            builds[i].install(c_backend)
            start = time.perf_counter()
            step()
            times[i]["step"].append(time.perf_counter() - start)
            for kind, seconds in builds[i].seconds.items():
                times[i][kind].append(seconds)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("other", metavar="OTHER_SO", help="the other build's _C.abi3.so")
    parser.add_argument("--size", choices=sorted(bench_transformer.SIZES), default="small")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=2)
    args = parser.parse_args()
    if not os.path.isfile(args.other):
        parser.error(f"{args.other}: no such file")
    if args.threads < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--threads and --rounds must be >= 1, --warmup >= 0")
    sys.path.append(bench_transformer.ROOT)  # this checkout's minitorch, installed or not
    import minitorch
    from minitorch.backends import c_backend
    if "c" not in minitorch.backends.available:
        sys.exit("the C extension is not built: nothing to compare")
    minitorch.set_num_threads(args.threads)
    try:
        other = Timed(load_build(args.other, args.threads, c_backend.lib.mt_get_isa()))
    except (ImportError, OSError, AttributeError, RuntimeError) as error:
        sys.exit(f"{args.other}: not a build of this extension's kernels ({error})")
    builds = [Timed(c_backend.lib), other]
    _, step = bench_transformer.training_step("minitorch", args.size, args.threads)
    for _ in range(args.warmup):
        step()
    times = paired_rounds(step, builds, c_backend, args.rounds)
    print(f"{args.size} step, {args.threads} thread(s), {args.rounds} rounds; this: "
          f"{os.path.dirname(minitorch.__file__)}, other: {args.other}")
    print(f"{'':10} {'this ms':>9} {'other ms':>9} {'other/this':>11}  (medians; the ratio is "
          f"the median of each round's)")
    for kind in ("gemm", "attention", "step"):
        this, that = np.array(times[0][kind]), np.array(times[1][kind])
        ratio = np.median(that / this) if this.all() else float("nan")
        print(f"{kind:10} {1000 * np.median(this):9.1f} {1000 * np.median(that):9.1f} "
              f"{ratio:11.3f}")


if __name__ == "__main__":
    main()
