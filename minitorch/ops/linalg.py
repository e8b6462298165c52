"""Matrix products: ``matmul`` (batched and broadcast like ``np.matmul``) on the backend's GEMM,
its strict forms ``mm`` (2-d × 2-d) and ``bmm`` (3-d × 3-d, equal batches), ``outer``,
``einsum``, and ``Linear`` (x Wᵀ + b as one node, the fused form of ``nn.functional.linear``).

1-d operands of ``matmul`` are promoted as in PyTorch (a vector on the left is a row, on the
right a column) and the added dim is removed from the result. The backward is two more matmuls,
so the gradient is differentiable again. ``einsum``'s forward is ``numpy.einsum``; its backward
is one more einsum per operand (with identity matrices for repeated subscripts and ones for
subscripts summed away), so it differentiates again too.
"""
import math
import string

import numpy as np

from .. import backends
from ..backends import tape as tapes
from ..device_arrays import as_array, on_device_of
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ._helpers import as_operands, unbroadcast
from .reduction import _sum
from .registry import op


class MatMul(Function):
    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(b if ctx.needs_input_grad[0] else None,
                              a if ctx.needs_input_grad[1] else None)
        ctx.shapes = a.shape, b.shape
        return Tensor._make(backends.current().matmul(a._data, b._data))

    @staticmethod
    def backward(ctx, grad):
        b, a = ctx.saved_tensors
        if not is_grad_enabled():
            direct = _matmul_grads_on_arrays(ctx, grad, a, b)
            if direct is not None:
                return direct
        if grad.ndim > 2 and not grad._data.flags.c_contiguous:
            # A batched gradient that arrives as a strided view (through a transpose) is copied
            # once: on a view the backend would run one GEMM per batch entry, twice.
            grad = grad.contiguous()
        grad_a = unbroadcast(grad @ b.mT, ctx.shapes[0]) if ctx.needs_input_grad[0] else None
        grad_b = unbroadcast(a.mT @ grad, ctx.shapes[1]) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Linear(Function):
    """x Wᵀ + b over the last dim of x, as one node: a single GEMM over all leading dims that
    reads W transposed in place (a flag, no copy) and adds b to each tile of its output.
    Its backward is matmuls and a sum, so it differentiates again."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None)
        ctx.x_shape = x.shape
        # Row count spelled out, not -1: with zero in_features a reshape cannot infer it.
        rows = tapes.reshaped(x._data, (math.prod(x._data.shape[:-1]), x._data.shape[-1]))
        out = _affine(rows, weight._data, None if bias is None else bias._data)
        return Tensor._make(out.reshape(x._data.shape[:-1] + (weight._data.shape[0],)))

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad
        n_rows = math.prod(ctx.x_shape[:-1])
        if not is_grad_enabled() and _same_float_dtype(grad, x, weight):
            # No graph to record: the same products on the arrays, without a Function per
            # reshape and transpose (nine of them per call).
            kernels = backends.current()
            rows = tapes.reshaped(grad._data, (n_rows, grad._data.shape[-1]))
            x_rows = tapes.reshaped(x._data, (n_rows, x.shape[-1])) if need_weight else None
            grad_x = (Tensor._make(kernels.matmul(rows, weight._data).reshape(ctx.x_shape))
                      if need_x else None)
            if need_weight and need_bias and _c_column_sums(rows):  # one pass over the rows
                grad_weight, grad_bias = kernels.linear_param_grads(rows, x_rows)
                return grad_x, Tensor._make(grad_weight), Tensor._make(grad_bias)
            return (grad_x, Tensor._make(kernels.matmul(rows.T, x_rows)) if need_weight else None,
                    _bias_grad(Tensor._make(rows)) if need_bias else None)
        rows = grad.reshape(n_rows, grad.shape[-1])
        grad_x = (rows @ weight).reshape(ctx.x_shape) if need_x else None
        grad_weight = rows.mT @ x.reshape(n_rows, x.shape[-1]) if need_weight else None
        grad_bias = _bias_grad(rows) if need_bias else None
        return grad_x, grad_weight, grad_bias


class LinearReLU(Function):
    """relu(x Wᵀ + b) as one node (the feed-forward block's linear1 and its activation): the
    GEMM with the bias and the ReLU applied to each tile of its output (``matmul_bias``). Its
    backward takes the mask and the bias gradient in one pass (``bias_relu_backward``), then
    the same two GEMMs as ``Linear``: the values of
    ``relu(Linear(x, W, b))`` bit for bit, without the pre-activation array either way.
    For x, W, b numpy arrays of one float dtype, with b of shape (out_features,)."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        rows = tapes.reshaped(x._data, (math.prod(x._data.shape[:-1]), x._data.shape[-1]))
        out = _affine(rows, weight._data, bias._data, relu=True)
        result = Tensor._make(out.reshape(x._data.shape[:-1] + (weight._data.shape[0],)))
        ctx.x_shape = x.shape
        ctx.save_for_backward(x if ctx.needs_input_grad[1] else None,
                              weight if ctx.needs_input_grad[0] else None, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        x, weight, out = ctx.saved_tensors
        need_x, need_weight, need_bias = ctx.needs_input_grad
        n_rows = math.prod(ctx.x_shape[:-1])
        if is_grad_enabled():  # create_graph: relu's mask, then Linear's backward, in Tensor ops
            from .elementwise import ReLUBackward
            rows = ReLUBackward.apply(grad, out.detach()).reshape(n_rows, grad.shape[-1])
            return (((rows @ weight).reshape(ctx.x_shape) if need_x else None),
                    rows.mT @ x.reshape(n_rows, x.shape[-1]) if need_weight else None,
                    rows.sum(0) if need_bias else None)
        kernels = backends.current()
        width = grad._data.shape[-1]
        rows, bias_grad = kernels.bias_relu_backward(tapes.reshaped(grad._data, (n_rows, width)),
                                                     tapes.reshaped(out._data, (n_rows, width)))
        return (Tensor._make(kernels.matmul(rows, weight._data).reshape(ctx.x_shape))
                if need_x else None,
                Tensor._make(kernels.matmul(rows.T, tapes.reshaped(x._data, (n_rows, x.shape[-1]))))
                if need_weight else None,
                Tensor._make(bias_grad) if need_bias else None)


class FeedForwardReLU(Function):
    """linear2(relu(linear1(x))), the Transformer's feed-forward block without dropout, as one
    node: ``LinearReLU``'s forward, then linear2's GEMM and bias. The backward makes the hidden
    gradient itself (linear2's first GEMM), so it applies the ReLU mask to it in place, taking
    the first bias's gradient in the same pass: no fresh array the size of the hidden layer.
    The same kernel calls on the same values as ``LinearReLU`` then ``Linear``: bit for bit.
    For numpy arrays of one float dtype, both biases of shape (out_features,)."""

    @staticmethod
    def forward(ctx, x, weight1, bias1, weight2, bias2):
        rows = tapes.reshaped(x._data, (math.prod(x._data.shape[:-1]), x._data.shape[-1]))
        hidden = _affine(rows, weight1._data, bias1._data, relu=True)
        out = linear_arrays(hidden, weight2._data, bias2._data)
        ctx.x_shape, ctx.hidden = x.shape, hidden
        ctx.save_for_backward(x, weight1, bias1, weight2)
        return Tensor._make(out.reshape(x._data.shape[:-1] + (weight2._data.shape[0],)))

    @staticmethod
    def backward(ctx, grad):
        x, weight1, bias1, weight2 = ctx.saved_tensors
        need_x, need_w1, need_b1, need_w2, need_b2 = ctx.needs_input_grad
        n_rows, width = math.prod(ctx.x_shape[:-1]), grad.shape[-1]
        x_rows = x.reshape(n_rows, x.shape[-1])
        if is_grad_enabled():  # create_graph: the same steps in Tensor ops
            from .elementwise import ReLUBackward
            # the hidden layer again, as a function of x, W1 and b1 (W2's gradient uses it)
            hidden = LinearReLU.apply(x_rows, weight1, bias1)
            rows = grad.reshape(n_rows, width)
            d_hidden = ReLUBackward.apply(rows @ weight2, hidden)
            return ((d_hidden @ weight1).reshape(ctx.x_shape) if need_x else None,
                    d_hidden.mT @ x_rows if need_w1 else None,
                    d_hidden.sum(0) if need_b1 else None,
                    rows.mT @ hidden if need_w2 else None,
                    rows.sum(0) if need_b2 else None)
        kernels, hidden = backends.current(), ctx.hidden
        rows = tapes.reshaped(grad._data, (n_rows, width))
        if need_w2 and need_b2 and _c_column_sums(rows):  # one pass over the rows
            grad_w2, grad_b2 = map(Tensor._make, kernels.linear_param_grads(rows, hidden))
        else:
            grad_w2 = Tensor._make(kernels.matmul(rows.T, hidden)) if need_w2 else None
            grad_b2 = _bias_grad(Tensor._make(rows)) if need_b2 else None
        d_hidden = kernels.matmul(rows, weight2._data)
        d_hidden, grad_b1 = kernels.bias_relu_backward(d_hidden, hidden, out=d_hidden)
        return (Tensor._make(kernels.matmul(d_hidden, weight1._data).reshape(ctx.x_shape))
                if need_x else None,
                Tensor._make(kernels.matmul(d_hidden.T, x_rows._data)) if need_w1 else None,
                Tensor._make(grad_b1) if need_b1 else None, grad_w2, grad_b2)


def linear_arrays(x, weight, bias):
    """x Wᵀ + b on arrays (b may be None), over all leading dims of x, as ``Linear.forward``
    computes it: for the inference steps that run on arrays (cached decoding)."""
    rows = x.reshape(math.prod(x.shape[:-1]), x.shape[-1])
    return _affine(rows, weight, bias).reshape(x.shape[:-1] + (weight.shape[0],))


def _affine(rows, weight, bias, relu=False):
    """rows Wᵀ + b (b may be None), then the ReLU if ``relu``, on 2-d arrays. With a bias of
    the rows' float32/float64 dtype, one backend call (the C GEMM adds it, and applies the ReLU,
    to each tile of the product while the tile is in cache); else the GEMM, then the bias."""
    kernels = backends.current()
    if (bias is not None and rows.dtype == weight.dtype == bias.dtype
            and rows.dtype in _FUSED_BIAS_DTYPES and bias.ndim == 1):
        return kernels.matmul_bias(rows, weight.T, bias, relu)
    if rows.shape[1] == 0:  # an empty sum: x Wᵀ is zeros, the result the bias (relu'd)
        out = np.zeros((rows.shape[0], weight.shape[0]), dtype=rows.dtype)
    else:
        out = kernels.matmul(rows, weight.T)
    if relu:
        kernels.bias_relu_forward(out, bias, out=out)
    elif bias is not None:
        _add_bias_(out, bias)
    return out


_FUSED_BIAS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class LinearPair(Function):
    """(x W[:split]ᵀ + b[:split], y W[split:]ᵀ + b[split:]) as one node: two ``Linear`` s whose
    weights are the row blocks of one packed weight (cross-attention's query and key/value
    projections of ``in_proj_weight``). The slices are no nodes of the graph, so the backward
    writes each block's gradient into its rows of W's gradient, where the slices' backward
    would scatter each into zeros of W's shape and add the two: the same values, bit for bit.
    For numpy arrays of one float dtype (bias None or of shape (out_features,))."""

    @staticmethod
    def forward(ctx, x, y, weight, bias, split):
        w, b = weight._data, _data_or_none(bias)
        ctx.split, ctx.shapes = split, (x.shape, y.shape)
        ctx.save_for_backward(x if ctx.needs_input_grad[2] else None,
                              y if ctx.needs_input_grad[2] else None,
                              weight if ctx.needs_input_grad[0] or ctx.needs_input_grad[1]
                              else None)
        return (Tensor._make(linear_arrays(x._data, w[:split], None if b is None else b[:split])),
                Tensor._make(linear_arrays(y._data, w[split:], None if b is None else b[split:])))

    @staticmethod
    def backward(ctx, grad_x_out, grad_y_out):
        x, y, weight = ctx.saved_tensors
        need_x, need_y, need_weight, need_bias = ctx.needs_input_grad[:4]
        split, (x_shape, y_shape) = ctx.split, ctx.shapes
        n_x, n_y = math.prod(x_shape[:-1]), math.prod(y_shape[:-1])
        if is_grad_enabled():  # create_graph: the slices and products in Tensor ops
            from .shape import cat
            rows_x = grad_x_out.reshape(n_x, grad_x_out.shape[-1])
            rows_y = grad_y_out.reshape(n_y, grad_y_out.shape[-1])
            return ((rows_x @ weight[:split]).reshape(x_shape) if need_x else None,
                    (rows_y @ weight[split:]).reshape(y_shape) if need_y else None,
                    cat([rows_x.mT @ x.reshape(n_x, x_shape[-1]),
                         rows_y.mT @ y.reshape(n_y, y_shape[-1])]) if need_weight else None,
                    cat([rows_x.sum(0), rows_y.sum(0)]) if need_bias else None, None)
        kernels = backends.current()
        rows_x = tapes.reshaped(grad_x_out._data, (n_x, grad_x_out._data.shape[-1]))
        rows_y = tapes.reshaped(grad_y_out._data, (n_y, grad_y_out._data.shape[-1]))
        grad_x = grad_y = grad_weight = grad_bias = None
        if need_x:
            grad_x = Tensor._make(kernels.matmul(rows_x, weight._data[:split]).reshape(x_shape))
        if need_y:
            grad_y = Tensor._make(kernels.matmul(rows_y, weight._data[split:]).reshape(y_shape))
        if need_weight:
            grad_w = np.empty(weight._data.shape, weight._data.dtype)
            x_rows = tapes.reshaped(x._data, (n_x, x_shape[-1]))
            y_rows = tapes.reshaped(y._data, (n_y, y_shape[-1]))
            grad_weight = Tensor._make(grad_w)
            if need_bias and _c_column_sums(rows_x) and _c_column_sums(rows_y):
                grad_b = np.empty(weight._data.shape[:1], weight._data.dtype)
                kernels.linear_param_grads(rows_x, x_rows, out=(grad_w[:split], grad_b[:split]))
                kernels.linear_param_grads(rows_y, y_rows, out=(grad_w[split:], grad_b[split:]))
                return grad_x, grad_y, grad_weight, Tensor._make(grad_b), None
            kernels.matmul_into(rows_x.T, x_rows, out=grad_w[:split])
            kernels.matmul_into(rows_y.T, y_rows, out=grad_w[split:])
        if need_bias:
            grad_bias = Tensor._make(kernels.concatenate(
                [_bias_grad(Tensor._make(rows_x))._data, _bias_grad(Tensor._make(rows_y))._data],
                0))
        return grad_x, grad_y, grad_weight, grad_bias, None


def _data_or_none(t):
    return None if t is None else t._data


def _same_float_dtype(*tensors):
    """True if the tensors that exist (None: not saved) are numpy arrays of one float dtype."""
    dtypes = {t._data.dtype for t in tensors if t is not None}
    return (len(dtypes) == 1 and next(iter(dtypes)).kind == "f"
            and all(type(t._data) is np.ndarray for t in tensors if t is not None))


def _matmul_grads_on_arrays(ctx, grad, a, b):
    """MatMul's two gradients computed on the arrays, op for op what the Tensor path computes
    (so equal to it bit for bit) but without a Function per transpose, product and sum; for
    backward without create_graph. None where the Tensor path must run (mixed dtypes)."""
    if not _same_float_dtype(grad, a, b):
        return None
    kernels = backends.current()
    g = grad._data
    if g.ndim > 2 and not g.flags.c_contiguous:  # as in the Tensor path: one copy, not a GEMM
        g = g.copy(order="C")    # per batch entry, twice
    grad_a = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_a = Tensor._make(_unbroadcast_array(kernels.matmul(g, b._data.swapaxes(-1, -2)),
                                                 ctx.shapes[0]))
    if ctx.needs_input_grad[1]:
        grad_b = Tensor._make(_unbroadcast_array(kernels.matmul(a._data.swapaxes(-1, -2), g),
                                                 ctx.shapes[1]))
    return grad_a, grad_b


def _unbroadcast_array(array, shape):
    """_helpers.unbroadcast on an array: summed (as the Sum op sums) over the dims broadcasting
    added or stretched, back to ``shape``."""
    shape = tuple(shape)
    if array.shape == shape:
        return array
    extra = array.ndim - len(shape)
    dims = tuple(range(extra)) + tuple(
        extra + i for i, n in enumerate(shape) if n == 1 and array.shape[extra + i] != 1)
    if dims:
        array = _sum(array, dims, True, 1)
    return array.reshape(shape)


# From this many elements the bias goes in through the C arith kernel (on its threads, and on
# one thread too, as adding a broadcast row is where numpy's loop is slowest), and its gradient
# comes out of the C column sum.
_C_BIAS_MIN = 1 << 14


def _c_column_sums(data):
    """Whether the C backend's threaded column sum takes this (n, out) gradient array's sum
    over its rows: a large float32/64 CPU array, no graph being recorded (create_graph=False)."""
    return (not is_grad_enabled() and type(data) is np.ndarray and data.size >= _C_BIAS_MIN
            and data.dtype.kind == "f" and data.itemsize >= 4 and backends.backend() == "c")


def _bias_grad(rows):
    """The bias's gradient, the (n, out) gradient summed over its rows: the C column sum where
    _c_column_sums, else a Tensor sum."""
    if _c_column_sums(rows._data):
        return Tensor._make(backends.current().sum_cols(rows._data))
    return rows.sum(0)


def _add_bias_(out, bias):
    """out += bias (a row added to every row of the GEMM's fresh 2-d output), in place."""
    if (type(out) is np.ndarray and out.size >= _C_BIAS_MIN and out.dtype == bias.dtype
            and out.dtype.kind == "f" and out.itemsize >= 4 and bias.shape == out.shape[-1:]
            and bias.flags.c_contiguous and backends.backend() == "c"):
        backends.current().arith("add", out, bias, out=out)
    else:
        tapes.record(np.add, out, bias, out)  # (recorded: a captured step's replay adds it too)


@op(methods="__matmul__", reflected="__rmatmul__")
def matmul(input, other):
    if type(input) is Tensor and type(other) is Tensor:
        x, y = input._data, other._data
        if (x.dtype == y.dtype and x.dtype.kind == "f" and x.ndim >= 2 and y.ndim >= 2
                and x.shape[-1] == y.shape[-2]
                and (x.ndim == 2 or y.ndim == 2 or x.shape[:-2] == y.shape[:-2])):
            return MatMul.apply(input, other)  # the usual case, valid as it stands: skip the checks
    input, other = as_operands(input, other)
    if input.ndim == 0 or other.ndim == 0:
        raise ValueError(f"matmul: both arguments need at least 1 dim, got shapes "
                         f"{tuple(input.shape)} and {tuple(other.shape)}")
    if not input.dtype.is_floating_point:
        input, other = input.float(), other.float()
    left_vector, right_vector = input.ndim == 1, other.ndim == 1
    if left_vector:
        input = input.unsqueeze(0)
    if right_vector:
        other = other.unsqueeze(-1)
    if input.shape[-1] != other.shape[-2]:
        raise ValueError(f"matmul: shapes {tuple(input.shape)} and {tuple(other.shape)} cannot be "
                         f"multiplied ({input.shape[-1]} != {other.shape[-2]})")
    try:
        np.broadcast_shapes(tuple(input.shape[:-2]), tuple(other.shape[:-2]))
    except ValueError:
        raise ValueError(f"matmul: batch dims of shapes {tuple(input.shape)} and "
                         f"{tuple(other.shape)} do not broadcast") from None
    out = MatMul.apply(input, other)
    if left_vector:
        out = out.squeeze(-2)
    if right_vector:
        out = out.squeeze(-1)
    return out


def _check_operands(name, operands, ndim):
    """TypeError for a non-Tensor, RuntimeError (as PyTorch) for a wrong ndim or mixed dtypes."""
    for label, t in operands:
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}: {label} must be a Tensor, got {type(t).__name__}")
        if t.ndim != ndim:
            raise RuntimeError(f"{name}: {label} must be a {ndim}-d tensor, got shape "
                               f"{tuple(t.shape)}")
    (_, a), (_, b) = operands
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{name}: expected both operands to have the same dtype, got "
                           f"{a.dtype} and {b.dtype}")


def _product(a, b, out_dtype=None):
    """a @ b for operands already checked: the GEMM for floats, numpy for integers (which
    carry no gradient; PyTorch multiplies them as integers too); cast to ``out_dtype``."""
    if a.dtype.is_floating_point:
        product = MatMul.apply(a, b)
    else:
        product = Tensor._make(np.matmul(a._data, b._data))
    return product if out_dtype is None else product.to(out_dtype)


@op()
def mm(input, mat2, *, out_dtype=None):
    """The matrix product of two 2-d tensors of one dtype (no broadcasting, unlike matmul);
    ``out_dtype``: the result's dtype, if not the inputs'."""
    _check_operands("mm", (("input", input), ("mat2", mat2)), 2)
    if input.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mm: input and mat2 shapes cannot be multiplied "
                           f"({input.shape[0]}x{input.shape[1]} and "
                           f"{mat2.shape[0]}x{mat2.shape[1]})")
    return _product(input, mat2, out_dtype)


@op()
def bmm(input, mat2, *, out_dtype=None):
    """Batched matrix product of (b, n, m) and (b, m, p) tensors of one dtype: (b, n, p), with
    no broadcasting of the batch (unlike matmul); ``out_dtype`` as in ``mm``."""
    _check_operands("bmm", (("input", input), ("mat2", mat2)), 3)
    expected = (input.shape[0], input.shape[2])
    if tuple(mat2.shape[:2]) != expected:
        raise RuntimeError(f"bmm: expected the first two dims of mat2 to be {list(expected)} "
                           f"for input of shape {tuple(input.shape)}, got shape "
                           f"{tuple(mat2.shape)}")
    return _product(input, mat2, out_dtype)


@op()
def outer(input, vec2):
    """out[i, j] = input[i] · vec2[j] for two 1-d tensors (dtypes promote as in ``mul``)."""
    for label, t in (("input", input), ("vec2", vec2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"outer: {label} must be a Tensor, got {type(t).__name__}")
        if t.ndim != 1:
            raise RuntimeError(f"outer: expected 1-d argument {label}, got shape "
                               f"{tuple(t.shape)}")
    return input.reshape(-1, 1) * vec2


# ----------------------------------------------------------------------------- einsum

_SUBSCRIPTS = string.ascii_letters  # PyTorch's labels: a-z and A-Z


class Einsum(Function):
    """``numpy.einsum`` of an equation in canonical form: every operand's subscripts spelled
    out (no ``...``), an explicit output, every subscript's size equal in all operands."""

    @staticmethod
    def forward(ctx, *operands, equation):
        ctx.equation = equation
        ctx.save_for_backward(*operands)
        arrays = [t._data for t in operands]
        out = as_array(np.einsum(equation, *arrays, optimize=len(arrays) > 1), arrays[0])
        if any(np.may_share_memory(out, a) for a in arrays):  # 'ij->ji' is a numpy view
            out = out.copy()
        return Tensor._make(out)

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        inputs, output = ctx.equation.split("->")
        terms = inputs.split(",")
        spare = iter(c for c in _SUBSCRIPTS if c not in ctx.equation)
        grads = []
        for k, (term, operand) in enumerate(zip(terms, operands)):
            if not ctx.needs_input_grad[k]:
                grads.append(None)
                continue
            others = [t for j, t in enumerate(terms) if j != k]
            extra_terms, extra_operands, target = _adjoint_terms(term, operand, spare)
            reachable = set(output).union(*others, *extra_terms)
            for letter, size in dict(zip(term, operand.shape)).items():
                if letter not in reachable:  # summed away in forward: every element counts
                    extra_terms.append(letter)
                    extra_operands.append(Tensor._make(np.ones_like(grad._data, shape=(size,))))
            equation = ",".join([output] + others + extra_terms) + "->" + target
            grads.append(Einsum.apply(grad, *[o for j, o in enumerate(operands) if j != k],
                                      *extra_operands, equation=equation))
        return tuple(grads)


def _adjoint_terms(term, operand, spare):
    """For an operand whose subscripts repeat a letter (a diagonal, as in 'ii'), the gradient
    lives on that diagonal only: each repeat gets a spare letter, and an identity matrix tying
    it to the first occurrence joins the gradient's einsum. Returns (extra subscripts, their
    identity matrices, the operand's subscripts with the repeats renamed)."""
    seen, target, extra_terms, extra_operands = set(), [], [], []
    for letter, size in zip(term, operand.shape):
        if letter in seen:
            renamed = next(spare, None)
            if renamed is None:
                raise RuntimeError("einsum: too many subscripts to differentiate this equation")
            target.append(renamed)
            extra_terms.append(letter + renamed)
            extra_operands.append(Tensor._make(on_device_of(np.eye(size, dtype=operand._data.dtype),
                                                            operand._data)))
        else:
            seen.add(letter)
            target.append(letter)
    return extra_terms, extra_operands, "".join(target)


def _parse_term(term, where):
    """The letters of one operand's (or the output's) subscripts, and the position among them
    where ``...`` stands (None without one)."""
    letters, ellipsis_at, i = [], None, 0
    while i < len(term):
        if term[i] == ".":
            if term[i:i + 3] != "...":
                raise RuntimeError(f"einsum(): invalid '.' in the subscripts of {where} "
                                   f"({term!r}): an ellipsis is '...'")
            if ellipsis_at is not None:
                raise RuntimeError(f"einsum(): more than one ellipsis in the subscripts of "
                                   f"{where} ({term!r})")
            ellipsis_at, i = len(letters), i + 3
            continue
        if term[i] not in _SUBSCRIPTS:
            raise RuntimeError(f"einsum(): invalid subscript {term[i]!r} in {where} "
                               f"({term!r}): subscripts must be in [a-zA-Z]")
        letters.append(term[i])
        i += 1
    return letters, ellipsis_at


def _canonical_equation(equation, shapes):
    """``equation`` for operands of ``shapes`` with every ``...`` replaced by letters of its
    own (right-aligned across operands, as broadcasting does) and the output made explicit
    (implicit: the ellipsis dims, then the letters used once, in alphabetical order)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise RuntimeError(f"einsum(): the equation {equation!r} has subscripts for "
                           f"{len(terms)} operands, but {len(shapes)} were given")
    parsed = [_parse_term(t, f"operand {i}") for i, t in enumerate(terms)]
    n_ellipsis = 0
    for i, ((letters, at), shape) in enumerate(zip(parsed, shapes)):
        if len(letters) > len(shape) or (at is None and len(letters) != len(shape)):
            raise RuntimeError(f"einsum(): the subscripts {terms[i]!r} of operand {i} do not "
                               f"match its {len(shape)} dims (shape {shape})")
        if at is not None:
            n_ellipsis = max(n_ellipsis, len(shape) - len(letters))
    spare = [c for c in _SUBSCRIPTS if c not in equation]
    if n_ellipsis > len(spare):
        raise RuntimeError("einsum(): too many dims under '...' for the letters left")
    ellipsis = spare[:n_ellipsis]
    subscripts = []
    for (letters, at), shape in zip(parsed, shapes):
        if at is None:
            subscripts.append("".join(letters))
        else:
            covered = len(shape) - len(letters)
            subscripts.append("".join(letters[:at] + ellipsis[n_ellipsis - covered:]
                                      + letters[at:]))
    if arrow:
        letters, at = _parse_term(rhs, "the output")
        output = letters[:at] + ellipsis + letters[at:] if at is not None else letters
        for letter in letters:
            if letters.count(letter) > 1:
                raise RuntimeError(f"einsum(): output subscript {letter} appears more than once "
                                   "in the output")
            if not any(letter in s for s in subscripts):
                raise RuntimeError(f"einsum(): output subscript {letter} does not appear in the "
                                   "equation for any input operand")
    else:
        every = [c for letters, _ in parsed for c in letters]
        output = ellipsis + sorted(c for c in set(every) if every.count(c) == 1)
    return subscripts, "".join(output)


def _letter_sizes(subscripts, shapes):
    """Each letter's size: equal wherever it occurs in one operand, equal or 1 (broadcast)
    across operands."""
    sizes = {}
    for i, (term, shape) in enumerate(zip(subscripts, shapes)):
        own = {}
        for letter, n in zip(term, shape):
            if own.setdefault(letter, n) != n:
                raise RuntimeError(f"einsum(): subscript {letter} is repeated for operand {i} "
                                   f"but the sizes don't match, {own[letter]} != {n}")
        for letter, n in own.items():
            known = sizes.get(letter, 1)
            if n != 1 and known != 1 and n != known:
                raise RuntimeError(f"einsum(): subscript {letter} has size {n} for operand {i} "
                                   f"which does not broadcast with previously seen size {known}")
            sizes[letter] = n if n != 1 else sizes.get(letter, 1)
    return sizes


@op(method=False)
def einsum(equation, *operands):
    """Einstein summation, as ``torch.einsum``: ``einsum("ij,jk->ik", a, b)`` is a @ b,
    ``einsum("ii", a)`` the trace, ``einsum("b...ij,b...jk", x, y)`` a batched product.
    Operands may also come as one list. Subscripts are letters; ``...`` stands for dims that
    broadcast; dims of size 1 broadcast too. All operands must have one dtype."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): equation must be a str, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand")
    for i, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {i} must be a Tensor, got {type(t).__name__}")
        if t.dtype is not operands[0].dtype:
            raise RuntimeError(f"einsum(): operands must have one dtype: operand 0 is "
                               f"{operands[0].dtype}, operand {i} is {t.dtype}")
    shapes = [tuple(t.shape) for t in operands]
    subscripts, output = _canonical_equation(equation, shapes)
    sizes = _letter_sizes(subscripts, shapes)
    broadcast = []
    for term, t in zip(subscripts, operands):
        full = tuple(sizes[letter] for letter in term)
        broadcast.append(t if full == tuple(t.shape) else t.expand(*full))
    return Einsum.apply(*broadcast, equation=",".join(subscripts) + "->" + output)
