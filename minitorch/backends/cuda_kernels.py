"""The project's own CUDA kernels (csrc/cuda/*.cu), called on CuPy arrays.

The kernel layer of the optional CUDA backend: the functions below have the names, arguments
and semantics of ``c_backend``'s (matmul, gemm, softmax_forward / softmax_backward,
log_softmax_forward / log_softmax_backward, cross_entropy_forward / cross_entropy_backward,
layer_norm_forward / layer_norm_backward), but take and return ``cupy.ndarray``s that live on
the current GPU. As in ``c_backend``, every check that protects memory happens here, before a
kernel runs: dtypes, shapes, target ranges; outputs are new C-contiguous arrays. The ops of
CUDA tensors reach them through ``backends.current()``, which sends a call on GPU arrays here
(``backends/__init__.py``), with the arrays' GPU made current.

Each .cu file is compiled for the GPU at hand at its first use, through CuPy's RawModule
(NVRTC), and cached by CuPy (in memory, and on disk under ~/.cupy/kernel_cache). The sources
are read from the source tree's csrc/cuda/ (an installed wheel carries a copy, cuda_src/); their
one include, common.cuh, is pasted in before compiling, so that the source CuPy hashes for its
cache is all of the code.

CuPy is optional: importing this module never imports it (nor does ``import minitorch``); a
function called where CuPy or a GPU is missing raises RuntimeError saying which.
``is_available()`` says whether the kernels can run.

Imports: numpy and ``.checks``; CuPy at the first call.
"""
import functools
import importlib
import math
import os

import numpy as np

from .checks import broadcast_shape, check_label_smoothing, check_reduction, check_same_shape

# The sources: the source tree's csrc/cuda in a checkout or an editable install; the copy that
# setup.py's build_py puts beside this file in an installed wheel.
_SOURCE_TREE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))), "csrc", "cuda")
_PACKAGED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda_src")
CUDA_DIR = _SOURCE_TREE if os.path.isdir(_SOURCE_TREE) else _PACKAGED
_COMMON_HEADER = "common.cuh"
NVRTC_OPTIONS = ("--std=c++17",)

# Launch shapes, as the .cu files expect them (their opening comments say why).
ROW_THREADS = 256  # MT_ROW_THREADS in common.cuh: one block per row
GEMM_TILE, GEMM_THREADS = 128, 256  # gemm.cu: a 128 x 128 tile of C per block of 256 threads
LN_COLS, LN_ROWS = 32, 8  # layer_norm.cu: the blocks of the dweight / dbias partial sums
LN_MAX_CHUNKS = 128  # row chunks of those partial sums (each at least LN_MIN_CHUNK_ROWS rows)
LN_MIN_CHUNK_ROWS = 32
_MAX_GRID_X, _MAX_GRID_YZ = 2 ** 31 - 1, 65535  # CUDA's limits on the grid

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_NULL = np.uint64(0)  # a NULL device pointer, passed by value (8 zero bytes)


# ---------------------------------------------------------------------------------------------
# CuPy, the GPU and the compiled modules
# ---------------------------------------------------------------------------------------------
def _cupy():
    """The cupy module, or RuntimeError saying why the kernels cannot run here."""
    try:
        # through importlib: CuPy is optional, and type checkers should not look for it
        cupy = importlib.import_module("cupy")
    except ImportError as error:
        raise RuntimeError("minitorch's CUDA kernels need CuPy, which is not installed "
                           "(pip install 'minitorch-edu[cuda]')") from error
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:  # CUDARuntimeError: no driver, or no device it can see
        raise RuntimeError(f"minitorch's CUDA kernels need a CUDA GPU; CuPy found none "
                           f"({error})") from error
    if count == 0:
        raise RuntimeError("minitorch's CUDA kernels need a CUDA GPU; CuPy found none")
    return cupy


def is_available():
    """True where CuPy is installed and sees a GPU, so that the kernels can run."""
    try:
        _cupy()
    except RuntimeError:
        return False
    return True


def kernel_source(filename, cuda_dir=None):
    """The text of <cuda_dir>/<filename> (default: CUDA_DIR) with common.cuh pasted in place of
    its #include."""
    cuda_dir = CUDA_DIR if cuda_dir is None else cuda_dir
    path = os.path.join(cuda_dir, filename)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} not found: the CUDA kernels are compiled from the source "
                           "tree's csrc/cuda/, or the copy an installed wheel carries")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    with open(os.path.join(cuda_dir, _COMMON_HEADER), encoding="utf-8") as f:
        header = f.read()
    return source.replace(f'#include "{_COMMON_HEADER}"', header, 1)


@functools.lru_cache(maxsize=None)
def _module(filename):
    """The cupy.RawModule of one .cu file (compiled by NVRTC at its first kernel's use)."""
    return _cupy().RawModule(code=kernel_source(filename), options=NVRTC_OPTIONS)


def _kernel(filename, name, dtype):
    """The kernel mt_<name>_<f32|f64> of csrc/cuda/<filename>."""
    return _module(filename).get_function(f"mt_{name}_{_SUFFIX[np.dtype(dtype)]}")


# The kernels of each file: the C API's names (csrc/minitorch.h), and layer_norm.cu's two for
# dweight / dbias, which the C backward computes in the same call.
ENTRY_POINTS = {
    "gemm.cu": ("gemm",),
    "softmax.cu": ("softmax_forward", "softmax_backward", "log_softmax_forward",
                   "log_softmax_backward"),
    "cross_entropy.cu": ("cross_entropy_forward", "cross_entropy_backward"),
    "layer_norm.cu": ("layer_norm_forward", "layer_norm_backward", "layer_norm_param_partials",
                      "layer_norm_param_grads"),
}


def compile_all():
    """Compiles every kernel for the current GPU now rather than at its first use; returns
    their names (mt_<name>_f32 and _f64 for each entry of ENTRY_POINTS)."""
    _cupy()  # RuntimeError without CuPy or a GPU, even where modules are cached
    compiled = []
    for filename, names in ENTRY_POINTS.items():
        for name in names:
            for dtype in _SUFFIX:
                _kernel(filename, name, dtype)
                compiled.append(f"mt_{name}_{_SUFFIX[dtype]}")
    return compiled


def _row_grid(rows):
    return (min(rows, _MAX_GRID_X),)


# ---------------------------------------------------------------------------------------------
# Argument checks (checks.py's, for CuPy arrays)
# ---------------------------------------------------------------------------------------------
def _check_float(name, x, dtype=None):
    cupy = _cupy()
    if not isinstance(x, cupy.ndarray):
        raise TypeError(f"{name} must be a cupy.ndarray, got {type(x).__name__}")
    if x.dtype not in _SUFFIX:
        raise TypeError(f"{name} must be float32 or float64, got {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name} must have the same dtype as the other inputs ({dtype}), "
                        f"got {x.dtype}")
    _check_device(name, x)
    return x


def _check_device(name, x):
    """x must live on the current device: a kernel reads only the memory of the GPU it runs
    on."""
    current = _cupy().cuda.Device().id
    if x.device.id != current:
        raise ValueError(f"{name} is on cuda:{x.device.id} but the current device is "
                         f"cuda:{current}")


def _check_int(name, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not -(2 ** 63) <= int(value) < 2 ** 63:
        raise ValueError(f"{name} must fit in int64, got {value}")
    return int(value)


def _check_target(logits, target, ignore_index):
    """target: int64 (N,) on the GPU for logits (N, C), each in [0, C) or ignore_index (the
    range is checked on the GPU: one boolean comes back)."""
    cupy = _cupy()
    if not isinstance(target, cupy.ndarray):
        raise TypeError(f"target must be a cupy.ndarray, got {type(target).__name__}")
    if target.dtype != np.int64:
        raise TypeError(f"target must be int64, got {target.dtype}")
    _check_device("target", target)
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D (N, C), got shape {logits.shape}")
    if target.shape != (logits.shape[0],):
        raise ValueError(f"target must have shape ({logits.shape[0]},), got {target.shape}")
    n_classes = logits.shape[1]
    bad = (target != ignore_index) & ((target < 0) | (target >= n_classes))
    if bool(bad.any()):
        value = int(target[int(bad.argmax())])
        raise IndexError(f"target value {value} is out of range [0, {n_classes}) "
                         f"and is not ignore_index ({ignore_index})")
    return cupy.ascontiguousarray(target)


def _check_rows_input(x, eps=None):
    """x: a float array of at least 1 dim, normalized over its last dim; eps >= 0."""
    _check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    if eps is not None and not float(eps) >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")


def _row_pair(name_y, y, name_dy, dy):
    _check_float(name_y, y)
    _check_float(name_dy, dy, y.dtype)
    check_same_shape(name_dy, dy, y.shape)
    if y.ndim < 1:
        raise ValueError(f"{name_y} must have at least 1 dim, got shape {y.shape}")
    cupy = _cupy()
    return cupy.ascontiguousarray(y), cupy.ascontiguousarray(dy)


# ---------------------------------------------------------------------------------------------
# Matrix multiply
# ---------------------------------------------------------------------------------------------
def _matrix_layout(x, batch_shape):
    """(array, trans, ld, batch stride) so that the GEMM reads x's last two dims for every
    batch index of batch_shape: a C-contiguous matrix or the transpose of one as it is (a
    transposed one by the trans flag), one matrix for every batch by stride 0; anything else
    becomes a contiguous copy (broadcast batch dims materialized)."""
    cupy = _cupy()
    rows, cols = x.shape[-2:]
    lead = x.shape[:-2]
    if math.prod(lead) == 1:
        x, stride = x.reshape(rows, cols), 0
    else:
        if (1,) * (len(batch_shape) - len(lead)) + lead != tuple(batch_shape):
            x = cupy.broadcast_to(x, tuple(batch_shape) + (rows, cols))
        stride = rows * cols
    if x.flags.c_contiguous:
        return x, 0, max(cols, 1), stride
    swapped = x.swapaxes(-1, -2)
    if swapped.flags.c_contiguous:  # x is the transpose of a contiguous matrix, e.g. w.T
        return swapped, 1, max(rows, 1), stride
    return cupy.ascontiguousarray(x), 0, max(cols, 1), stride


def _run_gemm(trans_a, trans_b, m, n, k, alpha, a, lda, stride_a, b, ldb, stride_b, beta, c,
              ldc, stride_c, batch):
    """One launch of mt_gemm_* (gemm.cu); a, b, c are CuPy arrays whose first element is the
    first element of the first matrix."""
    scalar = c.dtype.type
    grid = (min(-(-m // GEMM_TILE), _MAX_GRID_X), min(-(-n // GEMM_TILE), _MAX_GRID_YZ),
            min(batch, _MAX_GRID_YZ))
    _kernel("gemm.cu", "gemm", c.dtype)(
        grid, (GEMM_THREADS,),
        (np.int32(trans_a), np.int32(trans_b), np.int64(m), np.int64(n), np.int64(k),
         scalar(alpha), a, np.int64(lda), np.int64(stride_a), b, np.int64(ldb),
         np.int64(stride_b), scalar(beta), c, np.int64(ldc), np.int64(stride_c),
         np.int64(batch)))


def matmul(a, b):
    """np.matmul for ndim >= 2 (batch dims broadcast), through the tiled GEMM: transposed
    views are passed as a transpose flag, an operand shared by every batch as stride 0."""
    cupy = _cupy()
    _check_float("a", a)
    _check_float("b", b, a.dtype)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul needs a and b with ndim >= 2, got a.ndim={a.ndim}, "
                         f"b.ndim={b.ndim}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: a.shape[-1] ({a.shape[-1]}) must equal b.shape[-2] "
                         f"({b.shape[-2]})")
    try:
        batch_shape = broadcast_shape(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dims of a {a.shape[:-2]} and b {b.shape[:-2]} do not "
                         "broadcast") from None
    m, k = a.shape[-2:]
    n = b.shape[-1]
    out = cupy.empty(batch_shape + (m, n), dtype=a.dtype)
    if out.size == 0:
        return out
    if k == 0:
        out.fill(0)
        return out
    a, trans_a, lda, stride_a = _matrix_layout(a, batch_shape)
    b, trans_b, ldb, stride_b = _matrix_layout(b, batch_shape)
    _run_gemm(trans_a, trans_b, m, n, k, 1.0, a, lda, stride_a, b, ldb, stride_b, 0.0, out, n,
              m * n, math.prod(batch_shape))
    return out


def gemm(a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None):
    """out = alpha * op(a) @ op(b) + beta * out for 2-D arrays; a new array when out is None
    (beta is then irrelevant). `out` must be C-contiguous, of the result's shape and dtype,
    and must not overlap a or b."""
    cupy = _cupy()
    _check_float("a", a)
    _check_float("b", b, a.dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"gemm needs 2-D a and b, got a.ndim={a.ndim}, b.ndim={b.ndim}")
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    if op_a.shape[1] != op_b.shape[0]:
        raise ValueError(f"gemm: op(a) is {op_a.shape} and op(b) is {op_b.shape}; inner dims "
                         "differ")
    m, k = op_a.shape
    n = op_b.shape[1]
    if out is None:
        out = cupy.empty((m, n), dtype=a.dtype)
        beta = 0.0
    else:
        _check_float("out", out, a.dtype)
        check_same_shape("out", out, (m, n))
        if not out.flags.c_contiguous:
            raise ValueError("out must be a C-contiguous array")
        if cupy.may_share_memory(out, a) or cupy.may_share_memory(out, b):
            raise ValueError("out must not overlap a or b")
    if out.size == 0:
        return out
    if k == 0:
        out[...] = 0 if beta == 0 else beta * out
        return out
    op_a, ta, lda, _ = _matrix_layout(op_a, ())
    op_b, tb, ldb, _ = _matrix_layout(op_b, ())
    _run_gemm(ta, tb, m, n, k, float(alpha), op_a, lda, 0, op_b, ldb, 0, float(beta), out, n,
              0, 1)
    return out


# ---------------------------------------------------------------------------------------------
# Softmax family
# ---------------------------------------------------------------------------------------------
def _mask_layout(x, mask):
    """(contiguous mask, row shape, row strides, column stride) for softmax.cu: the mask is
    broadcast to x by stride 0 over the rows, never materialized at x's size."""
    cupy = _cupy()
    if not isinstance(mask, cupy.ndarray):
        raise TypeError(f"mask must be a cupy.ndarray or None, got {type(mask).__name__}")
    if mask.dtype != np.bool_ and mask.dtype != x.dtype:
        raise TypeError(f"mask must be bool or {x.dtype} (the dtype of x), got {mask.dtype}")
    _check_device("mask", mask)
    try:
        fits = broadcast_shape(mask.shape, x.shape) == x.shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to x's shape {x.shape}")
    mask = cupy.ascontiguousarray(mask)
    view = cupy.broadcast_to(mask, x.shape)
    item = mask.itemsize
    col_stride = 0 if x.shape[-1] == 1 else view.strides[-1] // item
    row_strides = cupy.asarray([s // item for s in view.strides[:-1]] or [0], dtype=np.int64)
    row_shape = cupy.asarray(x.shape[:-1] or (1,), dtype=np.int64)
    return mask, row_shape, row_strides, col_stride


def softmax_forward(x, scale=1.0, mask=None, causal=False):
    """y = softmax(x*scale + mask) over the last dim (bool mask: True = excluded; causal:
    key j > query i excluded). A row with nothing left is zeros."""
    cupy = _cupy()
    _check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    if causal and x.ndim < 2:
        raise ValueError(f"causal softmax needs x.ndim >= 2, got shape {x.shape}")
    mask_add = mask_bool = row_shape = row_strides = _NULL
    col_stride = mask_ndim = 0
    if mask is not None:
        mask, row_shape, row_strides, col_stride = _mask_layout(x, mask)
        mask_ndim = x.ndim - 1
        if mask.dtype == np.bool_:
            mask_bool = mask
        else:
            mask_add = mask
    x = cupy.ascontiguousarray(x)
    y = cupy.empty_like(x)
    if x.size == 0:
        return y
    cols = x.shape[-1]
    rows = x.size // cols
    causal_lq = x.shape[-2] if causal else 0
    _kernel("softmax.cu", "softmax_forward", x.dtype)(
        _row_grid(rows), (ROW_THREADS,),
        (x, y, np.int64(rows), np.int64(cols), x.dtype.type(scale), mask_add, mask_bool,
         np.int64(mask_ndim), row_shape, row_strides, np.int64(col_stride),
         np.int64(causal_lq)))
    return y


def softmax_backward(y, dy, scale=1.0):
    """dx = scale * y * (dy - sum(dy*y)) over the last dim."""
    y, dy = _row_pair("y", y, "dy", dy)
    dx = _cupy().empty_like(y)
    if y.size:
        cols = y.shape[-1]
        rows = y.size // cols
        _kernel("softmax.cu", "softmax_backward", y.dtype)(
            _row_grid(rows), (ROW_THREADS,),
            (y, dy, dx, np.int64(rows), np.int64(cols), y.dtype.type(scale)))
    return dx


def log_softmax_forward(x):
    """y = x - logsumexp(x) over the last dim."""
    cupy = _cupy()
    _check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    x = cupy.ascontiguousarray(x)
    y = cupy.empty_like(x)
    if x.size:
        cols = x.shape[-1]
        rows = x.size // cols
        _kernel("softmax.cu", "log_softmax_forward", x.dtype)(
            _row_grid(rows), (ROW_THREADS,), (x, y, np.int64(rows), np.int64(cols)))
    return y


def log_softmax_backward(y, dy):
    """dx = dy - exp(y) * sum(dy) over the last dim."""
    y, dy = _row_pair("y", y, "dy", dy)
    dx = _cupy().empty_like(y)
    if y.size:
        cols = y.shape[-1]
        rows = y.size // cols
        _kernel("softmax.cu", "log_softmax_backward", y.dtype)(
            _row_grid(rows), (ROW_THREADS,), (y, dy, dx, np.int64(rows), np.int64(cols)))
    return dx


# ---------------------------------------------------------------------------------------------
# Cross-entropy
# ---------------------------------------------------------------------------------------------
def _kept_count(target, ignore_index):
    return int(_cupy().count_nonzero(target != ignore_index))


def cross_entropy_forward(logits, target, ignore_index=-100, label_smoothing=0.0,
                          reduction="mean"):
    """(loss, lse) with PyTorch semantics; "mean" over zero non-ignored rows is 0.0.
    target must be int64 (other dtypes raise TypeError)."""
    cupy = _cupy()
    _check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    ignore_index = _check_int("ignore_index", ignore_index)
    target = _check_target(logits, target, ignore_index)
    logits = cupy.ascontiguousarray(logits)
    n, c = logits.shape
    dtype = logits.dtype
    per_row = cupy.zeros(n, dtype=dtype)
    lse = cupy.full((n, 2), -np.inf, dtype=np.float64)  # (max, log of the shifted sum)
    if n and c:
        _kernel("cross_entropy.cu", "cross_entropy_forward", dtype)(
            _row_grid(n), (ROW_THREADS,),
            (logits, target, np.int64(n), np.int64(c), np.int64(ignore_index),
             np.float64(label_smoothing), per_row, lse))
    if reduction == "none":
        return per_row, lse
    total = per_row.sum(dtype=np.float64)
    if reduction == "mean":
        count = _kept_count(target, ignore_index)
        total = total / count if count else 0.0
    return cupy.asarray(total, dtype=dtype), lse


def cross_entropy_backward(logits, target, lse, grad, ignore_index=-100, label_smoothing=0.0,
                           reduction="mean"):
    """dlogits = g_i * (softmax(x_i) - (1-eps)*onehot(t_i) - eps/C); zero for ignored rows."""
    cupy = _cupy()
    _check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    ignore_index = _check_int("ignore_index", ignore_index)
    target = _check_target(logits, target, ignore_index)
    dtype = logits.dtype
    _check_float("lse", lse)
    check_same_shape("lse", lse, (logits.shape[0], 2))
    if not isinstance(grad, cupy.ndarray):
        grad = cupy.asarray(grad, dtype=dtype)
    _check_float("grad", grad, dtype)
    n, c = logits.shape
    if reduction == "none":
        check_same_shape("grad", grad, (n,))
        grad_stride, grad_scale = 1, 1.0
    else:
        check_same_shape("grad", grad, ())
        grad_stride, grad_scale = 0, 1.0
        if reduction == "mean":
            count = _kept_count(target, ignore_index)
            grad_scale = 1.0 / count if count else 0.0
    logits, grad = cupy.ascontiguousarray(logits), cupy.ascontiguousarray(grad)
    lse = cupy.ascontiguousarray(lse.astype(np.float64, copy=False))
    dlogits = cupy.empty_like(logits)
    if dlogits.size:
        _kernel("cross_entropy.cu", "cross_entropy_backward", dtype)(
            _row_grid(n), (ROW_THREADS,),
            (logits, target, lse, grad, np.int64(grad_stride), np.float64(grad_scale),
             np.int64(n), np.int64(c), np.int64(ignore_index), np.float64(label_smoothing),
             dlogits))
    return dlogits


# ---------------------------------------------------------------------------------------------
# Layer norm
# ---------------------------------------------------------------------------------------------
def _layer_norm_param(name, p, x):
    if p is None:
        return None
    _check_float(name, p, x.dtype)
    check_same_shape(name, p, (x.shape[-1],))
    return _cupy().ascontiguousarray(p)


def _or_null(arr):
    return _NULL if arr is None else arr


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """(y, mean, rstd): y = (x - mean) * rstd * weight + bias over the last dim."""
    cupy = _cupy()
    _check_rows_input(x, eps)
    weight = _layer_norm_param("weight", weight, x)
    bias = _layer_norm_param("bias", bias, x)
    x = cupy.ascontiguousarray(x)
    y = cupy.empty_like(x)
    mean = cupy.zeros(x.shape[:-1], dtype=x.dtype)
    rstd = cupy.zeros(x.shape[:-1], dtype=x.dtype)
    if x.size == 0:
        y.fill(0)
        return y, mean, rstd
    cols = x.shape[-1]
    rows = x.size // cols
    _kernel("layer_norm.cu", "layer_norm_forward", x.dtype)(
        _row_grid(rows), (ROW_THREADS,),
        (x, _or_null(weight), _or_null(bias), y, mean, rstd, np.int64(rows), np.int64(cols),
         np.float64(eps)))
    return y, mean, rstd


def layer_norm_backward(dy, x, weight, mean, rstd):
    """(dx, dweight, dbias); dweight and dbias are None when weight is None."""
    cupy = _cupy()
    _check_rows_input(x)
    _check_float("dy", dy, x.dtype)
    check_same_shape("dy", dy, x.shape)
    for name, s in (("mean", mean), ("rstd", rstd)):
        _check_float(name, s, x.dtype)
        check_same_shape(name, s, x.shape[:-1])
    weight = _layer_norm_param("weight", weight, x)
    x, dy = cupy.ascontiguousarray(x), cupy.ascontiguousarray(dy)
    mean, rstd = cupy.ascontiguousarray(mean), cupy.ascontiguousarray(rstd)
    dx = cupy.empty_like(x)
    cols = x.shape[-1]
    dweight = dbias = None
    if weight is not None:
        dweight = cupy.zeros(cols, dtype=x.dtype)
        dbias = cupy.zeros(cols, dtype=x.dtype)
    if x.size == 0:
        return dx, dweight, dbias
    rows = x.size // cols
    _kernel("layer_norm.cu", "layer_norm_backward", x.dtype)(
        _row_grid(rows), (ROW_THREADS,),
        (dy, x, _or_null(weight), mean, rstd, dx, np.int64(rows), np.int64(cols)))
    if weight is not None:
        # dweight, dbias: partial sums over chunks of rows, then one sum per column
        chunks = max(1, min(LN_MAX_CHUNKS, rows // LN_MIN_CHUNK_ROWS))
        rows_per_chunk = -(-rows // chunks)
        chunks = -(-rows // rows_per_chunk)
        partial_w = cupy.empty((chunks, cols), dtype=np.float64)
        partial_b = cupy.empty((chunks, cols), dtype=np.float64)
        _kernel("layer_norm.cu", "layer_norm_param_partials", x.dtype)(
            (-(-cols // LN_COLS), chunks), (LN_COLS, LN_ROWS),
            (dy, x, mean, rstd, partial_w, partial_b, np.int64(rows), np.int64(cols),
             np.int64(rows_per_chunk)))
        _kernel("layer_norm.cu", "layer_norm_param_grads", x.dtype)(
            (min(-(-cols // ROW_THREADS), _MAX_GRID_X),), (ROW_THREADS,),
            (partial_w, partial_b, np.int64(chunks), np.int64(cols), dweight, dbias))
    return dx, dweight, dbias
