"""Batch norm: ``F.batch_norm`` and ``nn.BatchNorm1d``/``nn.BatchNorm2d``
(minitorch/ops/batch_norm.py, minitorch/nn/batchnorm.py), on every kernel backend.

- parity with PyTorch (float64, 1e-10) over several training steps then eval: outputs, input
  and parameter gradients, and the buffers (running_mean, running_var with the unbiased
  update, num_batches_tracked), for momentum 0.1 / None (cumulative average), affine or not,
  bias=False, track_running_stats off, 2-d and 3-d BatchNorm1d input (skipped without
  PyTorch);
- gradcheck and gradgradcheck of F.batch_norm in float64, training and eval, including a
  non-contiguous input;
- the buffers' own arithmetic without PyTorch, and the errors.
"""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from test_conv import TOL, compare_with_torch, port, rand


@pytest.fixture
def torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped",
                               exc_type=ImportError)


def _close(got, want, what):
    np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                               **TOL[np.float64], err_msg=what)


def _randomize_affine(t_bn, torch):
    with torch.no_grad():
        if t_bn.weight is not None:
            t_bn.weight.uniform_(0.5, 1.5)
        if t_bn.bias is not None:
            t_bn.bias.normal_()


@pytest.mark.parametrize("kwargs", [dict(), dict(momentum=None), dict(momentum=0.3, eps=1e-3),
                                    dict(affine=False), dict(bias=False),
                                    dict(track_running_stats=False)], ids=str)
def test_batchnorm2d_train_steps_then_eval_match_torch(backend, torch, kwargs):
    torch.manual_seed(0)
    t_bn, m_bn = torch.nn.BatchNorm2d(3, **kwargs), nn.BatchNorm2d(3, **kwargs)
    _randomize_affine(t_bn, torch)
    port(t_bn, m_bn, np.float64)
    rng = np.random.default_rng(0)
    for step in range(3):
        for module in (t_bn, m_bn):
            module.zero_grad()
        x = rand(rng, 4, 3, 5, 4) * (step + 1) + step
        compare_with_torch(t_bn, m_bn, [x], np.float64, (t_bn, m_bn), seed=step)
        for name, t_buf in t_bn.named_buffers():
            _close(dict(m_bn.named_buffers())[name].numpy(), t_buf.numpy(),
                   f"{name} after step {step}")
    t_bn.eval()
    m_bn.eval()
    compare_with_torch(t_bn, m_bn, [rand(rng, 2, 3, 5, 4)], np.float64, None)
    assert list(m_bn.state_dict()) == list(t_bn.state_dict())


@pytest.mark.parametrize("shape", [(6, 4), (5, 4, 3)])
def test_batchnorm1d_matches_torch(backend, torch, shape):
    t_bn, m_bn = torch.nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    _randomize_affine(t_bn, torch)
    port(t_bn, m_bn, np.float64)
    rng = np.random.default_rng(1)
    for step in range(2):
        compare_with_torch(t_bn, m_bn, [rand(rng, *shape)], np.float64, (t_bn, m_bn), seed=step)
    _close(m_bn.running_var.numpy(), t_bn.running_var.numpy(), "running_var")
    t_bn.eval()
    m_bn.eval()
    compare_with_torch(t_bn, m_bn, [rand(rng, *shape)], np.float64)


def test_float32_module_matches_torch(torch):
    t_bn, m_bn = torch.nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    port(t_bn, m_bn, np.float32)
    x = rand(np.random.default_rng(2), 4, 3, 5, 5, dtype=np.float32)
    compare_with_torch(t_bn, m_bn, [x], np.float32, (t_bn, m_bn))
    assert m_bn.running_mean.dtype is mt.float32 and m_bn.num_batches_tracked.dtype is mt.int64


def test_running_statistics_without_torch():
    """running ← (1 − m) running + m · batch statistic, with the unbiased variance; momentum
    None averages every batch so far equally."""
    rng = np.random.default_rng(3)
    bn = nn.BatchNorm2d(2, momentum=None).double()
    batches = [rand(rng, 3, 2, 2, 2) + i for i in range(3)]
    for x in batches:
        bn(mt.tensor(x))
    means = [x.mean(axis=(0, 2, 3)) for x in batches]
    variances = [x.var(axis=(0, 2, 3), ddof=1) for x in batches]
    _close(bn.running_mean.numpy(), np.mean(means, axis=0), "cumulative mean")
    _close(bn.running_var.numpy(), np.mean(variances, axis=0), "cumulative var")
    assert bn.num_batches_tracked.item() == 3
    bn = nn.BatchNorm2d(2).double()
    bn(mt.tensor(batches[0]))
    _close(bn.running_mean.numpy(), 0.1 * means[0], "momentum mean")
    _close(bn.running_var.numpy(), 0.9 + 0.1 * variances[0], "momentum var")
    bn.eval()
    y = bn(mt.tensor(batches[1])).detach().numpy()
    expected = (batches[1] - bn.running_mean.numpy()[:, None, None]) / np.sqrt(
        bn.running_var.numpy()[:, None, None] + 1e-5)
    _close(y, expected, "eval output")
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and bn.running_var.numpy().tolist() == [1, 1]


def test_eval_without_running_stats_uses_the_batch():
    bn = nn.BatchNorm2d(2, track_running_stats=False).double().eval()
    x = rand(np.random.default_rng(4), 3, 2, 2, 2)
    y = bn(mt.tensor(x)).detach().numpy()
    _close(y.mean(axis=(0, 2, 3)), [0, 0], "normalized by the batch")
    assert bn.running_mean is None and "num_batches_tracked" not in bn.state_dict()


# ----------------------------------------------------------------------------- gradcheck

@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradcheck_and_gradgradcheck(backend, training):
    rng = np.random.default_rng(5)
    x, w, b = (mt.tensor(a, requires_grad=True)
               for a in (rand(rng, 3, 2, 2, 2), rand(rng, 2) + 2, rand(rng, 2)))
    mean, var = mt.tensor(rand(rng, 2)), mt.tensor(np.abs(rand(rng, 2)) + 0.5)

    def fn(x, w, b):
        return F.batch_norm(x, mean.clone(), var.clone(), w, b, training=training)
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_gradcheck_on_non_contiguous_input():
    base = mt.tensor(rand(np.random.default_rng(6), 2, 3, 4, 2), requires_grad=True)
    assert gradcheck(lambda b: F.batch_norm(b.transpose(1, 2), None, None, training=True),
                     (base,))


# ----------------------------------------------------------------------------- bad input

def test_errors():
    with pytest.raises(ValueError, match="expected 4D input \\(got 3D input\\)"):
        nn.BatchNorm2d(3)(mt.randn(3, 5, 5))
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        nn.BatchNorm1d(3)(mt.randn(2, 3, 5, 5))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        nn.BatchNorm1d(3)(mt.randn(1, 3))
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(mt.randn(2, 3, 4, 4), mt.zeros(4), mt.ones(4))
    with pytest.raises(RuntimeError, match="running_mean and running_var must be given"):
        F.batch_norm(mt.randn(2, 3), None, None)
    with pytest.raises(ValueError, match="num_features"):
        nn.BatchNorm2d(-1)
