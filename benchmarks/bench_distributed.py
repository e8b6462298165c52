"""Data-parallel training over MPI: examples/translate.py's training step on 1 rank x 2 threads
against 2 ranks x 1 thread (and 1 x 1 as the unit), in target tokens per second, with the time
the ranks spend communicating; PyTorch's DistributedDataParallel (gloo) on the same model,
weights and batches beside it.

minitorch runs translate.py's own step: ``train_step`` alone, ``data_parallel_step`` on each
rank's share of every batch (``rank_batches``: the same global batches, split between the
ranks) under ``mpiexec -n 2``, with translate's default model (d_model 128, 4 heads, 2+2 layers,
feed-forward 512, dropout 0.1), Adam, warmup and clipping, on synthetic sentence pairs of 6 to
24 tokens, 64 pairs a batch. Communication: the time DDP spent in MPI calls per step
(``communication_seconds``: buffer broadcast, bucket launches, progress tests, the final wait),
and an all-reduce of all the gradients alone, outside training. PyTorch runs the same
architecture with minitorch's initial weights (benchmarks/bench_real_corpus.py's port), under
the same mpiexec. Each configuration runs in fresh processes; configurations take turns for
--rounds rounds and each keeps its best round (the machine's speed drifts).

    python benchmarks/bench_distributed.py [--steps 20] [--warmup 3] [--rounds 2] [--quick]
                                           [--no-report]

Needs mpi4py and mpiexec (pip install 'minitorch-edu[distributed]'); PyTorch's rows are
omitted, with a note, where it is not installed. The table also goes to docs/benchmarks.md
(benchmarks/report.py) unless --no-report is given.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAD_ID, BOS_ID, EOS_ID = 0, 2, 3
MODEL = dict(d_model=128, heads=4, layers=2, ff=512, dropout=0.1, max_len=64, warmup=300,
             lr_factor=1.0, label_smoothing=0.1, batch_size=64, max_tokens=None, seed=0)
QUICK_MODEL = dict(MODEL, d_model=32, heads=2, layers=1, ff=64, batch_size=16)
VOCAB, PAIRS = 1000, 4096
CONFIGS = [(1, 1), (1, 2), (2, 1)]  # (ranks, threads per rank)


def load_translate():
    """examples/translate.py as a module: the benchmark times its training step."""
    spec = importlib.util.spec_from_file_location(
        "translate_example", os.path.join(ROOT, "examples", "translate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def synthetic_pairs(n, vocab, seed=0):
    """``n`` (source ids ending in <eos>, target ids) pairs of 6 to 24 tokens, as the
    tokenizers give them (ids 4 and up; 0-3 are the specials)."""
    rng = np.random.default_rng(seed)
    pairs = []
    for _ in range(n):
        src = rng.integers(4, vocab, rng.integers(5, 24)).tolist() + [EOS_ID]
        pairs.append((src, rng.integers(4, vocab, rng.integers(6, 24)).tolist()))
    return pairs


def plan(translate, config, steps, rank, world):
    """The first ``steps`` of translate's batches for this rank, epoch after epoch."""
    pairs, chosen, epoch = synthetic_pairs(PAIRS, VOCAB), [], 0
    while len(chosen) < steps:
        for item in translate.rank_batches(pairs, config, epoch, rank, world):
            chosen.append(item)
            if len(chosen) == steps:
                break
        epoch += 1
    return chosen


def minitorch_model(translate, config):
    import minitorch
    minitorch.manual_seed(config["seed"])
    return translate.build_model(config, VOCAB, VOCAB)


# ----------------------------------------------------------------------------- workers


def minitorch_worker(args, config):
    import minitorch
    from minitorch import distributed as dist
    translate = load_translate()
    rank, world = translate.join_ranks()
    minitorch.set_num_threads(args.threads)
    model = minitorch_model(translate, config)
    optimizer, scheduler = translate.build_optimizer(config, model)
    ddp = minitorch.nn.parallel.DistributedDataParallel(model) if world > 1 else None
    batches = plan(translate, config, args.warmup + args.steps, rank, world)
    times, comm, losses = [], [], []
    for i, (batch, weight, _) in enumerate(batches):
        before = ddp.communication_seconds if ddp else 0.0
        started = time.perf_counter()
        if ddp is None:
            loss = translate.train_step(model, batch, optimizer, scheduler, pad_id=PAD_ID,
                                        label_smoothing=config["label_smoothing"])
        else:
            loss = translate.data_parallel_step(ddp, batch, weight, optimizer, scheduler,
                                                config["label_smoothing"])
        if i >= args.warmup:
            times.append(time.perf_counter() - started)
            comm.append(ddp.communication_seconds - before if ddp else 0.0)
        losses.append(loss)
    n_params = sum(p.numel() for p in model.parameters())
    alone = None
    if world > 1:  # the same bytes as all the gradients, all-reduced with nothing else going on
        flat = minitorch.zeros(n_params)
        dist.barrier()
        samples = []
        for _ in range(10):
            started = time.perf_counter()
            dist.all_reduce(flat)
            samples.append(time.perf_counter() - started)
        alone = float(np.median(samples))
    # The slowest rank's figures: every step ends with an all-reduce, so they agree closely.
    totals = minitorch.tensor([sum(times), sum(comm)], dtype=minitorch.float64)
    if world > 1:
        dist.all_reduce(totals, dist.ReduceOp.MAX)
    if rank == 0:
        emit(args, times=totals.tolist()[0], comm=totals.tolist()[1], alone=alone,
             losses=losses, batches=batches, n_params=n_params, world=world)


def torch_worker(args, config):
    import torch
    import torch.distributed as tdist
    warnings.filterwarnings("ignore", module="torch")  # nested-tensor notes of nn.Transformer
    import bench_real_corpus
    translate = load_translate()
    rank = int(os.environ.get("PMI_RANK", 0))
    world = int(os.environ.get("PMI_SIZE", 1))
    if world > 1:
        tdist.init_process_group("gloo", init_method=f"file://{args.store}", rank=rank,
                                 world_size=world)
    torch.set_num_threads(args.threads)

    class Seq2Seq(bench_real_corpus.torch_model_class(torch)):
        def forward(self, src, tgt_in, src_pad, tgt_pad, tgt_mask):
            return self.decode(tgt_in, self.encode(src, src_pad), src_pad, tgt_pad, tgt_mask)

    model = Seq2Seq(config, VOCAB, VOCAB)
    initial = minitorch_model(translate, config).state_dict()  # the same initial weights
    model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in initial.items()})
    trainer = torch.nn.parallel.DistributedDataParallel(model) if world > 1 else model
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda e: bench_real_corpus.lr_at(e + 1, config))
    batches = plan(translate, config, args.warmup + args.steps, rank, world)
    names = ("src", "tgt_in", "src_key_padding_mask", "tgt_key_padding_mask", "tgt_mask")
    inputs = [([torch.from_numpy(getattr(b, n).numpy()) for n in names],
               torch.from_numpy(b.tgt_out.numpy()), weight) for b, weight, _ in batches]
    times, losses = [], []
    for i, (tensors, target, weight) in enumerate(inputs):
        started = time.perf_counter()
        logits = trainer(*tensors)
        loss = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), target.reshape(-1), ignore_index=PAD_ID,
            label_smoothing=config["label_smoothing"]) * weight
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        total = loss.detach() / world
        if world > 1:
            tdist.all_reduce(total)
        losses.append(total.item())
        if i >= args.warmup:
            times.append(time.perf_counter() - started)
    n_params = sum(p.numel() for p in model.parameters())
    alone = None
    if world > 1:
        flat = torch.zeros(n_params)
        tdist.barrier()
        samples = []
        for _ in range(10):
            started = time.perf_counter()
            tdist.all_reduce(flat)
            samples.append(time.perf_counter() - started)
        alone = float(np.median(samples))
    totals = torch.tensor([sum(times)], dtype=torch.float64)
    if world > 1:
        tdist.all_reduce(totals, tdist.ReduceOp.MAX)
        tdist.destroy_process_group()
    if rank == 0:
        emit(args, times=totals.item(), comm=None, alone=alone, losses=losses, batches=batches,
             n_params=n_params, world=world)


def emit(args, *, times, comm, alone, losses, batches, n_params, world):
    """The worker's result, one JSON line on stdout (rank 0's)."""
    tokens = [n_tokens for _, _, n_tokens in batches]
    timed_tokens = sum(tokens[args.warmup:])
    print(json.dumps({"ms": 1000 * times / args.steps, "tok_s": timed_tokens / times,
                      "comm_ms": None if comm is None else 1000 * comm / args.steps,
                      "alone_ms": None if alone is None else 1000 * alone,
                      "losses": losses, "tokens": tokens, "n_params": n_params,
                      "world": world}), flush=True)


# ----------------------------------------------------------------------------- driver


def mpiexec():
    beside = os.path.join(os.path.dirname(sys.executable), "mpiexec")  # the mpich wheel's
    return beside if os.access(beside, os.X_OK) else shutil.which("mpiexec")


def run(framework, ranks, threads, args, timeout=600):
    """One configuration in fresh processes: its result dict, or {"error": ...}."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), PYTHONPATH=path)
    with tempfile.TemporaryDirectory() as tmp:
        command = [sys.executable, os.path.abspath(__file__), "--worker", framework,
                   "--threads", str(threads), "--steps", str(args.steps), "--warmup",
                   str(args.warmup), "--store", os.path.join(tmp, "store")]
        command += ["--quick"] if args.quick else []
        command += ["--dropout", str(args.dropout)] if args.dropout is not None else []
        if ranks > 1:
            command = [mpiexec(), "-n", str(ranks)] + command
        try:
            out = subprocess.run(command, capture_output=True, text=True, env=env,
                                 timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"no result after {timeout}s"}
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        return {"error": lines[-1] if lines else f"exit status {out.returncode}"}
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = ["framework", "ranks x threads", "ms/step", "tgt tok/s", "vs 1 x 2", "vs torch",
           "comm ms/step", "all-reduce of the gradients alone"]


def rows(best, have_torch):
    table = []
    for framework in ("minitorch", "torch") if have_torch else ("minitorch",):
        unit = best.get((framework, 1, 2), {})
        for ranks, threads in CONFIGS:
            r = best[(framework, ranks, threads)]
            label = f"{ranks} x {threads}"
            if "error" in r:
                table.append([framework, label, f"error: {r['error']}", "", "", "", "", ""])
                continue
            versus = f"{r['tok_s'] / unit['tok_s']:.2f}x" if "tok_s" in unit else ""
            torch_r = best.get(("torch", ranks, threads), {})
            vs_torch = (f"{r['tok_s'] / torch_r['tok_s']:.2f}x"
                        if framework == "minitorch" and "tok_s" in torch_r else "")
            comm = (f"{r['comm_ms']:.1f} ({100 * r['comm_ms'] / r['ms']:.0f}%)"
                    if r.get("comm_ms") is not None and ranks > 1 else "")
            alone = f"{r['alone_ms']:.1f} ms" if r.get("alone_ms") is not None else ""
            table.append([framework, label, f"{r['ms']:.0f}", f"{r['tok_s']:.0f}", versus,
                          vs_torch, comm, alone])
    return table


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=None,
                   help="timed steps per configuration (default 20; 5 with --quick)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    p.add_argument("--rounds", type=int, default=None,
                   help="turns each configuration takes (default 2; 1 with --quick)")
    p.add_argument("--quick", action="store_true", help="a smaller model, fewer steps")
    p.add_argument("--dropout", type=float, default=None, help=argparse.SUPPRESS)  # tests: 0
    p.add_argument("--worker", choices=("minitorch", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--store", default=None, help=argparse.SUPPRESS)  # gloo's rendezvous file
    report.add_no_report_flag(p)
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = 5 if args.quick else 20
    if args.rounds is None:
        args.rounds = 1 if args.quick else 2
    for name in ("steps", "rounds"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.warmup < 0:
        p.error(f"--warmup must be >= 0, got {args.warmup}")
    config = dict(QUICK_MODEL if args.quick else MODEL)
    if args.dropout is not None:
        config["dropout"] = args.dropout
    if args.worker:
        (minitorch_worker if args.worker == "minitorch" else torch_worker)(args, config)
        return None

    if importlib.util.find_spec("mpi4py") is None or mpiexec() is None:
        p.exit(2, "bench_distributed.py needs mpi4py and mpiexec: pip install "
                  "'minitorch-edu[distributed]'\n")
    have_torch = importlib.util.find_spec("torch") is not None
    frameworks = ("minitorch", "torch") if have_torch else ("minitorch",)
    described = (f"translate.py's training step: d_model {config['d_model']}, {config['heads']} "
                 f"heads, {config['layers']}+{config['layers']} layers, feed-forward "
                 f"{config['ff']}, dropout {config['dropout']}, {config['batch_size']} pairs a "
                 f"batch (split between the ranks), vocabulary {VOCAB}, Adam, clipping; "
                 f"{args.steps} timed steps after {args.warmup}, best of {args.rounds} rounds")
    print(described, flush=True)
    best = {}
    for _ in range(args.rounds):
        for framework in frameworks:
            for ranks, threads in CONFIGS:
                r = run(framework, ranks, threads, args)
                key = (framework, ranks, threads)
                kept = best.get(key, {})
                if "tok_s" not in kept or r.get("tok_s", 0) > kept["tok_s"]:
                    best[key] = r
    table = rows(best, have_torch)
    widths = [10, 16, 8, 10, 9, 9, 14, 34]
    print(" ".join(f"{c:>{w}}" for c, w in zip(COLUMNS, widths)))
    for row in table:
        print(" ".join(f"{c:>{w}}" for c, w in zip(row, widths)), flush=True)
    notes = [described,
             "vs 1 x 2 = tokens/s ÷ the same framework's 1 rank x 2 threads; vs torch = "
             "minitorch's tokens/s ÷ PyTorch's in the same configuration (> 1: minitorch is "
             "faster)",
             "comm ms/step: time DDP spent in MPI calls per step on the slowest rank (share of "
             "the step); all-reduce alone: the gradients' bytes all-reduced with nothing else "
             "running (MPICH for minitorch, gloo for PyTorch)",
             f"load while measuring: {os.getloadavg()[0]:.2f} (1-minute average) on "
             f"{os.cpu_count()} CPUs: other processes share the cores"]
    if not have_torch:
        notes.append("PyTorch not installed: its rows are omitted (pip install torch==2.13.0)")
    print("\n".join(notes[1:]))
    if any(row[2].startswith("error") for row in table):
        print("a run failed: docs/benchmarks.md is left as it was")
    elif not args.no_report:
        path = report.write_table("bench_distributed.py", COLUMNS, table, threads="1, 2",
                                  notes=notes)
        print(f"table written to {path}")
    return best


if __name__ == "__main__":
    main()
