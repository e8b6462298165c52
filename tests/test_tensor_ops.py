"""The tensor ops beyond the basics, on what the op table (test_ops_table.py: values against
numpy, gradcheck) does not reach: in-place forms, return types, exact values at ties and signs,
dtypes of the results, the gradient of cumprod at zeros and of einsum to second order, and the
errors bad arguments raise. Runs without PyTorch (test_tensor_ops_torch.py holds the parity)."""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import gradcheck, gradgradcheck


def f64(values, requires_grad=False):
    return mt.tensor(values, dtype=mt.float64, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- sorting


def test_sort_is_stable_both_ways_and_puts_nan_last_ascending_first_descending():
    x = mt.tensor([2, 1, 2, 1, 3])
    assert x.sort().indices.tolist() == [1, 3, 0, 2, 4]
    assert x.sort(descending=True).indices.tolist() == [4, 0, 2, 1, 3]
    y = mt.tensor([1.0, float("nan"), -1.0])
    assert y.sort().indices.tolist() == [2, 0, 1]
    assert y.sort(descending=True).indices.tolist() == [1, 0, 2]
    assert mt.topk(y, 1).indices.tolist() == [1]  # NaN counts as the largest


def test_sort_and_topk_return_values_and_indices_by_name():
    x = mt.tensor([[3.0, 1.0, 2.0]])
    for result in (x.sort(dim=1), mt.topk(x, 2), mt.sort(x, -1, True, stable=True)):
        values, indices = result
        assert result.values is values and result.indices is indices
        assert indices.dtype == mt.int64
        np.testing.assert_array_equal(values.numpy(),
                                      np.take_along_axis(x.numpy(), indices.numpy(), 1))
    assert mt.topk(x, 2).values.tolist() == [[3.0, 2.0]]
    assert mt.topk(x, 2, largest=False).values.tolist() == [[1.0, 2.0]]


def test_sorted_values_carry_the_gradient_back_to_where_they_came_from():
    x = f64([3.0, 1.0, 2.0], requires_grad=True)
    (mt.topk(x, 2).values * f64([10.0, 1.0])).sum().backward()
    assert x.grad.tolist() == [10.0, 0.0, 1.0]


def test_unique_forms_and_no_gradient():
    x = mt.tensor([[3, 1], [2, 3]])
    assert mt.unique(x).tolist() == [1, 2, 3]
    out, inverse = x.unique(return_inverse=True)
    assert inverse.tolist() == [[2, 0], [1, 2]]
    out, counts = x.unique(return_counts=True)
    assert counts.tolist() == [1, 1, 2]
    rows, inverse, counts = mt.unique(mt.tensor([[1, 2], [0, 5], [1, 2]]), dim=0,
                                      return_inverse=True, return_counts=True)
    assert (rows.tolist(), inverse.tolist(), counts.tolist()) == ([[0, 5], [1, 2]], [1, 0, 1],
                                                                  [1, 2])
    assert not mt.unique(f64([1.0, 1.0], requires_grad=True)).requires_grad
    assert mt.unique(mt.tensor([float("nan"), float("nan")])).shape == (2,)


def test_nonzero_shapes():
    x = mt.tensor([[0, 1, 0], [2, 0, 3]])
    assert x.nonzero().tolist() == [[0, 1], [1, 0], [1, 2]]
    rows, cols = mt.nonzero(x, as_tuple=True)
    assert (rows.tolist(), cols.tolist()) == ([0, 1, 1], [1, 0, 2])
    assert mt.nonzero(mt.tensor(5.0)).shape == (1, 0)
    assert mt.nonzero(mt.tensor(0.0)).shape == (0, 0)
    with pytest.raises(TypeError):
        mt.nonzero(x, True)  # as_tuple is keyword-only, as in PyTorch


def test_masked_select_broadcasts_and_sums_gradients_of_broadcast_input():
    x = f64([1.0, 2.0, 3.0], requires_grad=True)
    mask = mt.tensor([[True, False, True], [False, False, True]])
    out = mt.masked_select(x, mask)
    assert out.tolist() == [1.0, 3.0, 3.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="mask"):
        mt.masked_select(x, mt.tensor([1, 0, 1]))


def test_topk_checks_k():
    with pytest.raises(RuntimeError, match="k out of range"):
        mt.topk(mt.ones(2, 3), 4)
    with pytest.raises(TypeError, match="k must be an int"):
        mt.topk(mt.ones(3), 1.0)


# ----------------------------------------------------------------------------- scans


def test_scan_dtypes():
    assert mt.cumsum(mt.tensor([1, 2, 3]), 0).dtype == mt.int64
    assert mt.cumsum(mt.tensor([True, True]), 0).tolist() == [1, 2]
    assert mt.cumsum(mt.tensor([1, 2]), 0, dtype=mt.float64).dtype == mt.float64
    assert mt.cumprod(mt.tensor([1, -2, 3]), 0).tolist() == [1, -2, -6]
    assert mt.cumsum(mt.tensor(2.5), 0).shape == ()


def test_scan_in_place_forms():
    x = mt.tensor([1.0, 2.0, 3.0])
    data = x.numpy()
    assert x.cumsum_(0) is x and x.tolist() == [1.0, 3.0, 6.0] and x.numpy() is data
    assert x.cumprod_(0).tolist() == [1.0, 3.0, 18.0]


@pytest.mark.parametrize("values", [
    [2.0, 0.0, 3.0, 0.0, 4.0], [0.0, 1.5, -2.0], [1.0, 2.0, 0.0], [0.0, 0.0, 3.0], [0.0],
    [[0.0, 2.0, 3.0], [4.0, 0.0, 0.5], [1.0, 1.0, 0.0]]], ids=str)
@pytest.mark.parametrize("dim", [0, -1])
def test_cumprod_gradients_with_zeros(values, dim):
    x = f64(values, requires_grad=True)
    assert gradcheck(lambda t: mt.cumprod(t, dim), [x])
    assert gradgradcheck(lambda t: mt.cumprod(t, dim), [x])  # the create_graph path


def test_cumprod_gradient_at_a_zero_is_the_product_of_the_others():
    x = f64([2.0, 0.0, 3.0], requires_grad=True)
    mt.cumprod(x, 0).sum().backward()
    # d/dx1 of x0 + x0 x1 + x0 x1 x2 = x0 + x0 x2 = 2 + 6
    assert x.grad.tolist() == [1.0, 8.0, 0.0]


# ----------------------------------------------------------------------------- scatter family


def test_scatter_forms():
    x = mt.zeros(2, 3)
    index = mt.tensor([[0, 1, 0]])
    src = mt.tensor([[1.0, 2.0, 3.0]])
    assert x.scatter(0, index, src).tolist() == [[1.0, 0.0, 3.0], [0.0, 2.0, 0.0]]
    assert mt.scatter(x, 0, index, value=5.0).tolist() == [[5.0, 0.0, 5.0], [0.0, 5.0, 0.0]]
    assert x.scatter(1, mt.tensor([[2, 2]]), mt.tensor([[1.0, 2.0]]), reduce="add").tolist() == \
        [[0.0, 0.0, 3.0], [0.0, 0.0, 0.0]]
    ones = mt.ones(2, 3)
    assert ones.scatter(0, index, 4.0, reduce="multiply").tolist() == [[4.0, 1.0, 4.0],
                                                                       [1.0, 4.0, 1.0]]
    assert mt.scatter_add(x, 0, mt.tensor([[1, 1, 1], [1, 1, 0]]), mt.ones(2, 3)).tolist() == \
        [[0.0, 0.0, 1.0], [2.0, 2.0, 1.0]]


def test_scatter_family_in_place_forms_write_into_the_tensor():
    x = mt.zeros(2, 3)
    data = x.numpy()
    assert x.scatter_(0, mt.tensor([[1, 0, 1]]), 1.0) is x
    assert x.scatter_add_(1, mt.tensor([[0, 0]]), mt.tensor([[2.0, 3.0]])) is x
    assert x.index_fill_(1, mt.tensor([2]), -1.0) is x
    assert x.index_add_(0, mt.tensor([1]), mt.ones(1, 3), alpha=2) is x
    assert x.index_put_((mt.tensor([0]), mt.tensor([1])), mt.tensor(7.0), accumulate=True) is x
    assert x.tolist() == [[5.0, 8.0, -1.0], [3.0, 2.0, 1.0]] and x.numpy() is data


def test_index_put_keeps_setitem_working_and_accumulates_repeats():
    x = mt.zeros(3)
    x[mt.tensor([0, 0, 2])] = mt.tensor([1.0, 2.0, 3.0])  # a repeat: one value lands
    assert x.tolist()[2] == 3.0 and x.tolist()[0] in (1.0, 2.0)
    x[1:] = 4  # any index and value setitem takes
    y = mt.zeros(3).index_put((mt.tensor([0, 0, 2]),), mt.tensor([1.0, 2.0, 3.0]),
                              accumulate=True)
    assert y.tolist() == [3.0, 0.0, 3.0]
    mask = mt.tensor([True, False, True])
    assert mt.index_put(mt.ones(3), (mask,), mt.tensor(5.0)).tolist() == [5.0, 1.0, 5.0]


def test_scatter_gradients_and_the_multiply_reduction_has_none():
    x, src = mt.randn(3, 2, dtype=mt.float64, requires_grad=True), \
        mt.randn(1, 2, dtype=mt.float64, requires_grad=True)
    index = mt.tensor([[2, 0]])
    mt.scatter(x, 0, index, src).sum().backward()
    assert x.grad.tolist() == [[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]]
    assert src.grad.tolist() == [[1.0, 1.0]]
    assert gradgradcheck(lambda a, b: mt.index_add(a, 1, mt.tensor([1, 1]), b, alpha=-2.0),
                         [x, mt.randn(3, 2, dtype=mt.float64, requires_grad=True)])
    with pytest.raises(RuntimeError, match="multiply"):
        mt.scatter(x, 0, index, src, reduce="multiply").sum().backward()


def test_int32_indices_work_where_pytorch_takes_them():
    """gather, scatter, scatter_add and index_add take int32 indices as PyTorch does (same
    values and gradients as int64); index_fill keeps PyTorch's int64 rule."""
    x = mt.randn(3, 4, dtype=mt.float64, requires_grad=True)
    src = mt.randn(3, 2, dtype=mt.float64)
    rows = [[0, 3], [2, 2], [1, 0]]
    for dtype in (mt.int64, mt.int32):
        index = mt.tensor(rows, dtype=dtype)
        outs = [x.gather(1, index), x.scatter(1, index, src), x.scatter_add(1, index, src),
                x.index_add(1, mt.tensor([3, 0], dtype=dtype), src)]
        if dtype is mt.int64:
            expected = [o.detach().numpy() for o in outs]
            grads = [mt.autograd.grad(o.sum() * 1.5, x)[0].numpy() for o in outs]
        else:
            for o, e, g in zip(outs, expected, grads):
                np.testing.assert_array_equal(o.detach().numpy(), e)
                np.testing.assert_array_equal(mt.autograd.grad(o.sum() * 1.5, x)[0].numpy(), g)
    assert gradcheck(lambda a: a.gather(0, mt.tensor([[2, 0, 1, 1]], dtype=mt.int32)), [x])
    with pytest.raises(IndexError, match="int64"):
        x.index_fill(1, mt.tensor([0], dtype=mt.int32), 0.0)


def test_index_fill_with_a_tensor_value_gets_its_gradient():
    x = mt.randn(2, 3, dtype=mt.float64, requires_grad=True)
    value = f64(2.0, requires_grad=True)
    out = x.index_fill(1, mt.tensor([0, 2]), value)
    assert out[:, 0].tolist() == [2.0, 2.0]
    out.sum().backward()
    assert value.grad.item() == 4.0 and x.grad.tolist() == [[0.0, 1.0, 0.0]] * 2


def test_scatter_family_errors_name_the_argument():
    x = mt.ones(2, 3)
    with pytest.raises(RuntimeError, match="out of bounds"):
        x.scatter(0, mt.tensor([[2, 0, 0]]), 1.0)
    with pytest.raises(RuntimeError, match="int64"):
        x.scatter(0, mt.tensor([[0.0, 0.0, 0.0]]), 1.0)
    with pytest.raises(TypeError, match="src"):
        x.scatter(0, mt.tensor([[0, 0, 0]]))
    with pytest.raises(RuntimeError, match="reduce"):
        x.scatter(0, mt.tensor([[0, 0, 0]]), 1.0, reduce="max")
    with pytest.raises(RuntimeError, match="source shape"):
        x.index_add(0, mt.tensor([0]), mt.ones(1, 2))
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_fill(0, mt.tensor([2]), 0.0)
    with pytest.raises(TypeError, match="indices"):
        x.index_put(mt.tensor([0]), mt.tensor(1.0))
    with pytest.raises(RuntimeError, match="dtype"):
        x.index_put((mt.tensor([0]),), mt.tensor(1.0, dtype=mt.float64))
    with pytest.raises(ValueError, match="broadcast"):
        x.index_put((mt.tensor([0]),), mt.ones(2))


# ----------------------------------------------------------------------------- tiling


def test_tiling_values():
    x = mt.tensor([[1, 2, 3], [4, 5, 6]])
    assert mt.roll(x, 1).tolist() == [[6, 1, 2], [3, 4, 5]]
    assert x.roll((1, -1), (0, 1)).tolist() == [[5, 6, 4], [2, 3, 1]]
    assert x.repeat_interleave(mt.tensor([1, 0, 2]), dim=1).tolist() == [[1, 3, 3], [4, 6, 6]]
    assert mt.repeat_interleave(mt.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert mt.tile(x, (2,)).tolist() == [[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]]
    assert mt.diag(mt.tensor([1, 2]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    assert x.diag(-1).tolist() == [4] and x.diag(3).tolist() == []


def test_tiling_results_are_copies_and_narrow_a_view():
    x = mt.arange(6.0).reshape(2, 3)
    for out in (x.roll(0, 0), x.tile((1,)), x.tile(()), x.repeat_interleave(1, dim=0), x.diag(),
                mt.roll(x, shifts=1), x.roll(2, 1)):
        assert not np.shares_memory(out.numpy(), x.numpy())
    assert np.shares_memory(x.narrow(1, 1, 2).numpy(), x.numpy())


def test_tiling_errors():
    with pytest.raises(RuntimeError, match="align"):
        mt.roll(mt.ones(2, 3), (1, 1), 0)
    with pytest.raises(RuntimeError, match="non-negative"):
        mt.repeat_interleave(mt.ones(3), -1)
    with pytest.raises(RuntimeError, match="output_size"):
        mt.repeat_interleave(mt.ones(3), 2, output_size=5)
    with pytest.raises(TypeError, match="dims"):
        mt.tile(mt.ones(3), 2)
    with pytest.raises(RuntimeError, match="1-d or 2-d"):
        mt.diag(mt.ones(2, 2, 2))


# ----------------------------------------------------------------------------- products


def test_mm_bmm_are_strict_and_keep_integers():
    assert mt.mm(mt.tensor([[1, 2]]), mt.tensor([[3], [4]])).tolist() == [[11]]
    assert mt.mm(mt.tensor([[1, 2]]), mt.tensor([[3], [4]])).dtype == mt.int64
    with pytest.raises(RuntimeError, match="2-d"):
        mt.mm(mt.ones(3), mt.ones(3, 2))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        mt.mm(mt.ones(2, 3), mt.ones(2, 3))
    with pytest.raises(RuntimeError, match="3-d"):
        mt.bmm(mt.ones(2, 3), mt.ones(3, 2))
    with pytest.raises(RuntimeError, match="first two dims"):
        mt.bmm(mt.ones(1, 2, 3), mt.ones(2, 3, 2))  # no broadcasting of the batch
    assert mt.outer(mt.tensor([1, 2]), mt.tensor([1.5])).tolist() == [[1.5], [3.0]]


def test_einsum_forms():
    a, b = mt.randn(2, 3), mt.randn(3, 4)
    expected = (a @ b).numpy()
    for out in (mt.einsum("ij,jk->ik", a, b), mt.einsum("ij,jk", [a, b]),
                mt.einsum(" ij , jk -> ik ", (a, b)), mt.einsum("...j,jk", a, b)):
        np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    s = mt.arange(9.0).reshape(3, 3)
    assert mt.einsum("ii", s).item() == 12.0
    assert mt.einsum("ij->ji", s).tolist() == s.T.tolist()
    assert not np.shares_memory(mt.einsum("ij->ji", s).numpy(), s.numpy())
    assert mt.einsum("Ab->bA", mt.ones(2, 3)).shape == (3, 2)
    assert mt.einsum("...i->i", mt.ones(2, 3, 4)).tolist() == [6.0] * 4


@pytest.mark.parametrize("equation,shapes", [
    ("ii", [(3, 3)]), ("iij->j", [(2, 2, 3)]), ("ii->i", [(3, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 2)]), ("...ij,...jk", [(2, 1, 2, 3), (3, 3, 2)]),
    ("ij,ij->ij", [(1, 3), (2, 3)]), ("i,j->ij", [(3,), (2,)]), ("ij->", [(2, 3)]),
    ("b...i,bi->b...", [(2, 4, 3), (2, 3)]), ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("iji->j", [(2, 3, 2)]), ("...i->i", [(2, 3, 4)])])
def test_einsum_differentiates_twice(equation, shapes):
    rng = np.random.default_rng(0)
    operands = [mt.tensor(rng.standard_normal(s), dtype=mt.float64, requires_grad=True)
                for s in shapes]
    assert gradcheck(lambda *ts: mt.einsum(equation, *ts), operands)
    assert gradgradcheck(lambda *ts: mt.einsum(equation, *ts), operands)


def test_einsum_errors():
    with pytest.raises(RuntimeError, match="operands"):
        mt.einsum("ij,jk", mt.ones(2, 3))
    with pytest.raises(RuntimeError, match="size 2"):
        mt.einsum("ij,jk", mt.ones(2, 3), mt.ones(2, 3))
    with pytest.raises(RuntimeError, match="more than once"):
        mt.einsum("i->ii", mt.ones(2))
    with pytest.raises(RuntimeError, match="a-zA-Z"):
        mt.einsum("i1", mt.ones(2, 3))
    with pytest.raises(TypeError, match="equation"):
        mt.einsum(1, mt.ones(2))
    with pytest.raises(ValueError, match="at least one operand"):
        mt.einsum("i")


# ----------------------------------------------------------------------------- rounding


def test_round_is_half_to_even_and_takes_decimals():
    x = mt.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 1.25])
    assert x.round().tolist() == [0.0, 2.0, 2.0, -0.0, -2.0, 1.0]
    assert mt.round(mt.tensor([1.2345, 12.5]), decimals=2).tolist() == pytest.approx([1.23, 12.5])
    assert mt.round(mt.tensor([1234.5, 15.0, 25.0]), decimals=-1).tolist() == [1230.0, 20.0, 20.0]
    with pytest.raises(TypeError):
        mt.round(x, 1)  # decimals is keyword-only, as in PyTorch


def test_rounding_integers_gives_copies_and_bools_raise():
    x = mt.tensor([1, -2])
    for fn in (mt.floor, mt.ceil, mt.trunc, mt.round):
        out = fn(x)
        assert out.tolist() == [1, -2] and out.dtype == mt.int64
        assert not np.shares_memory(out.numpy(), x.numpy())
        with pytest.raises(NotImplementedError):
            fn(mt.tensor([True]))


def test_rounding_gradient_is_zero_and_in_place_forms():
    x = f64([0.3, 1.7, -2.2], requires_grad=True)
    (x.floor() + x.ceil() + x.trunc() + x.round(decimals=1)).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]
    y = mt.tensor([0.3, 1.7, -2.2])
    assert y.floor_() is y and y.tolist() == [0.0, 1.0, -3.0]
    z = mt.tensor([1.26])
    assert z.round_(decimals=1).tolist() == pytest.approx([1.3])


def test_remainder_takes_the_divisors_sign_fmod_the_dividends():
    a, b = mt.tensor([-3.0, 3.0, -3.0, 3.0]), mt.tensor([2.0, -2.0, -2.0, 2.0])
    assert mt.remainder(a, b).tolist() == [1.0, -1.0, -1.0, 1.0]
    assert (a % b).tolist() == [1.0, -1.0, -1.0, 1.0]
    assert mt.fmod(a, b).tolist() == [-1.0, 1.0, -1.0, 1.0]
    assert (5 % mt.tensor([3.0, -3.0])).tolist() == [2.0, -1.0]
    assert (mt.tensor([-7, 7]) % 3).tolist() == [2, 1]
    assert mt.fmod(mt.tensor([-7, 7]), 3).tolist() == [-1, 1]
    assert (mt.tensor([3]) % 2.5).dtype == mt.float32
    x = mt.tensor([5.0, -5.0])
    x %= 3
    assert x.tolist() == [2.0, 1.0]
    assert np.isnan(mt.remainder(mt.tensor([1.0]), 0.0).item())


def test_remainder_errors():
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        mt.tensor([3]) % mt.tensor([0])
    with pytest.raises(NotImplementedError):
        mt.tensor([True]) % mt.tensor([True])
    with pytest.raises(TypeError, match="input"):
        mt.fmod(5, mt.ones(2))


def test_remainder_gradients():
    a = f64([4.5, -4.5, 1.0], requires_grad=True)
    b = f64([2.0, 2.0, -3.0], requires_grad=True)
    mt.remainder(a, b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0, 1.0]
    assert b.grad.tolist() == [-2.0, 3.0, 1.0]  # -floor(a / b)
    b.grad = None
    mt.fmod(a, b).sum().backward()
    assert b.grad.tolist() == [-2.0, 2.0, 0.0]  # -trunc(a / b)
    c = a.detach().clone().requires_grad_()
    d = c * 1.0
    d.remainder_(b)  # in place: backward still has what it needs
    d.sum().backward()
    assert c.grad.tolist() == [1.0, 1.0, 1.0]


# ----------------------------------------------------------------------------- closeness


def test_isclose_and_allclose():
    a = mt.tensor([1.0, float("nan"), float("inf"), float("inf")])
    b = mt.tensor([1.0 + 1e-6, float("nan"), float("inf"), -float("inf")])
    assert mt.isclose(a, b).tolist() == [True, False, True, False]
    assert a.isclose(b, equal_nan=True).tolist() == [True, True, True, False]
    assert mt.allclose(mt.ones(3), mt.ones(3) + 1e-7) is True
    assert mt.allclose(mt.ones(3), mt.ones(3) * 1.1) is False
    assert mt.ones(3).allclose(mt.ones(3) * 1.1, rtol=0.2) is True
    assert mt.isclose(mt.tensor([1, 2]), mt.tensor([1, 3])).tolist() == [True, False]
    assert mt.isclose(mt.tensor([[1.0], [2.0]]), mt.tensor([1.0, 2.0])).shape == (2, 2)
    assert mt.isclose(mt.tensor([1.0]), mt.tensor([1.0]) + 1e-3, rtol=0, atol=0).tolist() == \
        [False]


def test_closeness_errors():
    with pytest.raises(RuntimeError, match="same dtype"):
        mt.isclose(mt.ones(2), mt.ones(2, dtype=mt.float64))
    with pytest.raises(TypeError, match="other"):
        mt.allclose(mt.ones(2), 1.0)
    with pytest.raises(RuntimeError, match="rtol"):
        mt.isclose(mt.ones(2), mt.ones(2), rtol=-1.0)


@pytest.mark.parametrize("on_gpu", [False, True])
def test_view_shares_storage_where_the_strides_allow_and_raises_elsewhere(on_gpu):
    """view never copies: on a transposed tensor it is a RuntimeError, as in PyTorch. The host
    check reshapes and asks whether the result shares memory (NumPy 2.5 deprecates setting
    .shape); a GPU array's (the stand-in's, strict as CuPy's) still has its .shape set."""
    if on_gpu:
        import gpu_standin
        from minitorch import device_arrays
        device_arrays.use_gpu_library(gpu_standin)
    try:
        x = mt.arange(24.0).reshape(4, 6)
        if on_gpu:
            x = x.to("cuda")
            assert device_arrays.is_gpu_array(x._data)
        v = x.view(2, 12)
        assert v.shape == (2, 12) and v.data_ptr() == x.data_ptr()
        every_other_row = x[::2]  # (2, 6), rows 12 elements apart: (2, 2, 3) is a view
        assert every_other_row.view(2, 2, 3).data_ptr() == every_other_row.data_ptr()
        for not_a_view in (lambda: x.t().view(24), lambda: every_other_row.view(12)):
            with pytest.raises(RuntimeError, match="incompatible .* use .reshape"):
                not_a_view()
        assert x[:0].view(0, 3, 2).shape == (0, 3, 2)
        np.testing.assert_array_equal(x.t().reshape(24).cpu().numpy(),
                                      np.arange(24.0).reshape(4, 6).T.reshape(24))
    finally:
        if on_gpu:
            device_arrays.use_gpu_library(None)


def test_cat_and_stack_promote_mixed_dtypes_and_cat_skips_1d_empties():
    """As torch.cat / torch.stack: the result has the inputs' promoted dtype, and gradients
    come back in each input's own dtype; cat lets a 1-d empty tensor join any other shape."""
    a = mt.ones(2, 3, dtype=mt.float32, requires_grad=True)
    b = mt.full((2, 3), 2.0, dtype=mt.float64, requires_grad=True)
    for joined in (mt.cat([a, b], dim=1), mt.stack([a, b], dim=0)):
        assert joined.dtype == mt.float64
        joined.sum().backward()
    assert a.grad.dtype == mt.float32 and b.grad.dtype == mt.float64
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 3), 2.0))
    assert mt.cat([mt.arange(3), mt.ones(2)]).dtype == mt.float32  # int64 with float32
    joined = mt.cat([mt.ones(0), mt.full((2, 3), 5.0), mt.ones(0)], dim=1)
    np.testing.assert_array_equal(joined.numpy(), np.full((2, 3), 5.0))
    assert mt.cat([mt.ones(0), mt.ones(0)]).shape == (0,)
