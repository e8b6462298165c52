"""Element types as PyTorch's: the dtype objects and their aliases, creation and casts in every
dtype, ``type()``/``element_size()``, type promotion (tensors, 0-d tensors, Python scalars),
overflow of Python numbers, half-precision arithmetic and gradients (on every backend), integer
indices of every width, the legacy ``LongTensor``-style types, the default dtype, finfo/iinfo,
``__format__``, ``new_*``, ``randint``'s forms, and ``inference_mode``. Parity tests compare with
PyTorch where it is installed (skipped otherwise)."""
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import minitorch as mt
from minitorch import backends
from minitorch.autograd import gradcheck

ALL = [mt.float32, mt.float64, mt.float16, mt.bfloat16, mt.int64, mt.int32, mt.int16, mt.int8,
       mt.uint8, mt.bool]
INTS = [mt.int64, mt.int32, mt.int16, mt.int8, mt.uint8]
BUILT = sorted(backends.available)


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")


def _torch_dtype(torch, dtype):
    return getattr(torch, dtype.name)


def _as_numpy(t):
    """A minitorch or torch tensor's values in numpy: floats as float64 (bfloat16 included)."""
    t = t.detach()
    if type(t).__module__ == "torch":
        return (t.double() if t.dtype.is_floating_point else t).numpy()
    return t._data.astype(np.float64) if t.dtype.is_floating_point else t._data


@pytest.fixture
def default_float64():
    mt.set_default_dtype(mt.float64)
    yield
    mt.set_default_dtype(mt.float32)


# ----------------------------------------------------------------------------- dtype objects

def test_dtype_names_and_aliases():
    assert mt.half is mt.float16 and mt.int is mt.int32 and mt.short is mt.int16
    assert mt.float is mt.float32 and mt.double is mt.float64 and mt.long is mt.int64
    assert repr(mt.bfloat16) == "minitorch.bfloat16" and str(mt.uint8) == "minitorch.uint8"
    for dtype in ALL:
        assert mt.zeros(2, dtype=dtype).dtype is dtype
        assert mt.tensor([1], dtype=dtype.name).dtype is dtype
    assert mt.zeros(1, dtype=float).dtype is mt.float64  # Python types, as torch reads them
    assert mt.zeros(1, dtype=int).dtype is mt.int64 and mt.zeros(1, dtype=bool).dtype is mt.bool
    with pytest.raises(TypeError, match="unknown dtype name 'float8'"):
        mt.zeros(1, dtype="float8")


def test_dtype_attributes_match_torch():
    torch = _torch()
    for dtype in ALL:
        ours, theirs = dtype, _torch_dtype(torch, dtype)
        assert ours.is_floating_point == theirs.is_floating_point, dtype
        assert ours.is_signed == theirs.is_signed, dtype
        assert ours.itemsize == theirs.itemsize, dtype
        assert not ours.is_complex and ours.to_real() is ours


def test_dtypes_are_singletons_under_copy():
    import copy
    import pickle
    for dtype in ALL:
        assert copy.deepcopy(dtype) is dtype and pickle.loads(pickle.dumps(dtype)) is dtype


# ----------------------------------------------------------------------------- creation

@pytest.mark.parametrize("dtype", ALL, ids=str)
def test_creation_functions_take_every_dtype(dtype):
    torch = _torch()
    theirs = _torch_dtype(torch, dtype)
    pairs = [
        (mt.tensor([[1, 0], [2, 3]], dtype=dtype), torch.tensor([[1, 0], [2, 3]], dtype=theirs)),
        (mt.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=theirs)),
        (mt.ones((3,), dtype=dtype), torch.ones((3,), dtype=theirs)),
        (mt.full((2,), 1, dtype=dtype), torch.full((2,), 1, dtype=theirs)),
        (mt.empty(0, 2, dtype=dtype), torch.empty(0, 2, dtype=theirs)),
        (mt.eye(3, dtype=dtype), torch.eye(3, dtype=theirs)),
        (mt.zeros_like(mt.ones(2), dtype=dtype), torch.zeros_like(torch.ones(2), dtype=theirs)),
    ]
    if dtype is not mt.bool:
        pairs.append((mt.arange(0, 6, 2, dtype=dtype), torch.arange(0, 6, 2, dtype=theirs)))
        pairs.append((mt.linspace(0, 4, 5, dtype=dtype), torch.linspace(0, 4, 5, dtype=theirs)))
    for ours, expected in pairs:
        assert ours.dtype is dtype and tuple(ours.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(_as_numpy(ours), _as_numpy(expected))


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64, mt.float16, mt.bfloat16], ids=str)
def test_random_floats_in_every_float_dtype(dtype):
    mt.manual_seed(0)
    x = mt.randn(100, dtype=dtype)
    assert x.dtype is dtype and abs(float(x.float().mean())) < 0.5
    assert mt.rand(3, dtype=dtype).dtype is dtype and mt.randn_like(x).dtype is dtype
    with pytest.raises(TypeError, match="randn: dtype must be floating point, got minitorch.int32"):
        mt.randn(2, dtype=mt.int32)


def test_numpy_data_keeps_its_dtype():
    for np_dtype, dtype in ((np.float16, mt.float16), (np.int32, mt.int32), (np.int16, mt.int16),
                            (np.int8, mt.int8), (np.uint8, mt.uint8), (np.uint16, mt.int32),
                            (np.uint32, mt.int64)):
        array = np.arange(3).astype(np_dtype)
        assert mt.tensor(array).dtype is dtype and mt.from_numpy(array).dtype is dtype
    shared = np.arange(3, dtype=np.int16)
    mt.from_numpy(shared)[0] = 7  # from_numpy shares the memory of a dtype minitorch has
    assert shared[0] == 7


def test_torch_parity_of_inferred_dtypes():
    torch = _torch()
    for data in ([1, 2], [1.5], [True], np.arange(3, dtype=np.int32), np.ones(2, np.float16),
                 np.ones(2, np.uint8), np.ones(2, np.int8), np.ones(2, np.int16)):
        assert mt.tensor(data).dtype.name == str(torch.tensor(data).dtype).split(".")[1], data


# ----------------------------------------------------------------------------- casts

CASTS = {"float": mt.float32, "double": mt.float64, "half": mt.float16, "bfloat16": mt.bfloat16,
         "long": mt.int64, "int": mt.int32, "short": mt.int16, "char": mt.int8, "byte": mt.uint8,
         "bool": mt.bool}


@pytest.mark.parametrize("method", sorted(CASTS))
def test_named_casts_match_torch(method):
    torch = _torch()
    values = [[0.0, 1.75, 3.5], [100.0, 7.25, 0.5]]
    ours, theirs = getattr(mt.tensor(values), method)(), getattr(torch.tensor(values), method)()
    assert ours.dtype is CASTS[method]
    assert ours.type() == theirs.type().replace("torch.", "minitorch.")
    assert ours.element_size() == theirs.element_size() == ours.itemsize
    assert ours.nbytes == theirs.nbytes
    np.testing.assert_array_equal(_as_numpy(ours), _as_numpy(theirs))


def test_type_with_and_without_argument():
    x = mt.tensor([1.5, -2.5])
    assert x.type() == "minitorch.FloatTensor" and x.long().type() == "minitorch.LongTensor"
    assert mt.tensor([True]).type() == "minitorch.BoolTensor"
    assert x.type(mt.int32).dtype is mt.int32 and x.type(mt.int32).tolist() == [1, -2]
    assert x.type("minitorch.DoubleTensor").dtype is mt.float64
    assert x.type("torch.HalfTensor").dtype is mt.float16  # PyTorch's spelling is accepted
    assert x.type(mt.ByteTensor).dtype is mt.uint8
    assert x.type(mt.float32) is x
    with pytest.raises(ValueError, match="invalid type 'float64'"):
        x.type("float64")
    with pytest.raises(ValueError, match="invalid type 'torch.cuda.FloatTensor'"):
        x.type("torch.cuda.FloatTensor")


def test_to_dtype_forms_and_copy():
    x = mt.tensor([1.0, 2.0])
    assert x.to(mt.float32) is x and x.to(dtype=mt.float32) is x
    copied = x.to(mt.float32, copy=True)
    assert copied is not x and copied.data_ptr() != x.data_ptr() and copied.tolist() == [1, 2]
    assert x.to(mt.int8).dtype is mt.int8
    assert x.to(mt.zeros(1, dtype=mt.float16)).dtype is mt.float16  # to(other): other's dtype
    assert x.to("float64").dtype is mt.float64
    with pytest.raises(TypeError, match="unexpected keyword arguments"):
        x.to(mt.float64, blocking=True)


def test_half_casts_carry_gradients_back_in_the_source_dtype():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    (x.half() * 3).sum().backward()
    assert x.grad.dtype is mt.float32 and x.grad.tolist() == [3.0, 3.0]
    x.grad = None
    (x.bfloat16() * x.bfloat16()).sum().backward()
    assert x.grad.dtype is mt.float32 and x.grad.tolist() == [2.0, 4.0]
    assert not x.int().requires_grad  # a cast to an integer is a plain copy, as in PyTorch


# ----------------------------------------------------------------------------- promotion

def test_promote_types_matches_torch_for_every_pair():
    torch = _torch()
    for a in ALL:
        for b in ALL:
            expected = torch.promote_types(_torch_dtype(torch, a), _torch_dtype(torch, b))
            assert mt.promote_types(a, b).name == str(expected).split(".")[1], (a, b)
            assert mt.can_cast(a, b) == torch.can_cast(_torch_dtype(torch, a),
                                                        _torch_dtype(torch, b)), (a, b)


def _pair(torch, dtype, values, shape):
    ours = mt.tensor(values, dtype=dtype).reshape(shape)
    return ours, torch.tensor(values, dtype=_torch_dtype(torch, dtype)).reshape(shape)


@pytest.mark.parametrize("shapes", [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())],
                         ids=["1d-1d", "1d-0d", "0d-1d", "0d-0d"])
def test_binary_op_result_dtypes_match_torch(shapes):
    torch = _torch()
    for a in ALL:
        for b in ALL:
            values_a, values_b = [1, 0][:max(1, 2 * len(shapes[0]))], [1, 1][
                :max(1, 2 * len(shapes[1]))]
            ours_a, theirs_a = _pair(torch, a, values_a, shapes[0])
            ours_b, theirs_b = _pair(torch, b, values_b, shapes[1])
            expected = (theirs_a * theirs_b).dtype
            result = ours_a * ours_b
            assert result.dtype.name == str(expected).split(".")[1], (a, b, shapes)
            np.testing.assert_array_equal(_as_numpy(result), _as_numpy(theirs_a * theirs_b))


@pytest.mark.parametrize("scalar", [2, 2.5, True], ids=["int", "float", "bool"])
def test_python_scalars_promote_as_in_torch(scalar, default_float64):
    torch = _torch()
    torch.set_default_dtype(torch.float64)
    try:
        for dtype in ALL:
            ours, theirs = _pair(torch, dtype, [1, 0], (2,))
            for op in (lambda x, s: x + s, lambda x, s: s * x):
                assert op(ours, scalar).dtype.name == str(op(theirs, scalar).dtype).split(".")[1]
    finally:
        torch.set_default_dtype(torch.float32)


def test_promotion_examples_of_the_issue():
    assert (mt.ones(2, dtype=mt.int8) + mt.ones(2, dtype=mt.int32)).dtype is mt.int32
    assert (mt.ones(2, dtype=mt.int32) + mt.ones(2)).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.uint8) + mt.ones(2, dtype=mt.int8)).dtype is mt.int16
    assert (mt.ones(2, dtype=mt.int8) * 2.5).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.float16) + 1e3).dtype is mt.float16
    assert (mt.ones(2, dtype=mt.float16) + mt.ones(2, dtype=mt.bfloat16)).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.int8) + mt.tensor(1000)).tolist() == [-23, -23]  # wraps, as torch
    assert (mt.ones(2, dtype=mt.uint8) + 300).tolist() == [45, 45]
    assert (mt.ones(2) + mt.tensor(1.0, dtype=mt.float64)).dtype is mt.float32
    assert (mt.ones(2, dtype=mt.int32) / 2).dtype is mt.float32
    assert (mt.tensor([7], dtype=mt.int16) // 2).dtype is mt.int16


def test_gradients_through_promotion_from_integer_dtypes():
    x = mt.randn(3, 4, dtype=mt.float64).T.requires_grad_()  # non-contiguous
    for dtype in (mt.int32, mt.int16, mt.int8, mt.uint8):
        k = mt.arange(3, dtype=dtype)  # broadcast over the rows
        assert gradcheck(lambda a: a * k + k / (a * a + 1), (x,))
    scale = mt.tensor(2.0, dtype=mt.float64, requires_grad=True)  # 0-d and 2-d together
    assert gradcheck(lambda a, s: a * s, (x, scale))


# ----------------------------------------------------------------------------- overflow

@pytest.mark.parametrize("dtype,good,bad", [
    (mt.uint8, [0, 255, -255, 3.9], [256, -256, -1.5, 300.0]),
    (mt.int8, [127, -128], [128, -129]),
    (mt.int16, [32767, -32768], [32768, -32769]),
    (mt.int32, [2 ** 31 - 1, -2 ** 31, 1e9], [2 ** 31, 1e10, float("nan"), float("inf")]),
], ids=str)
def test_python_numbers_that_do_not_fit_raise_as_in_torch(dtype, good, bad):
    torch = _torch()
    theirs = _torch_dtype(torch, dtype)
    for value in good:
        assert mt.tensor(value, dtype=dtype).item() == torch.tensor(value, dtype=theirs).item()
        assert mt.tensor([value], dtype=dtype).tolist() == torch.tensor(
            [value], dtype=theirs).tolist()
    for value in bad:
        for make in (lambda: mt.tensor(value, dtype=dtype),
                     lambda: mt.tensor([[0, value]], dtype=dtype),
                     lambda: mt.full((2,), value, dtype=dtype),
                     lambda: mt.zeros(2, dtype=dtype).fill_(value),
                     lambda: mt.zeros(1, dtype=dtype).new_full((2,), value)):
            with pytest.raises(RuntimeError, match=f"without overflow.*{dtype.name}|"
                                                   f"{dtype.name} without overflow"):
                make()
        with pytest.raises(RuntimeError):
            torch.tensor(value, dtype=theirs)


def test_int64_overflow_still_raises_value_error_as_torch():
    with pytest.raises(ValueError, match="does not fit in int64"):
        mt.tensor(2 ** 63)
    with pytest.raises(RuntimeError, match="int64 without overflow"):
        mt.tensor([1e30], dtype=mt.int64)


def test_numpy_data_and_arithmetic_wrap_as_in_torch():
    assert mt.tensor(np.array([300, -1]), dtype=mt.uint8).tolist() == [44, 255]
    assert mt.arange(300, dtype=mt.uint8)[-1].item() == 43
    assert (mt.tensor([100], dtype=mt.int8) * 2).tolist() == [-56]
    assert mt.tensor([1e10], dtype=mt.float16).isinf().tolist() == [True]  # no error: inf
    assert mt.tensor([1e40], dtype=mt.bfloat16).float().isinf().tolist() == [True]


# ----------------------------------------------------------------------------- half arithmetic

HALF = [mt.float16, mt.bfloat16]


@pytest.mark.parametrize("backend", BUILT)
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_kernel_ops_on_half_types_match_torch(backend, dtype):
    torch = _torch()
    F = mt.nn.functional
    rng = np.random.default_rng(0)
    x_np, w_np, b_np = rng.standard_normal((4, 6)), rng.standard_normal((5, 6)), \
        rng.standard_normal(5)
    target = [0, 4, 2, 1]
    theirs = _torch_dtype(torch, dtype)
    tx, tw, tb = (torch.tensor(a, dtype=theirs) for a in (x_np, w_np, b_np))
    with backends.using(backend):
        x, w, b = (mt.tensor(a, dtype=dtype) for a in (x_np, w_np, b_np))
        pairs = [
            (x @ w.T, tx @ tw.T),
            (F.linear(x, w, b), torch.nn.functional.linear(tx, tw, tb)),
            (x.softmax(-1), tx.softmax(-1)),
            (F.log_softmax(x, -1), torch.nn.functional.log_softmax(tx, -1)),
            (F.layer_norm(x, (6,)), torch.nn.functional.layer_norm(tx, (6,))),
            (F.cross_entropy(F.linear(x, w), mt.tensor(target)),
             torch.nn.functional.cross_entropy(torch.nn.functional.linear(tx, tw),
                                               torch.tensor(target))),
            ((x * 2.5 + 1).tanh().sum(-1), (tx * 2.5 + 1).tanh().sum(-1)),
        ]
    tolerance = 2e-2 if dtype is mt.float16 else 1e-1
    for ours, expected in pairs:
        assert ours.dtype is dtype
        np.testing.assert_allclose(_as_numpy(ours), _as_numpy(expected), rtol=tolerance,
                                   atol=tolerance)


@pytest.mark.parametrize("backend", BUILT)
@pytest.mark.parametrize("dtype", HALF, ids=str)
def test_a_layer_trains_in_half_precision(backend, dtype):
    mt.manual_seed(0)
    with backends.using(backend):
        layer = mt.nn.Linear(6, 3).to(dtype)
        x = mt.randn(8, 6, dtype=dtype)
        loss = mt.nn.functional.cross_entropy(layer(x), mt.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
        loss.backward()
    assert loss.dtype is dtype and layer.weight.grad.dtype is dtype
    reference = mt.nn.Linear(6, 3)
    reference.load_state_dict({k: v.float() for k, v in layer.state_dict().items()})
    expected = mt.nn.functional.cross_entropy(reference(x.float()),
                                              mt.tensor([0, 1, 2, 0, 1, 2, 0, 1]))
    expected.backward()
    np.testing.assert_allclose(layer.weight.grad.float().numpy(),
                               reference.weight.grad.numpy(), atol=3e-2)


def test_backend_kernels_take_half_arrays_and_return_them():
    import ml_dtypes
    a = np.ones((2, 3), np.float16)
    for name in BUILT:
        with backends.using(name):
            out = backends.current().matmul(a, a.T)
            assert out.dtype == np.float16 and out.tolist() == [[3.0, 3.0], [3.0, 3.0]]
            y = backends.current().softmax_forward(a.astype(ml_dtypes.bfloat16))
            assert y.dtype == ml_dtypes.bfloat16
            assert backends.current().softmax_forward(a.astype(np.float32)).dtype == np.float32


# ----------------------------------------------------------------------------- integer indices

@pytest.mark.parametrize("dtype", [mt.int64, mt.int32], ids=str)
def test_integer_index_tensors_of_both_widths(dtype):
    x = mt.arange(10.0).reshape(5, 2)
    index = mt.tensor([4, 0], dtype=dtype)
    assert x[index].tolist() == [[8, 9], [0, 1]]
    assert x[mt.tensor(1, dtype=dtype)].tolist() == [2, 3]
    assert x.index_select(0, index).tolist() == [[8, 9], [0, 1]]
    assert [10, 20, 30][mt.tensor(2, dtype=dtype)] == 30  # __index__
    assert mt.nn.functional.embedding(index, x).tolist() == [[8, 9], [0, 1]]
    y = x.clone()
    y[index] = 0.0
    assert y[4].tolist() == [0, 0]


def test_every_integer_dtype_is_an_index_via___index__():
    for dtype in INTS:
        assert list(range(5))[mt.tensor(3, dtype=dtype)] == 3
    with pytest.raises(TypeError, match="only integer tensors"):
        [1, 2][mt.tensor(1.0)]


def test_uint8_index_is_a_mask_and_narrow_ints_are_refused_as_in_torch():
    x = mt.arange(3)
    assert x[mt.tensor([1, 0, 1], dtype=mt.uint8)].tolist() == [0, 2]
    with pytest.raises(IndexError, match="int64 or bool.*got minitorch.int8"):
        x[mt.tensor([0], dtype=mt.int8)]


# ----------------------------------------------------------------------------- legacy types

def test_legacy_tensor_types():
    assert mt.LongTensor([1, 2]).tolist() == [1, 2] and mt.LongTensor([1, 2]).dtype is mt.int64
    assert mt.LongTensor([1.7]).tolist() == [1]
    assert tuple(mt.LongTensor(3).shape) == (3,) and mt.LongTensor(3).dtype is mt.int64
    assert tuple(mt.FloatTensor(2, 3).shape) == (2, 3)
    assert tuple(mt.FloatTensor(mt.Size([2, 3])).shape) == (2, 3)
    assert mt.FloatTensor((2, 3)).tolist() == [2.0, 3.0]  # a tuple is data, as in PyTorch
    assert tuple(mt.DoubleTensor().shape) == (0,) and mt.DoubleTensor().dtype is mt.float64
    assert mt.IntTensor([1]).dtype is mt.int32 and mt.BoolTensor([1, 0]).tolist() == [True, False]
    assert mt.HalfTensor([1]).dtype is mt.float16 and mt.ByteTensor([255]).dtype is mt.uint8
    assert isinstance(mt.ones(2), mt.FloatTensor) and not isinstance(mt.ones(2), mt.LongTensor)
    assert isinstance(mt.nn.Parameter(mt.ones(2)), mt.FloatTensor)
    assert isinstance(mt.arange(2), mt.LongTensor) and not isinstance([1], mt.LongTensor)
    with pytest.raises(RuntimeError, match="not available"):
        mt.FloatTensor(2, device="cuda")


def test_legacy_types_match_torch():
    torch = _torch()
    for name in ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor",
                 "IntTensor", "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor"):
        ours, theirs = getattr(mt, name)([1, 0]), getattr(torch, name)([1, 0])
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        assert ours.type() == theirs.type().replace("torch.", "minitorch.")
        assert tuple(getattr(mt, name)(2, 3).shape) == tuple(getattr(torch, name)(2, 3).shape)


# ----------------------------------------------------------------------------- default dtype

def test_default_dtype(default_float64):
    assert mt.get_default_dtype() is mt.float64
    assert mt.tensor([1.5]).dtype is mt.float64 and mt.tensor(2.5).dtype is mt.float64
    for t in (mt.zeros(2), mt.ones(2), mt.empty(2), mt.full((2,), 1.5), mt.randn(2), mt.rand(2),
              mt.arange(0.0, 2.0), mt.linspace(0, 1, 3), mt.eye(2), mt.FloatTensor(1).double()):
        assert t.dtype is mt.float64
    assert mt.tensor([1, 2]).dtype is mt.int64 and mt.full((1,), 2).dtype is mt.int64
    assert (mt.tensor([1, 2]) * 0.5).dtype is mt.float64 and (mt.tensor([1]) / 2).dtype \
        is mt.float64
    assert mt.where(mt.tensor([True]), 1.0, 0).dtype is mt.float64
    assert mt.tensor(np.float32(1.0)).dtype is mt.float32  # numpy data keeps its dtype
    layer = mt.nn.Linear(2, 3)
    assert layer.weight.dtype is mt.float64 and layer.bias.dtype is mt.float64
    assert mt.nn.LayerNorm(3).weight.dtype is mt.float64
    assert repr(mt.tensor([1.0])) == "tensor([1.])"
    assert repr(mt.tensor([1.0], dtype=mt.float32)) == "tensor([1.], dtype=minitorch.float32)"
    assert mt.finfo().eps == np.finfo(np.float64).eps


def test_set_default_dtype_takes_float_dtypes_only():
    torch = _torch()
    for bad in (mt.int64, mt.bool, "int32", 3):
        with pytest.raises(TypeError, match="only floating-point types"):
            mt.set_default_dtype(bad)
    with pytest.raises(TypeError):
        torch.set_default_dtype(torch.int64)
    assert mt.get_default_dtype() is mt.float32
    mt.set_default_dtype(mt.float16)
    try:
        assert mt.tensor([1.5]).dtype is mt.float16 and (mt.arange(2) * 0.5).dtype is mt.float16
    finally:
        mt.set_default_dtype(mt.float32)


def test_repr_of_the_new_dtypes_matches_torch():
    torch = _torch()
    for dtype in (mt.float16, mt.bfloat16, mt.int32, mt.int16, mt.int8, mt.uint8):
        ours = repr(mt.tensor([1, 2], dtype=dtype)).replace("minitorch.", "torch.")
        assert ours == repr(torch.tensor([1, 2], dtype=_torch_dtype(torch, dtype)))
    ours = repr(mt.tensor([1.25, -3.5], dtype=mt.bfloat16)).replace("minitorch.", "torch.")
    assert ours == repr(torch.tensor([1.25, -3.5], dtype=torch.bfloat16))


# ----------------------------------------------------------------------------- finfo / iinfo

def test_finfo_and_iinfo_match_torch():
    torch = _torch()
    for dtype in (mt.float32, mt.float64, mt.float16, mt.bfloat16):
        ours, theirs = mt.finfo(dtype), torch.finfo(_torch_dtype(torch, dtype))
        for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
            assert getattr(ours, field) == getattr(theirs, field), (dtype, field)
        assert ours.dtype == theirs.dtype
    for dtype in INTS:
        ours, theirs = mt.iinfo(dtype), torch.iinfo(_torch_dtype(torch, dtype))
        assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min,
                                                                theirs.max, theirs.dtype)
    assert repr(mt.iinfo(mt.uint8)) == repr(torch.iinfo(torch.uint8))
    with pytest.raises(TypeError, match="floating point"):
        mt.finfo(mt.int32)
    with pytest.raises(TypeError, match="integer"):
        mt.iinfo(mt.float32)


# ----------------------------------------------------------------------------- format, new_*

def test_format_like_torch():
    torch = _torch()
    for value in (1.23456, -2.0, 7):
        for spec in (".4f", ".2e", "", ">10"):
            assert format(mt.tensor(value), spec) == format(torch.tensor(value), spec)
    assert f"{mt.tensor(3):d}" == "3"
    for data in ([1.25], [1.0, 2.0]):
        with pytest.raises(TypeError, match="unsupported format string"):
            format(mt.tensor(data), ".3f")
        with pytest.raises(TypeError):
            format(torch.tensor(data), ".3f")
        assert f"{mt.tensor(data)}" == str(mt.tensor(data))


def test_numel_and_nelement():
    x = mt.ones(2, 3)
    assert mt.numel(x) == x.nelement() == x.numel() == 6


@pytest.mark.usefixtures("without_gpu")
def test_new_tensor_methods_match_torch():
    torch = _torch()
    for dtype in (mt.float64, mt.int32, mt.float16):
        ours, theirs = mt.ones(2, dtype=dtype), torch.ones(2, dtype=_torch_dtype(torch, dtype))
        pairs = [(ours.new_zeros(3), theirs.new_zeros(3)),
                 (ours.new_zeros((2, 1)), theirs.new_zeros((2, 1))),
                 (ours.new_ones(2, 2), theirs.new_ones(2, 2)),
                 (ours.new_empty(0), theirs.new_empty(0)),
                 (ours.new_full((2,), 3), theirs.new_full((2,), 3)),
                 (ours.new_tensor([1, 2]), theirs.new_tensor([1, 2])),
                 (ours.new_zeros(2, dtype=mt.int8), theirs.new_zeros(2, dtype=torch.int8))]
        for mine, expected in pairs:
            assert mine.dtype.name == str(expected.dtype).split(".")[1]
            assert tuple(mine.shape) == tuple(expected.shape)
            np.testing.assert_array_equal(_as_numpy(mine), _as_numpy(expected))
    x = mt.ones(2)
    grown = x.new_zeros(2, requires_grad=True)
    assert grown.requires_grad and grown.is_leaf
    source = mt.tensor([1.0, 2.0])
    copy = x.new_tensor(source)
    copy[0] = 5.0
    assert source.tolist() == [1.0, 2.0]  # new_tensor copies
    with pytest.raises(RuntimeError, match="not available"):
        x.new_ones(2, device="cuda")


def test_randint_forms():
    mt.manual_seed(0)
    for t in (mt.randint(5, (3,)), mt.randint(0, 5, (3,)), mt.randint(high=5, size=(3,)),
              mt.randint(low=0, high=5, size=(3,)), mt.randint(5, size=(3,))):
        assert tuple(t.shape) == (3,) and t.dtype is mt.int64
        assert 0 <= int(t.min()) and int(t.max()) < 5
    t = mt.randint(-3, -1, (2, 2), dtype=mt.int8)
    assert t.dtype is mt.int8 and set(t.flatten().tolist()) <= {-3, -2}
    assert mt.randint(3, (2,), dtype=mt.float32, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        mt.randint(3, (2,), requires_grad=True)
    with pytest.raises(TypeError, match="size is required"):
        mt.randint(3)
    g = mt.Generator().manual_seed(7)
    first = mt.randint(100, (5,), generator=g).tolist()
    assert mt.randint(100, (5,), generator=mt.Generator().manual_seed(7)).tolist() == first
    assert mt.randint_like(mt.zeros(2, 2, dtype=mt.int16), 4).dtype is mt.int16


def test_randint_signature_matches_torch():
    import inspect
    torch = _torch()
    ours = inspect.signature(mt.randint).parameters
    for name in ("low", "high", "size", "generator", "dtype", "device", "requires_grad"):
        assert name in ours
    assert torch.randint(5, (3,)).shape == mt.randint(5, (3,)).shape


def test_generator_streams_are_separate_and_reproducible():
    g = mt.Generator()
    assert g.device == "cpu"
    g.manual_seed(3)
    state = g.get_state()
    a = mt.randn(4, generator=g).tolist()
    mt.manual_seed(0)
    g.set_state(state)
    assert mt.randn(4, generator=g).tolist() == a
    assert g.initial_seed() == 3
    with pytest.raises(TypeError, match="generator must be a minitorch.Generator"):
        mt.randn(2, generator=np.random.default_rng(0))


# ----------------------------------------------------------------------------- inference_mode

def test_inference_mode_as_context_manager_and_decorator():
    w = mt.ones(2, requires_grad=True)
    assert not mt.is_inference_mode_enabled()
    with mt.inference_mode():
        assert mt.is_inference_mode_enabled() and not mt.is_grad_enabled()
        assert not (w * 2).requires_grad
        with mt.inference_mode(False):
            assert not mt.is_inference_mode_enabled() and mt.is_grad_enabled()
            assert (w * 2).requires_grad
        assert mt.is_inference_mode_enabled()
    assert mt.is_grad_enabled() and not mt.is_inference_mode_enabled()

    @mt.inference_mode
    def bare():
        return (w * 2).requires_grad, mt.is_inference_mode_enabled()

    @mt.inference_mode()
    def called():
        return (w * 2).requires_grad, mt.is_inference_mode_enabled()

    @mt.inference_mode(False)
    def off():
        return (w * 2).requires_grad, mt.is_inference_mode_enabled()

    assert bare() == (False, True) and called() == (False, True)
    with mt.no_grad():
        assert off() == (True, False)  # inference_mode(False) turns grad on, as PyTorch's
        assert not mt.is_grad_enabled()
    assert bare.__name__ == "bare"


def test_inference_mode_matches_torch():
    torch = _torch()
    for ours, theirs in ((mt, torch),):
        with theirs.no_grad(), theirs.inference_mode(False):
            expected = (theirs.is_grad_enabled(), theirs.is_inference_mode_enabled())
        with ours.no_grad(), ours.inference_mode(False):
            assert (ours.is_grad_enabled(), ours.is_inference_mode_enabled()) == expected


def test_inference_mode_is_per_thread():
    seen = []
    with mt.inference_mode():
        thread = threading.Thread(target=lambda: seen.append(
            (mt.is_inference_mode_enabled(), mt.is_grad_enabled())))
        thread.start()
        thread.join()
    assert seen == [(False, True)]


# ----------------------------------------------------------------------------- without ml_dtypes

def test_minitorch_imports_and_runs_without_ml_dtypes(tmp_path):
    import minitorch.serialization as serialization
    bf16 = tmp_path / "bf16.safetensors"
    serialization.save({"w": mt.ones(2, dtype=mt.bfloat16)}, bf16)
    program = f"""
import sys
sys.modules["ml_dtypes"] = None  # as if not installed: its import raises ImportError
import minitorch as mt
x = mt.ones(2, dtype=mt.float16) + 1
assert x.tolist() == [2.0, 2.0] and repr(mt.bfloat16) == "minitorch.bfloat16"
for make in (lambda: mt.zeros(2, dtype=mt.bfloat16), lambda: mt.ones(2).bfloat16(),
             lambda: mt.set_default_dtype(mt.bfloat16), lambda: mt.load({str(bf16)!r})):
    try:
        make()
    except RuntimeError as error:
        assert "ml_dtypes" in str(error), error
    else:
        raise AssertionError("no error")
print("ok")
"""
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(mt.__file__)))
    result = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
