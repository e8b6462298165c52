"""The training-step benchmarks measure what they say: bench_transformer.py's GEMM floor counts
the FLOPs of the products a step makes and its time in the kernels leaves the Python out,
profile_step.py files each shared object under its group, and compare_builds.py runs each step
on one build's kernels (all of them), in turn. (Timings are never asserted.)"""
import itertools
import pathlib
import shutil
import sys

import pytest

import minitorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
bench_transformer = pytest.importorskip("bench_transformer")
profile_step = pytest.importorskip("profile_step")
compare_builds = pytest.importorskip("compare_builds")

pytestmark = pytest.mark.skipif("c" not in minitorch.backends.available,
                                reason="the C extension is not built")


def test_the_counted_flops_are_those_of_the_products_made():
    a, b = minitorch.randn(3, 4), minitorch.randn(4, 5)
    batch_a, batch_b = minitorch.randn(6, 2, 7), minitorch.randn(6, 7, 3)

    def step():
        a @ b                # 2·3·5·4
        a @ b.T.T            # the same product through a transposed view
        batch_a @ batch_b    # 6 products 2·2·3·7
    assert bench_transformer._count_gemm_flops(step) == 2 * (2 * 3 * 5 * 4) + 6 * 2 * 2 * 3 * 7
    # the kernels are put back: a second count starts from zero
    assert bench_transformer._count_gemm_flops(lambda: a @ b) == 2 * 3 * 5 * 4


def test_a_linear_layers_gemm_with_its_bias_is_counted_and_replayed():
    x, layer = minitorch.randn(6, 4), minitorch.nn.Linear(4, 5)
    calls = bench_transformer._record_gemm_calls(lambda: layer(x))  # mt_gemm_bias: one call
    assert [(c["m"], c["n"], c["k"], c["tb"], c["ldb"], c["batch"]) for c in calls] == \
        [(6, 5, 4, 1, 4, 1)]
    assert bench_transformer._count_gemm_flops(lambda: layer(x)) == 2 * 6 * 5 * 4
    assert bench_transformer._replay_minitorch(calls, repeats=1) > 0


def test_a_linear_layers_weight_gradient_with_its_bias_gradient_is_counted():
    x, layer = minitorch.randn(200, 90, requires_grad=True), minitorch.nn.Linear(90, 100)
    calls = bench_transformer._record_gemm_calls(lambda: layer(x).sum().backward())
    # forward (mt_gemm_bias), x's gradient (mt_gemm), W's and b's (mt_linear_param_grads)
    assert sorted((c["ta"], c["m"], c["n"], c["k"]) for c in calls) == \
        [(0, 200, 90, 100), (0, 200, 100, 90), (1, 100, 90, 200)]
    assert bench_transformer._replay_minitorch(calls, repeats=1) > 0


def test_the_floor_is_the_flops_at_the_peak():
    best = {"minitorch": {"ms": 50.0, "tok_s": 1.0, "rss_mb": 10, "gemm_flops": 4e9,
                          "gemm_alone_ms": 30.0, "torch_gemm_alone_ms": 35.0,
                          "gemm_cold_ms": 33.0, "torch_gemm_cold_ms": 39.0, "kernel_ms": 40.0},
            "torch": {"ms": 80.0, "tok_s": 1.0, "rss_mb": 20}}
    mt_row, torch_row = bench_transformer._rows("small", 1, best, peak_gflops=100.0)
    assert mt_row[6] == "1.60x"             # 80 / 50
    assert mt_row[7] == ""                  # no rounds listed: no range
    assert mt_row[8] == "40.0"              # the eager step's time inside its kernels
    assert mt_row[9] == "2.00x"             # 80 / 40
    assert mt_row[10] == "30.0"             # minitorch's GEMMs replayed alone
    assert mt_row[11] == "33.0"             # ... on cold operands
    assert mt_row[12] == "40.0"             # 4 GFLOP at 100 GFLOP/s
    assert mt_row[13] == "2.00x"            # 80 / 40
    assert torch_row[6:] == ["", "", "", "", "35.0", "39.0", "", ""]  # its GEMMs, same calls


def test_the_time_in_kernels_is_the_step_less_its_python(monkeypatch):
    a, b = minitorch.randn(30, 30), minitorch.randn(30, 30)
    ticks = itertools.count()   # a clock that moves 1 ms per reading, and only when read
    monkeypatch.setattr(bench_transformer.time, "perf_counter", lambda: next(ticks) / 1000)
    walls, kernels = bench_transformer._timed_steps(lambda: sum(range(10_000)), 3, True)
    assert walls == [1, 1, 1] and kernels == [0, 0, 0]     # Python alone: no kernel time
    walls, kernels = bench_transformer._timed_steps(lambda: (a @ b) @ b, 3, True)
    assert all(round(k) >= 2 and k == pytest.approx(round(k)) for k in kernels)  # 2 products
    assert all(w > k for w, k in zip(walls, kernels))      # the step holds its kernels' time
    assert bench_transformer._timed_steps(lambda: a @ b, 2, in_kernels=False)[1] is None
    calls = bench_transformer._record_gemm_calls(lambda: a @ b)   # the kernels are put back
    assert len(calls) == 1


def test_the_recorded_calls_replay_the_step_products():
    a, b = minitorch.randn(3, 4), minitorch.randn(5, 4)
    batch_a, batch_b = minitorch.randn(6, 2, 7), minitorch.randn(6, 7, 3)
    calls = bench_transformer._record_gemm_calls(lambda: (a @ b.T, batch_a @ batch_b))
    assert [(c["m"], c["n"], c["k"], c["tb"], c["batch"]) for c in calls] == \
        [(3, 5, 4, 1, 1), (2, 3, 7, 0, 6)]
    assert bench_transformer._replay_minitorch(calls, repeats=1) > 0
    assert bench_transformer._replay_minitorch(calls, cold=True, repeats=1) > 0
    torch = pytest.importorskip("torch", reason="PyTorch's replay needs PyTorch")
    assert bench_transformer._replay_torch(calls, threads=1, repeats=1) > 0
    assert bench_transformer._replay_torch(calls, threads=1, cold=True, repeats=1) > 0
    assert torch.get_num_threads() == 1


def test_a_cold_replay_places_each_operand_apart_within_its_arena(monkeypatch):
    monkeypatch.setattr(bench_transformer, "COLD_ARENA_BYTES", 4096)  # 1024 float32: wraps
    call = dict(dtype="float32", ta=0, tb=0, m=8, n=8, k=8, lda=8, sa=0, ldb=8, sb=0, ldc=8,
                sc=0, batch=1)
    calls = [call, dict(call, dtype="float64"), call, dict(call, m=20, lda=8, ldc=8)] + [call] * 6
    sizes, places = bench_transformer._cold_places(calls)
    assert sizes == {"float32": 1024, "float64": 512}
    spans = []
    for c, starts in zip(calls, places):
        extents = bench_transformer._operand_sizes(c)
        mine = [(at, at + n) for at, n in zip(starts, extents)]
        assert all(0 <= lo and hi <= sizes[c["dtype"]] and lo % 16 == 0 for lo, hi in mine)
        assert all(a[1] <= b[0] for a, b in zip(mine, mine[1:]))   # A, B, C in turn, apart
        spans.append((c["dtype"], mine))
    f32 = [mine for dtype, mine in spans if dtype == "float32"]
    for before, after in zip(f32, f32[1:]):   # a call starts past the last, or wraps to 0
        assert after[0][0] == 0 or after[0][0] >= before[2][1]
    assert any(mine[0][0] == 0 for mine in f32[1:])   # the arena wrapped at least once


def test_rounds_keep_the_fastest_step_and_the_fastest_replays():
    best = {}
    bench_transformer._keep_best(best, "minitorch", {"ms": 50.0, "gemm_alone_ms": 30.0})
    bench_transformer._keep_best(best, "minitorch", {"ms": 60.0, "gemm_alone_ms": 28.0})
    assert best["minitorch"] == {"ms": 50.0, "gemm_alone_ms": 28.0, "rounds_ms": [50.0, 60.0]}


def test_the_time_in_kernels_is_the_fastest_steps_own():
    best = {}
    bench_transformer._keep_best(best, "minitorch", {"ms": 50.0, "kernel_ms": 45.0})
    bench_transformer._keep_best(best, "minitorch", {"ms": 60.0, "kernel_ms": 40.0})
    assert best["minitorch"]["kernel_ms"] == 45.0   # not the slower round's, below its own step


def test_the_per_round_range_pairs_the_frameworks_round_by_round():
    best = {}
    # round 1: both fast; round 2: minitorch failed; round 3: both slow (the machine drifted)
    for mt, torch in (({"ms": 50.0}, {"ms": 80.0}), ({"error": "x"}, {"ms": 70.0}),
                      ({"ms": 60.0}, {"ms": 84.0})):
        bench_transformer._keep_best(best, "minitorch", dict(mt, tok_s=1.0, rss_mb=1))
        bench_transformer._keep_best(best, "torch", dict(torch, tok_s=1.0, rss_mb=1))
    mt_row, _ = bench_transformer._rows("small", 1, best, peak_gflops=None)
    assert mt_row[6] == "1.40x"             # best against best: 70 / 50
    assert mt_row[7] == "1.40-1.60x"        # 84 / 60 and 80 / 50; the failed round left out
    assert bench_transformer._round_range([50.0], [80.0]) == ""   # one round: no range


@pytest.mark.parametrize("dso, group", [
    ("_C.abi3.so", "C kernels"), ("libgomp.so.1.0.0", "C kernels"),
    ("_multiarray_umath.cpython-311-x86_64-linux-gnu.so", "numpy"),
    ("libpython3.11.so.1.0", "Python"), ("python3.11", "Python"),
    ("_cffi_backend.cpython-311-x86_64-linux-gnu.so", "Python"),
    ("libc.so.6", "libc"), ("libm.so.6", "libc"), ("[kernel.kallsyms]", "OS"),
    ("libfoo.so", "other")])
def test_profile_groups_shared_objects(dso, group):
    assert profile_step.category(dso) == group


PERF_REPORT = """# Samples: 7K of event 'cpu-clock:ppp'
#
# Overhead  Pid:Command    Shared Object
# ........  .............  ..................
#
    41.16%     7134:python   _C.abi3.so
    38.62%     7146:python   _C.abi3.so
    11.18%     7146:python   libgomp.so.1.0.0
     6.00%     7134:python   libpython3.11.so.1.0
     1.39%     7134:python   libgomp.so.1.0.0
     0.55%     7134:python   libc.so.6
     0.45%     7134:python   _multiarray_umath.cpython-311-x86_64-linux-gnu.so
     0.32%     7146:python   [kernel.kallsyms]
     0.33%     7134:OMP worker   [kernel.kallsyms]
"""


def test_profile_shares_are_split_by_thread():
    """Every thread's samples, then the main thread's alone, each out of its own total (a
    command with a space in it still parses)."""
    every = profile_step.shares(PERF_REPORT)
    assert every["C kernels"] == pytest.approx(41.16 + 38.62 + 11.18 + 1.39)
    assert every["Python"] == pytest.approx(6.00)
    assert every["OS"] == pytest.approx(0.65)
    main = profile_step.shares(PERF_REPORT, tid=7134)
    main_total = 41.16 + 6.00 + 1.39 + 0.55 + 0.45 + 0.33
    assert main["Python"] == pytest.approx(100 * 6.00 / main_total)
    assert main["C kernels"] == pytest.approx(100 * (41.16 + 1.39) / main_total)
    assert sum(main.values()) == pytest.approx(100)
    assert profile_step.shares(PERF_REPORT, tid=1) == dict.fromkeys(profile_step.CATEGORIES, 0.0)


def test_compared_builds_take_turns_and_leave_the_values_alone(tmp_path):
    """Two builds (here a copy of this one's extension, loaded a second time): every step runs on
    one build's kernels, both builds' run, each group of kernels is timed, the losses are those
    of the same steps on the extension alone, and c_backend has its own kernels back after."""
    from minitorch.backends import c_backend
    tiny = dict(bench_transformer.SIZES["small"], layers=1, batch=4, src_len=6, tgt_len=5,
                vocab=50)
    copy = tmp_path / "_C.abi3.so"
    shutil.copy(minitorch._C.__file__, copy)
    losses = []
    threads = minitorch.get_num_threads()  # training_step sets 1: put it back after
    own = c_backend.lib, c_backend._GEMM_KERNELS
    try:
        _, plain = bench_transformer.training_step("minitorch", tiny, 1)
        want = [plain() for _ in range(4)]
        other = compare_builds.load_build(str(copy), 1, c_backend.lib.mt_get_isa())
        builds = [compare_builds.Timed(c_backend.lib, ["layer_norm_forward"]),
                  compare_builds.Timed(other, ["layer_norm_forward"])]
        _, step = bench_transformer.training_step("minitorch", tiny, 1)
        times = compare_builds.paired_rounds(lambda: losses.append(step()), builds, c_backend,
                                             rounds=2)
    finally:
        minitorch.set_num_threads(threads)
    assert (c_backend.lib, c_backend._GEMM_KERNELS) == own
    assert losses == want
    assert all(build.calls > 0 for build in builds)
    assert [len(t["step"]) for t in times] == [2, 2]
    assert all(seconds > 0 for t in times for kind in
               ("gemm", "attention", "layer_norm_forward", "other kernels") for seconds in t[kind])


def test_compare_builds_names_an_unknown_kernel(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["compare_builds.py", minitorch._C.__file__,
                                      "--kernels", "sum_cols,no_such_kernel"])
    with pytest.raises(SystemExit) as exit:
        compare_builds.main()
    assert exit.value.code == 2
    assert "--kernels: no such kernel: no_such_kernel" in capsys.readouterr().err
