"""The numpy reference backend: every kernel written as the textbook formula, in plain numpy.

This is the oracle the C (and any other) backend is tested against, so clarity beats speed:
short functions, the formula in a comment, float64 where the formula needs headroom.
Imports: numpy (and threadpoolctl for the BLAS thread count) and ``minitorch.device_arrays``
(the array module of a GPU array, for the arrays a kernel makes), never the rest of minitorch.

API (shared by every backend; arrays in, fresh arrays out, float32/float64):
  set_num_threads / get_num_threads, matmul, gemm, softmax_forward / softmax_backward,
  log_softmax_forward / log_softmax_backward, cross_entropy_forward / cross_entropy_backward,
  layer_norm_forward / layer_norm_backward, rms_norm_forward / rms_norm_backward,
  batch_norm_forward / batch_norm_backward (per channel, with the batch's statistics),
  relu / sigmoid / silu / gelu / clamp _forward and _backward, sqrt_forward, rsqrt_forward,
  erf_forward, exp_forward, log_forward, softplus_forward, pow_int_forward, pow_scalar_forward,
  abs_forward / abs_backward (elementwise), where (a or b by a condition), sum_rows and
  amax_rows (reductions over the last dim), sum_cols (sums down the columns of a matrix), copy
  and concatenate (numpy's, any dtype),
  index_add_rows (rows added at indices), cumsum_rows (running sums along the last dim), arith
  (add / sub / mul / div of the layouts the C kernel takes), one time step of the recurrent
  cells: rnn_cell / lstm_cell / gru_cell _forward and _backward, conv2d_forward /
  conv2d_backward_input / conv2d_backward_weight (2-d convolution, im2col as a strided view),
  max_pool2d_forward / max_pool2d_backward (max pooling with PyTorch's indices),
  attention_step (softmax(q kᵀ scale + mask) v in one call, for incremental decoding),
  gather_forward / gather_backward / scatter_add (elements along a dim at indices, and their
  adjoint), keep_triangle (tril / triu), and
  adam_step (one Adam / AdamW update of a list of parameters, in place: the only kernel that
  writes into its arguments).
Conventions: a softmax row with every entry excluded is all zeros (never NaN), and a
log-softmax row of all -inf stays -inf (PyTorch: NaN); a "mean"
cross-entropy over zero non-ignored rows is 0.0 (PyTorch gives NaN; we never return a silent
NaN). Otherwise non-finite input gives PyTorch's results: a NaN or +inf in a softmax,
log-softmax or cross-entropy row makes it NaN, and so does a NaN or inf in a layer-norm row
(its mean and rstd too). Targets must be int64; other dtypes raise TypeError.
Log-sum-exp keeps its two parts apart, m = max x and log sum exp(x - m): m + log(...) loses the
log where |m| >> 1 (log-softmax of [1e17, 1e17] is -log 2, not 0). cross_entropy_forward
returns them for backward as lse, (N, 2) float64 for both dtypes: rounded to float32 near
|x| ~ 1e4 they would be off by ~5e-4, and the gradient exp(x - lse) by as much.
"""
import math

import numpy as np

from ..device_arrays import array_module, max_or_neg_inf, on_device_of, to_host
from .checks import (ARITH_OPS, FLOAT_DTYPES, GELU_APPROXIMATIONS, REDUCTIONS,  # noqa: F401
                     _is_array,
                     check_arith, check_attention, check_attention_backward,
                     check_attention_step, check_cell_arrays, check_clamp_bounds,
                     check_conv2d,
                     check_conv2d_backward_input, check_conv2d_backward_weight, check_dropout_keep,
                     check_float,
                     check_gelu_approximate, check_gemm_operands, check_integer_exponent,
                     check_label_smoothing, check_matmul_operands, check_max_pool2d,
                     check_max_pool2d_backward, check_nonlinearity, check_reduction,
                     check_row_indices, check_same_shape, check_target,
                     check_gather, check_gather_backward, check_gather_index,
                     check_keep_triangle, check_scatter_add)
from .checks import check_bias_relu, check_bias_relu_backward, check_matmul_bias, check_matmul_into
from .checks import check_real_exponent, check_where_operands
from .checks import check_batch_norm, check_batch_norm_backward

_num_threads = None  # None: never set, numpy's BLAS keeps its own count


# ---------------------------------------------------------------------------------------------
# Threads: the count numpy's BLAS (OpenBLAS, MKL, ...) uses, through threadpoolctl; until
# set_num_threads is called, BLAS keeps what it chose at load (it follows OMP_NUM_THREADS).
# ---------------------------------------------------------------------------------------------
def set_num_threads(n):
    global _num_threads
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"set_num_threads: n must be an int, got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_num_threads: n must be >= 1, got {n}")
    _num_threads = int(n)
    try:
        import threadpoolctl
    except ImportError:  # a dependency, but a source checkout may lack it: BLAS keeps its count
        return
    threadpoolctl.threadpool_limits(limits=_num_threads, user_api="blas")


def get_num_threads():
    if _num_threads is not None:
        return _num_threads
    try:
        import threadpoolctl
    except ImportError:
        return 1
    pools = threadpoolctl.threadpool_info()
    return max([p["num_threads"] for p in pools if p["user_api"] == "blas"], default=1)


# ---------------------------------------------------------------------------------------------
# Matrix multiply
# ---------------------------------------------------------------------------------------------
def matmul(a, b):
    """C[..., i, j] = sum_k A[..., i, k] B[..., k, j], batch dims broadcast like np.matmul."""
    xp = array_module(a)
    check_matmul_operands(a, b)
    return xp.ascontiguousarray(np.matmul(a, b))


def matmul_bias(a, b, bias, relu=False):
    """a @ b + bias (bias added to every row, the sum rounded to the dtype), then
    max(., 0) if ``relu`` (NaN stays NaN), for a (m, k), b (k, n) and bias (n,) of one float
    dtype: a Linear layer's forward."""
    check_matmul_bias(a, b, bias)
    out = np.add(matmul(a, b), bias)
    if relu:
        out[out < 0] = 0
    return out


def gemm(a, b, trans_a=False, trans_b=False, alpha=1.0, beta=0.0, out=None):
    """C = alpha * op(A) @ op(B) + beta * C for 2-D arrays (op = identity or transpose)."""
    op_a, op_b = check_gemm_operands(a, b, trans_a, trans_b)
    product = alpha * (op_a.astype(np.float64) @ op_b.astype(np.float64))
    if out is None:
        return product.astype(a.dtype)
    check_float("out", out, a.dtype)
    check_same_shape("out", out, product.shape)
    if beta != 0:
        product = product + beta * out
    out[...] = product
    return out


# ---------------------------------------------------------------------------------------------
# Softmax family
# ---------------------------------------------------------------------------------------------
def _excluded_entries(x, mask, causal):
    """Boolean array (broadcast to x) of entries that take no part: bool mask True, causal j > i."""
    xp = array_module(x)
    excluded = xp.zeros(x.shape, dtype=bool)
    if mask is not None and mask.dtype == np.bool_:
        excluded |= np.broadcast_to(mask, x.shape)
    if causal:
        lq, lk = x.shape[-2], x.shape[-1]
        excluded |= np.triu(xp.ones((lq, lk), dtype=bool), k=1)  # key j > query i
    return excluded


def _check_mask(x, mask):
    if mask is None:
        return
    if not _is_array(mask):
        raise TypeError(f"mask must be a numpy.ndarray or None, got {type(mask).__name__}")
    if mask.dtype != np.bool_ and mask.dtype != x.dtype:
        raise TypeError(f"mask must be bool or {x.dtype} (the dtype of x), got {mask.dtype}")
    try:
        if np.broadcast_shapes(mask.shape, x.shape) != x.shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"mask of shape {mask.shape} does not broadcast to x's shape {x.shape}") from None


def softmax_forward(x, scale=1.0, mask=None, causal=False):
    """y = softmax(x*scale + mask) over the last dim; excluded entries get 0.

    softmax(z)_j = exp(z_j - max z) / sum_k exp(z_k - max z); a row with nothing left is zeros.
    """
    check_float("x", x)
    _check_mask(x, mask)
    if causal and x.ndim < 2:
        raise ValueError(f"causal softmax needs x.ndim >= 2, got shape {x.shape}")
    dtype = x.dtype
    z = x.astype(np.float64) * float(scale)
    if mask is not None and mask.dtype != np.bool_:
        z = z + mask.astype(np.float64)
    z = np.where(_excluded_entries(x, mask, causal), -np.inf, z)
    row_max = max_or_neg_inf(z, -1)  # NaN if the row has one
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # fully excluded row: no -inf - -inf
    with np.errstate(invalid="ignore"):  # +inf - +inf: a row with +inf is NaN, as in PyTorch
        e = np.exp(z - row_max)
        total = np.sum(e, axis=-1, keepdims=True)
        y = e / np.where(total == 0, 1.0, total)  # 0 / 1 = 0 for a fully excluded row
    return y.astype(dtype)


def softmax_backward(y, dy, scale=1.0):
    """dx = scale * y * (dy - sum_j dy_j y_j)."""
    check_float("y", y)
    check_float("dy", dy, y.dtype)
    check_same_shape("dy", dy, y.shape)
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    dot = np.sum(dy64 * y64, axis=-1, keepdims=True)
    return (float(scale) * y64 * (dy64 - dot)).astype(y.dtype)


def _logsumexp(x64):
    """(m, log sum_j exp(x_j - m)) over the last dim, kept dims, m = max_j x_j: their sum is
    log sum_j exp(x_j), but rounds the log away where |m| >> 1. Both -inf for an all -inf row;
    NaN where the row holds NaN or +inf."""
    m = max_or_neg_inf(x64, -1)
    m_safe = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_sum = np.log(np.sum(np.exp(x64 - m_safe), axis=-1, keepdims=True))
    return m, log_sum


def log_softmax_forward(x):
    """y = (x - m) - log sum exp(x - m), m = max x, over the last dim (an all -inf row stays
    -inf, no NaN)."""
    check_float("x", x)
    x64 = x.astype(np.float64)
    m, log_sum = _logsumexp(x64)
    with np.errstate(invalid="ignore"):
        y = np.where(np.isneginf(log_sum), -np.inf, (x64 - m) - log_sum)
    return y.astype(x.dtype)


def log_softmax_backward(y, dy):
    """dx = dy - exp(y) * sum_j dy_j."""
    check_float("y", y)
    check_float("dy", dy, y.dtype)
    check_same_shape("dy", dy, y.shape)
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    return (dy64 - np.exp(y64) * np.sum(dy64, axis=-1, keepdims=True)).astype(y.dtype)


# ---------------------------------------------------------------------------------------------
# Cross-entropy
# ---------------------------------------------------------------------------------------------
def cross_entropy_forward(logits, target, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    """Per row, with lse_i = m_i + s_i (m_i = max_c x_ic, s_i = log sum_c exp(x_ic - m_i)):
    loss_i = (1-eps)((m_i - x_i[t_i]) + s_i) + eps(mean_c (m_i - x_ic) + s_i); 0 if t_i ignored.

    Returns (loss, lse): loss is 0-d for "mean"/"sum" ("mean" divides by the non-ignored count,
    and is 0.0 when every row is ignored), (N,) for "none"; lse (N, 2) float64, the columns
    m_i and s_i, kept for backward.
    """
    xp = array_module(logits)
    check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    check_target(logits, target, ignore_index)
    eps = float(label_smoothing)
    x64 = logits.astype(np.float64)
    m, log_sum = _logsumexp(x64)
    kept = target != ignore_index
    safe_target = np.where(kept, target, 0)
    picked = x64[xp.arange(x64.shape[0]), safe_target] if x64.shape[0] else xp.zeros(0)
    with np.errstate(invalid="ignore"):  # NaN rows stay NaN, as in PyTorch
        per_row = (1.0 - eps) * ((m[:, 0] - picked) + log_sum[:, 0])
        if eps != 0.0:  # distances below m: the mean of x itself overflows near 3e38
            per_row = per_row + eps * ((m - x64).mean(axis=-1) + log_sum[:, 0])
    per_row = np.where(kept, per_row, 0.0)
    lse = np.concatenate([m, log_sum], axis=1)
    dtype = logits.dtype
    if reduction == "none":
        return per_row.astype(dtype), lse
    total = per_row.sum()
    if reduction == "mean":
        count = int(kept.sum())
        total = total / count if count else 0.0
    return xp.asarray(total, dtype=dtype), lse


def _cross_entropy_row_grad(grad, target, ignore_index, reduction, dtype):
    """dLoss/dloss_i for every row: grad/count (mean), grad (sum), grad_i (none)."""
    xp = array_module(target)
    if not _is_array(grad):
        grad = xp.asarray(grad, dtype=dtype)
    check_float("grad", grad, dtype)
    n = target.shape[0]
    if reduction == "none":
        check_same_shape("grad", grad, (n,))
        return grad.astype(np.float64)
    check_same_shape("grad", grad, ())
    g = float(grad)
    if reduction == "mean":
        count = int((target != ignore_index).sum())
        g = g / count if count else 0.0
    return xp.full(n, g)


def cross_entropy_backward(logits, target, lse, grad, ignore_index=-100, label_smoothing=0.0,
                           reduction="mean"):
    """dlogits_ic = g_i (softmax(x_i)_c - (1-eps)[c == t_i] - eps/C); 0 for ignored rows."""
    xp = array_module(logits)
    check_float("logits", logits)
    check_reduction(reduction)
    check_label_smoothing(label_smoothing)
    check_target(logits, target, ignore_index)
    check_float("lse", lse)
    check_same_shape("lse", lse, (logits.shape[0], 2))
    g = _cross_entropy_row_grad(grad, target, ignore_index, reduction, logits.dtype)
    eps = float(label_smoothing)
    n, c = logits.shape
    x64 = logits.astype(np.float64)
    lse = lse.astype(np.float64)
    with np.errstate(invalid="ignore"):
        probs = np.exp((x64 - lse[:, :1]) - lse[:, 1:])
    onehot = xp.zeros((n, c))
    kept = target != ignore_index
    onehot[xp.arange(n)[kept], target[kept]] = 1.0
    d = g[:, None] * (probs - (1.0 - eps) * onehot - eps / c)
    d[~kept] = 0.0
    return d.astype(logits.dtype)


# ---------------------------------------------------------------------------------------------
# Layer norm
# ---------------------------------------------------------------------------------------------
def _check_layer_norm_params(x, weight, bias):
    d = x.shape[-1] if x.ndim else None
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            check_float(name, p, x.dtype)
            check_same_shape(name, p, (d,))


def layer_norm_forward(x, weight, bias, eps=1e-5):
    """y = (x - mean) / sqrt(var + eps) * w + b over the last dim (biased variance).

    Returns (y, mean, rstd) with mean, rstd of shape x.shape[:-1]; statistics in float64.
    """
    xp = array_module(x)
    check_float("x", x)
    _check_layer_norm_params(x, weight, bias)
    x64 = x.astype(np.float64)
    if x.shape[-1] == 0:
        empty = xp.zeros(x.shape[:-1], dtype=x.dtype)
        return np.zeros_like(x), empty, empty.copy()
    mean = x64.mean(axis=-1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)  # two-pass: no E[x^2]-E[x]^2
    rstd = 1.0 / np.sqrt(var + eps)
    mean = np.where(np.isnan(rstd), np.nan, mean)  # a row with NaN or inf: NaN, as PyTorch's
    y = (x64 - mean) * rstd
    if weight is not None:
        y = y * weight.astype(np.float64)
    if bias is not None:
        y = y + bias.astype(np.float64)
    return y.astype(x.dtype), mean[..., 0].astype(x.dtype), rstd[..., 0].astype(x.dtype)


def layer_norm_backward(dy, x, weight, mean, rstd):
    """xhat = (x - mean) rstd, g = dy w:  dx = rstd (g - mean(g) - xhat mean(g xhat)),
    dw = sum over rows of dy xhat, db = sum over rows of dy. Returns (dx, dw, db)."""
    check_float("x", x)
    check_float("dy", dy, x.dtype)
    check_same_shape("dy", dy, x.shape)
    _check_layer_norm_params(x, weight, None)
    for name, s in (("mean", mean), ("rstd", rstd)):
        check_float(name, s, x.dtype)
        check_same_shape(name, s, x.shape[:-1])
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    xhat = (x64 - mean.astype(np.float64)[..., None]) * rstd.astype(np.float64)[..., None]
    g = dy64 * weight.astype(np.float64) if weight is not None else dy64
    if x.shape[-1] == 0:
        dx = np.zeros_like(x64)
    else:
        dx = rstd.astype(np.float64)[..., None] * (
            g - g.mean(axis=-1, keepdims=True) - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    if weight is None:
        return dx.astype(x.dtype), None, None
    rows = (-1, x.shape[-1])
    dweight = (dy64 * xhat).reshape(rows).sum(axis=0)
    dbias = dy64.reshape(rows).sum(axis=0)
    return dx.astype(x.dtype), dweight.astype(x.dtype), dbias.astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# RMS norm
# ---------------------------------------------------------------------------------------------
def rms_norm_forward(x, weight, eps):
    """y = x * rstd * w over the last dim, rstd = 1 / sqrt(mean(x^2) + eps). Returns (y, rstd)
    with rstd of shape x.shape[:-1]."""
    xp = array_module(x)
    check_float("x", x)
    _check_layer_norm_params(x, weight, None)
    x64 = x.astype(np.float64)
    if x.shape[-1] == 0:
        return np.zeros_like(x), xp.zeros(x.shape[:-1], dtype=x.dtype)
    rstd = 1.0 / np.sqrt((x64 * x64).mean(axis=-1, keepdims=True) + eps)
    y = x64 * rstd
    if weight is not None:
        y = y * weight.astype(np.float64)
    return y.astype(x.dtype), rstd[..., 0].astype(x.dtype)


def batch_norm_forward(x, weight, bias, eps=1e-5):
    """Batch norm with the batch's statistics: each channel (dim 1) of x (N, C, ...) over its
    N·L values (L: the product of the later dims), y = (x - mean) / sqrt(var + eps) * w + b.

    Returns (y, mean, var, rstd), the last three (C,), var biased; statistics in float64."""
    n, channels, inner = check_batch_norm(x, weight, bias, eps)
    x64 = x.astype(np.float64).reshape(n, channels, inner)
    mean = x64.mean(axis=(0, 2))
    var = ((x64 - mean[:, None]) ** 2).mean(axis=(0, 2))  # two-pass: no E[x^2]-E[x]^2
    rstd = 1.0 / np.sqrt(var + eps)
    scale = rstd if weight is None else rstd * weight.astype(np.float64)
    y = (x64 - mean[:, None]) * scale[:, None]
    if bias is not None:
        y = y + bias.astype(np.float64)[:, None]
    return (y.reshape(x.shape).astype(x.dtype), mean.astype(x.dtype), var.astype(x.dtype),
            rstd.astype(x.dtype))


def batch_norm_backward(dy, x, weight, mean, rstd):
    """xhat = (x - mean) rstd per channel: dbias = sum dy, dweight = sum dy xhat,
    dx = rstd w (dy - dbias / (N L) - xhat dweight / (N L)). Returns (dx, dweight, dbias)."""
    n, channels, inner = check_batch_norm_backward(dy, x, weight, mean, rstd)
    shape = (n, channels, inner)
    x64, dy64 = x.astype(np.float64).reshape(shape), dy.astype(np.float64).reshape(shape)
    rstd64 = rstd.astype(np.float64)[:, None]
    xhat = (x64 - mean.astype(np.float64)[:, None]) * rstd64
    dbias, dweight = dy64.sum(axis=(0, 2)), (dy64 * xhat).sum(axis=(0, 2))
    scale = rstd64 if weight is None else rstd64 * weight.astype(np.float64)[:, None]
    count = n * inner
    dx = scale * (dy64 - dbias[:, None] / count - xhat * (dweight[:, None] / count))
    return dx.reshape(x.shape).astype(x.dtype), dweight.astype(x.dtype), dbias.astype(x.dtype)


def rms_norm_backward(dy, x, weight, rstd):
    """xhat = x rstd, g = dy w:  dx = rstd (g - xhat mean(g xhat)),  dw = sum over rows of
    dy xhat. Returns (dx, dw), dw None when weight is None."""
    check_float("x", x)
    check_float("dy", dy, x.dtype)
    check_same_shape("dy", dy, x.shape)
    _check_layer_norm_params(x, weight, None)
    check_float("rstd", rstd, x.dtype)
    check_same_shape("rstd", rstd, x.shape[:-1])
    x64, dy64 = x.astype(np.float64), dy.astype(np.float64)
    r = rstd.astype(np.float64)[..., None]
    xhat = x64 * r
    g = dy64 * weight.astype(np.float64) if weight is not None else dy64
    if x.shape[-1] == 0:
        dx = np.zeros_like(x64)
    else:
        dx = r * (g - xhat * (g * xhat).mean(axis=-1, keepdims=True))
    if weight is None:
        return dx.astype(x.dtype), None
    dweight = (dy64 * xhat).reshape(-1, x.shape[-1]).sum(axis=0)
    return dx.astype(x.dtype), dweight.astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# Elementwise activations and clamp (PyTorch's formulas, in float64)
# ---------------------------------------------------------------------------------------------
_SQRT_2_PI = np.sqrt(2.0 / np.pi)
_GELU_KAPPA = 0.044715


def _check_pair(name_a, a, name_b, b):
    """b of a's float dtype and shape."""
    check_float(name_a, a)
    check_float(name_b, b, a.dtype)
    check_same_shape(name_b, b, a.shape)


def relu_forward(x):
    """y = max(x, 0); NaN stays NaN."""
    check_float("x", x)
    return np.where(x < 0, 0, x).astype(x.dtype)


def relu_backward(dy, y):
    """dx = 0 where y <= 0, else dy (y: relu's output; where it is NaN, dy passes, as in
    PyTorch)."""
    _check_pair("dy", dy, "y", y)
    return np.where(y <= 0, 0, dy).astype(dy.dtype)


def _sigmoid64(x):
    with np.errstate(over="ignore"):  # exp(-x) = inf for x << 0: the sigmoid is then 0
        return 1.0 / (1.0 + np.exp(-x.astype(np.float64)))


def sigmoid_forward(x):
    """y = 1 / (1 + exp(-x))."""
    check_float("x", x)
    return _sigmoid64(x).astype(x.dtype)


def sigmoid_backward(dy, y):
    """dx = dy * y * (1 - y) (y: sigmoid's output)."""
    _check_pair("dy", dy, "y", y)
    y64 = y.astype(np.float64)
    return (dy * y64 * (1.0 - y64)).astype(dy.dtype)


def silu_forward(x):
    """y = x * sigmoid(x) (NaN at -inf: -inf * 0)."""
    check_float("x", x)
    with np.errstate(invalid="ignore"):
        return (x * _sigmoid64(x)).astype(x.dtype)


def silu_backward(dy, x):
    """dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x)."""
    _check_pair("dy", dy, "x", x)
    s = _sigmoid64(x)
    with np.errstate(invalid="ignore"):  # NaN at +-inf: inf * 0
        return (dy * s * (1.0 + x * (1.0 - s))).astype(dy.dtype)


def _per_element(fn, x):
    """float64 ``fn`` (a ``math`` function) of each element of x; a GPU array's values make a
    round trip through the host (math runs there)."""
    values = np.vectorize(fn, otypes=[np.float64])(to_host(x))
    return on_device_of(values, x)


def _normal_cdf64(x):
    """P(x) = erfc(-x / sqrt 2) / 2 (no cancellation where P is tiny), math.erfc per element:
    numpy has no erf."""
    return 0.5 * _per_element(math.erfc, -x.astype(np.float64) / np.sqrt(2.0))


def gelu_forward(x, approximate="none"):
    """y = x * P(x), P the normal CDF; approximate="tanh": x / 2 * (1 + tanh(u)),
    u = sqrt(2/pi) * (x + 0.044715 x^3)."""
    check_float("x", x)
    check_gelu_approximate(approximate)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # -inf * 0 = NaN at x = -inf
        y = _gelu64(x64, approximate)
    return y.astype(x.dtype)


def _gelu64(x64, approximate):
    if approximate == "tanh":
        return 0.5 * x64 * (1.0 + np.tanh(_SQRT_2_PI * (x64 + _GELU_KAPPA * x64 ** 3)))
    return x64 * _normal_cdf64(x64)


def gelu_backward(dy, x, approximate="none"):
    """dx = dy * (P(x) + x * p(x)), p(x) = exp(-x^2 / 2) / sqrt(2 pi); approximate="tanh":
    dx = dy * ((1 + tanh u) / 2 + x / 2 * (1 - tanh^2 u) * du/dx)."""
    _check_pair("dy", dy, "x", x)
    check_gelu_approximate(approximate)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 = NaN at x = +-inf
        return (dy * _gelu_slope64(x, approximate)).astype(dy.dtype)


def _gelu_slope64(x, approximate):
    x64 = x.astype(np.float64)
    if approximate == "tanh":
        th = np.tanh(_SQRT_2_PI * (x64 + _GELU_KAPPA * x64 ** 3))
        # x^2 in x's dtype, as PyTorch's: where it overflows, du is inf and dx NaN (0 * inf)
        du = _SQRT_2_PI * (1.0 + 3.0 * _GELU_KAPPA * (x * x).astype(np.float64))
        return 0.5 * (1.0 + th) + 0.5 * x64 * (1.0 - th * th) * du
    return _normal_cdf64(x64) + x64 * np.exp(-0.5 * x64 * x64) / np.sqrt(2.0 * np.pi)


def erf_forward(x):
    """y = erf(x), math.erf per element: numpy has no erf."""
    check_float("x", x)
    return _per_element(math.erf, x).astype(x.dtype)


def exp_forward(x):
    """y = e^x."""
    check_float("x", x)
    with np.errstate(over="ignore"):  # inf above ~88.7 (float32) or ~709.8 (float64)
        return np.exp(x)


def log_forward(x):
    """y = ln x: NaN below 0, -inf at 0."""
    check_float("x", x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(x)


def softplus_forward(x, beta=1.0, threshold=20.0):
    """y = x where z = beta x > threshold, else log(1 + e^z) / beta = (max(z, 0) +
    log1p(e^-|z|)) / beta: no overflow for large z (z rounded to x's dtype first, as PyTorch)."""
    check_float("x", x)
    z = x * x.dtype.type(beta)
    smooth = np.maximum(z, 0) + np.log1p(np.exp(-np.abs(z)))
    if beta != 1.0:
        smooth /= x.dtype.type(beta)
    return np.where(z > threshold, x, smooth).astype(x.dtype, copy=False)


def sqrt_forward(x):
    """y = sqrt(x) (NaN below 0)."""
    check_float("x", x)
    with np.errstate(invalid="ignore"):
        return np.sqrt(x)


def rsqrt_forward(x):
    """y = 1 / sqrt(x)."""
    check_float("x", x)
    with np.errstate(divide="ignore", invalid="ignore"):  # inf at 0, NaN below
        return (1.0 / np.sqrt(x.astype(np.float64))).astype(x.dtype)


def pow_int_forward(x, exponent):
    """y = x ** exponent for an integer exponent in [-64, 64] (0 ** -k = inf)."""
    check_float("x", x)
    exponent = check_integer_exponent(exponent)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.power(x.astype(np.float64), float(exponent)).astype(x.dtype)


def pow_scalar_forward(x, exponent):
    """y = x ** exponent for a real exponent, rounded to x's dtype first (as PyTorch casts its
    scalar), computed in float64: NaN for x < 0 unless the exponent is an integer."""
    check_float("x", x)
    exponent = float(x.dtype.type(check_real_exponent(exponent)))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        return np.power(x.astype(np.float64), exponent).astype(x.dtype)


def abs_forward(x):
    """y = |x|."""
    check_float("x", x)
    return np.abs(x)


def abs_backward(dy, x):
    """dx = dy * sign(x), 0 where x is 0 or NaN (as PyTorch's sgn)."""
    _check_pair("dy", dy, "x", x)
    return np.where(x > 0, dy, np.where(x < 0, -dy, 0)).astype(dy.dtype)


def where(condition, a, b):
    """y = a where condition, else b; a and b of the condition's shape or 0-d (one value)."""
    check_where_operands(condition, a, b)
    return np.where(condition, a, b).astype(a.dtype, copy=False)


def _clamp_bounds(dtype, min, max):
    """The bounds as numbers of x's dtype (rounded as the kernels round them)."""
    return [np.dtype(dtype).type(bound) for bound in check_clamp_bounds(min, max)]


def clamp_forward(x, min=None, max=None):
    """y = min(max(x, min), max), the bounds rounded to x's dtype; NaN stays NaN."""
    check_float("x", x)
    lo, hi = _clamp_bounds(x.dtype, min, max)
    return np.where(x > hi, hi, np.where(x < lo, lo, x)).astype(x.dtype)


def clamp_backward(dy, x, min=None, max=None):
    """dx = dy where min <= x <= max, else 0 (NaN: 0)."""
    _check_pair("dy", dy, "x", x)
    lo, hi = _clamp_bounds(x.dtype, min, max)
    return np.where((x >= lo) & (x <= hi), dy, 0).astype(dy.dtype)


# ---------------------------------------------------------------------------------------------
# Reductions over the last dim
# ---------------------------------------------------------------------------------------------
def _check_rows(x):
    check_float("x", x)
    if x.ndim < 1:
        raise ValueError(f"x must have at least 1 dim, got shape {x.shape}")


def sum_rows(x, scale=1.0):
    """y = scale * sum_j x[..., j] (shape x.shape[:-1]), summed in float64."""
    _check_rows(x)
    return (float(scale) * np.sum(x, axis=-1, dtype=np.float64)).astype(x.dtype)


def amax_rows(x, largest=True):
    """y = max_j x[..., j] (min_j with largest=False); NaN where the row holds one."""
    _check_rows(x)
    if x.shape[-1] == 0:
        raise ValueError(f"x: cannot take the extreme of an empty last dim, shape {x.shape}")
    return (np.max if largest else np.min)(x, axis=-1)


# ---------------------------------------------------------------------------------------------
# Adding rows at indices
# ---------------------------------------------------------------------------------------------
def index_add_rows(src, rows, out_rows):
    """out = zeros((out_rows,) + src.shape[1:]); out[rows[i]] += src[i] for every i (repeated
    rows add up)."""
    xp = array_module(src)
    check_row_indices(src, rows, out_rows)
    out = xp.zeros((out_rows,) + src.shape[1:], src.dtype)
    np.add.at(out, rows, src)
    return out


def cumsum_rows(x):
    """y[..., j] = x[..., 0] + ... + x[..., j] along the last dim, summed in float64."""
    check_float("x", x)
    return np.cumsum(x.astype(np.float64), axis=-1).astype(x.dtype)


# ---------------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------------
_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
           "maximum": np.maximum, "minimum": np.minimum}


def arith(op, a, b, out=None):
    """a (op) b for op in checks.ARITH_OPS, on the layouts of checks.arith_layout (equal
    shapes, an array and one value, an array and a trailing row); into out if given."""
    xp = array_module(a)
    _, shape = check_arith(op, a, b, out)
    result = _UFUNCS[op](a, b, out=out)
    return xp.asarray(result).reshape(shape)


# ---------------------------------------------------------------------------------------------
# Recurrent cells: one time step, after the GEMMs (the caller's): xw = x W_ihᵀ + b_ih and
# hw = h W_hhᵀ + b_hh, both (rows, chunks * hidden), gates in PyTorch's order
# ---------------------------------------------------------------------------------------------
def _tanh64(x):
    return np.tanh(x.astype(np.float64))


def rnn_cell_forward(xw, hw, nonlinearity="tanh"):
    """h = tanh(xw + hw), or relu(xw + hw)."""
    check_cell_arrays(1, ("xw", xw, 1), ("hw", hw, 1))
    check_nonlinearity(nonlinearity)
    pre = xw.astype(np.float64) + hw
    h = np.tanh(pre) if nonlinearity == "tanh" else np.where(pre < 0, 0.0, pre)
    return h.astype(xw.dtype)


def rnn_cell_backward(dh, h, nonlinearity="tanh"):
    """d(pre-activation) from the output h: dh (1 - h²) for tanh, dh [h > 0] for relu."""
    check_cell_arrays(1, ("dh", dh, 1), ("h", h, 1))
    check_nonlinearity(nonlinearity)
    h64 = h.astype(np.float64)
    dpre = dh * (1.0 - h64 * h64) if nonlinearity == "tanh" else np.where(h64 > 0, dh, 0.0)
    return dpre.astype(dh.dtype)


def lstm_cell_forward(xw, hw, c_prev):
    """gates = xw + hw in chunks i, f, g, o:  i, f, o = σ(·), g = tanh(·),
    c = f c_prev + i g,  h = o tanh(c). Returns (h, c, act), act = [i f g o] (rows, 4 hidden),
    what the backward needs."""
    check_cell_arrays(4, ("xw", xw, 4), ("hw", hw, 4), ("c_prev", c_prev, 1))
    pre = xw.astype(np.float64) + hw
    i, f, g, o = np.split(pre, 4, axis=1)
    i, f, g, o = _sigmoid64(i), _sigmoid64(f), np.tanh(g), _sigmoid64(o)
    c = f * c_prev + i * g
    h = o * np.tanh(c)
    act = np.concatenate([i, f, g, o], axis=1)
    return h.astype(xw.dtype), c.astype(xw.dtype), act.astype(xw.dtype)


def lstm_cell_backward(dh, dc, c_prev, c, act):
    """With dc_all = dc + dh o (1 - tanh² c), the pre-activation gradients are
    di = dc_all g i (1 - i), df = dc_all c_prev f (1 - f), dg = dc_all i (1 - g²),
    do = dh tanh(c) o (1 - o), and dc_prev = dc_all f. Returns (dgates (rows, 4 hidden),
    dc_prev)."""
    check_cell_arrays(4, ("act", act, 4), ("dh", dh, 1), ("dc", dc, 1), ("c_prev", c_prev, 1),
                      ("c", c, 1))
    i, f, g, o = np.split(act.astype(np.float64), 4, axis=1)
    tanh_c = _tanh64(c)
    dc_all = dc + dh * o * (1.0 - tanh_c * tanh_c)
    dgates = np.concatenate([dc_all * g * i * (1.0 - i), dc_all * c_prev * f * (1.0 - f),
                             dc_all * i * (1.0 - g * g), dh * tanh_c * o * (1.0 - o)], axis=1)
    return dgates.astype(dh.dtype), (dc_all * f).astype(dh.dtype)


def gru_cell_forward(xw, hw, h_prev):
    """r = σ(xw_r + hw_r), z = σ(xw_z + hw_z), n = tanh(xw_n + r hw_n),
    h = (1 - z) n + z h_prev (PyTorch's GRU: the reset gate scales hw_n, bias b_hn included).
    Returns (h, saved), saved = [r z n hw_n] (rows, 4 hidden), what the backward needs."""
    check_cell_arrays(3, ("xw", xw, 3), ("hw", hw, 3), ("h_prev", h_prev, 1))
    xr, xz, xn = np.split(xw.astype(np.float64), 3, axis=1)
    hr, hz, hn = np.split(hw.astype(np.float64), 3, axis=1)
    r, z = _sigmoid64(xr + hr), _sigmoid64(xz + hz)
    n = np.tanh(xn + r * hn)
    h = (1.0 - z) * n + z * h_prev
    return h.astype(xw.dtype), np.concatenate([r, z, n, hn], axis=1).astype(xw.dtype)


def gru_cell_backward(dh, h_prev, saved):
    """dn = dh (1 - z) (1 - n²), dz = dh (h_prev - n) z (1 - z), dr = dn hw_n r (1 - r):
    dxw = [dr dz dn], dhw = [dr dz dn r], and dh_prev = dh z, the direct path only (the
    caller adds dhw W_hh). Returns (dxw, dhw, dh_prev)."""
    check_cell_arrays(4, ("saved", saved, 4), ("dh", dh, 1), ("h_prev", h_prev, 1))
    r, z, n, hn = np.split(saved.astype(np.float64), 4, axis=1)
    dh64 = dh.astype(np.float64)
    dn = dh64 * (1.0 - z) * (1.0 - n * n)
    dz = dh64 * (h_prev - n) * z * (1.0 - z)
    dr = dn * hn * r * (1.0 - r)
    dxw = np.concatenate([dr, dz, dn], axis=1)
    dhw = np.concatenate([dr, dz, dn * r], axis=1)
    return dxw.astype(dh.dtype), dhw.astype(dh.dtype), (dh64 * z).astype(dh.dtype)
# 2-d convolution: y[n, o, i, j] = b[o] + sum_{c, p, q} w[o, c, p, q] xpad[n, g Cg + c,
# i sh + p dh, j sw + q dw], with g = o // (O / groups) the group of output channel o and Cg
# = C / groups its input channels. The receptive fields are a strided view of the padded input
# (im2col without a copy); every product is an einsum in float64.
# ---------------------------------------------------------------------------------------------
def _receptive_fields(xpad, kernel, stride, dilation, out):
    """The view [n, c, p, q, i, j] = xpad[n, c, i sh + p dh, j sw + q dw] of (N, C, Hp, Wp)."""
    sn, sc, sh, sw = xpad.strides
    strides = (sn, sc, sh * dilation[0], sw * dilation[1], sh * stride[0], sw * stride[1])
    shape = xpad.shape[:2] + tuple(kernel) + tuple(out)
    xp = array_module(xpad)
    if xp is not np:  # CuPy's as_strided has no writeable flag
        return xp.lib.stride_tricks.as_strided(xpad, shape, strides)
    return np.lib.stride_tricks.as_strided(xpad, shape, strides, writeable=False)


def _grouped_fields(x, kernel, stride, padding, dilation, groups, out):
    """The receptive fields of x (float64, zero-padded), as (N, groups, C/groups, kh, kw, OH,
    OW)."""
    (ph, pw), (n, c) = padding, x.shape[:2]
    xpad = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    fields = _receptive_fields(xpad, kernel, stride, dilation, out)
    return fields.reshape((n, groups, c // groups) + fields.shape[2:])


def conv2d_forward(x, weight, bias, stride, padding, dilation, groups):
    """y (N, O, OH, OW) of x (N, C, H, W) and weight (O, C/groups, kh, kw), bias (O,) or None;
    stride, padding, dilation: (h, w) pairs."""
    (stride, padding, dilation, groups), out = check_conv2d(x, weight, bias, stride, padding,
                                                            dilation, groups)
    o, c_group, kh, kw = weight.shape
    fields = _grouped_fields(x, (kh, kw), stride, padding, dilation, groups, out)
    w = weight.astype(np.float64).reshape(groups, o // groups, c_group, kh, kw)
    y = np.einsum("gocpq,ngcpqij->ngoij", w, fields, optimize=True).reshape((x.shape[0], o) + out)
    if bias is not None:
        y = y + bias.astype(np.float64)[:, None, None]
    return y.astype(x.dtype)


def conv2d_backward_input(dy, weight, input_size, stride, padding, dilation, groups):
    """dx (N, C, H, W) = the adjoint of conv2d_forward in x: each output's gradient times the
    weights goes back to every input position in its receptive field (col2im)."""
    xp = array_module(dy)
    stride, padding, dilation, groups = check_conv2d_backward_input(
        dy, weight, input_size, stride, padding, dilation, groups)
    n, o = dy.shape[:2]
    _, c_group, kh, kw = weight.shape
    (sh, sw), (dh, dw), (ph, pw) = stride, dilation, padding
    oh, ow = dy.shape[2:]
    w = weight.astype(np.float64).reshape(groups, o // groups, c_group, kh, kw)
    d = dy.astype(np.float64).reshape(n, groups, o // groups, oh, ow)
    dfields = np.einsum("gocpq,ngoij->ngcpqij", w, d, optimize=True)
    dfields = dfields.reshape((n, groups * c_group, kh, kw, oh, ow))
    h, w_ = input_size
    dxpad = xp.zeros((n, groups * c_group, h + 2 * ph, w_ + 2 * pw))
    for p in range(kh):
        for q in range(kw):
            dxpad[:, :, p * dh:p * dh + sh * (oh - 1) + 1:sh,
                  q * dw:q * dw + sw * (ow - 1) + 1:sw] += dfields[:, :, p, q]
    return xp.ascontiguousarray(dxpad[:, :, ph:ph + h, pw:pw + w_]).astype(dy.dtype)


def conv2d_backward_weight(dy, x, kernel_size, stride, padding, dilation, groups):
    """dweight (O, C/groups, kh, kw) = sum over the batch and the output positions of each
    output's gradient times its receptive field."""
    stride, padding, dilation, groups = check_conv2d_backward_weight(
        dy, x, kernel_size, stride, padding, dilation, groups)
    n, o = dy.shape[:2]
    weight_shape = (o, x.shape[1] // groups) + tuple(kernel_size)
    fields = _grouped_fields(x, tuple(kernel_size), stride, padding, dilation, groups,
                             dy.shape[2:])
    d = dy.astype(np.float64).reshape((n, groups, o // groups) + dy.shape[2:])
    dw = np.einsum("ngoij,ngcpqij->gocpq", d, fields, optimize=True)
    return dw.reshape(weight_shape).astype(dy.dtype)


# ---------------------------------------------------------------------------------------------
# Max pooling over the last two dims, as PyTorch's CPU kernel: the running maximum of each
# window starts at -inf at its first element inside the input; an element replaces it if
# greater, or NaN. A loop over the kh kw offsets of the window, each a strided slice of x.
# ---------------------------------------------------------------------------------------------
def _valid_outputs(out, size, offset, stride, padding):
    """The outputs o whose window element at ``offset`` lies inside the input (0 <= o s - p +
    offset < size): a range [first, last), and the input position of ``first``."""
    first = max(0, -(-(padding - offset) // stride))
    last = min(out, (size - 1 + padding - offset) // stride + 1)
    return first, max(first, last), first * stride - padding + offset


def max_pool2d_forward(x, kernel_size, stride, padding, dilation, ceil_mode=False):
    """(y, indices) of (N, C, OH, OW): each window's maximum and its flat position h W + w in
    its (H, W) plane (the first of equal ones; a NaN wins)."""
    xp = array_module(x)
    (kernel, stride, padding, dilation), out = check_max_pool2d(x, kernel_size, stride, padding,
                                                                dilation, ceil_mode)
    n, c, h, w = x.shape
    best = xp.full((n, c) + out, -np.inf, dtype=x.dtype)
    index = xp.empty((n, c) + out, dtype=np.int64)
    first_row = xp.arange(out[0]) * stride[0] - padding[0]   # each window's first element
    first_row = np.where(first_row < 0, first_row % dilation[0], first_row)  # inside x
    first_col = xp.arange(out[1]) * stride[1] - padding[1]
    first_col = np.where(first_col < 0, first_col % dilation[1], first_col)
    index[...] = first_row[:, None] * w + first_col[None, :]
    for p in range(kernel[0]):
        i0, i1, row = _valid_outputs(out[0], h, p * dilation[0], stride[0], padding[0])
        for q in range(kernel[1]):
            j0, j1, col = _valid_outputs(out[1], w, q * dilation[1], stride[1], padding[1])
            if i0 == i1 or j0 == j1:
                continue
            values = x[:, :, row:row + stride[0] * (i1 - i0 - 1) + 1:stride[0],
                       col:col + stride[1] * (j1 - j0 - 1) + 1:stride[1]]
            running = best[:, :, i0:i1, j0:j1]
            take = (values > running) | np.isnan(values)
            np.copyto(running, values, where=take)
            positions = ((row + stride[0] * xp.arange(i1 - i0))[:, None] * w
                         + (col + stride[1] * xp.arange(j1 - j0))[None, :])
            np.copyto(index[:, :, i0:i1, j0:j1], np.broadcast_to(positions, take.shape),
                      where=take)
    return best, index


def max_pool2d_backward(dy, indices, input_size):
    """dx (N, C, H, W): zeros with each output's gradient added at its maximum's position."""
    xp = array_module(dy)
    h, w = check_max_pool2d_backward(dy, indices, input_size)
    n, c = dy.shape[:2]
    planes = xp.arange(n * c, dtype=np.int64).reshape(n, c, 1, 1) * (h * w)
    sums = np.bincount((planes + indices).ravel(), weights=dy.astype(np.float64).ravel(),
                       minlength=n * c * h * w)
    return sums.astype(dy.dtype).reshape(n, c, h, w)


# ---------------------------------------------------------------------------------------------
# Optimizer updates, in place on the parameters and their state
# ---------------------------------------------------------------------------------------------
def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_sizes,
              bias_correction2_sqrts, *, lr, beta1, beta2, eps, weight_decay,
              decoupled_weight_decay=False, maximize=False):
    """One Adam (AdamW with ``decoupled_weight_decay``) update of every ``params[i]`` in
    place, as ``torch.optim.Adam``; the moments ``exp_avgs[i]``, ``exp_avg_sqs[i]`` (and, for
    amsgrad, ``max_exp_avg_sqs[i]``; else ``max_exp_avg_sqs`` is None) are updated in place
    too. ``step_sizes[i] = lr / (1 - beta1**step)`` and ``bias_correction2_sqrts[i] =
    sqrt(1 - beta2**step)`` for the parameter's own step::

        g = -g if maximize;  g = g + weight_decay * p (Adam) or p = p * (1 - lr * weight_decay)
        m = lerp(m, g, 1 - beta1);  v = beta2 * v + (1 - beta2) * g * g;  v = max(v_max, v)
        p = p - step_size * m / (sqrt(v) / bias_correction2_sqrt + eps)

    Each operation is one numpy call rounded to the parameter's dtype, in PyTorch's order."""
    _check_adam_lists(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_sizes,
                      bias_correction2_sqrts)
    for i, data in enumerate(params):
        grad, exp_avg, exp_avg_sq = grads[i], exp_avgs[i], exp_avg_sqs[i]
        if maximize:
            grad = -grad
        if weight_decay != 0:
            if decoupled_weight_decay:
                data *= 1 - lr * weight_decay
            else:
                grad = grad + weight_decay * data
        # One scratch array per parameter serves every temporary of the update.
        scratch = np.empty_like(data)
        _lerp_(exp_avg, grad, 1 - beta1, scratch)
        exp_avg_sq *= beta2
        np.multiply(grad, 1 - beta2, out=scratch)
        scratch *= grad
        exp_avg_sq += scratch
        second_moment = exp_avg_sq
        if max_exp_avg_sqs is not None:
            second_moment = max_exp_avg_sqs[i]
            np.maximum(second_moment, exp_avg_sq, out=second_moment)
        np.sqrt(second_moment, out=scratch)
        scratch /= bias_correction2_sqrts[i]
        scratch += eps
        np.divide(exp_avg, scratch, out=scratch)
        scratch *= -step_sizes[i]
        data += scratch


def _lerp_(start, end, weight, scratch):
    """``start += weight * (end - start)`` in place, rounded as ``torch.lerp`` rounds it;
    ``scratch`` (shaped like ``start``) holds the temporary."""
    np.subtract(end, start, out=scratch)
    if abs(weight) < 0.5:
        scratch *= weight
        start += scratch
    else:
        scratch *= 1 - weight
        np.subtract(end, scratch, out=start)


def _check_adam_lists(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step_sizes,
                      bias_correction2_sqrts):
    """TypeError/ValueError unless the per-parameter lists have one entry per parameter, each
    array shaped like its parameter."""
    lists = {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs,
             "step_sizes": step_sizes, "bias_correction2_sqrts": bias_correction2_sqrts}
    if max_exp_avg_sqs is not None:
        lists["max_exp_avg_sqs"] = max_exp_avg_sqs
    if not isinstance(params, (list, tuple)):
        raise TypeError(f"adam_step: params must be a list of arrays, got "
                        f"{type(params).__name__}")
    for name, values in lists.items():
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"adam_step: {name} must be a list, got {type(values).__name__}")
        if len(values) != len(params):
            raise ValueError(f"adam_step: {name} must have one entry per parameter "
                             f"({len(params)}), got {len(values)}")
    for i, p in enumerate(params):
        for name in ("grads", "exp_avgs", "exp_avg_sqs", "max_exp_avg_sqs"):
            if name not in lists:
                continue
            a = lists[name][i]
            if not hasattr(a, "shape") or tuple(a.shape) != tuple(getattr(p, "shape", ())):
                raise ValueError(f"adam_step: {name}[{i}] must have the shape of params[{i}] "
                                 f"{tuple(getattr(p, 'shape', ()))}, got "
                                 f"{getattr(a, 'shape', type(a).__name__)}")


def sum_cols(x):
    """y[j] = sum_i x[i, j] over a 2-d x (the gradient of a bias added to every row), summed
    in x's dtype row after row: numpy's order for the first axis of a C-contiguous array."""
    xp = array_module(x)
    check_float("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-d, got shape {x.shape}")
    return xp.ascontiguousarray(x).sum(axis=0)


def linear_param_grads(dy, x, out=None):
    """(dy.T @ x, dy.sum(0)) for dy (n, out) and x (n, in): a Linear layer's weight and bias
    gradients (the C backend takes both from one pass over dy); ``out``: a pair of arrays to
    write them into."""
    dw, db = check_linear_param_grads(dy, x, out)
    if dw is None:
        return matmul(dy.T, x), sum_cols(dy)
    dw[...], db[...] = matmul(dy.T, x), sum_cols(dy)
    return dw, db


def check_linear_param_grads(dy, x, out):
    """linear_param_grads' arguments checked (TypeError/ValueError): dy (n, out) and x (n, in)
    float arrays of one dtype; ``out`` None or (dw, db), C-contiguous arrays of dy's dtype
    shaped (out, in) and (out,). Returns out, or (None, None)."""
    check_float("dy", dy)
    check_float("x", x, dy.dtype)
    if dy.ndim != 2 or x.ndim != 2 or dy.shape[0] != x.shape[0]:
        raise ValueError("linear_param_grads: dy (n, out) and x (n, in) must be 2-d with the "
                         f"same rows, got shapes {dy.shape} and {x.shape}")
    if out is None:
        return None, None
    dw, db = out
    for name, array, shape in (("dw", dw, (dy.shape[1], x.shape[1])), ("db", db, dy.shape[1:])):
        check_float(name, array, dy.dtype)
        if array.shape != shape or not array.flags.c_contiguous or not array.flags.writeable:
            raise ValueError(f"linear_param_grads: out's {name} must be a writeable C-contiguous "
                             f"array of shape {shape}, got shape {array.shape}")
    return dw, db


def copy(a):
    """A new C-contiguous copy of ``a``, any dtype."""
    return a.copy(order="C")


def concatenate(arrays, axis):
    """``arrays`` joined along ``axis``, any dtype (numpy's checks and errors)."""
    return array_module(arrays[0]).concatenate(arrays, axis=axis)


# ---------------------------------------------------------------------------------------------
# One attention step (incremental decoding)
# ---------------------------------------------------------------------------------------------
def attention_step(q, k, v, scale=1.0, mask=None, causal_offset=None):
    """(out, weights): weights = softmax(q kᵀ * scale, keys excluded) (N, H, L, S) and
    out = weights v, returned as (N, L, H, Dv), the layout an output projection reads.

    q (N, H, L, D), k (N, H, S, D), v (N, H, S, Dv). Excluded: where the bool ``mask`` (True =
    excluded, broadcast to (N, H, L, S)) is set, and with ``causal_offset`` p every key
    j > i + p (the L queries are positions p..p+L-1 of the S keys). A query with every key
    excluded gets zero weights and a zero output.
    """
    xp = array_module(q)
    check_attention_step(q, k, v, mask, causal_offset)
    z = np.matmul(q.astype(np.float64), k.astype(np.float64).swapaxes(-1, -2)) * float(scale)
    excluded = xp.zeros(z.shape, dtype=bool)
    if mask is not None:
        excluded |= np.broadcast_to(mask, z.shape)
    if causal_offset is not None:
        lq, s = z.shape[-2:]
        excluded |= xp.arange(s) > xp.arange(lq)[:, None] + causal_offset
    z = np.where(excluded, -np.inf, z)
    row_max = max_or_neg_inf(z, -1)
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # fully excluded row: no -inf - -inf
    with np.errstate(invalid="ignore"):
        e = np.exp(z - row_max)
        total = np.sum(e, axis=-1, keepdims=True)
        weights = e / np.where(total == 0, 1.0, total)
    out = np.matmul(weights, v.astype(np.float64)).transpose(0, 2, 1, 3)
    return xp.ascontiguousarray(out, dtype=q.dtype), weights.astype(q.dtype)


# ---------------------------------------------------------------------------------------------
# Dropout's factors
# ---------------------------------------------------------------------------------------------
def dropout_keep(count, seed, threshold, scale, dtype):
    """``count`` factors of ``dtype``: scale where the element's 32 random bits u_j >= threshold,
    else 0. The bits are splitmix64's stream from ``seed`` (csrc/dropout.c): z_i =
    mix(seed + (i+1)·γ) gives elements 2i (its low half) and 2i+1 (its high half)."""
    check_dropout_keep(count, seed, threshold, dtype)
    pairs = np.arange(1, (count + 1) // 2 + 1, dtype=np.uint64)
    z = np.uint64(seed) + pairs * np.uint64(0x9E3779B97F4A7C15)  # wraps modulo 2^64
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    bits = np.stack([z & np.uint64(0xFFFFFFFF), z >> np.uint64(32)], axis=1).reshape(-1)[:count]
    return np.where(bits >= threshold, np.asarray(scale, dtype), np.asarray(0, dtype))


def attention_forward(q, k, v, scale=1.0, mask=None, causal=False, out=None, keep=None):
    """(out, weights) of attention over whole sequences, per batch row and head: weights =
    softmax(q kᵀ·scale + mask) (N, H, L, S) as softmax_forward takes its mask (bool True =
    excluded, or added; ``causal``: key j > query i excluded), out = weights v (N, H, L, Dv),
    into ``out`` if given (a strided view, such as heads seen in place in their rows). With
    ``keep`` (N, H, L, S), dropout's factors (0 or 1/(1-p)), out = (weights·keep) v; weights
    stays the softmax.

    q (N, H, L, D), k (N, H, S, D), v (N, H, S, Dv): the chain of a batched matmul, the fused
    softmax, the dropout product and a batched matmul that the C kernels run a head at a
    time."""
    n, h, length, s, d, dv = check_attention(q, k, v, mask, causal, out, keep)
    weights = softmax_forward(np.matmul(q, k.swapaxes(-1, -2)), scale, mask, causal)
    if out is None:
        out = np.empty((n, h, length, dv), q.dtype)
    np.matmul(weights if keep is None else weights * keep, v, out=out)
    return out, weights


def attention_backward(q, k, v, weights, dout, scale=1.0, dq=None, dk=None, dv=None, keep=None):
    """(dq, dk, dv) of attention_forward given the gradient ``dout`` of its output and its
    ``weights`` (and ``keep``, as it was given): dz = softmax_backward(weights, (dout vᵀ)·keep,
    scale), dq = dz k, dk = dzᵀ q, dv = (weights·keep)ᵀ dout; each into its given output view,
    or a new array."""
    check_attention_backward(q, k, v, weights, dout, (("dq", dq), ("dk", dk), ("dv", dv)), keep)
    scores_grad = np.matmul(dout, v.swapaxes(-1, -2))
    kept = weights
    if keep is not None:
        scores_grad *= keep
        kept = weights * keep
    dz = softmax_backward(weights, scores_grad, scale)
    grads = []
    for a, b, given, like in ((dz, k, dq, q), (dz.swapaxes(-1, -2), q, dk, k),
                              (kept.swapaxes(-1, -2), dout, dv, v)):
        target = np.empty(like.shape, q.dtype) if given is None else given
        grads.append(np.matmul(a, b, out=target))
    return tuple(grads)


# ---------------------------------------------------------------------------------------------
# Gather along a dim and its adjoint, scatter-add; keeping a triangle
# ---------------------------------------------------------------------------------------------
def _along_dim(index, dim):
    """The fancy index of out[..., index[...], ...] along dim: index there, its own position in
    every other dim."""
    xp = array_module(index)
    grids = [xp.arange(n).reshape((1,) * k + (n,) + (1,) * (index.ndim - k - 1))
             for k, n in enumerate(index.shape)]
    grids[dim] = index
    return tuple(grids)


def gather_forward(x, dim, index):
    """out[..., j, ...] = x[..., index[..., j, ...], ...] along dim (torch.gather): index has
    x's shape but along dim, an index below 0 counts from the end. Any dtype."""
    _, size, _, _ = check_gather(x, dim, index)
    d = dim % x.ndim
    check_gather_index(index, size, d)
    return x[_along_dim(index, d)]


def gather_backward(dy, dim, index, size):
    """gather's adjoint: zeros of dy's shape but ``size`` along dim, with dy[..., j, ...] added
    at index[..., j, ...] (repeated indices add up)."""
    out = np.zeros_like(dy, shape=check_gather_backward(dy, dim, index, size))
    check_gather_index(index, size, dim % dy.ndim)
    np.add.at(out, _along_dim(index, dim % dy.ndim), dy)
    return out


def scatter_add(x, dim, index, src):
    """A copy of x with src[..., j, ...] added at index[..., j, ...] along dim
    (torch.scatter_add; src has index's shape, index x's but along dim)."""
    _, size, _, _ = check_scatter_add(x, dim, index, src)
    check_gather_index(index, size, dim % x.ndim)
    out = x.copy()
    np.add.at(out, _along_dim(index, dim % x.ndim), src)
    return out


def keep_triangle(x, diagonal=0, upper=False):
    """The lower triangle of x's last two dims, out[..., i, j] = x[..., i, j] where
    j - i <= diagonal, 0 elsewhere (torch.tril); with upper, where j - i >= diagonal
    (torch.triu). Any dtype."""
    diagonal = check_keep_triangle(x, diagonal)
    return (np.triu if upper else np.tril)(x, diagonal)


def matmul_into(a, b, *, out):
    """out[...] = a @ b (np.matmul's batch rules, out not broadcast), into ``out``, which may be
    a strided view with unit-stride rows; returns out."""
    check_matmul_into(a, b, out)
    np.matmul(a, b, out=out)
    return out


def bias_relu_forward(x, bias, out=None):
    """y = max(x + bias, 0) over a 2-d x and its row bias (x + bias rounded to x's dtype first;
    NaN stays NaN); into ``out`` if given, which may be x itself."""
    check_bias_relu(x, bias, out)
    z = np.add(x, bias, out=out)
    z[z < 0] = 0
    return z


def bias_relu_backward(dy, y, out=None):
    """(dx, dbias): dx = 0 where y <= 0 else dy; dbias[j] = sum_i dx[i, j], numpy's sum over
    the first axis (row after row, in dy's dtype); dx into ``out`` if given (dy itself
    allowed)."""
    check_bias_relu_backward(dy, y, out)
    dx = np.where(y <= 0, 0, dy).astype(dy.dtype)
    if out is not None:
        out[...] = dx
        dx = out
    return dx, dx.sum(axis=0)
