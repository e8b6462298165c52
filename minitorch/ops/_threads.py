"""numpy work split across the threads ``set_num_threads`` allows, for the ops that have no C
kernel of their own: ``in_chunks(fn, out, *inputs)`` runs ``fn(out_part, *input_parts)`` on
slices of dim 0, one per thread, in a pool of Python threads. numpy's loops release the GIL, so
the slices run at once on the cores, as the C kernels' OpenMP threads do; below
``MIN_ELEMENTS`` (or on one thread) ``fn`` runs once on the whole arrays, since handing work to
a thread costs tens of microseconds.
May import: ``minitorch.backends``.
"""
import concurrent.futures
import threading

from .. import backends

MIN_ELEMENTS = 1 << 16
_pool, _pool_workers = None, 0
_pool_lock = threading.Lock()


def _executor(workers):
    """A pool of at least ``workers`` threads, made on first use (and again if more are asked)."""
    global _pool, _pool_workers
    with _pool_lock:
        if _pool_workers < workers:
            _pool = concurrent.futures.ThreadPoolExecutor(workers, "minitorch-numpy")
            _pool_workers = workers
        return _pool


def in_chunks(fn, out, *inputs):
    """``fn(out, *inputs)``, each array sliced along dim 0 into one part per thread (``out``
    and every input must have the same length along dim 0); returns ``out``."""
    threads = backends.current().get_num_threads()
    if threads < 2 or out.ndim == 0 or out.size < MIN_ELEMENTS or out.shape[0] < 2:
        fn(out, *inputs)
        return out
    parts = min(threads, out.shape[0])
    bounds = [out.shape[0] * i // parts for i in range(parts + 1)]
    pieces = [slice(bounds[i], bounds[i + 1]) for i in range(parts)]
    futures = [_executor(parts - 1).submit(fn, out[s], *[a[s] for a in inputs])
               for s in pieces[1:]]
    fn(out[pieces[0]], *[a[pieces[0]] for a in inputs])  # this thread takes the first part
    for future in futures:
        future.result()
    return out
