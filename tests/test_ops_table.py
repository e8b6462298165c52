"""The op table: every op, its numpy reference, and sample inputs; each compared and gradchecked.

One ``Op`` row per public op: the minitorch call, the numpy call that defines what it must
compute, and cases (input shapes and keyword arguments). Shapes cover 0-d, size-1, empty and
broadcast cases, and non-contiguous inputs (``T``: a transposed array; ``step``: every other
column of a wider one). Every case is compared with numpy in float32 and float64; every
differentiable case with at least one element is gradchecked in float64, and every differentiable
row is gradgradchecked on its first non-empty case. The kernel-backed rows (matmul, softmax,
log_softmax, layer_norm, rms_norm, cross_entropy, attention, kernel=True) run on every backend via
the ``backend`` fixture, and their values at every ISA level of the C backend with 1 and 2
threads. Integer and bool inputs (targets, indices, masks) are given as ``const``
arrays and are not differentiated. Every op declared in ``minitorch/ops`` (its registry) must
have a row here, or be listed in ``COVERED_ELSEWHERE`` with the test that covers it.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.ops import registry

# ----------------------------------------------------------------------------- inputs


def T(*shape):
    """A non-contiguous input: the transpose of a C-contiguous array."""
    return ("T", shape)


def step(*shape):
    """A non-contiguous input: every other element of the last dim of a wider array."""
    return ("step", shape)


def const(values, dtype=np.int64):
    """A fixed int64 (or bool) input: class targets, indices, masks; never differentiated."""
    return ("const", np.asarray(values, dtype))


def make_array(spec, rng, domain):
    kind, shape = spec if isinstance(spec, tuple) and spec and isinstance(spec[0], str) \
        else ("plain", spec)
    if kind == "const":
        return shape.copy()
    shape = tuple(shape)
    if kind == "T":
        base = rng.standard_normal(shape[::-1]).T
    elif kind == "step":
        wide = shape[:-1] + (2 * shape[-1],)
        base = rng.standard_normal(wide)[..., ::2]
    else:
        base = rng.standard_normal(shape)
    base = np.asarray(base)
    if kind == "plain":
        assert base.flags.c_contiguous
    else:
        assert not base.flags.c_contiguous or base.size <= 1
    # Keep the (possibly strided) layout: transform in place on the original memory.
    if domain == "positive":
        np.abs(base, out=base)
        base += 0.5
    elif domain == "nonzero":
        base += np.where(base >= 0, 0.5, -0.5)
    return base


@dataclass
class Op:
    name: str
    fn: object            # minitorch: fn(*tensors, **kwargs)
    ref: object           # numpy: ref(*arrays, **kwargs)
    cases: list           # [(input specs tuple, kwargs dict)]
    differentiable: bool = True
    gradgrad: bool = True    # every differentiable row is gradgradchecked unless set False
    kernel: bool = False
    domains: tuple = ()   # per input: None, "positive" or "nonzero"
    tolerance: dict = field(default_factory=dict)
    op: str = None        # the registry op this row tests (default: the row's name)

    def __post_init__(self):
        self.op = self.op or self.name


def case(*specs, **kwargs):
    return (specs, kwargs)


UNARY_SHAPES = [case(()), case((1,)), case((4,)), case((2, 3)), case((0, 3)), case(T(2, 3)),
                case(step(2, 3))]
BINARY_SHAPES = [case((), ()), case((3,), (3,)), case((2, 3), (3,)), case((2, 1), (1, 3)),
                 case((1,), (2, 3)), case((2, 3), ()), case((0, 3), (3,)), case(T(2, 3), (2, 1)),
                 case(step(2, 3), T(2, 3))]


def _erf(x):
    return np.vectorize(math.erf, otypes=[x.dtype])(x) if x.size else x.copy()


def _gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _softmax(x, dim=-1):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _logsumexp(x, dim, keepdim=False):
    if x.size == 0:  # the sum of no exponentials is 0, so the result is log(0) = -inf
        return np.log(np.exp(x).sum(axis=dim, keepdims=keepdim))
    m = x.max(axis=dim, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=dim, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=dim)


def _np_layer_norm(x, *params, shape, which="wb", eps=1e-5):
    named = dict(zip(which, params))
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axis=axes, keepdims=True) + eps)
    y = y * named["w"] if "w" in named else y
    return y + named["b"] if "b" in named else y


def _mt_layer_norm(x, *params, shape, which="wb", eps=1e-5):
    named = dict(zip(which, params))
    return F.layer_norm(x, shape, named.get("w"), named.get("b"), eps)


def _np_rms_norm(x, *weight, shape, eps=None):
    eps = np.finfo(x.dtype).eps if eps is None else eps
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    y = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
    return y * weight[0] if weight else y


def _np_cross_entropy(x, t, ignore_index=-100, label_smoothing=0.0, reduction="mean"):
    classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    rows = np.moveaxis(x, 1, -1).reshape(-1, classes) if x.ndim > 1 else x.reshape(1, -1)
    flat = t.reshape(-1)
    logp = rows - _logsumexp(rows, 1, keepdim=True)
    valid = flat != ignore_index
    picked = -logp[np.arange(flat.size), np.where(valid, flat, 0)]
    loss = np.where(valid, (1 - label_smoothing) * picked - label_smoothing * logp.mean(1), 0.0)
    if reduction == "none":
        return loss.reshape(t.shape).astype(x.dtype)
    total = loss.sum()
    # minitorch: a "mean" over targets that are all ignored is 0 (PyTorch: NaN)
    return np.asarray(total if reduction == "sum" else total / max(valid.sum(), 1), x.dtype)


def _np_attention(q, k, v, mask=None, is_causal=False, scale=None):
    scores = q @ np.swapaxes(k, -1, -2) * (1 / np.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        mask = np.tril(np.ones(scores.shape[-2:], bool))
    if mask is not None and mask.dtype == bool:  # True = takes part, as PyTorch
        scores = np.where(mask, scores, -np.inf)
    elif mask is not None:
        scores = scores + mask
    return _softmax(scores) @ v


def _mt_attention(q, k, v, mask=None, **kwargs):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, **kwargs)


def _tensor_index(index):
    return tuple(mt.tensor(i) if isinstance(i, np.ndarray) else i for i in index) \
        if isinstance(index, tuple) else (mt.tensor(index) if isinstance(index, np.ndarray)
                                          else index)


def _to_int64(a):
    return a.astype(np.int64)


def _unary(name, mt_fn, np_fn, domain=None, gradgrad=True, differentiable=True, kernel=False):
    return Op(name, mt_fn, np_fn, UNARY_SHAPES, differentiable=differentiable,
              gradgrad=gradgrad, domains=(domain,), kernel=kernel)


def _binary(name, mt_fn, np_fn, domains=(None, None), gradgrad=True, differentiable=True):
    return Op(name, mt_fn, np_fn, BINARY_SHAPES, differentiable=differentiable, gradgrad=gradgrad,
              domains=domains)


REDUCE_CASES = [case(()), case((4,)), case((2, 3)), case((2, 3), dim=1),
                case((2, 3), dim=0, keepdim=True), case((2, 3, 2), dim=(0, 2)),
                case((2, 3, 2), dim=(-1,), keepdim=True), case(T(3, 2), dim=-1),
                case((1, 3), dim=0)]
REDUCE_NONEMPTY_DIM_CASES = [c for c in REDUCE_CASES if "dim" in c[1]] + [
    case((0, 3), dim=1), case((2, 0, 3), dim=(0, 2))]


def _np_reduce(fn):
    def ref(x, dim=None, keepdim=False):
        axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
        return fn(x, axis=axis, keepdims=keepdim)
    return ref


def _max_values(a, dim, keepdim=False):
    return mt.max(a, dim, keepdim).values


def _min_values(a, dim, keepdim=False):
    return mt.min(a, dim, keepdim).values


SHAPE_OPS = [
    Op("reshape", lambda a, shape: a.reshape(shape), lambda x, shape: x.reshape(shape),
       [case((2, 3), shape=(3, 2)), case((2, 3), shape=(-1,)), case(T(2, 3), shape=(6,)),
        case((), shape=(1, 1)), case((0, 3), shape=(3, 0))]),
    Op("view", lambda a, shape: a.view(shape), lambda x, shape: x.reshape(shape),
       [case((2, 3), shape=(3, 2)), case((2, 3), shape=(1, 6)), case((4,), shape=(2, -1))]),
    Op("swapaxes", lambda a, d0, d1: mt.swapaxes(a, axis0=d0, axis1=d1),
       lambda x, d0, d1: np.swapaxes(x, d0, d1),
       [case((2, 3), d0=0, d1=1), case(T(2, 3, 4), d0=-1, d1=0)]),
    Op("transpose", lambda a, d0, d1: a.transpose(d0, d1), lambda x, d0, d1: np.swapaxes(x, d0, d1),
       [case((2, 3), d0=0, d1=1), case((2, 3, 1), d0=-1, d1=0), case(T(2, 3), d0=1, d1=0)]),
    Op("permute", lambda a, dims: a.permute(*dims), lambda x, dims: np.transpose(x, dims),
       [case((2, 3, 1), dims=(2, 0, 1)), case(step(2, 3), dims=(1, 0)), case((), dims=())]),
    Op("unsqueeze", lambda a, dim: a.unsqueeze(dim), lambda x, dim: np.expand_dims(x, dim),
       [case((2, 3), dim=0), case((2, 3), dim=-1), case((), dim=0), case(T(2, 3), dim=1)]),
    Op("squeeze", lambda a, dim=None: a.squeeze() if dim is None else a.squeeze(dim),
       lambda x, dim=None: np.squeeze(x) if dim is None else
       (np.squeeze(x, dim) if x.shape[dim] == 1 else x),
       [case((2, 1, 3)), case((2, 1, 3), dim=1), case((2, 1, 3), dim=0), case((1,)),
        case((1, 1), dim=-1)]),
    Op("expand", lambda a, shape: a.expand(*shape), lambda x, shape: np.broadcast_to(
       x, tuple(x.shape[i - len(shape) + x.ndim] if n == -1 else n for i, n in enumerate(shape))),
       [case((3,), shape=(2, 3)), case((2, 1), shape=(2, 4)), case((), shape=(3,)),
        case((2, 1), shape=(-1, 3)), case((1, 3), shape=(0, 3))]),
    Op("flatten", lambda a, **k: a.flatten(**k),
       lambda x, start_dim=0, end_dim=-1: x.reshape(
           x.shape[:start_dim] + (-1,) + x.shape[end_dim % x.ndim + 1:]) if x.ndim else
       x.reshape(1), [case((2, 3, 2)), case((2, 3, 2), start_dim=1), case(T(2, 3)), case(())]),
    Op("unflatten", lambda a, dim, sizes: a.unflatten(dim, sizes),
       lambda x, dim, sizes: x.reshape(x.shape[:dim] + sizes + x.shape[dim + 1:]),
       [case((2, 6), dim=1, sizes=(2, 3)), case(T(6, 2), dim=0, sizes=(3, -1))]),
    Op("broadcast_to", lambda a, shape: mt.broadcast_to(a, shape), np.broadcast_to,
       [case((3,), shape=(2, 3)), case((2, 1), shape=(2, 2, 4))]),
    Op("t", lambda a: a.t(), lambda x: x.T, [case((2, 3)), case((3,)), case(T(2, 3))]),
    Op("clone", lambda a: a.clone(), lambda x: x.copy(), [case((2, 3)), case(step(2, 3)),
                                                          case(())]),
    Op("narrow", lambda a, **k: a.narrow(**k),
       lambda x, dim, start, length: np.take(x, range(start, start + length), axis=dim),
       [case((4, 3), dim=0, start=1, length=2), case(T(3, 4), dim=-1, start=0, length=3)]),
    Op("unbind", lambda a, dim=0: a.unbind(dim), lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)),
       [case((3, 2)), case((2, 3), dim=1), case(T(2, 3), dim=0)]),
    Op("contiguous", lambda a: a.contiguous(), lambda x: np.ascontiguousarray(x),
       [case((2, 3)), case(T(2, 3)), case(step(2, 2))]),
    Op(".T", lambda a: a.T, lambda x: x.T, [case((2, 3)), case((2, 3, 4)), case((3,))]),
    Op(".mT", lambda a: a.mT, lambda x: np.swapaxes(x, -1, -2), [case((2, 3)), case((2, 1, 3))]),
    Op("cat", lambda *ts, dim: mt.cat(ts, dim=dim), lambda *xs, dim: np.concatenate(xs, dim),
       [case((2, 3), (1, 3), dim=0), case((2, 3), T(2, 2), dim=1), case((2, 0), (2, 2), dim=-1),
        case((3,), (0,), dim=0)]),
    Op("stack", lambda *ts, dim: mt.stack(ts, dim=dim), lambda *xs, dim: np.stack(xs, dim),
       [case((2, 3), (2, 3), dim=0), case((3,), (3,), dim=1), case((), (), dim=0)]),
    Op("split", lambda a, size, dim: a.split(size, dim),
       lambda x, size, dim: tuple(np.split(x, np.cumsum(size)[:-1] if isinstance(size, list)
                                           else range(size, x.shape[dim], size), axis=dim)),
       [case((5, 2), size=2, dim=0), case((2, 5), size=[1, 4], dim=1), case(T(3, 4), size=3,
                                                                             dim=1)]),
    Op("chunk", lambda a, chunks, dim: a.chunk(chunks, dim),
       lambda x, chunks, dim: tuple(np.split(x, range(-(-x.shape[dim] // chunks), x.shape[dim],
                                                      -(-x.shape[dim] // chunks)), axis=dim)),
       [case((5, 2), chunks=2, dim=0), case((2, 6), chunks=3, dim=-1)]),
    Op("getitem", lambda a, index: a[_tensor_index(index)], lambda x, index: x[index],
       [case((4,), index=2), case((4, 3), index=(slice(1, 4, 2), -1)),
        case((2, 3, 4), index=(Ellipsis, None, 1)), case((4, 3), index=np.array([0, 2, 0])),
        case((4, 3), index=(np.array([[1], [3]]), np.array([0, 2]))),
        case((2, 3), index=np.array([[True, False, True], [False, False, True]])),
        case(T(3, 4), index=(slice(None), np.array([1, 1]))),
        case((3, 2), index=np.array([], dtype=np.int64)), case((), index=None)]),
    Op("gather", lambda a, dim, index: a.gather(dim, mt.tensor(index)),
       lambda x, dim, index: np.take_along_axis(
           x[tuple(slice(0, n) if k != dim % x.ndim else slice(None)
                   for k, n in enumerate(index.shape))], index, dim),
       [case((3, 4), dim=1, index=np.array([[0, 0], [3, 1], [2, 2]])),
        case((3, 2), dim=0, index=np.array([[2, 0], [2, 2]])),
        case(T(3, 2), dim=-1, index=np.array([[1], [1], [0]])),
        case((3, 4), dim=1, index=np.array([[-1, 0], [-4, 3]])),
        case((2, 5, 3), dim=1, index=np.array([[[4, 0], [4, 4], [1, 2], [0, 0]]] * 2)),
        case(T(4, 5), dim=0, index=np.zeros((0, 2), np.int64))]),
    Op("index_select", lambda a, dim, index: a.index_select(dim, mt.tensor(index)),
       lambda x, dim, index: np.take(x, index, axis=dim),
       [case((4, 3), dim=0, index=np.array([3, 0, 3])), case((2, 3), dim=1,
                                                             index=np.array([2])),
        case((2, 3), dim=1, index=np.array([], dtype=np.int64))]),
    Op("flip", lambda a, dims: a.flip(dims), lambda x, dims: np.flip(x, dims),
       [case((2, 3), dims=(0,)), case((2, 3), dims=(0, 1))]),
    Op("repeat", lambda a, sizes: a.repeat(*sizes), lambda x, sizes: np.tile(x, sizes),
       [case((2, 3), sizes=(2, 1)), case((3,), sizes=(2, 2))]),
    Op("tril", lambda a, **k: a.tril(**k), lambda x, diagonal=0: np.tril(x, diagonal),
       [case((3, 3)), case((2, 3, 4), diagonal=1)]),
    Op("triu", lambda a, **k: a.triu(**k), lambda x, diagonal=0: np.triu(x, diagonal),
       [case((3, 3)), case((3, 2), diagonal=-1)]),
]


# ----------------------------------------------------------------------------- sorting, scans,
# scatter, tiling, rounding, closeness: numpy references


def _np_order(x, dim=-1, descending=False):
    """Stable sort order along ``dim`` (descending: stable too, ties in input order)."""
    if x.ndim == 0:
        return np.zeros((), np.int64)
    if descending:  # the inputs here have no NaN, so negating keeps a stable order
        return np.argsort(-x, axis=dim, kind="stable")
    return np.argsort(x, axis=dim, kind="stable")


def _np_sort(x, dim=-1, descending=False):
    order = _np_order(x, dim, descending)
    return (x.copy(), order) if x.ndim == 0 else (np.take_along_axis(x, order, dim), order)


def _np_topk(x, k, dim=-1, largest=True):
    values, order = _np_sort(x, dim, descending=largest)
    if x.ndim == 0:
        return values, order
    pick = (slice(None),) * (dim % x.ndim) + (slice(0, k),)
    return values[pick], order[pick]


def _np_unique(x, return_inverse=False, return_counts=False, dim=None):
    out, inverse, counts = np.unique(x.reshape(-1) if dim is None else x, return_inverse=True,
                                     return_counts=True, axis=dim)
    results = [out]
    if return_inverse:
        results.append(inverse.reshape(x.shape if dim is None else -1))
    if return_counts:
        results.append(counts)
    return tuple(results)


def _np_nonzero(x, as_tuple=False):
    if as_tuple:
        return np.nonzero(x.reshape(-1) if x.ndim == 0 else x)
    return np.zeros((1 if x else 0, 0), np.int64) if x.ndim == 0 else np.argwhere(x)


def _np_masked_select(x, m):
    shape = np.broadcast_shapes(x.shape, m.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(m > 0, shape)]


def _np_scan(fn):
    def ref(x, dim):
        return x.copy() if x.ndim == 0 else fn(x, axis=dim)
    return ref


def _along(index, dim):
    grids = list(np.indices(index.shape, sparse=True))
    grids[dim] = index
    return tuple(grids)


def _np_scatter(x, src, index, dim, reduce=None):
    out = x.copy().reshape(x.shape or (1,))
    index = index.reshape(index.shape or (1,))
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src.reshape(src.shape or (1,))
    src = src[tuple(slice(0, n) for n in index.shape)]
    if reduce is None:
        out[_along(index, dim)] = src
    else:
        np.add.at(out, _along(index, dim), src)
    return out.reshape(x.shape)


def _np_index_fill(x, index, dim, value=-2.0):
    out = x.copy().reshape(x.shape or (1,))  # a 0-d input counts as 1-d
    out[(slice(None),) * dim + (index,)] = value
    return out.reshape(x.shape)


def _np_index_add(x, src, index, dim, alpha=1):
    out = x.copy().reshape(x.shape or (1,))
    np.add.at(out, (slice(None),) * dim + (index.reshape(-1),), alpha * src.reshape(
        src.shape or (1,)))
    return out.reshape(x.shape)


def _np_index_put(x, values, *indices, accumulate=False):
    out = x.copy()
    if accumulate:
        index = tuple(p for i in indices for p in (np.nonzero(i) if i.dtype == bool else (i,)))
        np.add.at(out, index, np.broadcast_to(values, out[index].shape))
    else:
        out[indices] = values
    return out


def _mt_index_add(a, src, index, dim, alpha=1):
    return a.index_add(dim, index, src, alpha=alpha)


def _mt_index_put(a, values, *indices, accumulate=False):
    return a.index_put(indices, values, accumulate=accumulate)


def _as_repeats(repeats):
    return mt.tensor(repeats) if isinstance(repeats, np.ndarray) else repeats


def _np_round(x, decimals=0):
    scale = x.dtype.type(10.0 ** abs(decimals))
    if decimals == 0:
        return np.rint(x)
    return np.rint(x * scale) / scale if decimals > 0 else np.rint(x / scale) * scale


def _np_einsum(*xs, equation):
    """np.einsum, and PyTorch's reading of an output without the inputs' '...': those dims are
    summed (numpy refuses such an equation)."""
    inputs, arrow, output = equation.partition("->")
    if arrow and "..." in inputs and "..." not in output:
        full = np.einsum(f"{inputs}->...{output}", *xs)
        return full.sum(axis=tuple(range(full.ndim - len(output))))
    return np.einsum(equation, *xs)


def _np_closeness(x, y):
    return (np.isclose(x, y), np.isclose(x, x + y * 1e-7), np.isclose(x, x + y * 1e-3, rtol=1e-2))


def _mt_closeness(a, b):
    return (mt.isclose(a, b), mt.isclose(a, a + b * 1e-7), a.isclose(a + b * 1e-3, rtol=1e-2))


SORTING_OPS = [
    Op("sort", lambda a, **k: a.sort(**k), _np_sort,
       [case((4,)), case((2, 3), dim=0), case(T(3, 4), descending=True), case(step(2, 3)),
        case((0, 3), dim=1), case(()), case((2, 0), dim=0, descending=True)]),
    Op("argsort", lambda a, **k: mt.argsort(a, **k), _np_order,
       [case((2, 3)), case(T(3, 2), dim=0, descending=True), case(())], differentiable=False),
    Op("topk", lambda a, k, **kw: a.topk(k, **kw), _np_topk,
       [case((5,), k=2), case((3, 4), k=3, dim=0), case(T(3, 4), k=1, largest=False),
        case((2, 3), k=0), case((), k=1), case(step(2, 4), k=2, dim=-1), case((0, 2), k=0)]),
    Op("unique", lambda a, **k: mt.unique(a, **k), _np_unique,
       [case((2, 3)), case(const([[3, 1], [2, 3]]), return_inverse=True, return_counts=True),
        case(const([[1, 2], [1, 2], [0, 5]]), dim=0, return_inverse=True),
        case(const([3, 3, 1]), return_counts=True), case(const(7), return_inverse=True),
        case(const([], np.int64), return_counts=True)], differentiable=False),
    Op("nonzero", lambda a, **k: a.nonzero(**k), _np_nonzero,
       [case(const([[0, 1, 0], [2, 0, 3]])), case(const([[0, 1, 0], [2, 0, 3]]), as_tuple=True),
        case(const(0)), case(const(5)), case(const(5), as_tuple=True), case((2, 3)),
        case(const(np.zeros((0, 2), bool), bool))], differentiable=False),
    Op("masked_select", lambda a, m: a.masked_select(m > 0), _np_masked_select,
       [case((2, 3), (2, 3)), case((3,), (2, 3)), case(T(2, 3), (2, 1)), case((), ()),
        case((0, 3), (3,)), case(step(2, 3), ())]),
]

SCAN_OPS = [
    Op("cumsum", lambda a, dim: a.cumsum(dim), _np_scan(np.cumsum),
       [case((4,), dim=0), case((2, 3), dim=1), case(T(3, 2), dim=0), case(step(2, 3), dim=-1),
        case((), dim=0), case((0, 3), dim=0)]),
    Op("cumprod", lambda a, dim: mt.cumprod(a, dim), _np_scan(np.cumprod),
       [case((4,), dim=0), case((2, 3), dim=1), case(T(3, 2), dim=0), case(step(2, 3), dim=-1),
        case((), dim=0), case((0, 3), dim=1),
        case(const([[2.0, 0.0, 3.0, 0.0, 4.0], [0.0, 1.5, 2.0, -1.0, 0.5]], np.float64), dim=1),
        case(const([[0.0, 2.0], [3.0, 0.0], [0.5, 4.0]], np.float64), dim=0)]),
]

# Unique indices wherever a value is written (not added): with a place written twice, one
# value lands and both get its gradient (as in PyTorch), which finite differences do not see.
SCATTER_OPS = [
    Op("scatter", lambda a, s, i, dim: mt.scatter(a, dim, i, s), _np_scatter,
       [case((3, 4), (2, 4), const([[0, 1, 2, 0], [2, 0, 1, 1]]), dim=0),
        case((3, 4), (3, 2), const([[3, 0], [1, 2], [0, 1]]), dim=1),
        case(T(3, 4), step(2, 4), const([[2, 2, 0, 1], [0, 1, 2, 0]]), dim=0),
        case((3, 4), (3, 5), const([[1], [0], [2]]), dim=0),
        case((), (), const(0), dim=0), case((2, 3), (0, 3), const(np.zeros((0, 3))), dim=0)]),
    Op("scatter_value", lambda a, i, dim: a.scatter(dim, i, -1.5),
       lambda x, i, dim: _np_scatter(x, -1.5, i, dim),
       [case((3, 4), const([[0, 1, 2, 0]]), dim=0), case(T(2, 3), const([[2], [0]]), dim=1)],
       op="scatter"),
    Op("scatter_reduce_add", lambda a, s, i, dim: a.scatter(dim, i, s, reduce="add"),
       lambda x, s, i, dim: _np_scatter(x, s, i, dim, reduce="add"),
       [case((3, 4), (2, 4), const([[0, 0, 2, 0], [0, 0, 1, 0]]), dim=0)], op="scatter"),
    Op("scatter_add", lambda a, s, i, dim: a.scatter_add(dim, i, s),
       lambda x, s, i, dim: _np_scatter(x, s, i, dim, reduce="add"),
       [case((3, 4), (2, 4), const([[0, 0, 2, 0], [0, 0, 1, 0]]), dim=0),
        case(step(2, 3), T(2, 4), const([[2, 2], [0, 2]]), dim=1),
        case((), (1,), const([0]), dim=0)]),
    Op("index_fill", lambda a, i, dim: a.index_fill(dim, i, -2.0), _np_index_fill,
       [case((3, 4), const([0, 2]), dim=0), case(T(3, 4), const([-1, 1, -1]), dim=1),
        case((2, 3), const(1), dim=1), case((), const([0]), dim=0),
        case((2, 3), const([], np.int64), dim=0)]),
    Op("index_fill_tensor_value", lambda a, v, i, dim: mt.index_fill(a, dim, i, v),
       lambda x, v, i, dim: _np_index_fill(x, i, dim, v),
       [case((3, 4), (), const([0, 2]), dim=1), case(step(2, 3), (), const([1]), dim=0)],
       op="index_fill"),
    Op("index_add", _mt_index_add, _np_index_add,
       [case((3, 4), (2, 4), const([2, 0]), dim=0), case((3, 4), (3, 3), const([1, 1, 3]), dim=1,
                                                         alpha=2.0),
        case(T(3, 4), step(3, 2), const([0, 0]), dim=1), case((), (), const(0), dim=0),
        case((2, 3), (2, 0), const([], np.int64), dim=1)]),
    Op("index_put", _mt_index_put, _np_index_put,
       [case((3, 4), (2,), const([0, 2]), const([1, 3])),
        case((3, 4), (4,), const([2, 0])), case(T(3, 4), (), const([[1], [2]]), const([0, 3])),
        case((2, 3), (3,), const([[True, False, True], [False, False, True]], bool)),
        case((3, 4), (3,), const([0, 2, 0]), const([1, 1, 1]), accumulate=True),
        case((3, 2), (2,), const([True, False, True], bool), accumulate=True)]),
]

TILING_OPS = [
    Op("roll", lambda a, **k: a.roll(**k),
       lambda x, shifts, dims=None: np.roll(x, shifts, dims) if x.ndim else x.copy(),
       [case((5,), shifts=2), case((2, 3), shifts=(1, -1), dims=(0, 1)),
        case(T(3, 4), shifts=-1, dims=1), case((2, 3), shifts=4), case((), shifts=1),
        case((0, 3), shifts=1, dims=0), case(step(2, 3), shifts=(2, 1), dims=(1, 1))]),
    Op("repeat_interleave", lambda a, repeats, **k: a.repeat_interleave(_as_repeats(repeats), **k),
       lambda x, repeats, dim=None: np.repeat(x, repeats, axis=dim),
       [case((3,), repeats=2), case((2, 3), repeats=2, dim=0),
        case(T(2, 3), repeats=np.array([1, 0, 2]), dim=1), case((2, 3), repeats=np.array([3])),
        case((), repeats=3), case((0, 2), repeats=2, dim=0),
        case(step(2, 3), repeats=np.array([2, 1]), dim=0)]),
    Op("tile", lambda a, dims: a.tile(dims), lambda x, dims: np.tile(x, dims),
       [case((2, 3), dims=(2,)), case((3,), dims=(2, 2)), case(T(2, 3), dims=(1, 2)),
        case((), dims=(2,)), case((0, 3), dims=(2, 1)), case((2, 3), dims=())]),
    Op("diag", lambda a, **k: a.diag(**k), lambda x, diagonal=0: np.diag(x, diagonal),
       [case((3,)), case((3,), diagonal=1), case((4,), diagonal=-2), case((2, 3)),
        case(T(3, 2), diagonal=-1), case((2, 3), diagonal=5), case((0,)), case(step(3, 3))]),
]

LINALG_OPS = [
    Op("outer", lambda a, b: a.outer(b), np.outer,
       [case((3,), (2,)), case(step(3), step(2)), case((0,), (2,)), case((1,), (1,))]),
    *[Op(f"einsum_{name}", lambda *ts, equation: mt.einsum(equation, *ts),
         _np_einsum, cases, op="einsum")
      for name, cases in [
          ("trace", [case((3, 3), equation="ii"), case(T(3, 3), equation="ii->i"),
                     case((3, 3, 2), equation="iij->ij"), case((0, 0), equation="ii")]),
          ("matmul", [case((2, 3), (3, 4), equation="ij,jk->ik"),
                      case(T(2, 3), step(3, 4), equation="ij,jk"),
                      case((2, 2, 3), (2, 3, 4), equation="bij,bjk->bik"),
                      case((2, 0), (0, 3), equation="ij,jk")]),
          ("ellipsis", [case((2, 2, 3), (3, 4), equation="...ij,...jk"),
                        case((2, 5, 3), (2, 3), equation="b...i,bi->b..."),
                        case((2, 3, 4), equation="i...->..."),
                        case((2, 3, 4), equation="...i->i")]),
          ("broadcast", [case((1, 3), (2, 3), equation="ij,ij->ij"),
                         case((3,), (2,), equation="i,j->ij"), case((), (3,), equation=",i->i"),
                         case((3,), (3,), (3,), equation="i,i,i->"),
                         case((2, 3), equation="ij->ji"), case((2, 3), equation="ij->")]),
      ]],
]

ROUNDING_OPS = [
    *[_unary(name, getattr(mt, name), getattr(np, name)) for name in ("floor", "ceil", "trunc")],
    _unary("round", mt.round, np.rint),
    Op("round_decimals", lambda a, decimals: a.round(decimals=decimals), _np_round,
       [case((2, 3), decimals=2), case(T(2, 3), decimals=-1), case((), decimals=1),
        case((0, 2), decimals=3)], op="round"),
    _binary("remainder", mt.remainder, np.remainder, domains=(None, "nonzero")),
    _binary("fmod", lambda a, b: a.fmod(b), np.fmod, domains=(None, "nonzero")),
    Op("mod_operators", lambda a, b: (a % b, 2.5 % b, a % 0.75), lambda x, y: (
       np.remainder(x, y), np.remainder(2.5, y).astype(y.dtype), np.remainder(x, 0.75)),
       [case((2, 3), (3,)), case(T(2, 2), ())], domains=(None, "nonzero"), op="remainder"),
]

CLOSENESS_OPS = [
    Op("isclose", _mt_closeness, _np_closeness, BINARY_SHAPES, differentiable=False),
    Op("allclose", lambda a, b: mt.tensor([mt.allclose(a, b), mt.allclose(a, a + b * 1e-7),
                                           a.allclose(a + b * 1e-3, rtol=1e-2)]),
       lambda x, y: np.array([np.allclose(x, y), np.allclose(x, x + y * 1e-7),
                              np.allclose(x, x + y * 1e-3, rtol=1e-2)]),
       BINARY_SHAPES, differentiable=False),
]


# ----------------------------------------------------------------------------- more maths

def _np_logit(x):
    return np.log(x / (1 - x))


MATH_OPS = [
    _unary("log1p", mt.log1p, np.log1p, domain="positive"),
    _unary("expm1", mt.expm1, np.expm1),
    _unary("log2", mt.log2, np.log2, domain="positive"),
    _unary("log10", mt.log10, np.log10, domain="positive"),
    _unary("exp2", mt.exp2, np.exp2),
    _unary("reciprocal", mt.reciprocal, np.reciprocal, domain="nonzero"),
    _unary("tan", lambda a: mt.tan(a * 0.5), lambda x: np.tan(x * 0.5)),
    _unary("sinh", mt.sinh, np.sinh),
    _unary("cosh", mt.cosh, np.cosh),
    _unary("asin", lambda a: mt.asin(mt.tanh(a) * 0.9), lambda x: np.arcsin(np.tanh(x) * 0.9)),
    _unary("acos", lambda a: mt.acos(mt.tanh(a) * 0.9), lambda x: np.arccos(np.tanh(x) * 0.9)),
    _unary("atan", mt.atan, np.arctan),
    _unary("frac", mt.frac, lambda x: x - np.trunc(x)),
    _unary("logit", lambda a: mt.logit(mt.sigmoid(a)), lambda x: _np_logit(_sigmoid(x))),
    Op("logit_eps", lambda a: mt.logit(mt.sigmoid(a * 4), eps=0.1),
       lambda x: _np_logit(np.clip(_sigmoid(x * 4), 0.1, 0.9)), [case((2, 3)), case(T(3, 2))],
       op="logit"),
    Op("nan_to_num", lambda a, **k: mt.nan_to_num(mt.log(a) * a, **k),
       lambda x, **k: np.nan_to_num(np.log(x) * x, **k),
       [case((2, 3)), case(T(2, 3), nan=1.5), case((0, 3))], domains=("positive",)),
    _binary("atan2", mt.atan2, np.arctan2),
    _binary("hypot", mt.hypot, np.hypot, domains=("nonzero", "nonzero")),
    _binary("logaddexp", mt.logaddexp, np.logaddexp),
    Op("lerp", mt.lerp, lambda a, b, w: a + w * (b - a),
       [case((2, 3), (2, 3), (2, 3)), case((2, 3), (3,), ()), case(T(2, 3), (2, 1), step(2, 3)),
        case((0, 3), (3,), (1,))]),
    Op("lerp_scalar", lambda a, b: mt.lerp(a, b, 0.25), lambda a, b: a + 0.25 * (b - a),
       [case((2, 3), (3,))], op="lerp"),
    Op("addcmul", lambda a, b, c: mt.addcmul(a, b, c, value=0.5), lambda a, b, c: a + 0.5 * b * c,
       [case((2, 3), (2, 3), (2, 3)), case((3,), (2, 1), (2, 3)), case(T(2, 3), (), step(2, 3))]),
    Op("addcdiv", lambda a, b, c: a.addcdiv(b, c, value=-2), lambda a, b, c: a - 2 * b / c,
       [case((2, 3), (2, 3), (2, 3)), case((3,), (2, 1), (2, 3)), case(T(2, 3), (), step(2, 3))],
       domains=(None, None, "nonzero")),
]


def _np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def _np_hardsigmoid(x):
    return np.clip(x + 3, 0, 6) / 6


ACTIVATION_OPS = [
    Op("hardtanh", lambda a, **k: F.hardtanh(a, **k), lambda x, min_val=-1.0, max_val=1.0:
       np.clip(x, min_val, max_val), UNARY_SHAPES + [case((2, 3), min_val=-0.5, max_val=2.0)]),
    Op("relu6", lambda a: F.relu6(a * 4), lambda x: np.clip(x * 4, 0, 6), UNARY_SHAPES,
       domains=("nonzero",)),
    Op("leaky_relu", lambda a, **k: F.leaky_relu(a, **k),
       lambda x, negative_slope=0.01: np.where(x > 0, x, x * negative_slope),
       UNARY_SHAPES + [case((2, 3), negative_slope=0.2)], domains=("nonzero",)),
    Op("elu", lambda a, **k: F.elu(a, **k), _np_elu,
       UNARY_SHAPES + [case((2, 3), alpha=0.5)], domains=("nonzero",)),
    Op("selu", F.selu, lambda x: 1.0507009873554804934193349852946 * _np_elu(
       x, 1.6732632423543772848170429916717), UNARY_SHAPES, domains=("nonzero",)),
    Op("celu", lambda a, **k: F.celu(a, **k),
       lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0) / alpha)),
       UNARY_SHAPES + [case((2, 3), alpha=2.0)], domains=("nonzero",)),
    _unary("softsign", F.softsign, lambda x: x / (1 + np.abs(x)), domain="nonzero"),
    Op("hardsigmoid", lambda a: F.hardsigmoid(a * 4), lambda x: _np_hardsigmoid(x * 4),
       UNARY_SHAPES, gradgrad=False),
    Op("hardswish", lambda a: F.hardswish(a * 4), lambda x: x * 4 * _np_hardsigmoid(x * 4),
       UNARY_SHAPES, gradgrad=False),
    _unary("logsigmoid", F.logsigmoid, lambda x: -np.logaddexp(0, -x)),
    _unary("tanhshrink", F.tanhshrink, lambda x: x - np.tanh(x)),
    Op("softshrink", lambda a, **k: F.softshrink(a * 2, **k), lambda x, lambd=0.5: np.where(
       x * 2 > lambd, x * 2 - lambd, np.where(x * 2 < -lambd, x * 2 + lambd, 0)),
       UNARY_SHAPES + [case((2, 3), lambd=1.0)]),
    Op("hardshrink", lambda a, **k: F.hardshrink(a * 2, **k),
       lambda x, lambd=0.5: np.where(np.abs(x * 2) > lambd, x * 2, 0),
       UNARY_SHAPES + [case((2, 3), lambd=1.0)]),
    Op("threshold", lambda a: F.threshold(a, 0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0),
       UNARY_SHAPES),
    Op("glu", lambda a, **k: F.glu(a, **k), lambda x, dim=-1: np.split(x, 2, dim)[0] * _sigmoid(
       np.split(x, 2, dim)[1]), [case((2, 4)), case((4, 3), dim=0), case(T(2, 6)),
                                 case((0, 2))]),
    Op("softmin", lambda a, **k: F.softmin(a, **k), lambda x, dim: _softmax(-x, dim),
       [case((2, 3), dim=1), case(T(3, 2), dim=0), case((4,), dim=0)]),
]


def _np_norm(x, p="fro", dim=None, keepdim=False):
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    a = np.abs(x)
    if p in ("fro", 2):
        return np.sqrt((a * a).sum(axis=axis, keepdims=keepdim))
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdim)
    if p == -math.inf:
        return a.min(axis=axis, keepdims=keepdim)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdim).astype(x.dtype)
    return (a ** p).sum(axis=axis, keepdims=keepdim) ** (1 / p)


def _np_cosine(x1, x2, dim=1, eps=1e-8):
    x1, x2 = np.broadcast_arrays(x1, x2)  # broadcast before the norms, as PyTorch
    n1 = np.maximum(np.sqrt((x1 * x1).sum(dim, keepdims=True)), eps)
    n2 = np.maximum(np.sqrt((x2 * x2).sum(dim, keepdims=True)), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


NORM_OPS = [
    Op("prod", lambda a, **k: mt.prod(a, **k), lambda x, dim=None, keepdim=False: np.prod(
       x, axis=dim, keepdims=keepdim), [case(()), case((4,)), case((2, 3)), case((2, 3), dim=1),
                                        case(T(3, 2), dim=0, keepdim=True), case((2, 0), dim=1),
                                        case((0, 3)), case((3, 1), dim=-1)]),
    Op("prod_with_zeros", lambda a: mt.prod(a * mt.tensor([1.0, 0.0, 1.0, 0.0]).to(a.dtype), 1),
       lambda x: np.prod(x * np.array([1.0, 0.0, 1.0, 0.0]), 1),
       [case((2, 4)), case(step(3, 4))], op="prod"),
    Op("norm", lambda a, **k: a.norm(**k), _np_norm,
       [case(()), case((4,)), case((2, 3)), case((2, 3), dim=1), case(T(3, 2), p=1, dim=0),
        case((2, 3), p=3, dim=(0, 1), keepdim=True), case((2, 3), p=math.inf, dim=1),
        case((2, 3), p=-math.inf), case((2, 3), p=0.5, dim=-1), case((0, 3), dim=1),
        case(step(2, 3), p="fro", dim=(0, 1))], domains=("nonzero",)),
    Op("norm_of_zeros", lambda a: mt.norm(a * 0, dim=1), lambda x: np.zeros(x.shape[0]),
       [case((2, 3))], op="norm"),
    Op("count_nonzero", lambda a, **k: mt.count_nonzero(a > 0.3, **k),
       lambda x, dim=None: np.count_nonzero(x > 0.3, axis=dim),
       [case((2, 3)), case((2, 3), dim=1), case(T(2, 3, 2), dim=(0, 2)), case(())],
       differentiable=False),
    Op("cosine_similarity", lambda a, b, **k: F.cosine_similarity(a, b, **k), _np_cosine,
       [case((2, 3), (2, 3)), case((4, 3), (3,), dim=0), case(T(2, 5), step(2, 5), dim=-1)]),
    Op("pairwise_distance", lambda a, b, **k: F.pairwise_distance(a, b, **k),
       lambda x, y, p=2.0, keepdim=False: _np_norm(x - y + 1e-6, p, -1, keepdim),
       [case((2, 3), (2, 3)), case((4, 3), (3,), p=1.0, keepdim=True), case(T(2, 5), (2, 5))]),
]


# ----------------------------------------------------------------------------- nn.functional

def _np_softplus(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.logaddexp(0, beta * x) / beta)


def _np_pad(x, pad, mode="constant", value=None):
    """numpy's pad modes are PyTorch's under other names; negative amounts crop first."""
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        dim, left, right = x.ndim - 1 - i, pad[2 * i], pad[2 * i + 1]
        x = np.take(x, range(max(-left, 0), x.shape[dim] - max(-right, 0)), axis=dim)
        widths[dim] = (max(left, 0), max(right, 0))
    if not widths:  # a 0-d input and no padding
        return x.copy()
    if mode == "constant":
        return np.pad(x, widths, constant_values=0 if value is None else value)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge",
                                   "circular": "wrap"}[mode])


def _np_reduced(loss, reduction="mean"):
    return loss if reduction == "none" else (loss.sum() if reduction == "sum" else loss.mean())


def _loss_row(name, fn, per_element, cases, weighted_mean="by weight", **options):
    """A regression loss: ``fn(input, target, [weight], **kwargs)`` against the numpy
    ``per_element(d, **kwargs)`` of d = input − target, weighted and reduced as PyTorch."""
    def mt_fn(x, t, *weight, **k):
        return fn(x, t, weight=weight[0] if weight else None, **k)

    def ref(x, t, *weight, reduction="mean", **k):
        loss = per_element(x - t, **k)
        if weight:
            loss = loss * weight[0]
            if reduction == "mean" and weighted_mean == "by weight":
                return loss.sum() / weight[0].sum()
        return _np_reduced(loss, reduction)
    return Op(name, mt_fn, ref, cases, **options)


def _np_kl_div(x, t, reduction="mean", log_target=False):
    loss = np.exp(t) * (t - x) if log_target else t * np.log(t) - t * x
    if reduction == "batchmean":
        return loss.sum() / x.shape[0]
    return _np_reduced(loss, reduction)


def _np_bce(p, t, *weight, reduction="mean"):
    loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))
    return _np_reduced(loss * weight[0] if weight else loss, reduction)


def _np_bce_logits(x, t, *weights, reduction="mean", which=""):
    named = dict(zip(which, weights))
    log_weight = 1 + (named["p"] - 1) * t if "p" in named else 1.0
    loss = (1 - t) * x + log_weight * np.logaddexp(0, -x)
    return _np_reduced(loss * named["w"] if "w" in named else loss, reduction)


def _mt_bce_logits(x, t, *weights, which="", **kwargs):
    named = dict(zip(which, weights))
    return F.binary_cross_entropy_with_logits(x, mt.sigmoid(t), named.get("w"),
                                              pos_weight=named.get("p"), **kwargs)


LOSS_CASES = [case((2, 3), (2, 3)), case((4,), (4,), reduction="sum"),
              case(T(2, 3), step(2, 3), reduction="none"), case((), ()),
              case((2, 3), (2, 3), (2, 3)), case((3, 2), (3, 2), (3, 2), reduction="sum"),
              case((0, 3), (0, 3), reduction="sum")]  # (the mean of none: test_nn_losses.py)
BINARY_LOSS_CASES = [case((2, 3), (2, 3)), case(T(2, 3), step(2, 3), reduction="none"),
                     case((4,), (4,), (4,), reduction="sum"), case((2, 3), (2, 3), (3,)),
                     case((), ()), case((0, 2), (0, 2), reduction="sum")]

NN_OPS = [
    _unary("mish", F.mish, lambda x: x * np.tanh(_np_softplus(x))),
    Op("softplus", lambda a, **k: F.softplus(a, **k), _np_softplus,
       UNARY_SHAPES + [case((2, 3), beta=2.0, threshold=1.0), case(T(3, 2), beta=0.5)],
       kernel=True),
    Op("pad", lambda a, **k: F.pad(a, **k), _np_pad,
       [case((2, 3), pad=(1, 2)), case((2, 3), pad=(-1, 2, 1, 0), value=1.5),
        case(T(2, 3), pad=(2, 1), mode="reflect"), case(step(2, 4), pad=(3, 1), mode="replicate"),
        case((2, 3, 4), pad=(1, 3, 2, 1), mode="circular"),
        case((1, 2, 3, 3), pad=(2, 0, 1, 2), mode="reflect"),
        case((3,), pad=(0, 2), value=-1.0), case((0, 3), pad=(1, 1)), case((), pad=())]),
    _loss_row("mse_loss", F.mse_loss, np.square, LOSS_CASES),
    _loss_row("l1_loss", F.l1_loss, np.abs, LOSS_CASES),
    _loss_row("huber_loss", F.huber_loss,
              lambda d, delta=1.0: np.where(np.abs(d) < delta, 0.5 * d * d,
                                            delta * (np.abs(d) - 0.5 * delta)),
              LOSS_CASES + [case((2, 3), (2, 3), delta=0.3), case((2, 3), (2, 3), (2, 3),
                                                                  delta=0.5)],
              weighted_mean="by count"),
    _loss_row("smooth_l1_loss", lambda x, t, weight=None, **k: F.smooth_l1_loss(x, t, **k),
              lambda d, beta=1.0: np.abs(d) if beta == 0 else np.where(
                  np.abs(d) < beta, 0.5 * d * d / beta, np.abs(d) - 0.5 * beta),
              [c for c in LOSS_CASES if len(c[0]) == 2] + [case((2, 3), (2, 3), beta=0.4),
                                                           case((4,), (4,), beta=0.0)]),
    Op("kl_div", lambda x, t, **k: F.kl_div(x, t, **k), _np_kl_div,
       [case((2, 3), (2, 3), reduction="batchmean"), case((4,), (4,), reduction="sum"),
        case(T(2, 3), step(2, 3), reduction="none"), case((2, 3), (3,), reduction="sum"),
        case((2, 3), (2, 3), reduction="batchmean", log_target=True),
        case((), (), reduction="none"), case((0, 3), (0, 3), reduction="sum")],
       domains=(None, "positive")),
    # probabilities: the sigmoid of the drawn values, in minitorch and in the reference alike
    Op("binary_cross_entropy",
       lambda x, t, *w, **k: F.binary_cross_entropy(mt.sigmoid(x), mt.sigmoid(t), *w, **k),
       lambda x, t, *w, **k: _np_bce(_sigmoid(x), _sigmoid(t), *w, **k), BINARY_LOSS_CASES),
    Op("binary_cross_entropy_with_logits", _mt_bce_logits,
       lambda x, t, *w, **k: _np_bce_logits(x, _sigmoid(t), *w, **k),
       BINARY_LOSS_CASES + [case((2, 3), (2, 3), (3,), which="p"),
                            case(step(2, 3), (2, 3), (2, 1), (3,), which="wp",
                                 reduction="none")]),
]

OPS = [
    # arithmetic
    _binary("add", mt.add, np.add),
    _binary("sub", lambda a, b: a - b, np.subtract),
    _binary("mul", lambda a, b: a * b, np.multiply),
    _binary("div", lambda a, b: a / b, np.divide, domains=(None, "nonzero")),
    _binary("pow", lambda a, b: a ** b, np.power, domains=("positive", None)),
    Op("pow_scalar", lambda a, e: a ** e, lambda x, e: x ** e,
       [case((3,), e=2), case((2, 3), e=3.0), case((), e=0.5), case(T(2, 2), e=-1),
        case((0,), e=2), case((2, 3), e=5), case(step(2, 3), e=-3), case((3,), e=0),
        case((), e=-2), case((2, 2), e=-0.5), case((3,), e=2.5)], domains=("positive",),
       kernel=True),
    Op("rpow", lambda a: 2.0 ** a, lambda x: 2.0 ** x, [case((3,)), case(())]),
    Op("scalar_ops", lambda a: (1.5 - a) * 2 / (a + 3.0), lambda x: (1.5 - x) * 2 / (x + 3.0),
       [case((4,)), case(T(2, 2))], domains=("positive",)),
    _binary("maximum", mt.maximum, np.maximum),
    _binary("minimum", mt.minimum, np.minimum),
    # unary math and activations
    _unary("neg", lambda a: -a, np.negative),
    _unary("abs", mt.abs, np.abs, domain="nonzero", kernel=True),
    _unary("exp", mt.exp, np.exp, kernel=True),
    _unary("log", mt.log, np.log, domain="positive", kernel=True),
    _unary("sqrt", mt.sqrt, np.sqrt, domain="positive"),
    _unary("rsqrt", mt.rsqrt, lambda x: 1 / np.sqrt(x), domain="positive", kernel=True),
    _unary("sin", mt.sin, np.sin),
    _unary("cos", mt.cos, np.cos),
    _unary("tanh", mt.tanh, np.tanh),
    _unary("sigmoid", mt.sigmoid, _sigmoid, kernel=True),
    _unary("relu", mt.relu, lambda x: np.maximum(x, 0), domain="nonzero", kernel=True),
    _unary("gelu", mt.gelu, _gelu, kernel=True),
    _unary("gelu_tanh", lambda a: mt.gelu(a, approximate="tanh"),
           lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
           kernel=True),
    _unary("erf", mt.erf, _erf),
    _unary("sign", mt.sign, np.sign, differentiable=False),
    _unary("square", mt.square, np.square),
    _unary("silu", F.silu, lambda x: x * _sigmoid(x), kernel=True),
    Op("clamp", lambda a, **k: a.clamp(**k), lambda x, min=None, max=None: np.clip(x, min, max),
       [case((4,), min=-0.5, max=0.5), case((2, 3), min=0.1), case(T(2, 3), max=-0.1),
        case((), min=-0.3), case((2, 3), min=0.4, max=-0.2)], kernel=True),
    Op("clamp_tensor_bounds", lambda a, lo, hi: mt.clamp(a, lo, hi),
       lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
       [case((2, 3), (3,), (2, 1))]),
    # comparisons and selection
    _binary("eq", lambda a, b: a == b, np.equal, differentiable=False),
    _binary("lt", lambda a, b: a < b, np.less, differentiable=False),
    _binary("ge", lambda a, b: a >= b, np.greater_equal, differentiable=False),
    _binary("ne", mt.ne, np.not_equal, differentiable=False),
    _binary("le", mt.le, np.less_equal, differentiable=False),
    _binary("gt", lambda a, b: a > b, np.greater, differentiable=False),
    _binary("logical_and", lambda a, b: (a > 0) & (b > 0), lambda x, y: (x > 0) & (y > 0),
            differentiable=False),
    _binary("logical_or", lambda a, b: mt.logical_or(a > 0, b), np.logical_or,
            differentiable=False),
    _binary("logical_xor", lambda a, b: (a > 0) ^ (b > 0), lambda x, y: (x > 0) ^ (y > 0),
            differentiable=False),
    _unary("logical_not", lambda a: ~(a > 0), lambda x: ~(x > 0), differentiable=False),
    *[Op(name, getattr(mt, name), getattr(np, name),
         [case(const([1.0, np.nan, -np.inf, np.inf, -2.0], np.float64)), case((2, 3))],
         differentiable=False) for name in ("isnan", "isinf", "isfinite")],
    Op("where", lambda c, a, b: mt.where(c > 0, a, b), lambda c, x, y: np.where(c > 0, x, y),
       [case((2, 3), (2, 3), (2, 3)), case((2, 3), (3,), ()), case((2, 1), (1, 3), (2, 3)),
        case(T(2, 3), step(2, 3), (1,)), case((0, 3), (3,), (0, 1))]),
    Op("masked_fill", lambda a, m: a.masked_fill(m > 0, -1.5),
       lambda x, m: np.where(m > 0, -1.5, x),
       [case((2, 3), (2, 3)), case((2, 3), (3,)), case(T(2, 3), (2, 1)), case((), ())]),
    # reductions
    Op("sum", lambda a, **k: a.sum(**k), _np_reduce(np.sum), REDUCE_CASES + [
        case((0, 3), dim=0), case((0,)), case((2, 0), dim=1), case(step(2, 3), dim=-1)],
       kernel=True),
    Op("mean", lambda a, **k: a.mean(**k), _np_reduce(np.mean), REDUCE_CASES, kernel=True),
    Op("amax", lambda a, **k: a.amax(**k), _np_reduce(np.max), REDUCE_CASES, kernel=True),
    Op("amin", lambda a, **k: a.amin(**k), _np_reduce(np.min), REDUCE_CASES, kernel=True),
    Op("max_dim", _max_values, _np_reduce(np.max),
       [case((2, 3), dim=1), case((2, 3), dim=0, keepdim=True), case(T(3, 2), dim=-1),
        case((), dim=0)], op="max"),
    Op("min_dim", _min_values, _np_reduce(np.min), [case((2, 3), dim=1), case((4,), dim=0)],
       op="min"),
    Op("max_all", lambda a: a.max(), np.max, [case((2, 3)), case(()), case(T(2, 2))], op="max"),
    Op("argmax", lambda a, **k: a.argmax(**k), lambda x, dim=None, keepdim=False:
       np.argmax(x, axis=dim, keepdims=keepdim) if dim is not None else np.argmax(x),
       [case((2, 3)), case((2, 3), dim=1), case((2, 3), dim=0, keepdim=True), case(T(3, 2), dim=1)],
       differentiable=False),
    Op("argmin", lambda a, **k: a.argmin(**k), lambda x, dim=None, keepdim=False:
       np.argmin(x, axis=dim, keepdims=keepdim) if dim is not None else np.argmin(x),
       [case((2, 3)), case((2, 3), dim=0), case(T(3, 2), dim=1, keepdim=True)],
       differentiable=False),
    Op("all", lambda a, **k: (a > 0).all(**k), lambda x, **k: _np_reduce(np.all)(x > 0, **k),
       [case((2, 3)), case((2, 3), dim=1), case((0, 3), dim=0, keepdim=True)],
       differentiable=False),
    Op("any", lambda a, **k: mt.any(a > 0, **k), lambda x, **k: _np_reduce(np.any)(x > 0, **k),
       [case((2, 3)), case((2, 3), dim=(0, 1)), case(())], differentiable=False),
    Op("var", lambda a, **k: a.var(**k),
       lambda x, dim=None, keepdim=False, correction=1: np.var(
           x, axis=dim if dim is None or isinstance(dim, int) else tuple(dim), ddof=correction,
           keepdims=keepdim),
       [case((4,)), case((2, 3), dim=1), case((2, 3), dim=0, keepdim=True),
        case((2, 3, 2), dim=(0, 2)), case(T(3, 2), dim=-1, correction=0)], kernel=True),
    Op("std", lambda a, **k: a.std(**k),
       lambda x, dim=None, keepdim=False: np.std(x, axis=dim, ddof=1, keepdims=keepdim),
       [case((4,)), case((2, 3), dim=1)], kernel=True),
    Op("logsumexp", lambda a, **k: a.logsumexp(**k), _logsumexp,
       [case((4,), dim=0), case((2, 3), dim=1), case((2, 3), dim=0, keepdim=True),
        case((2, 3, 2), dim=(0, 2)), case(T(3, 2), dim=-1), case((0, 3), dim=0)]),
    # repeated ids accumulate their gradient; weight rows picked by ids of any shape
    Op("embedding", lambda w, i, **k: F.embedding(i, w, **k), lambda x, i, **k: x[i],
       [case((5, 3), const([0, 2, 0, 4, 0])), case((4, 2), const([[1, 3], [1, 1]])),
        case((3, 2), const(2)), case(T(4, 3), const([3, 0, 3])),
        case((4, 3), const([1, 2]), padding_idx=0)]),
    # padding_idx: the padding row's gradient is zero by definition, not the derivative, so
    # these cases compare values only (test_embedding_padding_row_gets_no_gradient: gradients).
    Op("embedding_padding_idx", lambda w, i, **k: F.embedding(i, w, **k),
       lambda x, i, **k: x[i], [case((4, 3), const([1, 0, 1, 3]), padding_idx=1),
                                case((5, 2), const([[4, 4], [0, 2]]), padding_idx=-1)],
       differentiable=False, op="embedding"),
] + SHAPE_OPS + SORTING_OPS + SCAN_OPS + SCATTER_OPS + TILING_OPS + LINALG_OPS \
    + ROUNDING_OPS + CLOSENESS_OPS + NN_OPS + MATH_OPS + ACTIVATION_OPS + NORM_OPS

KERNEL_OPS = [
    Op("matmul", lambda a, b: a @ b, np.matmul,
       [case((2, 3), (3, 4)), case((3,), (3,)), case((3,), (3, 2)), case((2, 3), (3,)),
        case((2, 2, 3), (3, 2)), case((2, 1, 2, 3), (3, 3, 2)), case(T(3, 2), step(2, 4)),
        case((0, 3), (3, 2)), case((2, 0), (0, 3)), case((1, 1), (1, 1))],
       kernel=True),
    Op("softmax", lambda a, dim=-1: mt.softmax(a, dim), lambda x, dim=-1: _softmax(x, dim),
       [case((4,)), case((2, 3)), case((2, 3), dim=0), case(T(2, 3)), case((1,)),
        case((0, 3)), case(())], kernel=True),
    Op("softmax_scaled_causal", lambda a: mt.softmax(a, scale=0.5, causal=True),
       lambda x: _softmax(np.where(np.triu(np.ones(x.shape[-2:], bool), 1), -np.inf, 0.5 * x)),
       [case((3, 3)), case((2, 2, 3))], kernel=True),
    Op("layer_norm", _mt_layer_norm, _np_layer_norm,
       [case((2, 5), shape=(5,), which=""), case((2, 5), (5,), (5,), shape=(5,)),
        case((2, 3, 4), (3, 4), (3, 4), shape=(3, 4)), case(T(4, 3), (3,), shape=(3,), which="w"),
        case((3, 4), (4,), shape=(4,), which="b", eps=1e-2), case((3,), (3,), (3,), shape=(3,)),
        case((2, 2, 3), shape=(2, 2, 3), which=""), case((0, 4), (4,), (4,), shape=(4,))],
       kernel=True),
    Op("rms_norm", lambda x, *w, shape, **k: F.rms_norm(x, shape, *w, **k), _np_rms_norm,
       [case((2, 5), shape=(5,)), case((2, 5), (5,), shape=(5,)),
        case((2, 3, 4), (3, 4), shape=(3, 4), eps=1e-3), case(T(4, 3), (3,), shape=(3,)),
        case(step(3, 4), (4,), shape=(4,)), case((3,), (3,), shape=(3,)),
        case((1, 1), (1,), shape=(1,)), case((0, 4), (4,), shape=(4,))],
       kernel=True),
    Op("cross_entropy", lambda x, t, **k: F.cross_entropy(x, t, **k), _np_cross_entropy,
       [case((3, 5), const([0, 4, 2])), case((4, 3), const([1, -100, 2, -100])),
        case((4, 3), const([0, 2, 2, 1]), label_smoothing=0.1),
        case((2, 3), const([1, 0]), reduction="sum"),
        case(T(3, 4), const([3, 1, 0]), reduction="none", label_smoothing=0.2, ignore_index=1),
        case((2, 3, 2), const([[0, 2], [1, 1]])), case((5,), const(2)),
        case((2, 3), const([-100, -100]))], kernel=True),
    Op("scaled_dot_product_attention", _mt_attention, _np_attention,
       [case((2, 3, 4), (2, 5, 4), (2, 5, 3)), case((3, 4), (3, 4), (3, 2), is_causal=True),
        case((2, 3, 4), (2, 5, 4), (2, 5, 3), const(np.arange(15).reshape(3, 5) % 4 != 0, bool)),
        case((1, 2, 3, 4), (1, 2, 3, 4), (1, 2, 3, 4), (3, 3), scale=0.3),
        case((2, 4), (3, 4), (3, 2), const([[True, False, True]] * 2, bool))],
       kernel=True),
    Op("log_softmax", lambda a, dim=-1: mt.log_softmax(a, dim),
       lambda x, dim=-1: np.log(_softmax(x, dim)),
       [case((4,)), case((2, 3)), case((2, 3), dim=0), case(step(2, 3)), case((0, 3)), case(())],
       kernel=True),
    Op("mm", lambda a, b: a.mm(b), np.matmul,
       [case((2, 3), (3, 4)), case(T(3, 2), step(2, 4)), case((2, 0), (0, 3)), case((0, 3), (3, 2)),
        case((1, 1), (1, 1))], kernel=True),
    Op("bmm", lambda a, b: mt.bmm(a, b), np.matmul,
       [case((2, 2, 3), (2, 3, 4)), case(T(2, 3, 2), step(2, 2, 4)), case((0, 2, 3), (0, 3, 1)),
        case((3, 1, 2), (3, 2, 1))], kernel=True),
]
# The rows of OPS on the backend's kernels (kernel=True) are tested as kernel rows.
KERNEL_OPS += [op for op in OPS if op.kernel]
OPS = [op for op in OPS if not op.kernel]


# ----------------------------------------------------------------------------- the checks


def _inputs(op, case_index, dtype):
    specs, kwargs = op.cases[case_index]
    rng = np.random.default_rng(1000 + case_index)
    domains = op.domains or (None,) * len(specs)
    arrays = [make_array(spec, rng, domains[i] if i < len(domains) else None)
              for i, spec in enumerate(specs)]
    # Cast without losing the layout: a copy keeps only values, so cast the base and re-view.
    arrays = [a if a.dtype == dtype or a.dtype.kind != "f" else _same_layout(a, dtype)
              for a in arrays]
    return arrays, kwargs


def _same_layout(array, dtype):
    if array.flags.c_contiguous:
        return array.astype(dtype)
    if array.T.flags.c_contiguous:
        return array.T.astype(dtype).T
    wide = np.empty(array.shape[:-1] + (2 * array.shape[-1],), dtype)
    wide[..., ::2] = array
    return wide[..., ::2]


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _check_values(op, case_index, dtype):
    arrays, kwargs = _inputs(op, case_index, dtype)
    expected = _as_tuple(op.ref(*[a.copy() for a in arrays], **kwargs))
    tensors = [mt.from_numpy(a) for a in arrays]
    for t, a in zip(tensors, arrays):
        assert t.stride() == tuple(s // a.itemsize for s in a.strides)  # layout really kept
    got = _as_tuple(op.fn(*tensors, **kwargs))
    assert len(got) == len(expected)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for g, e in zip(got, expected):
        e = np.asarray(e)
        assert tuple(g.shape) == e.shape, (op.name, g.shape, e.shape)
        if e.dtype.kind == "f":
            assert g.dtype == (mt.float32 if dtype == np.float32 else mt.float64)
            np.testing.assert_allclose(g.numpy(), e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g.numpy(), e)


def _check_gradients(op, case_index):
    arrays, kwargs = _inputs(op, case_index, np.float64)
    assert gradcheck(lambda *ts: op.fn(*ts, **kwargs), _leaves(arrays))


def _leaves(arrays):
    """Tensors of the arrays; the float ones require grad (indices, targets, masks do not)."""
    return [mt.from_numpy(a).requires_grad_(a.dtype.kind == "f") for a in arrays]


def _differentiable_pairs(ops):
    """The cases gradcheck has something to check in: differentiable ops on non-empty inputs
    (the values of the others are still compared with numpy above)."""
    return [(op, i) for op, i in _pairs(ops) if op.differentiable
            and all(a.size for a in _inputs(op, i, np.float64)[0] if a.dtype.kind == "f")]


def _differentiable_ids(ops):
    return [f"{op.name}[{i}]" for op, i in _differentiable_pairs(ops)]


def _ids(ops):
    return [f"{op.name}[{i}]" for op in ops for i in range(len(op.cases))]


def _pairs(ops):
    return [(op, i) for op in ops for i in range(len(op.cases))]


# Declared ops without a row of their own, each with the test that covers it instead.
COVERED_ELSEWHERE = {
    # (N, C, H, W) ops whose arguments (stride, padding, groups, ...) need cases of their own:
    # compared with PyTorch and gradchecked (and gradgradchecked) there, on both backends
    "conv1d": "tests/test_conv.py", "conv2d": "tests/test_conv.py",
    "max_pool2d": "tests/test_pooling.py", "avg_pool2d": "tests/test_pooling.py",
    "adaptive_avg_pool2d": "tests/test_pooling.py", "batch_norm": "tests/test_batchnorm.py",
}


def test_every_declared_op_has_a_row():
    """Adding an op to minitorch/ops without its row here fails this test."""
    rows = {op.op for op in OPS + KERNEL_OPS}
    missing = set(registry.OPS) - rows - set(COVERED_ELSEWHERE)
    assert not missing, f"ops declared in minitorch/ops without a row in the op table: {missing}"


def test_embedding_padding_row_gets_no_gradient():
    weight = mt.randn(4, 3, dtype=mt.float64, requires_grad=True)
    ids = mt.tensor([[1, 0], [1, 3]])
    (F.embedding(ids, weight, padding_idx=1) * mt.arange(1.0, 4.0, dtype=mt.float64)).sum() \
        .backward()
    expected = np.zeros((4, 3))
    expected[[0, 3]] = [1.0, 2.0, 3.0]  # ids 0 and 3 once each; the padding row 1: nothing
    np.testing.assert_array_equal(weight.grad.numpy(), expected)


def test_table_covers_the_issue_list():
    names = {op.name for op in OPS + KERNEL_OPS}
    wanted = """add sub mul div pow neg abs exp log sqrt tanh sigmoid relu gelu clamp maximum
        minimum eq lt where masked_fill sum mean amax argmax var logsumexp max_dim min_dim
        reshape view transpose permute unsqueeze squeeze expand flatten contiguous .T .mT cat
        stack split chunk getitem gather index_select matmul softmax log_softmax layer_norm
        cross_entropy embedding scaled_dot_product_attention""".split()
    assert set(wanted) <= names, set(wanted) - names


def test_table_covers_the_tensor_ops_pytorch_programs_use():
    ops = {op.op for op in OPS + KERNEL_OPS}
    wanted = """topk sort argsort unique nonzero masked_select cumsum cumprod scatter scatter_add
        index_fill index_add index_put narrow roll repeat_interleave tile diag repeat mm bmm outer
        einsum round floor ceil trunc fmod remainder allclose isclose""".split()
    assert set(wanted) <= ops, set(wanted) - ops


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op,case_index", _pairs(OPS), ids=_ids(OPS))
def test_values_match_numpy(op, case_index, dtype):
    _check_values(op, case_index, dtype)


@pytest.mark.parametrize("op,case_index", _differentiable_pairs(OPS), ids=_differentiable_ids(OPS))
def test_gradcheck(op, case_index):
    _check_gradients(op, case_index)


def _second_order(ops):
    return [op for op in ops if op.gradgrad and op.differentiable]


@pytest.mark.parametrize("op", _second_order(OPS), ids=lambda op: op.name)
def test_gradgradcheck(op):
    _check_gradgrad(op)


@pytest.mark.parametrize("op", _second_order(KERNEL_OPS), ids=lambda op: op.name)
def test_kernel_gradgradcheck(op, backend):
    _check_gradgrad(op)


def _check_gradgrad(op):
    for i in range(len(op.cases)):
        arrays, kwargs = _inputs(op, i, np.float64)
        floats = [a for a in arrays if a.dtype.kind == "f"]
        if all(a.size for a in floats) and all(a.ndim for a in floats):
            break
    assert gradgradcheck(lambda *ts: op.fn(*ts, **kwargs), _leaves(arrays))


def _kernel_settings():
    """numpy, and the C backend at every ISA level this CPU runs (the plain reference bodies,
    then each tuned level), with 1 and 2 threads: a kernel row is its kernel's test."""
    settings = ["numpy"]
    if "c" in mt.backends.available:
        levels = mt.backends.c_backend.ISA_LEVELS
        levels = levels[:levels.index(mt.backends.c_backend.best_isa()) + 1]
        settings += [f"c-{level}-{threads}" for level in levels for threads in (1, 2)]
    return settings


@pytest.fixture(params=_kernel_settings())
def kernel_setting(request):
    if request.param == "numpy":
        with mt.backends.using("numpy"):
            yield
        return
    _, level, threads = request.param.split("-")
    c_backend, previous = mt.backends.c_backend, mt.get_num_threads()
    mt.set_num_threads(int(threads))
    try:
        with mt.backends.using("c"), c_backend.isa(level):
            yield
    finally:
        mt.set_num_threads(previous)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("op,case_index", _pairs(KERNEL_OPS), ids=_ids(KERNEL_OPS))
def test_kernel_values_match_numpy(op, case_index, dtype, kernel_setting):
    _check_values(op, case_index, dtype)


@pytest.mark.parametrize("op,case_index", _differentiable_pairs(KERNEL_OPS),
                         ids=_differentiable_ids(KERNEL_OPS))
def test_kernel_gradcheck(op, case_index, backend):
    _check_gradients(op, case_index)


def test_shape_ops_return_views():
    base = mt.arange(24.0).reshape(2, 3, 4)
    views = [base.reshape(6, 4), base.view(2, 12), base.transpose(0, 2), base.permute(2, 0, 1),
             base.unsqueeze(1), base[:, None, 1:3].squeeze(1), base[0].expand(2, 3, 4),
             base.flatten(1), base.mT, base[..., ::2], base[1]]
    for v in views:
        assert np.shares_memory(v.numpy(), base.numpy())
    copies = [base[mt.tensor([0, 1])], base[base > 3], base.transpose(0, 1).contiguous(),
              base.transpose(0, 1).reshape(-1)]
    for c in copies:
        assert not np.shares_memory(c.numpy(), base.numpy())
    contiguous = base.contiguous()
    assert contiguous is base


def test_repeated_integer_index_accumulates_gradient():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[mt.tensor([0, 2, 0, 0])].sum().backward()
    assert x.grad.tolist() == [3.0, 0.0, 1.0]
