"""The per-op fast paths give what the plain paths give, and cost no safety.

- A leaf takes the gradient the engine computed as its ``.grad`` without a copy only when
  nothing else holds it: ``.grad`` never shares memory with another leaf's ``.grad``, with a
  tensor the user holds (the gradient given to ``backward``, one a hook kept, another input) or
  with an array a backward formula kept.
- A node keeps no intermediate alive that its backward does not save (PyTorch's rule), and
  ``autograd.grad`` still finds such an intermediate among its ``inputs``.
- The arithmetic's backward without ``create_graph`` (straight to numpy) gives bit for bit the
  gradients of the same formulas run as ops with ``create_graph=True``; two tensors of one dtype
  skip the promotion work and get the same results as the general path.
"""
import gc
import weakref

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import Function, grad
from minitorch.tensor import Tensor

try:  # the reference where installed; every minitorch check runs without it
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed: no reference")


def _leaf(*shape, dtype=mt.float64, seed=0):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=True)


def _shares(a, b):
    return np.shares_memory(a.detach().numpy(), b.detach().numpy())


# ----------------------------------------------------------------------------- .grad ownership
class _Fresh(Function):
    """Identity whose backward returns a new array and notes its id (without holding it)."""
    made = []

    @staticmethod
    def forward(ctx, x):
        return Tensor._make(x._data.copy())

    @staticmethod
    def backward(ctx, g):
        array = g._data * 3.0
        _Fresh.made.append(id(array))
        return Tensor._make(array)


def test_a_gradient_nothing_else_holds_becomes_grad_as_it_is():
    x = _leaf(4, 5)
    _Fresh.made.clear()
    _Fresh.apply(x).backward(mt.ones(4, 5, dtype=mt.float64))
    assert id(x.grad._data) == _Fresh.made[-1]  # x.grad keeps the array alive: no id reuse
    np.testing.assert_array_equal(x.grad.numpy(), np.full((4, 5), 3.0))


def test_one_gradient_reaching_two_leaves_is_copied_for_one():
    a, b = _leaf(3, 4), _leaf(3, 4, seed=1)
    ((a + b) * 2.0).backward(mt.ones(3, 4, dtype=mt.float64))  # AddBackward: one tensor, twice
    assert not _shares(a.grad, b.grad)
    a.grad.add_(100.0)
    np.testing.assert_array_equal(b.grad.numpy(), np.full((3, 4), 2.0))


def test_the_gradient_given_to_backward_is_never_grad():
    x = _leaf(3)
    g = mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64)
    (x + 1.0).backward(g)
    assert x.grad is not g and not _shares(x.grad, g)
    g.mul_(0.0)
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 2.0, 3.0])


def test_a_gradient_a_hook_kept_is_copied():
    x, kept, kept_leaf = _leaf(3), [], []
    y = x + 1.0
    y.register_hook(kept.append)  # y's gradient flows on to x unchanged
    (y * 2.0).sum().backward()
    assert not _shares(x.grad, kept[0])
    z = _leaf(3)
    z.register_hook(kept_leaf.append)  # a leaf's own hook sees the gradient it gets
    (z * 2.0).sum().backward()
    assert not _shares(z.grad, kept_leaf[0])
    np.testing.assert_array_equal(z.grad.numpy(), [2.0, 2.0, 2.0])


class _Kept(Function):
    """Identity whose backward returns an array it also keeps (itself, or a view of it)."""
    arrays = []
    as_view = False

    @staticmethod
    def forward(ctx, x):
        return Tensor._make(x._data.copy())

    @staticmethod
    def backward(ctx, g):
        array = g._data * 1.0
        _Kept.arrays.append(array)
        return Tensor._make(array[:] if _Kept.as_view else array)


@pytest.mark.parametrize("as_view", [False, True])
def test_an_array_a_backward_formula_kept_is_copied(as_view):
    _Kept.arrays.clear()
    _Kept.as_view = as_view
    x = _leaf(2, 3)
    _Kept.apply(x).backward(mt.ones(2, 3, dtype=mt.float64))
    assert not np.shares_memory(x.grad.numpy(), _Kept.arrays[0])


class _ReturnsOther(Function):
    """f(x, y) = x; backward hands back the tensor ``y`` itself as x's gradient (y is user's)."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.other = y
        return Tensor._make(x._data.copy())

    @staticmethod
    def backward(ctx, g):
        return ctx.other, None


def test_a_gradient_that_is_a_user_tensor_is_copied():
    x = _leaf(3)
    y = mt.tensor([5.0, 6.0, 7.0], dtype=mt.float64)
    _ReturnsOther.apply(x, y).backward(mt.ones(3, dtype=mt.float64))
    assert x.grad is not y and not _shares(x.grad, y)


def test_a_second_backward_adds_into_grad_in_place_as_pytorch():
    """Without create_graph, PyTorch's AccumulateGrad does ``.grad += new``: a reference kept
    from the first backward sees the sum, and the in-place change moves its version on."""
    x = _leaf(3)
    (x * 2.0).sum().backward()
    first, version = x.grad, x.grad._version[0]
    (x * 3.0).sum().backward()
    assert x.grad is first and first._version[0] == version + 1
    np.testing.assert_array_equal(first.numpy(), [5.0, 5.0, 5.0])


def test_with_create_graph_a_second_backward_makes_a_new_grad():
    x = _leaf(3)
    (x * 2.0).sum().backward(create_graph=True)
    first = x.grad
    (x * 3.0).sum().backward(create_graph=True)
    assert x.grad is not first
    np.testing.assert_array_equal(first.detach().numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(x.grad.detach().numpy(), [5.0, 5.0, 5.0])


def test_a_graph_that_saved_grad_sees_the_in_place_sum():
    x, w = _leaf(2), _leaf(2, seed=1)
    (x * 2.0).sum().backward()
    saved_grad = (w * x.grad).sum()  # w's gradient reads x.grad
    (x * 3.0).sum().backward()
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        saved_grad.backward()


def test_grad_accumulates_out_of_place_where_it_cannot_in_place():
    """A read-only .grad, or one of another dtype: a new tensor, the old one unchanged."""
    x = _leaf(3)
    frozen = np.full(3, 2.0)
    frozen.flags.writeable = False
    x.grad = mt.from_numpy(frozen)
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [5.0, 5.0, 5.0])
    np.testing.assert_array_equal(frozen, [2.0, 2.0, 2.0])
    single = x.grad = mt.ones(3, dtype=mt.float32)
    (x * 3.0).sum().backward()
    assert x.grad is not single and x.grad.dtype == mt.float64
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(single.numpy(), [1.0, 1.0, 1.0])


def test_a_gradient_that_is_grad_itself_is_doubled():
    x = _leaf(3)
    (x * 2.0).sum().backward()
    x.register_hook(lambda g: x.grad)  # the incoming gradient is .grad's own memory
    (x * 3.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])


@needs_torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_accumulation_matches_pytorch(create_graph):
    results = []
    for lib in (mt, torch):
        x = lib.tensor([1.0, -2.0, 3.0], dtype=lib.float64, requires_grad=True)
        (x * x).sum().backward(create_graph=create_graph)
        first = x.grad
        (x * 3.0).sum().backward(create_graph=create_graph)
        results.append((first.detach().numpy().copy(), x.grad.detach().numpy().copy(),
                        first is x.grad))
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- graph memory
def test_a_node_keeps_no_intermediate_its_backward_does_not_save():
    x = _leaf(3, 4)
    y = mt.ones(3, 4, dtype=mt.float64)  # no grad: x * y saves y only
    middle = x * y
    alive = weakref.ref(middle)
    out = middle * y
    del middle
    gc.collect()
    assert alive() is None
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))


def test_an_intermediate_a_backward_reads_stays_saved():
    x = _leaf(3)
    middle = x * 2.0
    alive = weakref.ref(middle)
    out = middle * middle  # both factors saved: the gradient of each is the other
    del middle
    gc.collect()
    assert alive() is not None
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 8.0 * x.detach().numpy())


def test_grad_with_respect_to_an_intermediate_used_twice():
    x = _leaf(4)
    middle = x.exp()
    out = (middle * 3.0 + middle.sin()).sum()
    (g_middle, g_x) = grad(out, [middle, x])
    m = middle.detach().numpy()
    np.testing.assert_allclose(g_middle.numpy(), 3.0 + np.cos(m))
    np.testing.assert_allclose(g_x.numpy(), (3.0 + np.cos(m)) * m)


# ----------------------------------------------------------------------------- arithmetic paths
def _gradients(name, arrays, upstream, dtype, create_graph, transpose_a):
    """(a.grad, b.grad) of ``name(a, b)`` (a transposed first if asked: a non-contiguous view)
    back-propagated from ``upstream``."""
    a, b = (mt.tensor(v, dtype=dtype, requires_grad=True) for v in arrays)
    out = getattr(mt, name)(a.t() if transpose_a else a, b)
    out.backward(mt.tensor(upstream, dtype=dtype), create_graph=create_graph)
    if create_graph and name in ("mul", "div"):  # the formulas ran as ops: a graph of their own
        assert a.grad.requires_grad
    return a.grad.detach().numpy().copy(), b.grad.detach().numpy().copy()


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)),
                                    ((), (2, 3)), ("transposed", (4, 3), (3, 4))], ids=str)
def test_backward_without_create_graph_equals_the_ops_bit_for_bit(name, shapes, dtype):
    transpose_a = shapes[0] == "transposed"
    shapes = shapes[1:] if transpose_a else shapes
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(0.5, 2.0, shape) for shape in shapes]
    out_shape = np.broadcast_shapes(shapes[0][::-1] if transpose_a else shapes[0], shapes[1])
    upstream = rng.standard_normal(out_shape)
    plain = _gradients(name, arrays, upstream, dtype, False, transpose_a)
    as_ops = _gradients(name, arrays, upstream, dtype, True, transpose_a)
    for ours, reference in zip(plain, as_ops):
        assert ours.dtype == dtype.numpy
        np.testing.assert_array_equal(ours, reference)


def test_same_dtype_operands_promote_as_the_general_path():
    i8 = mt.tensor([1, 2, 3], dtype=mt.int8)
    assert (i8 * mt.tensor([2, 2, 2], dtype=mt.int8)).dtype is mt.int8
    assert (i8 * mt.tensor(2, dtype=mt.int64)).dtype is mt.int8          # 0-d: weaker
    assert (mt.ones(3) * mt.ones(3, dtype=mt.float64)).dtype is mt.float64
    with pytest.raises(ValueError, match="mul: shape of input"):
        mt.ones(3) * mt.ones(4)


def test_under_no_grad_a_node_records_no_inputs_even_with_a_parameter_among_them():
    weight = _leaf(3)
    with mt.no_grad():
        seen = []

        class _Spy(Function):
            @staticmethod
            def forward(ctx, x, w):
                seen.append(ctx)
                return Tensor._make(x._data * w._data)

        out = _Spy.apply(mt.ones(3, dtype=mt.float64), weight)
    ctx, = seen
    assert ctx.needs_input_grad == (False, True)  # as PyTorch's ctx under no_grad
    assert ctx.inputs == () and ctx.input_edges == () and out.grad_fn is None


class _Saves(Function):
    """x * w, saving both, and noting its ctx."""
    contexts = []

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        _Saves.contexts.append(ctx)
        return Tensor._make(x._data * w._data)

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


def test_a_node_outside_the_graph_keeps_nothing_saved():
    weight, x = _leaf(3), mt.ones(3, dtype=mt.float64)
    _Saves.contexts.clear()
    with mt.no_grad():
        _Saves.apply(x, weight)
    _Saves.apply(x, weight).sum().backward(retain_graph=True)
    outside, inside = _Saves.contexts
    assert outside._saved == ()  # the node is in no graph: nothing to keep for backward
    assert inside.saved_tensors == (x, weight)
    np.testing.assert_array_equal(weight.grad.numpy(), x.numpy())


def test_two_inputs_are_recorded_as_the_general_loop_records_them():
    from minitorch.autograd.function import Context
    leaf = _leaf(2)
    made = leaf * 2.0
    kinds = [leaf, made, mt.ones(2, dtype=mt.float64), 3.0]
    for a in kinds:
        for b in kinds:
            pair, triple = Context(_Saves, (a, b)), Context(_Saves, (a, b, None))
            if True not in pair.needs_input_grad:
                continue
            pair.record_inputs((a, b))
            triple.record_inputs((a, b, None))
            assert pair.needs_input_grad == triple.needs_input_grad[:2]
            assert pair.input_edges == triple.input_edges[:2]
            for ours, general in zip(pair.inputs, triple.inputs):
                assert ours is general or ours == general  # the leaf itself, or (shape, dtype)


@pytest.mark.parametrize("dtype", [mt.float16, mt.float32, mt.float64, mt.bfloat16, mt.int64,
                                   mt.bool])
@pytest.mark.parametrize("scalar", [2.5, 3, True, np.float64(0.1)], ids=repr)
def test_a_python_scalar_operand_gives_as_operands_result(dtype, scalar):
    from minitorch.ops._helpers import as_operands, broadcast_operands
    tensor = mt.ones(3, dtype=dtype)
    for pair in ((tensor, scalar), (scalar, tensor)):
        fast, general = broadcast_operands(*pair, "mul"), as_operands(*pair)
        for ours, reference in zip(fast, general):
            assert ours.dtype is reference.dtype and ours.shape == reference.shape
            np.testing.assert_array_equal(ours.float().numpy(), reference.float().numpy())
    assert (tensor * scalar).dtype is (scalar * tensor).dtype


def test_permute_and_unsqueeze_check_their_dims_as_before():
    x = _leaf(2, 3, 4)
    np.testing.assert_array_equal(x.permute(-1, 0, 1).detach().numpy(),
                                  x.detach().numpy().transpose(2, 0, 1))
    with pytest.raises(IndexError, match="dims: dimension out of range"):
        x.permute(0, 1, 3)
    with pytest.raises(ValueError, match="not a permutation"):
        x.permute(0, 1, -2)
    with pytest.raises(TypeError, match="shape: expected ints"):
        x.permute(0, 1, 2.0)
    assert x.unsqueeze(-1).shape == (2, 3, 4, 1) and x.unsqueeze(1).shape == (2, 1, 3, 4)
    with pytest.raises(IndexError, match="dimension out of range"):
        x.unsqueeze(4)
    y = x.permute(1, 2, 0).unsqueeze(0).reshape(3, 8)  # each backward inverts its own view
    y.backward(mt.arange(24, dtype=mt.float64).reshape(3, 8))
    expected = np.arange(24.0).reshape(3, 4, 2).transpose(2, 0, 1)
    np.testing.assert_array_equal(x.grad.numpy(), expected)


def test_a_context_made_by_hand_saves_as_it_is_asked():
    from minitorch.autograd.function import Context
    x = mt.ones(2, dtype=mt.float64)
    ctx = Context(_Saves, (x, x))  # forward and backward called directly, as in a unit test
    _Saves.forward(ctx, x, x)
    assert ctx.saved_tensors == (x, x)
