"""The Tensor itself: dtypes and their defaults, creation functions, reproducible randomness,
conversions (numpy/item/tolist), properties, printing like PyTorch's, views and in-place updates."""
import numpy as np
import pytest

import minitorch as mt


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")


# ----------------------------------------------------------------------------- dtypes

@pytest.mark.parametrize("data,dtype", [
    (1.5, mt.float32), ([1.0, 2.0], mt.float32), ([1, 2], mt.int64), (3, mt.int64),
    ([True, False], mt.bool), (np.array([1.0]), mt.float64), (np.float64(2.0), mt.float64),
    (np.array([1], np.int32), mt.int32), (np.array([1.0], np.float16), mt.float16),
    (np.array([1], np.uint16), mt.int32), ([[1, 2.5]], mt.float32),
])
def test_default_dtypes_follow_pytorch(data, dtype):
    assert mt.tensor(data).dtype is dtype


def test_dtype_objects():
    assert mt.float is mt.float32 and mt.double is mt.float64 and mt.long is mt.int64
    assert repr(mt.float32) == "minitorch.float32"
    assert mt.float32.is_floating_point and not mt.int64.is_floating_point
    for dtype in (mt.float32, mt.float64, mt.int64, mt.bool):
        assert mt.zeros(2, dtype=dtype).dtype is dtype
        assert mt.tensor([1], dtype=dtype.name).dtype is dtype


def test_casts():
    x = mt.tensor([1.7, -2.2])
    assert x.long().tolist() == [1, -2]
    assert x.double().dtype is mt.float64 and x.to(mt.float64).dtype is mt.float64
    assert x.bool().tolist() == [True, True]
    assert mt.tensor([1, 0]).float().tolist() == [1.0, 0.0]
    assert x.to("cpu") is x and x.to(mt.float32) is x
    assert x.type_as(mt.zeros(1, dtype=mt.float64)).dtype is mt.float64


def test_cast_is_differentiable():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (x.double() * 3).sum().backward()
    assert x.grad.dtype is mt.float32 and x.grad.tolist() == [3.0, 3.0]


def test_type_promotion():
    assert (mt.tensor([1, 2]) * 0.5).dtype is mt.float32
    assert (mt.tensor([1.0], dtype=mt.float64) + 1).dtype is mt.float64
    assert (mt.tensor([1.0]) + mt.tensor([1.0], dtype=mt.float64)).dtype is mt.float64
    assert (mt.tensor([1, 2]) + mt.tensor([True, False])).dtype is mt.int64
    assert (mt.tensor([1, 2]) / 2).dtype is mt.float32
    assert (mt.tensor([3, 4]) // 2).tolist() == [1, 2]
    assert (mt.tensor([1.0]) < 2).dtype is mt.bool


# ----------------------------------------------------------------------------- creation

def test_creation_functions():
    assert mt.zeros(2, 3).tolist() == [[0.0] * 3] * 2
    assert mt.zeros((2, 3)).shape == (2, 3)
    assert mt.ones(2).tolist() == [1.0, 1.0]
    assert mt.full((2,), 7).tolist() == [7, 7] and mt.full((2,), 7).dtype is mt.int64
    assert mt.full((2,), 0.5).dtype is mt.float32
    assert mt.arange(4).tolist() == [0, 1, 2, 3] and mt.arange(4).dtype is mt.int64
    assert mt.arange(1, 2, 0.25).tolist() == [1.0, 1.25, 1.5, 1.75]
    assert mt.arange(1, 2, 0.25).dtype is mt.float32
    assert mt.arange(5, 0, -2).tolist() == [5, 3, 1]
    assert mt.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert mt.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
    assert mt.zeros(0, 3).shape == (0, 3) and mt.zeros(()).shape == ()
    assert mt.ones(2, requires_grad=True).requires_grad


def test_like_functions_keep_shape_and_dtype():
    x = mt.ones(2, 3, dtype=mt.float64)
    for made in (mt.zeros_like(x), mt.ones_like(x), mt.full_like(x, 2.0), mt.randn_like(x),
                 mt.rand_like(x), mt.empty_like(x)):
        assert made.shape == (2, 3) and made.dtype is mt.float64
    assert mt.zeros_like(x, dtype=mt.int64).dtype is mt.int64
    assert mt.full_like(x, 2.0).tolist() == [[2.0] * 3] * 2


def test_tensor_copies_and_from_numpy_shares():
    array = np.ones(3, dtype=np.float32)
    copied, shared = mt.tensor(array), mt.from_numpy(array)
    array[0] = 5
    assert copied.tolist()[0] == 1.0 and shared.tolist()[0] == 5.0


def test_manual_seed_makes_randomness_reproducible():
    mt.manual_seed(123)
    first = (mt.randn(3).tolist(), mt.rand(2, 2).tolist(), mt.randint(0, 10, (4,)).tolist(),
             mt.randperm(5).tolist())
    mt.manual_seed(123)
    second = (mt.randn(3).tolist(), mt.rand(2, 2).tolist(), mt.randint(0, 10, (4,)).tolist(),
              mt.randperm(5).tolist())
    assert first == second
    mt.manual_seed(124)
    assert mt.randn(3).tolist() != first[0]


def test_random_distributions():
    mt.manual_seed(0)
    u = mt.rand(10_000).numpy()
    n = mt.randn(10_000).numpy()
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.02
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    assert mt.randn(2, dtype=mt.float64).dtype is mt.float64
    state = mt.get_rng_state()
    a = mt.randn(3).tolist()
    mt.set_rng_state(state)
    assert mt.randn(3).tolist() == a


# ----------------------------------------------------------------------------- conversions

def test_numpy_item_tolist():
    x = mt.tensor([[1.5, 2.0]])
    assert isinstance(x.numpy(), np.ndarray) and x.numpy().dtype == np.float32
    assert mt.tensor([2.5]).item() == 2.5 and isinstance(mt.tensor(3).item(), int)
    assert x.tolist() == [[1.5, 2.0]] and mt.tensor(2.0).tolist() == 2.0
    assert float(mt.tensor(1.5)) == 1.5 and int(mt.tensor(4)) == 4
    with pytest.raises(RuntimeError, match="detach"):
        mt.ones(2, requires_grad=True).numpy()


def test_properties():
    x = mt.zeros(2, 3, 4)
    assert x.shape == (2, 3, 4) and isinstance(x.shape, mt.Size)
    assert repr(x.shape) == "minitorch.Size([2, 3, 4])"
    assert x.ndim == 3 and x.dim() == 3 and x.numel() == 24 and len(x) == 2
    assert x.size() == (2, 3, 4) and x.size(-1) == 4
    assert x.dtype is mt.float32 and x.device == "cpu"
    assert not x.requires_grad and x.grad is None and x.is_leaf
    assert x.T.shape == (4, 3, 2) and x.mT.shape == (2, 4, 3)
    assert x.stride() == (12, 4, 1) and x.is_contiguous() and not x.mT.is_contiguous()


def test_bool_of_tensors():
    assert bool(mt.tensor([1.0])) and not bool(mt.tensor(0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(mt.ones(2))


# ----------------------------------------------------------------------------- printing

@pytest.mark.parametrize("make,expected", [
    (lambda: mt.tensor([0.4194, -0.6990]), "tensor([ 0.4194, -0.6990])"),
    (lambda: mt.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda: mt.tensor(2.0), "tensor(2.)"),
    (lambda: mt.tensor(3.5), "tensor(3.5000)"),
    (lambda: mt.tensor([100.5, 2.25]), "tensor([100.5000,   2.2500])"),
    (lambda: mt.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
    (lambda: mt.tensor([float("nan"), float("inf"), 1.0]), "tensor([nan, inf, 1.])"),
    (lambda: mt.tensor([[1.5, 2.0], [3.0, -4.0]]),
     "tensor([[ 1.5000,  2.0000],\n        [ 3.0000, -4.0000]])"),
    (lambda: mt.tensor([[1, 2], [3, 4]]), "tensor([[1, 2],\n        [3, 4]])"),
    (lambda: mt.tensor([True, False]), "tensor([ True, False])"),
    (lambda: mt.zeros(0), "tensor([])"),
    (lambda: mt.zeros(2, 0), "tensor([], size=(2, 0))"),
    (lambda: mt.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
    (lambda: mt.tensor([1.5], requires_grad=True) * 2, "tensor([3.], grad_fn=<MulBackward>)"),
    (lambda: mt.tensor([1.0, 2.5], dtype=mt.float64),
     "tensor([1.0000, 2.5000], dtype=minitorch.float64)"),
])
def test_repr_like_pytorch(make, expected):
    assert repr(make()) == expected
    assert str(make()) == expected


def test_repr_matches_torch_for_random_values():
    torch = _torch()
    rng = np.random.default_rng(0)
    for shape in [(5,), (3, 4), (2, 2, 3)]:
        values = rng.standard_normal(shape).astype(np.float32)
        assert repr(mt.tensor(values)) == repr(torch.tensor(values))
    # Long rows wrap at 80 columns as PyTorch's do (summarized ones, > 1000 elements, differ
    # in the spacing around "...").
    for values in (np.arange(50, dtype=np.float32) / 7, rng.standard_normal((3, 9)) * 100):
        values = values.astype(np.float32)
        assert repr(mt.tensor(values)) == repr(torch.tensor(values))


# ----------------------------------------------------------------------------- views, in place

def test_views_share_memory_and_version_counter():
    x = mt.zeros(2, 3)
    v = x.view(6)
    v[0] = 5.0
    assert x[0, 0].item() == 5.0
    assert v._version is x._version and x._version[0] == 1
    x.add_(1)
    assert v.tolist()[:2] == [6.0, 1.0]


def test_inplace_ops():
    x = mt.tensor([1.0, -2.0, 3.0])
    x.mul_(2).add_(1)
    assert x.tolist() == [3.0, -3.0, 7.0]
    x.clamp_(min=0.0)
    assert x.tolist() == [3.0, 0.0, 7.0]
    x.zero_()
    assert x.tolist() == [0.0, 0.0, 0.0]
    x.fill_(2.0)
    x += 1
    assert x.tolist() == [3.0, 3.0, 3.0]
    x.masked_fill_(mt.tensor([True, False, False]), -1.0)
    assert x.tolist() == [-1.0, 3.0, 3.0]
    x.copy_(mt.tensor([4.0, 5.0, 6.0]))
    assert x.tolist() == [4.0, 5.0, 6.0]


def test_setitem_is_differentiable():
    w = mt.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = mt.tensor(10.0, requires_grad=True)
    x = w * 1
    x[1] = v * 2
    (x * mt.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert w.grad.tolist() == [1.0, 0.0, 3.0]
    assert v.grad.item() == 4.0


def test_inplace_on_expanded_view_raises():
    x = mt.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="read-only"):
        x.add_(1)


def test_deepcopy_and_no_pickle():
    import copy
    import pickle
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = copy.deepcopy(x)
    assert y.tolist() == x.tolist() and y.requires_grad and y is not x
    assert not np.shares_memory(y.detach().numpy(), x.detach().numpy())
    with pytest.raises(TypeError, match="pickle"):
        pickle.dumps(x)


# ----------------------------------------------------------------------------- the op registry

def test_methods_are_the_declared_ops_themselves():
    from minitorch.ops import registry
    # No wrapper on the hot path: the operator is the op function.
    assert mt.Tensor.__add__ is mt.add and mt.Tensor.add is mt.add
    assert mt.Tensor.__matmul__ is mt.matmul and mt.Tensor.sum is mt.sum
    assert mt.clip is mt.clamp and mt.Tensor.multiply is mt.mul
    for name, fn in registry.METHODS.items():
        assert getattr(mt.Tensor, name) is fn, name
    for name, fn in registry.functions().items():
        assert getattr(mt, name) is fn, name


def test_functional_names_come_from_the_registry():
    import minitorch.nn.functional as F
    from minitorch.ops import registry
    declared = registry.functional()
    assert {"gelu", "tanh", "sigmoid", "silu", "layer_norm", "embedding"} <= set(declared)
    for name, fn in declared.items():
        assert getattr(F, name) is fn, f"nn/functional.py redefines the declared op {name}"


def test_declared_inplace_forms_write_into_the_tensor():
    x = mt.tensor([1.0, -2.0, 3.0])
    data = x.numpy()
    assert x.add_(1.0, alpha=2) is x and x.tolist() == [3.0, 0.0, 5.0]
    x.sub_(1.0).mul_(2.0).clamp_(max=5.0)
    x /= 2.0
    assert x.tolist() == [2.0, -1.0, 2.5] and x.numpy() is data
    assert mt.add(mt.tensor([1.0]), mt.tensor([2.0]), alpha=3).tolist() == [7.0]


def test_a_name_cannot_be_declared_twice():
    from minitorch.ops import registry
    with pytest.raises(ValueError, match="declared twice"):
        registry.op(methods="__add__")(lambda a, b: a)
    with pytest.raises(ValueError, match="defined in tensor.py"):
        registry.tensor_method("numel")(lambda self: 0)


def test_tensor_module_imports_nothing_above_it():
    import ast
    import pathlib
    source = (pathlib.Path(mt.__file__).parent / "tensor.py").read_text()
    relative = {node.module for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.ImportFrom) and node.level}
    assert relative <= {"dtype", "device", "device_arrays"}, relative
