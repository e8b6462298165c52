"""Memory a captured step's next kernels read, asked for while a GEMM computes (one thread).

A GEMM runs at the FMA units' peak with the memory bus idle; the memory-bound kernels after it
(a residual add, a layer norm, the ReLU mask's backward, the attention) then wait on operands
and fresh outputs last touched a step before. Before each ``mt_gemm`` / ``mt_gemm_bias`` call
of a tape, ``plan_prefetches`` adds an ``mt_ask_ahead`` call (csrc/ask_ahead.c) with the memory
of the calls after it, up to and including the next GEMM, other than the GEMM's own: at most
PREFETCH_BYTES of whole tape arrays, nearest first, 32 of them. The GEMM spreads prefetches of
those lines between its tiles. Not before the weight-gradient products
(``mt_linear_param_grads``), which the prefetches slowed more than they saved after them; and,
by the C side, only on one thread, where it helped.

A prefetch changes no value, so the tape replays the same numbers; capture's check compares it
with eager mode bit for bit all the same (step_capture.py).
"""
from .c_backend import ffi, lib
from .tape_memory import Owners, memory

PREFETCH_BYTES = 2 << 20  # measured best: 4 MiB gained a quarter as much, 1.5 MiB less
MAX_RANGES = 32  # (csrc/ask_ahead.c's MT_AHEAD_MAX)
GEMMS = ("mt_gemm_f32", "mt_gemm_f64", "mt_gemm_bias_f32", "mt_gemm_bias_f64")


def plan_prefetches(tape):
    """Add an ``mt_ask_ahead`` call before each GEMM of ``tape`` (module doc)."""
    owners = Owners(tape)
    used = [memory(call, owners) or set() for call in tape.calls]
    planned = []
    for i, call in enumerate(tape.calls):
        if getattr(call[0], "__name__", "") in GEMMS:
            ranges = _ahead_of(i, tape.calls, used, owners)
            if ranges:
                starts = ffi.new("void *[]", [ffi.cast("void *", start) for start, _ in ranges])
                sizes = ffi.new("int64_t[]", [size for _, size in ranges])
                planned.append((lib.mt_ask_ahead, (starts, sizes, len(ranges)), True))
        planned.append(call)
    tape.calls[:] = planned


def _ahead_of(i, calls, used, owners):
    """(start address, bytes) of the tape arrays the calls after GEMM ``i`` use (module doc)."""
    chosen, total = {}, 0
    for j in range(i + 1, len(calls)):
        for key in used[j] - used[i] - chosen.keys():
            array = owners.arrays.get(key)
            if array is not None and total + array.nbytes <= PREFETCH_BYTES \
                    and len(chosen) < MAX_RANGES:
                chosen[key] = (array.__array_interface__["data"][0], array.nbytes)
                total += array.nbytes
        if getattr(calls[j][0], "__name__", "") in GEMMS or total >= PREFETCH_BYTES:
            break
    return list(chosen.values())
