"""``minitorch.distributed``: data-parallel training over MPI, as ``torch.distributed``.

Each process of a job (started by ``mpiexec -n N python script.py``) is a *rank*; the ranks
compute on their own data and meet in *collectives*, which every rank calls in the same order:

- ``process_group.py``: ``init_process_group(backend="mpi")`` (a world of one when the script
  is started alone), ``get_rank``, ``get_world_size``, ``is_initialized``,
  ``destroy_process_group``, ``is_mpiexec_launched`` (minitorch's own)
- ``collectives.py``: ``all_reduce`` (``ReduceOp.SUM``/``AVG``/``MAX``/...), ``broadcast``,
  ``all_gather``, ``barrier``, each blocking or, with ``async_op=True``, non-blocking

``nn.parallel.DistributedDataParallel`` builds on them (gradients averaged during backward), and
``utils.data.DistributedSampler`` gives each rank its shard of a dataset::

    dist.init_process_group("mpi")
    model = nn.parallel.DistributedDataParallel(model)
    sampler = DistributedSampler(dataset)   # then DataLoader(dataset, sampler=sampler)

The backend is MPI through mpi4py, which ``pip install 'minitorch-edu[distributed]'`` installs
with MPICH (a wheel: no system MPI). This package imports without them; ``init_process_group``
then says what to install.

May import: numpy, ``minitorch.tensor``, mpi4py (optional).
"""
from .collectives import ReduceOp, all_gather, all_reduce, barrier, broadcast
from .process_group import (destroy_process_group, get_backend, get_rank, get_world_size,
                            init_process_group, is_available, is_initialized, is_mpi_available,
                            is_mpiexec_launched)

__all__ = ["init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "is_mpi_available", "is_mpiexec_launched", "get_rank", "get_world_size",
           "get_backend", "ReduceOp", "all_reduce", "broadcast", "all_gather", "barrier"]
