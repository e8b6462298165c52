"""The reused blocks behind the C backend's large outputs (minitorch/backends/large_buffers.py).

- An output is a normal array: C-contiguous, writable, 64-byte aligned, of the asked shape/dtype.
- A block goes back for reuse only when the last view of its array is gone, and is reused then.
- Idle blocks stay under MAX_IDLE_BYTES; empty_cache frees them; small outputs are np.empty's.
- Threads allocating and dropping outputs at once never get the same block while it is alive.
- Every C kernel that returns a large output fills all of it, at every ISA level: run on blocks
  left full of NaN by a previous array, they still equal the numpy reference.
- collapse_huge_pages advises the whole 2 MiB pages around each array, within its anonymous
  mapping (never a file's), unless huge pages are off, and the data stays as it was.
Sizes are kept small by lowering MIN_BYTES (the real threshold is 32 MiB).
"""
import threading

import numpy as np
import pytest

from minitorch.backends import numpy_backend as N

try:
    from minitorch.backends import c_backend as C
    from minitorch.backends import large_buffers as LB
except ImportError:  # extension not built
    C = LB = None

pytestmark = pytest.mark.skipif(C is None, reason="C extension not built")


@pytest.fixture
def small_threshold(monkeypatch):
    """Blocks for outputs of 4 KiB and up, and an empty idle list before and after."""
    monkeypatch.setattr(LB, "MIN_BYTES", 4096)
    LB.empty_cache()
    yield
    LB.empty_cache()


def address(a):
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_output_is_an_ordinary_aligned_array(small_threshold, dtype):
    a = LB.empty((3, 1000), np.dtype(dtype))
    assert a.shape == (3, 1000) and a.dtype == dtype
    assert a.flags.c_contiguous and a.flags.writeable and a.flags.aligned
    assert address(a) % 64 == 0
    assert address(a) % 4096 == LB._PLACE  # below numpy's large arrays modulo 4096
    a[...] = 7
    assert float(a.sum()) == 7 * 3000


def test_block_returns_when_the_last_view_goes_and_is_reused(small_threshold):
    a = LB.empty((1000, 10), np.dtype(np.float64))
    first = address(a)
    view = a[5:, 2]
    del a
    assert LB.idle_bytes() == 0  # the view still uses the block
    b = LB.empty((1000, 10), np.dtype(np.float64))
    assert address(b) != first
    del view
    assert LB.idle_bytes() > 0
    c = LB.empty((10, 1000), np.dtype(np.float64))  # same size, other shape: same block
    assert address(c) == first and LB.idle_bytes() == 0
    del b, c


def test_small_outputs_are_plain_numpy_arrays(small_threshold):
    a = LB.empty((10,), np.dtype(np.float32))
    assert a.flags.owndata
    del a
    assert LB.idle_bytes() == 0


def test_idle_blocks_are_capped_and_freed(small_threshold, monkeypatch):
    monkeypatch.setattr(LB, "MAX_IDLE_BYTES", 3 << 20)
    arrays = [LB.empty((1 << 20,), np.dtype(np.uint8)) for _ in range(5)]
    del arrays
    assert 0 < LB.idle_bytes() <= 3 << 20
    LB.empty_cache()
    assert LB.idle_bytes() == 0


def test_threads_never_share_a_live_block(small_threshold):
    errors = []

    def work():
        try:
            for i in range(300):
                live = [LB.empty((512 + 512 * (i % 3),), np.dtype(np.float64)) for _ in range(4)]
                for k, a in enumerate(live):
                    a[...] = threading.get_ident() + k
                for k, a in enumerate(live):
                    assert np.all(a == threading.get_ident() + k)
        except AssertionError as exc:  # pragma: no cover - the failure being tested for
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _dirty_blocks(shape, dtype):
    """Leave two idle blocks full of NaN, of the size a kernel will ask for; their addresses."""
    blocks = [LB.empty(shape, np.dtype(dtype)) for _ in range(2)]
    for block in blocks:
        block.fill(np.nan)
    return {address(block) for block in blocks}


@pytest.mark.parametrize("isa", [] if C is None else C.ISA_LEVELS[:C.ISA_LEVELS.index(C.best_isa()) + 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernels_fill_reused_blocks_completely(small_threshold, dtype, isa):
    rng = np.random.default_rng(0)
    tol = dict(rtol=3e-5, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
    x = rng.standard_normal((4, 6, 33, 40)).astype(dtype)
    dy = rng.standard_normal(x.shape).astype(dtype)
    mask = np.zeros((4, 1, 1, 40), bool)
    mask[..., 30:] = True
    mask[0] = True  # fully masked rows: zeros
    w, b = rng.standard_normal(40).astype(dtype), rng.standard_normal(40).astype(dtype)
    target = rng.integers(0, 40, 4 * 6 * 33)
    target[::5] = -100  # ignored rows: zero gradient
    logits = x.reshape(-1, 40)
    lse = N.cross_entropy_forward(logits, target)[1]
    one = np.ones((), dtype)
    a, bm = x.reshape(-1, 40), rng.standard_normal((40, 50)).astype(dtype)
    cases = [
        (lambda M: M.softmax_forward(x, scale=0.5, mask=mask, causal=True)),
        (lambda M: M.softmax_backward(N.softmax_forward(x), dy)),
        (lambda M: M.log_softmax_forward(x)),
        (lambda M: M.log_softmax_backward(N.log_softmax_forward(x), dy)),
        (lambda M: M.cross_entropy_backward(logits, target, lse, one)),
        (lambda M: M.layer_norm_forward(x, w, b)[0]),
        (lambda M: M.layer_norm_backward(dy, x, w, *N.layer_norm_forward(x, w, b)[1:])[0]),
        (lambda M: M.matmul(a, bm)),
        (lambda M: M.matmul(x, bm[:, :40].T.copy())),
    ]
    for case in cases:
        expected = case(N)
        dirty = _dirty_blocks(expected.shape, dtype)
        with C.isa(isa):
            got = case(C)
        # in one of the blocks (where in its first page depends on the kernel: empty_apart)
        assert any(abs(address(got) - block) < 4096 for block in dirty)
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, expected, **tol)


def test_a_new_block_is_advised_to_use_huge_pages(small_threshold, monkeypatch):
    calls = []
    monkeypatch.setattr(LB, "_madvise", lambda start, length, advice: calls.append(
        (start, length, advice)) or 0)
    a = LB.empty((3000,), np.dtype(np.float64))   # 24,000 bytes: a block of one 1 MiB granule
    (start, length, advice), = calls
    assert advice == 14 and start % LB._PAGE == 0 and length % LB._PAGE == 0
    # whole pages inside the block (one granule and the placement slack) that holds the array
    assert address(a) - LB._SLACK <= start < address(a) + LB._PAGE
    assert start + length <= address(a) + LB._GRANULE + LB._SLACK
    del a
    LB.empty((3000,), np.dtype(np.float64))       # the idle block again: no new advice
    assert len(calls) == 1


def test_huge_page_advice_is_taken_on_linux():
    import sys
    if not sys.platform.startswith("linux"):
        pytest.skip("madvise(MADV_HUGEPAGE) is Linux's")
    block = np.empty(8 << 20, np.uint8)
    assert LB.advise_huge_pages(address(block), block.nbytes)


def test_collapse_huge_pages_advises_each_arrays_2mib_stretch_within_its_mapping(monkeypatch):
    calls = []
    monkeypatch.setattr(LB, "_madvise", lambda start, length, advice: calls.append(
        (start, length, advice)) or 0)
    monkeypatch.setattr(LB, "huge_pages_setting", lambda: "madvise")
    rng = np.random.default_rng(0)
    big, small = rng.standard_normal(1 << 20), rng.standard_normal(1000)  # 8 MiB, 8 KB
    advised = LB.collapse_huge_pages([big, small, np.empty(0)])
    hugepage = [(start, length) for start, length, advice in calls if advice == 14]
    assert [(start, length) for start, length, advice in calls if advice == 25] == hugepage
    assert advised == sum(length for _, length in hugepage)
    mappings = LB._anonymous_mappings()
    for array in (big, small):
        begin, end = address(array), address(array) + array.nbytes
        low, high = next((lo, hi) for lo, hi in mappings if lo <= begin < hi)
        # the whole 2 MiB pages around the array, cut to its mapping, in one advised stretch
        want = (max(low, begin // LB.HUGE_PAGE * LB.HUGE_PAGE),
                min(high, -(-end // LB.HUGE_PAGE) * LB.HUGE_PAGE))
        assert any(start <= want[0] and want[1] <= start + length for start, length in hugepage)
    starts = sorted(hugepage)  # merged: no two stretches overlap or touch
    assert all(a[0] + a[1] < b[0] for a, b in zip(starts, starts[1:]))


def test_collapse_huge_pages_leaves_files_and_respects_the_settings(monkeypatch, tmp_path):
    calls = []
    monkeypatch.setattr(LB, "_madvise", lambda *args: calls.append(args) or 0)
    monkeypatch.setattr(LB, "huge_pages_setting", lambda: "madvise")
    mapped = np.memmap(tmp_path / "values", dtype=np.float64, mode="w+", shape=(1 << 18,))
    assert LB.collapse_huge_pages([mapped]) == 0 and calls == []  # a file's pages: not anonymous
    array = np.ones(1 << 18)
    monkeypatch.setattr(LB, "huge_pages_setting", lambda: "never")
    assert LB.collapse_huge_pages([array]) == 0
    monkeypatch.setattr(LB, "huge_pages_setting", lambda: "always")
    monkeypatch.setenv("MINITORCH_MALLOC_TUNING", "0")
    assert LB.collapse_huge_pages([array]) == 0 and calls == []
    del mapped


def test_collapse_huge_pages_keeps_the_data_on_linux():
    import sys
    if not sys.platform.startswith("linux") or LB.huge_pages_setting() in (None, "never"):
        pytest.skip("transparent huge pages are Linux's, and set to 'never' here")
    array = np.random.default_rng(1).standard_normal(1 << 20)
    before = array.copy()
    assert LB.collapse_huge_pages([array]) >= array.nbytes
    np.testing.assert_array_equal(array, before)


def test_page_offset_apart_is_the_middle_of_the_widest_gap():
    assert LB.page_offset_apart([16]) == 2048  # 16 + 2048, down to a multiple of 64
    assert LB.page_offset_apart([4096 * 7 + 1000]) == 3008
    assert LB.page_offset_apart([3000]) == 896  # around the page: 3000 + 2048 - 4096 = 952
    assert LB.page_offset_apart([0, 1024]) == 2560  # the gap 1024 .. 4096
    assert LB.page_offset_apart([100, 100, 4196]) == 2112
    for addresses in ([5], [0, 2048], [64, 128, 3000]):
        assert LB.page_offset_apart(addresses) % 64 == 0


def circular_distance(a, b):
    d = (a - b) % 4096
    return min(d, 4096 - d)


def array_at(page_offset, nbytes):
    """A uint8 array of nbytes starting page_offset bytes into a 4 KiB page."""
    raw = np.empty(nbytes + 4096, np.uint8)
    start = (page_offset - address(raw)) % 4096
    return raw[start:start + nbytes]


@pytest.mark.parametrize("nbytes", [LB.APART_MIN_BYTES if LB else 0, 40 << 20])
def test_empty_apart_places_the_array_away_from_the_inputs(nbytes):
    """From APART_MIN_BYTES (a heap array) and from MIN_BYTES (a reused block) up."""
    for where in (16, 4080, 2000):
        a = LB.empty_apart((nbytes // 8,), np.dtype(np.float64), [array_at(where, 64)])
        assert a.shape == (nbytes // 8,) and a.flags.c_contiguous and a.flags.writeable
        assert address(a) % 64 == 0 and circular_distance(address(a), where) >= 2048 - 64
        a[...] = 3
        assert float(a[-1]) == 3
    small = LB.empty_apart((10,), np.dtype(np.float32), [array_at(16, 64)])
    assert small.flags.owndata  # below the threshold: np.empty's


@pytest.mark.parametrize("name", ["softmax_forward", "log_softmax_forward"])
def test_forward_row_kernels_write_apart_from_their_input(name):
    """Where the output would start 16 bytes from the input modulo 4096 (the next heap block of
    a size in whole pages), every store of the kernel's pass held up a load; apart, the output
    is the reference's all the same."""
    x = np.random.default_rng(0).standard_normal((256, 1024)).astype(np.float32)
    y = getattr(C, name)(x)
    assert circular_distance(address(y), address(x)) >= 2048 - 64
    np.testing.assert_allclose(y, getattr(N, name)(x), rtol=2e-5, atol=1e-6)
