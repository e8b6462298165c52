"""A captured step's optimizer update a parameter at a time (backends/update_schedule.py): each
update right after the step's last call on its parameter, gradient or moments, never above a
call whose memory is unknown, and the whole update back in place where it cannot be split or
the optimizer's state was replaced; every replay equal to eager mode bit for bit."""
import numpy as np
import pytest

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.backends import tape as tapes

needs_c = pytest.mark.skipif("c" not in minitorch.backends.available,
                             reason="the C extension is not built: no kernels to capture")


def _model_and_step(optimizer_class=minitorch.optim.Adam, dtypes=None, **options):
    minitorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 3))
    if dtypes:
        for p, dtype in zip(model.parameters(), dtypes):
            p.data = p.data.to(dtype)
    optimizer = optimizer_class(model.parameters(), lr=1e-2, **options)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    return model, optimizer, step


def _batches(count=8):
    rng = np.random.default_rng(0)
    return [(minitorch.tensor(rng.standard_normal((10, 6)).astype(np.float32)),
             minitorch.tensor(rng.integers(0, 3, 10))) for _ in range(count)]


def _names(tape):
    return [getattr(f, "__name__", type(f).__name__) for f, _, _ in tape.calls]


def _train_both(make, batches, between=None):
    """Eager and captured copies trained on ``batches``; ``between(i, optimizer)`` after step
    i on both. Asserts equal losses and parameters after every step; returns the capture."""
    eager_model, eager_opt, eager_step = make()
    model, opt, step = make()
    captured = minitorch.capture(step)
    for i, batch in enumerate(batches):
        assert captured(*batch).item() == eager_step(*batch).item(), f"step {i}"
        for p, q in zip(model.parameters(), eager_model.parameters()):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), f"step {i}")
        if between:
            between(i, opt)
            between(i, eager_opt)
    return captured


def _pointed_owners(args, owners):
    """The tape arrays an Adam call's parameter, gradient and moments lie in."""
    from minitorch.backends.c_backend import ffi
    return {owners.of_address(int(ffi.cast("uintptr_t", args[k][0]))) for k in range(1, 5)}


@needs_c
@pytest.mark.parametrize("options", [{}, dict(amsgrad=True, weight_decay=0.1, maximize=True)])
def test_adam_updates_each_parameter_right_after_the_last_call_on_it(options):
    from minitorch.backends.tape_memory import UNKNOWN, Owners, memory
    make = lambda: _model_and_step(minitorch.optim.AdamW, **options)  # noqa: E731
    tape = _train_both(make, _batches()).tape
    names = _names(tape)
    updates = [i for i, name in enumerate(names) if name.startswith("mt_adam_step")]
    finish = names.index("finish")
    assert len(updates) == 6  # one per parameter
    assert names.index("prepare_if_current") == updates[0] - 1
    # interleaved with the backward: a product runs after the first update
    assert any(name.startswith("mt_gemm") for name in names[updates[0]:finish])
    owners = Owners(tape)
    for i in updates:
        mine = _pointed_owners(tape.calls[i][1], owners)
        assert None not in mine
        before = i - 1
        while names[before].startswith(("mt_adam_step", "prepare_if_current", "mt_ask_ahead")):
            before -= 1
        touched = memory(tape.calls[before], owners)
        assert touched is UNKNOWN or touched & mine, "it could have run earlier"
        for call, name in zip(tape.calls[i + 1:finish], names[i + 1:finish]):
            if not name.startswith(("mt_adam_step", "mt_ask_ahead")):  # (another parameter's;
                # a prefetch, tape_prefetch.py)
                touched = memory(call, owners)
                assert touched is not UNKNOWN and not touched & mine, "a later call touches it"


@needs_c
def test_an_update_that_cannot_be_split_runs_whole_after_the_backward():
    """SGD has no split update; Adam's over parameters of two dtypes is not split either."""
    for make in (lambda: _model_and_step(minitorch.optim.SGD, momentum=0.9),
                 lambda: _model_and_step(dtypes=[minitorch.float32] * 3 + [minitorch.float64])):
        names = _names(_train_both(make, _batches(5)).tape)
        assert names[-1] == "_GroupUpdate" and "finish" not in names
        assert not any(name.startswith("mt_adam_step") for name in names)


@needs_c
def test_an_optimizer_state_loaded_after_the_capture_is_updated_whole():
    """load_state_dict replaces the moments the split calls point at: the replays then make
    the whole update where it was, on the new state, as eager mode does."""
    saved = {}

    def between(i, optimizer):
        if i == 3:
            saved[id(optimizer)] = optimizer.state_dict()
        if i == 5:
            optimizer.load_state_dict(saved[id(optimizer)])
    tape = _train_both(_model_and_step, _batches(9), between).tape
    stood_down = [args[0] == 0 for f, args, _ in tape.calls
                  if getattr(f, "__name__", "").startswith("mt_adam_step")]
    assert len(stood_down) == 6 and all(stood_down)


@needs_c
def test_no_update_moves_above_a_call_whose_memory_is_unknown():
    """A hand-made tape: a kernel writes the gradient, a host callback that lists no arrays
    follows, then a kernel on other memory. The update goes after the callback; without it,
    right after the gradient's kernel."""
    from minitorch.backends import update_schedule
    from minitorch.backends.c_backend import ffi
    param, grad, other = (np.zeros(4, np.float32) for _ in range(3))
    ran = []

    def kernel(*pointers):
        ran.append("kernel")
        return 0

    def opaque():
        ran.append("opaque")

    class Update:
        def split(self):
            call = (lambda: ran.append("update") or 0, (), True)
            return (lambda: ran.append("prepare"), [([param, grad], call)],
                    lambda: ran.append("finish"))

    for with_barrier in (True, False):
        tape = tapes.Tape()
        for array in (param, grad, other):
            tape.hold(array)
        pointer = lambda a: ffi.from_buffer("float[]", a)  # noqa: E731
        tape.calls = [(kernel, (pointer(param), pointer(grad)), True)]
        tape.calls += [(opaque, (), False)] if with_barrier else []
        tape.calls += [(kernel, (pointer(other),), True), (Update(), (), False)]
        update_schedule.schedule_updates(tape)
        ran.clear()
        tape.replay()
        expected = ["kernel", "opaque", "prepare", "update", "kernel", "finish"] if with_barrier \
            else ["kernel", "prepare", "update", "kernel", "finish"]
        assert ran == expected
