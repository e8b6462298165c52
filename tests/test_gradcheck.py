"""gradcheck/gradgradcheck: PyTorch's defaults, passing on right gradients, and failing on wrong
ones with a GradcheckError that names the input, the output, the element and both values."""
import inspect
import re
import warnings

import numpy as np
import pytest

import minitorch as mt
from minitorch.autograd import Function, GradcheckError, gradcheck, gradgradcheck


class WrongSquare(Function):
    """x² with a backward that is off by one for element 2 only: 2x + [0, 0, 1, 0]."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        bump = mt.zeros_like(x)
        bump[2] = 1.0
        return grad * (2 * x + bump)


class FrozenCube(Function):
    """x³ whose first derivative is right but not differentiable (detached): gradgrad fails."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * (x * x).detach()


def _x(n=4):
    return mt.tensor(np.linspace(-1.0, 1.5, n), dtype=mt.float64, requires_grad=True)


def test_defaults_are_pytorchs():
    params = inspect.signature(gradcheck).parameters
    assert params["eps"].default == 1e-6 and params["atol"].default == 1e-5
    assert params["rtol"].default == 1e-3 and params["fast_mode"].default is False
    assert params["raise_exception"].default is True
    params = inspect.signature(gradgradcheck).parameters
    assert params["eps"].default == 1e-6 and params["atol"].default == 1e-5
    assert params["rtol"].default == 1e-3 and params["grad_outputs"].default is None


def test_passes_on_right_gradients():
    a, b = _x(3), mt.tensor([[0.5], [2.0]], dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda a, b: (a * b).tanh() / (1 + b * b), (a, b))
    assert gradcheck(lambda a: (a.exp(), a.sin().sum()), (a,))  # two outputs
    assert gradcheck(lambda a, k: a * k, (a, 3.0))  # non-tensor arguments pass through
    assert gradcheck(mt.sigmoid, a, fast_mode=True)


def test_wrong_backward_raises_naming_input_output_element_and_values():
    x = _x()
    with pytest.raises(GradcheckError) as info:
        gradcheck(WrongSquare.apply, (x,))
    message = str(info.value)
    assert "output 0" in message and "input 0" in message
    assert re.search(r"d output\[\(2,\)\] / d input\[\(2,\)\]", message), message
    expected = 2 * x.detach().numpy()[2]
    numerical = float(re.search(r"numerical ([-\d.e+]+)", message).group(1))
    analytical = float(re.search(r"analytical ([-\d.e+]+)", message).group(1))
    assert numerical == pytest.approx(expected, abs=1e-6)
    assert analytical == pytest.approx(expected + 1.0, abs=1e-8)


def test_names_the_failing_input_among_several():
    a, b = _x(), _x()
    with pytest.raises(GradcheckError, match=r"input 1"):
        gradcheck(lambda a, b: a * 2 + WrongSquare.apply(b), (a, b))


def test_fast_mode_also_catches_it():
    with pytest.raises(GradcheckError, match=r"fast mode.*input 0.*numerical.*analytical"):
        gradcheck(WrongSquare.apply, (_x(),), fast_mode=True)


def test_raise_exception_false_returns_false():
    assert gradcheck(WrongSquare.apply, (_x(),), raise_exception=False) is False


def test_tolerances_are_used():
    # An error of exactly 1 at element 2 passes once atol allows it.
    assert gradcheck(WrongSquare.apply, (_x(),), atol=1.01)


def test_gradgradcheck_passes_and_fails():
    x = _x()
    assert gradgradcheck(lambda x: (x.tanh() ** 3).sum() * x, (x,))
    assert gradgradcheck(lambda x: x.exp() * x, (x,), grad_outputs=(
        mt.ones(4, dtype=mt.float64, requires_grad=True),))
    assert gradcheck(FrozenCube.apply, (x,))  # first derivative is right
    with pytest.raises(GradcheckError, match=r"Jacobian mismatch"):
        gradgradcheck(FrozenCube.apply, (x,))


def test_warns_on_float32_inputs():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"input #0.*double precision"):
        gradcheck(lambda t: t * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gradcheck(lambda t: t * 2, (_x(),))  # float64: no warning


def test_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="requires_grad"):
        gradcheck(lambda t: t * 2, (mt.ones(2, dtype=mt.float64),))


def test_parity_same_verdict_as_torch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    x_np = np.linspace(-1.0, 1.5, 4)

    class TorchWrongSquare(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            bump = torch.zeros_like(x)
            bump[2] = 1.0
            return grad * (2 * x + bump)

    tx = torch.tensor(x_np, requires_grad=True)
    for fn, tfn in [(WrongSquare.apply, TorchWrongSquare.apply),
                    (lambda t: t.sigmoid() * t, lambda t: t.sigmoid() * t)]:
        ours = gradcheck(fn, (_x(),), raise_exception=False)
        theirs = torch.autograd.gradcheck(tfn, (tx,), raise_exception=False)
        assert ours == theirs
