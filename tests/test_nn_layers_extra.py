"""``F.pad``, ``F.one_hot``, ``F.normalize``, ``F.softplus``/``F.mish``, the layers
``SiLU``/``Mish``/``Softplus``/``Softmax``/``LogSoftmax``, ``Flatten``/``Unflatten``,
``Identity``, ``RMSNorm``, the containers ``ParameterList``/``ParameterDict`` and
``nn.utils.rnn.pad_sequence``: gradchecks in float64 (broadcast, non-contiguous and edge
shapes), behaviour and errors, and, where PyTorch is installed, the same values, gradients,
reprs and ``state_dict`` keys as PyTorch's. Runs on every kernel backend.
"""
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
import minitorch.nn.functional as F
from minitorch.autograd import gradcheck, gradgradcheck
from minitorch.nn.utils.rnn import pad_sequence

try:  # the parity tests skip without PyTorch; everything else runs
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


def np_rand(*shape, seed=0):
    return np.random.default_rng(seed + 13 * sum(shape)).standard_normal(shape)


def rand(*shape, seed=0):
    return mt.tensor(np_rand(*shape, seed=seed), requires_grad=True)


def non_contiguous(*shape, seed=0):
    """A float64 leaf of ``shape`` whose memory is every other element of a wider array."""
    wide = mt.tensor(np_rand(*shape[:-1], 2 * shape[-1], seed=seed))
    t = wide[..., ::2].detach()
    assert not t.is_contiguous() or shape[-1] < 2
    return t.requires_grad_()


def same_as_torch(mt_fn, torch_fn, *arrays, atol=1e-12):
    """Values and input gradients (for a random upstream gradient) equal PyTorch's."""
    m_in = [mt.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    t_in = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    got, want = mt_fn(*m_in), torch_fn(*t_in)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), atol=atol, rtol=1e-10)
    if not want.requires_grad:
        return
    upstream = np.random.default_rng(3).standard_normal(tuple(want.shape))
    (got * mt.tensor(upstream)).sum().backward()
    (want * torch.tensor(upstream)).sum().backward()
    for i, (m, t) in enumerate(zip(m_in, t_in)):
        if t.requires_grad:
            np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), atol=atol, rtol=1e-10,
                                       err_msg=f"gradient of input {i}")


# ----------------------------------------------------------------------------- F.pad

PAD_CASES = [  # (shape, pad, mode)
    ((2, 3), (1, 2), "constant"), ((2, 3), (-1, 2, 1, -1), "constant"),
    ((2, 3, 4), (1, 1, 0, 2, 3, 0), "constant"), ((4,), (0, 3), "constant"),
    ((2, 0), (1, 1), "constant"), ((0, 3), (2, 2), "constant"),
    ((1, 4), (1, 2), "reflect"), ((1, 4), (-1, 2), "reflect"), ((1, 4), (2, -3), "reflect"),
    ((2, 3, 4), (1, 2, 2, 1), "reflect"), ((3, 4, 3), (2, 2), "reflect"),
    ((1, 2, 3, 3, 3), (1, 2, 0, 1, 2, 2), "reflect"), ((2, 4), (3, 3), "reflect"),
    ((2, 4), (1, 2), "replicate"), ((2, 4), (-1, 3), "replicate"),
    ((2, 3, 4), (3, 2, 2, 1), "replicate"), ((1, 2, 2, 2, 3), (2, 0, 0, 3, 1, 1), "replicate"),
    ((2, 4), (1, 2), "circular"), ((2, 4), (-1, 2), "circular"), ((2, 4), (2, -1), "circular"),
    ((2, 3, 4), (3, 2, -2, 1), "circular"), ((2, 3, 2, 4), (4, 2, 1, 2), "circular"),
    ((1, 3, 2, 4, 3), (3, 1, 2, 0, 1, 2), "circular")]


@pytest.mark.parametrize("shape,pad,mode", PAD_CASES, ids=str)
def test_pad_gradcheck(backend, shape, pad, mode):
    if 0 in shape:
        out = F.pad(mt.zeros(*shape), pad, mode)
        assert tuple(out.shape) == tuple(n + pad[2 * (len(shape) - 1 - d)] +
                                         pad[2 * (len(shape) - 1 - d) + 1]
                                         if len(shape) - 1 - d < len(pad) // 2 else n
                                         for d, n in enumerate(shape))
        return
    assert gradcheck(lambda x: F.pad(x, pad, mode), (rand(*shape),))
    if len(shape) >= 2:
        assert gradcheck(lambda x: F.pad(x, pad, mode), (non_contiguous(*shape),))


@needs_torch
@pytest.mark.parametrize("shape,pad,mode", PAD_CASES, ids=str)
def test_pad_matches_torch(shape, pad, mode):
    same_as_torch(lambda x: F.pad(x, pad, mode), lambda x: torch.nn.functional.pad(x, pad, mode),
                  np_rand(*shape))


@needs_torch
def test_pad_value_and_dtypes_match_torch():
    for array, value in ((np.arange(6).reshape(2, 3), 2.7), (np.ones((2, 2), bool), 1),
                         (np_rand(2, 3), -1.5), (np_rand(3), None)):
        got = F.pad(mt.tensor(array), (2, 1), value=value)
        want = torch.nn.functional.pad(torch.tensor(array), (2, 1), value=value)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_pad_gradgradcheck_and_new_tensor(backend):
    assert gradgradcheck(lambda x: F.pad(x, (1, 2, 2, 1), "reflect"), (rand(2, 3, 4),))
    assert gradgradcheck(lambda x: F.pad(x, (1, -1), value=0.5), (rand(2, 3),))
    x = rand(2, 3)
    same = F.pad(x, (0, 0))
    assert same is not x and np.array_equal(same.detach().numpy(), x.detach().numpy())
    assert tuple(F.pad(mt.tensor(2.0), ()).shape) == ()


@pytest.mark.parametrize("call,error,match", [
    (lambda: F.pad(mt.ones(2, 3), (1,)), RuntimeError, "divisible by 2"),
    (lambda: F.pad(mt.ones(3), (1, 1, 1, 1)), RuntimeError, "two times the input dimension"),
    (lambda: F.pad(mt.ones(2, 3), (1.0, 1)), TypeError, "tuple of ints"),
    (lambda: F.pad(mt.ones(2, 3), 1), TypeError, "tuple of ints"),
    (lambda: F.pad(mt.ones(2, 3), (-2, -2)), RuntimeError, "negative size"),
    (lambda: F.pad(mt.ones(2, 3), (1, 1), mode="zeros"), NotImplementedError, "zeros"),
    (lambda: F.pad(mt.ones(3), (1, 1), mode="reflect"), NotImplementedError, "1D input"),
    (lambda: F.pad(mt.ones(2, 3), (1, 1, 1, 1), mode="reflect"), NotImplementedError, "2D"),
    (lambda: F.pad(mt.ones(1, 4), (4, 0), mode="reflect"), RuntimeError, "less than"),
    (lambda: F.pad(mt.ones(1, 4), (5, 0), mode="circular"), RuntimeError, "more than once"),
    (lambda: F.pad(mt.ones(1, 4), (4, -1), mode="circular"), RuntimeError, "more than once"),
    (lambda: F.pad(mt.ones(1, 0), (1, 1), mode="replicate"), RuntimeError, "size 0"),
    (lambda: F.pad(mt.ones(1, 4), (1, 1), mode="reflect", value=2.0), RuntimeError, "value"),
    (lambda: F.pad([1.0, 2.0], (1, 1)), TypeError, "input"),
])
def test_pad_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----------------------------------------------------------------------------- one_hot

def test_one_hot():
    out = F.one_hot(mt.tensor([[0, 2], [1, 0]]))
    assert out.dtype == mt.int64 and tuple(out.shape) == (2, 2, 3)
    assert out.tolist() == [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [1, 0, 0]]]
    assert F.one_hot(mt.tensor(2), 4).tolist() == [0, 0, 1, 0]
    assert tuple(F.one_hot(mt.zeros(0, dtype=mt.int64), 3).shape) == (0, 3)
    assert F.one_hot(input=mt.tensor([1]), num_classes=2).tolist() == [[0, 1]]


@pytest.mark.parametrize("call,error,match", [
    (lambda: F.one_hot(mt.tensor([0, -1])), RuntimeError, "non-negative"),
    (lambda: F.one_hot(mt.tensor([0, 5]), 5), RuntimeError, "smaller than num_classes"),
    (lambda: F.one_hot(mt.tensor([0.0, 1.0])), TypeError, "int64"),
    (lambda: F.one_hot(mt.zeros(0, dtype=mt.int64)), RuntimeError, "empty"),
])
def test_one_hot_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


@needs_torch
def test_one_hot_matches_torch():
    ids = np.random.default_rng(0).integers(0, 5, (3, 4))
    for num_classes in (-1, 5, 7):
        np.testing.assert_array_equal(
            F.one_hot(mt.tensor(ids), num_classes).numpy(),
            torch.nn.functional.one_hot(torch.tensor(ids), num_classes).numpy())


# ----------------------------------------------------------------------------- normalize

@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1),
                                   (2.0, (0, 1)), (0.5, 1)])
def test_normalize_gradcheck(backend, p, dim):
    assert gradcheck(lambda x: F.normalize(x, p=p, dim=dim), (rand(3, 4),))
    assert gradcheck(lambda x: F.normalize(x, p=p, dim=dim), (non_contiguous(3, 4),))


def test_normalize_zero_vector_and_gradgrad(backend):
    x = mt.zeros(1, 3, dtype=mt.float64, requires_grad=True)
    out = F.normalize(x)
    assert out.tolist() == [[0.0, 0.0, 0.0]]
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 1e12)  # 1/eps, as PyTorch's
    assert gradgradcheck(lambda x: F.normalize(x, dim=0), (rand(4),))
    with pytest.raises(TypeError, match="floating point"):
        F.normalize(mt.tensor([[3, 4]]))
    with pytest.raises(ValueError, match="p must be positive"):
        F.normalize(rand(2, 2), p=0)


@needs_torch
@pytest.mark.parametrize("p,dim", [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1),
                                   (2.0, (0, 1)), (2.0, 0)])
def test_normalize_matches_torch(p, dim):
    x = np_rand(3, 4)
    x[1] = 0.0  # a zero row
    same_as_torch(lambda t: F.normalize(t, p=p, dim=dim),
                  lambda t: torch.nn.functional.normalize(t, p=p, dim=dim), x, atol=1e-6)


# ----------------------------------------------------------------------------- activations

@pytest.mark.parametrize("fn", [F.mish, F.softplus, lambda x: F.softplus(x, beta=2.0),
                                lambda x: F.softplus(x, 0.5, threshold=0.5)])
def test_smooth_activations_gradcheck(backend, fn):
    for x in (rand(2, 3), non_contiguous(2, 3), rand(), rand(0, 2)):
        if x.numel():
            assert gradcheck(fn, (x,))
        else:
            assert tuple(fn(x).shape) == (0, 2)
    assert gradgradcheck(fn, (rand(5),))


@pytest.mark.parametrize("dtype", [mt.float32, mt.float64])
@pytest.mark.parametrize("beta,threshold", [(1.0, 20.0), (2.0, 1.0), (0.5, 0.5)])
def test_softplus_backward_on_arrays_equals_the_recorded_one(backend, beta, threshold, dtype):
    """Without a graph to record, softplus' backward runs on the arrays (sigmoid kernel, 1 past
    the threshold); with create_graph, in Tensor ops: the same gradient bit for bit."""
    x = mt.tensor(np_rand(4, 51) * 8, dtype=dtype, requires_grad=True)  # past the threshold too
    g = mt.tensor(np_rand(4, 51, seed=1), dtype=dtype)
    (on_arrays,) = mt.autograd.grad(F.softplus(x, beta, threshold), x, g)
    (recorded,) = mt.autograd.grad(F.softplus(x, beta, threshold), x, g, create_graph=True)
    assert on_arrays.dtype == dtype
    np.testing.assert_array_equal(on_arrays.numpy(), recorded.detach().numpy())


def test_activation_modules_inplace_and_dtype(backend):
    for module in (nn.SiLU(inplace=True), nn.Mish(inplace=True)):
        x = mt.tensor([-1.0, 0.0, 2.0])
        out = module(x)
        assert out is x and x.tolist() != [-1.0, 0.0, 2.0]
    with pytest.raises(TypeError, match="floating point"):
        F.mish(mt.tensor([1, 2]))


@needs_torch
@pytest.mark.parametrize("name,args", [("SiLU", ()), ("Mish", ()), ("Softplus", ()),
                                       ("Softplus", (2.0, 1.0)), ("Softmax", (1,)),
                                       ("LogSoftmax", (0,)), ("Softmax", (-1,))])
def test_activation_modules_match_torch(name, args):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    x = np_rand(3, 4) * 8  # past softplus' threshold too
    same_as_torch(ours, theirs, x)
    assert repr(nn.SiLU(inplace=True)) == repr(torch.nn.SiLU(inplace=True))


@needs_torch
def test_softmax_module_without_dim_matches_torch():
    for shape in ((3,), (2, 3), (2, 3, 4), (2, 3, 2, 2)):
        x = np_rand(*shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same_as_torch(nn.Softmax(), torch.nn.Softmax(), x)
            same_as_torch(nn.LogSoftmax(), torch.nn.LogSoftmax(), x)
    with pytest.warns(UserWarning, match="Implicit dimension") as record:
        nn.Softmax()(mt.ones(2, 2))
    assert record[0].filename == __file__  # points at the line that called the module
    with pytest.warns(UserWarning, match="Implicit"):
        nn.Softmax(dim=None)(mt.ones(2, 2))
    out = F.softmax(mt.ones(2, 3), 1, dtype=mt.float64)
    assert out.dtype == mt.float64


# ----------------------------------------------------------------------------- reshaping layers

@needs_torch
@pytest.mark.parametrize("ours,theirs,shape", [
    (lambda m: m.Flatten(), None, (2, 3, 4)), (lambda m: m.Flatten(0, -2), None, (2, 3, 4)),
    (lambda m: m.Flatten(0), None, ()), (lambda m: m.Unflatten(1, (2, -1)), None, (3, 6)),
    (lambda m: m.Unflatten(-1, [2, 2]), None, (3, 4)),
    (lambda m: m.Identity(3, foo=4), None, (2, 3))],
    ids=["Flatten()", "Flatten(0,-2)", "Flatten(0)", "Unflatten(1,(2,-1))", "Unflatten(-1,[2,2])",
         "Identity(3,foo=4)"])
def test_reshaping_layers_match_torch(ours, theirs, shape):
    mine, ref = ours(nn), ours(torch.nn)
    assert repr(mine) == repr(ref) and list(mine.state_dict()) == []
    same_as_torch(mine, ref, np_rand(*shape))


def test_reshaping_layers(backend):
    x = non_contiguous(2, 3)
    assert gradcheck(nn.Flatten(0), (x,))
    assert gradcheck(nn.Sequential(nn.Flatten(0), nn.Unflatten(0, (3, 2))), (x,))
    assert tuple(nn.Flatten()(mt.zeros(0, 2, 3)).shape) == (0, 6)
    assert nn.Identity(5, bias=True)(x) is x
    with pytest.raises(TypeError, match="tuple of ints"):
        nn.Unflatten(1, 2)
    with pytest.raises(TypeError, match="element of type float"):
        nn.Unflatten(1, (2, 3.0))
    with pytest.raises(IndexError):
        nn.Flatten()(mt.ones(3))  # no dim 1, as PyTorch


# ----------------------------------------------------------------------------- RMSNorm

@needs_torch
@pytest.mark.parametrize("kwargs,shape", [
    (dict(normalized_shape=4), (2, 3, 4)), (dict(normalized_shape=(3, 4), eps=1e-3), (2, 3, 4)),
    (dict(normalized_shape=[4], elementwise_affine=False), (5, 4))], ids=str)
def test_rms_norm_module_matches_torch(kwargs, shape):
    ours, theirs = nn.RMSNorm(**kwargs), torch.nn.RMSNorm(**kwargs).double()
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    if theirs.weight is not None:
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
    ours.double().load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    same_as_torch(ours, theirs, np_rand(*shape), atol=1e-10)
    if theirs.weight is not None:
        np.testing.assert_allclose(ours.weight.grad.numpy(), theirs.weight.grad.numpy(),
                                   atol=1e-10)


def test_rms_norm_module(backend):
    norm = nn.RMSNorm((3,), dtype=mt.float64)
    assert norm.weight.dtype == mt.float64 and norm.weight.tolist() == [1.0, 1.0, 1.0]
    assert gradcheck(lambda x, w: F.rms_norm(x, (3,), w), (non_contiguous(2, 3), rand(3)))
    with mt.no_grad():
        norm.weight.fill_(2.0)
    norm.reset_parameters()
    assert norm.weight.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match="normalized_shape"):
        nn.RMSNorm(())
    with pytest.raises(ValueError, match="trailing dims"):
        nn.RMSNorm(4)(mt.ones(2, 3))


# ----------------------------------------------------------------------------- parameter containers

@needs_torch
def test_parameter_containers_state_dict_and_repr_match_torch():
    class Ours(nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = nn.ParameterList([nn.Parameter(mt.ones(2)), mt.ones(3, 2)])
            self.pdict = nn.ParameterDict({"b": mt.ones(1), "a": nn.Parameter(mt.ones(2))})

    class Theirs(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.plist = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2)),
                                                 torch.ones(3, 2)])
            self.pdict = torch.nn.ParameterDict({"b": torch.ones(1),
                                                 "a": torch.nn.Parameter(torch.ones(2))})

    ours, theirs = Ours(), Theirs()
    assert list(ours.state_dict()) == list(theirs.state_dict()) == [
        "plist.0", "plist.1", "pdict.a", "pdict.b"]
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours.plist).replace("minitorch.", "torch.") == repr(theirs.plist)
    ours.plist.append("note")
    theirs.plist.append("note")
    assert repr(ours.plist).replace("minitorch.", "torch.") == repr(theirs.plist)
    ours.load_state_dict({k: v.numpy() * 3 for k, v in theirs.state_dict().items()})
    assert ours.pdict["a"].tolist() == [3.0, 3.0]


def test_parameter_list():
    plist = nn.ParameterList([nn.Parameter(mt.ones(2)), mt.zeros(3)])
    assert all(isinstance(p, nn.Parameter) for p in plist) and len(plist) == 2
    plist.append(mt.ones(1)).extend([mt.ones(4)])
    plist += [mt.ones(5)]
    assert [p.shape[0] for p in plist] == [2, 3, 1, 4, 5]
    assert plist[-1].shape[0] == 5 and isinstance(plist[1:3], nn.ParameterList)
    assert [p.shape[0] for p in plist[::2]] == [2, 1, 5]
    plist[0] = mt.ones(7)
    assert isinstance(plist[0], nn.Parameter) and plist[0].shape[0] == 7
    assert len(list(plist.parameters())) == 5 and "0" not in dir(plist)
    with pytest.raises(IndexError, match="out of range"):
        plist[5]
    with pytest.raises(TypeError, match="iterable"):
        plist.extend(mt.ones(3))
    with pytest.raises(RuntimeError, match="should not be called"):
        plist(mt.ones(1))
    # a model using it: every parameter gets its gradient
    x = mt.ones(2)
    (plist[2] * x.sum() + plist[0].sum()).sum().backward()
    assert plist[2].grad.tolist() == [2.0] and plist[0].grad.tolist() == [1.0] * 7


def test_parameter_dict():
    pdict = nn.ParameterDict({"z": mt.ones(1), "a": mt.ones(2)})
    assert list(pdict) == ["a", "z"]  # a plain dict is added in sorted key order (PyTorch's)
    pdict.update(OrderedDict([("y", mt.ones(3)), ("b", mt.ones(4))]))
    assert list(pdict.keys()) == ["a", "z", "y", "b"]  # an OrderedDict keeps its order
    pdict.update([("c", None)])
    assert pdict["c"] is None and "c" in pdict and len(pdict) == 5
    assert isinstance(pdict["a"], nn.Parameter)
    assert pdict.get("missing", 5) == 5 and pdict.setdefault("d", mt.ones(1)).shape[0] == 1
    assert pdict.pop("d").shape[0] == 1 and "d" not in pdict
    assert pdict.popitem()[0] == "c"
    assert [k for k, _ in pdict.items()] == list(pdict.keys())
    assert len(list(pdict.values())) == 4
    merged = pdict | nn.ParameterDict(OrderedDict([("q", mt.ones(1))]))
    assert list(merged) == ["a", "z", "y", "b", "q"] and list(pdict.copy()) == list(pdict)
    assert list(pdict.fromkeys(["u", "v"], mt.ones(1))) == ["u", "v"]
    assert list(reversed(pdict)) == ["b", "y", "z", "a"]
    del pdict["z"]
    assert list(pdict.state_dict()) == ["a", "y", "b"]
    with pytest.raises(AttributeError, match="no key 'zz'"):
        pdict["zz"]
    with pytest.raises(TypeError, match="strings"):
        pdict[1] = mt.ones(1)
    with pytest.raises(ValueError, match="pair"):
        pdict.update([("k",)])
    pdict.clear()
    assert len(pdict) == 0 and list(pdict.parameters()) == []


# ----------------------------------------------------------------------------- pad_sequence

@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_gradcheck(backend, batch_first, side):
    seqs = (rand(3, 2), non_contiguous(1, 2), rand(4, 2, seed=1))
    assert gradcheck(lambda *s: pad_sequence(s, batch_first, -1.0, side), seqs)
    out = pad_sequence(seqs, batch_first=batch_first, padding_side=side)
    assert tuple(out.shape) == ((3, 4, 2) if batch_first else (4, 3, 2))
    assert gradgradcheck(lambda a, b: pad_sequence([a, b], batch_first, 0.5, side),
                         (rand(2), rand(3)))


@needs_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("shapes", [[(3,), (1,), (4,)], [(2, 3, 2), (5, 3, 2)], [(0, 2), (2, 2)],
                                    [(0,), (0,)]], ids=str)
def test_pad_sequence_matches_torch(batch_first, side, shapes):
    from torch.nn.utils.rnn import pad_sequence as torch_pad_sequence
    arrays = [np_rand(*s, seed=i) for i, s in enumerate(shapes)]
    same_as_torch(lambda *s: pad_sequence(list(s), batch_first, 2.5, side),
                  lambda *s: torch_pad_sequence(list(s), batch_first, 2.5, side), *arrays)
    ints = [np.arange(n) for n in (3, 1)]
    np.testing.assert_array_equal(
        pad_sequence([mt.tensor(a) for a in ints], batch_first, -1.5, side).numpy(),
        torch_pad_sequence([torch.tensor(a) for a in ints], batch_first, -1.5, side).numpy())


def test_pad_sequence_inputs_and_errors():
    assert tuple(nn.utils.rnn.pad_sequence(mt.ones(2, 3)).shape) == (3, 2)  # rows of a tensor
    assert tuple(pad_sequence((mt.ones(2), mt.ones(1))).shape) == (2, 2)  # a tuple
    assert pad_sequence([mt.ones(2), mt.ones(1, dtype=mt.float64)]).dtype == mt.float32
    with pytest.raises(RuntimeError, match="empty list"):
        pad_sequence([])
    with pytest.raises(RuntimeError, match="trailing dims"):
        pad_sequence([mt.ones(2, 3), mt.ones(2, 2)])
    with pytest.raises(RuntimeError, match="0-d"):
        pad_sequence([mt.tensor(1.0), mt.tensor(2.0)])
    with pytest.raises(RuntimeError, match="padding_side"):
        pad_sequence([mt.ones(2)], padding_side="middle")
    with pytest.raises(TypeError, match="sequences\\[1\\]"):
        pad_sequence([mt.ones(2), [1.0]])
