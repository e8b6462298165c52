"""Argument checks shared by every backend, so each raises the same error, naming the argument,
for the same bad input. The numpy backend's functions also run on GPU arrays (see
``backends/__init__.py``), so an array here is numpy's or the GPU library's; the C backend reads
only numpy's (a GPU array has no buffer for it: a TypeError there).
Imports: numpy, ``minitorch.device_arrays``."""
import math

import numpy as np

from ..device_arrays import is_gpu_array, is_writeable

FLOAT_DTYPES = (np.float32, np.float64)
REDUCTIONS = ("mean", "sum", "none")
GELU_APPROXIMATIONS = ("none", "tanh")


def _is_array(x):
    return isinstance(x, np.ndarray) or is_gpu_array(x)


def check_float(name, x, dtype=None):
    if not _is_array(x):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float32 or float64, got {x.dtype}")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name} must have the same dtype as the other inputs ({dtype}), got {x.dtype}")
    return x


def check_gemm_operands(a, b, trans_a, trans_b):
    """op(a), op(b) for gemm: 2-D float arrays of one dtype whose inner dims agree."""
    check_float("a", a)
    check_float("b", b, a.dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"gemm needs 2-D a and b, got a.ndim={a.ndim}, b.ndim={b.ndim}")
    op_a = a.T if trans_a else a
    op_b = b.T if trans_b else b
    if op_a.shape[1] != op_b.shape[0]:
        raise ValueError(f"gemm: op(a) is {op_a.shape} and op(b) is {op_b.shape}; inner dims differ")
    return op_a, op_b


def broadcast_shape(s1, s2):
    """np.broadcast_shapes for two shapes (5x cheaper); raises ValueError if they do not."""
    ndim = max(len(s1), len(s2))
    s1 = (1,) * (ndim - len(s1)) + tuple(s1)
    s2 = (1,) * (ndim - len(s2)) + tuple(s2)
    out = []
    for d1, d2 in zip(s1, s2):
        if d1 != d2 and d1 != 1 and d2 != 1:
            raise ValueError(f"shapes {s1} and {s2} do not broadcast")
        out.append(d2 if d1 == 1 else d1)
    return tuple(out)


def check_matmul_operands(a, b):
    """The broadcast batch shape of np.matmul(a, b) for float arrays of one dtype, ndim >= 2,
    whose inner dims agree."""
    check_float("a", a)
    check_float("b", b, a.dtype)
    if a.ndim < 2 or b.ndim < 2:
        raise ValueError(f"matmul needs a and b with ndim >= 2, got a.ndim={a.ndim}, b.ndim={b.ndim}")
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: a.shape[-1] ({a.shape[-1]}) must equal b.shape[-2] ({b.shape[-2]})")
    try:
        return broadcast_shape(a.shape[:-2], b.shape[:-2])
    except ValueError:
        raise ValueError(f"matmul: batch dims of a {a.shape[:-2]} and b {b.shape[:-2]} do not broadcast") from None


def check_where_operands(condition, a, b):
    """where's operands: a bool array, and a and b of one float dtype, each of its shape or 0-d
    (one value)."""
    if not _is_array(condition) or condition.dtype != np.bool_:
        raise TypeError(f"condition must be a bool numpy.ndarray, got "
                        f"{getattr(condition, 'dtype', type(condition).__name__)}")
    check_float("a", a)
    check_float("b", b, a.dtype)
    for name, x in (("a", a), ("b", b)):
        if x.ndim and x.shape != condition.shape:
            raise ValueError(f"{name} must have the condition's shape {condition.shape} or be "
                             f"0-d, got {x.shape}")


def check_same_shape(name, x, shape):
    if x.shape != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)}, got {x.shape}")


def check_reduction(reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {REDUCTIONS}, got {reduction!r}")


def check_label_smoothing(label_smoothing):
    if not 0.0 <= float(label_smoothing) <= 1.0:
        raise ValueError(f"label_smoothing must be in [0, 1], got {label_smoothing}")


def check_target(logits, target, ignore_index):
    """target: int64 (N,) for logits (N, C), each in [0, C) or equal to ignore_index."""
    if not _is_array(target):
        raise TypeError(f"target must be a numpy.ndarray, got {type(target).__name__}")
    if target.dtype != np.int64:
        raise TypeError(f"target must be int64, got {target.dtype}")
    if logits.ndim != 2:
        raise ValueError(f"logits must be 2-D (N, C), got shape {logits.shape}")
    if target.shape != (logits.shape[0],):
        raise ValueError(f"target must have shape ({logits.shape[0]},), got {target.shape}")
    n_classes = logits.shape[1]
    bad = (target != ignore_index) & ((target < 0) | (target >= n_classes))
    if bad.any():
        value = int(target[np.argmax(bad)])
        raise IndexError(f"target value {value} is out of range [0, {n_classes}) "
                         f"and is not ignore_index ({ignore_index})")
    return target


def check_gelu_approximate(approximate):
    """approximate's index in GELU_APPROXIMATIONS ("none" 0, "tanh" 1)."""
    if approximate not in GELU_APPROXIMATIONS:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    return GELU_APPROXIMATIONS.index(approximate)


def check_clamp_bounds(min, max):
    """(min, max) as floats, -inf / +inf for None; TypeError for a non-number, ValueError for
    NaN."""
    bounds = []
    for name, value, default in (("min", min, -np.inf), ("max", max, np.inf)):
        if value is None:
            value = default
        elif isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number or None, got {type(value).__name__}")
        if np.isnan(value):
            raise ValueError(f"{name} must not be NaN")
        bounds.append(float(value))
    return bounds


def check_row_indices(src, rows, out_rows):
    """rows: int64, one per row of src (a float array of >= 1 dim), each in [0, out_rows)."""
    check_float("src", src)
    if src.ndim < 1:
        raise ValueError(f"src must have at least 1 dim, got shape {src.shape}")
    if not _is_array(rows) or rows.dtype != np.int64:
        raise TypeError(f"rows must be an int64 numpy.ndarray, got "
                        f"{getattr(rows, 'dtype', type(rows).__name__)}")
    if rows.shape != src.shape[:1]:
        raise ValueError(f"rows must have shape {src.shape[:1]} (one per row of src), got "
                         f"{rows.shape}")
    if isinstance(out_rows, bool) or not isinstance(out_rows, (int, np.integer)) or out_rows < 0:
        raise ValueError(f"out_rows must be a non-negative int, got {out_rows!r}")
    if rows.size and (rows.min() < 0 or rows.max() >= out_rows):
        raise IndexError(f"rows must lie in [0, {out_rows}), got values from {rows.min()} to "
                         f"{rows.max()}")


ARITH_OPS = ("add", "sub", "mul", "div", "maximum", "minimum")
# Operand layouts of the arith kernel: the whole broadcast shape, one row of it repeated, one value
ARITH_FULL, ARITH_ROW, ARITH_SCALAR = 0, 1, 2


def arith_layout(a, b):
    """(rows, cols, a_layout, b_layout) for the arith kernel, or None where it cannot take a and
    b: one of them must have the broadcast shape (full) and be C-contiguous, the other the same
    shape, one value, or the full shape's trailing dims (a row, C-contiguous)."""
    if a.shape == b.shape:
        if a.size == 0 or not (a.flags.c_contiguous and b.flags.c_contiguous):
            return None
        return 1, a.size, ARITH_FULL, ARITH_FULL
    swapped = (b.size, b.ndim) > (a.size, a.ndim)
    full, other = (b, a) if swapped else (a, b)
    if full.size == 0 or other.ndim > full.ndim or not (full.flags.c_contiguous
                                                         and other.flags.c_contiguous):
        return None
    if other.size == 1:
        rows, cols, layout = 1, full.size, ARITH_SCALAR
    else:
        trailing = other.shape[next(i for i, n in enumerate(other.shape) if n != 1):]
        if trailing != full.shape[full.ndim - len(trailing):]:
            return None
        rows, cols, layout = full.size // other.size, other.size, ARITH_ROW
    return (rows, cols, layout, ARITH_FULL) if swapped else (rows, cols, ARITH_FULL, layout)


def check_arith(op, a, b, out):
    """The layout of a valid arith call (ValueError naming what is wrong) and its result
    shape."""
    if op not in ARITH_OPS:
        raise ValueError(f"op must be one of {ARITH_OPS}, got {op!r}")
    check_float("a", a)
    check_float("b", b, a.dtype)
    layout = arith_layout(a, b)
    if layout is None:
        raise ValueError(f"a and b: shapes {a.shape} and {b.shape} (C-contiguous: "
                         f"{a.flags.c_contiguous}, {b.flags.c_contiguous}) are not equal "
                         "contiguous arrays, an array and one value, or an array and a "
                         "contiguous trailing row")
    shape = a.shape if layout[2] == ARITH_FULL else b.shape
    if out is not None:
        check_float("out", out, a.dtype)
        check_same_shape("out", out, shape)
        if not out.flags.c_contiguous or not is_writeable(out):
            raise ValueError("out must be a writeable C-contiguous array")
    return layout, shape


POW_INT_LIMIT = 64  # the largest |exponent| of pow_int_forward


def check_integer_exponent(exponent):
    """exponent as an int in [-POW_INT_LIMIT, POW_INT_LIMIT] (TypeError / ValueError)."""
    if isinstance(exponent, (bool, np.bool_)) or not isinstance(exponent, (int, np.integer)):
        raise TypeError(f"exponent must be an int, got {type(exponent).__name__}")
    if not -POW_INT_LIMIT <= exponent <= POW_INT_LIMIT:
        raise ValueError(f"exponent must be in [-{POW_INT_LIMIT}, {POW_INT_LIMIT}], got "
                         f"{exponent}")
    return int(exponent)


def check_real_exponent(exponent):
    """exponent as a float (TypeError for anything but a real number; bool is not one)."""
    if isinstance(exponent, (bool, np.bool_)) or not isinstance(exponent, (int, float,
                                                                          np.integer,
                                                                          np.floating)):
        raise TypeError(f"exponent must be a real number, got {type(exponent).__name__}")
    return float(exponent)


RNN_NONLINEARITIES = ("tanh", "relu")


def check_cell_arrays(chunks, first, *others):
    """(rows, hidden) of one step of a recurrent cell. ``first`` and ``others`` are (name,
    array, width) triples: 2-D float arrays of the first one's dtype, each of shape (rows,
    width * hidden); ``first`` holds ``chunks`` gates per unit, so hidden = its columns /
    chunks."""
    name, array, width = first
    check_float(name, array)
    if array.ndim != 2 or array.shape[1] % chunks:
        raise ValueError(f"{name} must be 2-D (rows, {chunks} * hidden), got shape "
                         f"{array.shape}")
    rows, hidden = array.shape[0], array.shape[1] // chunks
    for other_name, other, other_width in others:
        check_float(other_name, other, array.dtype)
        check_same_shape(other_name, other, (rows, other_width * hidden))
    return rows, hidden


def check_nonlinearity(nonlinearity):
    if nonlinearity not in RNN_NONLINEARITIES:
        raise ValueError(f"nonlinearity must be one of {RNN_NONLINEARITIES}, got "
                         f"{nonlinearity!r}")
def _check_pair_of(name, value, least):
    """A pair of ints (h, w), each >= least."""
    if (not isinstance(value, (tuple, list)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value)):
        raise TypeError(f"{name} must be a pair of ints, got {value!r}")
    if any(v < least for v in value) or any(v >= 2 ** 31 for v in value):
        raise ValueError(f"{name} must be a pair of ints in [{least}, 2**31), got {tuple(value)}")
    return int(value[0]), int(value[1])


def conv2d_output_size(size, kernel, stride, padding, dilation):
    """(size + 2 padding - dilation (kernel - 1) - 1) // stride + 1, per spatial dim."""
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(size, kernel, stride, padding, dilation))


def check_conv2d_geometry(stride, padding, dilation, groups):
    """(stride, padding, dilation, groups) as ints: stride, dilation, groups >= 1, padding >= 0."""
    stride = _check_pair_of("stride", stride, 1)
    padding = _check_pair_of("padding", padding, 0)
    dilation = _check_pair_of("dilation", dilation, 1)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)):
        raise TypeError(f"groups must be an int, got {type(groups).__name__}")
    if not 1 <= groups < 2 ** 31:
        raise ValueError(f"groups must be in [1, 2**31), got {groups}")
    return stride, padding, dilation, int(groups)


def check_conv2d_shapes(input_shape, weight_shape, groups, stride, padding, dilation):
    """The output's (OH, OW) for an (N, C, H, W) input and an (O, C/groups, kh, kw) weight: C
    and O divisible by groups, the kernel within the padded input, the output at least 1x1."""
    if len(input_shape) != 4:
        raise ValueError(f"x must be 4-d (N, C, H, W), got shape {tuple(input_shape)}")
    if len(weight_shape) != 4:
        raise ValueError(f"weight must be 4-d (O, C/groups, kh, kw), got shape "
                         f"{tuple(weight_shape)}")
    _, c, h, w = input_shape
    o, c_group, kh, kw = weight_shape
    if o % groups:
        raise ValueError(f"weight's out channels ({o}) must be divisible by groups ({groups})")
    if c != c_group * groups:
        raise ValueError(f"x must have weight.shape[1] * groups = {c_group * groups} channels, "
                         f"got {c}")
    if kh < 1 or kw < 1:
        raise ValueError(f"weight's kernel must be at least 1x1, got {kh}x{kw}")
    out = conv2d_output_size((h, w), (kh, kw), stride, padding, dilation)
    if min(out) < 1:
        raise ValueError(f"the dilated kernel ({kh}x{kw}, dilation {dilation}) must fit in the "
                         f"padded input ({h + 2 * padding[0]}x{w + 2 * padding[1]}): the output "
                         f"would be {out[0]}x{out[1]}")
    return out


def check_conv2d(x, weight, bias, stride, padding, dilation, groups):
    """The checked geometry and (OH, OW) of conv2d_forward's arguments."""
    check_float("x", x)
    check_float("weight", weight, x.dtype)
    geometry = check_conv2d_geometry(stride, padding, dilation, groups)
    out = check_conv2d_shapes(x.shape, weight.shape, geometry[3], *geometry[:3])
    if bias is not None:
        check_float("bias", bias, x.dtype)
        check_same_shape("bias", bias, (weight.shape[0],))
    return geometry, out


def _check_dy(dy, other_name, other):
    check_float("dy", dy)
    check_float(other_name, other, dy.dtype)
    if dy.ndim != 4 or other.ndim != 4:
        raise ValueError(f"dy and {other_name} must be 4-d, got shapes {dy.shape} and "
                         f"{other.shape}")


def check_conv2d_backward_input(dy, weight, input_size, stride, padding, dilation, groups):
    """The checked geometry of conv2d_backward_input: dy of the forward output's shape."""
    _check_dy(dy, "weight", weight)
    geometry = check_conv2d_geometry(stride, padding, dilation, groups)
    size = _check_pair_of("input_size", tuple(input_size), 1)
    input_shape = (dy.shape[0], weight.shape[1] * geometry[3]) + size
    out = check_conv2d_shapes(input_shape, weight.shape, geometry[3], *geometry[:3])
    check_same_shape("dy", dy, (dy.shape[0], weight.shape[0]) + out)
    return geometry


def check_conv2d_backward_weight(dy, x, kernel_size, stride, padding, dilation, groups):
    """The checked geometry of conv2d_backward_weight: dy of the forward output's shape."""
    _check_dy(dy, "x", x)
    geometry = check_conv2d_geometry(stride, padding, dilation, groups)
    kernel = _check_pair_of("kernel_size", tuple(kernel_size), 1)
    if x.shape[1] % geometry[3]:
        raise ValueError(f"x's channels ({x.shape[1]}) must be divisible by groups "
                         f"({geometry[3]})")
    weight_shape = (dy.shape[1], x.shape[1] // geometry[3]) + kernel
    out = check_conv2d_shapes(x.shape, weight_shape, geometry[3], *geometry[:3])
    check_same_shape("dy", dy, (x.shape[0], dy.shape[1]) + out)
    return geometry


def pooled_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output length: windows that start inside the input or its left
    padding (ceil_mode keeps a last partial one)."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def check_max_pool2d(x, kernel, stride, padding, dilation, ceil_mode):
    """The checked (kernel, stride, padding, dilation) pairs and (OH, OW) of max_pool2d_forward
    on an (N, C, H, W) float array: padding at most half the dilated window, output >= 1x1."""
    check_float("x", x)
    if x.ndim != 4 or 0 in x.shape[2:]:
        raise ValueError(f"x must be 4-d (N, C, H, W) with H, W >= 1, got shape {x.shape}")
    kernel = _check_pair_of("kernel_size", kernel, 1)
    stride = _check_pair_of("stride", stride, 1)
    padding = _check_pair_of("padding", padding, 0)
    dilation = _check_pair_of("dilation", dilation, 1)
    for p, k, d in zip(padding, kernel, dilation):
        if 2 * p > d * (k - 1) + 1:
            raise ValueError(f"padding must be at most half the dilated window, got padding "
                             f"{padding} for kernel_size {kernel} and dilation {dilation}")
    out = tuple(pooled_size(n, k, s, p, d, bool(ceil_mode))
                for n, k, s, p, d in zip(x.shape[2:], kernel, stride, padding, dilation))
    if min(out) < 1:
        raise ValueError(f"the output would be {out[0]}x{out[1]}: the window must fit in the "
                         f"padded input")
    return (kernel, stride, padding, dilation), out


def check_max_pool2d_backward(dy, indices, input_size):
    """dy (N, C, OH, OW) float, indices of its shape, int64, each in [0, H W)."""
    check_float("dy", dy)
    if dy.ndim != 4:
        raise ValueError(f"dy must be 4-d (N, C, OH, OW), got shape {dy.shape}")
    if not _is_array(indices) or indices.dtype != np.int64:
        raise TypeError(f"indices must be an int64 numpy.ndarray, got "
                        f"{getattr(indices, 'dtype', type(indices).__name__)}")
    check_same_shape("indices", indices, dy.shape)
    h, w = _check_pair_of("input_size", tuple(input_size), 1)
    if indices.size and (indices.min() < 0 or indices.max() >= h * w):
        raise IndexError(f"indices must be in [0, {h * w}) (positions in an {h}x{w} plane), got "
                         f"[{indices.min()}, {indices.max()}]")
    return h, w


def check_batch_norm(x, weight, bias, eps=None):
    """x (N, C, ...) float with more than one value per channel; weight and bias (C,) of its
    dtype, or None; eps >= 0. Returns (N, C, L), L the product of the dims after C."""
    check_float("x", x)
    if x.ndim < 2:
        raise ValueError(f"x must have at least 2 dims (N, C, ...), got shape {x.shape}")
    n, channels = x.shape[:2]
    inner = x.size // (n * channels) if n * channels else 0
    if n * inner <= 1:
        raise ValueError(f"batch norm needs more than 1 value per channel, got shape {x.shape}")
    for name, p in (("weight", weight), ("bias", bias)):
        if p is not None:
            check_float(name, p, x.dtype)
            check_same_shape(name, p, (channels,))
    if eps is not None and not float(eps) >= 0.0:
        raise ValueError(f"eps must be >= 0, got {eps}")
    return n, channels, inner


def check_batch_norm_backward(dy, x, weight, mean, rstd):
    """dy of x's shape and dtype, mean and rstd (C,) of its dtype, and what check_batch_norm
    asks of x and weight. Returns (N, C, L)."""
    sizes = check_batch_norm(x, weight, None)
    check_float("dy", dy, x.dtype)
    check_same_shape("dy", dy, x.shape)
    for name, s in (("mean", mean), ("rstd", rstd)):
        check_float(name, s, x.dtype)
        check_same_shape(name, s, (x.shape[1],))
    return sizes


def _check_heads(q, k, v):
    """The (n, h, l, s, d, dv) of attention heads q (N, H, L, D), k (N, H, S, D), v (N, H, S,
    Dv): float arrays of one dtype."""
    check_float("q", q)
    check_float("k", k, q.dtype)
    check_float("v", v, q.dtype)
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"q, k and v must be 4-D (N, H, L, D), (N, H, S, D), (N, H, S, Dv), "
                         f"got {q.shape}, {k.shape} and {v.shape}")
    n, h, length, d = q.shape
    s = k.shape[2]
    if k.shape != (n, h, s, d):
        raise ValueError(f"k must have shape (N, H, S, D) = {(n, h, s, d)}, got {k.shape}")
    if v.shape[:3] != (n, h, s):
        raise ValueError(f"v must have shape (N, H, S, Dv) with {(n, h, s)} first, got "
                         f"{v.shape}")
    return n, h, length, s, d, v.shape[3]


def check_attention_step(q, k, v, mask, causal_offset):
    """The (n, h, l, s, d, dv) of attention_step's operands: q (N, H, L, D), k (N, H, S, D),
    v (N, H, S, Dv) float arrays of one dtype; mask None or bool broadcasting to (N, H, L, S);
    causal_offset None or an int >= 0."""
    n, h, lq, s, d, dv = _check_heads(q, k, v)
    if mask is not None:
        if not _is_array(mask) or mask.dtype != np.bool_:
            raise TypeError(f"mask must be a bool numpy.ndarray or None, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        try:
            fits = mask.ndim <= 4 and broadcast_shape(mask.shape, (n, h, lq, s)) == (n, h, lq, s)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {(n, h, lq, s)}")
    if causal_offset is not None:
        if isinstance(causal_offset, bool) or not isinstance(causal_offset, (int, np.integer)):
            raise TypeError(f"causal_offset must be an int or None, got "
                            f"{type(causal_offset).__name__}")
        if not 0 <= causal_offset < 2 ** 62:
            raise ValueError(f"causal_offset must be >= 0, got {causal_offset}")
    return n, h, lq, s, d, dv


def check_dropout_keep(count, seed, threshold, dtype):
    """dropout_keep's arguments: a count >= 0, a 64-bit seed and a 32-bit threshold (ints), a
    float32/float64 dtype."""
    for name, value, bits in (("count", count, 63), ("seed", seed, 64),
                              ("threshold", threshold, 32)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__}")
        if not 0 <= value < 2 ** bits:
            raise ValueError(f"{name} must be in [0, 2^{bits}), got {value}")
    if np.dtype(dtype) not in FLOAT_DTYPES:
        raise TypeError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")


def check_attention(q, k, v, mask, causal, out, keep=None):
    """The (n, h, l, s, d, dv) of attention_forward's operands: q (N, H, L, D), k (N, H, S, D),
    v (N, H, S, Dv) float arrays of one dtype; mask None, bool or of q's dtype, broadcasting to
    the scores (N, H, L, S); causal a bool; out None or an output view (N, H, L, Dv); keep (the
    weights' dropout factors) None or of q's dtype and the scores' shape."""
    n, h, length, s, d, dv = _check_heads(q, k, v)
    if keep is not None:
        check_float("keep", keep, q.dtype)
        check_same_shape("keep", keep, (n, h, length, s))
    if mask is not None:
        if not _is_array(mask) or (mask.dtype != np.bool_ and mask.dtype != q.dtype):
            raise TypeError(f"mask must be a bool or {q.dtype} numpy.ndarray or None, got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        try:
            fits = broadcast_shape(mask.shape, (n, h, length, s)) == (n, h, length, s)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to the scores' "
                             f"shape {(n, h, length, s)}")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__}")
    if out is not None:
        check_output_view("out", out, (n, h, length, dv), q.dtype, (q, k, v))
    return n, h, length, s, d, dv


def check_attention_backward(q, k, v, weights, dout, grads, keep=None):
    """attention_backward's operands: q, k, v, keep as check_attention; weights (N, H, L, S) and dout
    (N, H, L, Dv) of q's dtype; ``grads`` the (name, array or None) of dq, dk, dv, each None or
    an output view of its input's shape. The three may be views of one array (the heads of a
    packed projection's gradient); the caller keeps them disjoint (an exact overlap test costs
    more than the kernel at small sizes), only the same view twice is refused."""
    n, h, length, s, d, dv = check_attention(q, k, v, None, False, None, keep)
    check_float("weights", weights, q.dtype)
    check_same_shape("weights", weights, (n, h, length, s))
    check_float("dout", dout, q.dtype)
    check_same_shape("dout", dout, (n, h, length, dv))
    for (name, g), like in zip(grads, (q, k, v)):
        if g is not None:
            check_output_view(name, g, like.shape, q.dtype, (q, k, v, weights, dout))
    given = [g for _, g in grads if g is not None]
    if len({id(g) for g in given}) < len(given):
        raise ValueError("dq, dk and dv must be different arrays")
    return n, h, length, s, d, dv


# ---------------------------------------------------------------------------------------------
# Gather along a dim and its adjoint, scatter-add; keeping a triangle
# ---------------------------------------------------------------------------------------------
def _check_dim(dim, ndim):
    """dim in [-ndim, ndim) as an int in [0, ndim)."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not -ndim <= dim < ndim:
        raise IndexError(f"dim must be in [{-ndim}, {ndim}), got {dim}")
    return int(dim) % ndim


def check_gather(x, dim, index, name="x"):
    """(outer, size, n, inner) of a gather from ``x`` (an array of >= 1 dim, any dtype but
    object) along ``dim`` at ``index`` (int64, x's shape but n along dim): x seen as
    (outer, size, inner) and index as (outer, n, inner)."""
    if not _is_array(x):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype.hasobject:
        raise TypeError(f"{name} must hold numbers, got dtype {x.dtype}")
    if not _is_array(index) or index.dtype != np.int64:
        raise TypeError(f"index must be an int64 numpy.ndarray, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if x.ndim < 1:
        raise ValueError(f"{name} must have at least 1 dim, got shape {x.shape}")
    d = _check_dim(dim, x.ndim)
    if index.ndim != x.ndim or any(index.shape[k] != x.shape[k] for k in range(x.ndim) if k != d):
        raise ValueError(f"index must have the shape of {name} {x.shape} but along dim {d}, got "
                         f"{index.shape}")
    outer, inner = math.prod(x.shape[:d]), math.prod(x.shape[d + 1:])
    return outer, x.shape[d], index.shape[d], inner


def check_gather_index(index, size, dim):
    """IndexError (PyTorch's words, and the range found) unless every index lies in
    [-size, size)."""
    if index.size and (index.min() < -size or index.max() >= size):
        low, high = index.min(), index.max()
        bad = low if low < -size else high
        raise IndexError(f"gather: index {bad} is out of bounds for dimension {dim} with size "
                         f"{size} (index min {low}, max {high})")


def check_gather_backward(dy, dim, index, size):
    """The output shape of gather's adjoint: dy's, with ``size`` along dim (dy float, index
    int64 of dy's shape)."""
    check_float("dy", dy)
    if not _is_array(index) or index.dtype != np.int64:
        raise TypeError(f"index must be an int64 numpy.ndarray, got "
                        f"{getattr(index, 'dtype', type(index).__name__)}")
    if dy.ndim < 1:
        raise ValueError(f"dy must have at least 1 dim, got shape {dy.shape}")
    if index.shape != dy.shape:
        raise ValueError(f"index must have dy's shape {dy.shape}, got {index.shape}")
    d = _check_dim(dim, dy.ndim)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 0:
        raise ValueError(f"size must be a non-negative int, got {size!r}")
    return dy.shape[:d] + (int(size),) + dy.shape[d + 1:]


def check_scatter_add(x, dim, index, src):
    """(outer, size, n, inner) for adding ``src`` (x's float dtype, index's shape) into ``x``
    along ``dim`` at ``index``."""
    check_float("x", x)
    check_float("src", src, x.dtype)
    if not _is_array(index) or src.shape != index.shape:
        raise ValueError(f"src must have index's shape {getattr(index, 'shape', None)}, got "
                         f"{src.shape}")
    return check_gather(x, dim, index)


def check_keep_triangle(x, diagonal):
    """``diagonal`` clamped to [-rows - 1, cols] (where every larger or smaller one gives the
    same triangle) for a triangle of ``x`` (>= 2 dims, any dtype but object)."""
    if not _is_array(x):
        raise TypeError(f"x must be a numpy.ndarray, got {type(x).__name__}")
    if x.dtype.hasobject:
        raise TypeError(f"x must hold numbers, got dtype {x.dtype}")
    if x.ndim < 2:
        raise ValueError(f"x must have at least 2 dims, got shape {x.shape}")
    if isinstance(diagonal, bool) or not isinstance(diagonal, (int, np.integer)):
        raise TypeError(f"diagonal must be an int, got {type(diagonal).__name__}")
    return max(min(int(diagonal), x.shape[-1]), -x.shape[-2] - 1)


def check_output_view(name, out, shape, dtype, inputs):
    """An array a kernel writes through its strides: float of ``dtype`` and ``shape``, writable,
    its rows unit-stride and its elements distinct (a strided view such as the heads of an
    (N, L, H·D) array seen as (N, H, L, D)), sharing no memory with any of ``inputs``."""
    check_float(name, out, dtype)
    check_same_shape(name, out, shape)
    if not is_writeable(out):
        raise ValueError(f"{name} must be writable")
    item = out.itemsize
    if any(s < 0 or s % item for s in out.strides) or (out.shape[-1] > 1
                                                       and out.strides[-1] != item):
        raise ValueError(f"{name} must have unit-stride rows and non-negative strides, got "
                         f"strides {out.strides}")
    # Distinct elements: with the dims sorted by stride, each steps past all the ones before.
    span = item
    for stride, extent in sorted((s, e) for e, s in zip(out.shape, out.strides) if e > 1):
        if stride < span:
            raise ValueError(f"{name}'s elements overlap (shape {out.shape}, strides "
                             f"{out.strides})")
        span = stride * extent
    if any(np.may_share_memory(out, x) for x in inputs):
        raise ValueError(f"{name} must not share memory with the inputs")


def check_matmul_into(a, b, out):
    """The batch shape of np.matmul(a, b, out=out), without broadcasting out: ``out`` as
    check_output_view asks, of a's dtype and the product's shape."""
    batch = check_matmul_operands(a, b)
    check_output_view("out", out, tuple(batch) + (a.shape[-2], b.shape[-1]), a.dtype, (a, b))
    return batch


def check_bias_relu(x, bias, out):
    """bias_relu_forward's arguments: x a 2-d float array, bias (cols,) of its dtype, out None
    or a C-contiguous writable array of x's shape and dtype (x itself allowed)."""
    check_float("x", x)
    if x.ndim != 2:
        raise ValueError(f"x must be 2-d (rows, cols), got shape {x.shape}")
    check_float("bias", bias, x.dtype)
    check_same_shape("bias", bias, x.shape[1:])
    if out is not None:
        check_float("out", out, x.dtype)
        check_same_shape("out", out, x.shape)
        if not (out.flags.c_contiguous and is_writeable(out)):
            raise ValueError("out must be C-contiguous and writable")
        if out is not x and (np.may_share_memory(out, x) or np.may_share_memory(out, bias)):
            raise ValueError("out must be x itself or share no memory with x and bias")


def check_matmul_bias(a, b, bias):
    """matmul_bias's arguments: a (m, k) and b (k, n) float arrays of one dtype, bias (n,) of
    that dtype."""
    check_float("a", a)
    check_float("b", b, a.dtype)
    if a.ndim != 2 or b.ndim != 2:
        raise ValueError(f"a and b must be 2-d, got shapes {a.shape} and {b.shape}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"a and b shapes cannot be multiplied: {a.shape} and {b.shape}")
    check_float("bias", bias, a.dtype)
    check_same_shape("bias", bias, b.shape[1:])


def check_bias_relu_backward(dy, y, out=None):
    """bias_relu_backward's arguments: dy and y 2-d float arrays of one shape and dtype, out
    None or a C-contiguous writable array of that shape and dtype (dy itself allowed)."""
    check_float("dy", dy)
    if dy.ndim != 2:
        raise ValueError(f"dy must be 2-d (rows, cols), got shape {dy.shape}")
    check_float("y", y, dy.dtype)
    check_same_shape("y", y, dy.shape)
    if out is not None:
        check_float("out", out, dy.dtype)
        check_same_shape("out", out, dy.shape)
        if not (out.flags.c_contiguous and is_writeable(out)):
            raise ValueError("out must be C-contiguous and writable")
        if np.may_share_memory(out, y) or (out is not dy and np.may_share_memory(out, dy)):
            raise ValueError("out must be dy itself or share no memory with dy and y")
