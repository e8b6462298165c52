"""The C backend: validates arguments in Python, allocates outputs, calls the C kernels.

Every check that protects memory happens here, before C runs: dtypes, shapes, index ranges,
strides (C gets only non-negative element strides that stay inside the arrays it is given)
and sizes (computed with Python ints, passed as int64). Bad input raises ValueError /
TypeError / IndexError naming the argument, the expected and the actual value.
Inputs may be non-contiguous or misaligned (e.g. np.frombuffer at an odd offset): they are
copied when C cannot use them as they are, so C only ever reads aligned data; outputs are
always new C-contiguous arrays (from large_buffers: np.empty's, or for 32 MiB and
up a reused block, whose pages are already mapped; a forward row kernel's placed apart from its
input modulo 4 KiB). Empty inputs never reach C.

Every kernel runs at the ISA level in force: "reference" (the plain C loops), "portable" (the
tuned C without SIMD intrinsics), "avx2" or "avx512" (default: the best the CPU has).
``set_isa``/``get_isa``/``isa`` choose it (a level above the CPU's falls back to the best it
has); the environment variable ``MINITORCH_ISA`` sets it when this module is imported.

Imports: numpy, the cffi extension ``minitorch._C`` and the other modules of
``minitorch.backends`` (never the rest of minitorch). The API and semantics are those of
``numpy_backend`` (the oracle); see its docstring. ``adam_step`` hands the parameters C cannot
update in place (half dtypes, strided views) to numpy_backend's update.
"""
import contextlib
import functools
import math
import os
import weakref

import numpy as np

from minitorch._C import ffi, lib

from .checks import (ARITH_OPS, FLOAT_DTYPES, GELU_APPROXIMATIONS, REDUCTIONS,  # noqa: F401
                     broadcast_shape, check_arith, check_attention, check_attention_backward,
                     check_attention_step, check_cell_arrays,
                     check_clamp_bounds,
                     check_conv2d, check_conv2d_backward_input, check_conv2d_backward_weight,
                     check_dropout_keep, check_float, check_gelu_approximate,
                     check_gemm_operands,
                     check_integer_exponent, check_label_smoothing, check_matmul_operands,
                     check_max_pool2d, check_max_pool2d_backward, check_nonlinearity,
                     check_reduction, check_row_indices, check_same_shape, check_target,
                     check_gather, check_gather_backward, check_gather_index,
                     check_keep_triangle, check_scatter_add)
from .checks import check_bias_relu, check_bias_relu_backward, check_matmul_bias, check_matmul_into
from .checks import check_real_exponent, check_where_operands
from .checks import check_batch_norm, check_batch_norm_backward
from . import large_buffers, numpy_backend
from .tape import host, record, recording, replayed
from .large_buffers import empty, empty_apart, empty_like

# The ISA levels, in the order of MT_ISA_* in csrc/minitorch.h.
ISA_LEVELS = ("reference", "portable", "avx2", "avx512")

_C_TYPE = {np.dtype(np.float32): "float *", np.dtype(np.float64): "double *"}
_C_ARRAY = {np.dtype(np.float32): "float[]", np.dtype(np.float64): "double[]",
            np.dtype(np.bool_): "uint8_t[]", np.dtype(np.int64): "int64_t[]"}
_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


_KERNELS: dict = {}  # (name, dtype) -> the C function, looked up once (a dict hit is ~5x cheaper)


def _kernel(name, dtype):
    """lib.mt_<name>_<f32|f64> for the dtype."""
    try:
        return _KERNELS[name, dtype]
    except KeyError:
        kernel = getattr(lib, f"mt_{name}_{_SUFFIX[np.dtype(dtype)]}")
        _KERNELS[name, dtype] = kernel
        return kernel


def _ptr(arr):
    """C pointer to the data of a C-contiguous array (the cdata keeps `arr` alive).

    ffi.from_buffer is ~10x cheaper than going through arr.ctypes / __array_interface__, which
    matters for the many small calls a training step makes."""
    return ffi.from_buffer(_C_ARRAY[arr.dtype], arr)


@contextlib.contextmanager
def replaced(**names):
    """Within: this module's globals ``names`` (``lib``, a pointer helper) are the values
    given; the kernels looked up once are looked up again. For c_backend_recording.py (kernels and
    arrays seen by a tape) and benchmarks/compare_builds.py (another build's kernels)."""
    global _KERNELS, _GEMM_KERNELS, _STEP_KERNELS
    module = globals()
    saved = {name: module[name] for name in names}
    saved_caches = _KERNELS, _GEMM_KERNELS, _STEP_KERNELS
    module.update(names)
    _KERNELS = {}
    _GEMM_KERNELS = {dtype: getattr(lib, f"mt_gemm_{suffix}") for dtype, suffix in _SUFFIX.items()}
    _STEP_KERNELS = {dtype: getattr(lib, f"mt_attention_step_forward_{suffix}")
                     for dtype, suffix in _SUFFIX.items()}
    try:
        yield
    finally:
        module.update(saved)
        _KERNELS, _GEMM_KERNELS, _STEP_KERNELS = saved_caches


def _check_status(status, what):
    if status == -1:
        raise MemoryError(f"{what}: the C kernel could not allocate its scratch memory")
    if status != 0:
        raise ValueError(f"{what}: the C kernel rejected its arguments (status {status})")


# ---------------------------------------------------------------------------------------------
# Threads
# ---------------------------------------------------------------------------------------------
def set_num_threads(n):
    """Threads the kernels use: 1 to ``max_threads()``. The team is started once here, so that
    a count the system cannot give (memory, process limits) is a RuntimeError now rather than
    the end of the process in a kernel (libgomp exits when it cannot create a thread)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    bound = max_threads()
    if n > bound:
        raise ValueError(f"set_num_threads: n must be <= {bound} (this machine's bound: "
                         f"max(256, 4 per CPU), at most OMP_THREAD_LIMIT), got {n}")
    if lib.mt_set_num_threads(int(n)) != 0:  # MT_ERR_THREADS: the probe team did not start
        raise RuntimeError(f"set_num_threads: could not start {n} threads (a memory or process "
                           f"limit); the kernels keep {get_num_threads()}")


def get_num_threads():
    return int(lib.mt_get_num_threads())


def max_threads():
    """The most threads ``set_num_threads`` accepts on this machine."""
    return int(lib.mt_max_threads())


def has_openmp():
    return bool(lib.mt_has_openmp())


# ---------------------------------------------------------------------------------------------
# ISA level
# ---------------------------------------------------------------------------------------------
def set_isa(name):
    """Run every kernel at ISA level `name` (one of ISA_LEVELS), or at the best level the CPU
    has if that is lower."""
    if name not in ISA_LEVELS:
        raise ValueError(f"set_isa: name must be one of {ISA_LEVELS}, got {name!r}")
    lib.mt_set_isa(ISA_LEVELS.index(name))


def get_isa():
    """The ISA level in force."""
    return ISA_LEVELS[lib.mt_get_isa()]


def best_isa():
    """The best ISA level this CPU supports."""
    return ISA_LEVELS[lib.mt_best_isa()]


@contextlib.contextmanager
def isa(name):
    """Run a ``with`` block at ISA level `name`, then restore the previous cap."""
    previous = get_isa()
    set_isa(name)
    try:
        yield
    finally:
        set_isa(previous)


if os.environ.get("MINITORCH_ISA"):
    _requested = os.environ["MINITORCH_ISA"].strip().lower()
    if _requested not in ISA_LEVELS:
        raise ValueError(f"MINITORCH_ISA must be one of {ISA_LEVELS}, got {_requested!r}")
    set_isa(_requested)


# ---------------------------------------------------------------------------------------------
# Argument checks (messages match numpy_backend)
# ---------------------------------------------------------------------------------------------
def _check_index(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not -(2 ** 63) <= int(value) < 2 ** 63:
        raise ValueError(f"{name} must fit in int64, got {value}")
    return int(value)


def _check_target(logits, target, ignore_index):
    return _contiguous(check_target(logits, target, ignore_index))


def _contiguous(x):
    """x as a C-contiguous, aligned array: np.ascontiguousarray alone would pass a misaligned
    contiguous array (a view of a byte buffer at an odd offset) through unchanged."""
    if x.flags.c_contiguous and x.flags.aligned:
        return x
    return np.array(x, order="C")


def _zeros(shape, dtype):
    """A zero array that a kernel adds into: its zeroing is recorded on a capture's tape."""
    out = empty(shape, dtype)
    record(np.copyto, out, 0)
    return out


# ---------------------------------------------------------------------------------------------
# Matrix multiply
# ---------------------------------------------------------------------------------------------
def _matrix_layout(x):
    """(array, trans, ld) so that C reads x's last two dims without a copy when they are
    row-major (ld >= cols, e.g. a slice) or a transposed row-major matrix (e.g. w.T);
    anything else (negative or odd strides, misaligned data) becomes a contiguous copy."""
    if not x.flags.aligned:
        x = _contiguous(x)
    rows, cols = x.shape[-2:]
    item = x.itemsize
    flags = x.flags
    if flags.c_contiguous:
        return x, 0, max(cols, 1)
    if flags.f_contiguous and x.ndim == 2 and flags.aligned:  # w.T, the common case: no checks
        return x, 1, max(rows, 1)
    s_row, s_col = x.strides[-2:]
    # A size-1 dim's stride is meaningless; normalise it so the layout tests below work.
    if rows == 1:
        s_row = max(cols, 1) * item if s_col == item else s_row
    if cols == 1:
        s_col = item if s_row != item else max(rows, 1) * item
    if all(s >= 0 and s % item == 0 for s in x.strides):
        if s_col == item and s_row // item >= max(cols, 1):
            return x, 0, s_row // item
        if s_row == item and s_col // item >= max(rows, 1):
            return x, 1, s_col // item
    x = _contiguous(x)
    return x, 0, max(cols, 1)


def _base_pointer(x):
    """C pointer to x's first element, for arrays that may be strided views."""
    if x.flags.c_contiguous:
        return ffi.from_buffer(_C_ARRAY[x.dtype], x)
    if x.flags.f_contiguous:  # e.g. w.T: same first element, and cheap to wrap
        return ffi.from_buffer(_C_ARRAY[x.dtype], x.T)
    return ffi.cast(_C_TYPE[x.dtype], x.ctypes.data)


def _batch_strides(x, batch_shape):
    """Element strides of x's batch dims broadcast to batch_shape (0 where broadcast)."""
    lead = len(batch_shape) - (x.ndim - 2)
    strides = []
    for i in range(len(batch_shape)):
        d = i - lead
        if d < 0 or x.shape[d] == 1:
            strides.append(0)
        else:
            strides.append(x.strides[d] // x.itemsize)
    return strides


def _collapse_batch(batch_shape, stride_lists):
    """Merge the trailing batch dims into one dim with a uniform stride in every operand.

    Returns (p, size, strides): dims p.. become one dim of `size` with the given per-operand
    strides; dims before p are looped over in Python (rare: e.g. (B,1) x (1,H) batches).
    """
    size, strides, p = 1, [0] * len(stride_lists), len(batch_shape)
    for d in reversed(range(len(batch_shape))):
        extent = batch_shape[d]
        if extent == 1:
            p = d
        elif size == 1:
            size, strides, p = extent, [st[d] for st in stride_lists], d
        elif all(st[d] == size * s for st, s in zip(stride_lists, strides)):
            size, p = size * extent, d
        else:
            break
    return p, size, strides


# Looked up once: a training step makes hundreds of GEMM calls, and building the name each
# time cost a few microseconds per call.
_GEMM_KERNELS = {np.dtype(np.float32): lib.mt_gemm_f32, np.dtype(np.float64): lib.mt_gemm_f64}


def _run_gemm(dtype, a, ta, lda, sa, b, tb, ldb, sb, c, ldc, sc, m, n, k, batch, alpha, beta):
    """One mt_gemm_* call; a, b, c are C pointers to the first elements."""
    status = _GEMM_KERNELS[dtype](ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc,
                                  sc, batch)
    if status:
        _check_status(status, "matmul")


def _rows_of_one_matrix(batch_shape, strides, matrix_elems):
    """True if batch index i of A starts at row i*m of one tall matrix: every batch dim of
    extent > 1 has the stride of all the matrices after it."""
    inner = matrix_elems
    for extent, stride in zip(reversed(batch_shape), reversed(strides)):
        if extent != 1 and stride != inner:
            return False
        inner *= extent
    return True


def _offset(ptr, elements):
    return ptr + elements if elements else ptr


def matmul(a, b):
    """np.matmul for ndim >= 2 (batch dims broadcast) through the C strided-batched GEMM.

    Transposed views are passed as a transpose flag, broadcast batch dims as stride 0, and a
    batch of A times one B is folded into a single tall GEMM.
    """
    fast = _matmul_plain(a, b)
    if fast is not None:
        return fast
    batch_shape = check_matmul_operands(a, b)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out = empty(batch_shape + (m, n), a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    a, ta, lda = _matrix_layout(a)
    b, tb, ldb = _matrix_layout(b)
    pa, pb, pc = _base_pointer(a), _base_pointer(b), _ptr(out)
    if not batch_shape:
        _run_gemm(out.dtype, pa, ta, lda, 0, pb, tb, ldb, 0, pc, n, 0, m, n, k, 1, 1.0, 0.0)
        return out
    sa, sb = _batch_strides(a, batch_shape), _batch_strides(b, batch_shape)
    sc = [s // out.itemsize for s in out.strides[:-2]]
    if not any(sb) and not ta and _rows_of_one_matrix(batch_shape, sa, m * lda):
        # Every batch of A is the next block of rows of one tall matrix and B is shared:
        # one GEMM with M = batch*m, so B is packed once and the threads split all the rows.
        rows = out.size // n
        _run_gemm(out.dtype, pa, 0, lda, 0, pb, tb, ldb, 0, pc, n, 0, rows, n, k, 1, 1.0, 0.0)
        return out
    p, inner, (stride_a, stride_b, stride_c) = _collapse_batch(batch_shape, [sa, sb, sc])
    if p == 0:  # the usual case: all batch dims are one strided batch, one C call
        _run_gemm(out.dtype, pa, ta, lda, stride_a, pb, tb, ldb, stride_b, pc, n, stride_c,
                  m, n, k, inner, 1.0, 0.0)
        return out
    for outer in np.ndindex(*batch_shape[:p]):
        _run_gemm(out.dtype,
                  _offset(pa, sum(i * s for i, s in zip(outer, sa))), ta, lda, stride_a,
                  _offset(pb, sum(i * s for i, s in zip(outer, sb))), tb, ldb, stride_b,
                  _offset(pc, sum(i * s for i, s in zip(outer, sc))), n, stride_c,
                  m, n, k, inner, 1.0, 0.0)
    return out


def _plain_layout(x):
    """(trans, ld, pointer) of an aligned C-contiguous matrix or of the transpose of one; None
    else."""
    rows, cols = x.shape
    flags = x.flags
    if not flags.aligned:
        return None
    if flags.c_contiguous:
        return 0, cols, _ptr(x)
    if flags.f_contiguous:
        return 1, rows, _ptr(x.T)
    return None


def _stacked_layout(x):
    """(trans, ld, pointer) of a stack of matrices (ndim >= 3) stored one after another, each
    row-major or, its last two dims swapped (k.transpose(-2, -1)), the transpose of one; None
    else."""
    if not x.flags.aligned:
        return None
    if x.flags.c_contiguous:
        return 0, x.shape[-1], _ptr(x)
    swapped = x.swapaxes(-1, -2)
    if swapped.flags.c_contiguous:
        return 1, x.shape[-2], _ptr(swapped)
    return None


def _matmul_plain(a, b):
    """a @ b for the most common calls, with nothing but the checks they need: two non-empty
    matrices of one float dtype, each C-contiguous or the transpose of one (x @ w.T, x.T @ dy),
    or two stacks of them with the same batch shape (q @ k.transpose(-2, -1), attention's
    heads); None for anything else. The general path's checks and layout analysis cost 2.5 us
    per 2-D call (a fifth of a 64x64x64 product) and 9 us per stack."""
    if type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or b.ndim != a.ndim:
        return None
    dtype = a.dtype
    kernel = _GEMM_KERNELS.get(dtype)
    (m, k), (k_b, n) = a.shape[-2:], b.shape[-2:]
    if kernel is None or b.dtype != dtype or k != k_b or not (m and n and k):
        return None
    if a.ndim == 2:
        batch_shape, batch = (), 1
        layout_a, layout_b = _plain_layout(a), _plain_layout(b)
    else:
        batch_shape = a.shape[:-2]
        batch = math.prod(batch_shape)
        if b.shape[:-2] != batch_shape or not batch:
            return None
        layout_a, layout_b = _stacked_layout(a), _stacked_layout(b)
    if layout_a is None or layout_b is None:
        return None
    (ta, lda, pa), (tb, ldb, pb) = layout_a, layout_b
    # (np.empty inline and the kernel called directly: ~0.7 us less a call than empty/_run_gemm)
    shape = batch_shape + (m, n)
    out = (np.empty(shape, dtype) if batch * m * n * dtype.itemsize < large_buffers.MIN_BYTES
           else empty(shape, dtype))
    status = kernel(ta, tb, m, n, k, 1.0, pa, lda, m * k, pb, ldb, k * n, 0.0, _ptr(out), n,
                    m * n, batch)
    if status:
        _check_status(status, "matmul")
    return out


def matmul_bias(a, b, bias, relu=False):
    """a @ b + bias (bias added to every row), then max(., 0) if ``relu``, for a (m, k), b
    (k, n) and bias (n,) of one float dtype: a Linear layer's forward as one GEMM that adds the
    bias (and applies the ReLU) to each tile of the product while it is in cache (mt_gemm_bias),
    the values of matmul, then arith's add (then bias_relu_forward) bit for bit."""
    if (type(a) is np.ndarray and type(b) is np.ndarray and type(bias) is np.ndarray
            and a.ndim == 2 and b.ndim == 2 and bias.ndim == 1 and a.dtype in _SUFFIX
            and a.dtype == b.dtype == bias.dtype and a.shape[1] == b.shape[0] != 0
            and bias.shape[0] == b.shape[1] and bias.flags.c_contiguous and bias.flags.aligned):
        layout_a, layout_b = _plain_layout(a), _plain_layout(b)  # a decoding step's case: lean
        if layout_a is not None and layout_b is not None:
            return _gemm_bias(a.shape[0], b.shape[1], a.shape[1], layout_a, layout_b,
                              _ptr(bias), relu, a.dtype)
    check_matmul_bias(a, b, bias)
    a, ta, lda = _matrix_layout(a)
    b, tb, ldb = _matrix_layout(b)
    return _gemm_bias(a.shape[0], b.shape[1], a.shape[1], (ta, lda, _base_pointer(a)),
                      (tb, ldb, _base_pointer(b)), _ptr(_contiguous(bias)), relu, a.dtype)


def _gemm_bias(m, n, k, layout_a, layout_b, bias_pointer, relu, dtype):
    """A new (m, n) array from mt_gemm_bias on operands given as (trans, ld, pointer)."""
    out = (np.empty((m, n), dtype) if m * n * dtype.itemsize < large_buffers.MIN_BYTES
           else empty((m, n), dtype))
    if out.size:
        (ta, lda, pa), (tb, ldb, pb) = layout_a, layout_b
        status = _kernel("gemm_bias", dtype)(ta, tb, m, n, k, pa, lda, pb, ldb, bias_pointer,
                                             1 if relu else 0, _ptr(out), n)
        _check_status(status, "matmul_bias")
    return out


def gemm(a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None):
    """out = alpha * op(a) @ op(b) + beta * out for 2-D arrays; a new array when out is None
    (beta is then irrelevant). `out` must be C-contiguous, of the result's shape and dtype,
    and must not overlap a or b."""
    op_a, op_b = check_gemm_operands(a, b, trans_a, trans_b)
    m, k = op_a.shape
    n = op_b.shape[1]
    if out is None:
        out = empty((m, n), a.dtype)
        beta = 0.0
    else:
        check_float("out", out, a.dtype)
        check_same_shape("out", out, (m, n))
        if not (out.flags.c_contiguous and out.flags.writeable and out.flags.aligned):
            raise ValueError("out must be a writeable, aligned, C-contiguous array")
        if np.may_share_memory(out, a) or np.may_share_memory(out, b):
            raise ValueError("out must not overlap a or b")
    if out.size == 0:
        return out
    if k == 0:
        out[...] = 0 if beta == 0 else beta * out
        return out
    op_a, ta, lda = _matrix_layout(op_a)
    op_b, tb, ldb = _matrix_layout(op_b)
    _run_gemm(out.dtype, _base_pointer(op_a), ta, lda, 0, _base_pointer(op_b), tb, ldb, 0,
              _ptr(out), n, 0, m, n, k, 1, float(alpha), float(beta))
    return out


# ---------------------------------------------------------------------------------------------
# Softmax family
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _mask_strides(mask_shape, x_shape):
    """(row strides as an int64 array, column stride) of a contiguous mask of mask_shape seen
    at x_shape: 0 along the dims it has as 1 or lacks (cached: a model's masks keep a few
    shapes, and building the array per call cost more than the kernel on short rows)."""
    if len(mask_shape) > len(x_shape) or any(
            m != 1 and m != d for m, d in zip(reversed(mask_shape), reversed(x_shape))):
        raise ValueError(f"mask of shape {mask_shape} does not broadcast to x's shape {x_shape}")
    strides = [0] * len(x_shape)
    step = 1
    for axis in range(1, len(mask_shape) + 1):
        if mask_shape[-axis] != 1:
            strides[-axis] = step
        step *= mask_shape[-axis]
    return _int64_array(tuple(strides[:-1]) or (0,)), strides[-1]


@functools.lru_cache(maxsize=256)
def _int64_array(values):
    """A read-only int64 array of the tuple `values`, for C (cached: one per shape)"""
    array = np.array(values, dtype=np.int64)
    array.flags.writeable = False
    return array


def _mask_layout(x, mask):
    """(contiguous mask, row strides (int64 array), column stride) for C: the mask is
    broadcast to x by stride 0 over the rows, never materialized at x's size."""
    if not isinstance(mask, np.ndarray):
        raise TypeError(f"mask must be a numpy.ndarray or None, got {type(mask).__name__}")
    if mask.dtype != np.bool_ and mask.dtype != x.dtype:
        raise TypeError(f"mask must be bool or {x.dtype} (the dtype of x), got {mask.dtype}")
    row_strides, col_stride = _mask_strides(mask.shape, x.shape)
    return _contiguous(mask), row_strides, col_stride


def softmax_forward(x, scale=1.0, mask=None, causal=False):
    """y = softmax(x*scale + mask) over the last dim (bool mask: True = excluded; causal:
    key j > query i excluded). A row with nothing left is zeros."""
    check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    if causal and x.ndim < 2:
        raise ValueError(f"causal softmax needs x.ndim >= 2, got shape {x.shape}")
    mask_base = None
    if mask is not None:
        mask_base, row_strides, col_stride = _mask_layout(x, mask)
    x = _contiguous(x)
    y = empty_apart(x.shape, x.dtype, (x,))  # apart from x modulo 4 KiB: see large_buffers
    if x.size == 0:
        return y
    cols = x.shape[-1]
    rows = x.size // cols
    mask_add = mask_bool = ffi.NULL
    if mask_base is None:
        row_shape = row_strides = _ZERO_INDEX
        col_stride, ndim = 0, 0
    else:
        row_shape = _int64_array(x.shape[:-1] or (1,))
        ndim = x.ndim - 1
        if mask_base.dtype == np.bool_:
            mask_bool = _ptr(mask_base)
        else:
            mask_add = _ptr(mask_base)
    causal_lq = x.shape[-2] if causal else 0
    status = _kernel("softmax_forward", x.dtype)(
        _ptr(x), _ptr(y), rows, cols, float(scale), mask_add, mask_bool, ndim,
        _ptr(row_shape), _ptr(row_strides), col_stride, causal_lq)
    _check_status(status, "softmax_forward")
    return y


_ZERO_INDEX = np.zeros(1, dtype=np.int64)


def _row_pair(name_y, y, name_dy, dy):
    check_float(name_y, y)
    check_float(name_dy, dy, y.dtype)
    check_same_shape(name_dy, dy, y.shape)
    if y.ndim < 1:
        raise ValueError(f"{name_y} must have at least 1 dim, got shape {y.shape}")
    return _contiguous(y), _contiguous(dy)


def softmax_backward(y, dy, scale=1.0):
    """dx = scale * y * (dy - sum(dy*y)) over the last dim."""
    y, dy = _row_pair("y", y, "dy", dy)
    dx = empty_like(y)
    if y.size:
        cols = y.shape[-1]
        status = _kernel("softmax_backward", y.dtype)(_ptr(y), _ptr(dy), _ptr(dx), y.size // cols,
                                                      cols, float(scale))
        _check_status(status, "softmax_backward")
    return dx


def log_softmax_forward(x):
    """y = x - logsumexp(x) over the last dim."""
    check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    x = _contiguous(x)
    y = empty_apart(x.shape, x.dtype, (x,))  # apart from x modulo 4 KiB: see large_buffers
    if x.size:
        cols = x.shape[-1]
        status = _kernel("log_softmax_forward", x.dtype)(_ptr(x), _ptr(y), x.size // cols, cols)
        _check_status(status, "log_softmax_forward")
    return y


def log_softmax_backward(y, dy):
    """dx = dy - exp(y) * sum(dy) over the last dim."""
    y, dy = _row_pair("y", y, "dy", dy)
    dx = empty_like(y)
    if y.size:
        cols = y.shape[-1]
        status = _kernel("log_softmax_backward", y.dtype)(_ptr(y), _ptr(dy), _ptr(dx),
                                                          y.size // cols, cols)
        _check_status(status, "log_softmax_backward")
    return dx


# ---------------------------------------------------------------------------------------------
# Cross-entropy
# ---------------------------------------------------------------------------------------------
def cross_entropy_forward(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """(loss, lse) with PyTorch semantics; "mean" over zero non-ignored rows is 0.0.
    target must be int64 (other dtypes raise TypeError)."""
    check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    ignore_index = _check_index("ignore_index", ignore_index)
    target = _check_target(logits, target, ignore_index)
    logits = _contiguous(logits)
    n, c = logits.shape
    dtype = logits.dtype
    per_row = np.zeros(n, dtype=dtype)
    lse = np.full((n, 2), -np.inf, dtype=np.float64)  # (max, log of the shifted sum): numpy_backend
    if n and c:
        status = _kernel("cross_entropy_forward", dtype)(
            _ptr(logits), _ptr(target), n, c, ignore_index, float(label_smoothing),
            _ptr(per_row), _ptr(lse))
        _check_status(status, "cross_entropy_forward")
    if reduction == "none":
        return per_row, lse
    loss = np.empty((), dtype=dtype)

    def reduce():  # (a replay redoes it: the count of rows not ignored changes with the batch)
        total = per_row.sum(dtype=np.float64)
        if reduction == "mean":
            count = int(np.count_nonzero(target != ignore_index))
            total = total / count if count else 0.0
        loss[()] = total
    host(reduce)
    return loss, lse


def cross_entropy_backward(logits, target, lse, grad, ignore_index=-100, label_smoothing=0.0,
                           reduction="mean"):
    """dlogits = g_i * (softmax(x_i) - (1-eps)*onehot(t_i) - eps/C); zero for ignored rows."""
    check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    ignore_index = _check_index("ignore_index", ignore_index)
    target = _check_target(logits, target, ignore_index)
    dtype = logits.dtype
    check_float("lse", lse)
    check_same_shape("lse", lse, (logits.shape[0], 2))
    if not isinstance(grad, np.ndarray):
        grad = np.asarray(grad, dtype=dtype)
    check_float("grad", grad, dtype)
    n, c = logits.shape
    check_same_shape("grad", grad, (n,) if reduction == "none" else ())
    logits, grad = _contiguous(logits), _contiguous(grad)
    lse = _contiguous(lse.astype(np.float64, copy=False))
    dlogits = empty_like(logits)
    arrays = logits, target, lse, grad

    def launch():  # (a replay redoes it: the mean's count of rows not ignored changes)
        grad_scale = 1.0
        if reduction == "mean":
            count = int(np.count_nonzero(target != ignore_index))
            grad_scale = 1.0 / count if count else 0.0
        status = _kernel("cross_entropy_backward", dtype)(
            *map(_ptr, arrays), int(reduction == "none"), grad_scale, n, c, ignore_index,
            float(label_smoothing), _ptr(dlogits))
        _check_status(status, "cross_entropy_backward")
    if dlogits.size:
        host(launch)
    return dlogits


# ---------------------------------------------------------------------------------------------
# Layer norm
# ---------------------------------------------------------------------------------------------
def _layer_norm_param(name, p, x):
    if p is None:
        return None
    check_float(name, p, x.dtype)
    check_same_shape(name, p, (x.shape[-1],))
    return _contiguous(p)


def _ptr_or_null(arr):
    return ffi.NULL if arr is None else _ptr(arr)


def _check_rows_input(x, eps=None):
    """x: a float array of at least 1 dim, normalized over its last dim; eps >= 0."""
    check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    if eps is not None and not float(eps) >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")


def _check_row_statistics(x, dy, **statistics):
    """dy of x's shape and dtype; each statistic one value per row of x."""
    check_float("dy", dy, x.dtype)
    check_same_shape("dy", dy, x.shape)
    for name, s in statistics.items():
        check_float(name, s, x.dtype)
        check_same_shape(name, s, x.shape[:-1])


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """(y, mean, rstd): y = (x - mean) * rstd * weight + bias over the last dim."""
    _check_rows_input(x, eps)
    weight = _layer_norm_param("weight", weight, x)
    bias = _layer_norm_param("bias", bias, x)
    x = _contiguous(x)
    y = empty_like(x)  # (the kernel writes every element, mean and rstd of every row)
    mean = np.empty(x.shape[:-1], dtype=x.dtype)
    rstd = np.empty(x.shape[:-1], dtype=x.dtype)
    if x.size == 0:
        for out in (y, mean, rstd):
            out.fill(0)
        return y, mean, rstd
    cols = x.shape[-1]
    status = _kernel("layer_norm_forward", x.dtype)(
        _ptr(x), _ptr_or_null(weight), _ptr_or_null(bias), _ptr(y), _ptr(mean), _ptr(rstd),
        x.size // cols, cols, float(eps))
    _check_status(status, "layer_norm_forward")
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd):
    """(dx, dweight, dbias); dweight and dbias are None when weight is None."""
    _check_rows_input(x)
    _check_row_statistics(x, dy, mean=mean, rstd=rstd)
    weight = _layer_norm_param("weight", weight, x)
    x, dy, mean, rstd = _contiguous(x), _contiguous(dy), _contiguous(mean), _contiguous(rstd)
    dx = empty_like(x)  # the kernel writes every element (zeros_like was a second pass)
    cols = x.shape[-1]
    dweight = dbias = None
    if weight is not None:  # (written by the kernel; zeros where there are no rows)
        dweight = np.empty(cols, dtype=x.dtype)
        dbias = np.empty(cols, dtype=x.dtype)
    if x.size == 0:
        for out in (dweight, dbias):
            if out is not None:
                out.fill(0)
        return dx, dweight, dbias
    status = _kernel("layer_norm_backward", x.dtype)(
        _ptr(dy), _ptr(x), _ptr_or_null(weight), _ptr(mean), _ptr(rstd), _ptr(dx),
        _ptr_or_null(dweight), _ptr_or_null(dbias), x.size // cols, cols)
    _check_status(status, "layer_norm_backward")
    return dx, dweight, dbias


# ---------------------------------------------------------------------------------------------
# Batch norm
# ---------------------------------------------------------------------------------------------
def batch_norm_forward(x, weight, bias, eps=1e-5):
    """(y, mean, var, rstd): each channel (dim 1) normalized over the batch and the later
    dims, y = (x - mean) * rstd * weight + bias; var biased."""
    n, channels, inner = check_batch_norm(x, weight, bias, eps)
    weight, bias = (None if p is None else _contiguous(p) for p in (weight, bias))
    x = _contiguous(x)
    y = empty_like(x)  # (the kernel writes every element and every statistic)
    mean, var, rstd = (np.empty(channels, x.dtype) for _ in range(3))
    status = _kernel("batch_norm_forward", x.dtype)(
        _ptr(x), _ptr_or_null(weight), _ptr_or_null(bias), _ptr(y), _ptr(mean), _ptr(var),
        _ptr(rstd), n, channels, inner, float(eps))
    _check_status(status, "batch_norm_forward")
    return y, mean, var, rstd


def batch_norm_backward(dy, x, weight, mean, rstd):
    """(dx, dweight, dbias) of batch_norm_forward's y, given dy."""
    n, channels, inner = check_batch_norm_backward(dy, x, weight, mean, rstd)
    dy, x, mean, rstd = _contiguous(dy), _contiguous(x), _contiguous(mean), _contiguous(rstd)
    weight = None if weight is None else _contiguous(weight)
    dx = empty_like(x)
    dweight, dbias = np.empty(channels, x.dtype), np.empty(channels, x.dtype)
    status = _kernel("batch_norm_backward", x.dtype)(
        _ptr(dy), _ptr(x), _ptr_or_null(weight), _ptr(mean), _ptr(rstd), _ptr(dx),
        _ptr(dweight), _ptr(dbias), n, channels, inner)
    _check_status(status, "batch_norm_backward")
    return dx, dweight, dbias


# ---------------------------------------------------------------------------------------------
# RMS norm
# ---------------------------------------------------------------------------------------------
def rms_norm_forward(x, weight, eps):
    """(y, rstd): y = x * rstd * weight over the last dim."""
    _check_rows_input(x, eps)
    weight = _layer_norm_param("weight", weight, x)
    x = _contiguous(x)
    y = empty_like(x)
    rstd = np.zeros(x.shape[:-1], dtype=x.dtype)
    if x.size == 0:
        return y, rstd
    cols = x.shape[-1]
    status = _kernel("rms_norm_forward", x.dtype)(
        _ptr(x), _ptr_or_null(weight), _ptr(y), _ptr(rstd), x.size // cols, cols, float(eps))
    _check_status(status, "rms_norm_forward")
    return y, rstd


def rms_norm_backward(dy, x, weight, rstd):
    """(dx, dweight); dweight is None when weight is None."""
    _check_rows_input(x)
    _check_row_statistics(x, dy, rstd=rstd)
    weight = _layer_norm_param("weight", weight, x)
    x, dy, rstd = _contiguous(x), _contiguous(dy), _contiguous(rstd)
    dx = empty_like(x)
    dweight = None if weight is None else np.zeros(x.shape[-1], dtype=x.dtype)
    if x.size == 0:
        return dx, dweight
    cols = x.shape[-1]
    status = _kernel("rms_norm_backward", x.dtype)(
        _ptr(dy), _ptr(x), _ptr_or_null(weight), _ptr(rstd), _ptr(dx), _ptr_or_null(dweight),
        x.size // cols, cols)
    _check_status(status, "rms_norm_backward")
    return dx, dweight


# ---------------------------------------------------------------------------------------------
# Elementwise activations and clamp
# ---------------------------------------------------------------------------------------------
def _elementwise(name, x, *args, others=()):
    """The kernel mt_<name>_<dtype>(x, *others, out, n, *args) on x (any float array) and the
    arrays `others` of x's shape and dtype (named by their (name, array) pairs); the result has
    x's shape, C-contiguous."""
    check_float("x" if not others else "dy", x)
    for other_name, other in others:
        check_float(other_name, other, x.dtype)
        check_same_shape(other_name, other, x.shape)
    out = empty(x.shape, x.dtype)
    if x.size:
        arrays = [_contiguous(a) for a in (x,) + tuple(a for _, a in others)]
        status = _kernel(name, x.dtype)(*[_ptr(a) for a in arrays], _ptr(out), x.size, *args)
        _check_status(status, name)
    return out


def relu_forward(x):
    return _elementwise("relu_forward", x)


def relu_backward(dy, y):
    return _elementwise("relu_backward", dy, others=[("y", y)])


def sigmoid_forward(x):
    return _elementwise("sigmoid_forward", x)


def sigmoid_backward(dy, y):
    return _elementwise("sigmoid_backward", dy, others=[("y", y)])


def silu_forward(x):
    return _elementwise("silu_forward", x)


def silu_backward(dy, x):
    return _elementwise("silu_backward", dy, others=[("x", x)])


def gelu_forward(x, approximate="none"):
    return _elementwise("gelu_forward", x, check_gelu_approximate(approximate))


def gelu_backward(dy, x, approximate="none"):
    return _elementwise("gelu_backward", dy, check_gelu_approximate(approximate), others=[("x", x)])


def sqrt_forward(x):
    return _elementwise("sqrt_forward", x)


def rsqrt_forward(x):
    return _elementwise("rsqrt_forward", x)


def erf_forward(x):
    return _elementwise("erf_forward", x)


def exp_forward(x):
    return _elementwise("exp_forward", x)


def log_forward(x):
    return _elementwise("log_forward", x)


def softplus_forward(x, beta=1.0, threshold=20.0):
    return _elementwise("softplus_forward", x, float(beta), float(threshold))


def pow_int_forward(x, exponent):
    return _elementwise("pow_int_forward", x, check_integer_exponent(exponent))


def pow_scalar_forward(x, exponent):
    return _elementwise("pow_scalar_forward", x, check_real_exponent(exponent))


def abs_forward(x):
    return _elementwise("abs_forward", x)


def abs_backward(dy, x):
    return _elementwise("abs_backward", dy, others=[("x", x)])


def where(condition, a, b):
    """y = a where condition, else b; a and b of the condition's shape or 0-d (one value)."""
    check_where_operands(condition, a, b)
    out = empty(condition.shape, a.dtype)
    if out.size:
        condition, a, b = _contiguous(condition), _contiguous(a), _contiguous(b)
        status = _kernel("where", a.dtype)(_ptr(condition), _ptr(a), _ptr(b), _ptr(out),
                                           out.size, int(a.ndim > 0), int(b.ndim > 0))
        _check_status(status, "where")
    return out


def clamp_forward(x, min=None, max=None):
    return _elementwise("clamp_forward", x, *check_clamp_bounds(min, max))


def clamp_backward(dy, x, min=None, max=None):
    return _elementwise("clamp_backward", dy, *check_clamp_bounds(min, max), others=[("x", x)])


# ---------------------------------------------------------------------------------------------
# Reductions over the last dim
# ---------------------------------------------------------------------------------------------
def _rows_of(x):
    """x (float, >= 1 dim) as a contiguous array and its (rows, cols)."""
    check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    cols = x.shape[-1]
    rows = x.size // cols if cols else int(np.prod(x.shape[:-1]))
    return _contiguous(x), rows, cols


def sum_rows(x, scale=1.0):
    x, rows, cols = _rows_of(x)
    y = np.empty(x.shape[:-1], x.dtype)
    if cols == 0:  # the sum of nothing; NaN for a mean (scale NaN)
        y.fill(0.0 * float(scale))
    elif rows:
        status = _kernel("sum_rows", x.dtype)(_ptr(x), _ptr(y), rows, cols, float(scale))
        _check_status(status, "sum_rows")
    return y


def amax_rows(x, largest=True):
    x, rows, cols = _rows_of(x)
    if cols == 0:
        raise ValueError(f"x: cannot take the extreme of an empty last dim, shape {x.shape}")
    y = np.empty(x.shape[:-1], x.dtype)
    if rows:
        status = _kernel("amax_rows", x.dtype)(_ptr(x), _ptr(y), rows, cols, int(bool(largest)))
        _check_status(status, "amax_rows")
    return y


def sum_cols(x):
    check_float("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-d, got shape {x.shape}")
    x = _contiguous(x)
    y = np.empty(x.shape[1], x.dtype)
    if y.size:
        status = _kernel("sum_cols", x.dtype)(_ptr(x), _ptr(y), x.shape[0], x.shape[1])
        _check_status(status, "sum_cols")
    return y


def linear_param_grads(dy, x, out=None):
    """(dy.T @ x, dy.sum(0)) for dy (n, out) and x (n, in) of one float dtype: a Linear
    layer's weight and bias gradients, dy's column sums taken while the GEMM packs it
    (mt_linear_param_grads): matmul(dy.T, x) and sum_cols(dy), bit for bit. ``out``: a pair
    of C-contiguous arrays to write them into (e.g. row blocks of a packed weight's gradient)."""
    dw, db = numpy_backend.check_linear_param_grads(dy, x, out)
    dy, x = _contiguous(dy), _contiguous(x)
    (rows, n_out), n_in = dy.shape, x.shape[1]
    if dw is None:
        dw, db = empty((n_out, n_in), dy.dtype), np.empty(n_out, dy.dtype)
    if n_out:
        status = _kernel("linear_param_grads", dy.dtype)(
            _ptr(dy), n_out, _ptr(x), max(n_in, 1), rows, n_out, n_in, _ptr(dw), max(n_in, 1),
            _ptr(db))
        _check_status(status, "linear_param_grads")
    return dw, db


# ---------------------------------------------------------------------------------------------
# Copies: contiguous(), a leaf's .grad from a slice of a gradient, cat and stack
# ---------------------------------------------------------------------------------------------
# Below this many bytes numpy's copy on one core costs less than the kernel call.
COPY_MIN_BYTES = 1 << 17


def copy(a):
    """numpy_backend.copy: a new C-contiguous copy of ``a``; from COPY_MIN_BYTES up made by
    the C copies on the threads (_copy_into)."""
    if type(a) is not np.ndarray or a.nbytes < COPY_MIN_BYTES or a.dtype.hasobject:
        out = a.copy(order="C")
        if recording() is not None:  # a capture's replay copies again
            replayed(np.copyto, out, a)
        return out
    out = empty(a.shape, a.dtype)  # np.empty's below 32 MiB: an array a leaf may keep as .grad
    _copy_into(out, a)
    return out


def concatenate(arrays, axis):
    """numpy_backend.concatenate: each array copied into its slice of the output by
    mt_copy_rows (numpy_backend's where the arrays are small, not numpy's, or of another dtype
    than the first; numpy then also raises on shapes that do not fit)."""
    first = arrays[0]
    if (type(first) is not np.ndarray or sum(a.nbytes for a in arrays) < COPY_MIN_BYTES
            or first.dtype.hasobject or not 0 <= axis < first.ndim
            or any(type(a) is not np.ndarray or a.dtype != first.dtype or a.ndim != first.ndim
                   or a.shape[:axis] != first.shape[:axis]
                   or a.shape[axis + 1:] != first.shape[axis + 1:] for a in arrays)):
        out = numpy_backend.concatenate(arrays, axis)
        if recording() is not None:  # a capture's replay joins them again
            replayed(_concatenate_into, list(arrays), axis, out)
        return out
    shape = list(first.shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = empty(tuple(shape), first.dtype)
    lead, start = (slice(None),) * axis, 0
    for a in arrays:
        _copy_into(out[lead + (slice(start, start + a.shape[axis]),)], a)
        start += a.shape[axis]
    return out


def _concatenate_into(arrays, axis, out):
    np.concatenate(arrays, axis=axis, out=out)


def _copy_into(dst, src):
    """dst[...] = src, two arrays of one shape and dtype, dst just made (never overlapping
    src): one mt_copy_rows call where both are rows of one stride (_rows_layout), else one
    mt_copy_strided call into a C-contiguous dst from an aligned src (its element loads are
    typed; a broadcast src, a stride 0, is filled on the threads), else numpy's copy."""
    layout = _rows_layout(dst, src)
    if layout is None:
        if dst.flags.c_contiguous and src.flags.aligned:
            status = lib.mt_copy_strided(_pointer(src), _pointer(dst), src.ndim,
                                         ffi.new("int64_t[]", src.shape),
                                         ffi.new("int64_t[]", src.strides), src.itemsize)
            _check_status(status, "copy_strided")
        else:
            record(np.copyto, dst, src)
        return
    rows, row_bytes, dst_stride, src_stride = layout
    if rows and row_bytes:
        status = lib.mt_copy_rows(_pointer(src), src_stride, _pointer(dst), dst_stride, rows,
                                  row_bytes)
        _check_status(status, "copy_rows")


def _rows_layout(a, b):
    """(rows, row_bytes, a's row stride, b's row stride), both in bytes, if arrays ``a`` and
    ``b`` of one shape are each ``rows`` runs of ``row_bytes`` contiguous bytes one stride
    apart; else None. The runs are the trailing dims contiguous in both; the dims before them
    must merge into one (dims of size 1 count for nothing, negative strides never pass)."""
    dims = [(n, sa, sb) for n, sa, sb in zip(a.shape, a.strides, b.strides) if n != 1]
    if any(n == 0 for n, _, _ in dims):
        return 0, 0, 0, 0
    run = a.itemsize
    while dims and dims[-1][1] == run and dims[-1][2] == run:
        run *= dims.pop()[0]
    if not dims:
        return 1, run, 0, 0
    n, stride_a, stride_b = dims.pop()
    rows = n
    while dims:
        n, sa, sb = dims.pop()
        if sa != stride_a * rows or sb != stride_b * rows:
            return None
        rows *= n
    if stride_a < run or stride_b < run:
        return None
    return rows, run, stride_a, stride_b


def _pointer(a):
    """A void * to an array's first element (a view's too, contiguous or not)."""
    return ffi.cast("void *", large_buffers.address(a))


# ---------------------------------------------------------------------------------------------
# Adding rows at indices
# ---------------------------------------------------------------------------------------------
def index_add_rows(src, rows, out_rows):
    check_row_indices(src, rows, out_rows)
    cols = int(np.prod(src.shape[1:]))
    if not src.size:
        return _zeros((int(out_rows),) + src.shape[1:], src.dtype)
    out = empty((int(out_rows),) + src.shape[1:], src.dtype)  # the kernel zeroes it
    src, rows = _contiguous(src), _contiguous(rows)
    status = _kernel("index_add_rows", src.dtype)(_ptr(src), _ptr(rows), _ptr(out),
                                                  src.shape[0], cols, int(out_rows))
    _check_status(status, "index_add_rows")
    return out


def cumsum_rows(x):
    """The running sum along the last dim, summed in double."""
    check_float("x", x)
    out = empty(x.shape, x.dtype)
    if x.size:
        cols = x.shape[-1]
        status = _kernel("cumsum_rows", x.dtype)(_ptr(_contiguous(x)), _ptr(out),
                                                 x.size // cols, cols)
        _check_status(status, "cumsum_rows")
    return out


# ---------------------------------------------------------------------------------------------
# Arithmetic on every thread
# ---------------------------------------------------------------------------------------------
def arith(op, a, b, out=None):
    layout, shape = check_arith(op, a, b, out)
    return arith_on_layout(op, a, b, layout, shape, out)


def arith_on_layout(op, a, b, layout, shape, out=None):
    """``arith`` once its arguments are checked: ``layout`` is ``checks.arith_layout(a, b)`` for
    float32 or float64 arrays of one dtype, ``shape`` the result's, ``out`` None or checked.
    The elementwise ops call it directly, having taken the layout already (a second check
    would cost a large array's add a tenth of its time on two threads)."""
    rows, cols, a_layout, b_layout = layout
    a, b = _contiguous(a), _contiguous(b)
    if out is None:
        out = empty(shape, a.dtype)
    if out.size:
        status = _kernel("arith", a.dtype)(ARITH_OPS.index(op), _ptr(a), a_layout, _ptr(b),
                                           b_layout, _ptr(out), rows, cols)
        _check_status(status, "arith")
    return out


# ---------------------------------------------------------------------------------------------
# Recurrent cells: one time step (the GEMMs around it are the caller's)
# ---------------------------------------------------------------------------------------------
def _cell_call(name, chunks, inputs, outputs):
    """The checked arguments of cell kernel mt_<name>: ``inputs`` are (name, array, width)
    triples for check_cell_arrays (the first sets rows and hidden), ``outputs`` the widths of
    the fresh outputs. Returns (contiguous inputs, outputs, rows, hidden)."""
    rows, hidden = check_cell_arrays(chunks, *inputs)
    arrays = [_contiguous(a) for _, a, _ in inputs]
    dtype = arrays[0].dtype
    outs = [empty((rows, width * hidden), dtype) for width in outputs]
    return arrays, outs, rows, hidden


def _run_cell(name, arrays, outs, rows, hidden, *extra):
    if rows and hidden:
        status = _kernel(name, arrays[0].dtype)(*[_ptr(a) for a in arrays + outs], rows, hidden,
                                                *extra)
        _check_status(status, name)
    return outs


def rnn_cell_forward(xw, hw, nonlinearity="tanh"):
    check_nonlinearity(nonlinearity)
    arrays, outs, rows, hidden = _cell_call("rnn_cell_forward", 1, [("xw", xw, 1),
                                                                    ("hw", hw, 1)], [1])
    return _run_cell("rnn_cell_forward", arrays, outs, rows, hidden,
                     int(nonlinearity == "relu"))[0]


def rnn_cell_backward(dh, h, nonlinearity="tanh"):
    check_nonlinearity(nonlinearity)
    arrays, outs, rows, hidden = _cell_call("rnn_cell_backward", 1, [("dh", dh, 1),
                                                                     ("h", h, 1)], [1])
    return _run_cell("rnn_cell_backward", arrays, outs, rows, hidden,
                     int(nonlinearity == "relu"))[0]


def lstm_cell_forward(xw, hw, c_prev):
    """(h, c, act)."""
    call = _cell_call("lstm_cell_forward", 4, [("xw", xw, 4), ("hw", hw, 4),
                                               ("c_prev", c_prev, 1)], [1, 1, 4])
    return tuple(_run_cell("lstm_cell_forward", *call))


def lstm_cell_backward(dh, dc, c_prev, c, act):
    """(dgates, dc_prev)."""
    call = _cell_call("lstm_cell_backward", 4, [("act", act, 4), ("dh", dh, 1), ("dc", dc, 1),
                                                ("c_prev", c_prev, 1), ("c", c, 1)], [4, 1])
    arrays, outs, rows, hidden = call
    act, dh, dc, c_prev, c = arrays  # the kernel takes them in the order of the formula
    return tuple(_run_cell("lstm_cell_backward", [dh, dc, c_prev, c, act], outs, rows, hidden))


def gru_cell_forward(xw, hw, h_prev):
    """(h, saved)."""
    call = _cell_call("gru_cell_forward", 3, [("xw", xw, 3), ("hw", hw, 3),
                                              ("h_prev", h_prev, 1)], [1, 4])
    return tuple(_run_cell("gru_cell_forward", *call))


def gru_cell_backward(dh, h_prev, saved):
    """(dxw, dhw, dh_prev)."""
    arrays, outs, rows, hidden = _cell_call("gru_cell_backward", 4, [
        ("saved", saved, 4), ("dh", dh, 1), ("h_prev", h_prev, 1)], [3, 3, 1])
    saved, dh, h_prev = arrays
    return tuple(_run_cell("gru_cell_backward", [dh, h_prev, saved], outs, rows, hidden))

# ---------------------------------------------------------------------------------------------
# 2-d convolution (im2col + GEMM in C)
# ---------------------------------------------------------------------------------------------
def _conv2d_call(name, dtype, pointers, x_shape, weight_shape, geometry):
    (sh, sw), (ph, pw), (dh, dw), groups = geometry
    n, c, h, w = x_shape
    o, _, kh, kw = weight_shape
    status = _kernel(name, dtype)(*pointers, n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw,
                                  groups)
    _check_status(status, name)


def conv2d_forward(x, weight, bias, stride, padding, dilation, groups):
    """y (N, O, OH, OW) of x (N, C, H, W) and weight (O, C/groups, kh, kw), bias (O,) or None."""
    geometry, out = check_conv2d(x, weight, bias, stride, padding, dilation, groups)
    y = empty((x.shape[0], weight.shape[0]) + out, x.dtype)
    if y.size == 0:
        return y
    x, weight = _contiguous(x), _contiguous(weight)
    bias = None if bias is None else _contiguous(bias)
    _conv2d_call("conv2d_forward", x.dtype, (_ptr(x), _ptr(weight), _ptr_or_null(bias), _ptr(y)),
                 x.shape, weight.shape, geometry)
    return y


def conv2d_backward_input(dy, weight, input_size, stride, padding, dilation, groups):
    """dx (N, C, H, W): conv2d_forward's adjoint in x, applied to dy."""
    geometry = check_conv2d_backward_input(dy, weight, input_size, stride, padding, dilation,
                                           groups)
    x_shape = (dy.shape[0], weight.shape[1] * geometry[3]) + tuple(int(n) for n in input_size)
    dx = empty(x_shape, dy.dtype)
    if dx.size == 0:
        return dx
    dy, weight = _contiguous(dy), _contiguous(weight)
    _conv2d_call("conv2d_backward_input", dy.dtype, (_ptr(dy), _ptr(weight), _ptr(dx)),
                 x_shape, weight.shape, geometry)
    return dx


def conv2d_backward_weight(dy, x, kernel_size, stride, padding, dilation, groups):
    """dweight (O, C/groups, kh, kw): conv2d_forward's adjoint in the weight, applied to dy."""
    geometry = check_conv2d_backward_weight(dy, x, kernel_size, stride, padding, dilation,
                                            groups)
    weight_shape = (dy.shape[1], x.shape[1] // geometry[3]) + tuple(int(k) for k in kernel_size)
    dweight = empty(weight_shape, dy.dtype)
    if x.shape[0] == 0:  # an empty sum
        dweight.fill(0)
        return dweight
    dy, x = _contiguous(dy), _contiguous(x)
    _conv2d_call("conv2d_backward_weight", dy.dtype, (_ptr(dy), _ptr(x), _ptr(dweight)),
                 x.shape, weight_shape, geometry)
    return dweight


# ---------------------------------------------------------------------------------------------
# Max pooling
# ---------------------------------------------------------------------------------------------
def max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode=False):
    """(y, indices) of (N, C, OH, OW): each window's maximum and its flat position in its
    plane."""
    (kernel, stride, padding, dilation), out = check_max_pool2d(x, kernel_size, stride, padding,
                                                                dilation, ceil_mode)
    n, c, h, w = x.shape
    y = empty((n, c) + out, x.dtype)
    indices = np.empty((n, c) + out, np.int64)
    if y.size == 0:
        return y, indices
    x = _contiguous(x)
    status = _kernel("max_pool2d_forward", x.dtype)(
        _ptr(x), _ptr(y), _ptr(indices), n * c, h, w, *out, *kernel,
        *stride, *padding, *dilation)
    _check_status(status, "max_pool2d_forward")
    return y, indices


def max_pool2d_backward(dy, indices, input_size):
    """dx (N, C, H, W): zeros with each output's gradient added at its maximum's position."""
    h, w = check_max_pool2d_backward(dy, indices, input_size)
    n, c = dy.shape[:2]
    dx = empty((n, c, h, w), dy.dtype)
    if dx.size == 0:
        return dx
    dy, indices = _contiguous(dy), _contiguous(indices)
    status = _kernel("max_pool2d_backward", dy.dtype)(
        _ptr(dy), _ptr(indices), _ptr(dx), n * c, h * w,
        dy.shape[2] * dy.shape[3])
    _check_status(status, "max_pool2d_backward")
    return dx


# ---------------------------------------------------------------------------------------------
# Optimizer updates, in place
# ---------------------------------------------------------------------------------------------
def _adam_ready(dtype, arrays):
    """True if C may update these arrays of one parameter in place: numpy arrays of one float
    dtype, C-contiguous, aligned, and the ones C writes writeable."""
    for index, a in enumerate(arrays):
        if a is None:
            continue
        if type(a) is not np.ndarray or a.dtype != dtype:
            return False
        flags = a.flags
        if not (flags.c_contiguous and flags.aligned) or (index != 1 and not flags.writeable):
            return False
    return True


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_sizes,
              bias_correction2_sqrts, *, lr, beta1, beta2, eps, weight_decay,
              decoupled_weight_decay=False, maximize=False):
    lists = (params, grads, exp_avgs, exp_avg_sqs) + (
        (max_exp_avg_sqs,) if max_exp_avg_sqs is not None else ())
    plan = _adam_plan(lists, step_sizes, bias_correction2_sqrts)
    hyper = dict(lr=float(lr), beta1=float(beta1), beta2=float(beta2), eps=float(eps),
                 weight_decay=float(weight_decay))
    for dtype, chosen, c_lists, sizes in plan.by_dtype:
        status = _kernel("adam_step", dtype)(
            len(chosen), *c_lists[:4], c_lists[4] if len(c_lists) > 4 else ffi.NULL, sizes,
            ffi.new("double[]", [float(step_sizes[i]) for i in chosen]),
            ffi.new("double[]", [float(bias_correction2_sqrts[i]) for i in chosen]),
            hyper["lr"], hyper["beta1"], hyper["beta2"], hyper["eps"], hyper["weight_decay"],
            int(bool(decoupled_weight_decay)), int(bool(maximize)))
        _check_status(status, "adam_step")
    if plan.elsewhere:
        numpy_backend.adam_step(
            *([a[i] for i in plan.elsewhere] for a in lists[:4]),
            [max_exp_avg_sqs[i] for i in plan.elsewhere] if len(lists) > 4 else None,
            [step_sizes[i] for i in plan.elsewhere],
            [bias_correction2_sqrts[i] for i in plan.elsewhere],
            decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, **hyper)


class _AdamPlan:
    """Which parameters C updates, by dtype, with the C pointer lists of their arrays
    (``by_dtype``: (dtype, indices, lists, sizes)), and which numpy does (``elsewhere``).
    Making one costs a few microseconds a parameter, as long as the update itself for a small
    model, so the last one is kept: a training loop updates the same parameters and moments
    every step. Its gradients are new arrays each step after ``zero_grad()`` (set to None), so
    they are not part of the key: ``take_grads`` points the kept lists at each step's.
    ``arrays`` holds weak references to the rest: while all are alive, the same ids are the
    same arrays."""

    last = None

    def __init__(self, key, lists):
        self.key = key
        try:
            self.arrays = [weakref.ref(a) for k, arrays in enumerate(lists) if k != 1
                           for a in arrays]
        except TypeError:  # not all numpy arrays: not kept
            self.arrays = None
        self.by_dtype, self.elsewhere = [], []
        chosen_by_dtype = {}
        for i, p in enumerate(lists[0]):
            dtype = getattr(p, "dtype", None)
            if dtype in _SUFFIX and _adam_ready(dtype, [a[i] for a in lists]):
                chosen_by_dtype.setdefault(dtype, []).append(i)
            else:  # a half dtype, a strided view, a read-only array: numpy's update, in place
                self.elsewhere.append(i)
        for dtype, chosen in chosen_by_dtype.items():
            pointer = _C_TYPE[dtype]
            c_lists = [ffi.new(pointer + "[]", [ffi.cast(pointer, ffi.from_buffer(
                _C_ARRAY[dtype], arrays[i])) for i in chosen]) for arrays in lists]
            self.by_dtype.append((dtype, chosen, c_lists,
                                  ffi.new("int64_t[]", [lists[0][i].size for i in chosen])))
        self.shapes = [getattr(p, "shape", None) for p in lists[0]]

    def fits(self, key):
        return key == self.key and all(ref() is not None for ref in self.arrays)

    def take_grads(self, grads):
        """Point the C lists at ``grads``; False, before changing anything, if one of them
        cannot be read by C in place or has the wrong shape: a new plan sorts it out."""
        if self.elsewhere or len(grads) != len(self.shapes):
            return False  # (a parameter on numpy's update might move to C with these)
        shapes = self.shapes
        for dtype, chosen, _, _ in self.by_dtype:
            for i in chosen:
                g = grads[i]
                if type(g) is not np.ndarray or g.dtype != dtype or g.shape != shapes[i]:
                    return False
                flags = g.flags
                if not (flags.c_contiguous and flags.aligned):
                    return False
        for dtype, chosen, c_lists, _ in self.by_dtype:
            slots, as_array = c_lists[1], _C_ARRAY[dtype]
            for slot, i in enumerate(chosen):  # (the caller's list keeps each array alive)
                slots[slot] = ffi.from_buffer(as_array, grads[i])
        return True


def _adam_plan(lists, step_sizes, bias_correction2_sqrts):
    """The _AdamPlan of these arrays: the last one, on these gradients, if the other arrays
    are its arrays; else a new one."""
    key = tuple([id(a) for k, arrays in enumerate(lists) if k != 1 for a in arrays])
    last = _AdamPlan.last
    if last is not None and all(type(x) is list for x in lists) \
            and len(step_sizes) == len(bias_correction2_sqrts) == len(lists[0]):
        if last.fits(key) and last.take_grads(lists[1]):
            return last
    numpy_backend._check_adam_lists(*lists[:4], lists[4] if len(lists) > 4 else None,
                                    step_sizes, bias_correction2_sqrts)
    plan = _AdamPlan(key, lists)
    _AdamPlan.last = plan if plan.arrays is not None else None
    return plan


class AdamCalls:
    """The Adam update of each parameter as a C kernel call of its own, on fixed arrays: for a
    captured step that runs each as soon as the backward is done with its parameter
    (backends/update_schedule.py). ``calls[i]`` is parameter i's tape entry ``(kernel, args,
    True)``; ``set`` writes one step's scalars into every call's arguments before they run,
    and ``enable(False)`` turns the calls into no-ops (a count of 0)."""

    def __init__(self, lists):
        dtype = lists[0][0].dtype
        pointer, count = _C_TYPE[dtype], len(lists[0])
        kernel = _kernel("adam_step", dtype)
        self.step_sizes = ffi.new("double[]", count)
        self.bias_correction2_sqrts = ffi.new("double[]", count)
        self.calls = []
        for i in range(count):
            lists_i = [ffi.NULL if arrays is None else ffi.new(pointer + "[1]", [
                ffi.cast(pointer, ffi.from_buffer(_C_ARRAY[dtype], arrays[i]))])
                for arrays in lists]
            args = [1, *lists_i, ffi.new("int64_t[1]", [lists[0][i].size]),
                    self.step_sizes + i, self.bias_correction2_sqrts + i]
            self.calls.append((kernel, args + [0.0] * 5 + [0, 0], True))

    def set(self, step_sizes, bias_correction2_sqrts, *, lr, beta1, beta2, eps, weight_decay,
            decoupled_weight_decay=False, maximize=False):
        count = len(self.calls)
        self.step_sizes[0:count] = [float(v) for v in step_sizes]
        self.bias_correction2_sqrts[0:count] = [float(v) for v in bias_correction2_sqrts]
        scalars = [float(lr), float(beta1), float(beta2), float(eps), float(weight_decay),
                   int(bool(decoupled_weight_decay)), int(bool(maximize))]
        if scalars != self.calls[0][1][9:]:  # (a scheduler's new learning rate)
            for _, args, _ in self.calls:
                args[9:] = scalars

    def enable(self, on):
        for _, args, _ in self.calls:
            args[0] = int(bool(on))


def adam_calls(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    """An AdamCalls for these per-parameter lists (as adam_step takes them), or None unless C
    can update every parameter in place and all have one dtype."""
    lists = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    numpy_backend._check_adam_lists(*lists, [0.0] * len(params), [0.0] * len(params))
    dtypes = {getattr(p, "dtype", None) for p in params}
    if not params or len(dtypes) != 1 or next(iter(dtypes)) not in _SUFFIX:
        return None
    dtype = next(iter(dtypes))
    if not all(_adam_ready(dtype, [a if a is None else a[i] for a in lists])
               for i in range(len(params))):
        return None
    return AdamCalls(lists)


# ---------------------------------------------------------------------------------------------
# One attention step (incremental decoding)
# ---------------------------------------------------------------------------------------------
def _step_operand(x):
    """(array, element strides of its first three dims) for attention_step's C kernel, which
    reads a 4-D operand through those strides and its last dim contiguous: x itself when it
    can (aligned, non-negative whole-element strides), else a C-contiguous copy."""
    item = x.itemsize
    strides = x.strides
    if (not x.flags.aligned or min(strides) < 0 or any(st % item for st in strides)
            or (x.shape[3] > 1 and strides[3] != item)):
        x = _contiguous(x)  # (np.ascontiguousarray would keep a misaligned contiguous array)
        strides = x.strides
    return x, [strides[0] // item, strides[1] // item, strides[2] // item]


_STEP_KERNELS = {np.dtype(np.float32): lib.mt_attention_step_forward_f32,
                 np.dtype(np.float64): lib.mt_attention_step_forward_f64}


def attention_step(q, k, v, scale=1.0, mask=None, causal_offset=None):
    """(out (N, L, H, Dv), weights (N, H, L, S)) as numpy_backend.attention_step, in one C call.

    The operands are read through their strides, without copies, when their feature dims are
    contiguous and k is the transpose of a (..., D, S) array with contiguous keys (the layout
    the decoder's KV cache keeps); others are copied into that layout first. (A decoding step
    makes one call per attention: the strides travel in one array, the kernel is looked up
    once.)
    """
    n, h, lq, s, d, dv = check_attention_step(q, k, v, mask, causal_offset)
    out = np.empty((n, lq, h, dv), q.dtype)
    weights = np.empty((n, h, lq, s), q.dtype)
    if out.size == 0 and weights.size == 0:
        return out, weights
    q, q_strides = _step_operand(q)
    kt, kt_strides = _step_operand(k.swapaxes(-1, -2))
    v, v_strides = _step_operand(v)
    mask_ptr, mask_strides = ffi.NULL, [0, 0, 0, 0]
    if mask is not None:
        mask = _contiguous(mask.reshape((1,) * (4 - mask.ndim) + mask.shape))
        # bool: byte strides are element strides; 0 where the mask broadcasts
        mask_strides = [0 if extent == 1 else st for extent, st in zip(mask.shape, mask.strides)]
        mask_ptr = _ptr(mask)
    strides = np.array(q_strides + kt_strides + v_strides + mask_strides, dtype=np.int64)
    pointer = _ptr(strides)
    status = _STEP_KERNELS[q.dtype](
        _base_pointer(q), _base_pointer(kt), _base_pointer(v), mask_ptr, _ptr(out),
        _ptr(weights), n, h, lq, s, d, dv, pointer, pointer + 3, pointer + 6, pointer + 9,
        float(scale), -1 if causal_offset is None else int(causal_offset))
    _check_status(status, "attention_step")
    return out, weights


def dropout_keep(count, seed, threshold, scale, dtype):
    """As numpy_backend.dropout_keep (the same factors, bit for bit), in one C call."""
    check_dropout_keep(count, seed, threshold, dtype)
    keep = empty((count,), np.dtype(dtype))
    if count:
        status = _kernel("dropout_keep", keep.dtype)(_ptr(keep), count, seed, threshold, scale)
        _check_status(status, "dropout_keep")
    return keep


def _keep_pointer(keep):
    """The C pointer to attention's dropout factors (checked: the scores' shape), or NULL."""
    return ffi.NULL if keep is None else _ptr(_contiguous(keep))


def _view_strides(x):
    """Element strides of the first three dims of an output view (check_output_view)."""
    return [st // x.itemsize for st in x.strides[:3]]


def attention_forward(q, k, v, scale=1.0, mask=None, causal=False, out=None, keep=None):
    """(out, weights) as numpy_backend.attention_forward, in one C call that takes a head at a
    time (csrc/attention.c): q, k, v are read through their strides (copied first only where
    a feature dim is not contiguous), out written through its own."""
    n, h, length, s, d, dv = check_attention(q, k, v, mask, causal, out, keep)
    weights = empty((n, h, length, s), q.dtype)
    if out is None:
        out = empty((n, h, length, dv), q.dtype)
    if out.size == 0 and weights.size == 0:
        return out, weights
    mask_add = mask_bool = row_strides = ffi.NULL
    col_stride = 0
    if mask is not None:
        mask, mask_rows, col_stride = _mask_layout(weights, mask)
        row_strides = _ptr(mask_rows)
        if mask.dtype == np.bool_:
            mask_bool = _bytes(mask)
        else:
            mask_add = _ptr(mask)
    (q, q_strides), (k, k_strides), (v, v_strides) = map(_step_operand, (q, k, v))
    strides = np.array(q_strides + k_strides + v_strides + _view_strides(out), dtype=np.int64)
    status = _kernel("attention_forward", q.dtype)(
        _base_pointer(q), _base_pointer(k), _base_pointer(v), _base_pointer(out), _ptr(weights),
        n, h, length, s, d, dv, _ptr(strides), float(scale), mask_add, mask_bool, row_strides,
        col_stride, int(bool(causal)), _keep_pointer(keep))
    _check_status(status, "attention_forward")
    return out, weights


def attention_backward(q, k, v, weights, dout, scale=1.0, dq=None, dk=None, dv=None, keep=None):
    """(dq, dk, dv) as numpy_backend.attention_backward, in one C call that takes a head at a
    time; each gradient into its given output view, or a new array."""
    n, h, length, s, d, d_v = check_attention_backward(
        q, k, v, weights, dout, (("dq", dq), ("dk", dk), ("dv", dv)), keep)
    dq = empty(q.shape, q.dtype) if dq is None else dq
    dk = empty(k.shape, q.dtype) if dk is None else dk
    dv = empty(v.shape, q.dtype) if dv is None else dv
    if n * h == 0:
        return dq, dk, dv
    operands = [_step_operand(x) for x in (q, k, v, dout)]
    weights = _contiguous(weights)
    strides = np.array(sum((st for _, st in operands), []) + _view_strides(dq)
                       + _view_strides(dk) + _view_strides(dv), dtype=np.int64)
    (q, _), (k, _), (v, _), (dout, _) = operands
    status = _kernel("attention_backward", q.dtype)(
        _base_pointer(q), _base_pointer(k), _base_pointer(v), _ptr(weights), _base_pointer(dout),
        _base_pointer(dq), _base_pointer(dk), _base_pointer(dv), n, h, length, s, d, d_v,
        _ptr(strides), float(scale), _keep_pointer(keep))
    _check_status(status, "attention_backward")
    return dq, dk, dv


# ---------------------------------------------------------------------------------------------
# Gather along a dim and its adjoint, scatter-add; keeping a triangle
# ---------------------------------------------------------------------------------------------
def _bytes(arr):
    """C pointer to the bytes of a C-contiguous array of any dtype (for the kernels that only
    move elements: gather, keep_triangle)."""
    return ffi.from_buffer("uint8_t[]", arr.reshape(-1).view(np.uint8))


def gather_forward(x, dim, index):
    outer, size, n, inner = check_gather(x, dim, index)
    if x.itemsize not in (1, 2, 4, 8):  # no element width the kernel moves
        return numpy_backend.gather_forward(x, dim, index)
    out = empty(index.shape, x.dtype)
    if out.size:
        x, index = _contiguous(x), _contiguous(index)
        status = lib.mt_gather_forward(_bytes(x), _ptr(index), _bytes(out), x.itemsize, outer,
                                       size, n, inner)
        if status:  # the kernel checks every index as it reads: name the bad one
            check_gather_index(index, size, dim % x.ndim)
            _check_status(status, "gather_forward")
    return out


def _scatter_add(base, src, dim, index, shape):
    """base (zeros where None) of ``shape`` with src added at index along dim, in C."""
    d = dim % src.ndim
    outer, size, n, inner = math.prod(shape[:d]), shape[d], src.shape[d], math.prod(shape[d + 1:])
    out = empty(shape, src.dtype)
    if out.size:
        src, index = _contiguous(src), _contiguous(index)
        status = _kernel("scatter_add", src.dtype)(
            ffi.NULL if base is None else _ptr(_contiguous(base)), _ptr(src), _ptr(index),
            _ptr(out), outer, size, n, inner)
        if status:
            check_gather_index(index, size, d)
            _check_status(status, "scatter_add")
    elif index.size:  # nothing to write, but an index into an empty dim is still out of range
        check_gather_index(index, size, d)
    return out


def gather_backward(dy, dim, index, size):
    return _scatter_add(None, dy, dim, index, check_gather_backward(dy, dim, index, size))


def scatter_add(x, dim, index, src):
    check_scatter_add(x, dim, index, src)
    return _scatter_add(x, src, dim, index, x.shape)


def keep_triangle(x, diagonal=0, upper=False):
    diagonal = check_keep_triangle(x, diagonal)
    out = empty(x.shape, x.dtype)
    if out.size:
        rows, cols = x.shape[-2:]
        status = lib.mt_keep_triangle(_bytes(_contiguous(x)), _bytes(out), x.itemsize,
                                      x.size // (rows * cols), rows, cols, diagonal, int(upper))
        _check_status(status, "keep_triangle")
    return out


# ---------------------------------------------------------------------------------------------
# A product written into its place in a larger array
# ---------------------------------------------------------------------------------------------
_SHARED_GEMM_FLOPS = 4e6  # below this a GEMM call runs on one thread (tuned/gemm_tuned.c)


def matmul_into(a, b, *, out):
    """np.matmul(a, b, out=out) through the C strided-batched GEMM; returns out. ``out`` may be
    a strided view with unit-stride rows (checks.check_matmul_into), such as attention heads
    (N, H, L, D) seen in the (N, L, H·D) array they make up: the product lands in place, with
    no copy into that layout afterwards. Batch dims of one uniform stride in all three arrays
    are one C call; the dims before them (the batch N of heads) are looped over here."""
    batch_shape = check_matmul_into(a, b, out)
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if out.size == 0:
        return out
    if k == 0:
        out[...] = 0
        return out
    a, ta, lda = _matrix_layout(a)
    b, tb, ldb = _matrix_layout(b)
    item = out.itemsize
    ldc = out.strides[-2] // item if m > 1 else n
    pa, pb, pc = _base_pointer(a), _base_pointer(b), _base_pointer(out)
    sa, sb = _batch_strides(a, batch_shape), _batch_strides(b, batch_shape)
    sc = [s // item for s in out.strides[:-2]]
    p, inner, (stride_a, stride_b, stride_c) = _collapse_batch(batch_shape, [sa, sb, sc])
    if p and len(batch_shape) == 2 and 2.0 * m * n * k * inner < _SHARED_GEMM_FLOPS:
        # Two batch dims of no common stride (heads in place: N, H). The heads of one row of
        # N share cache lines, so they are the batch of each C call, unless that call would be
        # small (too small to share among threads; its fixed cost a large part of it): then
        # the longer dim is (fewer, larger calls).
        swapped = _collapse_batch(batch_shape[::-1], [sa[::-1], sb[::-1], sc[::-1]])
        if swapped[1] > inner:
            batch_shape, sa, sb, sc = batch_shape[::-1], sa[::-1], sb[::-1], sc[::-1]
            p, inner, (stride_a, stride_b, stride_c) = swapped
    for outer in np.ndindex(*batch_shape[:p]):
        _run_gemm(out.dtype,
                  _offset(pa, sum(i * s for i, s in zip(outer, sa))), ta, lda, stride_a,
                  _offset(pb, sum(i * s for i, s in zip(outer, sb))), tb, ldb, stride_b,
                  _offset(pc, sum(i * s for i, s in zip(outer, sc))), ldc, stride_c,
                  m, n, k, inner, 1.0, 0.0)
    return out


# ---------------------------------------------------------------------------------------------
# Bias + ReLU (the feed-forward block after its GEMM)
# ---------------------------------------------------------------------------------------------
def bias_relu_forward(x, bias, out=None):
    """max(x + bias, 0) for a 2-d x and its row bias; into ``out`` if given (x itself: in
    place, as on a GEMM's fresh output)."""
    check_bias_relu(x, bias, out)
    if out is None:
        out = empty(x.shape, x.dtype)
    if out.size:
        status = _kernel("bias_relu_forward", x.dtype)(
            _ptr(_contiguous(x)), _ptr(_contiguous(bias)), _ptr(out), x.shape[0], x.shape[1])
        _check_status(status, "bias_relu_forward")
    return out


def bias_relu_backward(dy, y, out=None):
    """(dx, dbias): dx = 0 where y <= 0 else dy, and dbias its column sums (row order); dx
    into ``out`` if given (dy itself: in place, on a gradient the caller owns)."""
    check_bias_relu_backward(dy, y, out)
    dx = empty(dy.shape, dy.dtype) if out is None else out
    dbias = np.empty(dy.shape[1], dy.dtype)
    if dbias.size:
        status = _kernel("bias_relu_backward", dy.dtype)(
            _ptr(_contiguous(dy)), _ptr(_contiguous(y)), _ptr(dx), _ptr(dbias), dy.shape[0],
            dy.shape[1])
        _check_status(status, "bias_relu_backward")
    return dx, dbias
