"""Tests of minitorch.nn.utils.clip_grad_norm_ / clip_grad_value_: against their formulas,
edge cases (no grads, non-finite norms, non-contiguous grads) and against PyTorch."""
import math

import numpy as np
import pytest

import minitorch
from minitorch.nn.utils import clip_grad_norm_, clip_grad_value_


MINITORCH_DTYPE = {np.float32: minitorch.float32, np.float64: minitorch.float64}


def params_with_grads(grads, dtype=np.float64):
    params = []
    for g in grads:
        p = minitorch.zeros(*np.shape(g), dtype=MINITORCH_DTYPE[dtype], requires_grad=True)
        p.grad = minitorch.tensor(np.array(g, dtype=dtype))
        params.append(p)
    return params


def test_clip_grad_norm_scales_to_max_norm():
    params = params_with_grads([[3.0, 0.0], [[0.0], [4.0]]])  # total 2-norm 5
    total = clip_grad_norm_(params, max_norm=1.0)
    assert isinstance(total, minitorch.Tensor) and total.ndim == 0
    assert total.item() == 5.0 and total.dtype == minitorch.float64
    coef = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(params[0].grad.numpy(), [3 * coef, 0.0], rtol=1e-15)
    np.testing.assert_allclose(params[1].grad.numpy(), [[0.0], [4 * coef]], rtol=1e-15)
    new_norm = math.sqrt(sum((p.grad.numpy() ** 2).sum() for p in params))
    assert new_norm == pytest.approx(1.0, rel=1e-6) and new_norm < 1.0


def test_clip_grad_norm_leaves_small_gradients_alone():
    params = params_with_grads([[0.3, -0.4]])
    total = clip_grad_norm_(params, max_norm=2.0)
    assert total.item() == pytest.approx(0.5, rel=1e-15)
    np.testing.assert_array_equal(params[0].grad.numpy(), [0.3, -0.4])


@pytest.mark.parametrize("norm_type, expected", [
    (math.inf, 7.0), (1, 1 + 2 + 7 + 4), (3, (1 + 8 + 343 + 64) ** (1 / 3)),
    ("inf", 7.0), (2.0, math.sqrt(1 + 4 + 49 + 16)),
])
def test_clip_grad_norm_types(norm_type, expected):
    params = params_with_grads([[1.0, -2.0], [-7.0, 4.0]])
    total = clip_grad_norm_(params, max_norm=0.5, norm_type=norm_type)
    assert total.item() == pytest.approx(expected, rel=1e-12)
    coef = 0.5 / (expected + 1e-6)
    np.testing.assert_allclose(params[1].grad.numpy(), [-7.0 * coef, 4.0 * coef], rtol=1e-12)


def test_single_tensor_skipped_params_and_generators():
    p = params_with_grads([[6.0, 8.0]])[0]
    assert clip_grad_norm_(p, 5.0).item() == 10.0
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0], rtol=1e-6)
    no_grad = minitorch.zeros(3, requires_grad=True)
    q = params_with_grads([[3.0, 4.0]])[0]
    assert clip_grad_norm_((t for t in [no_grad, q]), 1.0).item() == 5.0
    assert no_grad.grad is None


def test_no_gradients_returns_zero():
    total = clip_grad_norm_([minitorch.zeros(2, requires_grad=True)], 1.0)
    assert total.item() == 0.0 and total.dtype == minitorch.float32


def test_empty_gradient_tensor_counts_as_zero():
    params = params_with_grads([np.zeros((0, 3)), [3.0, 4.0]])
    assert clip_grad_norm_(params, 10.0).item() == 5.0
    assert clip_grad_norm_(params, 10.0, norm_type=math.inf).item() == 4.0


def test_non_contiguous_gradient_is_scaled_in_place():
    p = minitorch.zeros(2, 3, dtype=minitorch.float64, requires_grad=True)
    p.grad = minitorch.tensor(np.full((3, 2), 2.0)).transpose(0, 1)
    storage = p.grad._data
    assert not p.grad.is_contiguous()
    clip_grad_norm_([p], max_norm=1.0)
    assert p.grad._data is storage
    np.testing.assert_allclose(p.grad.numpy(), np.full((2, 3), 2.0 / (math.sqrt(24) + 1e-6)))


def test_non_finite_norm():
    params = params_with_grads([[1.0, math.nan]])
    with pytest.raises(RuntimeError, match="non-finite"):
        clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    np.testing.assert_array_equal(params[0].grad.numpy(), [1.0, math.nan])  # untouched
    assert math.isnan(clip_grad_norm_(params, 1.0).item())
    assert np.all(np.isnan(params[0].grad.numpy()))
    inf_params = params_with_grads([[1.0, math.inf]])
    assert clip_grad_norm_(inf_params, 1.0).item() == math.inf
    np.testing.assert_array_equal(inf_params[0].grad.numpy()[0], 0.0)


def test_clip_grad_value_clamps_each_element():
    params = params_with_grads([[-3.0, 0.2, 5.0], [[0.5, -0.05]]])
    assert clip_grad_value_(params, 0.25) is None
    np.testing.assert_array_equal(params[0].grad.numpy(), [-0.25, 0.2, 0.25])
    np.testing.assert_array_equal(params[1].grad.numpy(), [[0.25, -0.05]])


def test_errors():
    p = params_with_grads([[1.0]])[0]
    with pytest.raises(ValueError, match="clip_value must be >= 0, got -1.0"):
        clip_grad_value_([p], -1)
    with pytest.raises(ValueError, match="max_norm must be >= 0, got -2.0"):
        clip_grad_norm_([p], -2)
    with pytest.raises(TypeError, match=r"parameters\[1\] is a list"):
        clip_grad_norm_([p, [1.0]], 1.0)
    with pytest.raises(TypeError, match=r"parameters\[0\] is a float"):
        clip_grad_value_([0.5], 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0, 0.5])
@pytest.mark.parametrize("max_norm", [0.1, 100.0])
def test_clip_grad_norm_matches_pytorch(dtype, norm_type, max_norm):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(shape).astype(dtype) for shape in [(4, 5), (5,), (1, 1, 3)]]
    mine = params_with_grads(grads, dtype)
    theirs = [torch.zeros(g.shape, dtype=torch.from_numpy(g).dtype, requires_grad=True)
              for g in grads]
    for t, g in zip(theirs, grads):
        t.grad = torch.from_numpy(g.copy())
    total = clip_grad_norm_(mine, max_norm, norm_type=norm_type)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type=norm_type)
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    assert total.item() == pytest.approx(expected.item(), rel=tolerance)
    assert total.numpy().dtype == expected.numpy().dtype
    for p, t in zip(mine, theirs):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=tolerance, atol=1e-7)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_clip_grad_value_matches_pytorch(dtype):
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    grads = [np.random.default_rng(3).standard_normal((6, 7)).astype(dtype)]
    mine = params_with_grads(grads, dtype)
    theirs = torch.zeros(6, 7, dtype=torch.from_numpy(grads[0]).dtype, requires_grad=True)
    theirs.grad = torch.from_numpy(grads[0].copy())
    clip_grad_value_(mine, 0.7)
    torch.nn.utils.clip_grad_value_([theirs], 0.7)
    np.testing.assert_array_equal(mine[0].grad.numpy(), theirs.grad.numpy())


def test_foreach_is_accepted_and_changes_nothing():
    for foreach in (None, True, False):
        params = params_with_grads([[3.0, 0.0], [[0.0], [4.0]]])
        assert clip_grad_norm_(params, 1.0, foreach=foreach).item() == 5.0
        clip_grad_value_(params, 0.1, foreach=foreach)
        np.testing.assert_allclose(params[0].grad.numpy(), [0.1, 0.0])


def test_signatures_match_pytorchs():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    import inspect

    for mine, theirs in [(clip_grad_norm_, torch.nn.utils.clip_grad_norm_),
                         (clip_grad_value_, torch.nn.utils.clip_grad_value_)]:
        assert ([(p.name, p.default) for p in inspect.signature(mine).parameters.values()]
                == [(p.name, p.default) for p in inspect.signature(theirs).parameters.values()])
