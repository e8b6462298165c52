"""Kernel tests of the elementwise and row-reduction kernels (csrc/pointwise.c, csrc/arith.c,
csrc/reduce_rows.c, csrc/index_add_rows.c), in the manner of test_kernels.py:

- every C function equals the numpy reference (numpy_backend) on drawn sizes (hypothesis: the
  campaign's profiles), float32 and float64, 1 and 2 threads, at every ISA level the CPU runs
  (the plain reference bodies and each tuned level), sizes across the one-thread threshold;
- each tuned level is held to the reference level's output;
- NaN, +-inf, 0, -0 and huge magnitudes give PyTorch's results (values and gradients) on both
  backends, where PyTorch is installed;
- every layout (strided, transposed, negative strides, misaligned) gives its contiguous copy's
  result;
- float32 sums accumulate with care (a million terms), long rows split over threads give the
  same result on every run, and repeated row indices add up;
- bad input raises the same Python error, naming the argument, on both backends.
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""
import contextlib
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch as mt
from minitorch.backends import numpy_backend as N
from minitorch.backends.checks import ARITH_OPS
from test_kernels import DTYPES, ISAS, THREADS, C, c_threads, needs_c  # the common ground
# across the kernels' one-thread threshold (32768 elements) and vector tails
SIZES = [0, 1, 2, 7, 16, 33, 129, 40_001]


def tol(dtype):
    # float32 atol: GELU's derivative crosses 0 at x = -0.75 as a difference of two ~0.2 terms
    return dict(rtol=3e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)


def elementwise_calls(rng, n, dtype):
    """{name: (function name, args)}: every elementwise kernel with inputs of n elements."""
    x = (rng.standard_normal(n) * 4).astype(dtype)
    dy = rng.standard_normal(n).astype(dtype)
    positive = np.abs(x) + dtype(0.25)
    condition = rng.random(n) < 0.5
    return {
        "relu": ("relu_forward", (x,)),
        "relu backward": ("relu_backward", (dy, N.relu_forward(x))),
        "sigmoid": ("sigmoid_forward", (x,)),
        "sigmoid backward": ("sigmoid_backward", (dy, N.sigmoid_forward(x))),
        "silu": ("silu_forward", (x,)),
        "silu backward": ("silu_backward", (dy, x)),
        "gelu": ("gelu_forward", (x,)),
        "gelu backward": ("gelu_backward", (dy, x)),
        "gelu tanh": ("gelu_forward", (x, "tanh")),
        "gelu tanh backward": ("gelu_backward", (dy, x, "tanh")),
        "clamp": ("clamp_forward", (x, -0.5, 1.25)),
        "clamp min only": ("clamp_forward", (x, 0.3, None)),
        "clamp backward": ("clamp_backward", (dy, x, -0.5, 1.25)),
        "sqrt": ("sqrt_forward", (positive,)),
        "sqrt of negatives": ("sqrt_forward", (x,)),  # NaN below 0 on both
        "rsqrt": ("rsqrt_forward", (positive,)),
        "erf": ("erf_forward", (x / 4,)),
        "exp": ("exp_forward", (x,)),
        "log": ("log_forward", (positive,)),
        "softplus": ("softplus_forward", (x,)),
        "softplus beta threshold": ("softplus_forward", (x, 2.0, 3.0)),
        "pow_int 3": ("pow_int_forward", (x, 3)),
        "pow_int -2": ("pow_int_forward", (positive, -2)),
        "pow_int 11": ("pow_int_forward", (x / 4, 11)),
        "pow_int 0": ("pow_int_forward", (x, 0)),
        "pow 2.5": ("pow_scalar_forward", (positive, 2.5)),
        "pow -1.7 of negatives": ("pow_scalar_forward", (x, -1.7)),  # NaN below 0 on both
        "pow 0.3": ("pow_scalar_forward", (positive, 0.3)),  # 0.3 rounded to the dtype
        "abs": ("abs_forward", (np.where(condition, x, -x),)),
        "abs backward": ("abs_backward", (dy, x)),
        "where": ("where", (condition, x, dy)),
        "where one value a": ("where", (condition, np.array(1.5, dtype), dy)),
        "where one value b": ("where", (condition, x, np.zeros((), dtype))),
        "where two values": ("where", (condition, np.array(-2.0, dtype), np.array(3.0, dtype))),
    }


def row_calls(rng, rows, cols, dtype):
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    return {
        "sum_rows": ("sum_rows", (x,)),
        "sum_rows mean": ("sum_rows", (x, 1.0 / max(cols, 1))),
        "amax_rows": ("amax_rows", (x,)) if cols else None,
        "amin_rows": ("amax_rows", (x, False)) if cols else None,
    }


def assert_close_to_reference(name, got, expected, dtype, cols=1):
    close = tol(dtype)
    if name.startswith("sum"):  # a sum's error grows with its length (and cancellation)
        close = dict(rtol=close["rtol"], atol=close["atol"] * 10 * max(cols, 1) ** 0.5)
    np.testing.assert_allclose(got, expected, **close, err_msg=name)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_elementwise_kernels_match_numpy(dtype, isa, data):
    n = data.draw(st.sampled_from(SIZES), label="n")
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for name, (fn, args) in elementwise_calls(rng, n, dtype).items():
        with c_threads(threads, isa):
            got = getattr(C, fn)(*args)
        expected = getattr(N, fn)(*args)
        assert got.shape == expected.shape and got.dtype == expected.dtype, name
        assert_close_to_reference(name, got, expected, dtype)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_row_kernels_match_numpy(dtype, isa, data):
    rows = data.draw(st.sampled_from([0, 1, 2, 3, 17, 1000]), label="rows")
    cols = data.draw(st.sampled_from([0, 1, 5, 16, 33, 512, 70_001]), label="cols")
    if rows * cols > 2_000_000:
        rows = 2
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    for name, call in row_calls(rng, rows, cols, dtype).items():
        if call is None:
            continue
        fn, args = call
        with c_threads(threads, isa):
            got = getattr(C, fn)(*args)
        expected = getattr(N, fn)(*args)
        assert got.shape == expected.shape == (rows,) and got.dtype == dtype, name
        assert_close_to_reference(name, got, expected, dtype, cols)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_running_sums_match_numpy_exactly(dtype, isa, data):
    """Both sum in double in each row's order, so they agree to the last bit."""
    rows = data.draw(st.sampled_from([0, 1, 3, 17, 1000]), label="rows")
    cols = data.draw(st.sampled_from([0, 1, 5, 33, 512]), label="cols")
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = (rng.standard_normal((rows, cols)) * 3).astype(dtype)
    with c_threads(threads, isa):
        got = C.cumsum_rows(x)
    expected = N.cumsum_rows(x)
    assert got.shape == expected.shape == (rows, cols) and got.dtype == dtype
    np.testing.assert_array_equal(got, expected)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("isa", ISAS[1:])
def test_tuned_levels_match_the_reference_level(dtype, isa):
    rng = np.random.default_rng(7)
    calls = dict(elementwise_calls(rng, 40_001, dtype))
    calls.update({k: v for k, v in row_calls(rng, 3, 70_001, dtype).items() if v})
    for name, (fn, args) in calls.items():
        with c_threads(2, "reference"):
            reference = getattr(C, fn)(*args)
        with c_threads(2, isa):
            tuned = getattr(C, fn)(*args)
        close = dict(rtol=2e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-11, atol=1e-13)
        if name.startswith("sum"):
            close["atol"] = 1e-4 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(tuned, reference, **close, err_msg=f"{name} at {isa}")


def arith_operands(rng, shape, dtype, layout):
    """(a, b) for the arith kernel: both full, or one of them a row or a scalar."""
    full = rng.standard_normal(shape).astype(dtype)
    other_shape = {"full": shape, "row": shape[-1:], "scalar": (),
                   "row with ones": (1,) * (len(shape) - 1) + shape[-1:],
                   "size-1": (1,) * len(shape)}[layout]
    other = np.asarray(rng.standard_normal(other_shape) + 0.5, dtype)  # away from 0: division
    return full, other


ARITH_LAYOUTS = ["full", "row", "row with ones", "scalar", "size-1"]


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@given(data=st.data())
def test_arith_kernel_matches_numpy(dtype, isa, data):
    shape = data.draw(st.sampled_from([(1,), (7,), (3, 5), (2, 3, 33), (40_001,), (70, 1000)]),
                      label="shape")
    layout = data.draw(st.sampled_from(ARITH_LAYOUTS), label="layout")
    swap = data.draw(st.booleans(), label="other operand first")
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    a, b = arith_operands(rng, shape, dtype, layout)
    if swap:
        a, b = b, a
    for op in ARITH_OPS:
        with c_threads(threads, isa):
            got = C.arith(op, a, b)
            in_place = (a if a.shape == got.shape else b).copy()
            C.arith(op, *((in_place, b) if a.shape == got.shape else (a, in_place)),
                    out=in_place)
        expected = N.arith(op, a, b)
        assert got.shape == expected.shape == np.broadcast_shapes(a.shape, b.shape)
        np.testing.assert_array_equal(got, expected, err_msg=f"{op}, {layout}")
        np.testing.assert_array_equal(in_place, expected, err_msg=f"{op} in place, {layout}")


@contextlib.contextmanager
def arith_kernel_calls(threads):
    """On ``threads`` threads, the list of ops the elementwise ops send to the arith kernel."""
    previous, arith_on_layout, calls = mt.get_num_threads(), C.arith_on_layout, []
    mt.set_num_threads(threads)
    C.arith_on_layout = lambda *args, **kwargs: (calls.append(args[0]),
                                                 arith_on_layout(*args, **kwargs))[1]
    try:
        yield calls
    finally:
        C.arith_on_layout = arith_on_layout
        mt.set_num_threads(previous)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
def test_large_tensor_arithmetic_and_its_gradients(threads):
    """From 65536 elements and with 2 threads the ops call the arith kernel (with 1, numpy):
    values and gradients as numpy's either way. float16 stays on numpy's loops (the kernel
    takes float32 and float64)."""
    rng = np.random.default_rng(11)
    x_np, y_np = rng.standard_normal((64, 1030)), rng.standard_normal((64, 1030)) + 3.0
    bias_np = rng.standard_normal(1030)
    with arith_kernel_calls(threads) as kernel_calls:
        x, y = mt.tensor(x_np, requires_grad=True), mt.tensor(y_np, requires_grad=True)
        bias = mt.tensor(bias_np, requires_grad=True)
        out = (x + bias) * y - 1.5 / y + x ** 3
        np.testing.assert_allclose(out.detach().numpy(),
                                   (x_np + bias_np) * y_np - 1.5 / y_np + x_np ** 3, rtol=1e-12)
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), y_np + 3 * x_np ** 2, rtol=1e-12)
        np.testing.assert_allclose(y.grad.numpy(), x_np + bias_np + 1.5 / y_np ** 2, rtol=1e-12)
        np.testing.assert_allclose(bias.grad.numpy(), y_np.sum(0), rtol=1e-12)
        assert ({"add", "mul", "sub", "div"} <= set(kernel_calls)) == (threads > 1), kernel_calls
        half_x, half_y = x_np.astype(np.float16), y_np.astype(np.float16)
        calls_before = len(kernel_calls)
        half = mt.tensor(half_x) * mt.tensor(half_y) + mt.tensor(half_x)
        assert half.dtype == mt.float16 and len(kernel_calls) == calls_before
        np.testing.assert_array_equal(half.numpy(), half_x * half_y + half_x)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_arith_maximum_and_minimum_keep_numpys_nans_signed_zeros_and_ties(dtype, isa, threads):
    """Every pair of special values (NaN, infinities, both zeros, equal values), as full
    arrays, a row and a scalar: the kernel's bits are numpy's (a NaN from either side; on a
    tie, the second operand, so maximum(-0, +0) is +0)."""
    special = np.array(SPECIAL + [np.nan, 0.0], dtype)
    a = np.repeat(special, special.size).reshape(special.size, special.size)
    b = np.ascontiguousarray(a.T)
    bits = np.uint32 if dtype == np.float32 else np.uint64
    for op in ("maximum", "minimum"):
        for x, y in ((a, b), (a, b[0]), (a, b[0, :1].reshape(())), (b[0], a)):
            with c_threads(threads, isa), np.errstate(invalid="ignore"):
                got = C.arith(op, x, y)
            expected = N.arith(op, x, y)
            np.testing.assert_array_equal(got.view(bits), expected.view(bits), err_msg=op)


@needs_c
def test_large_maximum_and_minimum_run_on_the_kernel_with_pytorchs_gradients():
    """From 65536 elements on 2 threads maximum and minimum call the arith kernel; ties split
    the gradient evenly, as in PyTorch (the backward is unchanged)."""
    rng = np.random.default_rng(12)
    x_np = rng.standard_normal((64, 1030))
    y_np = np.where(rng.random((64, 1030)) < 0.1, x_np, rng.standard_normal((64, 1030)))
    with arith_kernel_calls(2) as kernel_calls:
        x, y = mt.tensor(x_np, requires_grad=True), mt.tensor(y_np, requires_grad=True)
        out = 2.0 * mt.maximum(x, y) + 3.0 * mt.minimum(x, y)
        np.testing.assert_array_equal(out.detach().numpy(),
                                      2.0 * np.maximum(x_np, y_np) + 3.0 * np.minimum(x_np, y_np))
        out.sum().backward()
        tie = x_np == y_np
        np.testing.assert_array_equal(x.grad.numpy(),
                                      np.where(tie, 2.5, np.where(x_np > y_np, 2.0, 3.0)))
        np.testing.assert_array_equal(y.grad.numpy(),
                                      np.where(tie, 2.5, np.where(x_np > y_np, 3.0, 2.0)))
        assert {"maximum", "minimum"} <= set(kernel_calls), kernel_calls


# ---------------------------------------------------------------------------------------------
# Non-finite and huge values: PyTorch's results
# ---------------------------------------------------------------------------------------------
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 100.0, -100.0, 1e5, -1e5, 3e38,
           -3e38, -5.0, -12.0, 0.7, -0.5, 1.25]


def _torch_cases(torch):
    F = torch.nn.functional
    return {"relu": (F.relu, "relu", ()), "sigmoid": (torch.sigmoid, "sigmoid", ()),
            "silu": (F.silu, "silu", ()), "gelu": (F.gelu, "gelu", ()),
            "gelu tanh": (lambda t: F.gelu(t, approximate="tanh"), "gelu", ("tanh",)),
            "clamp": (lambda t: t.clamp(-0.5, 1.25), "clamp", (-0.5, 1.25))}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [-3, -2, -1, 0, 1, 2, 3, 4, 7])
def test_integer_powers_and_abs_gradient_give_pytorchs_results(dtype, exponent):
    torch = pytest.importorskip("torch")
    x = np.array(SPECIAL, dtype)
    t = torch.from_numpy(x.copy()).requires_grad_()
    y = t.abs()
    y.backward(torch.ones_like(y))
    expected_pow = torch.from_numpy(x).pow(exponent).numpy()
    for backend in _backends():
        with c_threads(2) if backend is C else contextlib.nullcontext():
            with np.errstate(all="ignore"):
                got = backend.pow_int_forward(x, exponent)
                got_abs = backend.abs_backward(np.ones_like(x), x)
        np.testing.assert_allclose(got, expected_pow, rtol=4e-7 * (1 + abs(exponent)),
                                   atol=1e-37, equal_nan=True, err_msg=str(backend))
        np.testing.assert_array_equal(got_abs, t.grad.numpy(), err_msg=str(backend))


def _backends():
    return [N] + ([C] if C is not None else [])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("exponent", [2.5, -0.75, 1.5, 0.3, -3.5, float("inf")])
def test_real_powers_give_pytorchs_results(dtype, exponent):
    torch = pytest.importorskip("torch")
    x = np.array(SPECIAL, dtype)
    expected = torch.from_numpy(x).pow(exponent).numpy()
    # PyTorch rounds the exponent to the tensor's dtype (its rule for a scalar, and minitorch's)
    # in some CPU kernels and keeps it in double in others (seen with its AVX-512 ones): allow
    # the difference that rounding makes, |ln x| times the exponent's rounding error.
    rounding = abs(exponent - float(dtype(exponent))) if math.isfinite(exponent) else 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        slack = np.abs(np.log(np.abs(x.astype(np.float64)))) * rounding * np.abs(expected)
    slack = np.where(np.isfinite(slack), slack, 0.0)
    for backend in _backends():
        with c_threads(2) if backend is C else contextlib.nullcontext():
            got = backend.pow_scalar_forward(x, exponent)
        close = np.isclose(got, expected, rtol=3e-7 if dtype == np.float32 else 1e-15,
                           atol=1e-37 + slack, equal_nan=True)
        assert close.all(), (backend, x[~close], got[~close], expected[~close])


def _ulps_apart(a, b):
    """How many float32 values lie between a and b (0 where both are NaN; NaN against a
    number counts as far apart)."""
    def ordered(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    apart = np.abs(ordered(a) - ordered(b))
    apart = np.where(np.isnan(a) & np.isnan(b), 0, apart)
    return np.where(np.isnan(a) != np.isnan(b), 2**32, apart)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
def test_float32_real_powers_are_within_an_ulp_of_double_precision(isa, threads):
    # Bases drawn as random bit patterns: every binade, subnormals, both signs, with zeros,
    # infinities and a quiet NaN (a signaling NaN to the power 0 is NaN in libm's powf and 1
    # once widened to double); the exponents cover overflow, underflow, odd and even integers.
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([x[~np.isnan(x)], np.array(SPECIAL + [1.0, -1.0, 2.0, -2.0], np.float32)])
    for exponent in (0.3, 2.5, -1.7, 7.9, -20.3, 1e-3, 100.5, 3.0, -2.0, 0.0, 1.0, -np.inf):
        e = np.float32(exponent)
        with np.errstate(all="ignore"):
            exact = np.power(x.astype(np.float64), np.float64(e)).astype(np.float32)
        with c_threads(threads, isa):
            got = C.pow_scalar_forward(x, float(e))
        apart = _ulps_apart(got, exact)
        assert apart.max() <= 1, (exponent, x[apart > 1][:5], got[apart > 1][:5])


@pytest.mark.parametrize("dtype", DTYPES)
def test_special_values_give_pytorchs_results(dtype):
    torch = pytest.importorskip("torch")
    x = np.array(SPECIAL, dtype)
    for name, (torch_fn, kernel, extra) in _torch_cases(torch).items():
        t = torch.from_numpy(x.copy()).requires_grad_()
        # PyTorch's float32 erf is Abramowitz-Stegun's, which makes GELU(inf) NaN: compare the
        # exact GELU with PyTorch's float64, rounded
        exact = name == "gelu" and dtype == np.float32
        if exact:
            t = torch.from_numpy(x.astype(np.float64)).requires_grad_()
        y = torch_fn(t)
        y.backward(torch.ones_like(y))
        expected_y = y.detach().numpy().astype(dtype)
        expected_dx = t.grad.numpy().astype(dtype)
        forward_out = N.relu_forward(x) if kernel == "relu" else N.sigmoid_forward(x)
        saved = {"relu": forward_out, "sigmoid": forward_out}.get(kernel, x)
        for backend in _backends():
            for isa in (ISAS if backend is C else [None]):
                with c_threads(2, isa) if backend is C else contextlib.nullcontext():
                    with np.errstate(all="ignore"):
                        got_y = getattr(backend, f"{kernel}_forward")(x, *extra)
                        got_dx = getattr(backend, f"{kernel}_backward")(np.ones_like(x), saved,
                                                                        *extra)
                where = f"{name} on {backend.__name__.rsplit('.', 1)[-1]} {isa or ''}"
                # atol: GELU's left tail (-2e-32 at -12) is 0 in PyTorch's 1 + erf form, and
                # PyTorch's float32 tanh form loses a fifth of its values at -5 to cancellation
                atol = 1e-6 if name == "gelu tanh" and dtype == np.float32 else 1e-30
                np.testing.assert_allclose(got_y, expected_y, rtol=2e-6, atol=atol,
                                           equal_nan=True, err_msg=where)
                np.testing.assert_allclose(got_dx, expected_dx, rtol=2e-6, atol=atol,
                                           equal_nan=True, err_msg=f"{where} backward")


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_propagate_nan_and_inf(dtype):
    x = np.zeros((4, 40_000), dtype)
    x[0, 123], x[1, 39_999], x[2, 5] = np.nan, np.inf, -np.inf
    x[3, 17:20] = [np.inf, -np.inf, 1.0]
    for backend in _backends():
        with c_threads(2) if backend is C else contextlib.nullcontext():
            sums = backend.sum_rows(x)
            maxima, minima = backend.amax_rows(x), backend.amax_rows(x, False)
            whole = backend.sum_rows(x[1:2].reshape(1, -1)), backend.amax_rows(x.reshape(1, -1))
        np.testing.assert_array_equal(sums, [np.nan, np.inf, -np.inf, np.nan])
        np.testing.assert_array_equal(maxima, [np.nan, np.inf, 0.0, np.inf])
        np.testing.assert_array_equal(minima, [np.nan, 0.0, -np.inf, -np.inf])
        np.testing.assert_array_equal(whole[0], [np.inf])
        np.testing.assert_array_equal(whole[1], [np.nan])


# ---------------------------------------------------------------------------------------------
# Layouts, accuracy, determinism, repeated indices
# ---------------------------------------------------------------------------------------------
def _layouts(a):
    """a in other memory layouts: strided, transposed, negative strides, misaligned."""
    strided = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)[:, ::2]
    strided[...] = a
    raw = bytearray(a.nbytes + 1)
    misaligned = np.frombuffer(raw, a.dtype, count=a.size, offset=1).reshape(a.shape)
    misaligned[...] = a
    return {"strided": strided, "transposed": np.asfortranarray(a),
            "negative": np.flip(np.flip(a).copy()), "misaligned": misaligned}


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
def test_every_layout_gives_its_contiguous_result(dtype):
    rng = np.random.default_rng(3)
    x, dy = rng.standard_normal((37, 65)).astype(dtype), rng.standard_normal((37, 65)).astype(dtype)
    calls = {"relu backward": (C.relu_backward, [dy, x]), "gelu": (C.gelu_forward, [x]),
             "gelu backward": (C.gelu_backward, [dy, x]), "sigmoid": (C.sigmoid_forward, [x]),
             "silu backward": (C.silu_backward, [dy, x]), "clamp": (C.clamp_forward, [x]),
             "rsqrt": (C.rsqrt_forward, [np.abs(x) + 1]), "erf": (C.erf_forward, [x]),
             "exp": (C.exp_forward, [x]), "softplus": (C.softplus_forward, [x]),
             "log": (C.log_forward, [np.abs(x) + 1]),
             "cumsum_rows": (C.cumsum_rows, [x]),
             "sum_rows": (C.sum_rows, [x]),
             "amax_rows": (C.amax_rows, [x]),
             "index_add_rows": (lambda s: C.index_add_rows(s, np.arange(37) % 5, 5), [x])}
    for name, (call, arrays) in calls.items():
        expected = call(*arrays)
        for layout, laid_out in _layouts(arrays[-1]).items():
            got = call(*arrays[:-1], laid_out)
            np.testing.assert_array_equal(got, expected, err_msg=f"{name}, {layout}")


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
def test_float32_sums_of_a_million_terms_stay_accurate(isa, threads):
    x = np.full((1, 1_000_003), 0.1, np.float32)
    exact = 1_000_003 * float(np.float32(0.1))
    with c_threads(threads, isa):
        total = C.sum_rows(x)[0]
        mean = C.sum_rows(x, 1 / x.size)[0]
    assert abs(total - exact) <= 1e-6 * exact  # a plain float32 loop is off by ~1e-3
    assert abs(mean - exact / x.size) <= 1e-6 * exact / x.size


@needs_c
def test_long_rows_split_over_threads_give_one_result_every_run():
    x = np.random.default_rng(5).standard_normal((1, 300_001)).astype(np.float32) * 1e3
    with c_threads(2):
        first = C.sum_rows(x)
        assert all(np.array_equal(C.sum_rows(x), first) for _ in range(5))
    with c_threads(1):
        np.testing.assert_allclose(C.sum_rows(x), first, rtol=1e-6)


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_repeated_row_indices_add_up(backend, dtype):
    src = np.arange(12, dtype=dtype).reshape(4, 3)
    out = backend.index_add_rows(src, np.array([2, 0, 2, 2]), 3)
    np.testing.assert_array_equal(out, [[3, 4, 5], [0, 0, 0], [0 + 6 + 9, 1 + 7 + 10, 2 + 8 + 11]])
    big = np.random.default_rng(1).standard_normal((5000, 40)).astype(dtype)
    rows = np.random.default_rng(2).integers(0, 7, 5000)
    expected = np.zeros((7, 40))
    np.add.at(expected, rows, big.astype(np.float64))
    with c_threads(2) if backend is C else contextlib.nullcontext():
        np.testing.assert_allclose(backend.index_add_rows(big, rows, 7), expected,
                                   rtol=1e-5, atol=1e-4 if dtype == np.float32 else 1e-10)


@needs_c
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cols", [40, 1536])
def test_index_add_rows_writes_all_of_out_the_same_on_1_and_2_threads(dtype, cols):
    """The kernel zeroes out itself (the backend hands it uninitialised memory, here NaNs, and
    rows no index picks must come back 0); 1536 columns are wide enough for 2 threads to split
    them, and the split must not change a bit."""
    rng = np.random.default_rng(3)
    src = rng.standard_normal((300, cols)).astype(dtype)
    rows = rng.integers(0, 9, 300) * 2  # odd rows: picked by no index
    expected = np.zeros((19, cols))
    np.add.at(expected, rows, src.astype(np.float64))
    results = []
    for threads in (1, 2):
        out = np.full((19, cols), np.nan, dtype)
        kernel = C._kernel("index_add_rows", out.dtype)
        with c_threads(threads):
            assert kernel(C._ptr(src), C._ptr(rows), C._ptr(out), 300, cols, 19) == 0
        results.append(out)
    np.testing.assert_allclose(results[0], expected, rtol=1e-5,
                               atol=1e-4 if dtype == np.float32 else 1e-10)
    np.testing.assert_array_equal(results[0], results[1])


# ---------------------------------------------------------------------------------------------
# Bad input: the same Python error on both backends, naming the argument
# ---------------------------------------------------------------------------------------------
F64 = np.ones((2, 3))
BAD_CALLS = [
    ("integer x", lambda B: B.gelu_forward(np.ones(3, np.int64)), TypeError, "x"),
    ("list x", lambda B: B.relu_forward([1.0, 2.0]), TypeError, "x"),
    ("dtypes differ", lambda B: B.sigmoid_backward(F64, F64.astype(np.float32)), TypeError, "y"),
    ("shapes differ", lambda B: B.silu_backward(F64, np.ones(3)), ValueError, "x"),
    ("relu y shape", lambda B: B.relu_backward(F64, np.ones((3, 2))), ValueError, "y"),
    ("approximate", lambda B: B.gelu_forward(F64, "erf"), ValueError, "approximate"),
    ("approximate backward", lambda B: B.gelu_backward(F64, F64, None), ValueError, "approximate"),
    ("clamp NaN min", lambda B: B.clamp_forward(F64, float("nan"), 1.0), ValueError, "min"),
    ("clamp NaN max", lambda B: B.clamp_backward(F64, F64, None, np.nan), ValueError, "max"),
    ("clamp bound type", lambda B: B.clamp_forward(F64, "0", None), TypeError, "min"),
    ("clamp bool bound", lambda B: B.clamp_forward(F64, None, True), TypeError, "max"),
    ("sum_rows 0-d", lambda B: B.sum_rows(np.array(1.0)), ValueError, "x"),
    ("sum_rows integers", lambda B: B.sum_rows(np.ones(3, np.int64)), TypeError, "x"),
    ("amax_rows empty row", lambda B: B.amax_rows(np.ones((2, 0))), ValueError, "x"),
    ("rows out of range", lambda B: B.index_add_rows(F64, np.array([0, 4]), 4), IndexError,
     "rows"),
    ("rows negative", lambda B: B.index_add_rows(F64, np.array([-1, 0]), 4), IndexError, "rows"),
    ("rows dtype", lambda B: B.index_add_rows(F64, np.array([0, 1], np.int32), 4), TypeError,
     "rows"),
    ("rows shape", lambda B: B.index_add_rows(F64, np.array([0, 1, 1]), 4), ValueError, "rows"),
    ("out_rows", lambda B: B.index_add_rows(F64, np.array([0, 1]), -1), ValueError, "out_rows"),
    ("pow_int exponent range", lambda B: B.pow_int_forward(F64, 65), ValueError, "exponent"),
    ("pow_int exponent type", lambda B: B.pow_int_forward(F64, 2.0), TypeError, "exponent"),
    ("pow exponent type", lambda B: B.pow_scalar_forward(F64, "2.5"), TypeError, "exponent"),
    ("pow bool exponent", lambda B: B.pow_scalar_forward(F64, True), TypeError, "exponent"),
    ("pow integers", lambda B: B.pow_scalar_forward(np.ones(3, np.int64), 2.5), TypeError, "x"),
    ("abs integers", lambda B: B.abs_forward(np.ones(3, np.int64)), TypeError, "x"),
    ("sqrt list", lambda B: B.sqrt_forward([4.0]), TypeError, "x"),
    ("abs backward shapes", lambda B: B.abs_backward(F64, np.ones(6)), ValueError, "x"),
    ("where condition dtype", lambda B: B.where(F64, F64, F64), TypeError, "condition"),
    ("where integer a", lambda B: B.where(F64 > 0, np.ones((2, 3), np.int64), F64), TypeError,
     "a"),
    ("where dtypes", lambda B: B.where(F64 > 0, F64, F64.astype(np.float32)), TypeError, "b"),
    ("where a shape", lambda B: B.where(F64 > 0, np.ones(3), F64), ValueError, "a"),
    ("where b shape", lambda B: B.where(F64 > 0, F64, np.ones((1, 1))), ValueError, "b"),
    ("arith op", lambda B: B.arith("pow", F64, F64), ValueError, "op"),
    ("arith dtypes", lambda B: B.arith("add", F64, F64.astype(np.float32)), TypeError, "b"),
    ("arith shapes", lambda B: B.arith("add", F64, np.ones((3, 2))), ValueError, "a and b"),
    ("arith leading row", lambda B: B.arith("add", F64, np.ones((2, 1))), ValueError, "a and b"),
    ("arith strided", lambda B: B.arith("mul", np.ones((2, 6))[:, ::2], F64), ValueError,
     "a and b"),
    ("arith out shape", lambda B: B.arith("sub", F64, F64, out=np.ones(6)), ValueError, "out"),
    ("arith out read-only", lambda B: B.arith("div", F64, F64, out=np.broadcast_to(1.0, (2, 3))),
     ValueError, "out"),
]


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.__name__.rsplit(".", 1)[-1])
@pytest.mark.parametrize("name,call,error,argument", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_naming_the_argument(backend, name, call, error, argument):
    with pytest.raises(error, match=argument):
        call(backend)


@needs_c
def test_c_entry_points_reject_what_python_should_have():
    """Defence in depth: the kernels check their sizes again (MT_ERR_ARGS = -2)."""
    lib, ffi = C.lib, C.ffi
    out = np.zeros(4)
    p = ffi.from_buffer("double[]", out)
    assert lib.mt_relu_forward_f64(p, p, -1) == -2
    assert lib.mt_gelu_forward_f64(p, p, 4, 2) == -2
    assert lib.mt_clamp_forward_f64(p, p, 4, float("nan"), 1.0) == -2
    assert lib.mt_sum_rows_f64(p, p, -1, 2, 1.0) == -2
    assert lib.mt_amax_rows_f64(p, p, 2, 0, 1) == -2
    rows = np.array([0, 5], np.int64)
    assert lib.mt_index_add_rows_f64(p, ffi.from_buffer("int64_t[]", rows), p, 2, 1, 4) == -2
    assert lib.mt_pow_int_forward_f64(p, p, 4, 65) == -2
    assert lib.mt_pow_scalar_forward_f64(p, p, -4, 2.5) == -2
    assert lib.mt_abs_forward_f64(p, p, -4) == -2
    assert lib.mt_sqrt_forward_f64(p, p, -4) == -2
    assert lib.mt_abs_backward_f64(p, p, p, -4) == -2
    condition = ffi.from_buffer("uint8_t[]", np.ones(4, bool))
    assert lib.mt_where_f64(condition, p, p, p, 4, 2, 1) == -2  # steps are 0 or 1
    assert lib.mt_where_f64(condition, p, p, p, -4, 1, 1) == -2
    assert lib.mt_arith_f64(6, p, 0, p, 0, p, 1, 4) == -2  # no such op
    assert lib.mt_arith_f64(0, p, 2, p, 1, p, 1, 4) == -2  # no full operand
    np.testing.assert_array_equal(out, 0)  # a rejected call writes nothing


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_erf_is_accurate_relatively_down_to_tiny_arguments(isa, dtype):
    """Relative to libm's erf in double: near 0 erf(x) ~ 1.13 x, so an absolute tolerance alone
    would pass an erf computed as 1 - erfc(x); and erf's special values."""
    import math
    x = np.concatenate([np.geomspace(1e-30, 6.0, 4001), -np.geomspace(1e-20, 6.0, 997)])
    x = x.astype(dtype)
    exact = np.array([math.erf(float(v)) for v in x])
    with c_threads(1, isa):
        got = C.erf_forward(x).astype(np.float64)
        special = C.erf_forward(np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype))
    rtol = 4e-7 if dtype == np.float32 else 1e-15
    np.testing.assert_allclose(got, exact.astype(dtype), rtol=rtol, atol=0)
    assert special[:4].tolist() == [0.0, 0.0, 1.0, -1.0] and np.signbit(special[1])
    assert np.isnan(special[4])


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_is_accurate_over_its_range_and_at_its_edges(isa, dtype):
    """Relative to libm's exp in double from the underflow to the overflow threshold: the tuned
    exp within ~2.5 ulp in float32, 2 in float64 (fast_exp.h), twice that in the band just
    below the overflow threshold where it squares exp(x/2) (pointwise_tuned.c); and the special
    values: overflow to inf, -inf to 0, NaN kept."""
    import math
    top = 88.72 if dtype == np.float32 else 709.78
    band = 88.0 if dtype == np.float32 else 708.0
    bottom = -87.3 if dtype == np.float32 else -708.3  # results stay normal above these
    rtol = 4e-7 if dtype == np.float32 else 5e-16
    for lo, hi, bound in ((bottom, band, rtol), (band, top, 2 * rtol)):
        x = np.concatenate([np.linspace(lo, hi, 10007), np.geomspace(1e-30, 1.0, 501)])
        x = x.astype(dtype)
        exact = np.array([math.exp(float(v)) for v in x])
        with c_threads(1, isa):
            got = C.exp_forward(x).astype(np.float64)
        np.testing.assert_allclose(got, exact.astype(dtype), rtol=bound, atol=0,
                                   err_msg=f"[{lo}, {hi}]")
    with c_threads(1, isa):
        special = C.exp_forward(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, top + 1,
                                          2 * bottom], dtype))
    assert special[:4].tolist() == [1.0, 1.0, np.inf, 0.0] and np.isnan(special[4])
    assert special[5] == np.inf and special[6] == 0.0


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_softplus_is_accurate_relatively_and_linear_past_the_threshold(isa, dtype):
    """Relative to log1p(exp(z)) / beta in double (the float32 log1p is atanh's series:
    pointwise_tuned.c), from where it is ~e^z to where it is ~z, for beta 1 and 0.5; x itself
    where beta x > threshold; NaN kept, -inf to 0."""
    import math
    x = np.concatenate([np.linspace(-80.0, 30.0, 20011), np.geomspace(1e-30, 1.0, 501)])
    x = np.concatenate([x, -x]).astype(dtype)
    rtol = 8e-7 if dtype == np.float32 else 1e-15
    for beta, threshold in ((1.0, 20.0), (0.5, 5.0)):
        z = (x * dtype(beta)).astype(np.float64)
        exact = np.array([(max(v, 0.0) + math.log1p(math.exp(-abs(v)))) / beta for v in z])
        exact = np.where(z > threshold, x.astype(np.float64), exact).astype(dtype)
        with c_threads(1, isa):
            got = C.softplus_forward(x, beta, threshold)
        np.testing.assert_allclose(got, exact, rtol=rtol, atol=0, err_msg=f"beta {beta}")
        assert (got[z > threshold] == x[z > threshold]).all()
    with c_threads(1, isa):
        special = C.softplus_forward(np.array([np.nan, -np.inf, np.inf, 0.0], dtype))
    assert np.isnan(special[0]) and special[1] == 0.0 and special[2] == np.inf
    assert special[3] == dtype(math.log(2.0))


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_log_is_accurate_relatively_from_the_smallest_to_the_largest_value(isa, dtype):
    """Relative to libm's log in double over every binade, subnormals included, and near 1
    (where ln x ~ x - 1 is small); NaN below 0 and for NaN, -inf at 0, inf at inf."""
    import math
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    x = np.concatenate([np.geomspace(tiny, float(info.max), 30011),
                        1 + np.linspace(-0.3, 0.3, 6001), np.geomspace(1e-7, 1e-3, 101) + 1])
    x = x.astype(dtype)
    x = x[(x > 0) & (x != 1)]
    exact = np.array([math.log(float(v)) for v in x])
    with c_threads(1, isa):
        got = C.log_forward(x).astype(np.float64)
        special = C.log_forward(np.array([1.0, 0.0, -0.0, np.inf, -1.0, -np.inf, np.nan], dtype))
    rtol = 4e-7 if dtype == np.float32 else 5e-16
    np.testing.assert_allclose(got, exact.astype(dtype), rtol=rtol, atol=0)
    assert special[:4].tolist() == [0.0, -np.inf, -np.inf, np.inf] and np.isnan(special[4:]).all()


class _CallsSeen:
    """A stand-in for the C library that notes the entry points looked up through it."""

    def __init__(self, lib):
        self._lib, self.names = lib, set()

    def __getattr__(self, name):
        self.names.add(name)
        return getattr(self._lib, name)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_large_where_and_masked_fill_take_the_kernel_with_numpys_values_and_gradients(
        dtype, threads, isa):
    """From 4096 elements where and masked_fill (and their backward, where again) run on the C
    kernel: its values are numpy's, and the gradients the condition's two halves."""
    rng = np.random.default_rng(3)
    condition = rng.random((64, 65)) < 0.5
    a_np, b_np = (rng.standard_normal(condition.shape).astype(dtype) for _ in range(2))
    seen = _CallsSeen(C.lib)
    with c_threads(threads, isa), C.replaced(lib=seen):
        a, b = mt.tensor(a_np, requires_grad=True), mt.tensor(b_np, requires_grad=True)
        mask = mt.tensor(condition)
        picked = mt.where(mask, a, b)
        filled = a.masked_fill(mask, 2.5)
        (picked.sum() + filled.sum()).backward()
    assert f"mt_where_{'f32' if dtype == np.float32 else 'f64'}" in seen.names
    np.testing.assert_array_equal(picked.detach().numpy(), np.where(condition, a_np, b_np))
    np.testing.assert_array_equal(filled.detach().numpy(), np.where(condition, dtype(2.5), a_np))
    np.testing.assert_array_equal(a.grad.numpy(), np.ones(condition.shape))  # where's + fill's
    np.testing.assert_array_equal(b.grad.numpy(), ~condition)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op,kernel,expected", [
    (lambda t: t.abs(), "abs_forward", np.abs),
    (lambda t: t.sqrt(), "sqrt_forward", np.sqrt),
    (lambda t: t ** 0.5, "sqrt_forward", np.sqrt),
    (lambda t: t ** -0.5, "sqrt_forward", lambda x: 1 / np.sqrt(x))])
def test_large_unary_ops_take_the_kernel_on_two_threads_with_numpys_values(op, kernel,
                                                                         expected, dtype, isa):
    """From 65536 elements, with a second thread to run on, abs and sqrt (x ** 0.5 and
    x ** -0.5 too) run on the C kernels (on one thread numpy's loop is as fast): numpy's
    values, -0.0, NaN and infinities included; the gradients through them are those of the
    numpy path. Integers stay on numpy."""
    rng = np.random.default_rng(4)
    x_np = rng.standard_normal((256, 257)).astype(dtype)
    x_np[0, :5] = [-0.0, 0.0, np.nan, -np.inf, np.inf]
    seen = _CallsSeen(C.lib)
    with c_threads(2, isa), C.replaced(lib=seen), np.errstate(invalid="ignore", divide="ignore"):
        x = mt.tensor(x_np, requires_grad=True)
        y = op(x)
        y.sum().backward()
    with c_threads(1, isa), np.errstate(invalid="ignore", divide="ignore"):  # numpy's path
        x1 = mt.tensor(x_np, requires_grad=True)
        op(x1).sum().backward()
    assert f"mt_{kernel}_{'f32' if dtype == np.float32 else 'f64'}" in seen.names
    with np.errstate(invalid="ignore", divide="ignore"):
        want = expected(x_np)
    np.testing.assert_array_equal(y.detach().numpy(), want)
    signs = np.signbit(y.detach().numpy()[0, :2])
    assert signs.tolist() == np.signbit(want[0, :2]).tolist()  # -0.0 kept or not
    np.testing.assert_array_equal(x.grad.numpy(), x1.grad.numpy())
    counts = mt.tensor(np.arange(-70_000, 0)).abs()
    assert counts.dtype == mt.int64 and counts.numpy()[0] == 70_000
