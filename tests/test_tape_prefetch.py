"""Memory asked for ahead while a captured step's GEMMs run (backends/tape_prefetch.py and
csrc/ask_ahead.c): where the plan puts its calls and what it asks for, that a GEMM given
ranges computes the same values, on one thread and on two (where they are dropped), and that
bad ranges are an error status, never a crash."""
import numpy as np
import pytest

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F
from test_kernels import C, c_threads, needs_c


def _transformer_step():
    minitorch.manual_seed(0)
    model = nn.Transformer(32, 2, 1, 1, 64, dropout=0.0, batch_first=True)
    embed, head = nn.Embedding(50, 32), nn.Linear(32, 50)
    params = [p for m in (model, embed, head) for p in m.parameters()]
    optimizer = minitorch.optim.Adam(params, lr=1e-2)

    def step(src, tgt):
        loss = F.cross_entropy(head(model(embed(src), embed(tgt))).reshape(-1, 50),
                               tgt.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    return step, params


def _batches(count=6):
    rng = np.random.default_rng(0)
    return [(minitorch.tensor(rng.integers(0, 50, (4, 8))),
             minitorch.tensor(rng.integers(0, 50, (4, 8)))) for _ in range(count)]


def _name(call):
    return getattr(call[0], "__name__", type(call[0]).__name__)


@needs_c
@pytest.mark.parametrize("n_threads", [1, 2])
def test_each_gemm_asks_for_what_follows_it_and_replays_as_eager(n_threads, monkeypatch):
    from minitorch.backends import tape_arena, tape_prefetch
    from minitorch.backends.tape_memory import Owners, memory
    # an address names one array only while the arena does not share memory between arrays
    monkeypatch.setattr(tape_arena, "pack", lambda tape, lasting: 0)
    with c_threads(n_threads):
        eager_step, eager_params = _transformer_step()
        step, params = _transformer_step()
        captured = minitorch.capture(step)
        for batch in _batches():
            assert captured(*batch).item() == eager_step(*batch).item()
        for p, q in zip(params, eager_params):
            np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    calls = captured.tape.calls
    owners = Owners(captured.tape)
    asks = [i for i, call in enumerate(calls) if _name(call) == "mt_ask_ahead"]
    gemms = [i for i, call in enumerate(calls) if _name(call) in tape_prefetch.GEMMS]
    assert asks and all(_name(calls[i + 1]) in tape_prefetch.GEMMS for i in asks)
    assert len(asks) >= len(gemms) - 2  # (a GEMM with nothing new after it asks for nothing)
    assert not any(_name(calls[i - 1]) == "mt_ask_ahead" for i, call in enumerate(calls)
                   if _name(call).startswith("mt_linear_param_grads"))
    for i in asks:
        starts, sizes, count = calls[i][1]
        ranges = [(int(C.ffi.cast("uintptr_t", starts[r])), sizes[r]) for r in range(count)]
        assert 0 < count <= tape_prefetch.MAX_RANGES
        assert sum(size for _, size in ranges) <= tape_prefetch.PREFETCH_BYTES
        asked = {owners.of_address(start) for start, _ in ranges}
        assert None not in asked and not asked & memory(calls[i + 1], owners)
        later = set().union(*(memory(call, owners) or set() for call in calls[i + 2:]))
        assert asked <= later  # memory a later call uses


@needs_c
@pytest.mark.parametrize("n_threads", [1, 2])
def test_a_gemm_given_ranges_ahead_computes_the_same_values(n_threads):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((300, 200)), rng.standard_normal((200, 170))
    ahead = [rng.standard_normal(5000) for _ in range(3)]
    starts = C.ffi.new("void *[]", [C.ffi.cast("void *", C.ffi.from_buffer(x)) for x in ahead])
    sizes = C.ffi.new("int64_t[]", [x.nbytes for x in ahead])
    with c_threads(n_threads, C.best_isa()):
        plain = C.matmul(a, b)
        assert C.lib.mt_ask_ahead(starts, sizes, 3) == 0
        np.testing.assert_array_equal(C.matmul(a, b), plain)
        assert C.lib.mt_ask_ahead(starts, sizes, 0) == 0


@needs_c
def test_bad_ranges_are_an_error_status():
    x = np.zeros(16)
    starts = C.ffi.new("void *[]", [C.ffi.cast("void *", C.ffi.from_buffer(x))] * 33)
    sizes = C.ffi.new("int64_t[]", [x.nbytes] * 33)
    assert C.lib.mt_ask_ahead(starts, sizes, 33) != 0  # more than 32 ranges
    assert C.lib.mt_ask_ahead(starts, sizes, -1) != 0
    assert C.lib.mt_ask_ahead(C.ffi.NULL, sizes, 2) != 0
    sizes[0] = -8
    assert C.lib.mt_ask_ahead(starts, sizes, 2) != 0
    starts[0], sizes[0] = C.ffi.NULL, 8
    assert C.lib.mt_ask_ahead(starts, sizes, 1) != 0
    sizes[0] = 0  # an empty range may be NULL
    assert C.lib.mt_ask_ahead(starts, sizes, 1) == 0
