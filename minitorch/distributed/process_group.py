"""The default process group: the processes ``mpiexec`` started, each knowing its rank.

``init_process_group(backend="mpi")`` joins the job: rank and world size come from MPI (mpi4py),
and a script started without ``mpiexec`` is a world of one, so the same script runs alone.
``get_rank``, ``get_world_size``, ``is_initialized``, ``get_backend`` and
``destroy_process_group`` are PyTorch's. In a world of more than one, a rank that fails ends
the whole job (``MPI.COMM_WORLD.Abort``) instead of leaving the others waiting for it in their
next collective forever (and itself waiting for them in ``MPI_Finalize``): an exception no one
catches (``sys.excepthook``) prints its traceback and aborts, and so does an exit with a
non-zero status through ``sys.exit`` (argparse's errors, ``sys.exit("message")``), which is
noted on the way and acted on at exit. PyTorch's process groups do neither. A clean exit
finalizes MPI as usual: it waits for the ranks still working.

May import: the standard library and, when a group is initialized, mpi4py.
"""
import atexit
import os
import sys
import time
import traceback

_INSTALL_HINT = ("minitorch.distributed runs over MPI and needs mpi4py and an MPI library: "
                 "pip install 'minitorch-edu[distributed]' (mpi4py + mpich, a wheel: no system "
                 "MPI needed)")
_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")

# Variables the launchers set in each rank's environment: MPICH's and Intel MPI's (PMI_*),
# Open MPI's (OMPI_*) and Slurm's srun (PMIX_*).
_LAUNCHER_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")


class _Group:
    """The default group: an MPI communicator of its own (a duplicate of COMM_WORLD, so that a
    user's own mpi4py messages never match minitorch's), its rank and size, and mpi4py's MPI."""

    def __init__(self, mpi):
        self.MPI = mpi
        self.comm = mpi.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()


_default = None       # the _Group once init_process_group has run
_replaced: dict = {}  # sys.excepthook and sys.exit as they were before a world of several
_exit_status = None   # the status sys.exit was last called with, in a world of several
_OUTPUT_DRAIN_SECONDS = 0.5


def is_available():
    """True: this package exists on every installation (``init_process_group`` needs mpi4py)."""
    return True


def is_mpi_available():
    """Whether mpi4py (and so an MPI library) can be imported."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def is_mpiexec_launched():
    """Whether this process was started by ``mpiexec`` (or srun): the launchers' environment
    variables say so without importing MPI. minitorch's own, like PyTorch's
    ``is_torchelastic_launched``: a script may then set up a process group only when it is one
    of several ranks, and run without mpi4py otherwise."""
    return any(name in os.environ for name in _LAUNCHER_VARIABLES)


def _import_mpi():
    try:
        import mpi4py  # noqa: F401  (its absence is the likely error; MPI's is the rarer one)
    except ImportError:
        raise ImportError(_INSTALL_HINT) from None
    try:
        from mpi4py import MPI
    except ImportError as error:  # mpi4py without a loadable MPI library
        raise ImportError(f"{_INSTALL_HINT} ({error})") from None
    return MPI


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None, _ranks=None):
    """Join the job ``mpiexec`` started (or, started alone, a world of one), as PyTorch's.

    ``backend`` is ``"mpi"`` (or None): the only one. ``world_size`` and ``rank``, if given,
    must be what ``mpiexec`` made them; ``init_method``, ``store``, ``pg_options``,
    ``device_id`` (the CPU) and ``_ranks`` must be left out: MPI finds the other processes
    itself. ``timeout`` and ``group_name`` are accepted and unused (MPI collectives wait
    without a time limit). ImportError, saying what to install, without mpi4py.
    """
    global _default
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"init_process_group: backend must be 'mpi' (minitorch's only one), "
                         f"got {backend!r}")
    for name, value in (("init_method", init_method), ("store", store),
                        ("pg_options", pg_options), ("_ranks", _ranks)):
        if value is not None:
            raise ValueError(f"init_process_group: {name} must be None: under MPI, mpiexec "
                             f"starts the ranks and tells each who it is (got {value!r})")
    if device_id is not None and str(device_id) != "cpu":
        raise ValueError(f"init_process_group: device_id: minitorch.distributed runs on the "
                         f"CPU, got {device_id!r}")
    if _default is not None:
        raise ValueError("trying to initialize the default process group twice!")
    group = _Group(_import_mpi())
    for name, given, actual in (("world_size", world_size, group.size), ("rank", rank, group.rank)):
        if given not in (-1, None) and given != actual:
            group.comm.Free()
            raise ValueError(f"init_process_group: {name}={given}, but mpiexec made this "
                             f"process's {name} {actual} (leave {name} out: MPI knows it)")
    _default = group
    if group.size > 1:
        _replaced.update(excepthook=sys.excepthook, exit=sys.exit)
        sys.excepthook, sys.exit = _abort_on_exception, _exit_noting_status
        atexit.register(_abort_on_failed_exit)


def _abort(status, why, traceback_text=""):
    """End every rank of the job now, with exit status ``status``, after saying why (and
    ``traceback_text`` before it) on stderr."""
    group = _default
    sys.stdout.flush()
    sys.stderr.write(f"{traceback_text}minitorch.distributed: rank {group.rank} {why}: aborting "
                     f"the job so that the other ranks do not wait for it\n")
    sys.stderr.flush()
    # mpiexec forwards a rank's output through a proxy that the abort kills: let it pass first.
    time.sleep(_OUTPUT_DRAIN_SECONDS)
    group.MPI.COMM_WORLD.Abort(status)


def _abort_on_exception(kind, value, tb):
    """sys.excepthook in a world of several: the traceback, then the whole job ends."""
    text = "".join(traceback.format_exception(kind, value, tb))
    if _default is None:
        sys.stderr.write(text)
    else:
        _abort(1, f"raised {getattr(kind, '__name__', 'an exception')}", text)


def _exit_noting_status(status=None):
    """sys.exit in a world of several: notes the status for :func:`_abort_on_failed_exit`."""
    global _exit_status
    _exit_status = status
    _replaced["exit"](status)


def _abort_on_failed_exit():
    """At exit (before MPI_Finalize, which would wait for ranks that wait for this one): abort
    the job if sys.exit was given a failure status (a non-zero int, or a message)."""
    if _default is not None and _exit_status not in (None, 0):
        _abort(_exit_status if isinstance(_exit_status, int) else 1,
               f"exits with status {_exit_status!r}")


def _group(group=None):
    """The default group, for a function's ``group`` argument (only the default one exists)."""
    if group is not None and group is not _default:
        raise ValueError(f"group: minitorch.distributed has only the default group; pass None, "
                         f"got {group!r}")
    if _default is None:
        raise ValueError(_NOT_INITIALIZED)
    return _default


def is_initialized():
    """Whether ``init_process_group`` has run (and ``destroy_process_group`` not since)."""
    return _default is not None


def get_rank(group=None):
    """This process's rank, 0 to world size - 1; ValueError before ``init_process_group``."""
    return _group(group).rank


def get_world_size(group=None):
    """How many processes the job has; ValueError before ``init_process_group``."""
    return _group(group).size


def get_backend(group=None):
    """``"mpi"``."""
    _group(group)
    return "mpi"


def destroy_process_group(group=None):
    """Leave the group (collectives fail until ``init_process_group`` runs again); MPI itself
    stays initialized, so the group can be set up again in the same process."""
    global _default
    if _default is None:
        raise ValueError(_NOT_INITIALIZED)
    _group(group).comm.Free()
    _default = None
    if _replaced:
        if sys.excepthook is _abort_on_exception:
            sys.excepthook = _replaced["excepthook"]
        if sys.exit is _exit_noting_status:
            sys.exit = _replaced["exit"]
        _replaced.clear()
        atexit.unregister(_abort_on_failed_exit)
