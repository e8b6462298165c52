"""minitorch.distributed in one process: the world of one a script started without mpiexec
joins, the errors (no mpi4py, no group, bad arguments), DistributedDataParallel and
DistributedSampler there, and the engine hook DDP relies on
(``Tensor.register_post_accumulate_grad_hook``, run as soon as a leaf's gradient is complete).
The same code on two ranks under mpiexec: tests/test_distributed_mpi.py."""
import sys
import warnings

import numpy as np
import pytest

import minitorch
import minitorch.distributed as dist
from minitorch import nn
from minitorch.nn.parallel import DistributedDataParallel
from minitorch.utils.data import DistributedSampler


@pytest.fixture
def world_of_one():
    """An initialized default group of one process (destroyed afterwards)."""
    pytest.importorskip("mpi4py", reason="mpi4py not installed: pip install "
                                         "'minitorch-edu[distributed]'")
    if dist.is_initialized():  # a test that failed half-way
        dist.destroy_process_group()
    dist.init_process_group("mpi")
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def _mlp(seed=0):
    minitorch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 4), nn.Tanh(),
                         nn.Linear(4, 2)).double()


def _data(n=6, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, 3)), rng.standard_normal((n, 2))
    return minitorch.tensor(x), minitorch.tensor(y)


# ----------------------------------------------------------------------- without a process group


def test_without_mpi4py_the_package_imports_and_init_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "mpi4py", None)  # makes `import mpi4py` raise ImportError
    assert dist.is_available() and not dist.is_mpi_available()
    with pytest.raises(ImportError, match=r"pip install 'minitorch-edu\[distributed\]'"):
        dist.init_process_group("mpi")
    assert not dist.is_initialized()


def test_everything_needs_an_initialized_group():
    if dist.is_initialized():
        dist.destroy_process_group()
    t = minitorch.ones(2)
    for call in (dist.get_rank, dist.get_world_size, dist.get_backend, dist.barrier,
                 dist.destroy_process_group, lambda: dist.all_reduce(t),
                 lambda: dist.broadcast(t, 0), lambda: dist.all_gather([t], t),
                 lambda: DistributedSampler(range(4)), lambda: DistributedDataParallel(_mlp())):
        with pytest.raises(ValueError, match="init_process_group"):
            call()


@pytest.mark.parametrize("kwargs, match", [
    (dict(backend="nccl"), "backend must be 'mpi'"),
    (dict(backend="gloo"), "backend must be 'mpi'"),
    (dict(init_method="tcp://localhost:1234"), "init_method must be None"),
    (dict(store=object()), "store must be None"),
    (dict(device_id="cuda:0"), "device_id"),
])
def test_init_arguments_mpi_does_not_take_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dist.init_process_group(**kwargs)
    assert not dist.is_initialized()


def test_mpiexec_launch_is_read_from_the_environment(monkeypatch):
    for name in ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK"):
        monkeypatch.delenv(name, raising=False)
    assert not dist.is_mpiexec_launched()
    monkeypatch.setenv("PMI_RANK", "0")
    assert dist.is_mpiexec_launched()


# ----------------------------------------------------------------------- the world of one


def test_world_of_one(world_of_one):
    assert dist.is_initialized() and dist.get_backend() == "mpi"
    assert (dist.get_rank(), dist.get_world_size()) == (0, 1)
    with pytest.raises(ValueError, match="twice"):
        dist.init_process_group("mpi")
    dist.destroy_process_group()
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="world_size=2, but mpiexec made"):
        dist.init_process_group("mpi", world_size=2)
    assert not dist.is_initialized()
    dist.init_process_group("mpi", world_size=1, rank=0)  # again after destroy: allowed
    assert dist.get_world_size() == 1


def test_collectives_in_a_world_of_one(world_of_one):
    x = minitorch.tensor([[1.0, -2.0], [3.0, 4.0]])
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.AVG, dist.ReduceOp.MAX, dist.ReduceOp.MIN,
               dist.ReduceOp.PRODUCT):
        t = x.clone()
        assert dist.all_reduce(t, op) is None
        assert t.tolist() == x.tolist()
    t = x.clone()
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    flags = minitorch.tensor([True, False])
    dist.all_reduce(flags)
    assert flags.tolist() == [True, False]
    column = x.clone()[:, 1]  # not contiguous: reduced through a copy written back
    dist.all_reduce(column, dist.ReduceOp.MAX)
    assert column.tolist() == [-2.0, 4.0]
    b = minitorch.tensor([1, 2, 3])
    assert dist.broadcast(b, src=0) is None and b.tolist() == [1, 2, 3]
    dist.broadcast(b, group_src=0, async_op=True).wait()
    out = [minitorch.zeros(2, 2)]
    dist.all_gather(out, x)
    assert out[0].tolist() == x.tolist()
    assert dist.barrier() is None
    dist.barrier(async_op=True).wait()


def test_collective_arguments_are_checked(world_of_one):
    t = minitorch.ones(3)
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(t, "sum")
    with pytest.raises(TypeError, match="floating-point"):
        dist.all_reduce(minitorch.tensor([1, 2]), dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="minitorch Tensor"):
        dist.all_reduce(np.ones(3))
    with pytest.raises(ValueError, match="src must be a rank in"):
        dist.broadcast(t, src=1)
    with pytest.raises(ValueError, match="src .* must be given"):
        dist.broadcast(t)
    with pytest.raises(ValueError, match="list of 1 tensors"):
        dist.all_gather([t, t], t)
    with pytest.raises(ValueError, match="shape"):
        dist.all_gather([minitorch.ones(4)], t)
    with pytest.raises(ValueError, match="only the default group"):
        dist.all_reduce(t, group="another")
    with pytest.raises(ValueError, match="ReduceOp"):
        dist.ReduceOp("MEDIAN")
    assert dist.ReduceOp("MAX") == dist.ReduceOp.MAX != dist.ReduceOp.SUM


# ----------------------------------------------------------------------- the engine hook


def test_post_accumulate_grad_hook_sees_the_accumulated_grad():
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    w.grad = minitorch.tensor([10.0, 10.0])
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (w * w).sum().backward()  # w used twice by one node, then accumulated once
    assert seen == [[12.0, 14.0]]
    handle.remove()
    (w * 3).sum().backward()
    assert seen == [[12.0, 14.0]] and w.grad.tolist() == [15.0, 17.0]
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="require"):
        minitorch.ones(2).register_post_accumulate_grad_hook(print)


def test_a_leaf_is_finished_as_soon_as_its_last_use_has_run():
    """The hook of the last layer's weight runs before backward reaches the first layer."""
    events = []
    first = minitorch.tensor([[0.5, -1.0]], requires_grad=True)
    last = minitorch.tensor([[2.0], [1.0]], requires_grad=True)
    x = minitorch.tensor([[1.0, 2.0]])
    hidden = (x * first).tanh()
    hidden.register_hook(lambda g: events.append("gradient reaches the first layer"))
    last.register_post_accumulate_grad_hook(lambda t: events.append("last layer done"))
    first.register_post_accumulate_grad_hook(lambda t: events.append("first layer done"))
    (hidden @ last).sum().backward()
    assert events == ["last layer done", "gradient reaches the first layer", "first layer done"]


# ----------------------------------------------------------------------- DistributedDataParallel


def test_ddp_in_a_world_of_one_gives_the_plain_gradients(world_of_one):
    x, y = _data()
    reference = _mlp()
    model = _mlp()
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.0001)  # a bucket per parameter or so
    assert len(ddp._buckets) >= 4
    for _ in range(2):  # gradients accumulate across backwards, as without DDP
        ((reference(x) - y) ** 2).mean().backward()
        ((ddp(x) - y) ** 2).mean().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-15, atol=1e-15)
    assert list(ddp.state_dict()) == ["module." + k for k in model.state_dict()]
    assert ddp.communication_seconds > 0


def test_ddp_starts_a_bucket_before_backward_reaches_the_first_layer(world_of_one):
    model = _mlp()
    ddp = DistributedDataParallel(model, bucket_cap_mb=0.0001)
    started = []
    x, y = _data()
    hidden = []
    model[0].register_forward_hook(lambda m, i, out: hidden.append(out))
    loss = ((ddp(x) - y) ** 2).mean()
    hidden[0].register_hook(lambda g: started.append(ddp._next_bucket))
    loss.backward()
    # When the first layer's output gets its gradient, the later layers' buckets have started.
    assert 0 < started[0] < len(ddp._buckets)
    assert ddp._next_bucket == len(ddp._buckets) and not ddp._expecting_backward


def test_no_sync_accumulates_and_unused_parameters_need_find_unused(world_of_one):
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.head_a, self.head_b = nn.Linear(3, 4), nn.Linear(4, 2), nn.Linear(4, 2)

        def forward(self, x, head="a"):
            return (self.head_a if head == "a" else self.head_b)(self.body(x))

    x, _ = _data()
    x = x.float()
    ddp = DistributedDataParallel(TwoHeads())
    with ddp.no_sync():
        ddp(x).sum().backward()
    assert not ddp._expecting_backward
    ddp(x).sum().backward()  # head_b unused: this reduction cannot finish ...
    with pytest.raises(RuntimeError, match="find_unused_parameters=True.*head_b.weight"):
        ddp(x)  # ... which the next forward says
    ddp = DistributedDataParallel(TwoHeads(), find_unused_parameters=True)
    ddp(x, head="b").sum().backward()
    ddp(x, head="b").sum().backward()
    assert ddp.module.head_a.weight.grad is None  # no rank used it: left alone
    assert ddp.module.head_b.weight.grad is not None
    ddp(x)
    with pytest.raises(RuntimeError, match="forward was called again"):
        ddp(x)


def test_ddp_arguments_are_checked(world_of_one):
    with pytest.raises(TypeError, match="nn.Module"):
        DistributedDataParallel(lambda x: x)
    with pytest.raises(ValueError, match="device_ids"):
        DistributedDataParallel(_mlp(), device_ids=[0])
    with pytest.raises(ValueError, match="mixed_precision is not supported"):
        DistributedDataParallel(_mlp(), mixed_precision=object())
    with pytest.raises(ValueError, match="bucket_cap_mb"):
        DistributedDataParallel(_mlp(), bucket_cap_mb=0)
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        DistributedDataParallel(nn.ReLU())
    with pytest.warns(FutureWarning, match="broadcast_buffers"):
        ddp = DistributedDataParallel(_mlp(), broadcast_buffers=False)
    assert ddp.forward_sync_buffers is False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DistributedDataParallel(_mlp()).forward_sync_buffers is True


# ----------------------------------------------------------------------- DistributedSampler


@pytest.mark.parametrize("n, replicas, drop_last", [(12, 3, False), (10, 3, False),
                                                    (10, 3, True), (2, 4, False), (0, 2, False)])
def test_distributed_sampler_shards(n, replicas, drop_last):
    shards = [list(DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop_last))
              for r in range(replicas)]
    lengths = {len(s) for s in shards}
    assert len(lengths) == 1  # every rank as many samples: none waits for the others
    assert lengths == {len(DistributedSampler(range(n), replicas, 0, drop_last=drop_last))}
    every = [i for shard in shards for i in shard]
    if n % replicas == 0:
        assert sorted(every) == list(range(n))  # disjoint, and together the whole dataset
    elif drop_last:
        assert len(set(every)) == len(every) == n - n % replicas
    else:
        assert set(every) == set(range(n)) and len(every) == -(-n // replicas) * replicas


def test_distributed_sampler_reshuffles_per_epoch_the_same_on_every_rank():
    samplers = [DistributedSampler(range(50), 2, r, seed=1) for r in range(2)]
    orders = []
    for epoch in range(3):
        for s in samplers:
            s.set_epoch(epoch)
        shards = [list(s) for s in samplers]
        assert sorted(shards[0] + shards[1]) == list(range(50))
        orders.append(shards[0])
    assert orders[0] != orders[1] != orders[2]
    fresh = DistributedSampler(range(50), 2, 0, seed=1)  # another process, the same order
    assert list(fresh) == orders[0]
    fresh.set_epoch(2)
    assert list(fresh) == orders[2]
    assert list(DistributedSampler(range(50), 2, 0, seed=2)) != orders[0]
    assert list(DistributedSampler(range(7), 2, 1, shuffle=False)) == [1, 3, 5, 0]


def test_distributed_sampler_arguments(world_of_one):
    s = DistributedSampler(range(5))
    assert (s.num_replicas, s.rank, len(s)) == (1, 0, 5) and sorted(s) == list(range(5))
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1"):
        DistributedSampler(range(5), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(5), num_replicas=0, rank=0)


def test_distributed_sampler_matches_pytorch_without_shuffle():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity check skipped")
    from torch.utils.data import DistributedSampler as TorchSampler
    for n, replicas, drop_last in ((10, 3, False), (10, 3, True), (3, 5, False), (16, 4, True)):
        for rank in range(replicas):
            ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            theirs = TorchSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert torch is not None


def test_the_readme_loop_runs_in_a_world_of_one(tmp_path, monkeypatch):
    pytest.importorskip("mpi4py", reason="mpi4py not installed: pip install "
                                         "'minitorch-edu[distributed]'")
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, re.S)
                 if "DistributedSampler(dataset" in b)
    if dist.is_initialized():
        dist.destroy_process_group()
    monkeypatch.chdir(tmp_path)
    namespace = {}
    try:
        exec(compile(block, "README.md:distributed", "exec"), namespace)
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
    saved = minitorch.load(str(tmp_path / "model.safetensors"))
    assert set(saved) == set(namespace["model"].module.state_dict())
    assert float(namespace["loss"].item()) < 2.0
