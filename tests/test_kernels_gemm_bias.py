"""The GEMM with a bias row (and ReLU) applied to each tile of the product (mt_gemm_bias,
csrc/gemm.c and tuned/gemm_tuned.c; a Linear layer's forward as one call) against the unfused
chain it replaces, matmul then arith's add (then bias_relu_forward's ReLU), and against the
numpy backend's matmul_bias.

The fused path adds the bias to the same rounded products in the same order, so on every ISA
level (the reference body too), at 1 and 2 threads, both dtypes, it equals the chain bit for bit:
shapes on the small-product path (whole product in L1, a last partial row tile overlapping the
one before it), on the blocked path (several K blocks, so the bias goes in only once the last
one is done; several A blocks; partial row tiles and B slivers; at 2 threads a team sharing B
panels and, with few rows, threads given column slices, each with its part of the bias), with
W stored (out, in) as a Linear's weight (B transposed) and stored (in, out); NaN, infinities and
signed zeros through the ReLU; an empty inner dimension (the bias rows alone).
"""
import numpy as np
import pytest

from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, C, c_threads, needs_c

# (m, n, k): small path (k <= kc, all in L1), a partial row tile; blocked: k over 1 and 2 K
# blocks (kc 512 / 256), m past one A block, n with a partial NR sliver; few rows and many
# columns (2 threads: column slices); a single row and column
SHAPES = [(13, 40, 24), (64, 64, 64), (7, 5, 3), (203, 97, 300), (301, 70, 1100),
          (9, 700, 520), (16, 1030, 40), (1, 1, 1), (1, 33, 600), (130, 1, 17)]


def operands(m, n, k, dtype, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(dtype)
    weight = rng.standard_normal((n, k)).astype(dtype)  # (out, in): the GEMM reads weight.T
    bias = rng.standard_normal(n).astype(dtype)
    if m > 1 and n > 2:  # NaN, inf and -0.0 + 0.0 through the bias add and the ReLU
        x[0, :] = 0.0
        x[0, 0] = np.nan
        weight[1, :] = 0.0
        bias[1], bias[2 % n] = -0.0, np.inf
    return x, weight, bias


def unfused(x, w, bias, relu):
    out = C.matmul(x, w)
    if relu:
        return C.bias_relu_forward(out, bias, out=out)
    return C.arith("add", out, bias, out=out)


def cases(dtype, both_layouts):
    """(label, x, W as the GEMM reads it, bias, relu) over SHAPES, relu off and on; W.T as a
    Linear's weight is read (transposed B) and, with both_layouts, also stored (in, out)."""
    for m, n, k in SHAPES:
        x, weight, bias = operands(m, n, k, dtype, m + n + k)
        for w in (weight.T, np.ascontiguousarray(weight.T))[:2 if both_layouts else 1]:
            for relu in (False, True):
                yield f"{m}x{n}x{k} relu={relu}", x, w, bias, relu


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_bias_equals_gemm_then_add_bit_for_bit(dtype, threads, isa):
    with c_threads(threads, isa):
        for label, x, w, bias, relu in cases(dtype, both_layouts=True):
            got, expected = C.matmul_bias(x, w, bias, relu), unfused(x, w, bias, relu)
            assert got.shape == expected.shape and got.dtype == dtype
            np.testing.assert_array_equal(got, expected, err_msg=label)
            np.testing.assert_array_equal(np.signbit(got), np.signbit(expected), err_msg=label)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_c_matmul_bias_equals_numpy_backend(dtype, threads):
    rtol, atol = (1e-5, 1e-4) if dtype == np.float32 else (1e-12, 1e-11)
    with c_threads(threads, C.best_isa()):
        for label, x, w, bias, relu in cases(dtype, both_layouts=False):
            got, expected = C.matmul_bias(x, w, bias, relu), N.matmul_bias(x, w, bias, relu)
            assert expected.dtype == dtype
            np.testing.assert_allclose(got, expected, rtol=rtol,
                                       atol=atol * x.shape[1] ** 0.5, err_msg=label)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=label)


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_empty_inner_dim_gives_the_bias_rows(dtype, isa):
    bias = np.array([1.5, -2.0, -0.0, np.nan], dtype)
    summed = np.zeros(4, dtype) + bias  # the empty sum, +0, plus the bias: -0.0 becomes +0.0
    with c_threads(1, isa):
        for relu, row in ((False, summed), (True, np.where(summed < 0, 0, summed))):
            for backend in (C, N):
                got = backend.matmul_bias(np.empty((3, 0), dtype), np.empty((0, 4), dtype), bias,
                                          relu)
                np.testing.assert_array_equal(got, np.tile(row, (3, 1)))
                np.testing.assert_array_equal(np.signbit(got), np.signbit(np.tile(row, (3, 1))))
        assert C.matmul_bias(np.empty((0, 2), dtype), np.ones((2, 4), dtype), bias).shape == (0, 4)


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_bad_arguments_raise(backend):
    if backend == "c" and C is None:
        pytest.skip("C extension not built")
    kernels = C if backend == "c" else N
    x, w, b = np.ones((3, 4)), np.ones((4, 5)), np.ones(5)
    with pytest.raises(ValueError, match="bias must have shape"):
        kernels.matmul_bias(x, w, np.ones(4))
    with pytest.raises(ValueError, match="cannot be multiplied"):
        kernels.matmul_bias(x, np.ones((3, 5)), b)
    with pytest.raises(TypeError, match="same dtype"):
        kernels.matmul_bias(x, w, b.astype(np.float32))
    with pytest.raises(ValueError, match="2-d"):
        kernels.matmul_bias(np.ones(4), w, b)
