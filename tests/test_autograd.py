"""Autograd behaviour: user Functions, backward/grad arguments, the iterative walk, freeing of
the graph, higher-order gradients, grad modes, hooks, detach, and in-place detection (version
counter); with PyTorch parity for a few of them where torch is installed."""
import numpy as np
import pytest

import minitorch as mt
from conftest import doubling_function, make_function
from minitorch.autograd import Function, grad


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")


# ----------------------------------------------------------------------------- user Functions

class Cube(Function):
    """x³ with backward 3x²·grad, written in Tensor ops so it differentiates again."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x  # forward runs under no_grad: Tensor ops record no graph here

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        return grad_output * 3 * x * x


class ScaledSum(Function):
    """(a·scale + b, a − b): two outputs, a non-tensor argument, and needs_input_grad."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return a * scale + b, a - b

    @staticmethod
    def backward(ctx, grad_sum, grad_diff):
        grad_a = grad_sum * ctx.scale + grad_diff if ctx.needs_input_grad[0] else None
        grad_b = grad_sum - grad_diff if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


def test_user_function_forward_backward_and_double_backward():
    x = mt.tensor([1.0, -2.0, 0.5], dtype=mt.float64, requires_grad=True)
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    np.testing.assert_allclose(y.detach().numpy(), [1.0, -8.0, 0.125])
    (g,) = grad(y.sum(), x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), 3 * x.detach().numpy() ** 2)
    (gg,) = grad(g.sum(), x)
    np.testing.assert_allclose(gg.numpy(), 6 * x.detach().numpy())
    assert mt.autograd.gradcheck(Cube.apply, (x,))
    assert mt.autograd.gradgradcheck(Cube.apply, (x,))


def test_user_function_two_outputs_and_needs_input_grad():
    a = mt.tensor([1.0, 2.0], requires_grad=True)
    b = mt.tensor([3.0, 4.0])
    s, d = ScaledSum.apply(a, b, 2.0)
    assert s.grad_fn is d.grad_fn and s.grad_fn.needs_input_grad == (True, False, False)
    (s.sum() + 10 * d.sum()).backward()
    assert a.grad.tolist() == [12.0, 12.0]
    assert b.grad is None
    # Only one output used: the other's gradient arrives as zeros.
    a.grad = None
    s, d = ScaledSum.apply(a, b, 2.0)
    d.sum().backward()
    assert a.grad.tolist() == [1.0, 1.0]


def test_function_without_grad_inputs_records_nothing():
    y = Cube.apply(mt.tensor([2.0]))
    assert y.grad_fn is None and not y.requires_grad


def test_user_function_returning_wrong_gradient_shape_is_reported():
    Bad = doubling_function(lambda g: g.sum(), "Bad")
    x = mt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"BadBackward.*shape \(\).*shape \(3,\)"):
        Bad.apply(x).sum().backward()


# ----------------------------------------------------------------------------- backward / grad

def test_backward_with_gradient_argument():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).backward(gradient=mt.tensor([1.0, 0.5, 0.0]))
    assert x.grad.tolist() == [2.0, 2.0, 0.0]


def test_gradients_accumulate_across_backward_calls():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (x * 3).sum().backward()
    (x * x).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]


def test_a_plus_a_then_squared():
    a = mt.tensor([3.0, -1.0], requires_grad=True)
    b = a + a
    c = b * b
    c.sum().backward()
    # c = 4a², dc/da = 8a
    assert a.grad.tolist() == [24.0, -8.0]


def _counted_identity():
    """A Function that passes the gradient through, and the list its backward appends to."""
    calls = []

    def count(g):
        calls.append(1)
        return g
    return make_function("Counted", lambda x: x * 1.0, count), calls


def test_diamond_graph_runs_each_node_once():
    Counted, calls = _counted_identity()
    x = mt.ones(2, requires_grad=True)
    shared = Counted.apply(x)
    (shared.exp() + shared.sin() + shared * 2).sum().backward()
    assert len(calls) == 1
    np.testing.assert_allclose(x.grad.numpy(), np.exp(1) + np.cos(1) + 2, rtol=1e-6)


def test_node_runs_after_all_consumers_whatever_the_path_lengths():
    # shared feeds the output directly and through a chain of 5 ops: its one backward call must
    # come after both paths delivered, whichever the depth-first order met first.
    Counted, calls = _counted_identity()
    x = mt.tensor([2.0], dtype=mt.float64, requires_grad=True)
    shared = Counted.apply(x)
    long = shared
    for _ in range(5):
        long = long * 2.0
    for out in (shared + long, long + shared):
        calls.clear()
        x.grad = None
        out.sum().backward(retain_graph=True)
        assert len(calls) == 1 and x.grad.tolist() == [33.0]


def test_consumer_returning_none_does_not_block_the_producer():
    # One consumer of h returns None for it (as PyTorch: no contribution); h's other consumer
    # still carries the gradient on to x.
    Blocks = doubling_function(lambda g: None, "Blocks")

    x = mt.ones(2, requires_grad=True)
    h = x * 3
    (Blocks.apply(h).sum() + h.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_backward_depth_does_not_use_the_python_stack():
    import inspect
    import sys
    x = mt.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    previous = sys.getrecursionlimit()
    # Room for the engine's own few frames, far less than the graph's depth.
    sys.setrecursionlimit(len(inspect.stack(0)) + 100)
    try:
        y.backward()
    finally:
        sys.setrecursionlimit(previous)
    assert x.grad.item() == 1.0


@pytest.mark.slow  # ~10 s of CPU: 100,000 forward ops and their backward
def test_chain_of_100000_ops_backpropagates_without_recursion_error():
    x = mt.tensor(1.0, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    y.backward()
    assert x.grad.item() == 1.0


def test_grad_returns_without_touching_dot_grad():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    w = mt.tensor([3.0, 4.0], requires_grad=True)
    gx, gw = grad((x * w).sum(), [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    assert not gx.requires_grad


def test_grad_outputs_and_allow_unused():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    unused = mt.tensor([5.0], requires_grad=True)
    y = x * 2
    (gx,) = grad(y, x, grad_outputs=mt.tensor([1.0, 10.0]), retain_graph=True)
    assert gx.tolist() == [2.0, 20.0]
    with pytest.raises(RuntimeError, match=r"inputs\[1\].*allow_unused"):
        grad(y.sum(), [x, unused], retain_graph=True)
    gx, gu = grad(y.sum(), [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gu is None


def test_backward_inputs_argument_limits_accumulation():
    x = mt.tensor([1.0], requires_grad=True)
    w = mt.tensor([2.0], requires_grad=True)
    (x * w).sum().backward(inputs=[x])
    assert x.grad.tolist() == [2.0] and w.grad is None


def test_backward_inputs_gives_each_its_own_grad_storage():
    a = mt.ones(2, requires_grad=True)
    b = mt.ones(2, requires_grad=True)
    (a + b).sum().backward(inputs=[a, b])  # AddBackward hands the same tensor to both
    with mt.no_grad():
        a.grad.mul_(5)
    assert a.grad.tolist() == [5.0, 5.0] and b.grad.tolist() == [1.0, 1.0]


def test_inputs_runs_only_the_graph_leading_to_them():
    Counted, calls = _counted_identity()
    x = mt.ones(2, requires_grad=True)
    w = mt.tensor([3.0, 4.0], requires_grad=True)
    side = Counted.apply(x).exp()  # leads only to x
    loss = (side * w).sum()
    (gw,) = grad(loss, w)
    np.testing.assert_allclose(gw.numpy(), np.exp([1.0, 1.0]), rtol=1e-6)
    assert calls == []
    side.sum().backward()  # the part grad() did not run was not freed either
    assert len(calls) == 1 and x.grad is not None


def test_grad_of_a_non_leaf_and_of_a_repeated_input():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    gh, gx, gx_again = grad((h * h).sum(), [h, x, x])
    assert gh.tolist() == [6.0, 12.0]
    assert gx.tolist() == [18.0, 36.0] and gx_again.tolist() == [18.0, 36.0]


def test_backward_of_a_tensor_without_graph_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        mt.ones(2).sum().backward()


# ----------------------------------------------------------------------------- freeing the graph

def test_graph_is_freed_and_second_backward_raises():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*"
                                           "retain_graph=True"):
        y.backward()


def test_saved_tensors_are_released_after_backward():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    node = y.grad_fn
    assert len(node._saved) == 1
    y.sum().backward()
    assert node._saved == ()


def test_retain_graph_allows_a_second_backward():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


# ----------------------------------------------------------------------------- higher order

def test_hessian_vector_product_of_sum_tanh_cubed():
    mt.manual_seed(0)
    x = mt.randn(5, dtype=mt.float64, requires_grad=True)
    v = mt.randn(5, dtype=mt.float64)
    (g,) = grad((x.tanh() ** 3).sum(), x, create_graph=True)
    assert g.requires_grad
    (hv,) = grad((g * v).sum(), x)
    t = np.tanh(x.detach().numpy())
    s = 1 - t ** 2  # d tanh = s;  f' = 3 t² s;  f'' = 6 t s² − 6 t³ s
    expected = (6 * t * s ** 2 - 6 * t ** 3 * s) * v.numpy()
    np.testing.assert_allclose(hv.numpy(), expected, rtol=1e-10, atol=1e-12)


def test_create_graph_backward_builds_differentiable_grad():
    x = mt.tensor([2.0], dtype=mt.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (g2,) = grad(x.grad.sum(), x)
    assert g2.tolist() == [12.0]


def test_third_derivative():
    x = mt.tensor([0.7], dtype=mt.float64, requires_grad=True)
    (g1,) = grad(x.sin().sum(), x, create_graph=True)
    (g2,) = grad(g1.sum(), x, create_graph=True)
    (g3,) = grad(g2.sum(), x)
    np.testing.assert_allclose(g3.numpy(), -np.cos(0.7), rtol=1e-12)


# ----------------------------------------------------------------------------- grad modes

def test_no_grad_and_enable_grad_as_context_managers():
    x = mt.ones(2, requires_grad=True)
    with mt.no_grad():
        assert not mt.is_grad_enabled()
        y = x * 2
        with mt.enable_grad():
            z = x * 2
    assert mt.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_grad_modes_as_decorators():
    x = mt.ones(2, requires_grad=True)

    @mt.no_grad()
    def doubled(t):
        return t * 2

    @mt.no_grad
    def tripled(t):
        return t * 3

    @mt.enable_grad()
    def inside(t):
        return t * 4

    assert not doubled(x).requires_grad and not tripled(x).requires_grad
    with mt.no_grad():
        assert inside(x).requires_grad
    assert mt.is_grad_enabled()


def test_set_grad_enabled():
    x = mt.ones(1, requires_grad=True)
    with mt.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert mt.is_grad_enabled()
    mt.set_grad_enabled(False)
    try:
        assert not (x * 2).requires_grad
    finally:
        mt.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_grad_mode_restored_after_exception():
    with pytest.raises(ZeroDivisionError):
        with mt.no_grad():
            1 / 0
    assert mt.is_grad_enabled()


# ----------------------------------------------------------------------------- leaves, hooks

def test_detach_shares_memory_and_cuts_the_graph():
    x = mt.ones(3, requires_grad=True)
    y = x * 2
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert np.shares_memory(d.numpy(), y.detach().numpy())
    (d * y).sum().backward()
    assert x.grad.tolist() == [4.0, 4.0, 4.0]  # d is a constant 2


def test_requires_grad_and_is_leaf():
    x = mt.ones(2)
    assert not x.requires_grad and x.is_leaf
    assert x.requires_grad_() is x and x.requires_grad
    y = x * 2
    assert not y.is_leaf and y.requires_grad
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    assert mt.zeros(2, requires_grad=True).requires_grad


def test_register_hook_on_leaf_and_non_leaf():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    y = x * 3
    y.register_hook(lambda g: seen.append(g.tolist()))
    handle = x.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert seen == [[6.0, 12.0]]
    assert x.grad.tolist() == [180.0, 360.0]
    handle.remove()
    x.grad = None
    (x * 1).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_hook_on_non_leaf_changes_what_flows_on():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 0)
    y.sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_leaf_hook_runs_once_on_the_summed_gradient():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * x).sum().backward()  # two contributions to x: 1·x and x·1
    assert seen == [[2.0, 4.0]] and x.grad.tolist() == [2.0, 4.0]


def test_leaf_hook_applies_to_what_grad_returns():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (gx,) = grad((x * 1).sum(), x)
    assert gx.tolist() == [10.0, 10.0] and x.grad is None


def test_hook_on_an_unused_output_sees_zeros():
    x = mt.ones(2, 3, requires_grad=True)
    first, second = x.unbind(0)
    seen = []
    second.register_hook(lambda g: seen.append(g.tolist()))
    first.sum().backward()
    assert seen == [[0.0, 0.0, 0.0]]
    assert x.grad.tolist() == [[1.0] * 3, [0.0] * 3]


def test_retain_grad():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]


# ----------------------------------------------------------------------------- in-place

def test_inplace_change_of_a_saved_tensor_raises():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y.exp()  # exp saves its output
    z.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*ExpBackward"):
        z.sum().backward()


@pytest.mark.parametrize("changed", ["a", "b"])
def test_inplace_change_of_either_saved_operand_of_a_product_raises(changed):
    a = mt.tensor([1.0, 2.0], requires_grad=True) * 1
    b = mt.tensor([3.0, 4.0], requires_grad=True) * 1
    z = a * b  # saves both: each operand is the other's gradient factor
    with mt.no_grad():
        (a if changed == "a" else b).add_(1)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*MulBackward"):
        z.sum().backward()


def test_inplace_change_of_a_product_operand_that_needs_no_gradient_factor_is_allowed():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    c = mt.tensor([3.0, 4.0])  # needs no gradient: x's factor is c, so c is saved, x is not
    y = x * 1
    z = y * c
    with mt.no_grad():
        y.add_(10)
    z.sum().backward()
    assert x.grad.tolist() == [3.0, 4.0]


def test_inplace_change_of_a_saved_input_through_a_view_raises():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    z = y.log()  # log saves its input
    with mt.no_grad():
        y[0] = 5.0  # also through setitem (indexing) and under no_grad
    with pytest.raises(RuntimeError, match="in-place"):
        z.sum().backward()
    x2 = mt.tensor([1.0, 2.0], requires_grad=True)
    y2 = x2 * 1
    z2 = y2.sin()
    with mt.no_grad():
        y2.view(2, 1).add_(1)  # through a view: the version counter is shared
    with pytest.raises(RuntimeError, match="in-place"):
        z2.sum().backward()


def test_inplace_change_of_an_unsaved_tensor_gives_right_gradients():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    z = y + 1  # add saves nothing
    y.mul_(3)  # y's history now includes the multiplication
    (z.sum() + y.sum()).backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_inplace_on_leaf_that_requires_grad_raises():
    x = mt.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        x.add_(1)
    with mt.no_grad():
        x.add_(1)  # allowed: the optimizer's update
    assert x.tolist() == [2.0, 2.0]


# ----------------------------------------------------------------------------- PyTorch parity

def test_parity_composite_gradient_with_torch():
    torch = _torch()
    rng = np.random.default_rng(0)
    a_np, b_np = rng.standard_normal((3, 4)), rng.standard_normal((4,))

    def f(lib, a, b):
        h = lib.tanh(a * b + 1) @ b
        return (h.exp() / (1 + h * h)).sum() + a.amax(dim=1).sum() + a.var(dim=0).mean()

    a, b = mt.tensor(a_np, requires_grad=True), mt.tensor(b_np, requires_grad=True)
    ta, tb = (torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True))
    f(mt, a, b).backward()
    f(torch, ta, tb).backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-10)


def test_parity_hooks_and_none_gradients_with_torch():
    torch = _torch()
    for lib, Fn in ((mt, Function), (torch, torch.autograd.Function)):
        class Blocks(Fn):
            @staticmethod
            def forward(ctx, t):
                return t * 2

            @staticmethod
            def backward(ctx, g):
                return None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        calls = []
        x.register_hook(lambda g: calls.append(g.tolist()) or g.clamp(max=3.0))
        h = x * 3
        (Blocks.apply(h).sum() + (x * x).sum() + h.sum()).backward()
        if lib is mt:
            ours = calls, x.grad.tolist()
    assert ours == (calls, x.grad.tolist())


def test_parity_tie_breaking_of_max_and_maximum_with_torch():
    torch = _torch()
    values = [[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]
    x, tx = mt.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    (x.amax(dim=1).sum() + mt.maximum(x, mt.tensor(2.0)).sum()).backward()
    (tx.amax(dim=1).sum() + torch.maximum(tx, torch.tensor(2.0)).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_parity_hessian_vector_product_with_torch():
    torch = _torch()
    rng = np.random.default_rng(1)
    x_np, v_np = rng.standard_normal(4), rng.standard_normal(4)

    def hvp(lib, grad_fn, x, v):
        (g,) = grad_fn((x.sigmoid() * x.exp()).sum(), x, create_graph=True)
        (h,) = grad_fn((g * v).sum(), x)
        return h

    x = mt.tensor(x_np, requires_grad=True)
    tx = torch.tensor(x_np, requires_grad=True)
    ours = hvp(mt, mt.autograd.grad, x, mt.tensor(v_np))
    theirs = hvp(torch, torch.autograd.grad, tx, torch.tensor(v_np))
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-10)


def test_parity_indexing_backward_with_torch():
    torch = _torch()
    x_np = np.arange(12.0).reshape(3, 4)
    x, tx = mt.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    index = [2, 0, 2]
    (x[mt.tensor(index), 1:].sum() + x[x > 5].sum() + x[..., None, -1].sum()).backward()
    (tx[torch.tensor(index), 1:].sum() + tx[tx > 5].sum() + tx[..., None, -1].sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_comparisons_and_arg_reductions_carry_no_graph():
    x = mt.tensor([1.0, -2.0], requires_grad=True)
    for result in (x > 0, x == x, x.argmax(), x.isnan(), x.sign()):
        assert not result.requires_grad and result.grad_fn is None


def test_signatures_are_pytorchs():
    import inspect
    backward = inspect.signature(mt.Tensor.backward).parameters
    assert list(backward)[:4] == ["self", "gradient", "retain_graph", "create_graph"]
    assert backward["retain_graph"].default is None and backward["create_graph"].default is False
    params = inspect.signature(grad).parameters
    assert list(params) == ["outputs", "inputs", "grad_outputs", "retain_graph", "create_graph",
                            "only_inputs", "allow_unused", "is_grads_batched",
                            "materialize_grads"]
    assert params["allow_unused"].default is None and params["grad_outputs"].default is None
