"""Tensor and the array protocols: numpy's ``__array__``, ``copy.copy``, DLPack both ways, and
matplotlib, compared with what PyTorch does where it is installed."""
import copy

import numpy as np
import pytest

import minitorch as mt
from minitorch import nn

try:
    import torch
except ImportError:  # the torch comparisons skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def test_asarray_shares_memory_and_converts_on_request():
    t = mt.tensor([1.0, 2.0, 3.0])
    a = np.asarray(t)
    assert np.shares_memory(a, t.numpy()) and a.dtype == np.float32
    assert not np.shares_memory(np.array(t, copy=True), t.numpy())
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="needs a copy"):
        np.asarray(t, dtype=np.float64, copy=False)


def test_asarray_of_a_tensor_that_requires_grad_raises_as_pytorch():
    t = mt.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad. Use tensor.detach"):
        np.asarray(t)
    with pytest.raises(RuntimeError, match="requires grad"):
        np.asarray(t * 2)  # a non-leaf too
    assert np.asarray(t.detach()).tolist() == [1.0, 1.0, 1.0]


@needs_torch
def test_asarray_error_message_is_pytorchs():
    with pytest.raises(RuntimeError) as theirs:
        np.asarray(torch.ones(3, requires_grad=True))
    with pytest.raises(RuntimeError) as ours:
        np.asarray(mt.ones(3, requires_grad=True))
    assert str(ours.value) == str(theirs.value)


def test_copy_is_a_new_leaf_over_the_same_memory():
    x = mt.ones(3, requires_grad=True)
    x.grad = mt.ones(3)
    c = copy.copy(x)
    assert c is not x and c.data_ptr() == x.data_ptr()
    assert c.requires_grad and c.is_leaf and c.grad is None
    y = (mt.arange(4).float() * 2)
    d = copy.copy(y)
    d[0] = 7.0
    assert y.tolist() == [7.0, 2.0, 4.0, 6.0]  # shared memory


def test_copy_keeps_the_class_and_gradients_flow_to_the_copy():
    p = nn.Parameter(mt.ones(2))
    c = copy.copy(p)
    assert type(c) is nn.Parameter and c.requires_grad
    (c * 3).sum().backward()
    assert c.grad.tolist() == [3.0, 3.0] and p.grad is None
    s = copy.copy((mt.ones(2, requires_grad=True) * 2))
    assert s.is_leaf and s.grad_fn is None and s.requires_grad


@needs_torch
def test_copy_matches_pytorch():
    for make in (lambda lib: lib.ones(3, requires_grad=True),
                 lambda lib: lib.ones(3, requires_grad=True) * 2,
                 lambda lib: lib.ones(3)):
        ours, theirs = copy.copy(make(mt)), copy.copy(make(torch))
        assert (ours.requires_grad, ours.is_leaf, ours.grad) == \
            (theirs.requires_grad, theirs.is_leaf, theirs.grad)


def test_numpy_from_dlpack_shares_memory():
    t = mt.arange(6).reshape(2, 3).float()
    a = np.from_dlpack(t)
    a[0, 0] = 9.0
    assert t[0, 0].item() == 9.0 and t.__dlpack_device__() == (1, 0)
    assert mt.from_dlpack(np.arange(3)).tolist() == [0, 1, 2]


def test_dlpack_refuses_a_tensor_that_requires_grad():
    with pytest.raises(BufferError, match="require gradient"):
        mt.ones(2, requires_grad=True).__dlpack__()


def test_from_dlpack_bad_input():
    with pytest.raises(TypeError, match="ext_tensor must have a __dlpack__ method.*list"):
        mt.from_dlpack([1.0, 2.0])
    with pytest.raises(TypeError, match="dtype must be one of.*float32.*got uint16"):
        mt.from_dlpack(np.arange(3, dtype=np.uint16))

    class OnGPU:
        def __dlpack__(self, **kwargs):
            raise AssertionError("not reached")

        def __dlpack_device__(self):
            return (2, 0)
    with pytest.raises(ValueError, match=r"on the CPU.*got device \(2, 0\)"):
        mt.from_dlpack(OnGPU())


@needs_torch
def test_torch_and_minitorch_share_memory_through_dlpack():
    t = mt.arange(6).reshape(2, 3).double()
    x = torch.from_dlpack(t)
    assert x.dtype == torch.float64 and x.shape == (2, 3) and x.data_ptr() == t.data_ptr()
    x[1, 2] = -1.0
    assert t[1, 2].item() == -1.0

    y = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # strided
    m = mt.from_dlpack(y)
    assert m.shape == (4, 3) and m.data_ptr() == y.data_ptr() and m.stride() == y.stride()
    m[0, 1] = 100.0
    assert y[0, 1].item() == 100.0
    assert mt.from_dlpack(torch.tensor([True, False])).dtype == mt.bool
    assert mt.from_dlpack(torch.tensor([1, 2])).dtype == mt.int64


def test_matplotlib_plots_a_tensor():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots()
    try:
        line, = ax.plot(mt.arange(4).float() ** 2)
        ax.scatter(mt.zeros(3), mt.ones(3))
        ax.imshow(mt.eye(3))
        fig.canvas.draw()
        assert line.get_ydata(orig=False).tolist() == [0.0, 1.0, 4.0, 9.0]
        with pytest.raises(RuntimeError, match="requires grad"):
            ax.plot(mt.ones(3, requires_grad=True))
    finally:
        plt.close(fig)
