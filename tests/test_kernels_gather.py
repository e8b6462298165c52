"""Kernel tests of gather along a dim (csrc/gather.c), its adjoint scatter-add
(csrc/scatter_add.c) and the triangles (csrc/triangle.c), against the numpy reference:

- C equals numpy bit for bit on listed and drawn (hypothesis: the campaign's profiles)
  shapes, dims (negative ones too) and index lengths (empty included), with negative and
  repeated indices, at 1 and 2 threads and at every ISA level, sizes across the one-thread
  threshold (32768 elements): gather and keep_triangle for every dtype they move (float32,
  float64, float16, the integers, bool; NaN payloads kept), gather_backward and scatter_add
  for float32 and float64 (each element's additions run in the order of the index on any
  thread count, numpy's np.add.at order; a NaN made of NaN, inf and -inf is NaN on both
  sides, its sign and payload the CPU's choice);
- strided, transposed and misaligned inputs give their contiguous copy's result;
- an out-of-range index is an IndexError naming it, on both backends, whichever thread meets
  it; the C entry points refuse one too when called past the checks;
- through the ops: gather, scatter_add and tril/triu on non-contiguous inputs, negative dims,
  empty and smaller-than-input indices, integer and bool tensors, equal the numpy formula and
  pass gradcheck in float64; with PyTorch installed, values and gradients equal PyTorch's.
If ``minitorch._C`` does not import, the C tests are skipped with "C extension not built".
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minitorch as mt
from minitorch.autograd import gradcheck
from minitorch.backends import numpy_backend as N
from test_kernels import ISAS, THREADS, C, c_threads, needs_c  # the kernel tests' common ground

MOVED_DTYPES = [np.float32, np.float64, np.float16, np.int64, np.int32, np.int16, np.int8,
                np.uint8, np.bool_]
FLOAT_DTYPES = [np.float32, np.float64]
# (input shape, dim, index length along dim): last dim, first, middle, 1-d, empty, and sizes
# above the one-thread threshold with few and many lines (so the threads split them unevenly)
GATHER_CASES = [((5, 7), -1, 3), ((5, 7), 0, 9), ((2, 3, 4), 1, 5), ((11,), 0, 20),
                ((4, 6, 3), 1, 0), ((0, 5), 1, 2), ((64, 40, 33), 2, 20),
                ((64, 40, 33), -2, 50), ((3, 1000, 17), 1, 700), ((1, 50_000), 1, 40_001),
                ((40_001, 2), 0, 3)]
TRIANGLE_SHAPES = [(3, 3), (2, 3, 4), (4, 1), (1, 5), (0, 3), (3, 0), (2, 0, 3),
                   (3, 2, 17, 9), (8, 64, 300)]


def values(rng, shape, dtype):
    """Random values of a dtype; floats hold a NaN with a payload, infs and -0.0."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = (rng.standard_normal(shape) * 100).astype(dtype)
    if x.size >= 4:
        flat = x.reshape(-1)
        flat[:4] = [np.inf, -np.inf, -0.0, np.nan]
        bits = flat.view(np.uint16 if dtype.itemsize == 2 else
                         np.uint32 if dtype.itemsize == 4 else np.uint64)
        bits[3] |= 5  # a NaN payload, which a move keeps
    return x


def indices(rng, size, shape):
    """int64 indices into a dim of ``size``: negative ones (counted from the end) and repeats."""
    return rng.integers(-size, size, shape) if size else np.zeros(shape, np.int64)


def same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.reshape(-1).view(np.uint8), want.reshape(-1).view(np.uint8))


def same_sums(got, want):
    """Equal values and signs of zero; NaN where the other has NaN (adding NaNs and infs makes
    a NaN whose sign and payload depend on the order of the operands in the CPU's add)."""
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    numbers = ~np.isnan(want)
    np.testing.assert_array_equal(np.signbit(got[numbers]), np.signbit(want[numbers]))


def gather_case(rng, shape, dim, n, dtype):
    x = values(rng, shape, dtype)
    index_shape = list(shape)
    index_shape[dim] = n
    index = indices(rng, shape[dim], tuple(index_shape))
    return x, index


# ---------------------------------------------------------------------------------------------
# C against the numpy reference
# ---------------------------------------------------------------------------------------------
@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", MOVED_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gather_forward_matches_numpy(dtype, threads):
    rng = np.random.default_rng(1)
    for shape, dim, n in GATHER_CASES:
        x, index = gather_case(rng, shape, dim, n, dtype)
        want = N.gather_forward(x, dim, index)
        for isa in ISAS:
            with c_threads(threads, isa):
                same_bits(C.gather_forward(x, dim, index), want)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: np.dtype(d).name)
def test_gather_backward_and_scatter_add_match_numpy(dtype, threads):
    rng = np.random.default_rng(2)
    for shape, dim, n in GATHER_CASES:
        x, index = gather_case(rng, shape, dim, n, dtype)
        if x.size == 0 and index.size:
            continue  # an index into an empty dim: test_out_of_range_indices_raise
        src = values(rng, index.shape, dtype)
        with np.errstate(invalid="ignore"):  # inf - inf where indices meet: NaN on both sides
            want_grad = N.gather_backward(src, dim, index, shape[dim])
            want_sum = N.scatter_add(x, dim, index, src)
        for isa in ISAS:
            with c_threads(threads, isa):
                same_sums(C.gather_backward(src, dim, index, shape[dim]), want_grad)
                same_sums(C.scatter_add(x, dim, index, src), want_sum)


@needs_c
@given(data=st.data())
def test_drawn_shapes_match_numpy(data):
    """Every kernel of this file on a drawn shape, dim, index length, dtype and thread count."""
    shape = tuple(data.draw(st.lists(st.integers(0, 9), min_size=1, max_size=4), label="shape"))
    dim = data.draw(st.integers(-len(shape), len(shape) - 1), label="dim")
    n = data.draw(st.integers(0, 12), label="n") if shape[dim] else 0
    dtype = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    threads = data.draw(st.sampled_from(THREADS), label="threads")
    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1), label="seed"))
    x, index = gather_case(rng, shape, dim, n, dtype)
    src = values(rng, index.shape, dtype)
    with c_threads(threads), np.errstate(invalid="ignore"):
        same_bits(C.gather_forward(x, dim, index), N.gather_forward(x, dim, index))
        same_sums(C.gather_backward(src, dim, index, shape[dim]),
                  N.gather_backward(src, dim, index, shape[dim]))
        same_sums(C.scatter_add(x, dim, index, src), N.scatter_add(x, dim, index, src))
        if x.ndim >= 2:
            diagonal = data.draw(st.integers(-12, 12), label="diagonal")
            for upper in (False, True):
                same_bits(C.keep_triangle(x, diagonal, upper), N.keep_triangle(x, diagonal, upper))


@needs_c
@pytest.mark.parametrize("threads", THREADS)
def test_scatter_add_many_repeats_split_over_threads(threads):
    """Every index of a wide inner dim hits one of two rows: the threads split the columns
    and each element still gets its additions in the order of the index."""
    rng = np.random.default_rng(3)
    src = rng.standard_normal((2, 3000, 37)).astype(np.float32)
    index = rng.integers(0, 2, src.shape)
    with c_threads(threads):
        same_sums(C.gather_backward(src, 1, index, 2), N.gather_backward(src, 1, index, 2))


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("dtype", MOVED_DTYPES, ids=lambda d: np.dtype(d).name)
def test_keep_triangle_matches_numpy(dtype, threads):
    rng = np.random.default_rng(4)
    for shape in TRIANGLE_SHAPES:
        x = values(rng, shape, dtype)
        for diagonal in (0, 1, -1, 5, -7, 1 << 62, -(1 << 62), 1 << 70):
            for upper in (False, True):
                want = N.keep_triangle(x, diagonal, upper)
                with c_threads(threads):
                    same_bits(C.keep_triangle(x, diagonal, upper), want)


@needs_c
@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_layouts_give_their_contiguous_copys_result(backend):
    kernels = N if backend == "numpy" else C
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 9, 8))
    src = rng.standard_normal((6, 9, 4))
    index = rng.integers(-8, 8, (6, 9, 4))
    buffer = np.frombuffer(bytearray(x.nbytes + 1), np.float64, count=x.size, offset=1)
    misaligned = buffer.reshape(x.shape)
    misaligned[...] = x
    for layout in (x.transpose(1, 0, 2).copy().transpose(1, 0, 2), x[::-1].copy()[::-1],
                   misaligned):
        np.testing.assert_array_equal(kernels.gather_forward(layout, 2, index),
                                      N.gather_forward(x, 2, index))
        np.testing.assert_array_equal(kernels.scatter_add(layout, 2, index, src[:, :, ::-1]),
                                      N.scatter_add(x, 2, index, src[:, :, ::-1].copy()))
        np.testing.assert_array_equal(kernels.keep_triangle(layout, 1, True), np.triu(x, 1))
    strided_index = np.ascontiguousarray(index.transpose(2, 1, 0)).transpose(2, 1, 0)
    np.testing.assert_array_equal(kernels.gather_forward(x, -1, strided_index),
                                  np.take_along_axis(x, index, -1))


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_out_of_range_indices_raise(backend, threads):
    kernels = N if backend == "numpy" else C
    x = np.zeros((300, 200), np.float32)
    index = np.zeros((300, 200), np.int64)
    index[299, 199] = 200  # in the last thread's part
    with c_threads(threads):
        with pytest.raises(IndexError, match="index 200 is out of bounds for dimension 1 with "
                                             "size 200"):
            kernels.gather_forward(x, 1, index)
        index[299, 199], index[0, 0] = 0, -301
        with pytest.raises(IndexError, match="index -301 is out of bounds for dimension 0"):
            kernels.gather_forward(x, 0, index)
        with pytest.raises(IndexError, match="index -301"):
            kernels.gather_backward(x, 0, index, 300)
        with pytest.raises(IndexError, match="index -301"):
            kernels.scatter_add(x, 1, index, x)
        with pytest.raises(IndexError, match="index 0 is out of bounds for dimension 1 with "
                                             "size 0"):
            kernels.gather_backward(np.ones((2, 1)), 1, np.zeros((2, 1), np.int64), 0)


@needs_c
def test_c_entry_points_refuse_bad_indices_past_the_checks():
    x = np.arange(6.0)
    out = np.full(6, 7.0)
    bad = np.array([0, 1, 6, 2, -7, 3])
    ptr = C._ptr
    assert C.lib.mt_gather_forward(ptr(x), ptr(bad), ptr(out), 8, 1, 6, 6, 1) == -2
    np.testing.assert_array_equal(out, [0, 1, 0, 2, 0, 3])  # nothing read outside x
    assert C.lib.mt_scatter_add_f64(C.ffi.NULL, ptr(x), ptr(bad), ptr(out), 1, 6, 6, 1) == -2
    np.testing.assert_array_equal(out, [0, 1, 3, 5, 0, 0])  # nothing written outside out
    assert C.lib.mt_gather_forward(ptr(x), ptr(bad), ptr(out), 3, 1, 6, 6, 1) == -2
    assert C.lib.mt_keep_triangle(ptr(x), ptr(out), 8, 1, -2, 3, 0, 0) == -2


# ---------------------------------------------------------------------------------------------
# Through the ops
# ---------------------------------------------------------------------------------------------
BACKENDS = ["numpy"] + (["c"] if C is not None else [])


def np_gather(x, dim, index):
    x = x[tuple(slice(0, n) if k != dim % x.ndim else slice(None)
                for k, n in enumerate(index.shape))]
    return np.take_along_axis(x, index, dim)


def np_scatter_add(x, dim, index, src):
    out = x.copy()
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim % x.ndim] = index
    np.add.at(out, tuple(grids), src[tuple(slice(0, n) for n in index.shape)])
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_op_cases_and_gradients(backend):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((4, 6, 5))
    cases = [(x, -1, rng.integers(-5, 5, (4, 6, 7))),           # negative dim and indices
             (x.transpose(2, 0, 1), 0, rng.integers(0, 5, (3, 4, 6))),  # non-contiguous input
             (x, 1, rng.integers(0, 6, (2, 3, 5))),               # smaller in the other dims
             (x, 1, np.zeros((4, 0, 5), np.int64)),                # empty index
             (x[:, ::2], -2, rng.integers(0, 3, (4, 9, 5)))]       # strided, repeats
    with mt.backends.using(backend):
        for data, dim, index in cases:
            t = mt.tensor(data, requires_grad=True)
            got = t.gather(dim, mt.tensor(index))
            np.testing.assert_array_equal(got.detach().numpy(), np_gather(data, dim, index))
            assert gradcheck(lambda a, d=dim, i=mt.tensor(index): a.gather(d, i), (t,))
        ints = mt.tensor(rng.integers(-9, 9, (3, 4)))
        index = mt.tensor(rng.integers(0, 4, (3, 6)))
        np.testing.assert_array_equal(ints.gather(1, index).numpy(),
                                      np.take_along_axis(ints.numpy(), index.numpy(), 1))
        flags = mt.tensor(rng.random((3, 4)) < 0.5)
        assert flags.gather(1, index).dtype == mt.bool
        with pytest.raises(IndexError, match="gather: index 4 is out of bounds"):
            ints.gather(1, mt.tensor([[4]]))


@pytest.mark.parametrize("backend", BACKENDS)
def test_scatter_add_op_cases_and_gradients(backend):
    rng = np.random.default_rng(7)
    with mt.backends.using(backend):
        for shape, dim, index_shape, src_shape in [((4, 6), 1, (4, 9), (4, 9)),
                                                   ((5, 3, 4), 0, (8, 3, 4), (9, 3, 5)),
                                                   ((5, 3, 4), -2, (2, 6, 4), (2, 6, 4))]:
            x, src = rng.standard_normal(shape), rng.standard_normal(src_shape)
            index = rng.integers(0, shape[dim], index_shape)
            a = mt.tensor(x, requires_grad=True)
            s = mt.tensor(src, requires_grad=True)
            np.testing.assert_allclose(a.scatter_add(dim, mt.tensor(index), s).detach().numpy(),
                                       np_scatter_add(x, dim, index, src), rtol=1e-13)
            assert gradcheck(lambda u, v, d=dim, i=mt.tensor(index): u.scatter_add(d, i, v),
                             (a, s))
        ints = mt.tensor(rng.integers(-9, 9, (3, 4)))
        index = rng.integers(0, 4, (3, 5))
        added = mt.tensor(rng.integers(-9, 9, (3, 5)))
        np.testing.assert_array_equal(ints.scatter_add(1, mt.tensor(index), added).numpy(),
                                      np_scatter_add(ints.numpy(), 1, index, added.numpy()))


@pytest.mark.parametrize("backend", BACKENDS)
def test_tril_triu_ops_on_every_layout_and_dtype(backend):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, 5, 4))
    with mt.backends.using(backend):
        for data in (x, x.transpose(0, 2, 1), x[:, ::-2]):
            for diagonal in (0, 2, -1, -9):
                t = mt.tensor(data, requires_grad=True)
                with mt.no_grad():
                    np.testing.assert_array_equal(t.tril(diagonal).numpy(), np.tril(data, diagonal))
                    np.testing.assert_array_equal(t.triu(diagonal).numpy(), np.triu(data, diagonal))
                assert gradcheck(lambda a, k=diagonal: a.tril(k) * 2 + a.triu(k), (t,))
        for dtype in (mt.bool, mt.int32, mt.float16):
            t = mt.tensor(rng.standard_normal((4, 6)) > 0).to(dtype)
            assert t.tril(1).dtype == dtype
            np.testing.assert_array_equal(t.triu(-1).numpy(), np.triu(t.numpy(), -1))
        with pytest.raises(TypeError, match="diagonal must be an int"):
            mt.ones(2, 2).tril(1.5)


def test_ops_match_pytorch_values_and_gradients():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped",
                                exc_type=ImportError)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 6, 5)).astype(np.float32)
    index = rng.integers(0, 6, (4, 3, 5))
    grad = rng.standard_normal((4, 3, 5)).astype(np.float32)
    for backend in BACKENDS:
        with mt.backends.using(backend):
            for dim, idx in ((1, index), (-1, index % 5)):
                a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
                out_a, out_b = a.gather(dim, mt.tensor(idx)), b.gather(dim, torch.tensor(idx))
                out_a.backward(mt.tensor(grad))
                out_b.backward(torch.tensor(grad))
                np.testing.assert_array_equal(out_a.detach().numpy(), out_b.detach().numpy())
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-6)
            a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
            out_a = a.scatter_add(1, mt.tensor(index), mt.tensor(grad))
            out_b = b.scatter_add(1, torch.tensor(index), torch.tensor(grad))
            np.testing.assert_allclose(out_a.detach().numpy(), out_b.detach().numpy(), rtol=1e-6,
                                       atol=1e-6)
            for diagonal in (0, 2, -3):
                a, b = mt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
                a.tril(diagonal).backward(mt.tensor(x))
                b.tril(diagonal).backward(torch.tensor(x))
                np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
                np.testing.assert_array_equal(a.triu(diagonal).detach().numpy(),
                                              b.triu(diagonal).detach().numpy())
