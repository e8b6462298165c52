"""The structured initialisers of nn.init: eye_, dirac_ (equal to PyTorch's where installed),
orthogonal_ and sparse_ (random: their defining properties), and their argument checks.
"""
import math

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn


def test_eye_fills_the_identity_of_any_2d_shape():
    for shape in [(3, 3), (2, 5), (5, 2), (0, 3)]:
        w = nn.init.eye_(mt.full(shape, 7.0))
        np.testing.assert_array_equal(w.numpy(), np.eye(*shape))
    p = nn.Parameter(mt.zeros(2, 2, dtype=mt.float64))
    assert nn.init.eye_(p) is p and p.requires_grad and p.dtype == mt.float64
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.eye_(mt.empty(2, 2, 2))


def test_dirac_keeps_input_channels_at_the_kernel_centre():
    w = nn.init.dirac_(mt.full((4, 3, 3, 5), 9.0), groups=2)
    values = w.numpy()
    assert values.sum() == 4  # two groups of min(4 // 2, 3) = 2 channels
    for g in range(2):
        for d in range(2):
            assert values[2 * g + d, d, 1, 2] == 1
    assert nn.init.dirac_(mt.empty(2, 5, 3)).numpy()[:, :, 1].tolist() == [
        [1, 0, 0, 0, 0], [0, 1, 0, 0, 0]]
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(mt.empty(3, 3))
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.init.dirac_(mt.empty(3, 3, 3), groups=2)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (6, 2, 3), (2, 3, 2, 2)])
def test_orthogonal_gives_orthonormal_rows_or_columns_times_gain(shape):
    mt.manual_seed(0)
    w = nn.init.orthogonal_(mt.empty(*shape, dtype=mt.float64), gain=2.0)
    q = w.numpy().reshape(shape[0], -1)
    rows, cols = q.shape
    gram = q @ q.T if rows <= cols else q.T @ q
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-12)
    other = nn.init.orthogonal_(mt.empty(*shape, dtype=mt.float64), gain=2.0).numpy()
    assert not np.allclose(other, w.numpy())  # random: a new matrix each call


def test_orthogonal_edge_cases():
    assert nn.init.orthogonal_(mt.empty(0, 3)).shape == (0, 3)
    w = nn.init.orthogonal_(mt.empty(1, 4, dtype=mt.float64))
    assert np.linalg.norm(w.numpy()) == pytest.approx(1.0, abs=1e-12)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        nn.init.orthogonal_(mt.empty(4))


def test_sparse_zeroes_the_same_count_in_each_column():
    mt.manual_seed(0)
    w = nn.init.sparse_(mt.empty(10, 300, dtype=mt.float64), sparsity=0.25, std=0.5)
    values = w.numpy()
    assert ((values == 0).sum(axis=0) == math.ceil(0.25 * 10)).all()
    nonzero = values[values != 0]
    assert nonzero.std() == pytest.approx(0.5, rel=0.05)
    rows_of_zeros = {tuple(np.flatnonzero(column == 0)) for column in values.T}
    assert len(rows_of_zeros) > 1  # each column draws its own rows
    with pytest.raises(ValueError, match="2 dimensions"):
        nn.init.sparse_(mt.empty(3), 0.5)


def test_deterministic_initialisers_equal_pytorchs():
    torch = pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")
    for shape in [(3, 5), (4, 2)]:
        np.testing.assert_array_equal(nn.init.eye_(mt.empty(*shape)).numpy(),
                                      torch.nn.init.eye_(torch.empty(*shape)).numpy())
    for shape, groups in [((4, 3, 3), 1), ((6, 4, 3, 5), 3), ((2, 2, 3, 3, 3), 2)]:
        np.testing.assert_array_equal(
            nn.init.dirac_(mt.empty(*shape), groups).numpy(),
            torch.nn.init.dirac_(torch.empty(*shape), groups).numpy())
    for call in [lambda init, t: init.eye_(t.empty(2, 2, 2)),
                 lambda init, t: init.dirac_(t.empty(3, 3)),
                 lambda init, t: init.dirac_(t.empty(3, 3, 3), 2),
                 lambda init, t: init.orthogonal_(t.empty(3)),
                 lambda init, t: init.sparse_(t.empty(3), 0.1)]:
        with pytest.raises(ValueError):
            call(torch.nn.init, torch)
        with pytest.raises(ValueError):
            call(nn.init, mt)


@pytest.mark.parametrize("fill", [
    lambda t, g: nn.init.uniform_(t, generator=g),
    lambda t, g: nn.init.normal_(t, generator=g),
    lambda t, g: nn.init.trunc_normal_(t, generator=g),
    lambda t, g: nn.init.xavier_uniform_(t, generator=g),
    lambda t, g: nn.init.xavier_normal_(t, generator=g),
    lambda t, g: nn.init.kaiming_uniform_(t, generator=g),
    lambda t, g: nn.init.kaiming_normal_(t, generator=g),
    lambda t, g: nn.init.orthogonal_(t, generator=g),
    lambda t, g: nn.init.sparse_(t, 0.5, generator=g),
])
def test_random_initialisers_draw_from_the_generator_given(fill):
    first, second = mt.empty(4, 3), mt.empty(4, 3)
    fill(first, mt.Generator().manual_seed(5))
    mt.manual_seed(123)  # the global stream plays no part
    fill(second, mt.Generator().manual_seed(5))
    np.testing.assert_array_equal(first.numpy(), second.numpy())
    fill(second, mt.Generator().manual_seed(6))
    assert not np.array_equal(first.numpy(), second.numpy())
