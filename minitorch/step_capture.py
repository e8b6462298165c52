"""``minitorch.capture(fn)``: record a step's kernel calls once, then replay them without Python.

A training step of a model whose shapes do not change makes the same kernel calls on buffers
of the same sizes every time; what runs between them (building the graph, checking arguments,
allocating) is the same Python every time too. As CUDA graphs and tinygrad's ``TinyJit`` do,
``capture`` records the calls once and afterwards makes only them::

    def train_step(src, tgt_in, tgt_out):
        logits = model(src, tgt_in)
        loss = F.cross_entropy(logits.reshape(-1, vocab), tgt_out.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss                     # tensors only: loss.item() would be one number forever

    step = minitorch.capture(train_step)
    for src, tgt_in, tgt_out in batches:
        loss = step(src, tgt_in, tgt_out)   # the same Tensor object each call, refreshed

The first call runs ``fn`` while a throw-away tape records it (backends/tape.py), to learn
which arrays outlive a step: the parameters, the optimizer's state (it makes that state now).
The second records the tape: every C kernel call with its pointers, the numpy calls ops make
through ``tapes.record``/``computed``, and host callbacks for what a replay must redo in Python
(the optimizer's update, whose step sizes change each step; a dropout mask from the next seed).
An update that can be split runs a parameter at a time, each right after the backward is done
with that parameter (backends/update_schedule.py), each GEMM asks for the memory the kernels
after it read (backends/tape_prefetch.py), and the step's intermediates are packed into one
arena, those whose lives do not overlap in the same memory (backends/tape_arena.py). The third
checks the tape: ``fn`` runs eagerly, then those lasting arrays and the callbacks' Python state
are put back as they were, every other array of the tape is poisoned (NaN; a bool, flipped),
the tape is replayed on the third call's inputs, and the parameters, optimizer state and
results must equal eager mode's bit for bit; otherwise ``fn`` computed something no tape sees
(numpy arithmetic outside minitorch's ops, a Python number computed from data) and
``RuntimeError`` says so, the state left as eager mode's. From the fourth call on, the new
inputs are copied into the captured ones and the tape is replayed. The captured inputs are
the capture's own copies of the second call's, so that no replay writes into a caller's
tensor (a list of batches that the next epoch reuses, a view of a dataset). The tape's
memory, read all through every step, is then moved onto 2 MiB pages
(large_buffers.collapse_huge_pages).

What a captured ``fn`` must be, as a CUDA graph's: the same shapes and dtypes each call
(ValueError otherwise; ``capture(fn, max_shapes=k)`` keeps a recording per shape instead),
Tensors (or numbers that do not change) as arguments, read but not changed in place
(RuntimeError), Tensors as results, no Python control flow on values it computes. The tape
keeps the step's intermediates between calls (packed): more memory than eager mode, which
frees them as backward goes, and while it records, each in memory of its own. With the numpy
backend there are no kernels to replay: every call runs ``fn`` as it is.
"""
import numpy as np

from . import backends
from .backends import tape as tapes
from .tensor import Tensor


class CapturedStep:
    """``fn``, recorded on its second call, checked on its third, replayed from the fourth."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"capture: expected a callable, got {type(fn).__name__}")
        self.fn = fn
        self.calls = 0
        self.tape = None     # the recorded step, once checked
        self.inputs = None   # the recorded call's arguments (Tensors refreshed on replay)
        self.outputs = None  # its results, refreshed by each replay
        self._recorded = None  # the second call's (tape, arguments, results), until checked
        self._lasting = None   # the warm-up's arrays: those a step leaves behind are among them

    def __call__(self, *args):
        self.calls += 1
        if backends.backend() != "c":
            return self.fn(*args)
        if self.tape is not None:
            self._copy_inputs(args)
            self.tape.replay()
            return self.outputs
        if self.calls == 1:
            tape, _, outputs = self._record(args)
            self._lasting = tape.owners()
            return outputs
        if self.calls == 2:
            self._recorded = self._record(_own_copies(args))
            tape = self._recorded[0]
            from .backends import tape_arena, tape_prefetch, update_schedule  # (C is built)
            update_schedule.schedule_updates(tape)
            tape_prefetch.plan_prefetches(tape)
            # the arrays both calls touched: the parameters, the optimizer's state, constants
            # (the warm-up's arrays stay alive until now, so no new array can take an id)
            self._lasting = [a for key, a in tape.owners().items() if key in self._lasting]
            tape_arena.pack(tape, self._lasting)
            return self._recorded[2]
        outputs = self._check(args)
        self.tape, self.inputs, self.outputs = self._recorded
        self._recorded = self._lasting = None
        from .backends import large_buffers  # the C backend's (a tape means it is built)
        large_buffers.collapse_huge_pages(self.tape.owners().values())
        return outputs

    def _record(self, args):
        tape = tapes.Tape()
        versions = [a._version[0] if isinstance(a, Tensor) else None for a in args]
        with tapes.recording_into(tape):
            outputs = self.fn(*args)
        _check_outputs(outputs)
        changed = [i for i, (a, version) in enumerate(zip(args, versions))
                   if version is not None and a._version[0] != version]
        if changed:
            raise RuntimeError(
                f"capture: the step changes argument(s) {changed} in place: a replay reads "
                "its arguments, it cannot write back into the caller's tensors")
        owners = tape.owners()
        missing = [i for i, a in enumerate(args)
                   if isinstance(a, Tensor) and id(_owner(a._data)) not in owners]
        if missing:
            raise RuntimeError(
                f"capture: argument(s) {missing} reach no recorded kernel as they are (an op "
                "copied or converted them with numpy first): a replay would not see new values")
        return tape, args, outputs

    def _check(self, args):
        """Run ``fn`` eagerly on ``args``, then replay the tape from the same state: equal, bit
        for bit, in every array that outlives a step and in the results? Eager mode's state
        is left in place either way."""
        tape, recorded_args, recorded_outputs = self._recorded
        lasting = [a for a in self._lasting if a.flags.writeable]
        before = [a.copy() for a in lasting], [c.save() for c in tape.host_states]
        outputs = self.fn(*args)
        _check_outputs(outputs)
        eager = [a.copy() for a in lasting], [c.save() for c in tape.host_states]
        _put_back(lasting, tape.host_states, before)
        _poison(tape, self._lasting)
        self._copy_inputs(args, into=recorded_args)
        tape.replay()
        differ = sum(not np.array_equal(a, b, equal_nan=True) for a, b in zip(lasting, eager[0]))
        differ += sum(not np.array_equal(a._data, b._data, equal_nan=True)
                      for a, b in zip(_flat(recorded_outputs), _flat(outputs)))
        _put_back(lasting, tape.host_states, eager)
        if differ:
            raise RuntimeError(
                f"capture: replaying the recorded step differs from eager mode in {differ} "
                "array(s): the step computes something the tape does not record (numpy "
                "arithmetic outside minitorch's ops, a Python number that changes from step "
                "to step). Run it uncaptured.")
        for callback in tape.host_states:  # Python's references back on the tape's arrays
            callback.adopt()
        return recorded_outputs

    def _copy_inputs(self, args, into=None):
        into = self.inputs if into is None else into
        if len(args) != len(into):
            raise ValueError(f"capture: the step was captured with {len(into)} arguments, "
                             f"called with {len(args)}")
        for i, (new, old) in enumerate(zip(args, into)):
            if isinstance(old, Tensor):
                if not isinstance(new, Tensor) or new.shape != old.shape \
                        or new.dtype != old.dtype:
                    raise ValueError(
                        f"capture: argument {i} was a {old.dtype} tensor of shape "
                        f"{tuple(old.shape)} when captured; got {_describe(new)}")
                if new is not old:
                    old._data[...] = new._data
            elif not (new is old or new == old):
                raise ValueError(f"capture: argument {i} was {old!r} when captured; got {new!r} "
                                 "(a replay cannot see a new Python value)")


def _own_copies(args):
    """The Tensor arguments copied into tensors of the capture's own, for the recording: each
    replay copies its arguments into those, never into the caller's tensors (a list of batches
    reused in the next epoch, a view of a dataset)."""
    return tuple(Tensor._make(np.copy(a._data, order="K"), a.requires_grad)
                 if isinstance(a, Tensor) else a for a in args)


def _poison(tape, lasting):
    """NaN in every float array the step made, every bool array flipped: a value the replay
    reads before a recorded call has written it (one some numpy work outside the tape made: a
    mask computed from the inputs, a zero fill) then shows in the results."""
    keep = {id(a) for a in lasting}
    for key, array in tape.owners().items():
        if key in keep or not array.flags.writeable:
            continue
        if array.dtype.kind == "f":
            array.fill(np.nan)
        elif array.dtype.kind == "b":
            np.logical_not(array, out=array)


def _put_back(arrays, callbacks, saved):
    values, python = saved
    for array, value in zip(arrays, values):
        array[...] = value
    for callback, value in zip(callbacks, python):
        callback.restore(value)


def capture(fn, max_shapes=1):
    """``fn`` recorded on its second call and replayed from its fourth (see this module).
    ``max_shapes`` above 1: a recording of its own for each signature of the arguments (their
    shapes and dtypes, and the Python values among them), the ``max_shapes`` used most recently
    kept (each holds its step's intermediates): batches of a few shapes, such as an epoch's
    shorter last batch."""
    if not callable(fn):
        raise TypeError(f"capture: expected a callable, got {type(fn).__name__}")
    if isinstance(max_shapes, bool) or not isinstance(max_shapes, int) or max_shapes < 1:
        raise ValueError(f"capture: max_shapes must be an int >= 1, got {max_shapes!r}")
    return CapturedStep(fn) if max_shapes == 1 else CapturedShapes(fn, max_shapes)


class CapturedShapes:
    """``fn`` captured once per signature of its arguments, least recently used dropped."""

    def __init__(self, fn, max_shapes):
        self.fn, self.max_shapes = fn, max_shapes
        self.steps = {}  # signature -> CapturedStep, least recently used first
        self._last = None

    @property
    def tape(self):
        """The tape of the signature called last (None until it is checked)."""
        return None if self._last is None else self._last.tape

    def __call__(self, *args):
        key = tuple(_signature(a) for a in args)
        step = self.steps.pop(key, None) or CapturedStep(self.fn)
        self.steps[key] = step
        if len(self.steps) > self.max_shapes:
            del self.steps[next(iter(self.steps))]
        if step is not self._last and step.tape is not None:
            # Python's references (a parameter's .grad) back on this recording's arrays: the
            # other signature's replays left them on its own
            for callback in step.tape.host_states:
                callback.adopt()
        self._last = step
        return step(*args)


def _signature(value):
    if isinstance(value, Tensor):
        return "tensor", tuple(value.shape), value.dtype
    try:
        hash(value)
    except TypeError:
        return "object", id(value)
    return type(value), value


def _owner(array):
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def _flat(outputs):
    return [outputs] if isinstance(outputs, Tensor) else [o for o in outputs if o is not None]


def _check_outputs(outputs):
    if isinstance(outputs, Tensor) or outputs is None:
        return
    if isinstance(outputs, (tuple, list)) and all(o is None or isinstance(o, Tensor)
                                                  for o in outputs):
        return
    raise TypeError("capture: the step must return Tensors (or a tuple of them, or None), got "
                    f"{type(outputs).__name__}: a replay refreshes tensors, not Python values")


def _describe(value):
    if isinstance(value, Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return repr(value)
