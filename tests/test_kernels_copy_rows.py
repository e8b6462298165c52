"""The copies of csrc/copy_rows.c (mt_copy_rows, mt_copy_strided) and the backend copies built
on them (``copy``, ``concatenate``: contiguous(), a leaf's .grad from a slice of a gradient,
cat and stack), and the leaves that keep cat's and stack's slices of a gradient uncopied.

mt_copy_rows at every ISA level (the reference's byte loop and each tuned level), 1 and 2
threads, against numpy's slice assignment on random layouts: strided rows on either side,
rows longer than the tuned body's 64 KiB piece, rows not a multiple of a vector, one row, empty.
c_backend.copy / concatenate against numpy_backend's on random shapes, axes and dtypes (float
and others: the kernel moves bytes), on the kernel's path and on the layouts it leaves to numpy
(reversed, broadcast, misaligned). mt_copy_strided on transposes, permutes, reversed and
broadcast dims. A copy is exact: every comparison is bit for bit.
"""
import numpy as np
import pytest

import minitorch
from minitorch.backends import numpy_backend as N
from test_kernels import ISAS, THREADS, C, c_threads, needs_c  # the kernel tests' common ground

DTYPES = [np.float32, np.float64, np.int64, np.bool_, np.float16]


def random_array(rng, shape, dtype):
    return (rng.standard_normal(shape) * 100).astype(dtype)


# (rows, row_bytes, src_stride, dst_stride): strides at least the row, in bytes
LAYOUTS = [(0, 16, 16, 16), (5, 0, 8, 8), (1, 1, 1, 1), (1, 200_003, 0, 0),
           (3, 127, 131, 200), (1024, 2048, 4096, 2048), (1024, 2048, 2048, 4096),
           (7, 150_000, 150_016, 150_000), (64, 33, 33, 64), (2, 256, 256, 256)]


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("isa", ISAS)
def test_copy_rows_kernel_matches_numpy(isa, threads):
    rng = np.random.default_rng(0)
    for rows, row_bytes, src_stride, dst_stride in LAYOUTS:
        src = rng.integers(0, 256, max(rows * max(src_stride, row_bytes), 1) + 3, np.uint8)
        dst = rng.integers(0, 256, max(rows * max(dst_stride, row_bytes), 1) + 5, np.uint8)
        want = dst.copy()
        for i in range(rows):  # the formula, row by row
            want[i * dst_stride + 2:i * dst_stride + 2 + row_bytes] = \
                src[i * src_stride + 1:i * src_stride + 1 + row_bytes]
        got = dst.copy()
        with c_threads(threads, isa):
            status = C.lib.mt_copy_rows(C.ffi.from_buffer(src[1:]), src_stride,
                                        C.ffi.from_buffer(got[2:]), dst_stride, rows, row_bytes)
        assert status == 0
        np.testing.assert_array_equal(got, want)  # the bytes between rows untouched too


def _copy_cases(rng, dtype):
    """Arrays of every layout a copy meets: contiguous, sliced in the last dim (a cat's
    gradient), in a middle dim, with dims of size 1, transposed, reversed, broadcast, 0-d,
    empty; small (numpy's path) and from C.COPY_MIN_BYTES up (the kernel's)."""
    big = random_array(rng, (16, 24, 130), dtype)
    return [big, big[..., 5:70], big[:, 3:20], big[None, :, :1], big.transpose(1, 0, 2),
            big[::-1], np.broadcast_to(big[:1], big.shape), big[0, 0, 0], big[:, :0],
            random_array(rng, (3, 5), dtype), random_array(rng, (300_001,), dtype)[::1],
            _misaligned(big).transpose(2, 0, 1)]


def _misaligned(a):
    """A copy of ``a`` one byte past an aligned address (np.frombuffer at an odd offset)."""
    raw = np.frombuffer(bytearray(a.nbytes + 1), a.dtype, count=a.size, offset=1)
    raw = raw.reshape(a.shape)
    raw[...] = a
    return raw


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_copy_matches_numpy_backend(dtype, isa, threads):
    rng = np.random.default_rng(1)
    with c_threads(threads, isa):
        for a in _copy_cases(rng, dtype):
            got, want = C.copy(a), N.copy(a)
            assert got.flags.c_contiguous and got.dtype == a.dtype and got.shape == a.shape
            assert not np.shares_memory(got, a)
            np.testing.assert_array_equal(got, want)


@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_concatenate_matches_numpy_backend(dtype, isa, threads):
    rng = np.random.default_rng(2)
    with c_threads(threads, isa):
        for trial in range(12):
            ndim = int(rng.integers(1, 4))
            shape = [int(n) for n in rng.integers(1, 40, ndim)]
            axis = int(rng.integers(0, ndim))
            parts = []
            for _ in range(int(rng.integers(1, 4))):
                shape[axis] = int(rng.integers(0, 3000 if ndim == 1 else 60))
                a = random_array(rng, shape, dtype)
                parts.append(a if trial % 3 else np.asfortranarray(a))  # strided sources too
            got, want = C.concatenate(parts, axis), N.concatenate(parts, axis)
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(got, want)
        x = random_array(rng, (32, 32, 512), dtype)  # the benchmark's cat and stack
        y = random_array(rng, (32, 32, 512), dtype)
        np.testing.assert_array_equal(C.concatenate([x, y], 2), np.concatenate([x, y], 2))
        np.testing.assert_array_equal(C.concatenate([x[None], y[None]], 0), np.stack([x, y]))


@needs_c
def test_concatenate_leaves_bad_shapes_and_mixed_dtypes_to_numpy():
    x = np.ones((64, 600), np.float32)
    with pytest.raises(ValueError):  # numpy's own message
        C.concatenate([x, np.ones((63, 600), np.float32)], 1)
    mixed = C.concatenate([x, np.zeros((64, 600))], 0)
    assert mixed.dtype == np.float64 and mixed.shape == (128, 600)
    np.testing.assert_array_equal(mixed, np.concatenate([x, np.zeros((64, 600))]))


@needs_c
def test_rows_layout():
    a = np.zeros((4, 6, 8), np.float32)
    assert C._rows_layout(a, a) == (1, a.nbytes, 0, 0)  # one run
    assert C._rows_layout(np.empty((4, 6, 3), np.float32), a[..., 2:5]) == (24, 12, 12, 32)
    assert C._rows_layout(np.empty((4, 1, 8), np.float32), a[:, 1:2]) == (4, 32, 32, 192)
    assert C._rows_layout(np.empty((4, 3, 8), np.float32), a[:, ::2]) == (12, 32, 32, 64)
    assert C._rows_layout(a, a.transpose(1, 0, 2).copy().transpose(1, 0, 2)) is None
    assert C._rows_layout(a[::-1], a) is None
    assert C._rows_layout(np.broadcast_to(a[:1], a.shape), a) is None
    assert C._rows_layout(a[:, :0], a[:, :0]) == (0, 0, 0, 0)


@needs_c
@pytest.mark.parametrize("rows, row_bytes", [(-1, 4), (4, -1)])
def test_copy_rows_rejects_negative_sizes(rows, row_bytes):
    buf = np.zeros(64, np.uint8)
    assert C.lib.mt_copy_rows(C.ffi.from_buffer(buf), 4, C.ffi.from_buffer(buf[32:]), 4, rows,
                              row_bytes) == -2


@needs_c
def test_copy_rows_rejects_null_with_work():
    assert C.lib.mt_copy_rows(C.ffi.NULL, 4, C.ffi.NULL, 4, 2, 4) == -2
    assert C.lib.mt_copy_rows(C.ffi.NULL, 4, C.ffi.NULL, 4, 0, 4) == 0  # nothing to copy


@pytest.mark.parametrize("backend", ["numpy"] + (["c"] if C is not None else []))
def test_cat_stack_and_leaf_grads_through_the_copies(backend):
    """cat, stack and contiguous() on the kernel's sizes; the leaves' .grad are copies of the
    gradient's slices (never views of the caller's gradient)."""
    rng = np.random.default_rng(3)
    xs, ys = random_array(rng, (32, 32, 64), np.float32), random_array(rng, (32, 32, 64),
                                                                       np.float32)
    with minitorch.backends.using(backend):
        x = minitorch.tensor(xs, requires_grad=True)
        y = minitorch.tensor(ys, requires_grad=True)
        out = minitorch.cat([x, y], -1)
        np.testing.assert_array_equal(out.detach().numpy(), np.concatenate([xs, ys], -1))
        grad = minitorch.tensor(random_array(rng, (32, 32, 128), np.float32))
        out.backward(grad)
        np.testing.assert_array_equal(x.grad.numpy(), grad.numpy()[..., :64])
        np.testing.assert_array_equal(y.grad.numpy(), grad.numpy()[..., 64:])
        assert not np.shares_memory(x.grad.numpy(), grad.numpy())
        assert x.grad.numpy().base is None  # an array of its own, as the engine's sums want
        x.grad = y.grad = None
        out = minitorch.stack([x, y], 1)
        np.testing.assert_array_equal(out.detach().numpy(), np.stack([xs, ys], 1))
        grad = minitorch.tensor(random_array(rng, (32, 2, 32, 64), np.float32))
        out.backward(grad)
        np.testing.assert_array_equal(y.grad.numpy(), grad.numpy()[:, 1])
        t = x.detach().transpose(0, 2).contiguous()
        np.testing.assert_array_equal(t.numpy(), xs.transpose(2, 1, 0))


# (shape, element strides as a permutation of a C-contiguous source, or a slicing)
@needs_c
@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("dtype", DTYPES + [np.complex128])
def test_copy_strided_kernel_matches_numpy(dtype, isa, threads):
    """mt_copy_strided on the layouts rows cannot describe: transposes, permutes, reversed
    and broadcast dims (negative and zero strides), 0-d, empty."""
    rng = np.random.default_rng(4)
    base = random_array(rng, (24, 40, 70), dtype)
    sources = [base.transpose(0, 2, 1), base.transpose(2, 1, 0), base[::-1, :, ::-2],
               np.broadcast_to(base[:, :1], base.shape),
               np.broadcast_to(base[..., :1], base.shape),  # an expanded gradient: rows filled
               np.broadcast_to(base[:1, :, :1], base.shape), base[3, :, 5], base[0, 0, 0],
               base[:, :0].transpose(1, 0, 2), base.T[::3],
               base[:23, :37, ::-1].transpose(1, 0, 2)]  # a thread's first row mid-dim
    for src in sources:
        dst = np.empty(src.shape, dtype)
        with c_threads(threads, isa):
            status = C.lib.mt_copy_strided(C._pointer(src), C._pointer(dst), src.ndim,
                                           C.ffi.new("int64_t[]", src.shape),
                                           C.ffi.new("int64_t[]", src.strides), src.itemsize)
        assert status == 0
        if dst.size:
            np.testing.assert_array_equal(dst, src)


@needs_c
def test_copy_strided_rejects_bad_sizes():
    shape, strides = C.ffi.new("int64_t[]", [2, -3]), C.ffi.new("int64_t[]", [4, 4])
    buf = C.ffi.from_buffer(np.zeros(64, np.uint8))
    assert C.lib.mt_copy_strided(buf, buf, 2, shape, strides, 4) == -2  # a negative dim
    assert C.lib.mt_copy_strided(buf, buf, -1, shape, strides, 4) == -2
    assert C.lib.mt_copy_strided(buf, buf, 1, shape, strides, 0) == -2  # no item size
    assert C.lib.mt_copy_strided(buf, buf, C.lib.MT_COPY_MAX_DIMS + 1, shape, strides, 4) == -2
    assert C.lib.mt_copy_strided(C.ffi.NULL, C.ffi.NULL, 1, shape, strides, 4) == -2


@pytest.mark.parametrize("backend", ["numpy"] + (["c"] if C is not None else []))
def test_stacked_leaves_keep_their_contiguous_slices_as_pytorch_does(backend):
    """cat's and stack's backward hand each input its slice of the gradient: a leaf keeps a
    contiguous slice as its .grad (sharing the gradient's memory, as PyTorch's leaves do), never
    a slice that another leaf also has, and copies a strided one (stacked along a later dim)."""
    rng = np.random.default_rng(5)
    with minitorch.backends.using(backend):
        x = minitorch.tensor(random_array(rng, (4, 6), np.float64), requires_grad=True)
        y = minitorch.tensor(random_array(rng, (4, 6), np.float64), requires_grad=True)
        grad = minitorch.tensor(random_array(rng, (2, 4, 6), np.float64))
        minitorch.stack([x, y]).backward(grad)
        np.testing.assert_array_equal(x.grad.numpy(), grad.numpy()[0])
        np.testing.assert_array_equal(y.grad.numpy(), grad.numpy()[1])
        assert np.shares_memory(x.grad.numpy(), grad.numpy())  # PyTorch's too
        assert not np.shares_memory(x.grad.numpy(), y.grad.numpy())
        x.grad.zero_()  # the leaf's own slice only
        np.testing.assert_array_equal(y.grad.numpy(), grad.numpy()[1])
        x.grad = y.grad = None
        minitorch.stack([x, y], 2).backward(random_array(rng, (4, 6, 2), np.float64))
        assert x.grad.numpy().flags.c_contiguous and x.grad.numpy().base is None  # a copy
        x.grad = None
        grad = minitorch.tensor(random_array(rng, (2, 4, 6), np.float64))
        minitorch.stack([x, x]).backward(grad)  # two slices summed: a new array
        np.testing.assert_array_equal(x.grad.numpy(), grad.numpy()[0] + grad.numpy()[1])
        assert not np.shares_memory(x.grad.numpy(), grad.numpy())
        x.grad = y.grad = None
        minitorch.cat([x, y]).backward(grad.reshape(8, 6))  # cat along dim 0: kept too
        np.testing.assert_array_equal(y.grad.numpy(), grad.numpy()[1])
        assert np.shares_memory(y.grad.numpy(), grad.numpy())
        x.grad = y.grad = None
        z = minitorch.stack([x * 2, y]).sum(0)  # a slice that goes on through a node
        z.backward(minitorch.ones(4, 6, dtype=minitorch.float64))
        np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 6), 2.0))
