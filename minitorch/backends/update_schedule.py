"""Where a captured step's optimizer update runs: each parameter's right after the backward's
last kernel on it.

In eager mode the update comes after the whole backward pass, so it reads every parameter,
gradient and moment back from memory: the backward wrote the first gradients long before. A
tape can do better. An optimizer that can split its update into one kernel call per parameter
(``Optimizer._split_update``; Adam's can) has each call moved up to just after the last call
of the step that reads or writes that parameter, its gradient or its moments, while the
gradient (just written) and the weight (just read by the input gradient's product) are in the
cache. A ``prepare`` callback, the update's Python part (step counts, step sizes), runs before
the first of them, and a ``finish`` callback stays where the update was.

The calls say what memory they use (tape_memory.py); a call that does not say (a host callback
without ``arrays()``, a kernel given a list of pointers) is a barrier: no update moves above
it. Moving a call never changes a value, since nothing between its old and
new place touches its memory; capture's check compares the replay with eager mode bit for bit
all the same (step_capture.py).
"""
from .tape_memory import UNKNOWN, Owners, memory


def schedule_updates(tape):
    """Split each update of ``tape`` that can be split and move its parts up (module doc)."""
    updates = [call for call in tape.calls if hasattr(call[0], "split")]
    for call in updates:
        parts = call[0].split()
        if parts is not None:
            _place(tape, next(i for i, c in enumerate(tape.calls) if c is call), *parts)


def _place(tape, where, prepare, updates, finish):
    owners = Owners(tape)
    used = [memory(call, owners) for call in tape.calls[:where]]
    after = {}  # index of a call -> the updates that go right after it (-1: first of all)
    for arrays, update in updates:
        mine = {owners.of_array(a) for a in arrays}
        last = max((i for i, touched in enumerate(used)
                    if touched is UNKNOWN or touched & mine), default=-1)
        after.setdefault(last, []).append(update)
    first = min(after)
    after[first].insert(0, (prepare, (), False))
    calls = after.get(-1, [])
    for i, call in enumerate(tape.calls):
        calls.append((finish, (), False) if i == where else call)
        if i < where:
            calls += after.get(i, [])
    tape.calls[:] = calls
