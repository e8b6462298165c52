"""Devices as PyTorch's, on a CPU-only library: ``minitorch.device`` parsing, printing and
comparison; ``x.device``; ``device=`` on every creation function; ``.to(device, ...)`` in all its
forms, ``.cpu()``/``.cuda()``; ``Module.to``/``cpu``/``half``/``bfloat16``/``cuda``;
``minitorch.cuda`` and the ``backends`` flag modules; and the clear error a CUDA device gives.
Parity tests compare with PyTorch where it is installed (skipped otherwise)."""
import pickle

import numpy as np
import pytest

import minitorch as mt
from minitorch import backends, nn

CPU_FORMS = ["cpu", "cpu:0", mt.device("cpu"), mt.device("cpu", 0), mt.device("cpu:0")]


def _torch():
    return pytest.importorskip("torch", reason="PyTorch not installed: parity test skipped")


# ----------------------------------------------------------------------------- device objects

def test_device_parsing_printing_and_fields_match_torch():
    torch = _torch()
    for args in (("cpu",), ("cpu:0",), ("cpu", 0), ("cuda",), ("cuda:1",), ("cuda", 2),
                 ("mps",), ("meta",)):
        ours, theirs = mt.device(*args), torch.device(*args)
        assert (ours.type, ours.index) == (theirs.type, theirs.index), args
        assert str(ours) == str(theirs) and repr(ours) == repr(theirs), args
        assert mt.device(ours) == ours
    assert mt.device(0) == "cuda:0"  # an int is a CUDA index (torch: its accelerator's)


def test_device_equality_and_hashing():
    cpu = mt.device("cpu")
    assert cpu == mt.device("cpu") and cpu == "cpu" and "cpu" == cpu
    assert mt.device("cpu:0") == "cpu:0" and mt.device("cpu:0") != mt.device("cpu")  # as torch
    assert cpu != "cuda" and cpu != mt.device("cuda") and cpu != 0
    assert len({cpu, mt.device("cpu"), "cpu"}) == 1
    assert pickle.loads(pickle.dumps(mt.device("cuda:1"))) == mt.device("cuda:1")


@pytest.mark.parametrize("args,error,message", [
    (("gpu",), RuntimeError, "Expected one of cpu, cuda"),
    (("cpu:x",), RuntimeError, "Invalid device string"),
    (("cpu:0", 1), RuntimeError, "already holds an index"),
    (("cuda", -1), RuntimeError, "must not be negative"),
    ((1.5,), TypeError, "expected a str, an int or a device"),
])
def test_bad_devices_raise(args, error, message):
    with pytest.raises(error, match=message):
        mt.device(*args)


def test_tensor_device_properties():
    torch = _torch()
    x, t = mt.ones(2), torch.ones(2)
    assert x.device == mt.device("cpu") and x.device == "cpu" and str(x.device) == "cpu"
    assert isinstance(x.device, mt.device)
    assert (x.is_cuda, x.is_cpu, x.get_device()) == (t.is_cuda, t.is_cpu, t.get_device())


# ----------------------------------------------------------------------------- creation

CREATORS = {
    "tensor": lambda d: mt.tensor([1.0], device=d),
    "as_tensor": lambda d: mt.as_tensor([1.0], device=d),
    "zeros": lambda d: mt.zeros(2, device=d),
    "ones": lambda d: mt.ones(2, device=d),
    "empty": lambda d: mt.empty(2, device=d),
    "full": lambda d: mt.full((2,), 3.0, device=d),
    "arange": lambda d: mt.arange(3, device=d),
    "linspace": lambda d: mt.linspace(0, 1, 3, device=d),
    "eye": lambda d: mt.eye(2, device=d),
    "rand": lambda d: mt.rand(2, device=d),
    "randn": lambda d: mt.randn(2, device=d),
    "randint": lambda d: mt.randint(3, (2,), device=d),
    "randperm": lambda d: mt.randperm(3, device=d),
    "zeros_like": lambda d: mt.zeros_like(mt.ones(2), device=d),
    "ones_like": lambda d: mt.ones_like(mt.ones(2), device=d),
    "empty_like": lambda d: mt.empty_like(mt.ones(2), device=d),
    "full_like": lambda d: mt.full_like(mt.ones(2), 2.0, device=d),
    "rand_like": lambda d: mt.rand_like(mt.ones(2), device=d),
    "randn_like": lambda d: mt.randn_like(mt.ones(2), device=d),
    "randint_like": lambda d: mt.randint_like(mt.ones(2), 3, device=d),
    "new_tensor": lambda d: mt.ones(2).new_tensor([1.0], device=d),
    "new_zeros": lambda d: mt.ones(2).new_zeros(2, device=d),
    "new_ones": lambda d: mt.ones(2).new_ones(2, device=d),
    "new_empty": lambda d: mt.ones(2).new_empty(2, device=d),
    "new_full": lambda d: mt.ones(2).new_full((2,), 1.0, device=d),
    "LongTensor": lambda d: mt.LongTensor(2, device=d),
    "Generator": lambda d: mt.Generator(device=d),
}


@pytest.mark.usefixtures("without_gpu")
@pytest.mark.parametrize("name", sorted(CREATORS))
def test_every_creation_function_takes_a_cpu_device_and_refuses_cuda(name):
    for device in CPU_FORMS + [None]:
        made = CREATORS[name](device)
        assert made.device == "cpu"
    for device in ("cuda", "cuda:0", mt.device("cuda", 1), 0, "mps"):
        with pytest.raises(RuntimeError, match="is not (available|supported here)"):
            CREATORS[name](device)


@pytest.mark.usefixtures("without_gpu")
def test_cuda_error_names_the_device_and_the_way_out():
    with pytest.raises(RuntimeError) as info:
        mt.zeros(2, device="cuda:1")
    message = str(info.value)
    assert "zeros" in message and "'cuda:1'" in message and "cuda.is_available() is False" in \
        message and "device='cpu'" in message


def test_creation_signatures_have_device_as_torch():
    import inspect
    torch = _torch()
    for name in ("tensor", "zeros", "ones", "full", "empty", "arange", "rand", "randn", "randint",
                 "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like",
                 "eye", "linspace", "randperm", "as_tensor"):
        assert "device" in inspect.signature(getattr(mt, name)).parameters, name
        assert getattr(torch, name)  # the same names exist in torch


# ----------------------------------------------------------------------------- Tensor.to

@pytest.mark.usefixtures("without_gpu")
def test_to_device_forms():
    x = mt.tensor([1.0, 2.0])
    for device in CPU_FORMS:
        assert x.to(device) is x
        assert x.to(device=device) is x
    assert x.to("cpu", non_blocking=True) is x
    assert x.to("cpu", mt.float64).dtype is mt.float64
    assert x.to("cpu", dtype=mt.int32).dtype is mt.int32
    assert x.to(mt.device("cpu"), mt.float16, True).dtype is mt.float16  # non_blocking=True
    assert x.to(device="cpu", dtype=mt.float64).dtype is mt.float64
    other = mt.zeros(1, dtype=mt.float64)
    assert x.to(other).dtype is mt.float64 and x.to(other, non_blocking=True).dtype is mt.float64
    moved = x.to("cpu", copy=True)
    assert moved is not x and moved.data_ptr() != x.data_ptr()
    assert x.cpu() is x
    for device in ("cuda", mt.device("cuda:0"), 0):
        with pytest.raises(RuntimeError, match="is not available.*cuda.is_available.. is False"):
            x.to(device)
    with pytest.raises(RuntimeError, match="is not available.*cuda.is_available.. is False"):
        x.to("cuda", mt.float64)
    with pytest.raises(RuntimeError, match="is not available.*cuda.is_available.. is False"):
        x.cuda()
    with pytest.raises(TypeError, match="expected a dtype, a device or a tensor"):
        x.to([1])


def test_to_matches_torch_for_the_cpu_forms():
    torch = _torch()
    x, t = mt.tensor([1.5, -2.0]), torch.tensor([1.5, -2.0])
    for args, kwargs in ((("cpu",), {}), (("cpu", mt.float64), {}), ((mt.int32,), {}),
                         ((), {"dtype": mt.float16}), (("cpu",), {"non_blocking": True})):
        theirs_args = tuple(getattr(torch, a.name) if isinstance(a, mt.dtype) else a for a in args)
        theirs_kwargs = {k: getattr(torch, v.name) if isinstance(v, mt.dtype) else v
                         for k, v in kwargs.items()}
        ours, theirs = x.to(*args, **kwargs), t.to(*theirs_args, **theirs_kwargs)
        assert ours.dtype.name == str(theirs.dtype).split(".")[1]
        assert ours.tolist() == theirs.tolist()


def test_to_keeps_the_graph_for_float_casts():
    x = mt.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("cpu", mt.float64)
    (y * y).sum().backward()
    assert x.grad.dtype is mt.float32 and x.grad.tolist() == [2.0, 4.0]


# ----------------------------------------------------------------------------- Module

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
        self.register_buffer("steps", mt.tensor(0))
        self.register_buffer("scale", mt.ones(2))

    def forward(self, x):
        return self.fc(x) * self.scale


@pytest.mark.usefixtures("without_gpu")
def test_module_to_device_and_dtype():
    net = Net()
    weight = net.fc.weight
    for device in CPU_FORMS:
        assert net.to(device) is net and net.cpu() is net
    assert net.to("cpu", non_blocking=True) is net
    net.to("cpu", mt.float64)
    assert weight.dtype is mt.float64 and net.scale.dtype is mt.float64
    assert net.steps.dtype is mt.int64 and net.fc.weight is weight  # same Parameter object
    net.to(mt.zeros(1, dtype=mt.float32))  # to(tensor): its dtype
    assert weight.dtype is mt.float32
    net.half()
    assert weight.dtype is mt.float16 and net(mt.ones(1, 3, dtype=mt.float16)).dtype is mt.float16
    net.bfloat16()
    assert weight.dtype is mt.bfloat16 and net.steps.dtype is mt.int64
    net.float()
    assert weight.dtype is mt.float32
    net.to(dtype=mt.float64)
    net.double().float()
    assert weight.dtype is mt.float32
    with pytest.raises(RuntimeError, match="is not available.*cuda.is_available.. is False"):
        net.to("cuda")
    with pytest.raises(RuntimeError, match="is not available.*cuda.is_available.. is False"):
        net.cuda()
    with pytest.raises(TypeError, match="only accepts floating point"):
        net.to(mt.int32)


def test_module_half_output_is_close_to_float32():
    mt.manual_seed(0)
    net = Net()
    x = mt.randn(4, 3)
    expected = net(x).detach().numpy()
    net.half()
    np.testing.assert_allclose(net(x.half()).detach().float().numpy(), expected, atol=1e-2)


def test_module_gradients_follow_the_cast():
    net = Net()
    net(mt.ones(1, 3)).sum().backward()
    net.double()
    assert net.fc.weight.grad.dtype is mt.float64


# ----------------------------------------------------------------------------- cuda and flags

def test_cuda_availability_matches_torch():
    torch = _torch()
    assert mt.cuda.is_available() == torch.cuda.is_available()
    assert mt.cuda.device_count() == torch.cuda.device_count()


@pytest.mark.usefixtures("without_gpu")
def test_cuda_module():
    assert mt.cuda.is_available() is False and mt.cuda.device_count() == 0
    assert mt.cuda.manual_seed(0) is None and mt.cuda.manual_seed_all(0) is None
    assert mt.cuda.empty_cache() is None and not mt.cuda.is_initialized()
    for fn in (mt.cuda.current_device, mt.cuda.synchronize, mt.cuda.get_device_name):
        with pytest.raises(RuntimeError, match="CUDA is not available"):
            fn()


def test_device_choosing_idiom_runs():
    device = "cuda" if mt.cuda.is_available() else (
        "mps" if mt.backends.mps.is_available() else "cpu")
    model = nn.Linear(2, 2).to(device)
    x = mt.ones(1, 2, device=device)
    assert model(x).device.type == mt.device(device).type == device


def test_backend_flags_are_settable_with_torch_defaults():
    torch = _torch()
    cudnn, cuda_flags = mt.backends.cudnn, mt.backends.cuda
    for name in ("enabled", "benchmark", "deterministic", "allow_tf32"):
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert cuda_flags.matmul.allow_tf32 == torch.backends.cuda.matmul.allow_tf32
    saved = cudnn.benchmark, cudnn.deterministic, cuda_flags.matmul.allow_tf32
    try:
        cudnn.benchmark, cudnn.deterministic = True, True
        cuda_flags.matmul.allow_tf32 = True
        assert mt.backends.cudnn.benchmark and mt.backends.cuda.matmul.allow_tf32
        assert (mt.ones(2, 2) @ mt.ones(2, 2)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    finally:
        cudnn.benchmark, cudnn.deterministic, cuda_flags.matmul.allow_tf32 = saved
    assert not cudnn.is_available() and cudnn.version() is None
    assert not cuda_flags.is_built() and not mt.backends.mps.is_built()


def test_backend_dispatch_still_works():
    assert backends.backend() in backends.available
    for name in sorted(backends.available):
        with backends.using(name):
            assert backends.backend() == name
            out = backends.current().matmul(np.ones((2, 2), np.float32), np.ones((2, 2),
                                                                                 np.float32))
            assert out.dtype == np.float32 and out.tolist() == [[2, 2], [2, 2]]
    assert backends.get_num_threads() >= 1
