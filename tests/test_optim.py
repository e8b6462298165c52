"""Tests of minitorch.optim: SGD, Adam and AdamW against hand-written numpy references,
zero_grad, param groups, closures, state_dict round trips and argument errors."""
import numpy as np
import pytest

import minitorch
from minitorch import optim

SHAPES = [(3, 4), (5,)]


def make_params(seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [minitorch.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)
            for shape in SHAPES]


def gradient_sequence(steps, seed=1, dtype=np.float64):
    """Fixed gradients per step and parameter, so the reference needs no autograd."""
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(shape).astype(dtype) for shape in SHAPES] for _ in range(steps)]


def run(optimizer, params, grads):
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = minitorch.tensor(g)
        optimizer.step()
    return [p.detach().numpy().copy() for p in params]


# ------------------------------------------------------------------ numpy references
def sgd_reference(values, grads, lr, momentum=0.0, dampening=0.0, weight_decay=0.0,
                  nesterov=False, maximize=False):
    values = [v.copy() for v in values]
    buffers = [None] * len(values)
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            d = -g if maximize else g.copy()
            d = d + weight_decay * values[i]
            if momentum:
                if buffers[i] is None:
                    buffers[i] = d.copy()
                else:
                    buffers[i] = momentum * buffers[i] + (1 - dampening) * d
                d = d + momentum * buffers[i] if nesterov else buffers[i]
            values[i] = values[i] - lr * d
    return values


def adam_reference(values, grads, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
                   amsgrad=False, maximize=False, decoupled=False):
    beta1, beta2 = betas
    values = [v.copy() for v in values]
    m = [np.zeros_like(v) for v in values]
    v2 = [np.zeros_like(v) for v in values]
    vmax = [np.zeros_like(v) for v in values]
    for t, step_grads in enumerate(grads, start=1):
        for i, g in enumerate(step_grads):
            g = -g if maximize else g
            if decoupled:
                values[i] = values[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * values[i]
            m[i] = beta1 * m[i] + (1 - beta1) * g
            v2[i] = beta2 * v2[i] + (1 - beta2) * g * g
            vmax[i] = np.maximum(vmax[i], v2[i])
            second = vmax[i] if amsgrad else v2[i]
            m_hat = m[i] / (1 - beta1 ** t)
            v_hat = second / (1 - beta2 ** t)
            values[i] = values[i] - lr * m_hat / (np.sqrt(v_hat) + eps)
    return values


SGD_CASES = [
    dict(lr=0.1),
    dict(lr=0.1, momentum=0.9),
    dict(lr=0.05, momentum=0.8, dampening=0.3),
    dict(lr=0.1, momentum=0.9, nesterov=True),
    dict(lr=0.1, weight_decay=0.01),
    dict(lr=0.1, momentum=0.9, weight_decay=0.1, nesterov=True, maximize=True),
    dict(lr=0.1, momentum=0.5, dampening=0.5, weight_decay=0.2, maximize=True),
]


@pytest.mark.parametrize("options", SGD_CASES, ids=str)
def test_sgd_matches_reference_for_three_steps(options):
    params = make_params()
    initial = [p.detach().numpy().copy() for p in params]
    grads = gradient_sequence(3)
    got = run(optim.SGD(params, **options), params, grads)
    for g, e in zip(got, sgd_reference(initial, grads, **options)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


ADAM_CASES = [
    dict(lr=0.01),
    dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6),
    dict(lr=0.01, weight_decay=0.1),
    dict(lr=0.01, amsgrad=True),
    dict(lr=0.01, maximize=True, weight_decay=0.05, amsgrad=True),
]


@pytest.mark.parametrize("options", ADAM_CASES, ids=str)
def test_adam_matches_reference_for_three_steps(options):
    params = make_params()
    initial = [p.detach().numpy().copy() for p in params]
    grads = gradient_sequence(3)
    got = run(optim.Adam(params, **options), params, grads)
    for g, e in zip(got, adam_reference(initial, grads, **options)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("options", ADAM_CASES + [dict(lr=0.01, weight_decay=0.0)], ids=str)
def test_adamw_matches_reference_for_three_steps(options):
    options = dict(options)
    options.setdefault("weight_decay", 1e-2)  # AdamW's default decay, passed explicitly
    params = make_params()
    initial = [p.detach().numpy().copy() for p in params]
    grads = gradient_sequence(3)
    got = run(optim.AdamW(params, **options), params, grads)
    for g, e in zip(got, adam_reference(initial, grads, decoupled=True, **options)):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-14)


def test_amsgrad_changes_the_update_when_the_second_moment_falls():
    # A large gradient, then small ones: v shrinks, v_max does not, so amsgrad steps less.
    grads = [[np.full(shape, 10.0) for shape in SHAPES]] + \
        [[np.full(shape, 0.1) for shape in SHAPES]] * 2
    plain, ams = make_params(), make_params()
    start = plain[0].detach().numpy().copy()
    plain_out = run(optim.Adam(plain, lr=0.1), plain, grads)[0]
    ams_out = run(optim.Adam(ams, lr=0.1, amsgrad=True), ams, grads)[0]
    assert np.all(np.abs(start - ams_out) < np.abs(start - plain_out))


def test_adamw_default_weight_decay_and_adam_default():
    p = minitorch.zeros(2, requires_grad=True)
    assert optim.AdamW([p]).defaults["weight_decay"] == 1e-2
    assert optim.Adam([p]).defaults["weight_decay"] == 0
    assert optim.SGD([p]).defaults["lr"] == 1e-3


def test_float32_parameters_stay_float32_and_in_place():
    params = make_params(dtype=np.float32)
    storages = [p._data for p in params]
    versions = [p._version[0] for p in params]
    opt = optim.Adam(params, lr=0.1)
    run(opt, params, gradient_sequence(2, dtype=np.float32))
    for p, storage, version in zip(params, storages, versions):
        assert p._data is storage and p.dtype == minitorch.float32
        assert p._version[0] == version + 2
        assert p.requires_grad and p.is_leaf
    assert opt.state[params[0]]["exp_avg"].dtype == minitorch.float32


def test_non_contiguous_parameter_updates_its_storage():
    base = np.arange(12.0).reshape(3, 4)
    p = minitorch.tensor(base, requires_grad=True)
    p._data = np.asfortranarray(p._data)  # same values, column-major storage
    assert not p.is_contiguous()
    opt = optim.SGD([p], lr=0.5, momentum=0.9)
    p.grad = minitorch.ones(3, 4, dtype=minitorch.float64)
    opt.step()
    opt.step()
    # step 1: p -= 0.5 * 1; step 2: buffer = 0.9 + 1 = 1.9, p -= 0.95
    np.testing.assert_allclose(p.detach().numpy(), base - 0.5 - 0.95)
    assert not p.is_contiguous()


def test_parameters_without_grad_are_skipped():
    a, b = make_params()
    opt = optim.Adam([a, b], lr=0.1)
    before = b.detach().numpy().copy()
    a.grad = minitorch.ones(*a.shape, dtype=minitorch.float64)
    opt.step()
    np.testing.assert_array_equal(b.detach().numpy(), before)
    assert b not in opt.state and opt.state[a]["step"] == 1


def test_step_trains_through_autograd_and_closure():
    minitorch.manual_seed(0)
    w = minitorch.randn(3, dtype=minitorch.float64, requires_grad=True)
    target = minitorch.tensor([1.0, -2.0, 0.5], dtype=minitorch.float64)
    opt = optim.SGD([w], lr=0.1, momentum=0.5)

    def closure():
        opt.zero_grad()
        loss = ((w - target) ** 2).sum()
        loss.backward()
        return loss

    first = opt.step(closure).item()
    for _ in range(60):
        last = opt.step(closure).item()
    assert last < 1e-6 < first
    np.testing.assert_allclose(w.detach().numpy(), target.numpy(), atol=1e-3)


def test_closure_runs_with_grad_enabled_inside_no_grad():
    w = minitorch.ones(2, requires_grad=True)
    opt = optim.SGD([w], lr=1.0)

    def closure():
        loss = (w * w).sum()
        loss.backward()
        return loss

    with minitorch.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 2.0
    np.testing.assert_allclose(w.detach().numpy(), [-1.0, -1.0])


def test_zero_grad_set_to_none_and_to_zeros():
    a, b = make_params()
    opt = optim.SGD([a, b], lr=0.1)
    (a.sum() + (b * b).sum()).backward()
    grad_b = b.grad
    opt.zero_grad(set_to_none=False)
    assert grad_b is b.grad and np.all(b.grad.numpy() == 0) and np.all(a.grad.numpy() == 0)
    (b * b).sum().backward()  # accumulates onto the zeros
    np.testing.assert_allclose(b.grad.numpy(), 2 * b.detach().numpy())
    opt.zero_grad()
    assert a.grad is None and b.grad is None


def test_zero_grad_to_zeros_detaches_a_grad_with_history():
    x = minitorch.tensor([1.0, 2.0], dtype=minitorch.float64, requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    optim.SGD([x]).zero_grad(set_to_none=False)
    assert not x.grad.requires_grad and x.grad.grad_fn is None
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0])


def test_param_groups_with_different_learning_rates():
    a, b = make_params()
    initial = [a.detach().numpy().copy(), b.detach().numpy().copy()]
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert opt.param_groups[0]["momentum"] == 0 and opt.param_groups[1]["momentum"] == 0.9
    grads = gradient_sequence(3)
    run(opt, [a, b], grads)
    expected_a = sgd_reference([initial[0]], [[g[0]] for g in grads], lr=0.1)[0]
    expected_b = sgd_reference([initial[1]], [[g[1]] for g in grads], lr=0.5, momentum=0.9)[0]
    np.testing.assert_allclose(a.detach().numpy(), expected_a, rtol=1e-12)
    np.testing.assert_allclose(b.detach().numpy(), expected_b, rtol=1e-12)


def test_add_param_group_and_generator_params():
    a, b = make_params()
    opt = optim.Adam((p for p in [a]), lr=0.1)
    opt.add_param_group({"params": b, "lr": 0.2})
    assert len(opt.param_groups) == 2 and opt.param_groups[1]["params"][0] is b
    assert opt.param_groups[1]["betas"] == (0.9, 0.999)
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [a]})


def snapshot(opt, params):
    return [p.detach().numpy().copy() for p in params], opt.state_dict()


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01),
    lambda ps: optim.Adam(ps, lr=0.05, amsgrad=True),
    lambda ps: optim.AdamW([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.2}], lr=0.05),
    lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.9, centered=True, weight_decay=0.01),
    lambda ps: optim.Adagrad([{"params": ps[:1]}, {"params": ps[1:], "lr": 0.2}], lr=0.05,
                             lr_decay=0.1, initial_accumulator_value=0.1),
], ids=["sgd", "adam", "adamw-groups", "rmsprop", "adagrad-groups"])
def test_state_dict_round_trip_resumes_exactly(make, tmp_path):
    grads = gradient_sequence(6)
    uninterrupted = make_params()
    run(make(uninterrupted), uninterrupted, grads)

    first = make_params()
    opt = make(first)
    run(opt, first, grads[:3])
    minitorch.save({"params": first, "optimizer": opt.state_dict()}, tmp_path / "ckpt")

    checkpoint = minitorch.load(tmp_path / "ckpt")
    resumed_params = checkpoint["params"]  # saved with requires_grad, loaded with it
    assert all(p.requires_grad and p.is_leaf for p in resumed_params)
    resumed = make(resumed_params)
    resumed.load_state_dict(checkpoint["optimizer"])
    run(resumed, resumed_params, grads[3:])
    for p, q in zip(uninterrupted, resumed_params):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_state_dict_layout_is_pytorchs():
    a, b = make_params()
    opt = optim.Adam([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1)
    run(opt, [a, b], gradient_sequence(1))
    state = opt.state_dict()
    assert sorted(state) == ["param_groups", "state"]
    assert sorted(state["state"]) == [0, 1]
    assert sorted(state["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert state["state"][1]["step"] == 1
    assert [g["params"] for g in state["param_groups"]] == [[0], [1]]
    assert state["param_groups"][1]["lr"] == 0.5 and state["param_groups"][0]["betas"] == (0.9,
                                                                                          0.999)
    # a snapshot: stepping again does not change what was taken
    taken = state["state"][0]["exp_avg"].numpy().copy()
    run(opt, [a, b], gradient_sequence(1, seed=5))
    np.testing.assert_array_equal(state["state"][0]["exp_avg"].numpy(), taken)


def test_load_state_dict_restores_hyperparameters_and_casts_state():
    a, b = make_params()
    opt = optim.SGD([a, b], lr=0.3, momentum=0.9)
    run(opt, [a, b], gradient_sequence(1))
    saved = opt.state_dict()
    a32, b32 = make_params(dtype=np.float32)
    other = optim.SGD([a32, b32], lr=0.01, momentum=0.9)
    other.load_state_dict(saved)
    assert other.param_groups[0]["params"][0] is a32
    assert other.param_groups[0]["lr"] == 0.3
    assert other.state[a32]["momentum_buffer"].dtype == minitorch.float32
    # the loaded state is a copy: changing it leaves the source alone
    other.state[a32]["momentum_buffer"]._data[...] = 0
    assert np.any(saved["state"][0]["momentum_buffer"].numpy() != 0)


def test_load_state_dict_mismatches_raise():
    a, b = make_params()
    opt = optim.SGD([a, b], lr=0.1, momentum=0.9)
    with pytest.raises(ValueError, match="number of parameter groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(ValueError, match="doesn't match the size"):
        opt.load_state_dict(optim.SGD([a], lr=0.1).state_dict())
    with pytest.raises(ValueError, match="'state' and 'param_groups'"):
        opt.load_state_dict({"state": {}})


def test_errors_name_the_problem():
    a, _ = make_params()
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match=r"params\[1\] is a ndarray"):
        optim.SGD([a, np.zeros(3)], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.Adam(a)
    with pytest.raises(ValueError, match="Invalid learning rate.*-0.1"):
        optim.SGD([a], lr=-0.1)
    with pytest.raises(ValueError, match="Invalid learning rate.*-1"):
        optim.Adam([{"params": [a], "lr": -1}])
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([a], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="momentum must be >= 0"):
        optim.SGD([a], lr=0.1, momentum=-0.5)
    with pytest.raises(ValueError, match=r"betas\[1\] must be in \[0, 1\), got 1.0"):
        optim.Adam([a], betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="eps must be >= 0"):
        optim.AdamW([a], eps=-1e-8)
    with pytest.raises(ValueError, match="weight_decay must be >= 0"):
        optim.Adam([a], weight_decay=-1)
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([a * 2], lr=0.1)
    with pytest.raises(ValueError, match="duplicate parameters"):
        optim.SGD([a, a], lr=0.1)
    with pytest.raises(TypeError, match="floating point"):
        optim.SGD([minitorch.tensor([1, 2])], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {a}}], lr=0.1)


def test_grad_of_wrong_shape_raises():
    a, _ = make_params()
    opt = optim.SGD([a], lr=0.1)
    a.grad = minitorch.zeros(7, dtype=minitorch.float64)
    with pytest.raises(ValueError, match=r"shape \(3, 4\) has a .grad of shape \(7,\)"):
        opt.step()


def test_zero_learning_rate_leaves_parameters_unchanged():
    params = make_params()
    before = [p.detach().numpy().copy() for p in params]
    run(optim.Adam(params, lr=0.0), params, gradient_sequence(2))
    for p, b in zip(params, before):
        np.testing.assert_array_equal(p.detach().numpy(), b)


def test_repr_lists_groups():
    a, _ = make_params()
    text = repr(optim.SGD([a], lr=0.25))
    assert text.startswith("SGD (") and "lr: 0.25" in text and "Parameter Group 0" in text
