"""The kernel benchmark times like against like: for every row-kernel case, minitorch's result
equals the numpy composite's and PyTorch's (where installed), and every GEMM case is a valid
product. (Timings themselves are never asserted.)"""
import pathlib
import sys

import numpy as np
import pytest

import minitorch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
bench_kernels = pytest.importorskip("bench_kernels")
bench_large_outputs = pytest.importorskip("bench_large_outputs")

pytestmark = pytest.mark.skipif("c" not in minitorch.backends.available,
                                reason="the C extension is not built")


def _first(result):
    """The array a case is judged by: the output; dx of layer-norm backward's (dx, dw, db);
    the gradient of the numpy cross-entropy's (loss, grad)."""
    if isinstance(result, tuple):
        result = result[1] if len(result) == 2 and np.ndim(result[0]) == 0 else result[0]
    return result.numpy() if hasattr(result, "numpy") else np.asarray(result)


def _tuned_isas():
    """The tuned ISA levels this CPU runs ([] without the C extension)."""
    if "c" not in minitorch.backends.available:
        return []
    from minitorch.backends import c_backend
    return list(c_backend.ISA_LEVELS[1:c_backend.ISA_LEVELS.index(c_backend.best_isa()) + 1])


@pytest.fixture(scope="module")
def row_cases():
    return bench_kernels.row_cases(quick=True)


def test_row_cases_cover_every_kernel(row_cases):
    names = " ".join(name for name, *_ in row_cases)
    for kernel in ("softmax fwd", "softmax bwd", "masked+causal softmax", "log_softmax fwd",
                   "log_softmax bwd", "cross_entropy fwd+bwd", "layer_norm fwd",
                   "layer_norm bwd"):
        assert kernel in names
    assert {np.dtype(dtype) for _, dtype, *_ in row_cases} == {np.dtype(np.float32),
                                                               np.dtype(np.float64)}


def test_row_cases_compute_the_same_thing(row_cases):
    for name, dtype, _, f_mt, f_np, f_torch in row_cases:
        tol = 1e-4 if dtype == np.float32 else 1e-10
        ours = _first(f_mt())
        np.testing.assert_allclose(ours, _first(f_np()), rtol=tol, atol=tol, err_msg=name)
        if f_torch:
            np.testing.assert_allclose(ours, _first(f_torch()), rtol=tol, atol=tol, err_msg=name)


def test_gemm_cases_are_products():
    rng = np.random.default_rng(0)
    for name, a_shape, b_shape in bench_kernels.gemm_cases(quick=True):
        a, b = rng.standard_normal(a_shape), rng.standard_normal(b_shape)
        np.testing.assert_allclose(minitorch.backends.c_backend.matmul(a, b), a @ b,
                                   rtol=1e-10, atol=1e-10, err_msg=name)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_copy_yardstick_copies(threads):
    src = np.arange(1001, dtype=np.float32)
    dst = np.zeros_like(src)
    bench_kernels.copy_through_cache(src, dst, threads)()
    np.testing.assert_array_equal(dst, src)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("isa", _tuned_isas())
def test_the_exp_floor_is_the_row_kernels_exp(dtype, isa):
    """benchmarks/exp_floor.c (compiled on first use, outside the library) runs the exp that
    softmax runs, on 1 and 2 threads, over every element; rows without an exp get no floor."""
    module = bench_kernels._exp_floor_lib()
    if module is None:
        pytest.skip("benchmarks/exp_floor.c did not build here")
    c_backend = minitorch.backends.c_backend
    kind = "float" if dtype == np.float32 else "double"
    run = module.lib.exp_pass_f32 if dtype == np.float32 else module.lib.exp_pass_f64
    x = -np.abs(np.random.default_rng(3).standard_normal(1001) * 20).astype(dtype)
    with c_backend.isa(isa):
        through_softmax = c_backend.softmax_forward(
            np.concatenate([np.zeros((len(x), 1), dtype), x[:, None]], axis=1))[:, 1]
        for threads in (1, 2):
            out = np.full_like(x, np.nan)
            run(c_backend.ISA_LEVELS.index(isa), threads, module.ffi.from_buffer(f"{kind}[]", x),
                module.ffi.from_buffer(f"{kind}[]", out), x.size)
            np.testing.assert_allclose(out, np.exp(x), rtol=4 * np.finfo(dtype).eps, atol=0)
            # (softmax of [0, x] is exp(x) / (1 + exp(x)): equal up to that rounding)
            np.testing.assert_allclose(out / (1 + out), through_softmax,
                                       rtol=8 * np.finfo(dtype).eps)
        assert bench_kernels.exp_floor_call("softmax bwd 4x4", dtype, 1, 1) is None
        bench_kernels.exp_floor_call("cross_entropy fwd+bwd 4x1000", dtype,
                                     3 * 4000 * np.dtype(dtype).itemsize, 2)()


def test_the_causal_softmax_floor_counts_the_exps_it_takes():
    """A causal row takes exps up to its causal limit rounded up to a 32-byte vector: with 8
    float32 lanes, 16 keys are 8 exps for queries 0-7 and 16 for 8-15; long rows near half."""
    assert bench_kernels.causal_exps((1, 1, 8, 8), 4) == 64
    assert bench_kernels.causal_exps((1, 1, 16, 16), 4) == 8 * 8 + 8 * 16
    assert bench_kernels.causal_exps((1, 1, 16, 16), 8) == 4 * (4 + 8 + 12 + 16)
    assert 0.5 < bench_kernels.causal_exps((2, 3, 256, 256), 4) / (6 * 256 * 256) < 0.52


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fma_peak_probe_records_a_sample_per_call(dtype):
    """benchmarks/fma_peak.c is compiled on first use, outside the library."""
    if bench_kernels._fma_peak_lib() is None:
        pytest.skip("benchmarks/fma_peak.c did not build here")
    assert not hasattr(minitorch.backends.c_backend.lib, "mt_fma_peak_gflops_f32")
    samples = []
    probe = bench_kernels.fma_peak_probe(dtype, 1, samples)
    probe()
    probe()
    assert len(samples) == 2 and all(g > 0 for g in samples)


def test_the_core_round_trip_is_a_time_or_none(monkeypatch):
    """benchmarks/core_round_trip.c: ns per trip of a line between two threads; None where
    OpenMP gives one thread (its -1). Few trips: on a busy machine each may wait a time slice."""
    if bench_kernels._core_round_trip_lib() is None:
        pytest.skip("benchmarks/core_round_trip.c did not build here")
    assert not hasattr(minitorch.backends.c_backend.lib, "core_round_trip_ns")
    ns = bench_kernels.core_round_trip_ns(trips=200, samples=3)
    assert ns is not None and 0 < ns < 1e8

    class OneThread:
        @staticmethod
        def core_round_trip_ns(trips):
            return -1.0
    monkeypatch.setattr(bench_kernels, "_core_round_trip_lib", lambda: OneThread)
    assert bench_kernels.core_round_trip_ns() is None


def test_the_large_output_cases_are_those_on_reused_blocks(row_cases, monkeypatch):
    from minitorch.backends import large_buffers
    monkeypatch.setattr(large_buffers, "MIN_BYTES", 3 << 20)  # some of the quick cases' outputs
    picked = bench_large_outputs.large_cases(row_cases)
    assert 0 < len(picked) < len(row_cases)
    for case in row_cases:
        out = bench_large_outputs._output(case[3]())
        assert (out.nbytes >= 3 << 20) == any(case is large for large in picked), case[0]
        assert on_a_block(out) == (out.nbytes >= 3 << 20), case[0]  # a block, or the heap's


def on_a_block(array):
    """Whether the array's memory is a large_buffers block (not numpy's own: np.empty's, or
    empty_apart's slice of a heap array)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return not array.flags.owndata


def test_fresh_memory_bypasses_the_reused_blocks(monkeypatch):
    from minitorch.backends import large_buffers
    monkeypatch.setattr(large_buffers, "MIN_BYTES", 4096)
    softmax = lambda: minitorch.backends.c_backend.softmax_forward(np.ones((64, 64)))  # noqa: E731
    assert on_a_block(softmax())
    assert not on_a_block(bench_large_outputs.with_fresh_memory(softmax)())


# ---------------------------------------------------------------------------------------------
# bench_elementwise.py: each op case computes the same thing in minitorch, numpy and PyTorch
# ---------------------------------------------------------------------------------------------
bench_elementwise = pytest.importorskip("bench_elementwise")


@pytest.fixture(scope="module")
def elementwise_setup():
    data = bench_elementwise.arrays(shape=(4, 6, 8))
    return data, bench_elementwise.libraries(data)


def test_elementwise_cases_cover_the_issue_list():
    names = [case.name for case in bench_elementwise.cases()]
    wanted = """add sub mul div neg pow sqrt rsqrt exp log tanh sigmoid relu gelu silu abs clamp
        where masked_fill sum mean amax var softmax log_softmax cat stack transpose slice
        index erf maximum softplus cumsum topk tril gather""".split()
    for op in wanted:
        assert any(name.startswith(op) for name in names), op
    for pass_of in ("scalar", "pow 2.0", "pow 3.0", "pow 0.5", "pow -1", "pow 2.5", "gelu tanh",
                    "sum(-1)", "sum()", "mean(-1)", "mean()", "amax(-1)", "amax()"):
        assert any(pass_of in name for name in names), pass_of


def _as_arrays(result):
    return [r.detach().numpy() if hasattr(r, "detach") else np.asarray(r) for r in result]


def _assert_kept_and_scaled(out, x, case):
    """A random case's output (dropout): each element 0 or x times the case's keep scale."""
    kept = out != 0
    assert kept.any(), case.name
    np.testing.assert_allclose(out[kept], (x * case.keep_scale)[kept], rtol=2e-6,
                               err_msg=case.name)


def test_elementwise_forward_cases_compute_the_same_thing(elementwise_setup):
    data, libs = elementwise_setup
    for case in bench_elementwise.cases():
        ours = _as_arrays([libs["minitorch"].forward(case)()])[0]
        # numpy's erf for gelu is Abramowitz-Stegun's (1.5e-7): the same tolerance holds
        expected = [bench_elementwise.numpy_forward(case, data)()]
        if libs["torch"] is not None:
            expected.append(_as_arrays([libs["torch"].forward(case)()])[0])
        if case.keep_scale:  # draws differ between libraries: each checked on its own
            for out in [ours] + expected:
                _assert_kept_and_scaled(out, data["x"], case)
            continue
        for other in expected:
            np.testing.assert_allclose(ours, other, rtol=2e-5, atol=2e-6, err_msg=case.name)


def test_elementwise_backward_cases_compute_torchs_gradients(elementwise_setup):
    _, libs = elementwise_setup
    if libs["torch"] is None:
        pytest.skip("PyTorch is not installed")
    for case in bench_elementwise.cases():
        if not case.differentiable:
            continue
        ours_out, ours_grads = libs["minitorch"].forward_backward(case)()
        torch_out, torch_grads = libs["torch"].forward_backward(case)()
        assert len(ours_grads) == len(torch_grads) == (2 if case.uses_y else 1)
        if case.keep_scale:  # dropout: the gradient is the same mask and scale as the output
            for out, (grad,) in ((ours_out, ours_grads), (torch_out, torch_grads)):
                out, grad = _as_arrays((out, grad))
                upstream = np.random.default_rng(1).standard_normal(out.shape)  # the call's
                _assert_kept_and_scaled(grad, upstream.astype(np.float32) * (out != 0), case)
            continue
        for ours, theirs in zip(_as_arrays((ours_out,) + ours_grads),
                                _as_arrays((torch_out,) + torch_grads)):
            np.testing.assert_allclose(ours, theirs, rtol=2e-5, atol=2e-6, err_msg=case.name)


def test_elementwise_only_names_the_ops():
    with pytest.raises(SystemExit):
        bench_elementwise.main(["--only", "no-such-op", "--no-report"])


# ---------------------------------------------------------------------------------------------
# bench_conv.py: each CNN layer computes the same thing in minitorch, numpy and PyTorch
# ---------------------------------------------------------------------------------------------
bench_conv = pytest.importorskip("bench_conv")


def test_conv_cases_cover_the_layers():
    names = " ".join(case.name for case in bench_conv.cases())
    for layer in ("Conv2d 3→32 3×3", "Conv2d 32→64 3×3", "1×1", "MaxPool2d", "AvgPool2d",
                  "AdaptiveAvgPool2d", "BatchNorm2d"):
        assert layer in names, layer


@pytest.mark.parametrize("case", bench_conv.cases(), ids=lambda case: case.name)
def test_conv_cases_compute_the_same_thing(case):
    mt_layer, torch_layer, x, params = bench_conv.layers(case, batch=2)
    ours = mt_layer.forward()().numpy()
    np.testing.assert_allclose(ours, case.np_fn(x, params), rtol=1e-4, atol=1e-4,
                               err_msg=f"{case.name}: numpy")
    if torch_layer is None:
        return
    np.testing.assert_allclose(ours, torch_layer.forward()().numpy(), rtol=1e-4, atol=1e-4,
                               err_msg=f"{case.name}: torch")
    (ours_out, ours_grads), (torch_out, torch_grads) = (mt_layer.forward_backward()(),
                                                        torch_layer.forward_backward()())
    assert len(ours_grads) == len(torch_grads)
    for ours, theirs in zip(_as_arrays((ours_out,) + ours_grads),
                            _as_arrays((torch_out,) + torch_grads)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-4, atol=1e-4, err_msg=case.name)


# ---------------------------------------------------------------------------------------------
# bench_overhead.py: each chain computes the same thing in minitorch, numpy and PyTorch
# ---------------------------------------------------------------------------------------------
bench_overhead = pytest.importorskip("bench_overhead")


@pytest.mark.parametrize("op", bench_overhead.OPS)
def test_overhead_chains_compute_the_same_thing(op):
    data = bench_overhead.arrays((3, 5))
    x, y, g = (d.astype(np.float64) for d in data)
    expected = x * y ** 10 if op == "mul" else x + 10 * y
    np.testing.assert_allclose(bench_overhead.numpy_chain(op, data, length=10)(), expected,
                               rtol=1e-5, atol=1e-5)
    libraries = [minitorch] + ([bench_kernels.torch] if bench_kernels.torch is not None else [])
    for lib in libraries:
        for mode in ("no-grad", "graph"):
            out = bench_overhead.chain(lib, op, mode, data, length=10)()
            assert out.requires_grad == (mode == "graph")
            np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-5, atol=1e-5,
                                       err_msg=f"{lib.__name__} {mode}")
        grad_call = bench_overhead.chain(lib, op, "fwd+bwd", data, length=10)
        for _ in range(2):  # x.grad is cleared after each call: no accumulation across calls
            grad = grad_call().numpy()
            np.testing.assert_allclose(grad, g * y ** 10 if op == "mul" else g, rtol=1e-5,
                                       atol=1e-5, err_msg=f"{lib.__name__} fwd+bwd")


def test_the_paired_ratio_is_the_median_of_each_pairs_ratio(monkeypatch):
    """On a fake clock that each call advances: first 3 then 1 units, except one slow pair."""
    clock = [0.0]
    durations = iter([3, 1] * 5 + [30, 1] + [3, 1] * 100)

    def call():
        clock[0] += next(durations)
    monkeypatch.setattr(bench_kernels.time, "perf_counter", lambda: clock[0])
    assert bench_kernels.paired_ratio(call, call, budget=0) == 3.0


@pytest.mark.parametrize("dropout", [0.0, 0.25])
def test_the_attention_cases_compute_one_thing(dropout):
    """The fused, unfused and numpy runs give one output and gradients (the dropout factors
    drawn alike), and PyTorch's runs where it is installed."""
    rng = np.random.default_rng(5)
    rows = rng.standard_normal((3, 8, 3 * 2 * 4))
    dout = rng.standard_normal((3, 2, 8, 4))
    fused, unfused, with_numpy, with_torch = bench_kernels.attention_runs(rows, dout, 2, 0.5,
                                                                          dropout)
    want = with_numpy()
    for got in (fused(), unfused()):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12)
    if dropout:  # the factors dropped something, and the gradient of v sees it
        plain = bench_kernels.attention_runs(rows, dout, 2, 0.5)[2]()
        assert not np.allclose(plain[3], want[3])
    if with_torch is not None:
        with_torch()
