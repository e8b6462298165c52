"""Tensors on a GPU device, checked on a machine without one: ``tests/gpu_standin.py`` (a
numpy-backed stand-in for CuPy, strict about mixing devices as CuPy is) takes CuPy's place, so
what these tests show is where data goes and what stays equal: ``.to("cuda")``/``.cuda()``/
``.cpu()``, ``device=`` on creation functions, ops reaching the array module of their inputs,
the clear error for inputs on two devices, autograd across a move, ``Module.to``, optimizers,
``save``/``load(map_location=)``, ``minitorch.cuda``, and a Transformer trained on the device
bit-for-bit as on the CPU. The GPU's own kernels (csrc/cuda) are tested in test_cuda_kernels.py,
on a GPU only."""
import numpy as np
import pytest

import minitorch as mt
import minitorch.nn.functional as F
from minitorch import backends, device_arrays, nn

import gpu_standin


@pytest.fixture(autouse=True)
def standin_gpu():
    device_arrays.use_gpu_library(gpu_standin)
    gpu_standin.Device._current[0] = 0
    with backends.using("numpy"):  # the stand-in runs the numpy backend: compare like with like
        yield
    device_arrays.use_gpu_library(None)


def _same(a, b):
    """Equal values, dtype and shape; a and b may be on different devices."""
    a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a, b)


def test_the_standin_is_as_strict_as_cupy():
    x = gpu_standin.asarray(np.ones(3))
    with pytest.raises(TypeError, match="Unsupported type"):
        np.add(x, np.ones(3))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(x)
    with gpu_standin.Device(1):
        y = gpu_standin.asarray(np.ones(3))
    with pytest.raises(ValueError, match="device"):
        np.add(x, y)
    assert isinstance(np.exp(x), gpu_standin.ndarray) and np.exp(x).device.id == 0


def test_tensor_moves_and_reports_its_device():
    x = mt.randn(2, 3)
    g = x.to("cuda")
    assert g.device == mt.device("cuda", 0) and g.device == "cuda:0" and g.is_cuda
    assert not g.is_cpu and g.get_device() == 0 and x.get_device() == -1
    assert "device='cuda:0'" in repr(g)
    assert x.cuda().device == "cuda:0" and x.cuda(1).device == "cuda:1"
    assert x.to(mt.device("cuda:1")).get_device() == 1 and x.to(1).get_device() == 1
    assert g.to("cuda") is g and g.to("cuda:0") is g and x.to("cpu") is x
    back = g.cpu()
    assert back.device == "cpu" and back.data_ptr() != x.data_ptr()
    _same(back, x)
    assert g.to("cuda", mt.float64).dtype is mt.float64
    assert g.sum().item() == pytest.approx(float(x.sum()))
    assert g.tolist() == x.tolist()
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        g.numpy()
    with pytest.raises(TypeError, match="Use Tensor.cpu"):
        np.asarray(g)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        x.to("cuda:2")


def test_creation_functions_make_tensors_on_the_device():
    assert mt.zeros(2, 3, device="cuda").device == "cuda:0"
    assert mt.ones(2, device="cuda:1").device == "cuda:1"
    assert mt.tensor([1, 2], device="cuda").dtype is mt.int64
    assert mt.arange(5, device="cuda").tolist() == [0, 1, 2, 3, 4]
    assert mt.eye(3, device="cuda").is_cuda and mt.full((2,), 7.0, device="cuda").is_cuda
    g = mt.ones(2, 2, device="cuda:1")
    for like in (mt.zeros_like(g), mt.ones_like(g), mt.full_like(g, 3.0), mt.rand_like(g),
                 mt.randn_like(g), g.new_zeros(3), g.new_ones(1), g.new_full((2,), 1.0),
                 g.new_tensor([1.0])):
        assert like.device == "cuda:1"
    assert mt.zeros_like(g, device="cpu").device == "cpu"
    mt.manual_seed(3)
    on_gpu = mt.randn(4, device="cuda")
    mt.manual_seed(3)
    _same(on_gpu, mt.randn(4))  # drawn on the host: the same numbers on either device
    assert mt.as_tensor(g) is g and mt.as_tensor(g, device="cpu").device == "cpu"


def _ops_cases():
    return {
        "add": lambda a, b: a + b,
        "mul_scalar": lambda a, b: a * 2.5 - 1,
        "div_broadcast": lambda a, b: a / (b[:1].abs() + 1),
        "matmul": lambda a, b: a @ b.transpose(-1, -2),
        "softmax": lambda a, b: F.softmax(a, dim=-1),
        "log_softmax": lambda a, b: F.log_softmax(a, dim=-1),
        "layer_norm": lambda a, b: F.layer_norm(a, (a.shape[-1],)),
        "gelu_relu": lambda a, b: F.gelu(a) + F.relu(b),
        "reductions": lambda a, b: a.sum(-1) + a.mean(0).sum() + a.amax(-1),
        "exp_tanh_sqrt": lambda a, b: a.exp() * b.tanh() + (a * a).sqrt(),
        "shape": lambda a, b: mt.cat([a.reshape(-1), b.t().reshape(-1)]).view(2, -1),
        "where": lambda a, b: mt.where(a > 0, a, b) + a.masked_fill(b > 0, 0.0),
        "index": lambda a, b: a[mt.tensor([0, 2, 2], device=a.device)] * b[:3],
    }


@pytest.mark.parametrize("name", sorted(_ops_cases()))
def test_ops_on_the_device_equal_the_cpu(name):
    fn = _ops_cases()[name]
    mt.manual_seed(0)
    a, b = mt.randn(3, 4, requires_grad=True), mt.randn(3, 4, requires_grad=True)
    ga, gb = (t.detach().cuda().requires_grad_() for t in (a, b))
    out, gout = fn(a, b), fn(ga, gb)
    assert gout.device == "cuda:0"
    _same(out, gout)
    out.sum().backward()
    gout.sum().backward()
    assert ga.grad.device == "cuda:0"
    _same(a.grad, ga.grad)
    assert (b.grad is None) == (gb.grad is None)
    if b.grad is not None:
        _same(b.grad, gb.grad)


def test_cross_entropy_and_embedding_on_the_device():
    mt.manual_seed(0)
    table = nn.Embedding(7, 5, padding_idx=0)
    ids = mt.tensor([[1, 0, 3], [6, 6, 2]])
    target = mt.tensor([1, 4, 0, 2, 2, 3])
    loss = F.cross_entropy(table(ids).reshape(-1, 5), target, label_smoothing=0.1)
    loss.backward()
    grad = table.weight.grad
    table.zero_grad()
    table.cuda()
    gloss = F.cross_entropy(table(ids.cuda()).reshape(-1, 5), target.cuda(),
                            label_smoothing=0.1)
    gloss.backward()
    _same(loss, gloss)
    _same(grad, table.weight.grad)


def test_inputs_on_two_devices_raise_naming_both():
    x, g = mt.ones(3), mt.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match="same device.*cuda:0 and cpu"):
        g + x
    with pytest.raises(RuntimeError, match="same device.*cpu and cuda:0"):
        x @ g
    with pytest.raises(RuntimeError, match="same device.*cuda:0 and cuda:1"):
        F.softmax(g, 0) * mt.ones(3, device="cuda:1")
    with pytest.raises(RuntimeError, match="same device"):
        F.layer_norm(g.reshape(1, 3), (3,), weight=mt.ones(3))


def test_cpu_scalars_join_a_device_tensor():
    g = mt.ones(3, device="cuda")
    assert (g + 1).device == "cuda:0" and (2.0 * g).device == "cuda:0"
    assert (g * mt.tensor(3.0)).device == "cuda:0"  # a 0-d CPU tensor, as PyTorch allows
    assert (g * mt.tensor(3.0)).tolist() == [3.0, 3.0, 3.0]


def test_gradients_flow_back_across_a_move():
    x = mt.randn(3, requires_grad=True)
    y = (x.cuda() * 3).exp().sum()
    y.backward()
    assert x.grad.device == "cpu"
    np.testing.assert_allclose(x.grad.numpy(), 3 * np.exp(3 * x.detach().numpy()), rtol=1e-6)
    g = mt.randn(3, device="cuda", requires_grad=True)
    (g.cpu() ** 2).sum().backward()
    assert g.grad.device == "cuda:0"
    _same(g.grad, 2 * g)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.norm = nn.LayerNorm(3)
        self.register_buffer("steps", mt.zeros((), dtype=mt.int64))

    def forward(self, x):
        return self.norm(self.fc(x))


def test_module_moves_in_place_and_trains_as_on_the_cpu():
    def train(device):
        mt.manual_seed(0)
        net = _Net()
        optimizer = mt.optim.AdamW(net.parameters(), lr=0.1)  # made before the move
        weight = net.fc.weight
        net.to(device)
        assert net.fc.weight is weight and weight.device == device
        assert net.steps.device == device and net.steps.dtype is mt.int64
        x = mt.randn(5, 4, device=device)
        for _ in range(3):
            optimizer.zero_grad()
            net(x).square().mean().backward()
            optimizer.step()
        assert all(s.device == device for st in optimizer.state.values() for s in st.values()
                   if isinstance(s, mt.Tensor) and s.ndim)
        return net
    cpu, gpu = train(mt.device("cpu")), train(mt.device("cuda", 0))
    for (name, p), (_, q) in zip(cpu.named_parameters(), gpu.named_parameters()):
        _same(p, q)
    assert gpu.cpu().fc.weight.device == "cpu" and gpu.cuda(1).fc.bias.device == "cuda:1"
    gpu.to("cuda:0", mt.float64)
    assert gpu.fc.weight.dtype is mt.float64 and gpu.fc.weight.device == "cuda:0"


def test_save_writes_host_copies_and_load_maps_to_the_device(tmp_path):
    net = _Net().cuda()
    mt.save(net.state_dict(), tmp_path / "net.safetensors")
    loaded = mt.load(tmp_path / "net.safetensors")
    assert all(t.device == "cpu" for t in loaded.values())
    on_gpu = mt.load(tmp_path / "net.safetensors", map_location="cuda:1")
    assert all(t.device == "cuda:1" for t in on_gpu.values())
    mapped = mt.load(tmp_path / "net.safetensors", map_location={"cpu": "cuda:0"})
    assert all(t.device == "cuda:0" for t in mapped.values())
    for name, t in net.state_dict().items():
        _same(t, loaded[name])
    fresh = _Net().cuda(1)
    fresh.load_state_dict(loaded)
    assert fresh.fc.weight.device == "cuda:1"
    _same(fresh.fc.weight, net.fc.weight)


def test_cuda_module_with_a_device():
    assert mt.cuda.is_available() and mt.cuda.device_count() == 2
    assert mt.cuda.current_device() == 0
    mt.cuda.set_device(1)
    assert mt.cuda.current_device() == 1 and mt.ones(1, device="cuda").device == "cuda:1"
    with mt.cuda.device(0):
        assert mt.ones(1).cuda().device == "cuda:0"
    assert mt.cuda.current_device() == 1
    mt.cuda.synchronize()
    assert mt.cuda.get_device_name(0) == "numpy stand-in GPU"
    with pytest.raises(ValueError, match="Expected a cuda device"):
        mt.cuda.synchronize("cpu")


def test_kernels_go_to_the_gpu_kernels_where_they_have_one():
    calls = []

    class Recording:
        def softmax_forward(self, *args, **kwargs):
            calls.append("softmax_forward")
            return backends.numpy_backend.softmax_forward(*args, **kwargs)
    device_arrays.use_gpu_library(gpu_standin, Recording())
    g = mt.randn(2, 5, device="cuda", requires_grad=True)
    F.softmax(g, -1).sum().backward()  # forward: the GPU kernel; backward: the numpy fallback
    assert calls == ["softmax_forward"] and g.grad.device == "cuda:0"


@pytest.mark.slow
def test_a_transformer_trains_on_the_device_as_on_the_cpu():
    from minitorch.text.model import Seq2SeqTransformer

    def run(device):
        mt.manual_seed(0)
        model = Seq2SeqTransformer(30, 30, d_model=16, nhead=2, num_encoder_layers=1,
                                   num_decoder_layers=1, dim_feedforward=32, dropout=0.1)
        model.to(device)
        optimizer = mt.optim.Adam(model.parameters(), lr=1e-2)
        rng = np.random.default_rng(0)
        src = mt.tensor(rng.integers(4, 30, (3, 5)), device=device)
        tgt = mt.tensor(rng.integers(4, 30, (3, 6)), device=device)
        losses = []
        for _ in range(3):
            logits = model(src, tgt[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 30), tgt[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses, list(model.parameters())
    (cpu_losses, cpu_params), (gpu_losses, gpu_params) = run("cpu"), run("cuda")
    assert cpu_losses == gpu_losses and cpu_losses[-1] < cpu_losses[0]
    assert all(p.device == "cuda:0" for p in gpu_params)
    for p, q in zip(cpu_params, gpu_params):
        _same(p, q)


@pytest.mark.skipif("c" not in backends.available, reason="C extension not built")
def test_the_c_backend_active_changes_nothing_on_the_device():
    """A real GPU run has the C backend active: its CPU-only fast paths (a bias added by the C
    arith kernel, column sums, gradients summed in place) must leave GPU arrays to the device's
    kernels. A model big enough to take them trains as under the numpy backend, bit for bit."""
    from minitorch.text.model import Seq2SeqTransformer

    def run():
        mt.manual_seed(0)
        model = Seq2SeqTransformer(30, 30, d_model=64, nhead=2, num_encoder_layers=1,
                                   num_decoder_layers=1, dim_feedforward=256, dropout=0.0).cuda()
        optimizer = mt.optim.Adam(model.parameters(), lr=1e-2)
        rng = np.random.default_rng(0)
        src = mt.tensor(rng.integers(4, 30, (4, 40)), device="cuda")
        tgt = mt.tensor(rng.integers(4, 30, (4, 41)), device="cuda")
        for _ in range(2):
            loss = F.cross_entropy(model(src, tgt[:, :-1]).reshape(-1, 30), tgt[:, 1:].reshape(-1))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        return loss, list(model.parameters())
    numpy_loss, numpy_params = run()
    with backends.using("c"):
        c_loss, c_params = run()
    _same(numpy_loss, c_loss)
    for p, q in zip(numpy_params, c_params):
        _same(p, q)


def test_decoding_on_the_device_equals_the_cpu():
    from minitorch.text.decoding import beam_search, greedy_decode
    from minitorch.text.model import Seq2SeqTransformer
    mt.manual_seed(1)
    model = Seq2SeqTransformer(20, 20, d_model=16, nhead=2, num_encoder_layers=1,
                               num_decoder_layers=2, dim_feedforward=32, dropout=0.0).eval()
    src = mt.tensor(np.random.default_rng(0).integers(4, 20, (3, 6)))
    pad = src == 5  # some padding, so the memory mask travels too
    cpu = [greedy_decode(model, src, pad, max_len=7, return_logits=True, record_attention=True),
           greedy_decode(model, src, pad, max_len=7, use_cache=False),
           beam_search(model, src, pad, max_len=7, beam_size=3)]
    model.cuda()
    gsrc, gpad = src.cuda(), pad.cuda()
    gpu = [greedy_decode(model, gsrc, gpad, max_len=7, return_logits=True,
                         record_attention=True),
           greedy_decode(model, gsrc, gpad, max_len=7, use_cache=False),
           beam_search(model, gsrc, gpad, max_len=7, beam_size=3)]
    (tokens, logits, attention), (gtokens, glogits, gattention) = cpu[0], gpu[0]
    assert tokens == gtokens and cpu[1:] == gpu[1:]
    np.testing.assert_array_equal(logits, glogits)
    np.testing.assert_array_equal(attention, gattention)


@pytest.mark.slow
def test_translate_example_trains_on_the_device_as_on_the_cpu(tmp_path):
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "examples", "translate.py")
    spec = importlib.util.spec_from_file_location("translate_on_device", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    threads = mt.get_num_threads()
    tiny = ["--n-train", "200", "--n-valid", "4", "--vocab-size", "120", "--d-model", "16",
            "--heads", "2", "--layers", "1", "--ff", "32", "--batch-size", "16", "--max-len",
            "40", "--quiet", "--no-plots", "--max-steps", "4", "--epochs", "1", "--backend",
            "numpy"]
    try:
        cpu = example.main(tiny + ["--out", str(tmp_path / "cpu")])
        gpu = example.main(tiny + ["--device", "cuda", "--out", str(tmp_path / "gpu")])
    finally:
        mt.set_num_threads(threads)
    assert cpu["losses"] == gpu["losses"] and len(gpu["losses"]) == 4
    assert cpu["bleu"] == gpu["bleu"] or (np.isnan(cpu["bleu"]) and np.isnan(gpu["bleu"]))
    resumed = example.main(["--resume", "--max-steps", "1", "--quiet", "--no-plots", "--device",
                            "cuda", "--backend", "numpy", "--out", str(tmp_path / "gpu")])
    assert resumed["step"] == 5


# The op table's rows whose own lambda makes a CPU tensor beside the inputs (a device mix that
# PyTorch refuses too); what they test runs on the device in _ops_cases above or below.
_ROWS_THAT_MAKE_CPU_TENSORS = {"allclose", "prod_with_zeros", "gather", "index_select"}


def _table_rows():
    from test_ops_table import KERNEL_OPS, OPS
    return [(op, i) for op in OPS + KERNEL_OPS if op.name not in _ROWS_THAT_MAKE_CPU_TENSORS
            for i in range(len(op.cases))]


@pytest.mark.parametrize("op,case_index", _table_rows(),
                         ids=[f"{op.name}[{i}]" for op, i in _table_rows()])
def test_every_op_of_the_table_runs_on_the_device_as_on_the_cpu(op, case_index):
    """Values and gradients bit-for-bit (the numpy backend on both sides)."""
    from test_ops_table import _as_tuple, _inputs
    arrays, kwargs = _inputs(op, case_index, np.float64)
    differentiable = op.differentiable and all(a.size for a in arrays if a.dtype.kind == "f")

    def run(device):
        inputs = [mt.tensor(a, device=device).requires_grad_(
            differentiable and a.dtype.kind == "f") for a in arrays]
        outputs = [o for o in _as_tuple(op.fn(*inputs, **kwargs)) if isinstance(o, mt.Tensor)]
        assert all(o.device == device for o in outputs), [o.device for o in outputs]
        summed = [o.sum() for o in outputs if o.requires_grad]
        if summed:
            sum(summed[1:], summed[0]).backward()
        return outputs, [t.grad for t in inputs if t.requires_grad]
    (outputs, grads), (g_outputs, g_grads) = run(mt.device("cpu")), run(mt.device("cuda", 0))
    assert len(outputs) == len(g_outputs) and len(grads) == len(g_grads)
    for a, b in zip(outputs + grads, g_outputs + g_grads):
        assert (a is None) == (b is None)
        if a is not None:
            assert b.device == "cuda:0"
            _same(a, b)


def test_bench_cuda_runs_its_cases_like_with_like():
    """benchmarks/bench_cuda.py --quick on the stand-in: every case runs, checked against its
    reference (the timings mean nothing here; the real table comes from a GPU)."""
    import os
    import sys
    bench_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                             "benchmarks")
    sys.path.insert(0, bench_dir)
    try:
        import bench_cuda
        rows = bench_cuda.main(["--quick", "--rounds", "1", "--no-report"])
    finally:
        sys.path.remove(bench_dir)
    sections = [row[0] for row in rows]
    assert sections.count("GEMM fp32 TFLOP/s") == 3 and "training step ms" in sections
    assert "greedy decoding ms" in sections
    copies = [row for row in rows if row[1].startswith("copy")]
    assert copies and all(row[4] == "1" for row in copies)  # the yardstick against itself
    assert all(row[2] and float(row[2]) > 0 for row in rows)


def test_readme_cuda_example_runs_on_the_device(tmp_path, monkeypatch):
    import pathlib
    import re
    readme = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", readme, flags=re.S)
                 if "minitorch.cuda.is_available()" in b)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(block, "README.md:cuda", "exec"), namespace)
    assert namespace["device"] == "cuda" and namespace["model"].weight.grad.device == "cuda:0"
    assert all(t.device == "cuda:0" for t in namespace["state"].values())


def _model_cases():
    from minitorch.models.bert import BERT
    from minitorch.models.gpt import GPT, GPTConfig
    from minitorch.models.vit import VisionTransformer
    from minitorch.text.rnn_model import Seq2SeqRNN
    from minitorch.vision.captioning import AttentionCaptioner

    def ids(*shape, high=13, seed=0):
        return mt.tensor(np.random.default_rng(seed).integers(4, high, shape))

    def first(out):
        return out[0] if isinstance(out, tuple) else out
    return {  # name: (model, inputs, the output the loss sums)
        "LSTM": (lambda: nn.LSTM(4, 5, num_layers=2, batch_first=True, bidirectional=True),
                 lambda: [mt.randn(2, 3, 4)], first),
        "GRU": (lambda: nn.GRU(4, 5, batch_first=True), lambda: [mt.randn(2, 3, 4)], first),
        "CNN": (lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4),
                                      nn.ReLU(), nn.MaxPool2d(2), nn.AvgPool2d(2),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 2)),
                lambda: [mt.randn(2, 3, 8, 8)], first),
        "GPT": (lambda: GPT(GPTConfig(vocab_size=13, block_size=10, n_layer=2, n_head=2,
                                      n_embd=8)), lambda: [ids(2, 7)], first),
        "BERT": (lambda: BERT(13, 3, d_model=8, nhead=2, num_layers=2, dim_feedforward=12,
                              max_positions=12), lambda: [ids(2, 7)], first),
        "ViT": (lambda: VisionTransformer(image_size=(4, 6), patch_size=2, in_channels=3,
                                          num_classes=5, d_model=8, nhead=2, num_layers=2,
                                          dim_feedforward=16), lambda: [mt.randn(2, 3, 4, 6)],
                first),
        "Seq2SeqRNN": (lambda: Seq2SeqRNN(13, 13, embed_size=6, hidden_size=8),
                       lambda: [ids(2, 5), ids(2, 4, seed=1)], first),
        "captioner": (lambda: AttentionCaptioner(11, image_size=8, embed_size=6, hidden_size=8),
                      lambda: [mt.randn(2, 3, 8, 8), ids(2, 4, high=11)], first),
    }


@pytest.mark.parametrize("name", sorted(_model_cases()))
def test_models_train_on_the_device_as_on_the_cpu(name):
    build, inputs, output = _model_cases()[name]

    def run(device):
        mt.manual_seed(0)
        model = build().to(device)
        loss = output(model(*[x.to(device) for x in inputs()])).sum()
        loss.backward()
        return [loss] + [p.grad for p in model.parameters()]
    for a, b in zip(run("cpu"), run("cuda")):
        assert (a is None) == (b is None)
        if a is not None:
            assert b.device == "cuda:0"
            _same(a, b)


def test_captioning_and_rnn_decoding_on_the_device_equal_the_cpu():
    from minitorch.text.rnn_decoding import decode_with_attention
    from minitorch.text.rnn_model import Seq2SeqRNN
    from minitorch.vision.captioning import AttentionCaptioner
    mt.manual_seed(0)
    captioner = AttentionCaptioner(11, image_size=8, embed_size=6, hidden_size=8).eval()
    rnn = Seq2SeqRNN(13, 13, embed_size=6, hidden_size=8).eval()
    images, src = mt.randn(2, 3, 8, 8), mt.tensor([[5, 6, 7, 3], [8, 9, 3, 0]])
    pad = src == 0
    cpu = (captioner.greedy_decode(images), captioner.beam_search(images, beam_size=2),
           decode_with_attention(rnn, src, pad, max_len=5))
    captioner.cuda()
    rnn.cuda()
    gpu = (captioner.greedy_decode(images.cuda()), captioner.beam_search(images.cuda(), 2),
           decode_with_attention(rnn, src.cuda(), pad.cuda(), max_len=5))
    for ours, theirs in zip(cpu, gpu):
        assert ours[0] == theirs[0]
        for a, b in zip(ours[1], theirs[1]):
            np.testing.assert_array_equal(a, b)


def test_gpt_generates_on_the_device_as_on_the_cpu():
    from minitorch.models.gpt import GPT, GPTConfig
    mt.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=13, block_size=10, n_layer=2, n_head=2, n_embd=8)).eval()
    prompt = mt.tensor([[1, 2], [3, 4]])
    mt.manual_seed(5)
    cpu = model.generate(prompt, 6, do_sample=True, top_k=5)
    model.cuda()
    mt.manual_seed(5)
    gpu = model.generate(prompt.cuda(), 6, do_sample=True, top_k=5)
    assert gpu.device == "cuda:0" and gpu.tolist() == cpu.tolist()
