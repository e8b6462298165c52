"""Autograd's guards against silently wrong gradients: every tensor an op keeps for backward
(index tensors, embedding ids, masks and conditions, cross-entropy targets) is version-checked,
so changing it in place after forward makes backward raise; hooks must return a Tensor of the
gradient's shape and dtype; a Function.backward returning no Tensor is a TypeError naming it.
PyTorch is the reference where installed (its messages' gist, its gradients)."""
import numpy as np
import pytest

import minitorch as mt
from conftest import doubling_function
from minitorch.autograd import gradcheck, gradgradcheck

W = np.arange(15, dtype=np.float64).reshape(5, 3) / 7.0 - 1.0


# ----------------------------------------------------------------------------- the ops' cases
# Each case runs the op on the library `lib` (minitorch, or torch for parity) and returns
# (output, the non-differentiable tensor the op keeps, the leaves that require grad).

def embedding(lib, dtype):
    w = lib.tensor(W, dtype=dtype, requires_grad=True)
    ids = lib.tensor([[0, 1], [1, 4]])
    return lib.nn.functional.embedding(ids, w), ids, [w]


def embedding_padding(lib, dtype):
    w = lib.tensor(W, dtype=dtype, requires_grad=True)
    ids = lib.tensor([0, 2, 2, 3])
    return lib.nn.functional.embedding(ids, w, padding_idx=2), ids, [w]


def index_select(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    idx = lib.tensor([4, 0, 4])
    return x.index_select(0, idx), idx, [x]


def getitem_int(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    idx = lib.tensor([3, 1, 3])
    return x[idx], idx, [x]


def getitem_pair(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    rows, cols = lib.tensor([0, 2, 4]), lib.tensor([2, 2, 0])
    return x[rows, cols], cols, [x]


def getitem_mask(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    mask = lib.tensor([True, False, True, False, True])
    return x[mask], mask, [x]


def gather(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    idx = lib.tensor([[2, 0], [1, 1], [0, 2], [2, 2], [1, 0]])
    return x.gather(1, idx), idx, [x]


def cross_entropy(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    target = lib.tensor([0, 2, 1, 1, 0])
    return lib.nn.functional.cross_entropy(x, target, label_smoothing=0.1), target, [x]


def cross_entropy_none(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    target = lib.tensor([0, 2, 1, -100, 0])
    return lib.nn.functional.cross_entropy(x, target, reduction="none"), target, [x]


def masked_fill(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    mask = lib.tensor([[True], [False], [True], [False], [False]])
    return x.masked_fill(mask, 0.5), mask, [x]


def where(lib, dtype):
    a = lib.tensor(W, dtype=dtype, requires_grad=True)
    b = lib.tensor(W[:, :1] * 2.0, dtype=dtype, requires_grad=True)
    condition = lib.tensor([[True, False, True]] * 5)
    return lib.where(condition, a, b), condition, [a, b]


def setitem(lib, dtype):
    x = lib.tensor(W, dtype=dtype, requires_grad=True)
    v = lib.tensor(W[:2] * 3.0, dtype=dtype, requires_grad=True)
    idx = lib.tensor([3, 0])
    y = x * 1.0
    y[idx] = v
    return y, idx, [x, v]


CASES = [embedding, embedding_padding, index_select, getitem_int, getitem_pair, getitem_mask,
         gather, cross_entropy, cross_entropy_none, masked_fill, where, setitem]


def _loss(out):
    return (out * out).sum()  # weights each element by its value, so every position matters


def _grads(lib, case, dtype, modify=None):
    out, kept, leaves = case(lib, dtype)
    if modify is not None:
        modify(kept)
    _loss(out).backward()
    return [leaf.grad.detach().numpy().copy() for leaf in leaves]


def _in_place_changes():
    """Ways to change a kept tensor in place, each bumping its version counter."""
    return {"zero_": lambda t: t.zero_(),
            "setitem": lambda t: t.__setitem__(0, t[-1]),
            "view": lambda t: t.view(-1).fill_(0)}  # through a view: one counter


@pytest.mark.parametrize("change", list(_in_place_changes()))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_kept_tensor_changed_in_place_after_forward_makes_backward_raise(case, change):
    out, kept, _ = case(mt, mt.float32)
    _in_place_changes()[change](kept)
    with pytest.raises(RuntimeError, match="modified by an in-place operation.*Backward"):
        _loss(out).backward()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_unchanged_kept_tensor_backward_works(case):
    out, _, leaves = case(mt, mt.float64)
    _loss(out).backward()
    assert all(leaf.grad is not None and leaf.grad.dtype is mt.float64 for leaf in leaves)


# embedding_padding is left out: its padding row gets no gradient by definition (as PyTorch),
# which a numerical Jacobian cannot know.
@pytest.mark.parametrize("case", [c for c in CASES if c is not embedding_padding],
                         ids=lambda c: c.__name__)
def test_gradcheck_unaffected(case):
    _, _, leaves = case(mt, mt.float64)
    assert gradcheck(lambda *xs: _loss(_run_with_leaves(case, xs)), tuple(leaves))


def _run_with_leaves(case, leaves):
    """The case's output with ``leaves`` as its float inputs (gradcheck hands in its own)."""
    given = iter(leaves)

    class WithLeaves:  # minitorch, but ``tensor(..., requires_grad=True)`` is the next leaf
        def __getattr__(self, name):
            return getattr(mt, name)

        @staticmethod
        def tensor(data, dtype=None, requires_grad=False):
            return next(given) if requires_grad else mt.tensor(data, dtype=dtype)
    return case(WithLeaves(), mt.float64)[0]


def test_double_backward_through_an_index_checks_the_index_again():
    x = mt.tensor(W, requires_grad=True)
    idx = mt.tensor([1, 1, 3])
    (g,) = mt.autograd.grad(_loss(x[idx]), x, create_graph=True)
    idx.zero_()  # after the first backward: the gradient's graph kept the index
    with pytest.raises(RuntimeError, match="modified by an in-place operation"):
        g.sum().backward()


def test_basic_index_saves_nothing_and_backpropagates_twice():
    x = mt.tensor(W, requires_grad=True)
    y = x[1:, 0]
    y.sum().backward()
    y.sum().backward()  # no saved tensor to free: as PyTorch
    np.testing.assert_array_equal(x.grad.numpy()[:, 0], [0, 2, 2, 2, 2])


def test_zero_dim_int_tensor_index_is_an_int_as_pytorch():
    """``x[t]`` with a 0-d int64 t is ``x[int(t)]``: a view, so changing t afterwards changes
    nothing (before, the gradient followed t's new value)."""
    x = mt.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    t = mt.tensor(1)
    y = x[t]
    assert y.shape == () and y._base is not None
    t.add_(1)
    (y * 5).backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 5, 0, 0])


def test_nll_loss_gradient_ignores_a_later_change_of_target():
    """nll_loss gathers at a copy of the target made at forward: changing the target after
    forward leaves the gradient as it was (PyTorch raises instead; both avoid a silently
    different gradient)."""
    def grad_of_x(change):
        x = mt.tensor(W, requires_grad=True)
        target = mt.tensor([1, 2, 1, 1, 0])
        loss = mt.nn.functional.nll_loss(x, target, reduction="sum")
        change(target)
        loss.backward()
        return x.grad.numpy()
    expected = np.zeros_like(W)
    expected[np.arange(5), [1, 2, 1, 1, 0]] = -1.0
    np.testing.assert_array_equal(grad_of_x(lambda t: None), expected)
    np.testing.assert_array_equal(grad_of_x(lambda t: t.zero_()), expected)


def test_unrelated_in_place_change_does_not_raise():
    x = mt.tensor(W, requires_grad=True)
    idx = mt.tensor([4, 0, 4])
    copy = idx.clone()
    y = x[copy]
    idx.zero_()  # the original, not what indexing kept
    _loss(y).backward()
    expected = np.zeros_like(W)
    np.add.at(expected, [4, 0, 4], 2 * W[[4, 0, 4]])
    np.testing.assert_allclose(x.grad.numpy(), expected)


# ----------------------------------------------------------------------------- hooks

def _leaf_and_output(kind):
    """A leaf of shape (3,) and the tensor whose hook is tested (the leaf or a non-leaf)."""
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2.0
    return x, (x if kind == "leaf" else y), y


@pytest.mark.parametrize("kind", ["leaf", "non-leaf"])
@pytest.mark.parametrize("bad_shape", [(5,), (2, 3), (1,), ()])
def test_hook_returning_another_shape_raises(kind, bad_shape):
    x, hooked, y = _leaf_and_output(kind)

    def widen(grad):
        return mt.ones(bad_shape)
    hooked.register_hook(widen)
    with pytest.raises(RuntimeError, match=rf"hook 'widen' returned a gradient of shape "
                                           rf"{re_tuple(bad_shape)} for a tensor of shape \(3,\)"):
        y.sum().backward()
    assert x.grad is None


def re_tuple(shape):
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


@pytest.mark.parametrize("kind", ["leaf", "non-leaf"])
@pytest.mark.parametrize("dtype", [mt.float64, mt.int64])
def test_hook_returning_another_dtype_raises(kind, dtype):
    x, hooked, y = _leaf_and_output(kind)
    hooked.register_hook(lambda g: g.to(dtype))
    with pytest.raises(RuntimeError, match=f"hook '<lambda>' changed the gradient's dtype: "
                                           f"expected dtype minitorch.float32, got {dtype}"):
        y.sum().backward()
    assert x.grad is None


@pytest.mark.parametrize("kind", ["leaf", "non-leaf"])
@pytest.mark.parametrize("result", [lambda g: g.detach().numpy(), lambda g: 2.0,
                                    lambda g: g.tolist()], ids=["numpy", "float", "list"])
def test_hook_returning_no_tensor_raises_type_error(kind, result):
    _, hooked, y = _leaf_and_output(kind)

    def as_array(grad):
        return result(grad)
    hooked.register_hook(as_array)
    with pytest.raises(TypeError, match="hook 'as_array' must return a Tensor or None, got "
                                        r"(numpy\.ndarray|float|list)"):
        y.sum().backward()


def test_hook_misuse_is_caught_by_autograd_grad_too():
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.register_hook(lambda g: mt.ones(2, 3))
    with pytest.raises(RuntimeError, match="returned a gradient of shape"):
        mt.autograd.grad((x * 2.0).sum(), x)


def test_valid_hooks_still_replace_the_gradient():
    x, _, y = _leaf_and_output("leaf")
    y.register_hook(lambda g: g * 10)                 # non-leaf: flows on to x
    x.register_hook(lambda g: g + 1)                  # leaf: what x.grad stores
    x.register_hook(lambda g: None)                   # None keeps the gradient
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [21.0, 21.0, 21.0])
    assert x.grad.dtype is mt.float32


# ----------------------------------------------------------------------------- Function.backward



@pytest.mark.parametrize("result", [lambda g: g.detach().numpy() * 2, lambda g: 2.0],
                         ids=["numpy", "float"])
def test_function_backward_returning_no_tensor_raises_type_error_naming_it(result):
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with pytest.raises(TypeError, match=r"TwiceBackward returned a (numpy\.ndarray|float) as "
                                        "the gradient of input 0; expected a Tensor or None"):
        doubling_function(result).apply(x).sum().backward()


@pytest.mark.parametrize("dtype", [mt.float64, mt.int64])
def test_function_backward_of_another_dtype_is_cast_to_the_input_dtype_as_pytorch(dtype):
    x = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = doubling_function(lambda g: (g * 2).to(dtype)).apply(x)
    (y * x).sum().backward()  # x gets x·2 through Twice and y = 2x directly
    assert x.grad.dtype is mt.float32
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 8.0, 12.0])


def test_function_backward_cast_is_differentiable():
    x = mt.tensor([1.0, 2.0], dtype=mt.float32, requires_grad=True)
    y = doubling_function(lambda g: (g * x.to(mt.float64) * 2))
    (g,) = mt.autograd.grad(y.apply(x).sum(), x, create_graph=True)
    assert g.dtype is mt.float32 and g.requires_grad
    g.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_gradgradcheck_of_index_ops_unaffected():
    x = mt.tensor(W, requires_grad=True)
    idx = mt.tensor([[2, 0], [1, 1], [0, 2], [2, 2], [1, 0]])
    assert gradgradcheck(lambda a: (a.gather(1, idx) ** 2).sum(), (x,))
    assert gradgradcheck(lambda a: (a[mt.tensor([4, 0, 4])] ** 2).sum(), (x,))
    target = mt.tensor([0, 2, 1, 1, 0])
    assert gradgradcheck(lambda a: mt.nn.functional.cross_entropy(a, target), (x,))


# ----------------------------------------------------------------------------- PyTorch parity

def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.__name__)
def test_parity_with_torch(case):
    torch = _torch()
    for ours, theirs in zip(_grads(mt, case, mt.float64), _grads(torch, case, torch.float64)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)
    messages = []
    for lib, dtype in ((mt, mt.float32), (torch, torch.float32)):
        with pytest.raises(RuntimeError) as caught:
            _grads(lib, case, dtype, modify=lambda t: t.zero_())
        messages.append(str(caught.value).replace("inplace", "in-place").replace("variables",
                                                                               "tensors"))
    gist = "one of the tensors needed for gradient computation has been modified by an in-place"
    assert all(gist in message for message in messages), messages


def test_parity_hook_errors_with_torch():
    torch = _torch()
    for lib in (mt, torch):
        for hook, kind in ((lambda g, lib=lib: lib.ones(5), RuntimeError),
                           (lambda g, lib=lib: g.to(lib.float64), RuntimeError),
                           (lambda g: g.detach().numpy(), TypeError)):
            x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
            x.register_hook(hook)
            with pytest.raises(kind):
                (x * 2.0).sum().backward()
