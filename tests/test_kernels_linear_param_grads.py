"""A Linear layer's weight and bias gradients from one pass over dY (mt_linear_param_grads,
csrc/gemm.c and tuned/gemm_tuned.c) against the two calls it replaces, the GEMM dYᵀ X
(matmul(dy.T, x)) and the column sum (sum_cols(dy)), and against the numpy backend.

The tuned body adds dY's columns up while it packs dY for the product, each column's rows in
order in the element type, as sum_cols adds them, so on every ISA level (the reference body
too), at 1 and 2 threads, both dtypes, both results equal the unfused ones bit for bit: shapes on
the small-product path, on the blocked path (several K blocks, so a column's sum runs on over
blocks; several A blocks, shared out to a team or, with few output rows, column slices where
only one thread sums), empty dims; NaN and infinities in dY; strided inputs; the gradients
written into row blocks of a larger array (cross-attention's packed projection). Bad arguments
are Python exceptions, and a bad leading dimension is the C function's error status.
"""
import numpy as np
import pytest

import minitorch
from minitorch.backends import numpy_backend as N
from test_kernels import DTYPES, ISAS, THREADS, C, c_threads, needs_c

# (rows, out, in): small path (k = rows <= kc and both operands in L1), a partial row tile;
# blocked: rows over 1, 2 and 3 K blocks (kc 512 / 256), out past one A block (mc 128 / 144)
# and in with a partial NR sliver; few outputs and many inputs (2 threads: column slices); an
# odd block count (2 threads: a team splitting slivers); single rows and columns; empty dims.
# On AVX-512 the products with rows past 512 and dY, X within 2.5 MiB take the whole-K path;
# 700 x 203 x 40 there splits its rows between 2 threads, each summing its own columns of dY.
SHAPES = [(24, 13, 40), (64, 64, 64), (3, 7, 5), (300, 203, 97), (1100, 70, 301),
          (520, 9, 700), (517, 300, 130), (600, 1, 33), (1, 1, 1), (17, 130, 1),
          (700, 203, 40), (0, 5, 3), (4, 0, 3), (4, 5, 0)]


def operands(rows, out, width, dtype, seed):
    rng = np.random.default_rng(seed)
    dy = rng.standard_normal((rows, out)).astype(dtype)
    x = rng.standard_normal((rows, width)).astype(dtype)
    if rows > 2 and out > 2:  # NaN and infinities into a column's sum and the product
        dy[1, 0], dy[2, 1], dy[0, 2] = np.nan, np.inf, -np.inf
    return dy, x


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_gradients_equal_the_gemm_and_the_column_sum_bit_for_bit(dtype, threads, isa):
    with c_threads(threads, isa):
        for rows, out, width in SHAPES:
            dy, x = operands(rows, out, width, dtype, rows + out + width)
            dw, db = C.linear_param_grads(dy, x)
            label = f"{rows}x{out}x{width}"
            assert dw.shape == (out, width) and db.shape == (out,), label
            assert dw.dtype == db.dtype == dtype, label
            np.testing.assert_array_equal(dw, C.matmul(dy.T, x), err_msg=label)
            np.testing.assert_array_equal(db, C.sum_cols(dy), err_msg=label)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_gradients_equal_the_numpy_backend(dtype, threads):
    rtol, atol = (1e-5, 1e-4) if dtype == np.float32 else (1e-12, 1e-11)
    with c_threads(threads, C.best_isa()):
        for rows, out, width in SHAPES:
            dy, x = operands(rows, out, width, dtype, 7 * rows + out)
            dy[np.isnan(dy) | np.isinf(dy)] = 0.5
            for got, want in zip(C.linear_param_grads(dy, x), N.linear_param_grads(dy, x)):
                assert got.dtype == want.dtype == dtype
                np.testing.assert_allclose(got, want, rtol=rtol, atol=atol,
                                           err_msg=f"{rows}x{out}x{width}")


@needs_c
@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_strided_inputs_and_gradients_written_into_row_blocks(backend):
    kernels = C if backend == "c" else N
    rng = np.random.default_rng(3)
    dy_wide, x_wide = rng.standard_normal((300, 80)), rng.standard_normal((300, 50))
    dy, x = dy_wide[:, ::2], x_wide[:, 5:45]  # strided: copied; a row slice: read in place
    want_w, want_b = kernels.linear_param_grads(np.ascontiguousarray(dy),
                                                np.ascontiguousarray(x))
    got_w, got_b = kernels.linear_param_grads(dy, x)
    np.testing.assert_array_equal(got_w, want_w)
    np.testing.assert_array_equal(got_b, want_b)
    packed_w, packed_b = np.full((100, 40), np.nan), np.full(100, np.nan)
    result = kernels.linear_param_grads(dy, x, out=(packed_w[60:], packed_b[60:]))
    assert result[0].base is packed_w and result[1].base is packed_b
    np.testing.assert_array_equal(packed_w[60:], want_w)
    np.testing.assert_array_equal(packed_b[60:], want_b)
    assert np.isnan(packed_w[:60]).all() and np.isnan(packed_b[:60]).all()  # untouched


@needs_c
@pytest.mark.parametrize("backend", ["c", "numpy"])
def test_bad_arguments_are_python_exceptions(backend):
    kernels = C if backend == "c" else N
    dy, x = np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="same rows"):
        kernels.linear_param_grads(dy, x[:3])
    with pytest.raises(ValueError, match="2-d"):
        kernels.linear_param_grads(dy.reshape(2, 2, 3), x)
    with pytest.raises(TypeError, match="same dtype"):
        kernels.linear_param_grads(dy, x.astype(np.float64))
    with pytest.raises(TypeError, match="float32 or float64"):
        kernels.linear_param_grads(dy.astype(np.int64), x)
    with pytest.raises(ValueError, match="shape"):
        kernels.linear_param_grads(dy, x, out=(np.empty((3, 3), np.float32),
                                               np.empty(3, np.float32)))
    with pytest.raises(ValueError, match="C-contiguous"):
        kernels.linear_param_grads(dy, x, out=(np.empty((2, 3), np.float32).T,
                                               np.empty(3, np.float32)))


@needs_c
def test_the_c_function_refuses_a_short_leading_dimension():
    dy, x = np.ones((4, 3), np.float32), np.ones((4, 2), np.float32)
    dw, db = np.empty((3, 2), np.float32), np.empty(3, np.float32)
    ptr = C.ffi.from_buffer
    for ldy, ldx, ldw in ((2, 2, 2), (3, 1, 2), (3, 2, 1)):
        status = C.lib.mt_linear_param_grads_f32(ptr("float[]", dy), ldy, ptr("float[]", x), ldx,
                                                 4, 3, 2, ptr("float[]", dw), ldw,
                                                 ptr("float[]", db))
        assert status != 0, (ldy, ldx, ldw)


@needs_c
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
def test_linear_layers_take_their_parameter_gradients_from_it(dtype, monkeypatch):
    """nn.Linear, the Transformer's feed-forward block and cross-attention's packed projection,
    on inputs large enough for the C column sum, get exactly the fused call's gradients."""
    calls = []
    fused = C.linear_param_grads
    minitorch.manual_seed(0)
    with minitorch.backends.using("c"):
        monkeypatch.setattr(minitorch.backends.current(), "linear_param_grads",
                            lambda *a, **k: calls.append(1) or fused(*a, **k))
        linear = minitorch.nn.Linear(40, 300).to(dtype)
        x = minitorch.randn(2, 30, 40, dtype=dtype)
        linear(x).sin().sum().backward()
        dy = np.cos(linear(x).detach().numpy()).reshape(60, 300)
        want_w, want_b = fused(dy, x.numpy().reshape(60, 40))
        np.testing.assert_array_equal(linear.weight.grad.numpy(), want_w)
        np.testing.assert_array_equal(linear.bias.grad.numpy(), want_b)
        layer = minitorch.nn.TransformerDecoderLayer(64, 4, 256, dropout=0.0,
                                                     batch_first=True).to(dtype)
        layer(minitorch.randn(4, 80, 64, dtype=dtype),
              minitorch.randn(4, 70, 64, dtype=dtype)).sum().backward()
    # the Linear; then self-attention's in and out projections, cross-attention's pair (one
    # call each) and out projection, and linear2
    assert len(calls) == 1 + 6
