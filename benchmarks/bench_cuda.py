"""The CUDA backend on a GPU, from one run: the project's GEMM (csrc/cuda/gemm.cu) against
cuBLAS, the row kernels in GB/s against PyTorch CUDA and the GPU's copy bandwidth, and the
seq2seq training step and KV-cached greedy decoding against PyTorch CUDA eager.

Needs a CUDA GPU and CuPy (``pip install 'minitorch-edu[cuda]'``); the PyTorch columns need a
PyTorch that sees the GPU (blank otherwise). cuBLAS is timed through CuPy's ``matmul``. Every
time is the best of --rounds runs, each between two ``cuda.synchronize()`` calls; the kernels'
results are checked against the reference's before they are timed, so like is timed with like.

    python benchmarks/bench_cuda.py [--quick] [--rounds 5] [--no-report]

The issue's targets: fp32 GEMM >= 50% of cuBLAS at n >= 2048; row kernels >= 70% of the copy
bandwidth at sizes that do not fit in L2; the large training step within 2x of PyTorch CUDA.
The table goes to docs/benchmarks.md (benchmarks/report.py) unless --no-report or --quick.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

GEMM_SQUARES = (512, 1024, 2048, 4096, 8192)
# (m, k, n) of the large Transformer's GEMMs: batch 64 x length 128 = 8192 rows
GEMM_TRANSFORMER = ((8192, 512, 512), (8192, 512, 2048), (8192, 2048, 512), (8192, 512, 1000))
ROWS = ((4096, 4096), (16384, 1024))  # 64 MiB in float32: beyond the L2 of today's GPUs
STEP_SIZES = {
    "small": dict(d_model=128, nhead=4, layers=2, ff=512, batch=32, src_len=32, tgt_len=32,
                  vocab=1000),
    "large": dict(d_model=512, nhead=8, layers=6, ff=2048, batch=64, src_len=128, tgt_len=128,
                  vocab=1000),
}
QUICK = dict(squares=(64, 128), transformer=((256, 32, 64),), rows=((128, 256),),
             steps={"small": dict(STEP_SIZES["small"], batch=4, src_len=6, tgt_len=6, vocab=50,
                                  d_model=16, nhead=2, layers=1, ff=32)})
COLUMNS = ["section", "case", "minitorch", "reference", "ratio", "PyTorch CUDA", "vs PyTorch"]


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def best_time(fn, rounds, sync):
    """Seconds of the fastest of ``rounds`` calls of ``fn``, each between two syncs."""
    fn()  # warm-up: compiles the kernel, fills the memory pool
    best = float("inf")
    for _ in range(rounds):
        sync()
        start = time.perf_counter()
        fn()
        sync()
        best = min(best, time.perf_counter() - start)
    return best


def gemm_rows(xp, kernels, torch, shapes, rounds, sync):
    """Our GEMM's TFLOP/s against cuBLAS's (and PyTorch's), float32."""
    rows = []
    for m, k, n in shapes:
        rng = np.random.default_rng(0)
        a = xp.asarray(rng.standard_normal((m, k), dtype=np.float32))
        b = xp.asarray(rng.standard_normal((k, n), dtype=np.float32))
        ours, theirs = kernels.matmul(a, b), xp.matmul(a, b)
        np.testing.assert_allclose(ours.get(), theirs.get(), rtol=1e-3, atol=1e-3 * np.sqrt(k))
        flops = 2.0 * m * n * k
        t_ours = best_time(lambda: kernels.matmul(a, b), rounds, sync)
        t_blas = best_time(lambda: xp.matmul(a, b), rounds, sync)
        row = ["GEMM fp32 TFLOP/s", f"{m}x{k}x{n}", flops / t_ours / 1e12, flops / t_blas / 1e12,
               t_blas / t_ours, None, None]
        if torch is not None:
            ta, tb = torch.as_tensor(a, device="cuda"), torch.as_tensor(b, device="cuda")
            t_torch = best_time(lambda: ta @ tb, rounds, sync)
            row[5:] = [flops / t_torch / 1e12, t_torch / t_ours]
        rows.append(row)
    return rows


def row_kernel_rows(xp, kernels, torch, shapes, rounds, sync):
    """Our row kernels in GB/s (bytes each must move at least, over its time), against the
    copy bandwidth of the same array measured in the same run, and PyTorch's."""
    rows = []
    for shape in shapes:
        rng = np.random.default_rng(0)
        x = xp.asarray(rng.standard_normal(shape, dtype=np.float32))
        dy = xp.asarray(rng.standard_normal(shape, dtype=np.float32))
        w, b = xp.ones(shape[-1], np.float32), xp.zeros(shape[-1], np.float32)
        target = xp.asarray(rng.integers(0, shape[-1], shape[0]))
        y = kernels.softmax_forward(x)
        _, mean, rstd = kernels.layer_norm_forward(x, w, b)
        size = x.nbytes
        copy_out = xp.empty_like(x)
        t_copy = best_time(lambda: xp.copyto(copy_out, x), rounds, sync)
        copy_gbs = 2 * size / t_copy / 1e9
        rows.append(["rows GB/s", f"copy {shape[0]}x{shape[1]}", copy_gbs, copy_gbs, 1.0, None,
                     None])
        cases = {  # name: (ours, bytes moved, PyTorch's or None)
            "softmax fwd": (lambda: kernels.softmax_forward(x), 2 * size, "softmax"),
            "softmax bwd": (lambda: kernels.softmax_backward(y, dy), 3 * size, None),
            "log_softmax fwd": (lambda: kernels.log_softmax_forward(x), 2 * size,
                                "log_softmax"),
            "layer_norm fwd": (lambda: kernels.layer_norm_forward(x, w, b), 2 * size,
                               "layer_norm"),
            "layer_norm bwd": (lambda: kernels.layer_norm_backward(dy, x, w, mean, rstd),
                               3 * size, None),
            "cross_entropy fwd": (lambda: kernels.cross_entropy_forward(x, target), size,
                                  "cross_entropy"),
        }
        tx = tw = tb = tt = None
        if torch is not None:
            tx = torch.as_tensor(x, device="cuda")
            tw, tb = torch.as_tensor(w, device="cuda"), torch.as_tensor(b, device="cuda")
            tt = torch.as_tensor(target, device="cuda")
        torch_calls = {
            "softmax": lambda: torch.softmax(tx, -1),
            "log_softmax": lambda: torch.log_softmax(tx, -1),
            "layer_norm": lambda: torch.nn.functional.layer_norm(tx, (shape[-1],), tw, tb),
            "cross_entropy": lambda: torch.nn.functional.cross_entropy(tx, tt),
        }
        for name, (ours, moved, theirs) in cases.items():
            t_ours = best_time(ours, rounds, sync)
            gbs = moved / t_ours / 1e9
            row = ["rows GB/s", f"{name} {shape[0]}x{shape[1]}", gbs, copy_gbs, gbs / copy_gbs,
                   None, None]
            if torch is not None and theirs is not None:
                t_torch = best_time(torch_calls[theirs], rounds, sync)
                row[5:] = [moved / t_torch / 1e9, t_torch / t_ours]
            rows.append(row)
    return rows


def step_rows(steps, torch, rounds, sync):
    """The seq2seq training step (ms) on the GPU, minitorch against PyTorch CUDA eager."""
    from bench_transformer import training_step
    rows = []
    for name, cfg in steps.items():
        _, step = training_step("minitorch", cfg, 1, device="cuda")
        t_ours = best_time(step, rounds, sync)
        row = ["training step ms", name, 1e3 * t_ours, None, None, None, None]
        if torch is not None:
            _, torch_step = training_step("torch", cfg, 1, device="cuda")
            t_torch = best_time(torch_step, rounds, sync)
            row[5:] = [1e3 * t_torch, t_torch / t_ours]
        rows.append(row)
    return rows


def decoding_rows(quick, torch, rounds, sync):
    """KV-cached greedy decoding (ms) on the GPU: minitorch's against PyTorch's cached step,
    both driven by minitorch's search code (bench_decoding.py's models)."""
    import bench_decoding
    from minitorch.text.decoding import greedy_decode
    cfg = bench_decoding.QUICK if quick else bench_decoding.CONFIG
    model, src, mask = bench_decoding.build(cfg)
    theirs = bench_decoding.TorchModel(model, "cuda") if torch is not None else None
    model.cuda()
    src, mask = src.cuda(), mask.cuda()
    special = dict(max_len=cfg["steps"], bos_id=bench_decoding.BOS, eos_id=bench_decoding.EOS,
                   pad_id=bench_decoding.PAD)
    t_ours = best_time(lambda: greedy_decode(model, src, mask, **special), rounds, sync)
    row = ["greedy decoding ms", f"batch {cfg['batch']}, {cfg['steps']} tokens", 1e3 * t_ours,
           None, None, None, None]
    if theirs is not None:
        assert greedy_decode(theirs, src, mask, **special) == greedy_decode(model, src, mask,
                                                                            **special)
        t_torch = best_time(lambda: greedy_decode(theirs, src, mask, **special), rounds, sync)
        row[5:] = [1e3 * t_torch, t_torch / t_ours]
    return [row]


def run(quick, rounds):
    import minitorch
    from minitorch import backends, device_arrays
    xp = device_arrays.gpu_library()  # RuntimeError naming what is missing
    kernels = backends.current()  # GPU arrays go to csrc/cuda's kernels through it
    torch = _torch_cuda()

    def sync():
        minitorch.cuda.synchronize()
        if torch is not None:
            torch.cuda.synchronize()
    squares = QUICK["squares"] if quick else GEMM_SQUARES
    shapes = [(n, n, n) for n in squares] + list(
        QUICK["transformer"] if quick else GEMM_TRANSFORMER)
    rows = gemm_rows(xp, kernels, torch, shapes, rounds, sync)
    rows += row_kernel_rows(xp, kernels, torch, QUICK["rows"] if quick else ROWS, rounds, sync)
    rows += step_rows(QUICK["steps"] if quick else STEP_SIZES, torch, rounds, sync)
    rows += decoding_rows(quick, torch, rounds, sync)
    return rows


def _cell(value):
    if value is None:
        return ""
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    p.add_argument("--rounds", type=int, default=5, help="timed runs per case (the best counts)")
    report.add_no_report_flag(p)
    args = p.parse_args(argv)
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    import minitorch
    if not minitorch.cuda.is_available():
        p.error("needs a CUDA GPU and CuPy (pip install 'minitorch-edu[cuda]'): "
                "minitorch.cuda.is_available() is False")
    rows = [[_cell(v) for v in row] for row in run(args.quick, args.rounds)]
    print(report.markdown_table(COLUMNS, rows))
    notes = ["ratio: GEMM = cuBLAS time / ours; rows = our GB/s / the copy's GB/s (same run); "
             "vs PyTorch = PyTorch time / ours (> 1: minitorch faster)",
             f"GPU: {minitorch.cuda.get_device_name()}"]
    for note in notes:
        print(note)
    if not args.no_report and not args.quick:
        print("table written to", report.write_table("bench_cuda.py", COLUMNS, rows, threads=[1],
                                                     notes=notes))
    return rows


if __name__ == "__main__":
    main()
