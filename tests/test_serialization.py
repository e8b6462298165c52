"""Tests of minitorch.save / minitorch.load: exact round trips of nested checkpoints, the
safetensors byte layout, atomic writes, rejection of truncated or corrupted files, and
interoperability with the safetensors library."""
import json
import math
import os
import struct

import numpy as np
import pytest

import minitorch
from minitorch import optim, serialization


def read_layout(path):
    """(header dict, data bytes) of a safetensors file, parsed by hand."""
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    return json.loads(raw[8:8 + length]), raw[8 + length:]


def write_raw(path, header, data=b""):
    header_bytes = json.dumps(header).encode() if isinstance(header, dict) else header
    path.write_bytes(struct.pack("<Q", len(header_bytes)) + header_bytes + data)


def sample_checkpoint():
    rng = np.random.default_rng(0)
    w = minitorch.tensor(rng.standard_normal((3, 4)).astype(np.float32), requires_grad=True)
    b = minitorch.tensor(rng.standard_normal(4))
    w.grad = minitorch.ones(3, 4)
    b.grad = minitorch.ones(4, dtype=minitorch.float64)
    opt = optim.Adam([w, b.requires_grad_()], lr=0.01, amsgrad=True)
    opt.step()
    return {
        "model": {"fc.weight": w, "fc.bias": b, "steps": minitorch.tensor([1, 2, 3]),
                  "mask": minitorch.tensor([True, False]), "scalar": minitorch.tensor(2.5),
                  "empty": minitorch.zeros(0, 3)},
        "optimizer": opt.state_dict(),
        "epoch": 3, "loss": 0.125, "best": math.inf, "name": "run-1", "done": False,
        "note": None, "history": [1.5, 2, "x", None, True], "shape": (2, (3, 4)),
        7: "int key", -1: {"nested": []}, "unicode ✓": "ü",
    }


def assert_same(a, b, where="obj"):
    assert type(a) is type(b), f"{where}: {type(a)} != {type(b)}"
    if isinstance(a, minitorch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        assert a._data.tobytes() == b._data.tobytes(), f"{where}: bytes differ"
        assert a.requires_grad == b.requires_grad, where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same(a[key], b[key], f"{where}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for index, (x, y) in enumerate(zip(a, b)):
            assert_same(x, y, f"{where}[{index}]")
    elif isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), where
    else:
        assert a == b, where


def test_round_trip_is_exact(tmp_path):
    checkpoint = sample_checkpoint()
    checkpoint["nan"] = math.nan
    minitorch.save(checkpoint, tmp_path / "ckpt.safetensors")
    loaded = minitorch.load(tmp_path / "ckpt.safetensors")
    assert_same(checkpoint, loaded)
    assert sorted(loaded["optimizer"]["state"]) == [0, 1]
    assert loaded["optimizer"]["param_groups"][0]["betas"] == (0.9, 0.999)


def test_loaded_tensors_are_fresh_leaves_independent_of_the_file(tmp_path):
    w = minitorch.tensor([1.0, 2.0], requires_grad=True)
    minitorch.save({"w": w, "same": w}, tmp_path / "a")
    loaded = minitorch.load(tmp_path / "a")
    assert loaded["w"] is loaded["same"]  # a tensor saved twice is stored once
    assert loaded["w"].is_leaf and loaded["w"].grad is None
    assert loaded["w"]._data.flags.writeable and loaded["w"]._data.flags.owndata
    os.remove(tmp_path / "a")
    loaded["w"]._data[0] = 5.0
    assert w._data[0] == 1.0


def test_non_contiguous_and_scalar_tensors(tmp_path):
    base = minitorch.arange(12, dtype=minitorch.float64).reshape(3, 4)
    obj = {"t": base.transpose(0, 1), "s": base[1:, ::2], "scalar": minitorch.tensor(7)}
    minitorch.save(obj, tmp_path / "b")
    loaded = minitorch.load(tmp_path / "b")
    np.testing.assert_array_equal(loaded["t"].numpy(), base.numpy().T)
    np.testing.assert_array_equal(loaded["s"].numpy(), base.numpy()[1:, ::2])
    assert loaded["scalar"].shape == () and loaded["scalar"].item() == 7


def test_file_is_the_safetensors_layout(tmp_path):
    minitorch.save({"a": {"b": minitorch.tensor([1.0, 2.0])}, "c": minitorch.tensor([[3]]),
                    "n": 4}, tmp_path / "f")
    header, data = read_layout(tmp_path / "f")
    assert header["a.b"] == {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    assert header["c"] == {"dtype": "I64", "shape": [1, 1], "data_offsets": [8, 16]}
    assert data == np.array([1.0, 2.0], "<f4").tobytes() + np.array([3], "<i8").tobytes()
    metadata = header["__metadata__"]
    assert list(metadata) == ["format", serialization.STRUCTURE_KEY]
    assert metadata["format"] == "pt"  # what other safetensors readers look for
    assert json.loads(metadata[serialization.STRUCTURE_KEY])["root"]["dict"][2] == ["n", 4]
    assert (8 + len(json.dumps(header, separators=(",", ":")).encode())) <= \
        len((tmp_path / "f").read_bytes()) - len(data)
    assert (len((tmp_path / "f").read_bytes()) - len(data)) % 8 == 0  # data starts aligned


def test_colliding_and_reserved_names_get_distinct_tensors(tmp_path):
    obj = {"a.b": minitorch.tensor([1.0]), "a": {"b": minitorch.tensor([2.0])},
           "__metadata__": minitorch.tensor([3.0])}
    minitorch.save(obj, tmp_path / "c")
    assert_same(obj, minitorch.load(tmp_path / "c"))


def test_file_objects(tmp_path):
    import io
    buffer = io.BytesIO()
    minitorch.save([minitorch.tensor([1.5]), "x"], buffer)
    buffer.seek(0)
    loaded = minitorch.load(buffer)
    assert loaded[1] == "x" and loaded[0].item() == 1.5


def test_unsupported_objects_raise_type_error_naming_the_place(tmp_path):
    target = tmp_path / "never"
    with pytest.raises(TypeError, match=r"obj\['model'\]\['w'\]\[1\] of type ndarray"):
        minitorch.save({"model": {"w": [1, np.zeros(2)]}}, target)
    with pytest.raises(TypeError, match=r"obj\['a'\] has a key \(1, 2\) of type tuple"):
        minitorch.save({"a": {(1, 2): 3}}, target)
    with pytest.raises(TypeError, match="of type set"):
        minitorch.save({1, 2}, target)
    with pytest.raises(TypeError, match="f must be a path"):
        minitorch.save({}, 42)
    assert list(tmp_path.iterdir()) == []


def nested(depth, leaf):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def test_cycles_and_too_deep_structures_raise_value_error(tmp_path):
    target = tmp_path / "never"
    loop = [1]
    loop.append(loop)
    with pytest.raises(ValueError, match=r"obj\['a'\]\[1\] is a list that contains itself"):
        minitorch.save({"a": loop}, target)
    cyclic_dict = {"x": minitorch.ones(1)}
    cyclic_dict["self"] = {"up": cyclic_dict}
    with pytest.raises(ValueError, match="contains itself"):
        minitorch.save(cyclic_dict, target)
    limit = serialization.MAX_NESTING
    for depth in (limit + 1, 500, 5000):  # 5000 is past Python's recursion limit
        with pytest.raises(ValueError, match=f"nested more than {limit} containers"):
            minitorch.save(nested(depth, minitorch.ones(1)), target)
    assert list(tmp_path.iterdir()) == []
    # shared (not cyclic) containers and the deepest allowed nesting are fine
    shared = [1, 2]
    minitorch.save({"a": shared, "b": (shared, shared)}, target)
    assert minitorch.load(target) == {"a": [1, 2], "b": ([1, 2], [1, 2])}
    for leaf in (minitorch.ones(1), math.inf, "x"):
        minitorch.save(nested(limit, leaf), target)
        assert_same(minitorch.load(target), nested(limit, leaf))


def test_numpy_scalars_are_saved_as_python_numbers(tmp_path):
    minitorch.save({"i": np.int64(3), "f": np.float32(0.5), "b": np.bool_(True)},
                   tmp_path / "n")
    loaded = minitorch.load(tmp_path / "n")
    assert loaded == {"i": 3, "f": 0.5, "b": True} and type(loaded["i"]) is int


# ------------------------------------------------------------------ atomic writes
class ExplodingOnBytes(Exception):
    pass


def test_failed_write_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    minitorch.save({"v": minitorch.tensor([1.0, 2.0])}, path)
    before = path.read_bytes()

    calls = []
    real = serialization._array_bytes

    def fail_on_second_tensor(array):
        calls.append(1)
        if len(calls) == 2:  # after the header and the first tensor reached the temp file
            raise ExplodingOnBytes("disk on fire")
        return real(array)

    monkeypatch.setattr(serialization, "_array_bytes", fail_on_second_tensor)
    with pytest.raises(ExplodingOnBytes):
        minitorch.save({"a": minitorch.ones(1000), "b": minitorch.ones(5)}, path)
    assert len(calls) == 2
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_failure_before_writing_and_in_fsync_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    minitorch.save({"v": minitorch.tensor([1.0])}, path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        minitorch.save({"v": minitorch.tensor([2.0]), "bad": object()}, path)

    def broken_fsync(fd):
        raise OSError("fsync failed")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="fsync failed"):
        minitorch.save({"v": minitorch.tensor([3.0])}, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


def test_save_replaces_an_existing_file(tmp_path):
    path = tmp_path / "ckpt"
    minitorch.save({"v": minitorch.tensor([1.0])}, path)
    minitorch.save({"v": minitorch.tensor([2.0, 3.0])}, str(path))
    assert minitorch.load(str(path))["v"].tolist() == [2.0, 3.0]
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]


# ------------------------------------------------------------------ corrupted files
def test_truncation_at_every_byte_raises_value_error(tmp_path):
    path = tmp_path / "small"
    minitorch.save({"w": minitorch.tensor([[1.0, 2.0]]), "i": minitorch.tensor([7]),
                    "m": minitorch.tensor([True]), "e": 1}, path)
    raw = path.read_bytes()
    assert minitorch.load(path)["e"] == 1
    cut = tmp_path / "cut"
    for length in range(len(raw)):
        cut.write_bytes(raw[:length])
        with pytest.raises(ValueError):
            minitorch.load(cut)
            pytest.fail(f"a file cut at byte {length} of {len(raw)} loaded")


def test_trailing_bytes_are_rejected(tmp_path):
    path = tmp_path / "t"
    minitorch.save({"w": minitorch.tensor([1.0])}, path)
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(ValueError, match="trailing bytes"):
        minitorch.load(path)


F32_2 = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}


@pytest.mark.parametrize("header, data, message", [
    (b"{not json", b"", "not valid UTF-8 JSON"),
    (b"\xff\xfe{}", b"", "not valid UTF-8 JSON"),
    (b"[1, 2]", b"", "must be a JSON object, got list"),
    ({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}}, bytes(2),
     "tensor 'w': dtype 'F8_E4M3' is not supported"),
    ({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}}, bytes(8),
     r"tensor 'w': shape must be a list of non-negative ints, got \[2, -1\]"),
    ({"w": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}, bytes(8),
     "shape must be a list of non-negative ints"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8),
     r"span 8 bytes but shape \[3\] of F32 needs 12"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, bytes(8),
     "end before they begin"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8, 9]}}, bytes(8),
     "data_offsets must be"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12),
     "tensor 'w' starts at byte 4 .* expected 0: it leaves a gap"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, bytes(4),
     "tensor 'w' ends at byte 8 but the data section has 4 bytes"),
    ({"w": F32_2, "v": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12),
     "tensor 'v' starts at byte 4 .* expected 8: it overlaps"),
    ({"w": F32_2, "v": F32_2}, bytes(8), "overlaps"),
    ({"w": {"dtype": "F32", "shape": [2]}}, bytes(8), r"lacks \['data_offsets'\]"),
    ({"w": [1, 2]}, b"", "header entry must be an object"),
    ({"w": F32_2, "__metadata__": {"k": 1}}, bytes(8), "must map strings to strings"),
    ({"m": {"dtype": "BOOL", "shape": [2], "data_offsets": [0, 2]}}, b"\x01\x07",
     "BOOL tensor 'm' holds bytes other than 0 and 1"),
    ({"w": F32_2, "__metadata__": {serialization.STRUCTURE_KEY: "{oops"}}, bytes(8),
     "is not valid JSON"),
    ({"w": F32_2, "__metadata__": {serialization.STRUCTURE_KEY: json.dumps(
        {"version": 1, "root": {"tensor": "missing"}})}}, bytes(8),
     "refers to tensor 'missing'"),
    ({"__metadata__": {serialization.STRUCTURE_KEY: json.dumps(
        {"version": 1, "root": {"set": [1]}})}}, b"", "malformed node"),
    ({"__metadata__": {serialization.STRUCTURE_KEY: json.dumps(
        {"version": 99, "root": 1})}}, b"", "version 99 is not supported"),
    (b"[" * 100000 + b"]" * 100000, b"", "not valid UTF-8 JSON"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_corrupted_headers_raise_value_error(tmp_path, header, data, message):
    path = tmp_path / "bad"
    write_raw(path, header, data)
    with pytest.raises(ValueError, match=message):
        minitorch.load(path)


def test_header_length_beyond_the_file_or_huge(tmp_path):
    path = tmp_path / "bad"
    path.write_bytes(struct.pack("<Q", 50) + b"{}")
    with pytest.raises(ValueError, match="header length 50 goes past the end"):
        minitorch.load(path)
    path.write_bytes(struct.pack("<Q", 2 ** 63) + b"{}")
    with pytest.raises(ValueError, match="exceeds the limit"):
        minitorch.load(path)
    path.write_bytes(b"\x01\x02")
    with pytest.raises(ValueError, match="2 bytes long, too short"):
        minitorch.load(path)


def test_foreign_file_without_structure_loads_flat(tmp_path):
    path = tmp_path / "flat"
    data = np.array([1.0, 2.0], "<f8").tobytes() + np.array([5], "<i8").tobytes()
    write_raw(path, {"b": {"dtype": "I64", "shape": [], "data_offsets": [16, 24]},
                     "a": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}, data)
    loaded = minitorch.load(path)
    assert list(loaded) == ["b", "a"]
    assert loaded["a"].dtype == minitorch.float64 and loaded["a"].tolist() == [1.0, 2.0]
    assert loaded["b"].shape == () and loaded["b"].item() == 5


# ------------------------------------------------------------------ safetensors interop
def test_safetensors_library_files_load(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="safetensors not installed")
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3),
              "d": np.array([1.5, -2.5]), "i": np.array([[3, 4]], dtype=np.int64),
              "m": np.array([True, False, True]), "e": np.zeros((0, 2), np.float32)}
    st.save_file(arrays, str(tmp_path / "st.safetensors"), metadata={"who": "safetensors"})
    loaded = minitorch.load(tmp_path / "st.safetensors")
    assert sorted(loaded) == sorted(arrays)
    for name, array in arrays.items():
        assert loaded[name].numpy().dtype == array.dtype
        np.testing.assert_array_equal(loaded[name].numpy(), array)


def test_minitorch_files_load_in_safetensors(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="safetensors not installed")
    tensors = {"layer.weight": minitorch.randn(4, 3), "layer.bias": minitorch.zeros(3),
               "ids": minitorch.tensor([[1, 2, 3]]), "flag": minitorch.tensor(True),
               "x64": minitorch.randn(2, dtype=minitorch.float64)}
    minitorch.save(tensors, tmp_path / "mt.safetensors")
    loaded = st.load_file(str(tmp_path / "mt.safetensors"))
    assert sorted(loaded) == sorted(tensors)
    for name, tensor in tensors.items():
        assert loaded[name].dtype == tensor.numpy().dtype
        np.testing.assert_array_equal(loaded[name], tensor.numpy())
    # nested checkpoints are valid safetensors files too (dotted names, structure in metadata)
    minitorch.save(sample_checkpoint(), tmp_path / "ckpt.safetensors")
    assert "optimizer.state.0.exp_avg" in st.load_file(str(tmp_path / "ckpt.safetensors"))


# ------------------------------------------------------------------ every dtype
ALL_DTYPES = {"F32": minitorch.float32, "F64": minitorch.float64, "F16": minitorch.float16,
              "BF16": minitorch.bfloat16, "I64": minitorch.int64, "I32": minitorch.int32,
              "I16": minitorch.int16, "I8": minitorch.int8, "U8": minitorch.uint8,
              "BOOL": minitorch.bool}


def dtype_sample(dtype):
    """A (2, 3) tensor of ``dtype`` holding values exact in it, and a 0-d and an empty one."""
    values = [[0, 1, 2], [3, 125, 7]] if dtype is not minitorch.bool else [[0, 1, 1], [1, 0, 0]]
    return minitorch.tensor(values, dtype=dtype)


def test_every_dtype_round_trips_as_itself(tmp_path):
    tensors = {name: dtype_sample(dtype) for name, dtype in ALL_DTYPES.items()}
    tensors.update({f"{name}.0d": dtype_sample(dtype)[1, 1] for name, dtype in ALL_DTYPES.items()})
    tensors["strided"] = dtype_sample(minitorch.bfloat16).T  # written as its values, in order
    tensors["half.grad"] = minitorch.tensor([1.5], dtype=minitorch.float16, requires_grad=True)
    path = tmp_path / "all.safetensors"
    minitorch.save(tensors, path)
    header, _ = read_layout(path)
    for name, dtype in ALL_DTYPES.items():
        assert header[name]["dtype"] == name
    loaded = minitorch.load(path)
    for name, tensor in tensors.items():
        assert loaded[name].dtype is tensor.dtype, name
        assert tuple(loaded[name].shape) == tuple(tensor.shape)
        assert loaded[name].tolist() == tensor.tolist(), name
    assert loaded["half.grad"].requires_grad and loaded["half.grad"].is_leaf


def test_bf16_bytes_are_the_top_half_of_float32(tmp_path):
    """BF16 in the file is each value's bfloat16 bits, little-endian, as safetensors has it."""
    values = [1.0, -2.5, 2.0 ** 100, 0.0]  # exact in bfloat16: no rounding to compare
    minitorch.save({"b": minitorch.tensor(values, dtype=minitorch.bfloat16)}, tmp_path / "b")
    header, data = read_layout(tmp_path / "b")
    expected = (np.array(values, "<f4").view("<u4") >> 16).astype("<u2").tobytes()
    assert header["b"]["dtype"] == "BF16" and data == expected


def test_safetensors_library_reads_and_writes_every_numpy_dtype(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="safetensors not installed")
    arrays = {name: dtype_sample(dtype).numpy() for name, dtype in ALL_DTYPES.items()
              if name != "BF16"}  # safetensors.numpy has no bfloat16: see the torch test
    st.save_file(arrays, str(tmp_path / "st"))
    loaded = minitorch.load(tmp_path / "st")
    for name, array in arrays.items():
        assert loaded[name].dtype is ALL_DTYPES[name]
        np.testing.assert_array_equal(loaded[name].numpy(), array)
    minitorch.save({name: minitorch.from_numpy(a) for name, a in arrays.items()}, tmp_path / "mt")
    back = st.load_file(str(tmp_path / "mt"))
    for name, array in arrays.items():
        assert back[name].dtype == array.dtype
        np.testing.assert_array_equal(back[name], array)


def test_safetensors_torch_reads_and_writes_bf16_and_the_rest(tmp_path):
    pytest.importorskip("safetensors", reason="safetensors not installed")
    torch = pytest.importorskip("torch", reason="PyTorch not installed: interop test skipped")
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file
    rng = np.random.default_rng(0)
    values = rng.standard_normal((3, 4))
    theirs = {name: torch.tensor(values).to(getattr(torch, dtype.name))
              for name, dtype in ALL_DTYPES.items()}
    save_file(theirs, str(tmp_path / "torch"), metadata={"format": "pt"})
    ours = minitorch.load(tmp_path / "torch")
    for name, dtype in ALL_DTYPES.items():
        assert ours[name].dtype is dtype
        expected = theirs[name].double() if dtype.is_floating_point else theirs[name]
        np.testing.assert_array_equal(np.asarray(ours[name].tolist(), dtype=np.float64),
                                      expected.double().numpy())
    minitorch.save(ours, tmp_path / "ours")
    back = load_file(str(tmp_path / "ours"))
    for name in ALL_DTYPES:
        assert back[name].dtype == theirs[name].dtype and torch.equal(back[name], theirs[name])
    with safe_open(str(tmp_path / "ours"), framework="pt") as f:
        assert f.metadata()["format"] == "pt"  # what transformers checks before loading


def test_a_half_model_state_dict_round_trips(tmp_path):
    model = minitorch.nn.Linear(3, 2).half()
    minitorch.save(model.state_dict(), tmp_path / "m")
    restored = minitorch.nn.Linear(3, 2).half()
    restored.load_state_dict(minitorch.load(tmp_path / "m"))
    assert restored.weight.dtype is minitorch.float16
    assert restored.weight.tolist() == model.weight.tolist()


# ------------------------------------------------------------------ torch.load's arguments
@pytest.mark.parametrize("map_location", [
    None, "cpu", "cpu:0", minitorch.device("cpu"), {"cuda:0": "cpu"}, {"cpu": "cpu"},
    lambda storage, location: storage],
    ids=lambda value: "a function" if callable(value) else repr(value))
def test_load_accepts_cpu_map_locations(tmp_path, map_location):
    minitorch.save({"w": minitorch.ones(2), "n": 3}, tmp_path / "c")
    loaded = minitorch.load(tmp_path / "c", map_location=map_location, weights_only=True)
    assert loaded["w"].tolist() == [1.0, 1.0] and loaded["n"] == 3


def test_load_with_a_callable_map_location_uses_its_result(tmp_path):
    minitorch.save({"w": minitorch.ones(2)}, tmp_path / "c")
    seen = []

    def double_it(tensor, location):
        seen.append(location)
        return tensor.double()
    loaded = minitorch.load(tmp_path / "c", map_location=double_it)
    assert loaded["w"].dtype is minitorch.float64 and seen == ["cpu"]
    with pytest.raises(TypeError, match="must return a tensor"):
        minitorch.load(tmp_path / "c", map_location=lambda tensor, location: None)


@pytest.mark.usefixtures("without_gpu")
@pytest.mark.parametrize("map_location", ["cuda", "cuda:0", minitorch.device("cuda"),
                                          {"cpu": "cuda:0"}], ids=repr)
def test_load_to_cuda_raises_clearly(tmp_path, map_location):
    minitorch.save({"w": minitorch.ones(2)}, tmp_path / "c")
    with pytest.raises(RuntimeError, match="map_location.*is not available"):
        minitorch.load(tmp_path / "c", map_location=map_location)


def test_load_takes_weights_only_and_mmap_as_torch_load(tmp_path):
    import inspect
    minitorch.save({"w": minitorch.ones(2)}, tmp_path / "c")
    for kwargs in ({"weights_only": False}, {"weights_only": True}, {"mmap": True},
                   {"mmap": False, "weights_only": None}, {"pickle_module": None}):
        assert minitorch.load(tmp_path / "c", **kwargs)["w"].tolist() == [1.0, 1.0]
    with open(tmp_path / "c", "rb") as f:
        assert minitorch.load(f, "cpu", weights_only=True)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(TypeError, match="weights_only must be a bool"):
        minitorch.load(tmp_path / "c", weights_only="yes")
    torch = pytest.importorskip("torch", reason="PyTorch not installed: signature check skipped")
    ours = inspect.signature(minitorch.load).parameters
    theirs = inspect.signature(torch.load).parameters
    assert list(ours) == list(theirs)
    assert all(ours[name].kind == theirs[name].kind for name in ours)


def test_foreign_metadata_beside_the_structure_is_refused(tmp_path):
    path = tmp_path / "c"
    minitorch.save({"w": minitorch.ones(2)}, path)
    header, data = read_layout(path)
    header["__metadata__"]["format"] = "np"
    write_raw(path, header, data)
    with pytest.raises(ValueError, match="holds only 'format': 'pt'"):
        minitorch.load(path)
    del header["__metadata__"]["format"]  # a checkpoint written before the entry existed
    write_raw(path, header, data)
    assert minitorch.load(path)["w"].tolist() == [1.0, 1.0]
