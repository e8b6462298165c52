"""Module hooks (``nn/module.py``'s ``__call__`` and ``register_*_hook``, ``nn/hooks.py``):
forward pre-hooks, forward hooks (``prepend``, ``with_kwargs``, ``always_call``), full backward
hooks and backward pre-hooks: the order they run in, what they receive, how their results
replace inputs, outputs and gradients, and removal through the handle. Each scenario is written
once against a library namespace and, where PyTorch is installed, its log is compared with the
same scenario run on PyTorch.
"""
import warnings

import numpy as np
import pytest

import minitorch as mt
import minitorch.nn as nn

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch not installed")


class Lib:
    """What a scenario needs from a library: ``nn``, ``tensor`` and ``ones``."""

    def __init__(self, module):
        self.nn = module.nn
        self.tensor = module.tensor
        self.ones = module.ones
        self.float64 = module.float64


LIBS = [Lib(mt)] + ([Lib(torch)] if torch is not None else [])


def describe(value):
    """A library-neutral record of a hook's argument: tensors' values, plain values, or the
    type of anything else."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(describe(v) for v in value)
    if isinstance(value, dict):
        return {k: describe(v) for k, v in sorted(value.items())}
    if hasattr(value, "detach"):
        return np.round(value.detach().numpy().astype(np.float64), 10).tolist()
    return type(value).__name__


class Scale(object):
    """A module factory: y = x * w + bias_kw, with an optional keyword argument."""

    @staticmethod
    def make(lib):
        class ScaleModule(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.w = lib.nn.Parameter(lib.tensor([2.0, 3.0], dtype=lib.float64))

            def forward(self, x, shift=0.0):
                return x * self.w + shift
        return ScaleModule()


def x_of(lib, requires_grad=True):
    return lib.tensor([1.0, -1.0], dtype=lib.float64, requires_grad=requires_grad)


# ----------------------------------------------------------------------------- scenarios

def forward_hooks_order_and_replacement(lib):
    log = []
    m = Scale.make(lib)
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre A", describe(args))))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 10,))  # replaces the input
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre first", describe(args))),
                                prepend=True)
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # a non-tuple is wrapped
    m.register_forward_hook(lambda mod, args, out: log.append(("hook A", describe(args),
                                                               describe(out))))
    m.register_forward_hook(lambda mod, args, out: out * 0.5)  # replaces the output
    m.register_forward_hook(lambda mod, args, out: log.append(("hook first", describe(out))),
                            prepend=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("hook last", describe(out))))
    out = m(x_of(lib))
    log.append(("result", describe(out)))
    return log


def kwargs_hooks(lib):
    log = []
    m = Scale.make(lib)

    def pre(mod, args, kwargs):
        log.append(("pre", describe(args), describe(kwargs)))
        return (args[0] * 2,), {"shift": kwargs.get("shift", 0.0) + 1.0}

    m.register_forward_pre_hook(pre, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, kwargs, out: log.append(
        ("hook", describe(args), describe(kwargs), describe(out))), with_kwargs=True)
    log.append(("result", describe(m(x_of(lib), shift=lib.tensor(0.5, dtype=lib.float64)))))
    log.append(("no kwargs", describe(m(x_of(lib)))))
    return log


def bad_kwargs_pre_hook(lib):
    m = Scale.make(lib)
    m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple"):
        m(x_of(lib), shift=1.0)
    return []


def removal(lib):
    log = []
    m = Scale.make(lib)
    h1 = m.register_forward_hook(lambda *a: log.append("one"), with_kwargs=False)
    h2 = m.register_forward_hook(lambda mod, a, k, o: log.append("two"), with_kwargs=True,
                                 always_call=True)
    h3 = m.register_forward_pre_hook(lambda *a: log.append("pre"))
    m(x_of(lib))
    h1.remove()
    h1.remove()  # twice: harmless
    m(x_of(lib))
    h2.remove()
    h3.remove()
    m(x_of(lib))
    log.append(("dicts", len(m._forward_hooks), len(m._forward_hooks_with_kwargs),
                len(m._forward_hooks_always_called), len(m._forward_pre_hooks)))
    with m.register_forward_hook(lambda *a: log.append("scoped")):
        m(x_of(lib))
    m(x_of(lib))
    log.append(("ids differ", h1.id != h2.id != h3.id))
    return log


def always_call_on_error(lib):
    log = []

    class Failing(lib.nn.Module):
        def forward(self, x):
            raise ValueError("forward failed")

    m = Failing()
    m.register_forward_hook(lambda mod, args, out: log.append(("plain", describe(out))))
    m.register_forward_hook(lambda mod, args, out: log.append(("always", describe(out))),
                            always_call=True)

    def broken(mod, args, out):
        raise KeyError("hook failed too")

    m.register_forward_hook(broken, always_call=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="forward failed"):
            m(x_of(lib))
    log.append(("warned", any("always_call=True" in str(w.message) for w in caught)))
    return log


def nested_modules(lib):
    log = []
    seq = lib.nn.Sequential(lib.nn.Identity(), lib.nn.Sequential(lib.nn.Identity()))
    for name, module in seq.named_modules():
        module.register_forward_pre_hook(lambda mod, args, name=name: log.append(("pre", name)))
        module.register_forward_hook(lambda mod, args, out, name=name: log.append(("post", name)))
    seq(x_of(lib))
    return log


def backward_hooks(lib):
    log = []
    m = Scale.make(lib)
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", describe(go))))
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 2,))  # replaces grad_output
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", describe(gi),
                                                                  describe(go))))
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] + 100,))  # replaces grad_input
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("after", describe(gi))))
    x = x_of(lib)
    out = m(x)
    (out * lib.tensor([1.0, 10.0], dtype=lib.float64)).sum().backward()
    log.append(("x.grad", describe(x.grad)))
    log.append(("w.grad", describe(m.w.grad)))  # from the replaced grad_output, not grad_input
    return log


def backward_hooks_several_inputs_and_outputs(lib):
    log = []

    class Pair(lib.nn.Module):
        def forward(self, a, flag, b):
            return a * b, a + b, "not a tensor"

    m = Pair()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", describe(gi),
                                                                  describe(go))))
    a = x_of(lib)
    b = lib.tensor([3.0, 4.0], dtype=lib.float64)  # needs no gradient: zeros in grad_input
    prod, total, text = m(a, "flag", b)
    log.append(("text", text))
    (prod.sum() + 2 * total.sum()).backward()
    log.append(("a.grad", describe(a.grad)))
    return log


def backward_hook_without_input_grads(lib):
    log = []
    m = Scale.make(lib)
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", describe(gi),
                                                                  describe(go))))
    with pytest.warns(UserWarning, match="no inputs require gradients"):
        m(x_of(lib, requires_grad=False)).sum().backward()
    log.append(("w.grad", describe(m.w.grad)))
    return log


def backward_hook_wrong_count(lib):
    m = Scale.make(lib)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    out = m(x_of(lib))
    with pytest.raises(RuntimeError, match="invalid number of grad_input"):
        out.sum().backward()
    m2 = Scale.make(lib)
    m2.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
    out = m2(x_of(lib))
    with pytest.raises(RuntimeError, match="invalid number of grad_output"):
        out.sum().backward()
    return []


def backward_hook_removed(lib):
    log = []
    m = Scale.make(lib)
    handle = m.register_full_backward_hook(lambda mod, gi, go: log.append("hook"))
    m(x_of(lib)).sum().backward()
    handle.remove()
    m(x_of(lib)).sum().backward()
    log.append(len(m._backward_hooks))
    return log


SCENARIOS = [forward_hooks_order_and_replacement, kwargs_hooks, bad_kwargs_pre_hook, removal,
             always_call_on_error, nested_modules, backward_hooks,
             backward_hooks_several_inputs_and_outputs, backward_hook_without_input_grads,
             backward_hook_wrong_count, backward_hook_removed]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_hooks(backend, scenario):
    log = scenario(LIBS[0])
    assert log == EXPECTED[scenario.__name__]


@needs_torch
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
def test_hooks_match_torch(scenario):
    assert scenario(Lib(mt)) == scenario(Lib(torch))


# What minitorch must log, written out (and equal to PyTorch's log where PyTorch is installed),
# so the test means something without PyTorch too.
EXPECTED = {
    "forward_hooks_order_and_replacement": [
        ("pre first", ([1.0, -1.0],)), ("pre A", ([1.0, -1.0],)),
        ("hook first", [22.0, -27.0]), ("hook A", ([11.0, -9.0],), [22.0, -27.0]),
        ("hook last", [11.0, -13.5]), ("result", [11.0, -13.5])],
    "kwargs_hooks": [
        ("pre", ([1.0, -1.0],), {"shift": 0.5}),
        ("hook", ([2.0, -2.0],), {"shift": 1.5}, [5.5, -4.5]), ("result", [5.5, -4.5]),
        ("pre", ([1.0, -1.0],), {}), ("hook", ([2.0, -2.0],), {"shift": 1.0}, [5.0, -5.0]),
        ("no kwargs", [5.0, -5.0])],
    "bad_kwargs_pre_hook": [],
    "removal": ["pre", "one", "two", "pre", "two", ("dicts", 0, 0, 0, 0), "scoped",
                ("ids differ", True)],
    "always_call_on_error": [("always", None), ("warned", True)],
    "nested_modules": [("pre", ""), ("pre", "0"), ("post", "0"), ("pre", "1"), ("pre", "1.0"),
                       ("post", "1.0"), ("post", "1"), ("post", "")],
    "backward_hooks": [
        ("pre", ([1.0, 10.0],)), ("hook", ([4.0, 60.0],), ([2.0, 20.0],)),
        ("after", ([104.0, 160.0],)), ("x.grad", [104.0, 160.0]), ("w.grad", [2.0, -20.0])],
    "backward_hooks_several_inputs_and_outputs": [
        ("text", "not a tensor"),
        ("hook", ([5.0, 6.0], None, [0.0, 0.0]), ([1.0, 1.0], [2.0, 2.0], None)),
        ("a.grad", [5.0, 6.0])],
    "backward_hook_without_input_grads": [("hook", (None,), ([1.0, 1.0],)),
                                          ("w.grad", [1.0, -1.0])],
    "backward_hook_wrong_count": [],
    "backward_hook_removed": ["hook", 0],
}


# ----------------------------------------------------------------------------- minitorch only

def test_call_without_hooks_is_forward():
    m = nn.Identity()
    x = mt.ones(2)
    assert m(x) is x
    assert not (m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)


def test_backward_hook_gradients_flow_through_a_model(backend):
    # hooks on an inner layer leave the model's gradients as they were (unless they replace)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = mt.randn(5, 3, dtype=mt.float64, requires_grad=True)
    model(x).sum().backward()
    expected = [p.grad.numpy().copy() for p in model.parameters()] + [x.grad.numpy().copy()]
    model.zero_grad()
    x.grad = None
    seen = []
    model[1].register_full_backward_hook(lambda mod, gi, go: seen.append(
        (tuple(gi[0].shape), tuple(go[0].shape))))
    model[0].register_forward_hook(lambda mod, args, out: seen.append("forward"))
    model(x).sum().backward()
    got = [p.grad.numpy() for p in model.parameters()] + [x.grad.numpy()]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    assert seen == ["forward", ((5, 4), (5, 4))]


def test_hooked_input_cannot_be_changed_in_place(backend):
    # With backward hooks the module sees a view of its input made by a Function; changing it
    # in place is refused, as in PyTorch ("Output 0 of BackwardHookFunction is a view and is
    # being modified inplace"), rather than giving the hooks wrong gradients.
    class InPlace(nn.Module):
        def forward(self, x):
            return x.mul_(2.0)

    m = InPlace()
    m.register_full_backward_hook(lambda *args: None)
    with pytest.raises(RuntimeError, match="in-place"):
        m(mt.ones(2, requires_grad=True) * 1.0)
    assert InPlace()(mt.ones(2, requires_grad=True) * 1.0).tolist() == [2.0, 2.0]  # unhooked
