"""The fused Adam / AdamW step (csrc/adam.c) against the numpy reference update, bit for bit.

The C kernel rounds every operation to the parameter's dtype in the numpy update's order, so
the two must agree exactly: parameters and every moment, float32 and float64, 1 and 2 threads,
the reference body and the tuned one at every ISA level (tuned/adam_tuned.c), every option
(amsgrad, maximize, L2 and decoupled weight decay, a beta1 that takes lerp's other branch),
over several steps, on empty, 0-d, odd-sized and large parameters, with NaN and inf
gradients; parameters C cannot update in place (strided views, float16) go through the numpy
update. Then the same through ``optim.Adam``/``AdamW`` on both backends. PyTorch parity of the
optimizers is in test_optim_parity_torch.py.
"""
import itertools

import numpy as np
import pytest

import minitorch
from minitorch.backends import numpy_backend as N
from test_kernels import ISAS, C, c_threads, needs_c

SHAPES = [(0,), (), (1,), (7,), (33, 5), (64, 129), (40000,)]  # 40000: split over threads


def make_state(rng, dtype, amsgrad, special=False):
    """Parameters, gradients and moments for SHAPES (random; moments >= 0 where they must be)."""
    def normal(shape, scale=1.0, absolute=False):
        values = scale * rng.standard_normal(shape)
        return np.array(np.abs(values) if absolute else values, dtype=dtype)  # 0-d: an array
    params = [normal(s) for s in SHAPES]
    grads = [normal(s) for s in SHAPES]
    if special:  # NaN and +-inf gradients, and a zero second moment
        grads[4][0, :3] = [np.nan, np.inf, -np.inf]
    exp_avgs = [normal(s, 0.1) for s in SHAPES]
    exp_avg_sqs = [normal(s, 0.01, absolute=True) for s in SHAPES]
    exp_avg_sqs[3][:2] = 0
    maxes = [normal(s, 0.01, absolute=True) for s in SHAPES] if amsgrad else None
    return params, grads, exp_avgs, exp_avg_sqs, maxes


def copied(state):
    return [None if arrays is None else [a.copy() for a in arrays] for arrays in state]


OPTIONS = [dict(weight_decay=wd, decoupled_weight_decay=dec, maximize=mx, amsgrad=ams, beta1=b1)
           for wd, dec, mx, ams, b1 in itertools.product((0.0, 0.1), (False, True), (False, True),
                                                         (False, True), (0.9, 0.3))
           if not (wd == 0 and dec)]


@needs_c
@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_c_adam_step_equals_numpy_bit_for_bit(dtype, threads, isa):
    rng = np.random.default_rng(0)
    for index, options in enumerate(OPTIONS):
        options = dict(options)
        amsgrad, beta1 = options.pop("amsgrad"), options.pop("beta1")
        state = make_state(rng, dtype, amsgrad, special=index % 3 == 0)
        expected, got = copied(state), copied(state)
        for step in range(1, 4):
            hyper = dict(lr=1e-2, beta1=beta1, beta2=0.999, eps=1e-8, **options)
            step_sizes = [hyper["lr"] / (1 - beta1 ** step)] * len(SHAPES)
            bc2 = [(1 - 0.999 ** step) ** 0.5] * len(SHAPES)
            with np.errstate(invalid="ignore"):  # the NaN and inf gradients
                N.adam_step(*expected, step_sizes, bc2, **hyper)
            with c_threads(threads, isa):
                C.adam_step(*got, step_sizes, bc2, **hyper)
            for name, want, have in zip(("param", "grad", "exp_avg", "exp_avg_sq", "max"),
                                        expected, got):
                for shape, a, b in zip(SHAPES, want or [], have or []):
                    assert b.dtype == dtype
                    np.testing.assert_array_equal(b, a, err_msg=f"{name} {shape} step {step} "
                                                                f"{options} amsgrad={amsgrad}")


@needs_c
def test_c_adam_step_per_parameter_steps_and_fallbacks():
    """Each parameter its own step count; a strided view, a float16 and a float64 parameter
    among float32 ones are updated in place too (by numpy's update), equal to numpy's."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((6, 8)).astype(np.float32)
    params = [rng.standard_normal(5).astype(np.float32), base[:, ::2],
              rng.standard_normal(4).astype(np.float16), rng.standard_normal(3)]
    grads = [rng.standard_normal(p.shape).astype(p.dtype) for p in params]
    moments = [[np.zeros_like(p) for p in params] for _ in range(2)]
    state = [params, grads, *moments, None]
    expected, got = copied(state), copied(state)
    got[0][1] = base.copy()[:, ::2]  # a strided view, written through to its base
    step_sizes, bc2 = [0.1, 0.2, 0.3, 0.4], [0.5, 0.6, 0.7, 0.8]
    hyper = dict(lr=0.1, beta1=0.9, beta2=0.99, eps=1e-6, weight_decay=0.01)
    N.adam_step(*expected, step_sizes, bc2, **hyper)
    C.adam_step(*got, step_sizes, bc2, **hyper)
    for want, have in zip(expected[0] + expected[2] + expected[3], got[0] + got[2] + got[3]):
        assert have.dtype == want.dtype
        np.testing.assert_array_equal(have, want)
    assert not np.array_equal(got[0][1], params[1])  # the view was updated in place


@needs_c
def test_c_adam_step_keeps_its_pointer_lists_for_the_same_parameters_and_moments():
    """The C update reuses the last call's pointer lists when it gets the very same parameters
    and moments, pointing them at each call's gradients (fresh arrays each step, as a loop that
    sets them to None makes), and makes new lists for new moments, even where a new array takes
    a freed one's id, or for a gradient C cannot read in place: each step equals numpy's."""
    rng = np.random.default_rng(2)
    params, grads, exp_avgs, exp_avg_sqs, _ = make_state(rng, np.float32, False)
    expected = copied([params, grads, exp_avgs, exp_avg_sqs])
    hyper = dict(lr=1e-2, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0)
    plans = []
    for step in range(1, 8):
        if step >= 2:  # fresh gradients; the old ones freed first, so a new one may take an id
            del grads
            grads = [rng.standard_normal(p.shape).astype(np.float32) for p in params]
            if step == 6:  # two not C-contiguous: numpy's update for those, this step
                grads[4] = np.asfortranarray(grads[4])
                grads[6] = rng.standard_normal(2 * SHAPES[6][0]).astype(np.float32)[::2]
            expected[1] = [g.copy() for g in grads]
        if step == 4:  # new moment arrays (the same values): new lists
            del exp_avgs
            exp_avgs = [m.copy() for m in expected[2]]
        sizes, bc2 = [1e-2 / (1 - 0.9 ** step)] * len(SHAPES), [(1 - 0.999 ** step) ** 0.5] * 7
        N.adam_step(*expected, None, sizes, bc2, **hyper)
        C.adam_step(params, grads, exp_avgs, exp_avg_sqs, None, sizes, bc2, **hyper)
        plans.append(C._AdamPlan.last)
        for want, have in zip(expected[0] + expected[2] + expected[3],
                              params + exp_avgs + exp_avg_sqs):
            np.testing.assert_array_equal(have, want, err_msg=f"step {step}")
    assert plans[0] is plans[1] is plans[2]  # new gradients: the same lists
    assert plans[3] is not plans[2] and plans[4] is plans[3]  # new moments: new lists
    assert plans[5] is not plans[4] and plans[5].elsewhere == [4, 6]  # strided gradients
    assert plans[6] is not plans[5] and not plans[6].elsewhere  # back to C for all
    with pytest.raises(ValueError, match="one entry per parameter"):
        C.adam_step(params, grads, exp_avgs, exp_avg_sqs, None, sizes[:-1], bc2, **hyper)
    with pytest.raises(ValueError, match="must have the shape"):
        C.adam_step(params, grads[:-1] + [grads[-1][..., :1]], exp_avgs, exp_avg_sqs, None,
                    sizes, bc2, **hyper)


def tiny_model(dtype):
    minitorch.manual_seed(0)
    model = minitorch.nn.Sequential(minitorch.nn.Linear(5, 7), minitorch.nn.ReLU(),
                                    minitorch.nn.Linear(7, 3))
    return model.to(dtype)


def train(backend, optimizer_class, dtype, steps=4, **options):
    """The optimizer's steps on `backend`, each on gradients made by numpy from the parameters:
    the same arrays on both backends, whose forward and backward passes may differ in the last
    bit (the C GEMM and numpy's BLAS add in their own orders, which vary with the CPU)."""
    model = tiny_model(dtype)
    optimizer = optimizer_class(model.parameters(), lr=0.05, **options)
    with minitorch.backends.using(backend):
        for step in range(steps):
            optimizer.zero_grad()
            for p in model.parameters():
                p.grad = minitorch.tensor(np.sin(3 * p.detach().numpy()) + 0.1 * step,
                                          dtype=dtype)
            optimizer.step()
    return model, optimizer


@needs_c
@pytest.mark.parametrize("dtype", [minitorch.float32, minitorch.float64])
@pytest.mark.parametrize("optimizer_class,options", [
    (minitorch.optim.Adam, {}),
    (minitorch.optim.Adam, dict(amsgrad=True, weight_decay=0.1, maximize=True)),
    (minitorch.optim.AdamW, {}),
    (minitorch.optim.AdamW, dict(amsgrad=True, betas=(0.2, 0.5), foreach=True, fused=True)),
])
def test_optimizers_equal_on_both_backends(dtype, optimizer_class, options):
    model_c, opt_c = train("c", optimizer_class, dtype, **options)
    model_n, opt_n = train("numpy", optimizer_class, dtype, **options)
    for (name, p_c), p_n in zip(model_c.named_parameters(), model_n.parameters()):
        np.testing.assert_array_equal(p_c.detach().numpy(), p_n.detach().numpy(), err_msg=name)
    for state_c, state_n in zip(opt_c.state.values(), opt_n.state.values()):
        assert state_c["step"] == state_n["step"] == 4
        for key in state_c.keys() - {"step"}:
            np.testing.assert_array_equal(state_c[key].numpy(), state_n[key].numpy(), err_msg=key)
