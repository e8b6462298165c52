"""Tests of minitorch.autograd.functional: jacobian, hessian, vjp, jvp, vhp, hvp against
closed forms and finite differences in float64, their return structures (Tensor / tuple /
tuple of tuples), create_graph (gradcheck of the jacobian itself), strict mode and argument
errors, and, where PyTorch is installed, the values torch.autograd.functional gives."""
import numpy as np
import pytest

import minitorch
from minitorch.autograd import functional as F
from minitorch.autograd import gradcheck

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 4))
B = RNG.standard_normal((4, 4))


def t(array, requires_grad=False):
    return minitorch.tensor(np.asarray(array, dtype=np.float64), requires_grad=requires_grad)


def numeric_jacobian(f, x, eps=1e-6):
    """d f(x).flat / d x.flat by central differences, shaped f(x).shape + x.shape."""
    x = np.asarray(x, dtype=np.float64)
    out = np.asarray(f(x))
    jac = np.zeros(out.shape + x.shape)
    for index in np.ndindex(*x.shape):
        step = np.zeros_like(x)
        step[index] = eps
        jac[(...,) + index] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac


def smooth(x):
    """A nonlinear function of a (2, 3) tensor to a (3,) tensor, differentiable twice."""
    return (x.tanh() * x.sin()).sum(0) + x[0] * x[1]


def smooth_numpy(x):
    return (np.tanh(x) * np.sin(x)).sum(0) + x[0] * x[1]


# ------------------------------------------------------------------ jacobian
def test_jacobian_of_a_linear_map_is_its_matrix():
    jac = F.jacobian(lambda x: t(A) @ x, t(RNG.standard_normal(4)))
    assert isinstance(jac, minitorch.Tensor) and jac.shape == (3, 4)
    np.testing.assert_allclose(jac.numpy(), A, rtol=1e-14)
    assert not jac.requires_grad


def test_jacobian_matches_finite_differences():
    x = RNG.standard_normal((2, 3))
    jac = F.jacobian(smooth, t(x))
    assert jac.shape == (3, 2, 3)
    np.testing.assert_allclose(jac.numpy(), numeric_jacobian(smooth_numpy, x), rtol=1e-7,
                               atol=1e-9)


def test_jacobian_structures_follow_inputs_and_outputs():
    x, y = t(RNG.standard_normal(3)), t(RNG.standard_normal((2, 3)))

    def two_outputs(x, y):
        return x * y.sum(0), (x ** 2).sum()

    jac = F.jacobian(two_outputs, (x, y))
    assert isinstance(jac, tuple) and len(jac) == 2 and all(len(row) == 2 for row in jac)
    assert [[tuple(j.shape) for j in row] for row in jac] == [[(3, 3), (3, 2, 3)],
                                                              [(3,), (2, 3)]]
    np.testing.assert_allclose(jac[0][0].numpy(), np.diag(y.numpy().sum(0)))
    np.testing.assert_allclose(jac[1][0].numpy(), 2 * x.numpy())
    np.testing.assert_array_equal(jac[1][1].numpy(), np.zeros((2, 3)))  # unused: zeros
    one_input = F.jacobian(lambda x: (x * 2, x.sum()), x)
    assert isinstance(one_input, tuple) and one_input[1].shape == (3,)
    one_output = F.jacobian(lambda x, y: x * y[0], (x, y))
    assert isinstance(one_output, tuple) and one_output[1].shape == (3, 2, 3)


def test_jacobian_edge_shapes_and_layouts():
    scalar = F.jacobian(lambda x: x ** 3, t(2.0))
    assert scalar.shape == () and scalar.item() == pytest.approx(12.0)
    assert F.jacobian(lambda x: x.sum(), t(RNG.standard_normal(3))).shape == (3,)
    assert F.jacobian(lambda x: x * 2, t(np.zeros(0))).shape == (0, 0)
    assert F.jacobian(lambda x: x[:0] * 2, t(np.ones(3))).shape == (0, 3)
    transposed = t(RNG.standard_normal((3, 2))).T  # a non-contiguous input
    assert not transposed.is_contiguous()
    np.testing.assert_allclose(F.jacobian(smooth, transposed).numpy(),
                               numeric_jacobian(smooth_numpy, transposed.numpy()), rtol=1e-7,
                               atol=1e-9)
    # an output that does not depend on the input at all
    np.testing.assert_array_equal(F.jacobian(lambda x: t(np.ones(2)), t(np.ones(3))).numpy(),
                                  np.zeros((2, 3)))


def test_jacobian_leaves_the_callers_tensors_alone_and_works_under_no_grad():
    x = t(RNG.standard_normal((2, 3)), requires_grad=True)
    with minitorch.no_grad():
        jac = F.jacobian(smooth, x)
    assert x.grad is None and not jac.requires_grad and jac.shape == (3, 2, 3)

    captured = t(RNG.standard_normal(3))
    # the function also reads its input from outside: only the argument is differentiated
    jac = F.jacobian(lambda x: x * captured + captured, captured)
    np.testing.assert_allclose(jac.numpy(), np.diag(captured.numpy()))


def test_jacobian_with_create_graph_is_differentiable():
    x = t(RNG.standard_normal(3), requires_grad=True)
    jac = F.jacobian(lambda x: x.tanh(), x, create_graph=True)
    assert jac.requires_grad
    jac.sum().backward()  # d/dx sum(diag(1 - tanh²)) = -2 tanh sech²
    th = np.tanh(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), -2 * th * (1 - th ** 2), rtol=1e-12)
    assert gradcheck(lambda x: F.jacobian(smooth, x, create_graph=True),
                     (t(RNG.standard_normal((2, 3)), requires_grad=True),))


def test_jacobian_strict_mode():
    x, y = t(np.ones(2)), t(np.ones(2))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is "
                                           "independent of input 1"):
        F.jacobian(lambda x, y: x * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not "
                                           "require gradients"):
        F.jacobian(lambda x: t(np.ones(2)), x, strict=True)
    with pytest.raises(RuntimeError, match="independent of input 0.*create_graph=True"):
        F.jacobian(lambda x: x * 2, x, strict=True, create_graph=True)


def test_jacobian_argument_errors():
    x = t(np.ones(2))
    with pytest.raises(TypeError, match="inputs given to jacobian must be either a Tensor or a "
                                        "tuple of Tensors but the value at index 1 has type"):
        F.jacobian(lambda a, b: a, (x, 2.0))
    with pytest.raises(TypeError, match="the given inputs has type list"):
        F.jacobian(lambda a: a, [x])
    with pytest.raises(TypeError, match="outputs of the user-provided function given to "
                                        "jacobian"):
        F.jacobian(lambda a: a.sum().item(), x)
    with pytest.raises(ValueError, match="strategy must be either"):
        F.jacobian(lambda a: a, x, strategy="sideways")
    with pytest.raises(NotImplementedError, match="vectorize=True"):
        F.jacobian(lambda a: a, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorize=True`"):
        F.jacobian(lambda a: a, x, strict=True, vectorize=True)
    # the combinations PyTorch accepts give the reverse-mode values
    for options in (dict(vectorize=True), dict(vectorize=True, strategy="forward-mode")):
        np.testing.assert_array_equal(F.jacobian(lambda a: a * 3, x, **options).numpy(),
                                      3 * np.eye(2))


# ------------------------------------------------------------------ hessian
def test_hessian_of_a_quadratic_form():
    x = t(RNG.standard_normal(4))
    hess = F.hessian(lambda x: x @ (t(B) @ x), x)
    assert hess.shape == (4, 4)
    np.testing.assert_allclose(hess.numpy(), B + B.T, rtol=1e-13)
    assert F.hessian(lambda x: (x ** 3).sum(), t(2.0)).item() == pytest.approx(12.0)


def test_hessian_matches_finite_differences_of_the_gradient():
    x = RNG.standard_normal((2, 3))

    def scalar(x):
        return (smooth(x) ** 2).sum()

    def gradient_numpy(x):
        return F.jacobian(scalar, t(x)).numpy()

    hess = F.hessian(scalar, t(x))
    assert hess.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(hess.numpy(), numeric_jacobian(gradient_numpy, x), rtol=1e-6,
                               atol=1e-8)
    flat = hess.numpy().reshape(6, 6)
    np.testing.assert_allclose(flat, flat.T, rtol=1e-12, atol=1e-12)  # symmetric


def test_hessian_of_tuple_inputs_is_a_tuple_of_tuples():
    x, y = t(RNG.standard_normal(2)), t(RNG.standard_normal(3))
    hess = F.hessian(lambda x, y: (x.sum() * y ** 2).sum(), (x, y))
    assert [[tuple(h.shape) for h in row] for row in hess] == [[(2, 2), (2, 3)],
                                                               [(3, 2), (3, 3)]]
    np.testing.assert_allclose(hess[0][0].numpy(), np.zeros((2, 2)))
    np.testing.assert_allclose(hess[0][1].numpy(), np.tile(2 * y.numpy(), (2, 1)))
    np.testing.assert_allclose(hess[1][0].numpy(), hess[0][1].numpy().T)
    np.testing.assert_allclose(hess[1][1].numpy(), np.eye(3) * 2 * x.numpy().sum())


def test_hessian_errors_and_strict():
    x = t(np.ones(3))
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hessian(lambda x: (x.sum(), x.sum()), x)
    np.testing.assert_array_equal(F.hessian(lambda x: x.sum() * 2, x).numpy(), np.zeros((3, 3)))
    with pytest.raises(RuntimeError, match="jacobian of the user-provided function with "
                                           "respect to input 0 is independent"):
        F.hessian(lambda x: x.sum() * 2, x, strict=True)


# ------------------------------------------------------------------ products
def test_vjp_is_v_times_the_jacobian():
    x = t(RNG.standard_normal((2, 3)))
    v = t(RNG.standard_normal(3))
    output, product = F.vjp(smooth, x, v)
    np.testing.assert_allclose(output.numpy(), smooth_numpy(x.numpy()))
    expected = np.tensordot(v.numpy(), F.jacobian(smooth, x).numpy(), axes=1)
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-12)
    output, product = F.vjp(lambda x: (x ** 2).sum(), x)  # v may be None for a scalar
    np.testing.assert_allclose(product.numpy(), 2 * x.numpy())
    outs, grads = F.vjp(lambda x, y: (x * y, (x + y).sum()), (x, x * 2),
                        (t(np.ones((2, 3))), t(1.0)))
    assert isinstance(outs, tuple) and isinstance(grads, tuple)
    np.testing.assert_allclose(grads[0].numpy(), 2 * x.numpy() + 1)


def test_jvp_is_the_jacobian_times_v():
    x = t(RNG.standard_normal((2, 3)))
    v = t(RNG.standard_normal((2, 3)))
    output, product = F.jvp(smooth, x, v)
    expected = np.tensordot(F.jacobian(smooth, x).numpy(), v.numpy(), axes=2)
    np.testing.assert_allclose(product.numpy(), expected, rtol=1e-12)
    outs, products = F.jvp(lambda x, y: (x * y, (x * y).sum()), (x, x + 1), (v, v))
    assert isinstance(products, tuple) and products[1].shape == ()
    np.testing.assert_allclose(products[0].numpy(),
                               v.numpy() * (x.numpy() + 1) + x.numpy() * v.numpy(), rtol=1e-12)
    scalar_out, scalar_jvp = F.jvp(lambda x: x ** 3, t(2.0))
    assert scalar_jvp.item() == pytest.approx(12.0)


def test_hvp_and_vhp_are_the_hessian_times_v():
    x = t(RNG.standard_normal((2, 3)))
    v = t(RNG.standard_normal((2, 3)))

    def scalar(x):
        return (smooth(x) ** 2).sum()

    hess = F.hessian(scalar, x).numpy().reshape(6, 6)
    _, hv = F.hvp(scalar, x, v)
    _, vh = F.vhp(scalar, x, v)
    np.testing.assert_allclose(hv.numpy().ravel(), hess @ v.numpy().ravel(), rtol=1e-10)
    np.testing.assert_allclose(vh.numpy().ravel(), v.numpy().ravel() @ hess, rtol=1e-10)
    value, both = F.hvp(lambda x, y: (x * x * y).sum(), (x, x), (v, v))
    assert isinstance(both, tuple) and value.shape == ()


def test_products_with_create_graph_stay_differentiable():
    x = t(RNG.standard_normal(3), requires_grad=True)
    v = t(RNG.standard_normal(3))
    _, product = F.jvp(lambda x: x ** 3, x, v, create_graph=True)
    product.sum().backward()  # d/dx sum(3 x² v) = 6 x v
    np.testing.assert_allclose(x.grad.numpy(), 6 * x.detach().numpy() * v.numpy(), rtol=1e-12)
    _, product = F.vhp(lambda x: (x ** 4).sum(), x, v, create_graph=True)
    assert product.requires_grad
    _, product = F.vjp(lambda x: x ** 2, x, v)
    assert not product.requires_grad


def test_product_errors():
    x = t(np.ones(3))
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function "
                                           "returns a single Tensor with a single element"):
        F.vjp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match="v can only be None if the input to the "
                                           "user-provided function"):
        F.jvp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(3,\) but got "
                                           r"\(2,\)"):
        F.vjp(lambda x: x * 2, x, t(np.ones(2)))
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2"):
        F.jvp(lambda x, y: x * y, (x, x), (x,))
    with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size"):
        F.hvp(lambda x, y: (x * y).sum(), (x, x), (x, t(np.ones(4))))
    with pytest.raises(RuntimeError, match="function given to vhp should contain a single "
                                           "element"):
        F.vhp(lambda x: x * 2, x, x)
    with pytest.raises(TypeError, match="The v given to vjp"):
        F.vjp(lambda x: x.sum(), x, 1.0)
    with pytest.raises(RuntimeError, match="output of the user-provided function is "
                                           "independent of input 1"):
        F.vjp(lambda x, y: x.sum(), (x, x * 2), strict=True)
    _, (used, unused) = F.vjp(lambda x, y: x.sum(), (x, x * 2))
    np.testing.assert_array_equal(unused.numpy(), np.zeros(3))


# ------------------------------------------------------------------ parity with PyTorch
def torch_and_minitorch(torch, f_name):
    """The same function written once for either library."""
    def make(lib):
        return {
            "mixed": lambda x, y: ((lib.tanh(x * y).sum(0) * y) ** 2, (x ** 2).sum() * y[0]),
            "scalar": lambda x, y: (lib.sin(x) * y).sum() + (x ** 2).sum() * (y ** 3).sum(),
        }[f_name]
    return make(minitorch), make(torch)


@pytest.mark.parametrize("fn", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_values_match_pytorch(fn):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    import torch.autograd.functional as TF

    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    vx, vy = RNG.standard_normal((2, 3)), RNG.standard_normal(3)
    mine_f, torch_f = torch_and_minitorch(torch, "mixed" if fn in ("jacobian", "vjp", "jvp")
                                          else "scalar")
    mine_in, torch_in = (t(x), t(y)), (torch.tensor(x), torch.tensor(y))
    if fn in ("jacobian", "hessian"):
        mine, theirs = getattr(F, fn)(mine_f, mine_in), getattr(TF, fn)(torch_f, torch_in)
    else:
        if fn == "vjp":
            mine_v = (t(RNG.standard_normal(3)), t(1.5))
            torch_v = tuple(torch.tensor(v.numpy()) for v in mine_v)
        else:
            mine_v, torch_v = (t(vx), t(vy)), (torch.tensor(vx), torch.tensor(vy))
        mine = getattr(F, fn)(mine_f, mine_in, mine_v)
        theirs = getattr(TF, fn)(torch_f, torch_in, torch_v)

    def compare(a, b, where):
        if isinstance(b, tuple):
            assert isinstance(a, tuple) and len(a) == len(b), where
            for i, (p, q) in enumerate(zip(a, b)):
                compare(p, q, f"{where}[{i}]")
        else:
            assert tuple(a.shape) == tuple(b.shape), where
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12,
                                       err_msg=where)

    compare(mine, theirs, fn)
