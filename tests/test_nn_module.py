"""The Module API (registration, traversal, modes, state_dict, dtype casts, repr, deepcopy),
the containers, Parameter, nn.init, and gradient checks of the simple layers as modules."""
import copy
from collections import OrderedDict

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn
from minitorch.autograd import gradcheck


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5, 4, padding_idx=0)
        self.body = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Dropout(0.5))
        self.head = nn.Linear(3, 2, bias=False)
        self.scale = nn.Parameter(mt.ones(1))
        self.register_buffer("steps", mt.zeros(1, dtype=mt.int64))
        self.register_buffer("cache", mt.zeros(2), persistent=False)

    def forward(self, ids):
        return self.head(self.body(self.embed(ids))) * self.scale


def test_registration_and_traversal():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "embed.weight", "body.0.weight", "body.0.bias", "head.weight"]
    assert sum(p.numel() for p in net.parameters()) == 1 + 20 + 12 + 3 + 6
    assert [n for n, _ in net.named_buffers()] == ["steps", "cache"]
    assert [n for n, _ in net.named_children()] == ["embed", "body", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "embed", "body", "body.0", "body.1",
                                                   "body.2", "head"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert isinstance(net.head.weight, nn.Parameter) and net.head.bias is None
    assert net.get_submodule("body.0") is net.body[0]
    net.extra = mt.ones(2)  # a plain tensor attribute is not a parameter
    assert "extra" not in dict(net.named_parameters())


def test_shared_parameter_counted_once():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


def test_assignment_type_errors():
    net = Net()
    with pytest.raises(TypeError, match="head"):
        net.head = 3
    with pytest.raises(TypeError, match="scale"):
        net.scale = mt.ones(1)
    net.scale = None
    assert net.scale is None and "scale" not in dict(net.named_parameters())


def test_train_eval_toggles_dropout():
    mt.manual_seed(0)
    net = Net()
    ids = mt.tensor([[1, 2, 3, 4]])
    assert net.training and net.body[2].training
    net.eval()
    assert not net.body[2].training
    np.testing.assert_array_equal(net(ids).detach().numpy(), net(ids).detach().numpy())
    net.train()
    x = mt.ones(1000)
    assert (net.body[2](x).numpy() == 0).mean() == pytest.approx(0.5, abs=0.06)


def test_zero_grad_and_requires_grad():
    net = Net()
    net(mt.tensor([1, 2])).sum().backward()
    assert net.head.weight.grad is not None
    net.zero_grad(set_to_none=False)
    assert not net.head.weight.grad.numpy().any()
    net.zero_grad()
    assert net.head.weight.grad is None
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_state_dict_round_trip_and_sharing():
    a, b = Net(), Net()
    state = a.state_dict()
    assert list(state) == ["scale", "steps", "embed.weight", "body.0.weight", "body.0.bias",
                           "head.weight"]  # non-persistent "cache" is not saved
    assert not any(t.requires_grad for t in state.values())
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for key, value in b.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), state[key].numpy())
    weight = b.head.weight
    b.load_state_dict(a.state_dict())
    assert b.head.weight is weight  # copied in place: optimizers keep their parameters
    with mt.no_grad():
        a.head.weight._data[0, 0] = 42.0
    assert state["head.weight"].numpy()[0, 0] == 42.0  # state_dict shares memory, as PyTorch


def test_load_state_dict_strict_errors_list_every_problem():
    net = Net()
    state = OrderedDict(net.state_dict())
    del state["head.weight"]
    state["extra.weight"] = mt.ones(2)
    state["body.0.bias"] = mt.ones(7)
    with pytest.raises(RuntimeError) as info:
        Net().load_state_dict(state)
    text = str(info.value)
    assert 'Missing key(s) in state_dict: "head.weight"' in text
    assert 'Unexpected key(s) in state_dict: "extra.weight"' in text
    assert "size mismatch for body.0.bias" in text and "(7,)" in text and "(3,)" in text
    del state["body.0.bias"]
    missing, unexpected = Net().load_state_dict(state, strict=False)
    assert missing == ["body.0.bias", "head.weight"] and unexpected == ["extra.weight"]


def test_load_state_dict_accepts_numpy_and_casts():
    lin = nn.Linear(2, 2)
    lin.load_state_dict({"weight": np.eye(2), "bias": np.array([1.0, 2.0])})
    assert lin.weight.dtype == mt.float32
    np.testing.assert_array_equal(lin.bias.detach().numpy(), [1.0, 2.0])


@pytest.mark.usefixtures("without_gpu")
def test_to_double_and_float():
    net = Net()
    weight = net.head.weight
    net.double()
    assert net.head.weight is weight and weight.dtype == mt.float64
    assert net.steps.dtype == mt.int64  # integer buffers keep their dtype
    assert net.cache.dtype == mt.float64
    assert net(mt.tensor([1])).dtype == mt.float64
    net.to(mt.float32)
    assert weight.dtype == mt.float32
    net.to("cpu", dtype="float64")
    assert weight.dtype == mt.float64
    with pytest.raises(RuntimeError, match="is not available"):
        net.to("cuda")


def test_apply_and_init():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.count("Linear") == 2

    def zero_linears(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)
    net.apply(zero_linears)
    assert not net.head.weight.detach().numpy().any() and net.head.weight.requires_grad


def test_repr_nested_and_parameter_repr():
    text = repr(Net())
    assert text.startswith("Net(\n  (embed): Embedding(5, 4, padding_idx=0)\n  (body): Sequential(")
    assert "    (0): Linear(in_features=4, out_features=3, bias=True)\n" in text
    assert "  (head): Linear(in_features=3, out_features=2, bias=False)\n)" in text
    p = nn.Parameter(mt.tensor([1.0, 2.0]))
    assert repr(p).startswith("Parameter containing:\ntensor([1., 2.]")
    assert "requires_grad=True" in repr(p)


def test_parameter_basics():
    t = mt.tensor([1.0, 2.0])
    p = nn.Parameter(t)
    assert p.requires_grad and p.is_leaf and isinstance(p, mt.Tensor)
    assert p.data_ptr() == t.data_ptr()  # shares memory, as torch.nn.Parameter
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    y = (p * 2).sum()
    y.backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0])
    assert type(p * 2) is mt.Tensor


def test_deepcopy_gives_independent_module():
    net = Net()
    twin = copy.deepcopy(net)
    assert type(twin.head.weight) is nn.Parameter
    np.testing.assert_array_equal(twin.head.weight.detach().numpy(),
                                  net.head.weight.detach().numpy())
    with mt.no_grad():
        twin.head.weight._data[...] = 0
    assert net.head.weight.detach().numpy().any()
    assert list(twin.state_dict()) == list(net.state_dict())


def test_sequential_module_list_module_dict():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    assert len(seq) == 2 and isinstance(seq[-1], nn.Tanh) and isinstance(seq[0:1], nn.Sequential)
    seq.append(nn.Linear(3, 1))
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "Linear"]
    assert tuple(seq(mt.ones(4, 2)).shape) == (4, 1)
    with pytest.raises(IndexError, match="index 5"):
        seq[5]
    named = nn.Sequential(OrderedDict([("a", nn.Linear(1, 1)), ("b", nn.ReLU())]))
    assert list(named.state_dict()) == ["a.weight", "a.bias"]
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.Linear(1, 2))
    assert len(ml) == 4 and list(ml.state_dict())[-1] == "3.bias"
    assert ml[-1].out_features == 2
    md = nn.ModuleDict({"enc": nn.Linear(1, 1)})
    md["dec"] = nn.Linear(1, 1)
    assert "dec" in md and list(md.keys()) == ["enc", "dec"]
    assert list(md.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]


# ----------------------------------------------------------------------------- layers

def test_linear_init_range_and_gradcheck(backend):
    mt.manual_seed(0)
    lin = nn.Linear(16, 8)
    bound = 1 / 4
    assert np.abs(lin.weight.detach().numpy()).max() <= bound
    assert np.abs(lin.bias.detach().numpy()).max() <= bound
    assert lin.weight.detach().numpy().std() > bound / 3
    lin.double()
    x = mt.randn(2, 1, 16, dtype=mt.float64, requires_grad=True)
    lin2 = nn.Linear(3, 2).double()
    assert gradcheck(lambda x, *ps: lin2(x), (mt.randn(2, 3, dtype=mt.float64,
                                                      requires_grad=True),
                                            *lin2.parameters()))
    assert tuple(lin(x).shape) == (2, 1, 8)


def test_embedding_module(backend):
    mt.manual_seed(0)
    emb = nn.Embedding(6, 3, padding_idx=-1)
    assert emb.padding_idx == 5 and not emb.weight.detach().numpy()[5].any()
    emb.double()
    ids = mt.tensor([[5, 1], [2, 5]])
    assert gradcheck(lambda w: emb(ids)[ids != 5], (emb.weight,))
    emb(ids).sum().backward()
    assert not emb.weight.grad.numpy()[5].any()
    with pytest.raises(IndexError, match="index 6 .*num_embeddings=6"):
        emb(mt.tensor([6]))
    big = nn.Embedding(1000, 20)
    assert abs(big.weight.detach().numpy().std() - 1.0) < 0.05


def test_embedding_from_pretrained():
    table = mt.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    emb = nn.Embedding.from_pretrained(table, padding_idx=1, norm_type=2.0, sparse=False)
    assert emb.padding_idx == 1 and not emb.weight.requires_grad
    assert emb(mt.tensor([2, 0])).tolist() == [[5.0, 6.0], [1.0, 2.0]]
    assert nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    with pytest.raises(NotImplementedError, match="max_norm"):
        nn.Embedding.from_pretrained(table, max_norm=1.0)
    with pytest.raises(ValueError, match="2-D"):
        nn.Embedding.from_pretrained(mt.zeros(3))


@pytest.mark.parametrize("affine,bias,shape", [(True, True, 4), (False, True, 4),
                                               (True, False, (3, 4))])
def test_layer_norm_module_gradcheck(backend, affine, bias, shape):
    ln = nn.LayerNorm(shape, elementwise_affine=affine, bias=bias).double()
    with mt.no_grad():
        for p in ln.parameters():
            p._data[...] = np.random.default_rng(0).standard_normal(p.shape)
    x = mt.randn(2, 3, 4, dtype=mt.float64, requires_grad=True)
    assert gradcheck(lambda x, *ps: ln(x), (x, *ln.parameters()))
    assert len(list(ln.parameters())) == (0 if not affine else (2 if bias else 1))


def test_dropout_module_and_activations(backend):
    drop = nn.Dropout(0.5)
    x = mt.randn(3, 4, dtype=mt.float64, requires_grad=True)
    drop.eval()
    assert drop(x) is x
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(-0.1)
    for layer in [nn.ReLU(), nn.GELU(), nn.GELU("tanh"), nn.Tanh(), nn.Sigmoid(),
                  nn.Softmax(dim=-1), nn.LogSoftmax(dim=0), nn.Identity(3, foo=1)]:
        assert gradcheck(layer, (x,)), layer
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")


def test_init_functions():
    mt.manual_seed(0)
    w = mt.empty(300, 200)
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert w.numpy().min() >= -0.5 and w.numpy().max() <= 0.5 and w.numpy().std() > 0.2
    nn.init.constant_(w, 0.25)
    assert (w.numpy() == 0.25).all()
    nn.init.ones_(w)
    assert (w.numpy() == 1).all()
    nn.init.normal_(w, 2.0, 0.5)
    assert w.numpy().mean() == pytest.approx(2.0, abs=0.01)
    nn.init.uniform_(w, -3, -2)
    assert w.numpy().min() >= -3 and w.numpy().max() <= -2
    nn.init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= np.sqrt(6 / 500)
    nn.init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.numpy().std() == pytest.approx(np.sqrt(2 / 300), rel=0.05)
    assert nn.init._calculate_fan_in_and_fan_out(mt.empty(4, 3, 2, 5)) == (30, 40)
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        nn.init.xavier_uniform_(mt.empty(3))
    p = nn.Parameter(mt.zeros(2, 2))
    nn.init.ones_(p)  # in place on a parameter that requires grad: allowed (no_grad inside)
    assert p.requires_grad and p.is_leaf and (p.detach().numpy() == 1).all()


def test_load_state_dict_with_assign_uses_the_given_tensors():
    model = nn.Linear(3, 2)
    model.weight.requires_grad_(False)
    weight, bias = mt.ones(2, 3, dtype=mt.float64), mt.zeros(2, dtype=mt.float64)
    model.load_state_dict({"weight": weight, "bias": bias}, assign=True)
    assert model.weight.dtype == mt.float64 and model.weight.data_ptr() == weight.data_ptr()
    assert isinstance(model.bias, nn.Parameter) and model.bias.requires_grad
    assert not model.weight.requires_grad
    assert [p.dtype for p in model.parameters()] == [mt.float64, mt.float64]


def test_modules_can_keep_duplicates():
    shared = nn.Linear(2, 2)
    model = nn.Sequential(shared, shared)
    assert len(list(model.modules())) == 2
    assert len(list(model.modules(remove_duplicate=False))) == 3
