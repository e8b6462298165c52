"""The program each rank runs under ``mpiexec -n 2`` for tests/test_distributed_mpi.py.

    mpiexec -n 2 python tests/distributed_ranks.py check    # every check below; "ALL OK" at the end
    mpiexec -n 2 python tests/distributed_ranks.py raise    # rank 1 raises while rank 0 waits
    mpiexec -n 2 python tests/distributed_ranks.py exit     # rank 1 exits with status 3 meanwhile
    mpiexec -n 2 python tests/distributed_ranks.py early    # rank 1 ends well first; rank 0 later

``check`` asserts, on every rank: the collectives' results; that the DistributedSampler shards
are disjoint and cover the data; and that DistributedDataParallel on two ranks, each on half of
every batch, ends with exactly (1e-12, float64) the parameters that one process training on the
whole batches reaches, after several SGD steps, with one bucket or many, with and without
``no_sync`` accumulation, and with a parameter only one rank uses and one no rank uses. Each
passed check prints "OK <name>" on rank 0. A failed assertion is an uncaught exception, which
aborts the whole job with a non-zero exit status.
"""
import sys
import time

import numpy as np

import minitorch
import minitorch.distributed as dist
from minitorch import nn
from minitorch.nn.parallel import DistributedDataParallel
from minitorch.utils.data import DistributedSampler

TOLERANCE = 1e-12


def say(text):
    if dist.get_rank() == 0:
        print(text, flush=True)


def check_collectives(rank, world):
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    for dtype in (minitorch.float32, minitorch.float64, minitorch.int64):
        mine = minitorch.tensor([rank + 1, 10 * (rank + 1), -rank], dtype=dtype)
        ranks = [minitorch.tensor([r + 1, 10 * (r + 1), -r], dtype=dtype).numpy()
                 for r in range(world)]
        for op, expected in ((dist.ReduceOp.SUM, np.sum(ranks, 0)),
                             (dist.ReduceOp.MAX, np.max(ranks, 0)),
                             (dist.ReduceOp.MIN, np.min(ranks, 0)),
                             (dist.ReduceOp.PRODUCT, np.prod(ranks, 0))):
            t = mine.clone()
            dist.all_reduce(t, op)
            np.testing.assert_array_equal(t.numpy(), expected, err_msg=f"{op} {dtype}")
    t = minitorch.tensor([1.0, 2.0]) * (rank + 1)
    work = dist.all_reduce(t, dist.ReduceOp.AVG, async_op=True)
    work.wait()
    assert work.is_completed()
    np.testing.assert_allclose(t.numpy(), np.array([1.0, 2.0]) * (world + 1) / 2)
    # A transposed view (not contiguous) and a float16 tensor go through a staged copy.
    base = minitorch.arange(6, dtype=minitorch.float64).reshape(2, 3) * (rank + 1)
    view = base.t()
    dist.all_reduce(view)
    summed = np.arange(6.0).reshape(2, 3) * world * (world + 1) / 2  # the ranks' 1x, 2x, ...
    np.testing.assert_array_equal(base.numpy(), summed)
    half = minitorch.ones(3, dtype=minitorch.float16)
    dist.all_reduce(half)
    assert half.dtype == minitorch.float16 and half.tolist() == [world] * 3
    sent = minitorch.full((2, 2), float(rank))
    dist.broadcast(sent, src=world - 1)
    assert sent.tolist() == [[world - 1.0] * 2] * 2
    gathered = [minitorch.zeros(2, dtype=minitorch.int64) for _ in range(world)]
    dist.all_gather(gathered, minitorch.tensor([rank, rank * rank]))
    assert [g.tolist() for g in gathered] == [[r, r * r] for r in range(world)]
    dist.barrier()
    say("OK collectives")


def check_sampler(rank, world):
    for n, drop_last in ((20, False), (23, False), (23, True)):
        sampler = DistributedSampler(list(range(n)), shuffle=True, seed=7, drop_last=drop_last)
        assert (sampler.num_replicas, sampler.rank) == (world, rank)
        for epoch in (0, 1):
            sampler.set_epoch(epoch)
            mine = list(sampler)
            assert len(mine) == len(sampler)
            shards = [minitorch.zeros(len(mine), dtype=minitorch.int64) for _ in range(world)]
            dist.all_gather(shards, minitorch.tensor(mine, dtype=minitorch.int64))
            every = [i for shard in shards for i in shard.tolist()]
            if n % world == 0:
                assert sorted(every) == list(range(n)), "disjoint shards covering the data"
            elif drop_last:
                assert len(set(every)) == len(every) == n - n % world, "disjoint, tail dropped"
            else:
                assert set(every) == set(range(n)) and len(every) == n + world - n % world
        sampler.set_epoch(0)
        first = list(sampler)
        sampler.set_epoch(1)
        assert list(sampler) != first, "set_epoch reshuffles"
    say("OK sampler")


class Net(nn.Module):
    """Two layers, a buffer, a branch that only some calls use and a layer no call uses."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 6)
        self.out = nn.Linear(6, 2)
        self.extra = nn.Linear(6, 2)
        self.never = nn.Linear(3, 3)
        self.register_buffer("scale", minitorch.ones(1))

    def forward(self, x, use_extra=False):
        h = minitorch.tanh(self.hidden(x)) * self.scale
        y = self.out(h)
        return y + self.extra(h) if use_extra else y


def make_models(rank, **ddp_options):
    """(DDP model on this rank, reference model): the reference starts from the DDP model's
    parameters, i.e. rank 0's (each rank initialises its own differently)."""
    minitorch.manual_seed(100 + rank)
    model = Net().double()
    model.scale.fill_(1.0 + rank)  # rank 0's value must win
    if not ddp_options.get("find_unused_parameters"):  # else their reduction never finishes
        model.extra.requires_grad_(False)
        model.never.requires_grad_(False)
    ddp = DistributedDataParallel(model, **ddp_options)
    assert model.scale.item() == 1.0, "buffers broadcast from rank 0"
    reference = Net().double()
    reference.load_state_dict(model.state_dict())
    return ddp, reference


def batches(steps, size, seed=0):
    rng = np.random.default_rng(seed)
    return [(minitorch.tensor(rng.standard_normal((size, 4))),
             minitorch.tensor(rng.standard_normal((size, 2)))) for _ in range(steps)]


def mse(model, x, y, **kwargs):
    return ((model(x, **kwargs) - y) ** 2).mean()


def assert_same_parameters(model, reference, name):
    for (key, p), q in zip(model.named_parameters(), reference.parameters()):
        difference = np.abs(p.detach().numpy() - q.detach().numpy()).max()
        assert difference <= TOLERANCE, f"{name}: {key} differs by {difference}"


def check_equivalence(rank, world, name, accumulate=1, **ddp_options):
    """Each rank on its 1/world of every batch (in ``accumulate`` micro-batches, all but the
    last under no_sync) against one process on the whole batch."""
    ddp, reference = make_models(rank, **ddp_options)
    model = ddp.module
    used = [p for n, p in model.named_parameters() if not n.startswith(("extra", "never"))]
    ref_used = [p for n, p in reference.named_parameters() if not n.startswith(("extra", "never"))]
    optimizer = minitorch.optim.SGD(used, lr=0.1, momentum=0.9)
    ref_optimizer = minitorch.optim.SGD(ref_used, lr=0.1, momentum=0.9)
    per_rank = 4 * accumulate
    for x, y in batches(5, per_rank * world):
        ref_optimizer.zero_grad()
        mse(reference, x, y).backward()
        ref_optimizer.step()

        optimizer.zero_grad()
        mine = slice(rank * per_rank, (rank + 1) * per_rank)
        xs, ys = x[mine], y[mine]
        for micro in range(accumulate):
            part = slice(micro * 4, (micro + 1) * 4)
            # the mean over the micro-batch / accumulate: the sum over micro-batches is the
            # rank's mean, and the average over ranks the whole batch's
            if micro < accumulate - 1:
                with ddp.no_sync():
                    (mse(ddp, xs[part], ys[part]) / accumulate).backward()
                local = used[0].grad.numpy().copy()
            else:
                (mse(ddp, xs[part], ys[part]) / accumulate).backward()
        if accumulate > 1:  # no_sync left this rank's own gradient alone
            others = [minitorch.zeros(local.shape, dtype=minitorch.float64) for _ in range(world)]
            dist.all_gather(others, minitorch.tensor(local))
            assert not np.allclose(others[0].numpy(), others[1].numpy())
        optimizer.step()
    assert_same_parameters(model, reference, name)
    assert model.extra.weight.grad is None and model.never.weight.grad is None
    say(f"OK {name}")


def check_unused_parameters(rank, world):
    """find_unused_parameters: ``extra`` is used by rank 0's half only, ``never`` by no one."""
    ddp, reference = make_models(rank, find_unused_parameters=True, bucket_cap_mb=0.0002)
    model = ddp.module
    never_before = model.never.weight.detach().numpy().copy()
    optimizer = minitorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    ref_optimizer = minitorch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for x, y in batches(4, 4 * world, seed=1):
        ref_optimizer.zero_grad()
        halves = [mse(reference, x[r * 4:(r + 1) * 4], y[r * 4:(r + 1) * 4], use_extra=r == 0)
                  for r in range(world)]
        (sum(halves[1:], halves[0]) / world).backward()
        ref_optimizer.step()

        optimizer.zero_grad()
        mse(ddp, x[rank * 4:(rank + 1) * 4], y[rank * 4:(rank + 1) * 4],
            use_extra=rank == 0).backward()
        assert model.extra.weight.grad is not None  # rank 1 gets rank 0's gradient / world
        assert model.never.weight.grad is None      # no rank used it: left as it was
        optimizer.step()
    assert_same_parameters(model, reference, "unused parameters")
    np.testing.assert_array_equal(model.never.weight.detach().numpy(), never_before)
    say("OK unused parameters")


def check_buffers_follow_rank_0(rank):
    ddp, _ = make_models(rank)
    ddp.module.scale.fill_(5.0 + rank)
    with minitorch.no_grad():
        ddp(minitorch.zeros(1, 4, dtype=minitorch.float64))
    assert ddp.module.scale.item() == 5.0, "buffers broadcast from rank 0 before each forward"
    say("OK buffers")


def main(mode):
    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if mode == "raise":
        if rank == 1:
            raise RuntimeError("rank 1 fails on purpose")
        dist.barrier()  # would wait for rank 1 forever
        print("rank 0 passed a barrier that rank 1 never reached", flush=True)
        return
    if mode == "exit":
        if rank == 1:
            sys.exit(3)
        dist.barrier()
        print("rank 0 passed a barrier that rank 1 never reached", flush=True)
        return
    if mode == "early":  # a clean exit must not cut short a rank still working
        if rank == 0:
            time.sleep(1.0)
            print("rank 0 finished its work after rank 1 had ended", flush=True)
        return
    assert world == 2, "run under mpiexec -n 2"
    check_collectives(rank, world)
    check_sampler(rank, world)
    check_equivalence(rank, world, "one bucket")
    check_equivalence(rank, world, "many buckets", bucket_cap_mb=0.0002)
    check_equivalence(rank, world, "no_sync accumulation", accumulate=2, bucket_cap_mb=0.0002)
    check_equivalence(rank, world, "gradient_as_bucket_view", gradient_as_bucket_view=True)
    check_unused_parameters(rank, world)
    check_buffers_follow_rank_0(rank)
    dist.barrier()
    say("ALL OK")
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "check")
