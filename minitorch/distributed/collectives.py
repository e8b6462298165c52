"""Collectives over the default group, in place on tensors, as ``torch.distributed``'s.

``all_reduce`` (``ReduceOp.SUM``, ``AVG``, ``MAX``, ``MIN``, ``PRODUCT``), ``broadcast``,
``all_gather`` and ``barrier``; each blocks until done, or with ``async_op=True`` returns a handle
whose ``wait()`` does (MPI's non-blocking ``Iallreduce``, ``Ibcast``, ...), so that computation
can go on meanwhile. Every rank must call the same collectives in the same order, as in
PyTorch. A tensor's array is handed to MPI as it is when it is contiguous and writable, else
through a contiguous copy written back at the end; float16 and bfloat16, which MPI cannot add,
are reduced in float32.

May import: numpy, ``minitorch.tensor``, ``.process_group``.
"""
import numpy as np

from ..tensor import Tensor
from .process_group import _group


class ReduceOp:
    """The reductions ``all_reduce`` knows: ``ReduceOp.SUM``, ``AVG``, ``MAX``, ``MIN``,
    ``PRODUCT`` (PyTorch's names; ``AVG`` is the sum divided by the world size, for
    floating-point tensors)."""

    def __init__(self, arg0="SUM"):  # PyTorch's name for the one argument
        op = arg0.op if isinstance(arg0, ReduceOp) else arg0
        if op not in _MPI_OPS:
            raise ValueError(f"ReduceOp: expected a ReduceOp or one of {sorted(_MPI_OPS)}, got "
                             f"{arg0!r}")
        self.op = op

    def __eq__(self, other):
        return isinstance(other, ReduceOp) and other.op == self.op

    def __hash__(self):
        return hash(self.op)

    def __repr__(self):
        return f"ReduceOp.{self.op}"


_MPI_OPS = {"SUM": "SUM", "AVG": "SUM", "MAX": "MAX", "MIN": "MIN", "PRODUCT": "PROD"}
_BOOL_MPI_OPS = {"SUM": "LOR", "MAX": "LOR", "MIN": "LAND", "PRODUCT": "LAND"}
for _name in _MPI_OPS:
    setattr(ReduceOp, _name, ReduceOp(_name))


class _Work:
    """What a collective with ``async_op=True`` returns, as PyTorch's ``Work``: ``wait()``
    blocks until it is done and the tensors hold the result; ``is_completed()`` asks."""

    def __init__(self, request, finish=None):
        self._request, self._finish, self._done = request, finish, False

    def is_completed(self):
        if not self._done and self._request.Test():
            self._complete()
        return self._done

    def wait(self, timeout=None):
        if not self._done:
            self._request.Wait()
            self._complete()
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            self._finish()


def _check_tensor(tensor, name="tensor"):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{name}: expected a minitorch Tensor, got {type(tensor).__name__}")


def _staged(tensor, dtype=None):
    """(array MPI works on, write-back): the tensor's own array when MPI can use it in place,
    else a contiguous copy (of ``dtype`` if given) that write-back copies into the tensor."""
    array = tensor._data
    if (dtype is None or array.dtype == dtype) and array.flags.c_contiguous \
            and array.flags.writeable:
        return array, lambda: None
    staged = np.ascontiguousarray(array, dtype=dtype)
    return staged, lambda: np.copyto(tensor._data, staged, casting="unsafe")


def _changed(tensor):
    """Count a collective's write as an in-place change, for autograd's saved-tensor checks."""
    tensor._version[0] += 1


def _run(start, async_op, finish=None):
    """Start a non-blocking collective; wait for it here unless ``async_op``."""
    request = start()
    work = _Work(request, finish)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce ``tensor`` across the ranks, in place: afterwards every rank holds the sum (or
    the average, maximum, minimum, product) of all the ranks' tensors."""
    world = _group(group)
    _check_tensor(tensor)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"all_reduce: op must be a ReduceOp (e.g. ReduceOp.SUM), got {op!r}")
    kind = tensor._data.dtype
    if op == ReduceOp.AVG and kind.kind != "f" and kind.name != "bfloat16":
        raise TypeError(f"all_reduce: ReduceOp.AVG needs a floating-point tensor, got "
                        f"{tensor.dtype}")
    if kind == np.bool_:
        mpi_op = getattr(world.MPI, _BOOL_MPI_OPS[op.op])
        array, write_back = _staged(tensor, np.uint8)
    else:
        mpi_op = getattr(world.MPI, _MPI_OPS[op.op])
        wide = np.float32 if kind.itemsize == 2 and kind.kind != "i" and kind.kind != "u" else None
        array, write_back = _staged(tensor, wide)

    def finish():
        if op == ReduceOp.AVG:
            np.divide(array, world.size, out=array)
        write_back()
        _changed(tensor)
    return _run(lambda: world.comm.Iallreduce(world.MPI.IN_PLACE, array, mpi_op), async_op,
                finish)


def _src_rank(world, src, group_src, name):
    if src is not None and group_src is not None and src != group_src:
        raise ValueError(f"{name}: give src or group_src, not both")
    root = src if src is not None else group_src
    if root is None:
        raise ValueError(f"{name}: src (the rank that sends) must be given")
    if not isinstance(root, (int, np.integer)) or isinstance(root, bool) \
            or not 0 <= root < world.size:
        raise ValueError(f"{name}: src must be a rank in [0, {world.size - 1}], got {root!r}")
    return int(root)


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copy rank ``src``'s ``tensor`` into every other rank's ``tensor`` (same shape and
    dtype on every rank), in place."""
    world = _group(group)
    _check_tensor(tensor)
    root = _src_rank(world, src, group_src, "broadcast")
    array, write_back = _staged(tensor)
    data = array.reshape(-1).view(np.uint8)  # as bytes: any dtype, bfloat16 included

    def finish():
        write_back()
        _changed(tensor)
    return _run(lambda: world.comm.Ibcast([data, world.MPI.BYTE], root=root), async_op, finish)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Fill ``tensor_list[i]`` with rank ``i``'s ``tensor``, in place, on every rank;
    ``tensor_list`` holds world-size tensors of ``tensor``'s shape and dtype."""
    world = _group(group)
    _check_tensor(tensor)
    if not isinstance(tensor_list, (list, tuple)) or len(tensor_list) != world.size:
        raise ValueError(f"all_gather: tensor_list must be a list of {world.size} tensors (the "
                         f"world size), got {_describe(tensor_list)}")
    for i, out in enumerate(tensor_list):
        _check_tensor(out, f"tensor_list[{i}]")
        if out.shape != tensor.shape or out.dtype != tensor.dtype:
            raise ValueError(f"all_gather: tensor_list[{i}] has shape {tuple(out.shape)} and "
                             f"dtype {out.dtype}; expected those of tensor: "
                             f"{tuple(tensor.shape)}, {tensor.dtype}")
    mine = np.ascontiguousarray(tensor._data).reshape(-1).view(np.uint8)
    gathered = np.empty((world.size, mine.size), np.uint8)

    def finish():
        for out, row in zip(tensor_list, gathered):
            np.copyto(out._data, row.view(tensor._data.dtype).reshape(tensor._data.shape))
            _changed(out)
    return _run(lambda: world.comm.Iallgather([mine, world.MPI.BYTE],
                                              [gathered, world.MPI.BYTE]), async_op, finish)


def _describe(value):
    return f"{len(value)} items" if isinstance(value, (list, tuple)) else type(value).__name__


def barrier(group=None, async_op=False, device_ids=None, timeout=None):
    """Wait until every rank has called ``barrier``."""
    world = _group(group)
    return _run(world.comm.Ibarrier, async_op)
