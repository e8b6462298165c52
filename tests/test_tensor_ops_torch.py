"""Parity with PyTorch for the tensor ops PyTorch programs use beyond the basics: sorting and
selection, scans, the scatter family, tiling, mm/bmm/outer/einsum, rounding and modulo, and
closeness.

Each case is one call written once for both libraries (``lib`` is ``minitorch`` or ``torch``:
the same names and arguments must work on both), run on the same random inputs: the outputs
must match in type, shape, dtype and value, and, in float64, the gradients of every float input
for a random weighting of the outputs. A second table holds bad calls: minitorch must raise the
exception type PyTorch raises. Skipped where PyTorch is not installed; the op table
(test_ops_table.py) and test_tensor_ops.py check the same ops against numpy without it.
"""
import numpy as np
import pytest

import minitorch as mt

torch = pytest.importorskip("torch")

pytestmark = [
    # PyTorch deprecates scatter's reduce argument (minitorch keeps it, as PyTorch still does)
    pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter:UserWarning"),
    # the float32 run casts an input of 1e300 to float32: inf, as intended
    pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning"),
]


# ----------------------------------------------------------------------------- inputs


def floats(*shape):
    return lambda rng: rng.standard_normal(shape)


def transposed(*shape):
    """A non-contiguous float input of ``shape``: the transpose of a contiguous array."""
    return lambda rng: rng.standard_normal(shape[::-1]).T


def strided(*shape):
    """A non-contiguous float input: every other element of the last dim of a wider array."""
    return lambda rng: rng.standard_normal(shape[:-1] + (2 * shape[-1],))[..., ::2]


def nonzero_floats(*shape):
    """Floats at least 0.5 away from zero (divisors)."""
    def make(rng):
        x = rng.standard_normal(shape)
        return x + np.where(x >= 0, 0.5, -0.5)
    return make


def const(values, dtype=np.int64):
    return lambda rng: np.asarray(values, dtype)


def _tensor(lib, array, requires_grad):
    if lib is torch:
        t = torch.from_numpy(np.array(array, copy=True))
    else:
        t = mt.from_numpy(np.array(array, copy=True, order="K") if array.flags.c_contiguous
                          or array.T.flags.c_contiguous else array.copy())
    return t.requires_grad_(requires_grad)


def _inputs(lib, makers, seed, dtype, grad):
    rng = np.random.default_rng(seed)
    arrays = [make(rng) for make in makers]
    arrays = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    return [_tensor(lib, a, grad and a.dtype.kind == "f") for a in arrays]


# ----------------------------------------------------------------------------- comparison


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [leaf for item in out for leaf in _flat(item)]
    return [out]


def _dtype_name(t):
    return t.dtype.name if isinstance(t, mt.Tensor) else str(t.dtype).replace("torch.", "")


def _compare_outputs(got, expected, tol):
    assert isinstance(got, tuple) == isinstance(expected, tuple), (type(got), type(expected))
    got, expected = _flat(got), _flat(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if not isinstance(e, torch.Tensor):
            assert type(g) is type(e) and g == e, (g, e)
            continue
        assert isinstance(g, mt.Tensor), type(g)
        assert tuple(g.shape) == tuple(e.shape), (tuple(g.shape), tuple(e.shape))
        assert _dtype_name(g) == _dtype_name(e)
        g_array, e_array = g.detach().numpy(), e.detach().numpy()
        if e_array.dtype.kind == "f":
            np.testing.assert_allclose(g_array, e_array, rtol=tol, atol=tol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g_array, e_array)


def _check_case(fn, makers, dtype, grad, seed=0):
    mt_inputs = _inputs(mt, makers, seed, dtype, grad)
    torch_inputs = _inputs(torch, makers, seed, dtype, grad)
    got, expected = fn(mt, *mt_inputs), fn(torch, *torch_inputs)
    tol = 1e-5 if dtype == np.float32 else 1e-10
    _compare_outputs(got, expected, tol)
    if not grad:
        return
    pairs = [(g, e) for g, e in zip(_flat(got), _flat(expected))
             if isinstance(e, torch.Tensor) and e.requires_grad]
    assert all(g.requires_grad for g, _ in pairs)
    if not pairs:
        return
    rng = np.random.default_rng(seed + 1)
    weights = [rng.standard_normal(tuple(e.shape)) for _, e in pairs]
    sum(((g * mt.tensor(w)).sum() for (g, _), w in zip(pairs, weights)), mt.tensor(0.0)) \
        .backward()
    sum(((e * torch.tensor(w)).sum() for (_, e), w in zip(pairs, weights))).backward()
    for g, e in zip(mt_inputs, torch_inputs):
        if e.requires_grad:
            expected_grad = np.zeros(tuple(e.shape)) if e.grad is None else e.grad.numpy()
            got_grad = np.zeros(tuple(g.shape)) if g.grad is None else g.grad.numpy()
            np.testing.assert_allclose(got_grad, expected_grad, rtol=1e-10, atol=1e-10)


# ----------------------------------------------------------------------------- the cases
# (name, call on lib and the inputs, input makers, differentiable); names are test ids.

ROUND_TIES = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 1.25, 0.125, 1234.5, -0.0]

CASES = [
    # sorting and selection
    ("sort", lambda lib, x: lib.sort(x), [floats(3, 5)], True),
    ("sort_dim0_descending", lambda lib, x: x.sort(dim=0, descending=True), [transposed(4, 3)],
     True),
    ("sort_stable_ties", lambda lib, x: lib.sort(x, stable=True),
     [const([[2, 1, 2, 1, 3], [0, 0, 1, 0, 1]])], False),
    ("sort_stable_ties_descending", lambda lib, x: x.sort(dim=-1, descending=True, stable=True),
     [const([[2, 1, 2, 1, 3], [0, 0, 1, 0, 1]])], False),
    ("sort_nan", lambda lib, x: (lib.sort(x), lib.sort(x, descending=True)),
     [const([[3.0, np.nan, 1.0, -np.inf], [np.nan, 2.0, np.inf, 0.0]], np.float64)], False),
    ("sort_bool", lambda lib, x: lib.sort(x, stable=True), [const([True, False, True], bool)],
     False),
    ("sort_0d_and_empty", lambda lib, x, y: (lib.sort(x), y.sort(dim=0)),
     [floats(), floats(0, 3)], True),
    ("argsort", lambda lib, x: (lib.argsort(x), x.argsort(dim=0, descending=True)),
     [strided(3, 4)], False),
    ("argsort_stable", lambda lib, x: lib.argsort(x, descending=True, stable=True),
     [const([2, 1, 2, 1])], False),
    ("topk", lambda lib, x: lib.topk(x, 3), [floats(2, 6)], True),
    ("topk_dim_smallest", lambda lib, x: x.topk(2, dim=0, largest=False), [transposed(4, 3)],
     True),
    ("topk_k0_and_0d", lambda lib, x, y: (lib.topk(x, 0), lib.topk(y, 1), lib.topk(y, 0)),
     [floats(3, 4), floats()], True),
    ("topk_nan", lambda lib, x: lib.topk(x, 2), [const([1.0, np.nan, 3.0], np.float64)], False),
    ("topk_int", lambda lib, x: x.topk(2), [const([[4, 9, 1], [7, 3, 8]])], False),
    ("unique", lambda lib, x: lib.unique(x), [const([3, 1, 2, 3, 1])], False),
    ("unique_inverse_counts",
     lambda lib, x: lib.unique(x, return_inverse=True, return_counts=True),
     [const([[3, 1], [2, 3]])], False),
    ("unique_counts", lambda lib, x: x.unique(return_counts=True), [const([5, 5, 0])], False),
    ("unique_dim", lambda lib, x: (lib.unique(x, dim=0, return_inverse=True, return_counts=True),
                                   x.unique(dim=1, return_inverse=True)),
     [const([[3, 1, 3], [2, 3, 2], [3, 1, 3]])], False),
    ("unique_float_nan", lambda lib, x: lib.unique(x),
     [const([np.nan, 1.0, np.nan, -2.0, 1.0], np.float64)], False),
    ("unique_0d_empty", lambda lib, x, y: (
        lib.unique(x, return_inverse=True, return_counts=True),
        lib.unique(y, return_inverse=True, return_counts=True)),
     [const(2.0, np.float64), floats(0)], False),
    ("nonzero", lambda lib, x: (lib.nonzero(x), x.nonzero(as_tuple=True)),
     [const([[0, 1, 0], [2, 0, 3]])], False),
    ("nonzero_0d", lambda lib, x, y: (lib.nonzero(x), lib.nonzero(y), lib.nonzero(x, as_tuple=True),
                                      lib.nonzero(y, as_tuple=True)),
     [const(2.0, np.float64), const(0.0, np.float64)], False),
    ("nonzero_bool_empty", lambda lib, x, y: (lib.nonzero(x), lib.nonzero(y)),
     [const([[True, False], [True, True]], bool), const(np.zeros((0, 3)), np.float64)], False),
    ("masked_select", lambda lib, x, m: lib.masked_select(x, m > 0), [floats(2, 3), floats(2, 3)],
     True),
    ("masked_select_broadcast", lambda lib, x, m: x.masked_select(m > 0),
     [floats(3), transposed(2, 3)], True),
    ("masked_select_broadcast_input", lambda lib, x, m: lib.masked_select(x, m > 0),
     [strided(2, 1), floats(3)], True),
    # scans
    ("cumsum", lambda lib, x: (lib.cumsum(x, 1), x.cumsum(dim=0), x.cumsum(-1)),
     [transposed(3, 4)], True),
    ("cumsum_int_bool_dtype", lambda lib, x, b: (
        lib.cumsum(x, 0), lib.cumsum(b, 0), lib.cumsum(x, 0, dtype=lib.float64)),
     [const([1, -2, 3]), const([True, True, False], bool)], False),
    ("cumsum_0d_empty", lambda lib, x, y: (lib.cumsum(x, 0), lib.cumsum(y, -1), y.cumsum(0)),
     [floats(), floats(0, 3)], True),
    ("cumprod", lambda lib, x: (lib.cumprod(x, 1), x.cumprod(dim=0)), [strided(3, 4)], True),
    ("cumprod_zeros", lambda lib, x: (lib.cumprod(x, 1), lib.cumprod(x, 0)),
     [const([[2.0, 0.0, 3.0, 0.0, 4.0], [0.0, 1.5, 2.0, -1.0, 0.5], [1.0, 2.0, 3.0, 4.0, 0.0],
             [0.0, 0.0, 2.0, 1.0, 3.0]], np.float64)], True),
    ("cumprod_int", lambda lib, x: (lib.cumprod(x, 0), x.cumprod(0, dtype=lib.float64)),
     [const([1, -2, 3, 0, 5])], False),
    # the scatter family
    ("scatter", lambda lib, x, s: lib.scatter(x, 0, lib.tensor([[0, 1, 2, 0], [2, 0, 1, 1]]), s),
     [floats(3, 4), floats(2, 4)], True),
    # PyTorch's own backward fails for a src larger than index (the op table gradchecks it)
    ("scatter_dim1_larger_src", lambda lib, x, s: x.scatter(1, lib.tensor([[3], [0], [2]]), s),
     [transposed(3, 4), floats(3, 5)], False),
    ("scatter_value", lambda lib, x: (lib.scatter(x, 0, lib.tensor([[1, 0, 2]]), 2.5),
                                      x.scatter(1, lib.tensor([[0], [2]]), value=-1.0)),
     [floats(3, 3)], True),
    ("scatter_int_value", lambda lib, x: x.scatter(0, lib.tensor([[1, 0]]), 2.7),
     [const([[1, 2], [3, 4]])], False),
    ("scatter_reduce_add", lambda lib, x, s: lib.scatter(
        x, 0, lib.tensor([[0, 0, 2], [0, 1, 2]]), s, reduce="add"), [floats(3, 3), floats(2, 3)],
     False),
    ("scatter_reduce_multiply", lambda lib, x, s: x.scatter(
        0, lib.tensor([[0, 0, 2], [0, 1, 2]]), s, reduce="multiply"), [floats(3, 3), floats(2, 3)],
     False),
    ("scatter_0d", lambda lib, x: lib.scatter(x, 0, lib.tensor(0), 2.0), [floats()], True),
    ("scatter_", lambda lib, x, s: x.clone().scatter_(0, lib.tensor([[2, 0]]), s),
     [floats(3, 2), floats(1, 2)], True),
    ("scatter_add", lambda lib, x, s: lib.scatter_add(
        x, 1, lib.tensor([[0, 0, 1], [2, 2, 2]]), s), [floats(2, 3), strided(2, 3)], True),
    ("scatter_add_", lambda lib, x, s: x.clone().scatter_add_(0, lib.tensor([[1, 1]]), s),
     [floats(2, 2), floats(1, 2)], True),
    ("index_fill", lambda lib, x: (lib.index_fill(x, 1, lib.tensor([0, 2]), -1.0),
                                   x.index_fill(0, lib.tensor(-1), 3.0)),
     [floats(3, 4)], True),
    ("index_fill_tensor_value", lambda lib, x, v: x.index_fill(1, lib.tensor([1, 1, 3]), v),
     [transposed(2, 4), floats()], True),
    ("index_fill_int_0d", lambda lib, x, y: (x.index_fill(0, lib.tensor([0]), 2.7),
                                             y.index_fill(0, lib.tensor([0]), 2.0)),
     [const([[1, 2], [3, 4]]), floats()], False),
    ("index_fill_", lambda lib, x: x.clone().index_fill_(1, lib.tensor([0]), 0.5), [floats(2, 3)],
     True),
    ("index_add", lambda lib, x, s: lib.index_add(x, 0, lib.tensor([1, 1, 0]), s, alpha=2),
     [floats(2, 3), floats(3, 3)], True),
    ("index_add_dim1", lambda lib, x, s: x.index_add(1, lib.tensor([2, 0]), s),
     [strided(3, 3), transposed(3, 2)], True),
    ("index_add_int_0d", lambda lib, x, y, s: (
        x.index_add(0, lib.tensor([1]), lib.ones(1, 3, dtype=lib.long), alpha=2),
        y.index_add(0, lib.tensor(0), s)), [const([[1, 2, 3], [4, 5, 6]]), floats(), floats()],
     True),
    ("index_add_", lambda lib, x, s: x.clone().index_add_(0, lib.tensor([0, 0]), s),
     [floats(2, 2), floats(2, 2)], True),
    ("index_put", lambda lib, x, v: lib.index_put(x, (lib.tensor([0, 2]), lib.tensor([1, 3])), v),
     [floats(3, 4), floats(2)], True),
    ("index_put_accumulate", lambda lib, x, v: x.index_put(
        (lib.tensor([0, 2, 0]), lib.tensor([1, 1, 1])), v, accumulate=True),
     [floats(3, 4), floats(3)], True),
    ("index_put_broadcast", lambda lib, x, v: x.index_put([lib.tensor([2, 0])], v),
     [transposed(3, 4), floats(4)], True),
    ("index_put_bool", lambda lib, x, v: (x.index_put((x > 0,), v),
                                          x.index_put((x > 0,), v, accumulate=True)),
     [floats(3, 3), floats()], True),
    ("index_put_", lambda lib, x, v: x.clone().index_put_((lib.tensor([1]),), v, True),
     [floats(2, 3), floats(3)], True),
    # tiling
    ("narrow", lambda lib, x: (lib.narrow(x, 0, 1, 2), x.narrow(-1, -3, 2)), [floats(4, 3)],
     True),
    ("roll", lambda lib, x: (lib.roll(x, 1), x.roll(-2, 0), lib.roll(x, (1, 2), (0, 1)),
                             x.roll(shifts=(5,), dims=(1,))), [transposed(3, 4)], True),
    ("roll_0d_empty", lambda lib, x, y: (lib.roll(x, 1), lib.roll(y, 2, 0)),
     [floats(), floats(0, 2)], True),
    ("repeat_interleave", lambda lib, x: (
        lib.repeat_interleave(x, 2), x.repeat_interleave(2, dim=0),
        x.repeat_interleave(lib.tensor([1, 0, 2]), dim=1),
        x.repeat_interleave(lib.tensor([3]), dim=1, output_size=9)), [strided(2, 3)], True),
    ("repeat_interleave_counts", lambda lib, c: (lib.repeat_interleave(c),
                                                 lib.repeat_interleave(c, 2)),
     [const([1, 0, 3])], False),
    ("repeat_interleave_0d", lambda lib, x: lib.repeat_interleave(x, 3), [floats()], True),
    ("tile", lambda lib, x: (lib.tile(x, (2,)), x.tile((2, 1, 2)), x.tile(()), x.tile([1, 3])),
     [transposed(2, 3)], True),
    ("tile_0d", lambda lib, x: lib.tile(x, (2, 2)), [floats()], True),
    ("repeat", lambda lib, x: (x.repeat(2, 1), x.repeat(1, 2, 2), x.repeat(0, 1)), [floats(2, 3)],
     True),
    ("diag", lambda lib, v: (lib.diag(v), v.diag(1), lib.diag(v, -2)), [strided(3)], True),
    ("diag_of_matrix", lambda lib, x: (lib.diag(x), x.diag(1), x.diag(-1), x.diag(5), x.diag(-5)),
     [transposed(3, 4)], True),
    ("diag_empty", lambda lib, v: lib.diag(v), [floats(0)], True),
    # matrix products
    ("mm", lambda lib, a, b: (lib.mm(a, b), a.mm(b)), [transposed(2, 3), strided(3, 4)], True),
    ("mm_empty_int", lambda lib, a, b, i: (lib.mm(a, b), i.mm(i)),
     [floats(2, 0), floats(0, 3), const([[1, 2], [3, 4]])], True),
    ("bmm", lambda lib, a, b: (lib.bmm(a, b), a.bmm(b)), [floats(2, 2, 3), strided(2, 3, 4)],
     True),
    ("outer", lambda lib, u, v, i: (lib.outer(u, v), u.outer(v), lib.outer(i, v)),
     [floats(3), strided(2), const([1, 2])], True),
    ("outer_int_float_promotes", lambda lib, i, v: lib.outer(i, v.float()),
     [const([1, 2]), floats(3)], False),
    ("einsum_matmul", lambda lib, a, b: (lib.einsum("ij,jk->ik", a, b), lib.einsum("ij,jk", [a, b]),
                                         lib.einsum(" i j , j k -> k i ", a, b)),
     [floats(2, 3), transposed(3, 4)], True),
    ("einsum_trace_diagonal", lambda lib, a, c: (lib.einsum("ii", a), lib.einsum("ii->i", a),
                                                 lib.einsum("iij->ji", c)),
     [floats(3, 3), floats(3, 3, 2)], True),
    ("einsum_batch", lambda lib, a, b: (lib.einsum("bij,bjk->bik", a, b),
                                        lib.einsum("bij,bkj->bik", a, a)),
     [floats(2, 2, 3), strided(2, 3, 4)], True),
    ("einsum_ellipsis", lambda lib, a, b, c: (
        lib.einsum("...ij,...jk", a, b), lib.einsum("b...i,bi->b...", c, c[:, 0]),
        lib.einsum("i...->...", c), lib.einsum("...i->i", c), lib.einsum("...", b)),
     [floats(2, 2, 3), floats(3, 4), floats(2, 5, 3)], True),
    ("einsum_broadcast_outer_sum", lambda lib, a, b, u, v, s: (
        lib.einsum("ij,ij->ij", a, b), lib.einsum("i,j->ij", u, v), lib.einsum("ij->", b),
        lib.einsum(",i->i", s, u), lib.einsum("i,i,i->", u, u, u), lib.einsum("ji", b),
        lib.einsum("Ab,bA->A", b, b.T)), [floats(1, 3), floats(2, 3), floats(3), floats(2),
                                          floats()], True),
    ("einsum_int", lambda lib, a: lib.einsum("ij,jk->ik", a, a), [const([[1, 2], [3, 4]])], False),
    # rounding and modulo
    ("round_ties_to_even", lambda lib, x: (lib.round(x), x.round(decimals=1), lib.floor(x),
                                           lib.ceil(x), x.trunc()),
     [const(ROUND_TIES, np.float64)], False),
    ("rounding", lambda lib, x: (lib.round(x), x.round(decimals=2), lib.round(x, decimals=-1),
                                 lib.floor(x), x.ceil(), lib.trunc(x)),
     [lambda rng: rng.standard_normal((3, 4)) * 100], True),
    ("rounding_int", lambda lib, x: (lib.round(x), lib.floor(x), x.ceil(), lib.trunc(x)),
     [const([[-3, 2], [7, 0]])], False),
    ("rounding_inplace", lambda lib, x: (x.clone().floor_(), x.clone().ceil_(), x.clone().trunc_(),
                                         x.clone().round_(), x.clone().round_(decimals=1)),
     [floats(2, 3)], True),
    ("remainder_fmod", lambda lib, a, b: (lib.remainder(a, b), a.fmod(b), a % b),
     [lambda rng: rng.standard_normal((3, 4)) * 5, nonzero_floats(4)], True),
    ("remainder_fmod_scalars", lambda lib, a: (lib.remainder(a, 1.5), lib.fmod(a, -1.5),
                                               a % -0.75),
     [nonzero_floats(2, 3)], True),
    # PyTorch has no derivative for a number divided by a tensor
    ("remainder_number_first", lambda lib, a: (lib.remainder(3, a), 2.5 % a),
     [nonzero_floats(2, 3)], False),
    ("remainder_fmod_signs", lambda lib, a, b: (lib.remainder(a, b), lib.fmod(a, b), a % b),
     [const([-3.0, 3.0, -3.0, 3.0, 0.0, -7.5], np.float64),
      const([2.0, -2.0, -2.0, 2.0, 3.0, 2.0], np.float64)], False),
    ("remainder_fmod_int", lambda lib, a, b: (lib.remainder(a, b), lib.fmod(a, b), a % 3, 7 % b,
                                              a % 2.5),
     [const([-7, 7, -7, 7, 0]), const([3, -3, -3, 3, 5])], False),
    ("remainder_fmod_float_zero_and_inf", lambda lib, a: (
        lib.remainder(a, 0.0), lib.fmod(a, 0.0), lib.remainder(a, float("inf")),
        lib.fmod(a, float("inf"))), [const([3.0, -3.0, 0.0], np.float64)], False),
    ("remainder_inplace", lambda lib, a, b: (a.clone().remainder_(b), a.clone().fmod_(b)),
     [floats(2, 3), nonzero_floats(3)], True),
    ("imod", lambda lib, a: _imod(a.clone(), 0.7), [floats(2, 3)], True),
    # closeness
    ("isclose", lambda lib, a, b: (lib.isclose(a, b), lib.isclose(a, a + 1e-6 * b),
                                   a.isclose(a + 1e-3 * b, rtol=1e-2),
                                   lib.isclose(a, a + 1e-9, rtol=0.0, atol=1e-8)),
     [floats(3, 4), floats(4)], False),
    ("isclose_special", lambda lib, a, b: (lib.isclose(a, b), lib.isclose(a, b, equal_nan=True)),
     [const([1.0, np.nan, np.inf, -np.inf, np.inf, 0.0], np.float64),
      const([1.0 + 1e-6, np.nan, np.inf, np.inf, 1e300, 1e-9], np.float64)], False),
    ("isclose_int_bool", lambda lib, a, b, p, q: (lib.isclose(a, b), lib.isclose(a, b, atol=2),
                                                  lib.isclose(p, q)),
     [const([1, 2, 100000, 7]), const([1, 3, 100001, 9]), const([True, False], bool),
      const([True, True], bool)], False),
    ("allclose", lambda lib, a, b: (lib.allclose(a, b), lib.allclose(a, a + 1e-9), a.allclose(
        a + 1e-3, rtol=0.0, atol=1e-2), lib.allclose(a, a * np.nan, equal_nan=True)),
     [floats(3), floats(3)], False),
]


def _imod(tensor, divisor):
    tensor %= divisor
    return tensor


@pytest.mark.parametrize("name,fn,makers,grad", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch_in_float64_with_gradients(name, fn, makers, grad):
    _check_case(fn, makers, np.float64, grad)


@pytest.mark.parametrize("name,fn,makers,grad", CASES, ids=[c[0] for c in CASES])
def test_matches_pytorch_in_float32(name, fn, makers, grad):
    _check_case(fn, makers, np.float32, False, seed=1)


def test_return_types_are_named_tuples_as_pytorch():
    for lib in (mt, torch):
        x = lib.tensor([[3.0, 1.0, 2.0]])
        for result in (lib.topk(x, 2), lib.sort(x), x.sort(descending=True)):
            assert isinstance(result, tuple) and len(result) == 2
            values, indices = result
            assert result.values is values and result.indices is indices
        assert isinstance(lib.nonzero(x, as_tuple=True), tuple)
        assert type(lib.allclose(x, x)) is bool


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_second_derivatives_with_zeros_match_pytorch(dim):
    values = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 1.5], [1.0, -2.0, 0.0], [0.5, 0.0, 2.0]])
    weights = np.random.default_rng(3).standard_normal(values.shape)
    results = []
    for lib in (mt, torch):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        (first,) = lib.autograd.grad((lib.cumprod(x, dim) * lib.tensor(weights)).sum(), x,
                                     create_graph=True)
        (second,) = lib.autograd.grad((first * first).sum(), x)
        results.append((first.detach().numpy(), second.numpy()))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------------------------- bad calls

ONES = lambda lib: lib.ones(2, 3)  # noqa: E731
INDEX = lambda lib, *v: lib.tensor(list(v))  # noqa: E731

BAD_CALLS = [
    ("topk_k_too_large", lambda lib: lib.topk(ONES(lib), 4)),
    ("topk_k_negative", lambda lib: lib.topk(ONES(lib), -1)),
    ("topk_k_float", lambda lib: lib.topk(ONES(lib), 1.0)),
    ("topk_bool", lambda lib: lib.topk(lib.tensor([True, False]), 1)),
    ("sort_dim_out_of_range", lambda lib: lib.sort(ONES(lib), dim=2)),
    ("nonzero_as_tuple_positional", lambda lib: lib.nonzero(ONES(lib), True)),
    ("masked_select_int_mask", lambda lib: lib.masked_select(ONES(lib), lib.tensor([1, 0, 1]))),
    ("masked_select_no_broadcast", lambda lib: lib.masked_select(
        ONES(lib), lib.tensor([True, False]))),
    ("cumsum_without_dim", lambda lib: lib.cumsum(ONES(lib))),
    ("cumsum_dim_out_of_range", lambda lib: lib.cumsum(ONES(lib), 2)),
    ("cumsum_dtype_positional", lambda lib: lib.cumsum(ONES(lib), 0, lib.float64)),
    ("scatter_index_out_of_range", lambda lib: ONES(lib).scatter(0, lib.tensor([[5, 0, 0]]), 1.0)),
    ("scatter_negative_index", lambda lib: ONES(lib).scatter(0, lib.tensor([[-1, 0, 0]]), 1.0)),
    ("scatter_index_ndim", lambda lib: ONES(lib).scatter(0, lib.tensor([0, 1]), 1.0)),
    ("scatter_index_too_large", lambda lib: ONES(lib).scatter(
        0, lib.zeros(3, 4, dtype=lib.long), 1.0)),
    ("scatter_src_too_small", lambda lib: ONES(lib).scatter(
        0, lib.zeros(1, 3, dtype=lib.long), lib.ones(1, 2))),
    ("scatter_src_dtype", lambda lib: ONES(lib).scatter(
        0, lib.zeros(1, 3, dtype=lib.long), lib.ones(1, 3, dtype=lib.float64))),
    ("scatter_src_0d_tensor", lambda lib: ONES(lib).scatter(
        0, lib.zeros(1, 3, dtype=lib.long), lib.tensor(2.0))),
    ("scatter_bad_reduce", lambda lib: ONES(lib).scatter(
        0, lib.zeros(1, 3, dtype=lib.long), lib.ones(1, 3), reduce="mean")),
    ("scatter_add_number", lambda lib: ONES(lib).scatter_add(0, lib.zeros(1, 3, dtype=lib.long),
                                                             5.0)),
    ("index_fill_out_of_range", lambda lib: ONES(lib).index_fill(1, INDEX(lib, 0, 3), -1.0)),
    ("index_fill_2d_index", lambda lib: ONES(lib).index_fill(1, lib.tensor([[0]]), -1.0)),
    ("index_fill_float_index", lambda lib: ONES(lib).index_fill(0, lib.tensor([1.0]), 2.0)),
    ("index_fill_1d_value", lambda lib: ONES(lib).index_fill(1, INDEX(lib, 0), lib.tensor([7.0]))),
    ("index_add_out_of_range", lambda lib: ONES(lib).index_add(0, INDEX(lib, 2), lib.ones(1, 3))),
    ("index_add_negative", lambda lib: ONES(lib).index_add(0, INDEX(lib, -1), lib.ones(1, 3))),
    ("index_add_source_shape", lambda lib: ONES(lib).index_add(0, INDEX(lib, 1), lib.ones(1, 2))),
    ("index_add_count", lambda lib: ONES(lib).index_add(0, INDEX(lib, 1), lib.ones(2, 3))),
    ("index_add_2d_index", lambda lib: ONES(lib).index_add(0, lib.tensor([[1]]), lib.ones(1, 3))),
    ("index_add_dtype", lambda lib: ONES(lib).index_add(
        0, INDEX(lib, 1), lib.ones(1, 3, dtype=lib.float64))),
    ("index_put_int_index", lambda lib: ONES(lib).index_put((0,), lib.tensor(1.0))),
    ("index_put_none_index", lambda lib: ONES(lib).index_put((None, INDEX(lib, 0)),
                                                             lib.tensor(1.0))),
    ("index_put_float_values", lambda lib: ONES(lib).index_put((INDEX(lib, 0),), 1.0)),
    ("index_put_values_dtype", lambda lib: ONES(lib).index_put(
        (INDEX(lib, 0),), lib.tensor(1.0, dtype=lib.float64))),
    ("index_put_too_many", lambda lib: ONES(lib).index_put((INDEX(lib, 0),) * 3,
                                                           lib.tensor(1.0))),
    ("index_put_out_of_range", lambda lib: ONES(lib).index_put((INDEX(lib, 5),), lib.tensor(1.0))),
    ("roll_misaligned", lambda lib: lib.roll(ONES(lib), (1, -1), (0,))),
    ("roll_tuple_without_dims", lambda lib: lib.roll(ONES(lib), (1, 2))),
    ("repeat_interleave_negative", lambda lib: lib.repeat_interleave(ONES(lib), -1)),
    ("repeat_interleave_negative_tensor", lambda lib: lib.repeat_interleave(
        ONES(lib), INDEX(lib, 1, -1, 1), dim=1)),
    ("repeat_interleave_count_mismatch", lambda lib: lib.repeat_interleave(
        ONES(lib), INDEX(lib, 1, 1), dim=1)),
    ("repeat_interleave_output_size", lambda lib: lib.repeat_interleave(
        ONES(lib), INDEX(lib, 1, 1, 1), dim=1, output_size=4)),
    ("tile_int", lambda lib: lib.tile(ONES(lib), 2)),
    ("tile_negative", lambda lib: lib.tile(ONES(lib), (-1,))),
    ("diag_0d", lambda lib: lib.diag(lib.tensor(2.0))),
    ("diag_3d", lambda lib: lib.diag(lib.zeros(2, 2, 2))),
    ("mm_vector", lambda lib: lib.mm(lib.ones(3), lib.ones(3, 4))),
    ("mm_shapes", lambda lib: lib.mm(ONES(lib), ONES(lib))),
    ("mm_dtypes", lambda lib: lib.mm(ONES(lib), lib.ones(3, 2, dtype=lib.float64))),
    ("bmm_2d", lambda lib: lib.bmm(ONES(lib), lib.ones(3, 4))),
    ("bmm_batch", lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(3, 3, 4))),
    ("bmm_batch_broadcast", lambda lib: lib.bmm(lib.ones(1, 2, 3), lib.ones(3, 3, 4))),
    ("bmm_inner", lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(2, 2, 4))),
    ("outer_2d", lambda lib: lib.outer(ONES(lib), lib.ones(3))),
    ("outer_0d", lambda lib: lib.outer(lib.tensor(2.0), lib.ones(3))),
    ("einsum_no_operands", lambda lib: lib.einsum("i->i")),
    ("einsum_equation_not_str", lambda lib: lib.einsum(3, lib.ones(2))),
    ("einsum_sizes", lambda lib: lib.einsum("ij,jk", ONES(lib), ONES(lib))),
    ("einsum_operand_count", lambda lib: lib.einsum("ij,jk", ONES(lib))),
    ("einsum_output_repeated", lambda lib: lib.einsum("i->ii", lib.ones(2))),
    ("einsum_output_unknown", lambda lib: lib.einsum("i->j", lib.ones(2))),
    ("einsum_ndim", lambda lib: lib.einsum("ij->i", lib.ones(2))),
    ("einsum_repeated_sizes", lambda lib: lib.einsum("ii", ONES(lib))),
    ("einsum_bad_subscript", lambda lib: lib.einsum("i1", ONES(lib))),
    ("einsum_two_ellipses", lambda lib: lib.einsum("...i...", ONES(lib))),
    ("einsum_dtypes", lambda lib: lib.einsum("ij,jk", ONES(lib), lib.ones(3, 2,
                                                                         dtype=lib.float64))),
    ("round_bool", lambda lib: lib.round(lib.tensor([True]))),
    ("floor_bool", lambda lib: lib.floor(lib.tensor([True]))),
    ("round_int_decimals", lambda lib: lib.round(lib.tensor([15]), decimals=-1)),
    ("round_decimals_positional", lambda lib: lib.round(ONES(lib), 1)),
    ("remainder_int_by_zero", lambda lib: lib.remainder(lib.tensor([3]), lib.tensor([0]))),
    ("fmod_int_by_zero", lambda lib: lib.fmod(lib.tensor([3]), 0)),
    ("remainder_bool", lambda lib: lib.tensor([True]) % lib.tensor([True])),
    ("fmod_number_first", lambda lib: lib.fmod(5, lib.ones(2))),
    ("isclose_dtypes", lambda lib: lib.isclose(ONES(lib), lib.ones(2, 3, dtype=lib.float64))),
    ("isclose_int_float", lambda lib: lib.isclose(lib.tensor([1]), lib.tensor([1.0]))),
    ("isclose_number", lambda lib: lib.isclose(ONES(lib), 1.0)),
    ("isclose_negative_rtol", lambda lib: lib.isclose(ONES(lib), ONES(lib), rtol=-1)),
    ("allclose_negative_atol", lambda lib: lib.allclose(ONES(lib), ONES(lib), atol=-1)),
]


@pytest.mark.parametrize("name,call", BAD_CALLS, ids=[c[0] for c in BAD_CALLS])
def test_bad_calls_raise_what_pytorch_raises(name, call):
    with pytest.raises(Exception) as expected:
        call(torch)
    with pytest.raises(Exception) as got:
        call(mt)
    assert isinstance(got.value, type(expected.value)), (
        f"PyTorch raises {type(expected.value).__name__}: {expected.value}; minitorch raises "
        f"{type(got.value).__name__}: {got.value}")
