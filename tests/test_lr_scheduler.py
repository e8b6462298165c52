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


# ------------------------------------------------------------------ the schedules added later
def test_linear_lr_goes_from_start_to_end_factor_then_stays():
    sched = lr_scheduler.LinearLR(make_optimizer(0.1, second_lr=0.4), start_factor=0.25,
                                  end_factor=0.75, total_iters=4)
    for epoch, lrs in enumerate(lrs_over(sched, 8)):
        factor = 0.25 + 0.5 * min(epoch, 4) / 4
        assert lrs == pytest.approx([0.1 * factor, 0.4 * factor], rel=1e-12), epoch
    defaults = lr_scheduler.LinearLR(make_optimizer(0.3))
    assert (defaults.start_factor, defaults.end_factor, defaults.total_iters) == (1 / 3, 1.0, 5)
    assert defaults.get_last_lr() == pytest.approx([0.1], rel=1e-15)


def test_exponential_lr_multiplies_every_epoch():
    sched = lr_scheduler.ExponentialLR(make_optimizer(0.5, second_lr=2.0), gamma=0.9)
    for epoch, lrs in enumerate(lrs_over(sched, 6)):
        assert lrs == pytest.approx([0.5 * 0.9 ** epoch, 2.0 * 0.9 ** epoch], rel=1e-12)


def test_multistep_lr_decays_at_each_milestone_and_twice_at_a_repeated_one():
    sched = lr_scheduler.MultiStepLR(make_optimizer(1.0), milestones=[2, 5, 5], gamma=0.5)
    values = [lrs[0] for lrs in lrs_over(sched, 8)]
    assert values == pytest.approx([1, 1, 0.5, 0.5, 0.5, 0.125, 0.125, 0.125], rel=1e-15)


def test_constant_lr_scales_until_total_iters():
    sched = lr_scheduler.ConstantLR(make_optimizer(0.3), factor=0.5, total_iters=3)
    values = [lrs[0] for lrs in lrs_over(sched, 6)]
    assert values == pytest.approx([0.15, 0.15, 0.15, 0.3, 0.3, 0.3], rel=1e-15)


def test_one_cycle_lr_rises_to_max_lr_then_anneals_and_cycles_momentum():
    # the lr given is replaced: the cycle starts at max_lr / div_factor
    opt = optim.SGD([minitorch.zeros(2, requires_grad=True)], lr=123.0, momentum=0.9)
    sched = lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.3,
                                    div_factor=10.0, final_div_factor=100.0)
    lrs, momenta = [], []
    for step in range(20):
        lrs.append(sched.get_last_lr()[0])
        momenta.append(opt.param_groups[0]["momentum"])
        if step < 19:
            opt.step()
            sched.step()
    # the warmup ends at step 0.3 * 20 - 1 = 5, the annealing at step 19
    assert lrs[0] == pytest.approx(0.1) and momenta[0] == pytest.approx(0.95)
    assert lrs[5] == pytest.approx(1.0) and momenta[5] == pytest.approx(0.85)
    assert lrs[-1] == pytest.approx(0.1 / 100) and momenta[-1] == pytest.approx(0.95)
    assert all(a < b for a, b in zip(lrs[:6], lrs[1:6]))        # rising
    assert all(a > b for a, b in zip(lrs[5:], lrs[6:]))         # then falling
    # half-way through each phase, the cosine is half-way between its ends
    assert lrs[12] == pytest.approx((1.0 + 0.001) / 2) and momenta[12] == pytest.approx(0.9)
    assert lrs[2] + lrs[3] == pytest.approx(1.0 + 0.1)
    assert opt.param_groups[0]["initial_lr"] == 0.1 and opt.param_groups[0]["min_lr"] == 0.001
    sched.step()  # as PyTorch's, one step past the cycle is allowed (last_epoch == total_steps)
    with pytest.raises(ValueError, match="tried to step 21 times.*total steps is 20"):
        sched.step()


def test_one_cycle_lr_cycles_adams_beta1_and_three_phases_linearly():
    p = minitorch.zeros(2, requires_grad=True)
    opt = optim.Adam([p], lr=1.0, betas=(0.9, 0.98))
    sched = lr_scheduler.OneCycleLR(opt, max_lr=0.4, epochs=2, steps_per_epoch=5,
                                    pct_start=0.4, anneal_strategy="linear", three_phase=True,
                                    base_momentum=0.8, max_momentum=0.9)
    lrs, betas = [sched.get_last_lr()[0]], [opt.param_groups[0]["betas"]]
    for _ in range(9):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        betas.append(opt.param_groups[0]["betas"])
    # phases end at steps 3 (max_lr), 6 (back to initial_lr), 9 (min_lr); lines between
    assert lrs[3] == pytest.approx(0.4) and lrs[6] == pytest.approx(0.016)
    assert lrs[1] == pytest.approx(0.016 + (0.4 - 0.016) / 3)
    assert lrs[9] == pytest.approx(0.016 / 1e4)
    assert [b[0] for b in (betas[0], betas[3], betas[6], betas[9])] == pytest.approx(
        [0.9, 0.8, 0.9, 0.9])
    assert all(b[1] == 0.98 for b in betas)


def test_sequential_lr_warms_up_then_hands_over():
    opt = make_optimizer(1.0, second_lr=0.5)
    warmup = lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=3)
    decay = lr_scheduler.ExponentialLR(opt, gamma=0.5)
    sched = lr_scheduler.SequentialLR(opt, [warmup, decay], milestones=[3])
    values = [lrs[0] for lrs in lrs_over(sched, 7)]
    assert values == pytest.approx([0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 0.125], rel=1e-12)
    assert sched.last_epoch == 6 and sched.get_last_lr()[1] == pytest.approx(0.5 * 0.125)


def test_chained_scheduler_multiplies_the_factors():
    opt = make_optimizer(1.0)
    sched = lr_scheduler.ChainedScheduler([lr_scheduler.ConstantLR(opt, factor=0.5,
                                                                   total_iters=2),
                                           lr_scheduler.ExponentialLR(opt, gamma=0.9)])
    values = [lrs[0] for lrs in lrs_over(sched, 5)]
    assert values == pytest.approx([0.5, 0.5 * 0.9, 0.9 ** 2, 0.9 ** 3, 0.9 ** 4], rel=1e-12)


def test_reduce_lr_on_plateau_waits_patience_then_cools_down():
    opt = make_optimizer(1.0, second_lr=0.1)
    sched = lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1,
                                           min_lr=[0.3, 0.0])
    history = []
    for metric in [10, 9, 9, 9, 9, 9, 9, 9, 9, 8]:
        sched.step(minitorch.tensor(float(metric)))  # a 0-d tensor, as a loss is
        history.append(sched.get_last_lr())
    # bad epochs: 9 at index 2, 3, 4 -> cut after the third (index 4); one epoch of cooldown
    # (index 5) does not count; 6, 7, 8 are bad again -> cut at index 8, but lr 0.5 stops at 0.3
    assert [h[0] for h in history] == [1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 0.3, 0.3]
    assert history[-1][1] == pytest.approx(0.025)
    assert sched.best == 8 and sched.last_epoch == 10 and sched.num_bad_epochs == 0


@pytest.mark.parametrize("mode, threshold_mode, better, worse", [
    ("min", "rel", 0.89, 0.91), ("min", "abs", 0.89, 0.91),
    ("max", "rel", 1.11, 1.09), ("max", "abs", 1.11, 1.09)])
def test_reduce_lr_on_plateau_threshold(mode, threshold_mode, better, worse):
    sched = lr_scheduler.ReduceLROnPlateau(make_optimizer(1.0), mode=mode, patience=0,
                                           threshold=0.1, threshold_mode=threshold_mode)
    sched.step(1.0)
    sched.step(better)  # an improvement by more than the threshold: no cut
    assert sched.get_last_lr() == [1.0] and sched.best == better
    sched.step(better)
    assert sched.get_last_lr() == [pytest.approx(0.1)]
    sched = lr_scheduler.ReduceLROnPlateau(make_optimizer(1.0), mode=mode, patience=0,
                                           threshold=0.1, threshold_mode=threshold_mode)
    sched.step(1.0)
    sched.step(worse)  # better than before, but not by the threshold: a bad epoch
    assert sched.get_last_lr() == [pytest.approx(0.1)]


def test_reduce_lr_on_plateau_skips_a_cut_smaller_than_eps():
    sched = lr_scheduler.ReduceLROnPlateau(make_optimizer(1e-9), patience=0, eps=1e-8)
    sched.step(1.0)
    sched.step(2.0)
    assert sched.get_last_lr() == [1e-9]


def test_step_with_an_epoch_jumps_by_the_closed_form_and_warns():
    for make, expected in [
        (lambda o: lr_scheduler.StepLR(o, step_size=2, gamma=0.5), 0.25),
        (lambda o: lr_scheduler.MultiStepLR(o, milestones=[1, 3, 9], gamma=0.5), 0.25),
        (lambda o: lr_scheduler.ExponentialLR(o, gamma=0.5), 0.5 ** 5),
        (lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=9), 0.5),
        (lambda o: lr_scheduler.LinearLR(o, start_factor=0.5, total_iters=10), 0.75),
        (lambda o: lr_scheduler.CosineAnnealingLR(o, T_max=10), (1 + math.cos(math.pi / 2)) / 2),
    ]:
        sched = make(make_optimizer(1.0))
        with pytest.warns(UserWarning, match="epoch parameter"):
            sched.step(5)
        assert sched.last_epoch == 5 and sched.get_last_lr() == [pytest.approx(expected)]


@pytest.mark.parametrize("make", [
    lambda o: lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=6),
    lambda o: lr_scheduler.ExponentialLR(o, gamma=0.8),
    lambda o: lr_scheduler.MultiStepLR(o, milestones=[2, 6, 6], gamma=0.5),
    lambda o: lr_scheduler.ConstantLR(o, factor=0.5, total_iters=6),
    lambda o: lr_scheduler.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=15),
    lambda o: lr_scheduler.SequentialLR(o, [lr_scheduler.ConstantLR(o, factor=0.1,
                                                                    total_iters=3),
                                            lr_scheduler.MultiStepLR(o, [4, 7])], [3]),
    lambda o: lr_scheduler.ChainedScheduler([lr_scheduler.LinearLR(o, total_iters=4),
                                             lr_scheduler.StepLR(o, 3, gamma=0.5)]),
], ids=["linear", "exponential", "multistep", "constant", "onecycle", "sequential", "chained"])
def test_new_schedules_state_dict_round_trip(make, tmp_path):
    def fresh():
        a = minitorch.zeros(2, requires_grad=True)
        b = minitorch.zeros(3, requires_grad=True)
        return optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.2, momentum=0.9)

    uninterrupted = make(fresh())
    expected = lrs_over(uninterrupted, 12)
    opt = fresh()
    sched = make(opt)
    first = lrs_over(sched, 5)
    minitorch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                   tmp_path / "ckpt.safetensors")
    checkpoint = minitorch.load(tmp_path / "ckpt.safetensors")
    new_opt = fresh()
    new_sched = make(new_opt)
    new_opt.load_state_dict(checkpoint["optimizer"])
    new_sched.load_state_dict(checkpoint["scheduler"])
    assert new_sched.get_last_lr() == first[-1]
    rest = []
    for _ in range(7):
        new_opt.step()
        new_sched.step()
        rest.append(new_sched.get_last_lr())
    assert first + rest == expected
    assert [g["momentum"] for g in new_opt.param_groups] == \
        [g["momentum"] for g in uninterrupted.optimizer.param_groups]


def test_reduce_lr_on_plateau_state_dict_round_trip(tmp_path):
    metrics = [5.0, 4.0, 4.5, 4.5, 4.5, 3.0, 3.5, 3.5, 3.5, 3.5]
    uninterrupted = lr_scheduler.ReduceLROnPlateau(make_optimizer(1.0), patience=1, cooldown=1)
    for m in metrics:
        uninterrupted.step(m)
    opt = make_optimizer(1.0)
    sched = lr_scheduler.ReduceLROnPlateau(opt, patience=1, cooldown=1)
    for m in metrics[:4]:
        sched.step(m)
    minitorch.save({"optimizer": opt.state_dict(), "scheduler": sched.state_dict()},
                   tmp_path / "ckpt")
    checkpoint = minitorch.load(tmp_path / "ckpt")
    new_opt = make_optimizer(1.0)
    new_sched = lr_scheduler.ReduceLROnPlateau(new_opt, mode="max")  # the state says "min"
    new_opt.load_state_dict(checkpoint["optimizer"])
    new_sched.load_state_dict(checkpoint["scheduler"])
    assert new_sched.mode == "min" and new_sched.mode_worse == math.inf
    for m in metrics[4:]:
        new_sched.step(m)
    assert new_sched.get_last_lr() == uninterrupted.get_last_lr()
    assert new_sched.best == uninterrupted.best


def test_new_scheduler_errors():
    opt = make_optimizer(second_lr=0.2)
    with pytest.raises(ValueError, match="start_factor must be greater than 0"):
        lr_scheduler.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="end_factor must be between 0 and 1, got 1.5"):
        lr_scheduler.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="factor must be between 0 and 1, got 2"):
        lr_scheduler.ConstantLR(opt, factor=2)
    with pytest.raises(ValueError, match="total_steps OR"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0)
    with pytest.raises(ValueError, match="total_steps must be a positive int, got 0"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=0)
    with pytest.raises(ValueError, match="steps_per_epoch must be a positive int"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, epochs=2, steps_per_epoch=-1)
    with pytest.raises(ValueError, match="pct_start must be a float between 0 and 1"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, pct_start=1.5)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="max_lr must have the same length"):
        lr_scheduler.OneCycleLR(opt, max_lr=[1.0], total_steps=10)
    no_momentum = optim.Optimizer([minitorch.zeros(1, requires_grad=True)], dict(lr=0.1))
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        lr_scheduler.OneCycleLR(no_momentum, max_lr=1.0, total_steps=10)
    lr_scheduler.OneCycleLR(no_momentum, max_lr=1.0, total_steps=10, cycle_momentum=False)
    with pytest.raises(ValueError, match="factor must be < 1.0"):
        lr_scheduler.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode must be 'min' or 'max', got 'avg'"):
        lr_scheduler.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="threshold_mode must be 'rel' or 'abs'"):
        lr_scheduler.ReduceLROnPlateau(opt, threshold_mode="log")
    with pytest.raises(ValueError, match="expected 2 min_lrs"):
        lr_scheduler.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(TypeError, match="must be an Optimizer"):
        lr_scheduler.ReduceLROnPlateau("adam")
    other = make_optimizer()
    step = lr_scheduler.StepLR(opt, 2)
    with pytest.raises(ValueError, match="one more scheduler than milestones"):
        lr_scheduler.SequentialLR(opt, [step], milestones=[3])
    with pytest.raises(ValueError, match="at least one scheduler"):
        lr_scheduler.SequentialLR(opt, [], milestones=[])
    with pytest.raises(ValueError, match="same optimizer"):
        lr_scheduler.SequentialLR(other, [step], milestones=[])
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        lr_scheduler.ChainedScheduler([step, lr_scheduler.ReduceLROnPlateau(opt)])
    with pytest.raises(TypeError, match=r"schedulers\[1\] should have `optimizer`"):
        lr_scheduler.ChainedScheduler([step, 3])


# ------------------------------------------------------------------ parity with PyTorch
PARITY_SCHEDULES = {
    "lambda": lambda L, o: L.LambdaLR(o, lambda e: 0.9 ** e),
    "step": lambda L, o: L.StepLR(o, step_size=4, gamma=0.3),
    "cosine": lambda L, o: L.CosineAnnealingLR(o, T_max=6, eta_min=0.001),
    "linear": lambda L, o: L.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=7),
    "linear-default": lambda L, o: L.LinearLR(o),
    "exponential": lambda L, o: L.ExponentialLR(o, gamma=0.93),
    "multistep": lambda L, o: L.MultiStepLR(o, milestones=[3, 7, 7, 12], gamma=0.3),
    "constant": lambda L, o: L.ConstantLR(o, factor=0.4, total_iters=6),
    "onecycle": lambda L, o: L.OneCycleLR(o, max_lr=[0.5, 1.0], total_steps=30),
    "onecycle-3phase-linear": lambda L, o: L.OneCycleLR(
        o, max_lr=0.5, epochs=3, steps_per_epoch=10, three_phase=True,
        anneal_strategy="linear", pct_start=0.25, base_momentum=[0.7, 0.8]),
    "sequential": lambda L, o: L.SequentialLR(
        o, [L.LinearLR(o, start_factor=0.1, total_iters=4),
            L.CosineAnnealingLR(o, T_max=10, eta_min=0.01), L.ExponentialLR(o, 0.9)],
        milestones=[4, 15]),
    "chained": lambda L, o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4),
                                                L.ExponentialLR(o, gamma=0.9)]),
}


def optimizers_for_parity(torch, kind):
    """The same two-group optimizer in both libraries: SGD with momentum, or Adam (betas)."""
    made = []
    for lib, zeros in ((optim, minitorch.zeros), (torch.optim, torch.zeros)):
        groups = [{"params": [zeros(2, requires_grad=True)]},
                  {"params": [zeros(3, requires_grad=True)], "lr": 0.3}]
        made.append(lib.SGD(groups, lr=0.1, momentum=0.9) if kind == "sgd"
                    else lib.Adam(groups, lr=0.1))
    return made


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("name", sorted(PARITY_SCHEDULES))
def test_schedule_matches_pytorch_exactly(name, kind):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    opt, torch_opt = optimizers_for_parity(torch, kind)
    make = PARITY_SCHEDULES[name]
    sched, torch_sched = make(lr_scheduler, opt), make(torch.optim.lr_scheduler, torch_opt)
    for epoch in range(29):
        assert sched.get_last_lr() == torch_sched.get_last_lr(), epoch  # to the last bit
        assert getattr(sched, "last_epoch", None) == getattr(torch_sched, "last_epoch", None)
        for group, torch_group in zip(opt.param_groups, torch_opt.param_groups):
            for key in ("momentum", "betas", "initial_lr", "max_lr", "min_lr"):
                assert group.get(key) == torch_group.get(key), (epoch, key)
        opt.step()
        torch_opt.step()
        sched.step()
        torch_sched.step()
    # the same state_dict entries (PyTorch's also has a flag for a warning minitorch lacks)
    assert set(sched.state_dict()) == set(torch_sched.state_dict()) - {
        "_get_lr_called_within_step"}


@pytest.mark.parametrize("options", [
    dict(), dict(patience=1), dict(threshold_mode="abs", threshold=0.05, patience=1, eps=0.02),
    dict(mode="max", patience=0, factor=0.5, cooldown=2, min_lr=[0.01, 0.2])], ids=str)
def test_reduce_lr_on_plateau_matches_pytorch(options):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    opt, torch_opt = optimizers_for_parity(torch, "sgd")
    sched = lr_scheduler.ReduceLROnPlateau(opt, **options)
    torch_sched = torch.optim.lr_scheduler.ReduceLROnPlateau(torch_opt, **options)
    metrics = [5, 4, 4.1, 4.2, 4.0, 3.9999, 3.9, 3.95, 3.95, 3.95, 3.95, 3.8] + [3.8] * 12
    for metric in metrics:
        sched.step(metric)
        torch_sched.step(metric)
        assert sched.get_last_lr() == torch_sched.get_last_lr()
        assert (sched.best, sched.num_bad_epochs, sched.cooldown_counter, sched.last_epoch) == \
            (torch_sched.best, torch_sched.num_bad_epochs, torch_sched.cooldown_counter,
             torch_sched.last_epoch)
    assert set(sched.state_dict()) == set(torch_sched.state_dict())


@pytest.mark.parametrize("name", ["step", "cosine", "linear", "exponential", "multistep",
                                  "constant"])
def test_step_with_epoch_matches_pytorch(name):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    opt, torch_opt = optimizers_for_parity(torch, "sgd")
    make = PARITY_SCHEDULES[name]
    sched, torch_sched = make(lr_scheduler, opt), make(torch.optim.lr_scheduler, torch_opt)
    with pytest.warns(UserWarning):
        for epoch in [3, 1, 8, 20, 6]:
            sched.step(epoch)
            torch_sched.step(epoch)
            assert sched.get_last_lr() == torch_sched.get_last_lr(), epoch
