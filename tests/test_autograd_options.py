"""PyTorch's options of autograd's entry points and optimizers that minitorch accepts.

``grad(materialize_grads=, is_grads_batched=, only_inputs=)``, ``backward(grad_variables=)``,
``gradcheck``/``gradgradcheck``'s check flags, and the optimizers' implementation choices
(``foreach``, ``fused``, ``capturable``, ``differentiable``) and Adam's
``decoupled_weight_decay``.
"""
import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import backward, grad, gradcheck, gradgradcheck


def _leaf(*shape, seed=0):
    rng = np.random.default_rng(seed)
    return mt.tensor(rng.standard_normal(shape), dtype=mt.float64, requires_grad=True)


def test_materialize_grads_gives_zeros_for_unused_inputs():
    x, unused = _leaf(3), _leaf(2)
    gx, gu = grad((x * x).sum(), [x, unused], materialize_grads=True)
    np.testing.assert_allclose(gx.numpy(), 2 * x.detach().numpy())
    assert gu.shape == (2,) and not gu.numpy().any()
    with pytest.raises(ValueError, match="allow_unused"):
        grad((x * x).sum(), [x, unused], materialize_grads=True, allow_unused=False)


def test_batched_grad_stacks_one_vector_jacobian_product_per_row():
    x = _leaf(3)
    y = x * mt.tensor([1.0, 2.0, 3.0], dtype=mt.float64)
    eye = mt.eye(3, dtype=mt.float64)
    jacobian, = grad(y, x, eye, is_grads_batched=True)
    np.testing.assert_allclose(jacobian.numpy(), np.diag([1.0, 2.0, 3.0]))


def test_backward_takes_the_old_name_grad_variables():
    x = _leaf(2)
    backward(x * 3, grad_variables=mt.ones(2, dtype=mt.float64))
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])
    with pytest.raises(RuntimeError, match="not both"):
        backward(x * 3, grad_tensors=mt.ones(2, dtype=mt.float64),
                 grad_variables=mt.ones(2, dtype=mt.float64))


def test_gradcheck_keyword_func_and_check_flags():
    x = _leaf(2, 3)
    assert gradcheck(func=lambda t: t.tanh(), inputs=(x,), check_grad_dtypes=True,
                     check_undefined_grad=True)
    assert gradgradcheck(func=lambda t: t.tanh(), inputs=(x,), gen_non_contig_grad_outputs=True)
    for flag in ("check_forward_ad", "check_batched_grad", "check_batched_forward_grad"):
        with pytest.raises(NotImplementedError, match=flag):
            gradcheck(lambda t: t.tanh(), (x,), **{flag: True})
    with pytest.raises(NotImplementedError, match="check_fwd_over_rev"):
        gradgradcheck(lambda t: t.tanh(), (x,), check_fwd_over_rev=True)


class _WrongDtype(mt.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2

    @staticmethod
    def backward(ctx, g):
        return (g * 2).float()


def test_a_gradient_of_another_dtype_is_cast_so_check_grad_dtypes_passes():
    x = _leaf(3)
    g, = grad(_WrongDtype.apply(x).sum(), x)
    assert g.dtype == mt.float64  # the engine casts it back, as PyTorch's does
    assert gradcheck(_WrongDtype.apply, (x,), check_grad_dtypes=True, atol=1e-2)
    assert gradcheck(_WrongDtype.apply, (x,), check_backward_ad=False)


@pytest.mark.parametrize("make", [
    lambda p: mt.optim.SGD(p, lr=0.1, foreach=False, fused=None),
    lambda p: mt.optim.Adam(p, foreach=True, capturable=False, fused=False),
    lambda p: mt.optim.AdamW(p, foreach=None, fused=True),
    lambda p: mt.optim.RMSprop(p, foreach=True, capturable=True),
    lambda p: mt.optim.Adagrad(p, foreach=False, fused=None),
])
def test_optimizers_take_pytorchs_implementation_choices(make):
    p = _leaf(4)
    optimizer = make([p])
    assert {"foreach", "differentiable"} <= set(optimizer.param_groups[0])
    (p * p).sum().backward()
    before = p.detach().numpy().copy()
    optimizer.step()
    assert not np.allclose(p.detach().numpy(), before)


def test_a_differentiable_step_is_refused():
    with pytest.raises(NotImplementedError, match="differentiable"):
        mt.optim.Adam([_leaf(2)], differentiable=True)


def test_adam_with_decoupled_weight_decay_is_adamw():
    p, q = _leaf(5), _leaf(5)
    with mt.no_grad():
        q.copy_(p)
    adam = mt.optim.Adam([p], lr=0.1, weight_decay=0.1, decoupled_weight_decay=True)
    adamw = mt.optim.AdamW([q], lr=0.1, weight_decay=0.1)
    for _ in range(3):
        for param, opt in ((p, adam), (q, adamw)):
            opt.zero_grad()
            (param ** 3).sum().backward()
            opt.step()
    np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
