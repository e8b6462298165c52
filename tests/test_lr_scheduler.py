"""Tests of minitorch.optim.lr_scheduler: each schedule's values against its formula, param
groups, state_dict round trips (through minitorch.save) and argument errors."""
import math

import pytest

import minitorch
from minitorch import optim
from minitorch.optim import lr_scheduler


def make_optimizer(lr=0.1, second_lr=None):
    a = minitorch.zeros(2, requires_grad=True)
    b = minitorch.zeros(3, requires_grad=True)
    if second_lr is None:
        return optim.SGD([a, b], lr=lr)
    return optim.SGD([{"params": [a]}, {"params": [b], "lr": second_lr}], lr=lr)


def lrs_over(scheduler, steps):
    """The lr in force for epochs 0 .. steps-1 (the first before any step())."""
    values = [scheduler.get_last_lr()]
    for _ in range(steps - 1):
        scheduler.optimizer.step()
        scheduler.step()
        values.append(scheduler.get_last_lr())
    return values


def test_lambda_lr_scales_each_groups_initial_lr():
    opt = make_optimizer(0.1, second_lr=0.4)
    sched = lr_scheduler.LambdaLR(opt, [lambda e: 1 / (e + 1), lambda e: 0.5 ** e])
    for epoch, lrs in enumerate(lrs_over(sched, 6)):
        assert lrs == pytest.approx([0.1 / (epoch + 1), 0.4 * 0.5 ** epoch], rel=1e-15)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.4]
    assert sched.last_epoch == 5
    assert [g["lr"] for g in opt.param_groups] == sched.get_last_lr()


def test_step_lr_values():
    sched = lr_scheduler.StepLR(make_optimizer(0.5, second_lr=1.0), step_size=3, gamma=0.1)
    for epoch, lrs in enumerate(lrs_over(sched, 10)):
        factor = 0.1 ** (epoch // 3)
        assert lrs == pytest.approx([0.5 * factor, 1.0 * factor], rel=1e-12)


@pytest.mark.parametrize("eta_min", [0.0, 0.01])
def test_cosine_annealing_values_follow_the_closed_form(eta_min):
    base, T_max = 0.1, 5
    sched = lr_scheduler.CosineAnnealingLR(make_optimizer(base), T_max=T_max, eta_min=eta_min)
    values = lrs_over(sched, 3 * T_max + 2)  # past T_max it climbs back: period 2 * T_max
    for epoch, (lr,) in enumerate(values):
        expected = eta_min + (base - eta_min) * (1 + math.cos(math.pi * epoch / T_max)) / 2
        assert lr == pytest.approx(expected, rel=1e-10, abs=1e-15), epoch
    assert values[T_max][0] == pytest.approx(eta_min, abs=1e-15)
    assert values[2 * T_max][0] == pytest.approx(base, rel=1e-10)


def test_cosine_resumed_with_last_epoch_continues_from_the_groups_lr():
    # As PyTorch: resuming keeps the lr the (restored) optimizer holds, then recurses from it.
    def closed_form(epoch):
        return 0.05 * (1 + math.cos(math.pi * epoch / 10))

    opt = make_optimizer(closed_form(4))
    for group in opt.param_groups:
        group["initial_lr"] = 0.1
    sched = lr_scheduler.CosineAnnealingLR(opt, T_max=10, last_epoch=3)
    assert sched.last_epoch == 4 and sched.get_last_lr() == [closed_form(4)]
    opt.step()
    sched.step()
    assert sched.get_last_lr()[0] == pytest.approx(closed_form(5), rel=1e-12)


def test_resuming_without_initial_lr_raises_key_error():
    with pytest.raises(KeyError, match="initial_lr"):
        lr_scheduler.StepLR(make_optimizer(), step_size=2, last_epoch=4)


@pytest.mark.parametrize("d_model, warmup, factor", [(512, 4000, 1.0), (16, 5, 2.0)])
def test_transformer_lr_is_the_attention_paper_schedule(d_model, warmup, factor):
    opt = make_optimizer(lr=123.0)  # replaced, not scaled
    sched = lr_scheduler.TransformerLR(opt, d_model, warmup_steps=warmup, factor=factor)
    steps = [1, 2, warmup - 1, warmup, warmup + 1, 3 * warmup, 4 * warmup]
    values = lrs_over(sched, max(steps))
    for step in steps:
        expected = factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
        assert values[step - 1] == pytest.approx([expected], rel=1e-12)
    # linear warmup, peak at warmup_steps, then inverse-square-root decay
    peak = values[warmup - 1][0]
    assert values[0][0] == pytest.approx(peak / warmup, rel=1e-12)
    assert values[4 * warmup - 1][0] == pytest.approx(peak / 2, rel=1e-12)
    assert max(v[0] for v in values) == peak
    assert lr_scheduler.NoamLR is lr_scheduler.TransformerLR


@pytest.mark.parametrize("make", [
    lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0.5),
    lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=4, eta_min=0.001),
    lambda o: lr_scheduler.TransformerLR(o, d_model=8, warmup_steps=3),
    lambda o: lr_scheduler.LambdaLR(o, lambda e: 0.9 ** e),
], ids=["step", "cosine", "transformer", "lambda"])
def test_state_dict_round_trip_continues_the_schedule(make, tmp_path):
    uninterrupted = make(make_optimizer(0.2, second_lr=0.05))
    expected = lrs_over(uninterrupted, 12)

    opt = make_optimizer(0.2, second_lr=0.05)
    sched = make(opt)
    first = lrs_over(sched, 5)
    minitorch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                   tmp_path / "ckpt.safetensors")
    checkpoint = minitorch.load(tmp_path / "ckpt.safetensors")

    new_opt = make_optimizer(0.2, second_lr=0.05)
    new_sched = make(new_opt)
    new_opt.load_state_dict(checkpoint["optimizer"])
    new_sched.load_state_dict(checkpoint["scheduler"])
    assert new_sched.last_epoch == 4 and new_sched.get_last_lr() == first[-1]
    rest = []
    for _ in range(7):
        new_opt.step()
        new_sched.step()
        rest.append(new_sched.get_last_lr())
    assert first + rest == expected


def test_lambda_lr_state_dict_keeps_callable_objects_state_only():
    class Decay:
        def __init__(self, rate):
            self.rate = rate

        def __call__(self, epoch):
            return self.rate ** epoch

    opt = make_optimizer(1.0, second_lr=1.0)
    sched = lr_scheduler.LambdaLR(opt, [Decay(0.5), lambda e: 1.0])
    state = sched.state_dict()
    assert state["lr_lambdas"] == [{"rate": 0.5}, None] and "optimizer" not in state
    other = lr_scheduler.LambdaLR(make_optimizer(1.0, second_lr=1.0), [Decay(0.9), lambda e: 1.0])
    other.load_state_dict(state)
    assert other.lr_lambdas[0].rate == 0.5
    assert "lr_lambdas" in state  # the argument is left as it was


def test_scheduler_errors():
    opt = make_optimizer(second_lr=0.2)
    with pytest.raises(TypeError, match="must be an Optimizer"):
        lr_scheduler.StepLR([1, 2], step_size=1)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas"):
        lr_scheduler.LambdaLR(opt, [lambda e: 1.0])
    with pytest.raises(TypeError, match="must be callable"):
        lr_scheduler.LambdaLR(opt, 0.5)
    with pytest.raises(ValueError, match="step_size must be a positive int, got 0"):
        lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="T_max must be > 0, got 0"):
        lr_scheduler.CosineAnnealingLR(opt, T_max=0)
    with pytest.raises(ValueError, match="d_model must be a positive int, got -4"):
        lr_scheduler.TransformerLR(opt, d_model=-4)
    with pytest.raises(ValueError, match="warmup_steps must be a positive int, got 0"):
        lr_scheduler.TransformerLR(opt, d_model=4, warmup_steps=0)
    with pytest.raises(ValueError, match="factor must be > 0"):
        lr_scheduler.TransformerLR(opt, d_model=4, factor=0)


def test_optimizer_uses_the_scheduled_lr():
    p = minitorch.tensor([1.0], dtype=minitorch.float64, requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(3):
        p.grad = minitorch.tensor([1.0], dtype=minitorch.float64)
        opt.step()
        sched.step()
    assert p.detach().numpy()[0] == pytest.approx(1.0 - 1.0 - 0.5 - 0.25)
