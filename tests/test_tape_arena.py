"""A captured step's intermediates packed into one arena (backends/tape_arena.py): arrays whose
lives do not overlap share memory, each at its address modulo a cache line; the packed tape
holds less memory and replays as eager mode bit for bit; what Python still holds of the step
stays where the replays write it; the heap the packed tape gave up is given back.
(Not among tests/test_kernels*.py, which run under the sanitizers: their allocator is theirs.)"""
import os
import sys

import numpy as np
import pytest

import minitorch
import minitorch.nn as nn
import minitorch.nn.functional as F

needs_c = pytest.mark.skipif("c" not in minitorch.backends.available,
                             reason="the C extension is not built: no tape to pack")


def _overlap(x, y):
    return x[0] < y[1] and y[0] < x[1]


@needs_c
def test_arrays_whose_lives_do_not_overlap_share_memory_at_their_page_offsets():
    from minitorch.backends import tape_arena
    rng = np.random.default_rng(0)
    backing = np.empty(1 << 20, np.uint8)
    arrays, lives = {}, {}
    for key in range(40):  # views at all offsets in a page, of 4 B to 160 KiB (both alignments)
        start = int(rng.integers(0, 800_000))
        arrays[key] = backing[start:start + int(rng.integers(4, 160 << 10))]
        first = int(rng.integers(0, 30))
        lives[key] = (first, first + int(rng.integers(0, 8)))
    offsets, size = tape_arena._place(lives, arrays)
    spans = {key: (at, at + arrays[key].nbytes) for key, at in offsets.items()}
    for key, (at, end) in spans.items():
        align = tape_arena._alignment(arrays[key])
        assert at % align == tape_arena._address(arrays[key]) % align and end <= size
    shared = 0
    for a in spans:
        for b in spans:
            if a < b and _overlap(spans[a], spans[b]):
                shared += 1
                assert not _overlap((lives[a][0], lives[a][1] + 1), (lives[b][0], lives[b][1] + 1))
    assert shared > 0 and size < 0.6 * sum(a.nbytes for a in arrays.values())


def _step(dropout, kept=None):
    """(train_step, parameters): embeddings, a Transformer encoder layer, cross-entropy, Adam;
    ``kept``: a list the step appends its hidden states to (Python holding an intermediate)."""
    minitorch.manual_seed(0)
    embed = nn.Embedding(30, 16)
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=dropout, batch_first=True)
    head = nn.Linear(16, 30)
    params = [p for m in (embed, layer, head) for p in m.parameters()]
    optimizer = minitorch.optim.Adam(params, lr=1e-2)

    def train_step(ids, targets):
        hidden = layer(embed(ids))
        if kept is not None:
            kept.append(hidden)
        loss = F.cross_entropy(head(hidden).reshape(-1, 30), targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    return train_step, params


def _batches(count):
    rng = np.random.default_rng(1)
    return [(minitorch.tensor(rng.integers(0, 30, (4, 6))),
             minitorch.tensor(rng.integers(0, 30, (4, 6)))) for _ in range(count)]


def _bytes_held(tape):
    """Bytes of memory the tape's arrays cover (each byte once, however many share it)."""
    spans = sorted((a.__array_interface__["data"][0], a.nbytes) for a in tape.owners().values())
    total, reached = 0, 0
    for start, size in spans:
        total += max(0, start + size - max(start, reached))
        reached = max(reached, start + size)
    return total


@needs_c
@pytest.mark.parametrize("dropout", [0.0, 0.2])
def test_a_packed_step_holds_less_memory_and_replays_as_eager(dropout, monkeypatch):
    from minitorch.backends import tape_arena
    eager_step, eager_params = _step(dropout)
    expected = []
    for batch in _batches(6):
        expected.append((eager_step(*batch).item(), [p.data.numpy().copy() for p in eager_params]))
    held = {}
    for packed in (False, True):
        step, params = _step(dropout)
        with monkeypatch.context() as patch:
            if not packed:
                patch.setattr(tape_arena, "pack", lambda tape, lasting: 0)
            captured = minitorch.capture(step)
            # (fresh batches: the replays copy theirs into the recorded call's tensors)
            for index, batch in enumerate(_batches(6)):
                assert captured(*batch).item() == expected[index][0]
                for p, value in zip(params, expected[index][1]):
                    np.testing.assert_array_equal(p.data.numpy(), value)
        held[packed] = _bytes_held(captured.tape)
    assert held[True] < 0.9 * held[False]


@needs_c
def test_an_intermediate_python_holds_stays_where_the_replays_write_it():
    kept, eager_kept = [], []
    step, _ = _step(0.0, kept)
    eager_step, _ = _step(0.0, eager_kept)
    captured = minitorch.capture(step)
    for batch in _batches(6):
        captured(*batch)
        eager_step(*batch)
    assert len(kept) == 3  # the warm-up, the recording, the check: the replays run no Python
    # the recorded call's hidden states, refreshed by every replay since
    np.testing.assert_array_equal(kept[1].detach().numpy(), eager_kept[-1].detach().numpy())


def _resident_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@needs_c
def test_release_freed_heap_gives_freed_heap_pages_back():
    from minitorch.backends import large_buffers
    if not sys.platform.startswith("linux"):
        pytest.skip("glibc's malloc_trim, /proc's resident size")
    if os.environ.get("MINITORCH_MALLOC_TUNING", "").strip() == "0":
        pytest.skip("MINITORCH_MALLOC_TUNING=0: malloc gives freed heap back by itself")
    parts = [np.ones(1 << 20, np.uint8) for _ in range(48)]  # on the heap: under MIN_BYTES each
    keep = np.ones(16, np.uint8)  # (above them: the heap's top stays in use)
    del parts
    before = _resident_bytes()
    if not large_buffers.release_freed_heap():
        pytest.skip("not glibc's malloc, or malloc tuning off: nothing kept to give back")
    assert before - _resident_bytes() > 32 << 20, (before, _resident_bytes())
    assert keep.sum() == 16
