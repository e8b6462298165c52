"""``DistributedDataParallel``: the same model on every rank, each on its own part of the batch,
with gradients averaged across the ranks during backward, as PyTorch's.

How it works (PyTorch's design: Li et al., "PyTorch Distributed", VLDB 2020):

1. At construction rank 0's parameters and buffers are broadcast, so every rank starts from the
   same model, and the parameters that require grad are laid out, last one first (backward
   produces their gradients roughly in that order), in buckets of about ``bucket_cap_mb``:
   one flat array per bucket.
2. During backward, a hook runs as soon as a parameter's gradient is complete
   (``Tensor.register_post_accumulate_grad_hook``) and copies it into its bucket. A full bucket
   is all-reduced with a non-blocking ``Iallreduce`` (buckets in order: every rank must start
   its collectives in the same order) while backward goes on with the earlier layers.
3. When the last bucket has started, the hook waits for all of them and writes each sum divided
   by the world size back into ``.grad``. After ``loss.backward()`` every rank holds the same
   averaged gradient, so ``optimizer.step()`` keeps the models identical.

``no_sync()`` skips the averaging (gradients accumulate locally, and the next synchronised
backward averages the accumulated sums). A parameter that gets no gradient in an iteration is
PyTorch's "unused parameter": with ``find_unused_parameters=True`` the graph is searched after
forward and those parameters contribute zeros (a parameter no rank used keeps its ``.grad``);
without it, the reduction cannot finish and the next forward raises, saying so.

Differs from PyTorch: CPU and MPI only (``device_ids``, ``mixed_precision``, ``device_mesh`` and
the comm-hook options are refused if given); ``communication_seconds`` counts the time this
rank spent in MPI calls (buffer broadcasts, bucket launches, progress tests, the final wait).

May import: numpy, ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.distributed``,
``..module``.
"""
import contextlib
import time
import warnings

import numpy as np

from ...autograd.engine import topological_order
from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...distributed.process_group import _group
from ...tensor import Tensor
from ..module import Module

_NOT_FINISHED = (
    "Expected to have finished reduction in the prior iteration before starting a new one. "
    "This error indicates that your module has parameters that were not used in producing "
    "loss. You can enable unused parameter detection by passing the keyword argument "
    "`find_unused_parameters=True` to `minitorch.nn.parallel.DistributedDataParallel`, and by "
    "making sure all `forward` function outputs participate in calculating loss. "
    "Parameters that did not receive a gradient: {names}")


class _Bucket:
    """Gradients of some parameters, flattened into one array that one Iallreduce sums."""

    def __init__(self, indices, params, dtype):
        self.indices = indices                   # positions in DistributedDataParallel's list
        sizes = [params[i]._data.size for i in indices]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist()
        self.flat = np.zeros(self.offsets[-1], dtype)
        self.waiting = len(indices)              # parameters whose gradient has not come yet
        self.request = None                      # the Iallreduce, once started

    def view(self, slot, shape):
        """The part of the flat array that holds the ``slot``-th parameter's gradient."""
        return self.flat[self.offsets[slot]:self.offsets[slot + 1]].reshape(shape)


class DistributedDataParallel(Module):
    """Wraps ``module`` so that backward averages its gradients across the ranks.

    Call it as the module (``forward`` is the module's); its ``state_dict`` keys start with
    ``module.``, as PyTorch's: save ``ddp.module.state_dict()`` for a checkpoint that a
    single-process model loads. Construct it on every rank, after ``init_process_group``.
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0,
                 broadcast_buffers=None, init_sync=True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False,
                 delay_all_reduce_named_params=None, param_to_hook_all_reduce=None,
                 mixed_precision=None, device_mesh=None, skip_all_reduce_unused_params=False,
                 bucket_cap_mb_list=None, batched_grad_copy=False, forward_sync_buffers=None):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: module must be a minitorch nn.Module, got "
                            f"{type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise ValueError(f"DistributedDataParallel: device_ids and output_device are for GPU "
                             f"modules; a CPU module takes None (got device_ids={device_ids!r}, "
                             f"output_device={output_device!r})")
        for name, value in (("delay_all_reduce_named_params", delay_all_reduce_named_params),
                            ("param_to_hook_all_reduce", param_to_hook_all_reduce),
                            ("mixed_precision", mixed_precision), ("device_mesh", device_mesh),
                            ("bucket_cap_mb_list", bucket_cap_mb_list)):
            if value is not None:
                raise ValueError(f"DistributedDataParallel: {name} is not supported by "
                                 f"minitorch; leave it None (got {value!r})")
        if bucket_cap_mb is not None and not (isinstance(bucket_cap_mb, (int, float))
                                              and bucket_cap_mb > 0):
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be a number > 0, got "
                             f"{bucket_cap_mb!r}")
        if broadcast_buffers is not None:
            warnings.warn("`broadcast_buffers` is deprecated. Use `forward_sync_buffers` "
                          "instead.", FutureWarning, stacklevel=2)
        if check_reduction:
            warnings.warn("The `check_reduction` argument in `DistributedDataParallel` module "
                          "is deprecated. Please avoid using it.", FutureWarning, stacklevel=2)
        self._world = _group(process_group)
        self.module = module
        self.dim = dim
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.forward_sync_buffers = (forward_sync_buffers if forward_sync_buffers is not None
                                     else broadcast_buffers if broadcast_buffers is not None
                                     else True)
        self.bucket_cap_mb = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.communication_seconds = 0.0
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        self._names = [n for n, _ in named]
        self._params = [p for _, p in named]
        self._check_same_model_everywhere()
        if init_sync:
            self._broadcast(list(module.parameters()) + list(module.buffers()))
        self._buckets, self._where = self._make_buckets()
        self._expecting_backward = False   # forward prepared a synchronised backward
        self._ready = [False] * len(self._params)
        self._used_since_sync = [False] * len(self._params)
        self._unused_marked = True
        self._next_bucket = 0               # the next bucket to start, in order
        self._unused_ids = set()
        self._grad_hooks = [p.register_post_accumulate_grad_hook(self._make_hook(i))
                       for i, p in enumerate(self._params)]

    # ------------------------------------------------------------------ construction
    def _check_same_model_everywhere(self):
        """Every rank must wrap the same architecture: compared once, before anything waits on
        a collective that a rank with another model would never start."""
        mine = [(n, tuple(p.shape), str(p.dtype)) for n, p in zip(self._names, self._params)]
        ranks = self._timed(lambda: self._world.comm.allgather(mine))
        for rank, theirs in enumerate(ranks):
            if theirs != mine:
                differ = next((a, b) for a, b in zip(mine + [None] * len(theirs),
                                                      theirs + [None] * len(mine)) if a != b)
                raise RuntimeError(f"DistributedDataParallel: rank {rank} wraps another model "
                                   f"than rank {self._world.rank}: (name, shape, dtype) "
                                   f"{differ[1]} there, {differ[0]} here")

    def _make_buckets(self):
        """Buckets of the parameters, last first, up to bucket_cap_mb each, one dtype each
        (float64 gradients are summed in float64, all others in float32)."""
        cap = self.bucket_cap_mb * 1024 * 1024
        open_buckets, buckets = {}, []
        for i in reversed(range(len(self._params))):
            dtype = np.dtype(np.float64 if self._params[i]._data.dtype == np.float64
                             else np.float32)
            indices, size = open_buckets.get(dtype, ([], 0))
            nbytes = self._params[i]._data.size * dtype.itemsize
            if indices and size + nbytes > cap:
                buckets.append((indices, dtype))
                indices, size = [], 0
            open_buckets[dtype] = (indices + [i], size + nbytes)
        buckets += [(indices, dtype) for dtype, (indices, _) in open_buckets.items()]
        made = [_Bucket(indices, self._params, dtype) for indices, dtype in buckets]
        where = [None] * len(self._params)       # parameter -> (bucket, slot)
        for b, bucket in enumerate(made):
            for slot, i in enumerate(bucket.indices):
                where[i] = (b, slot)
        return made, where

    # ------------------------------------------------------------------ forward
    def forward(self, *inputs, **kwargs):
        if self._expecting_backward:
            self._expecting_backward = False
            if not any(self._ready):
                raise RuntimeError("DistributedDataParallel: forward was called again before a "
                                   "backward of the previous forward's output (with grad "
                                   "enabled, each forward must be followed by one backward; "
                                   "evaluate under minitorch.no_grad())")
            missing = [n for n, ready in zip(self._names, self._ready) if not ready]
            raise RuntimeError(_NOT_FINISHED.format(names=", ".join(missing)))
        if self.forward_sync_buffers and self._world.size > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers)
        output = self.module(*inputs, **kwargs)
        if is_grad_enabled() and self.require_backward_grad_sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output):
        self._expecting_backward = True
        self._ready = [False] * len(self._params)
        self._next_bucket = 0
        for bucket in self._buckets:
            bucket.waiting = len(bucket.indices)
        self._unused_marked = not self.find_unused_parameters
        if self.find_unused_parameters:
            reached = _leaves_reached(output)
            self._unused_ids = {i for i, p in enumerate(self._params) if id(p) not in reached}

    @contextlib.contextmanager
    def no_sync(self):
        """Inside, backward only accumulates each rank's own gradients; the first synchronised
        backward after it averages the accumulated ones (gradient accumulation)."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    # ------------------------------------------------------------------ backward
    def _make_hook(self, index):
        def hook(param):
            self._used_since_sync[index] = True
            if self._expecting_backward:
                self._gradient_ready(index)
        return hook

    def _gradient_ready(self, index):
        if self._ready[index]:
            raise RuntimeError(f"Expected to mark a variable ready only once: parameter "
                               f"{self._names[index]} received a second gradient in this "
                               f"iteration (a second backward through the same forward?)")
        if not self._unused_marked:  # on the first hook, as PyTorch: nothing runs without one
            self._unused_marked = True
            for unused in sorted(self._unused_ids):
                self._mark_ready(unused)
        self._mark_ready(index)
        self._progress()
        if self._next_bucket == len(self._buckets):
            self._finish()

    def _mark_ready(self, index):
        """Copy the parameter's .grad (zeros if it has none) into its bucket; start every
        bucket that is now complete and whose predecessors have started."""
        self._ready[index] = True
        b, slot = self._where[index]
        bucket = self._buckets[b]
        param = self._params[index]
        view = bucket.view(slot, param._data.shape)
        if param.grad is None:
            view[...] = 0
        elif param.grad._data is not view:
            np.copyto(view, param.grad._data, casting="same_kind")
        bucket.waiting -= 1
        world = self._world
        while self._next_bucket < len(self._buckets) and \
                self._buckets[self._next_bucket].waiting == 0:
            started = self._buckets[self._next_bucket]
            started.request = self._timed(lambda: world.comm.Iallreduce(
                world.MPI.IN_PLACE, started.flat, world.MPI.SUM))
            self._next_bucket += 1

    def _progress(self):
        """MPI moves a non-blocking collective's data only inside MPI calls: a test per
        gradient lets the started buckets progress while backward computes."""
        requests = [b.request for b in self._buckets[:self._next_bucket] if b.request is not None]
        if requests:
            self._timed(lambda: self._world.MPI.Request.Testall(requests))

    def _finish(self):
        """Wait for every bucket and write the averages into .grad (end of backward)."""
        world = self._world
        used = None
        if self.find_unused_parameters:  # a parameter no rank used keeps its .grad
            used = np.array(self._used_since_sync, np.int32)
            self._timed(lambda: world.comm.Allreduce(world.MPI.IN_PLACE, used, world.MPI.SUM))
        self._timed(lambda: world.MPI.Request.Waitall([b.request for b in self._buckets]))
        with no_grad():
            for bucket in self._buckets:
                bucket.request = None
                if world.size > 1:
                    bucket.flat *= 1.0 / world.size
                for slot, i in enumerate(bucket.indices):
                    if used is None or used[i]:
                        self._write_grad(self._params[i], bucket.view(slot,
                                                                      self._params[i].shape))
        self._expecting_backward = False
        self._used_since_sync = [False] * len(self._params)

    def _write_grad(self, param, averaged):
        if self.gradient_as_bucket_view and param._data.dtype == averaged.dtype:
            param.grad = Tensor._make(averaged)
        elif param.grad is not None and param.grad._data.flags.writeable \
                and param.grad._data.shape == averaged.shape:
            np.copyto(param.grad._data, averaged, casting="unsafe")
        else:
            param.grad = Tensor._make(averaged.astype(param._data.dtype))

    # ------------------------------------------------------------------ helpers
    def _broadcast(self, tensors):
        """Rank 0's values of ``tensors`` to every rank: one broadcast per dtype."""
        world = self._world
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t._data.dtype, []).append(t)
        for dtype, group in by_dtype.items():
            flat = np.concatenate([t._data.reshape(-1) for t in group]) if world.rank == 0 \
                else np.empty(sum(t._data.size for t in group), dtype)
            as_bytes = flat.view(np.uint8)
            self._timed(lambda: world.comm.Bcast([as_bytes, world.MPI.BYTE], root=0))
            if world.rank != 0:
                start = 0
                for t in group:
                    t._data[...] = flat[start:start + t._data.size].reshape(t._data.shape)
                    t._version[0] += 1
                    start += t._data.size

    def _timed(self, call):
        started = time.perf_counter()
        try:
            return call()
        finally:
            self.communication_seconds += time.perf_counter() - started


def _leaves_reached(output):
    """ids of the leaf tensors the graph of ``output`` (tensors in nested lists, tuples and
    dicts) leads back to: the parameters this forward used."""
    tensors, stack = [], [output]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            tensors.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    reached = {id(t) for t in tensors if t._ctx is None}
    for node in topological_order([t._ctx for t in tensors if t._ctx is not None]):
        for tensor, edge in zip(node.inputs, node.input_edges):
            if edge is None and tensor is not None:
                reached.add(id(tensor))
    return reached
