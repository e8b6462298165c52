"""What reusing the memory of large outputs buys (minitorch/backends/large_buffers.py).

bench_kernels' row kernels whose output is 32 MiB or more (cross-entropy on 2048x32000
float32 logits, the float64 masked softmax, float64 layer norm on 8192x512), each timed with
its output on a reused block and on fresh memory from malloc (as before), in the same rounds,
beside numpy's composite and PyTorch's (which allocate as they always do); 1 and 2 threads.
GB/s of compulsory traffic, as in bench_kernels. Takes about three minutes.

What fresh memory costs depends on the process's history: glibc maps new pages (and the
kernel zeroes them as they are first written) for blocks above its mmap threshold, which it
raises, up to 32 MiB, when such a block is freed. In this benchmark's process (after OpenBLAS
has started) blocks of 32-34 MiB already come back from the heap, and only the larger output
(cross-entropy's 262 MB) shows the difference; in a process that has not raised it, the
32 MiB outputs pay it too.

    python benchmarks/bench_large_outputs.py [--threads 1 2] [--no-report]

The table also goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report is given.
"""
import argparse

import numpy as np

import bench_kernels as bk
import report
from minitorch.backends import large_buffers


def _output(result):
    """The large array a row case returns: y of layer norm's (y, mean, rstd), else the result."""
    return result[0] if isinstance(result, tuple) else result


def large_cases(cases):
    """The row cases (bench_kernels.row_cases) whose minitorch output goes to a reused block."""
    return [case for case in cases if _output(case[3]()).nbytes >= large_buffers.MIN_BYTES]


def with_fresh_memory(fn):
    """fn, its outputs allocated by np.empty as before large_buffers existed."""
    def call():
        threshold = large_buffers.MIN_BYTES
        large_buffers.MIN_BYTES = float("inf")
        try:
            return fn()
        finally:
            large_buffers.MIN_BYTES = threshold
    return call


COLUMNS = ["dtype", "threads", "kernel", "reused GB/s", "fresh GB/s", "numpy GB/s",
           "torch GB/s", "reused/fresh", "reused/torch"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    report.add_no_report_flag(parser)
    args = parser.parse_args()
    cases = large_cases(bk.row_cases(quick=False))
    print("# large outputs: reused blocks vs fresh memory (GB/s of compulsory traffic)")
    header = (f"{'dtype':7} {'thr':>3} {'kernel':40} {'reused':>7} {'fresh':>7} {'numpy':>7} "
              f"{'torch':>7} {'reused/fresh':>12} {'reused/torch':>12}")
    print(header)
    print("-" * len(header))
    rows = []
    for threads in args.threads:
        bk.set_threads(threads)
        for name, dtype, nbytes, f_mt, f_np, f_th in cases:
            times = bk.best_times([f_mt, with_fresh_memory(f_mt), f_np, f_th], budget=0.6)
            reused, fresh, numpy_, torch_ = (nbytes / t / 1e9 if t else None for t in times)
            row = [np.dtype(dtype).name, str(threads), name, bk.fmt(reused, 7),
                   bk.fmt(fresh, 7), bk.fmt(numpy_, 7), bk.fmt(torch_, 7),
                   bk.fmt(bk.ratio(reused, fresh), 12, 2), bk.fmt(bk.ratio(reused, torch_), 12, 2)]
            print(f"{row[0]:7} {threads:3d} {name:40} " + " ".join(row[3:]), flush=True)
            rows.append(row)
    if not args.no_report:
        path = report.write_table(
            "bench_large_outputs.py", COLUMNS, rows, threads=args.threads,
            notes=["GB/s of compulsory traffic; reused: outputs on large_buffers' reused blocks; "
                   "fresh: outputs from np.empty; reused/x = reused GB/s ÷ x GB/s"])
        print(f"table written to {path}")


if __name__ == "__main__":
    main()
