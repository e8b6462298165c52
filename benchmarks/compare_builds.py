"""Two builds of the C extension on the benchmark's training step, in one process, step by step.

A kernel change worth a few percent of a step cannot be seen by timing one build, then the other:
on a shared VM the speed of one process differs from the next by 10-40%. Here this checkout's
extension and another build of it (a copy of its minitorch/_C.abi3.so made before rebuilding)
are loaded into one process; bench_transformer.py's step runs with this checkout's Python layer
and takes every kernel from each build in turn, step after step (the order reversed every round).
The time inside the GEMM calls, inside the fused attention, inside the kernels named with
--kernels, inside the rest, and the whole step are summed per step, and the script prints the
median over the rounds of each step's ratio: other build ÷ this one. Two copies of one build read
0.98-1.02 here (a paired median), where two processes of one build differ by 10% and more.

    python benchmarks/compare_builds.py OTHER_SO [--size small|big] [--threads 1]
        [--rounds 16] [--warmup 2] [--kernels bias_relu_backward,sum_cols]

OTHER_SO must export the entry points of this checkout's minitorch.h with the same arguments (a
build of a kernel change, not of a change to the C API). Nothing is written to
docs/benchmarks.md: this is a tool for deciding whether a kernel change is worth keeping.
"""
import argparse
import importlib.util
import os
import sys
import time

import numpy as np

import bench_transformer

# What the step's time inside the kernels is split into, by the kernel's name (mt_<name>_<dtype>)
GROUPS = {"gemm": ("gemm", "gemm_bias"), "attention": ("attention_forward", "attention_backward",
                                            "attention_step_forward")}


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


def kernel_name(entry_point):
    """``mt_bias_relu_backward_f32`` -> ``bias_relu_backward``."""
    name = entry_point[3:]
    return name[:-4] if name.endswith(("_f32", "_f64")) else name


class Timed:
    """The kernels of one build, each call timed into ``seconds``: "gemm", "attention", each
    name in ``kernels``, and "other kernels" for the rest."""

    def __init__(self, lib, kernels=()):
        self.lib = lib
        self.groups = dict(GROUPS, **{name: (name,) for name in kernels})
        self.seconds = dict.fromkeys(list(self.groups) + ["other kernels"], 0.0)
        self.calls = 0
        self.wrapped = {}

    def group(self, entry_point):
        name = kernel_name(entry_point)
        return next((group for group, names in self.groups.items() if name in names),
                    "other kernels")

    def entry(self, entry_point):
        """This build's ``entry_point``, timed unless it only reads or sets the runtime's state."""
        if entry_point not in self.wrapped:
            from minitorch.backends.c_backend_recording import CONTROL
            function = getattr(self.lib, entry_point)
            if entry_point.startswith(CONTROL) or not callable(function):  # not timed
                self.wrapped[entry_point] = function
            else:
                self.wrapped[entry_point] = self._timed(function, self.group(entry_point))
        return self.wrapped[entry_point]

    def __getattr__(self, entry_point):  # c_backend.lib.mt_...: this build's, timed
        if entry_point.startswith("mt_"):
            return self.entry(entry_point)
        raise AttributeError(entry_point)

    def _timed(self, kernel, group):
        def call(*args):
            start = time.perf_counter()
            status = kernel(*args)
            self.seconds[group] += time.perf_counter() - start
            self.calls += 1
            return status
        return call

def paired_rounds(step, builds, c_backend, rounds):
    """{build index: {each group of kernels and "step": [seconds per round]}}: each round runs
    one step with each build's kernels (all of them: c_backend.replaced), in turn (the order
    reversed every other round)."""
    times = [{kind: [] for kind in list(build.seconds) + ["step"]} for build in builds]
    for r in range(rounds):
        for i in (range(len(builds)) if r % 2 == 0 else reversed(range(len(builds)))):
            builds[i].seconds = dict.fromkeys(builds[i].seconds, 0.0)
            with c_backend.replaced(lib=builds[i]):
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
    parser.add_argument("--kernels", default="",
                        help="comma-separated kernel names (as in mt_<name>_f32) to time apart")
    args = parser.parse_args()
    kernels = [name for name in args.kernels.split(",") if name]
    if not os.path.isfile(args.other):
        parser.error(f"{args.other}: no such file")
    if args.threads < 1 or args.rounds < 1 or args.warmup < 0:
        parser.error("--threads and --rounds must be >= 1, --warmup >= 0")
    sys.path.append(bench_transformer.ROOT)  # this checkout's minitorch, installed or not
    import minitorch
    from minitorch.backends import c_backend
    if "c" not in minitorch.backends.available:
        sys.exit("the C extension is not built: nothing to compare")
    unknown = [name for name in kernels if not hasattr(c_backend.lib, f"mt_{name}_f32")]
    if unknown:
        parser.error(f"--kernels: no such kernel: {', '.join(unknown)}")
    minitorch.set_num_threads(args.threads)
    try:
        other = Timed(load_build(args.other, args.threads, c_backend.lib.mt_get_isa()), kernels)
    except (ImportError, OSError, AttributeError, RuntimeError) as error:
        sys.exit(f"{args.other}: not a build of this extension's kernels ({error})")
    builds = [Timed(c_backend.lib, kernels), other]
    _, step = bench_transformer.training_step("minitorch", args.size, args.threads)
    for _ in range(args.warmup):
        step()
    times = paired_rounds(step, builds, c_backend, args.rounds)
    print(f"{args.size} step, {args.threads} thread(s), {args.rounds} rounds; this: "
          f"{os.path.dirname(minitorch.__file__)}, other: {args.other}")
    width = max(map(len, times[0]))
    print(f"{'':{width}} {'this ms':>9} {'other ms':>9} {'other/this':>11}  (medians; the ratio "
          f"is the median of each round's)")
    for kind in times[0]:
        this, that = np.array(times[0][kind]), np.array(times[1][kind])
        ratio = np.median(that / this) if this.all() else float("nan")
        print(f"{kind:{width}} {1000 * np.median(this):9.1f} {1000 * np.median(that):9.1f} "
              f"{ratio:11.3f}")


if __name__ == "__main__":
    main()
