"""Tests of minitorch.autograd.detect_anomaly / set_detect_anomaly: a NaN gradient raises
naming the node and the gradient, errors in backward are preceded by the forward call's stack,
the mode's scoping (context manager, decorator, plain call), and that nothing of it is left in
place when it is off. Where PyTorch is installed, the message matches torch's."""
import math
import warnings

import numpy as np
import pytest
from conftest import doubling_function

import minitorch
from minitorch.autograd import Function, anomaly, detect_anomaly, set_detect_anomaly


@pytest.fixture(autouse=True)
def anomaly_mode_off_afterwards():
    yield
    set_detect_anomaly(False)


def zero_then_one():
    return minitorch.tensor([0.0, 1.0], dtype=minitorch.float64, requires_grad=True)


def quiet_detect_anomaly(check_nan=True):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return detect_anomaly(check_nan)


def test_nan_gradient_raises_naming_the_op_and_the_gradient():
    x = zero_then_one()
    with quiet_detect_anomaly(), np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        y = (x / x).sum()
        # d(a/b)/da = 1/b is inf at 0, d(a/b)/db = -a/b² is 0/0: the second gradient is NaN
        with pytest.raises(RuntimeError, match=r"^Function 'DivBackward' returned nan values in "
                                               r"its 1th output\.$"):
            y.backward()


def test_custom_function_returning_nan_and_check_nan_false():
    NaNGradient = doubling_function(lambda g: g * math.nan, name="NaNGradient")
    x = minitorch.ones(3, dtype=minitorch.float64, requires_grad=True)
    with quiet_detect_anomaly(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="Function 'NaNGradientBackward' returned nan "
                                               "values in its 0th output"):
            NaNGradient.apply(x).sum().backward()
    with quiet_detect_anomaly(check_nan=False):
        NaNGradient.apply(x).sum().backward()
    assert np.isnan(x.grad.numpy()).all()


def test_without_anomaly_mode_nan_passes_silently_and_apply_is_untouched():
    x = zero_then_one()
    with np.errstate(all="ignore"):
        (x / x).sum().backward()
    assert np.isnan(x.grad.numpy()[0])
    assert Function.__dict__["apply"] is anomaly._plain_apply
    with quiet_detect_anomaly():
        assert Function.__dict__["apply"] is not anomaly._plain_apply
    assert Function.__dict__["apply"] is anomaly._plain_apply
    assert not minitorch.autograd.is_anomaly_enabled()


def test_entering_warns_that_it_slows_things_down():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        with detect_anomaly():
            assert minitorch.autograd.is_anomaly_enabled()
            assert minitorch.autograd.is_anomaly_check_nan_enabled()


def test_an_error_in_backward_shows_the_forward_stack():
    def failing(g):
        raise ValueError("bad backward")

    Failing = doubling_function(failing, name="Failing")

    def build_graph(x):
        return Failing.apply(x).sum()  # the line the warning must point at

    x = minitorch.ones(2, dtype=minitorch.float64, requires_grad=True)
    with quiet_detect_anomaly():
        loss = build_graph(x)
        with pytest.warns(UserWarning, match="Error detected in FailingBackward") as caught:
            with pytest.raises(ValueError, match="bad backward"):
                loss.backward()
    message = str(caught[0].message)
    assert "Traceback of forward call that caused the error" in message
    assert "test_anomaly.py" in message and "build_graph" in message


def test_a_node_made_before_anomaly_mode_has_no_forward_stack():
    NaNGradient = doubling_function(lambda g: g * math.nan, name="NaNGradient")
    x = minitorch.ones(1, dtype=minitorch.float64, requires_grad=True)
    loss = NaNGradient.apply(x).sum()
    with quiet_detect_anomaly():
        with pytest.warns(UserWarning, match="No forward pass information available"):
            with pytest.raises(RuntimeError, match="returned nan values"):
                loss.backward()


def test_set_detect_anomaly_as_call_and_as_context():
    set_detect_anomaly(True)
    assert minitorch.autograd.is_anomaly_enabled()
    with set_detect_anomaly(False):
        assert not minitorch.autograd.is_anomaly_enabled()
        with set_detect_anomaly(True, check_nan=False):
            assert minitorch.autograd.is_anomaly_enabled()
            assert not minitorch.autograd.is_anomaly_check_nan_enabled()
        assert not minitorch.autograd.is_anomaly_enabled()
    assert minitorch.autograd.is_anomaly_enabled()
    assert minitorch.autograd.is_anomaly_check_nan_enabled()
    set_detect_anomaly(False)
    assert Function.__dict__["apply"] is anomaly._plain_apply


def test_detect_anomaly_as_a_decorator():
    @quiet_detect_anomaly()
    def step(x):
        assert minitorch.autograd.is_anomaly_enabled()
        return (x * 2).sum()

    x = minitorch.ones(2, requires_grad=True)
    step(x).backward()
    assert not minitorch.autograd.is_anomaly_enabled()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_anomaly_mode_leaves_correct_gradients_alone():
    x = minitorch.tensor([0.5, 2.0], dtype=minitorch.float64, requires_grad=True)
    with quiet_detect_anomaly():
        y = (x.tanh() * x).sum()
        (g,) = minitorch.autograd.grad(y, x, create_graph=True)
        g.sum().backward()
    t = np.tanh(x.detach().numpy())
    np.testing.assert_allclose(g.detach().numpy(), t + x.detach().numpy() * (1 - t ** 2))
    assert x.grad is not None and not np.isnan(x.grad.numpy()).any()


def test_message_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    mine = zero_then_one()
    theirs = torch.tensor([0.0, 1.0], dtype=torch.float64, requires_grad=True)
    messages = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for lib, x, mode in ((minitorch, mine, detect_anomaly),
                             (torch, theirs, torch.autograd.detect_anomaly)):
            with mode():
                y = (x / x).sum()
                with pytest.raises(RuntimeError) as error:
                    y.backward()
            messages.append(str(error.value))
    # PyTorch numbers its node names (DivBackward0); the rest is the same sentence
    assert messages[0] == messages[1].replace("DivBackward0", "DivBackward")
