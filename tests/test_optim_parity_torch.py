"""Parity of minitorch.optim with torch.optim: the same small MLP, the same initial weights and
data, 20 steps of each optimizer under each schedule; parameters and learning rates are
compared after every step (float64 to 1e-10, float32 to 1e-5). Skipped without PyTorch."""
import numpy as np
import pytest

import minitorch
from minitorch import optim

torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")

STEPS = 20
D_MODEL, WARMUP, FACTOR = 16, 5, 0.5


def warmup_lambda(epoch):
    """The "Attention is all you need" schedule as a LambdaLR multiplier of lr=1."""
    step = epoch + 1
    return FACTOR * D_MODEL ** -0.5 * min(step ** -0.5, step * WARMUP ** -1.5)


OPTIMIZERS = {
    "sgd-nesterov-wd": (optim.SGD, lambda: torch.optim.SGD,
                        dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    "sgd-dampening": (optim.SGD, lambda: torch.optim.SGD,
                      dict(lr=0.05, momentum=0.5, dampening=0.2)),
    # maximize=True climbs the objective: the tests hand these the negated loss
    "sgd-maximize": (optim.SGD, lambda: torch.optim.SGD,
                     dict(lr=0.05, momentum=0.9, maximize=True, weight_decay=0.01)),
    "adam-maximize": (optim.Adam, lambda: torch.optim.Adam,
                      dict(lr=0.01, maximize=True, amsgrad=True)),
    "adam": (optim.Adam, lambda: torch.optim.Adam, dict(lr=0.01, weight_decay=0.01)),
    "adam-amsgrad": (optim.Adam, lambda: torch.optim.Adam,
                     dict(lr=0.01, amsgrad=True, betas=(0.8, 0.95))),
    "adamw": (optim.AdamW, lambda: torch.optim.AdamW, dict(lr=0.01)),
    "adamw-amsgrad": (optim.AdamW, lambda: torch.optim.AdamW,
                      dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
}

SCHEDULES = {
    "lambda": (lambda o: optim.lr_scheduler.LambdaLR(o, lambda e: 0.95 ** e),
               lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda e: 0.95 ** e)),
    "step": (lambda o: optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5),
             lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5)),
    "cosine": (lambda o: optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=1e-4),
               lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=7, eta_min=1e-4)),
    "warmup": (lambda o: optim.lr_scheduler.TransformerLR(o, D_MODEL, WARMUP, FACTOR),
               lambda o: torch.optim.lr_scheduler.LambdaLR(o, warmup_lambda)),
}


def initial_weights(dtype):
    rng = np.random.default_rng(42)
    shapes = [(4, 6), (6,), (6, 3), (3,)]
    weights = [rng.standard_normal(s).astype(dtype) * 0.5 for s in shapes]
    x = rng.standard_normal((8, 4)).astype(dtype)
    y = rng.standard_normal((8, 3)).astype(dtype)
    return weights, x, y


def mlp_loss(lib, params, x, y):
    w1, b1, w2, b2 = params
    hidden = lib.tanh(x @ w1 + b1)
    return ((hidden @ w2 + b2 - y) ** 2).mean()


def objective(lib, params, x, y, options):
    """What the optimizer is handed: the loss, or minus the loss for maximize=True."""
    loss = mlp_loss(lib, params, x, y)
    return -loss if options.get("maximize") else loss


@pytest.mark.parametrize("dtype, tolerance", [(np.float64, 1e-10), (np.float32, 1e-5)],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("schedule", sorted(SCHEDULES))
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_training_matches_pytorch(name, schedule, dtype, tolerance):
    mt_class, torch_class, options = OPTIMIZERS[name]
    mt_schedule, torch_schedule = SCHEDULES[schedule]
    if schedule == "warmup":
        options = dict(options, lr=1.0)  # torch's LambdaLR multiplies lr=1 by the formula
    weights, x, y = initial_weights(dtype)

    mt_params = [minitorch.tensor(w.copy(), requires_grad=True) for w in weights]
    torch_params = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    mt_opt = mt_class(mt_params, **options)
    torch_opt = torch_class()(torch_params, **options)
    mt_sched, torch_sched = mt_schedule(mt_opt), torch_schedule(torch_opt)
    mt_x, mt_y = minitorch.tensor(x), minitorch.tensor(y)
    torch_x, torch_y = torch.from_numpy(x), torch.from_numpy(y)

    for step in range(STEPS):
        mt_opt.zero_grad()
        mt_loss = objective(minitorch, mt_params, mt_x, mt_y, options)
        mt_loss.backward()
        mt_opt.step()
        mt_sched.step()

        torch_opt.zero_grad()
        torch_loss = objective(torch, torch_params, torch_x, torch_y, options)
        torch_loss.backward()
        torch_opt.step()
        torch_sched.step()

        assert mt_loss.item() == pytest.approx(torch_loss.item(), rel=tolerance, abs=tolerance)
        assert mt_sched.get_last_lr() == pytest.approx(torch_sched.get_last_lr(), rel=1e-15)
        for index, (p, q) in enumerate(zip(mt_params, torch_params)):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=tolerance,
                                       atol=tolerance,
                                       err_msg=f"parameter {index} after step {step + 1}")
    # the run did train: the loss went down from the start
    assert mlp_loss(minitorch, mt_params, mt_x, mt_y).item() < \
        mlp_loss(minitorch, [minitorch.tensor(w) for w in weights], mt_x, mt_y).item()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_state_dict_matches_pytorchs_layout_and_values(name):
    mt_class, torch_class, options = OPTIMIZERS[name]
    weights, x, y = initial_weights(np.float64)
    mt_params = [minitorch.tensor(w.copy(), requires_grad=True) for w in weights]
    torch_params = [torch.tensor(w.copy(), requires_grad=True) for w in weights]
    mt_opt, torch_opt = mt_class(mt_params, **options), torch_class()(torch_params, **options)
    for _ in range(3):
        for opt, lib, params, xs, ys in ((mt_opt, minitorch, mt_params, minitorch.tensor(x),
                                          minitorch.tensor(y)),
                                         (torch_opt, torch, torch_params, torch.from_numpy(x),
                                          torch.from_numpy(y))):
            opt.zero_grad()
            objective(lib, params, xs, ys, options).backward()
            opt.step()
    mine, theirs = mt_opt.state_dict(), torch_opt.state_dict()
    assert sorted(mine["state"]) == sorted(theirs["state"])
    for index, state in theirs["state"].items():
        assert sorted(mine["state"][index]) == sorted(state)
        for key, value in state.items():
            expected = value.numpy() if isinstance(value, torch.Tensor) else value
            got = mine["state"][index][key]
            got = got.numpy() if isinstance(got, minitorch.Tensor) else got
            np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-12)
    for group, torch_group in zip(mine["param_groups"], theirs["param_groups"]):
        assert group["params"] == torch_group["params"]
        for key, value in group.items():
            assert torch_group[key] == value, key
