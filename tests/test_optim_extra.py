"""Tests of minitorch.optim.RMSprop and Adagrad: against numpy references of their formulas,
state (layout, Adagrad's from construction), state_dict round trips through minitorch.save,
errors, and trajectories identical to PyTorch's over 20 steps (where PyTorch is installed)."""
import numpy as np
import pytest

import minitorch
from minitorch import optim

from test_optim import gradient_sequence, make_params, run  # the shared helpers


# ------------------------------------------------------------------ numpy references
def rmsprop_reference(values, grads, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0,
                      momentum=0.0, centered=False, maximize=False):
    values = [v.copy() for v in values]
    square = [np.zeros_like(v) for v in values]
    mean = [np.zeros_like(v) for v in values]
    buffer = [np.zeros_like(v) for v in values]
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            g = -g if maximize else g
            g = g + weight_decay * values[i]
            square[i] = alpha * square[i] + (1 - alpha) * g * g
            variance = square[i]
            if centered:
                mean[i] = alpha * mean[i] + (1 - alpha) * g
                variance = square[i] - mean[i] ** 2
            update = g / (np.sqrt(variance) + eps)
            if momentum > 0:
                buffer[i] = momentum * buffer[i] + update
                update = buffer[i]
            values[i] = values[i] - lr * update
    return values


def adagrad_reference(values, grads, lr=0.01, lr_decay=0.0, weight_decay=0.0,
                      initial_accumulator_value=0.0, eps=1e-10, maximize=False):
    values = [v.copy() for v in values]
    sums = [np.full_like(v, initial_accumulator_value) for v in values]
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            g = -g if maximize else g
            g = g + weight_decay * values[i]
            sums[i] = sums[i] + g * g
            values[i] = values[i] - lr / (1 + (t - 1) * lr_decay) * g / (np.sqrt(sums[i]) + eps)
    return values


RMSPROP_CASES = [
    dict(),
    dict(lr=0.05, alpha=0.9, eps=1e-6),
    dict(lr=0.01, momentum=0.9),
    dict(lr=0.01, centered=True),
    dict(lr=0.02, centered=True, momentum=0.5, weight_decay=0.1),
    dict(lr=0.01, maximize=True, weight_decay=0.05),
]

ADAGRAD_CASES = [
    dict(),
    dict(lr=0.1, lr_decay=0.5),
    dict(lr=0.1, weight_decay=0.2, initial_accumulator_value=0.3),
    dict(lr=0.05, eps=1e-3, maximize=True),
]


@pytest.mark.parametrize("options", RMSPROP_CASES, ids=str)
def test_rmsprop_matches_reference_for_four_steps(options):
    params = make_params()
    initial = [p.detach().numpy().copy() for p in params]
    grads = gradient_sequence(4)
    got = run(optim.RMSprop(params, **options), params, grads)
    for g, e in zip(got, rmsprop_reference(initial, grads, **options)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("options", ADAGRAD_CASES, ids=str)
def test_adagrad_matches_reference_for_four_steps(options):
    params = make_params()
    initial = [p.detach().numpy().copy() for p in params]
    grads = gradient_sequence(4)
    got = run(optim.Adagrad(params, **options), params, grads)
    for g, e in zip(got, adagrad_reference(initial, grads, **options)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_defaults_are_pytorchs():
    p = minitorch.zeros(2, requires_grad=True)
    assert optim.RMSprop([p]).defaults == dict(lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0,
                                               momentum=0, centered=False, maximize=False,
                                               capturable=False, foreach=None,
                                               differentiable=False)
    assert optim.Adagrad([p]).defaults == dict(lr=0.01, lr_decay=0, weight_decay=0,
                                               initial_accumulator_value=0, eps=1e-10,
                                               maximize=False, foreach=None,
                                               differentiable=False, fused=None)


def test_rmsprop_first_step_is_large_without_bias_correction():
    # v = (1 - alpha) g² after one step, so the step is lr * g / (|g| sqrt(1 - alpha))
    p = minitorch.tensor([0.0], dtype=minitorch.float64, requires_grad=True)
    p.grad = minitorch.tensor([3.0], dtype=minitorch.float64)
    optim.RMSprop([p], lr=0.01, alpha=0.99, eps=0).step()
    assert p.item() == pytest.approx(-0.01 / np.sqrt(0.01), rel=1e-12)


def test_rmsprop_state_by_option():
    a, b = make_params()
    grads = gradient_sequence(2)
    plain = optim.RMSprop([a, b])
    run(plain, [a, b], grads)
    assert sorted(plain.state[a]) == ["square_avg", "step"] and plain.state[a]["step"] == 2
    full = optim.RMSprop([a, b], momentum=0.9, centered=True)
    run(full, [a, b], grads)
    assert sorted(full.state[b]) == ["grad_avg", "momentum_buffer", "square_avg", "step"]
    assert full.state[b]["square_avg"].shape == b.shape


def test_adagrad_state_exists_from_construction():
    a, b = make_params()
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 0.5}])
    assert opt.state[a]["step"] == 0
    np.testing.assert_array_equal(opt.state[a]["sum"].numpy(), np.zeros(a.shape))
    np.testing.assert_array_equal(opt.state[b]["sum"].numpy(), np.full(b.shape, 0.5))
    state = opt.state_dict()["state"]
    assert sorted(state) == [0, 1] and sorted(state[1]) == ["step", "sum"]
    # a group added later gets its state at once too
    c = minitorch.ones(2, dtype=minitorch.float64, requires_grad=True)
    opt.add_param_group({"params": [c], "initial_accumulator_value": 2.0})
    np.testing.assert_array_equal(opt.state[c]["sum"].numpy(), [2.0, 2.0])


def test_adagrad_lr_decay_shrinks_the_step():
    p = minitorch.tensor([0.0], dtype=minitorch.float64, requires_grad=True)
    opt = optim.Adagrad([p], lr=1.0, lr_decay=1.0, eps=0)
    moves = []
    for _ in range(3):
        before = p.item()
        p.grad = minitorch.tensor([1.0], dtype=minitorch.float64)
        opt.step()
        moves.append(before - p.item())
    # clr = 1 / t, and the sum of squares is t: step t moves 1 / (t sqrt(t))
    assert moves == pytest.approx([1.0, 1 / (2 * np.sqrt(2)), 1 / (3 * np.sqrt(3))], rel=1e-12)


@pytest.mark.parametrize("cls", [optim.RMSprop, optim.Adagrad])
def test_float32_stays_float32_in_place(cls):
    params = make_params(dtype=np.float32)
    storages = [p._data for p in params]
    opt = cls(params, lr=0.1)
    run(opt, params, gradient_sequence(2, dtype=np.float32))
    for p, storage in zip(params, storages):
        assert p._data is storage and p.dtype == minitorch.float32
    assert all(v.dtype == minitorch.float32 for v in opt.state[params[0]].values()
               if isinstance(v, minitorch.Tensor))


@pytest.mark.parametrize("cls", [optim.RMSprop, optim.Adagrad])
def test_non_contiguous_parameter_and_zero_lr(cls):
    base = np.arange(1.0, 13.0).reshape(3, 4)
    p = minitorch.tensor(base, requires_grad=True)
    p._data = np.asfortranarray(p._data)
    opt = cls([p], lr=0.1)
    p.grad = minitorch.ones(3, 4, dtype=minitorch.float64)
    opt.step()
    assert not p.is_contiguous()
    assert np.all(p.detach().numpy() < base)
    q = minitorch.tensor(base, requires_grad=True)
    run(cls([q], lr=0.0), [q], [[np.ones((3, 4))]])
    np.testing.assert_array_equal(q.detach().numpy(), base)


def test_errors_name_the_problem():
    a, _ = make_params()
    with pytest.raises(ValueError, match="Invalid learning rate.*-0.1"):
        optim.RMSprop([a], lr=-0.1)
    with pytest.raises(ValueError, match="Invalid alpha value: alpha must be >= 0, got -0.5"):
        optim.RMSprop([a], alpha=-0.5)
    with pytest.raises(ValueError, match="Invalid epsilon value: eps must be >= 0"):
        optim.RMSprop([a], eps=-1e-8)
    with pytest.raises(ValueError, match="momentum must be >= 0"):
        optim.RMSprop([a], momentum=-0.1)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        optim.RMSprop([{"params": [a], "weight_decay": -1}])
    with pytest.raises(ValueError, match="Invalid lr_decay value"):
        optim.Adagrad([a], lr_decay=-1)
    with pytest.raises(ValueError, match="initial_accumulator_value must be >= 0, got -2"):
        optim.Adagrad([a], initial_accumulator_value=-2)
    with pytest.raises(ValueError, match="Invalid epsilon value"):
        optim.Adagrad([a], eps=-1)
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.Adagrad([a], lr=-1)
    with pytest.raises(TypeError):  # keyword-only, as PyTorch's Adagrad has it
        optim.Adagrad([a], 0.1, 0, 0, 0, 1e-10, None, True)


# ------------------------------------------------------------------ parity with PyTorch
PARITY_CASES = {
    "rmsprop": (optim.RMSprop, "RMSprop", dict(lr=0.01)),
    "rmsprop-momentum-wd": (optim.RMSprop, "RMSprop",
                            dict(lr=0.005, momentum=0.9, weight_decay=0.01, alpha=0.9)),
    "rmsprop-centered": (optim.RMSprop, "RMSprop", dict(lr=0.01, centered=True, eps=1e-6)),
    "rmsprop-centered-momentum-max": (optim.RMSprop, "RMSprop",
                                      dict(lr=0.005, centered=True, momentum=0.5,
                                           maximize=True)),
    "adagrad": (optim.Adagrad, "Adagrad", dict(lr=0.1)),
    "adagrad-decay-wd-init": (optim.Adagrad, "Adagrad",
                              dict(lr=0.1, lr_decay=0.05, weight_decay=0.01,
                                   initial_accumulator_value=0.1)),
    "adagrad-maximize": (optim.Adagrad, "Adagrad", dict(lr=0.05, maximize=True, eps=1e-6)),
}


def mlp_setup(dtype):
    rng = np.random.default_rng(42)
    weights = [rng.standard_normal(s).astype(dtype) * 0.5 for s in [(4, 6), (6,), (6, 3), (3,)]]
    return weights, rng.standard_normal((8, 4)).astype(dtype), \
        rng.standard_normal((8, 3)).astype(dtype)


def objective(lib, params, x, y, maximize):
    w1, b1, w2, b2 = params
    loss = ((lib.tanh(x @ w1 + b1) @ w2 + b2 - y) ** 2).mean()
    return -loss if maximize else loss


@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-10), (np.float32, 1e-5)],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("name", sorted(PARITY_CASES))
def test_trajectory_matches_pytorch(name, dtype, tolerance):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    mt_class, torch_name, options = PARITY_CASES[name]
    weights, x, y = mlp_setup(dtype)
    mt_params = [minitorch.tensor(w.copy(), requires_grad=True) for w in weights]
    torch_params = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    # two groups, the second with its own lr, so per-group options are exercised
    mt_opt = mt_class([{"params": mt_params[:2]}, {"params": mt_params[2:], "lr": 0.02}],
                      **options)
    torch_opt = getattr(torch.optim, torch_name)(
        [{"params": torch_params[:2]}, {"params": torch_params[2:], "lr": 0.02}], **options)
    maximize = options.get("maximize", False)
    for step in range(20):
        for opt, lib, params, xs, ys in ((mt_opt, minitorch, mt_params, minitorch.tensor(x),
                                          minitorch.tensor(y)),
                                         (torch_opt, torch, torch_params, torch.from_numpy(x),
                                          torch.from_numpy(y))):
            opt.zero_grad()
            objective(lib, params, xs, ys, maximize).backward()
            opt.step()
        for index, (p, q) in enumerate(zip(mt_params, torch_params)):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=tolerance,
                                       atol=tolerance,
                                       err_msg=f"parameter {index} after step {step + 1}")

    mine, theirs = mt_opt.state_dict(), torch_opt.state_dict()
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for index, state in theirs["state"].items():
        assert sorted(mine["state"][index]) == sorted(state)
        for key, value in state.items():
            got = mine["state"][index][key]
            got = got.numpy() if isinstance(got, minitorch.Tensor) else got
            np.testing.assert_allclose(got, value.numpy(), rtol=tolerance, atol=tolerance)
    for group, torch_group in zip(mine["param_groups"], theirs["param_groups"]):
        for key, value in group.items():
            assert torch_group[key] == value, key


def test_adagrad_initial_state_matches_pytorch():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    weights, _, _ = mlp_setup(np.float64)
    mine = optim.Adagrad([minitorch.tensor(w, requires_grad=True) for w in weights],
                         initial_accumulator_value=0.25).state_dict()
    theirs = torch.optim.Adagrad([torch.tensor(w, requires_grad=True) for w in weights],
                                 initial_accumulator_value=0.25).state_dict()
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for index, state in theirs["state"].items():
        assert mine["state"][index]["step"] == state["step"].item() == 0
        np.testing.assert_array_equal(mine["state"][index]["sum"].numpy(), state["sum"].numpy())
