"""``save`` and ``load``: checkpoints in the safetensors layout, without pickle.

A file is::

    8 bytes      N, the header's length (unsigned, little-endian)
    N bytes      JSON: {"<tensor name>": {"dtype": "F32", "shape": [...],
                        "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
    the rest     every tensor's raw little-endian bytes, back to back, in offset order

which is exactly what the ``safetensors`` library reads and writes, with its dtype names: F32,
F64, F16, BF16, I64, I32, I16, I8, U8 and BOOL, each loaded as that dtype (BF16 needs the
``ml_dtypes`` package, as minitorch.bfloat16 does). ``__metadata__`` holds ``"format": "pt"``, the
entry other safetensors readers (``transformers``, ``safetensors.torch``) look for, since the
tensors are laid out as PyTorch's would be. The object saved may be a
nested structure (dicts with str or int keys, lists, tuples, tensors, numbers, strings, bools,
None, e.g. ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``): its
tensors become the file's tensors, named by their dotted path (``model.fc.weight``,
``optimizer.state.0.exp_avg``), and the rest of the structure is one JSON string in
``__metadata__["minitorch.structure"]``. A file without that entry (written by another
program) loads as a flat ``{name: tensor}`` dict.

Writes are atomic (``minitorch.files.atomic_write``: a temporary file in the same folder,
flushed, fsynced and renamed over the target, so a crash never leaves half a checkpoint under
the real name; the mode follows the umask, a symlink is written through, a killed save's
leftover is cleaned by a later one). A structure nested more than ``MAX_NESTING`` levels deep,
or one that contains itself, raises ValueError.

Loading refuses anything but a regular file (a FIFO, ``/dev/zero``, a directory), reads the
8-byte header length, checks it against the file's size and ``MAX_HEADER_BYTES``, then reads
the header and checks every field of it (duplicate JSON keys included) before reading exactly
the data it announces; it raises ValueError naming what is wrong, so a truncated, corrupted or
hostile file never loads and never makes ``load`` allocate more than the file holds.

``load`` takes PyTorch's ``map_location``, ``weights_only`` and ``mmap`` arguments, so that
``torch.load(path, map_location="cpu", weights_only=True)`` calls run unchanged. A GPU tensor is
saved as its host copy; ``map_location="cuda"`` puts the loaded tensors on the GPU.

May import: json, math, os, numpy, ``minitorch.files``, ``minitorch.tensor``, ``minitorch.dtype``,
``minitorch.device``, ``minitorch.device_arrays``.
"""
import json
import math
import os

import numpy as np

from .device import device as _device
from .device_arrays import resolve, to_host
from .dtype import _BFLOAT16_NUMPY
from .files import atomic_write, json_loads_strict, open_regular_file, read_up_to
from .tensor import Tensor

STRUCTURE_KEY = "minitorch.structure"
FORMAT_VERSION = 1

# safetensors dtype name <-> the little-endian numpy dtype of its bytes; BF16's bytes are read
# as uint16 (numpy has no bfloat16, nor a byte order for ml_dtypes'), then viewed as bfloat16.
_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "F16": np.dtype("<f2"),
           "BF16": np.dtype("<u2"), "I64": np.dtype("<i8"), "I32": np.dtype("<i4"),
           "I16": np.dtype("<i2"), "I8": np.dtype("|i1"), "U8": np.dtype("|u1"),
           "BOOL": np.dtype("|b1")}
_NAME_OF_DTYPE = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
                  np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
                  np.dtype(np.int32): "I32", np.dtype(np.int16): "I16", np.dtype(np.int8): "I8",
                  np.dtype(np.uint8): "U8", np.dtype(np.bool_): "BOOL"}
if _BFLOAT16_NUMPY is not None:
    _NAME_OF_DTYPE[_BFLOAT16_NUMPY] = "BF16"

# A header larger than this is treated as corruption rather than read into memory (the same
# limit as the safetensors library).
MAX_HEADER_BYTES = 100_000_000

# Deepest nesting of containers that save writes and load rebuilds: far beyond any checkpoint
# (a model's state_dict is 2 levels deep), far below Python's recursion limit.
MAX_NESTING = 100


# ---------------------------------------------------------------------------------------- save
def save(obj, f, pickle_module=None, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Write ``obj`` to ``f`` (a path, or a binary file object) in the safetensors layout.
    PyTorch's pickle and zip options are accepted and mean nothing: minitorch never pickles.

    ``obj``: a tensor, or nested dicts (str or int keys) / lists / tuples of tensors, ints,
    floats, strings, bools and None. Anything else raises TypeError naming where it is in the
    structure (e.g. ``obj['model']['fc'][2]``). Tensors that appear several times are stored
    once and come back as one tensor. ``requires_grad`` is kept; the graph is not.
    """
    tensors = []          # (name, numpy array), in file order
    structure = _describe(obj, "obj", [], tensors, {}, set(), set())
    metadata = {"format": "pt",
                STRUCTURE_KEY: json.dumps({"version": FORMAT_VERSION, "root": structure},
                                          allow_nan=False, separators=(",", ":"))}
    header, offset = {}, 0
    for name, array in tensors:
        nbytes = array.size * array.dtype.itemsize
        header[name] = {"dtype": _NAME_OF_DTYPE[array.dtype], "shape": list(array.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = metadata
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    # pad with spaces to a multiple of 8, as safetensors does, so the data starts aligned
    header_bytes += b" " * (-len(header_bytes) % 8)

    def write_to(stream):
        stream.write(len(header_bytes).to_bytes(8, "little"))
        stream.write(header_bytes)
        for _, array in tensors:
            stream.write(_array_bytes(array))

    if hasattr(f, "write"):
        write_to(f)
        return
    atomic_write(os.fspath(_check_path(f, "save")), write_to, "save")


def _check_path(f, caller):
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(f"{caller}: f must be a path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")
    return f


def _array_bytes(array):
    if array.dtype == _BFLOAT16_NUMPY:  # its bits as uint16, which numpy can put in order
        array = array.view(np.uint16)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def _describe(obj, where, path, tensors, name_of_tensor, taken_names, open_containers):
    """The JSON description of ``obj``; its tensors are appended to ``tensors``.

    Encoding: None, bools, ints, finite floats and strings are themselves; everything else is a
    one-key object: ``{"tensor": name}`` (``"requires_grad": true`` added when set),
    ``{"dict": [[key, value], ...]}`` (keys str or int, order kept), ``{"list": [...]}``,
    ``{"tuple": [...]}``, ``{"float": "nan" | "inf" | "-inf"}``. ``open_containers`` holds the
    ids of the containers ``obj`` is inside of, to tell a cycle from a shared container.
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, (np.bool_,)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        value = float(obj)
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(obj, Tensor):
        name = name_of_tensor.get(id(obj))
        if name is None:
            name = _unique_name(".".join(path) or "tensor", taken_names)
            name_of_tensor[id(obj)] = name
            tensors.append((name, to_host(obj._data)))  # a GPU tensor is saved as its host copy
        node = {"tensor": name}
        if obj.requires_grad:
            node["requires_grad"] = True
        return node
    if not isinstance(obj, (dict, list, tuple)):
        raise TypeError(f"save: cannot save {where} of type {type(obj).__name__}: only tensors, "
                        "dicts, lists, tuples, int, float, str, bool and None can be saved "
                        "(wrap arrays with minitorch.tensor)")
    if id(obj) in open_containers:
        raise ValueError(f"save: {_short(where)} is a {type(obj).__name__} that contains "
                         "itself (a cycle): a saved structure must be a tree")
    if len(path) >= MAX_NESTING:
        raise ValueError(f"save: {_short(where)} is nested more than {MAX_NESTING} containers "
                         f"deep (the limit is serialization.MAX_NESTING)")
    open_containers.add(id(obj))
    try:
        if isinstance(obj, dict):
            items = []
            for key, value in obj.items():
                if isinstance(key, bool) or not isinstance(key, (str, int)):
                    raise TypeError(f"save: dict keys must be str or int, but {where} has a "
                                    f"key {key!r} of type {type(key).__name__}")
                items.append([key, _describe(value, f"{where}[{key!r}]", path + [str(key)],
                                             tensors, name_of_tensor, taken_names,
                                             open_containers)])
            return {"dict": items}
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_describe(value, f"{where}[{index}]", path + [str(index)], tensors,
                                 name_of_tensor, taken_names, open_containers)
                       for index, value in enumerate(obj)]}
    finally:
        open_containers.discard(id(obj))


def _short(where):
    # a path 100 containers deep is unreadable: its two ends say where it is
    return where if len(where) <= 120 else where[:60] + "..." + where[-50:]


def _unique_name(name, taken):
    # Dotted paths can collide (a key "a.b" versus key "a" holding key "b"), and the header
    # reserves "__metadata__": number the later ones.
    candidate, counter = name, 1
    while candidate in taken or candidate == "__metadata__":
        candidate = f"{name}~{counter}"
        counter += 1
    taken.add(candidate)
    return candidate


# ---------------------------------------------------------------------------------------- load
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Read what ``save`` wrote to ``f`` (a path or a binary file object).

    Returns the saved structure with fresh tensors (copied out of the file). A safetensors
    file from elsewhere loads as ``{name: tensor}``. Raises ValueError if the file is truncated
    or its header is inconsistent, naming the tensor and the problem, and if ``f`` names a
    FIFO, a device or a directory rather than a regular file.

    PyTorch's other arguments are accepted: ``map_location`` (None or ``"cpu"``: tensors load
    on the CPU, where the file keeps them; ``"cuda"``, ``"cuda:1"``, a ``device``: moved there,
    RuntimeError where CUDA is not available, as in PyTorch; a dict mapping location names to
    devices, whose ``"cpu"`` entry applies; or a callable ``fn(tensor, "cpu")`` whose result
    replaces each tensor); ``weights_only`` (any value: the format never holds code, so
    loading is always as safe as PyTorch's ``weights_only=True``); ``mmap`` (the data is read
    into memory either way); ``pickle_module`` and ``pickle_load_args`` (nothing is unpickled).
    """
    remap = _map_location(map_location)
    for name, value in (("weights_only", weights_only), ("mmap", mmap)):
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"load: {name} must be a bool or None, got {type(value).__name__}")
    if hasattr(f, "read"):
        result = _load_stream(f, getattr(f, "name", "the file object"), None, remap)
    else:
        source = os.fspath(_check_path(f, "load"))
        with open_regular_file(source, "load") as stream:
            result = _load_stream(stream, source, os.fstat(stream.fileno()).st_size, remap)
    return result


def _map_location(map_location):
    """A function applied to each loaded tensor (or None), from ``load``'s ``map_location``:
    tensors load on the CPU (the file names no device), then move to the device it names (a
    dict's entry for ``"cpu"``), after checking that device usable here."""
    if map_location is None:
        return None
    if callable(map_location) and not isinstance(map_location, _device):
        def remap(tensor):
            result = map_location(tensor, "cpu")
            if not isinstance(result, Tensor):
                raise TypeError(f"load: map_location(tensor, 'cpu') must return a tensor, got "
                                f"{type(result).__name__}")
            return result
        return remap
    if isinstance(map_location, dict):
        targets = {source: resolve(target, f"load: map_location[{source!r}]")
                   for source, target in map_location.items()}
        target = targets.get("cpu", targets.get("cpu:0"))
    else:
        target = resolve(map_location, "load: map_location")
    if target is None or target.type == "cpu":
        return None
    return lambda tensor: tensor.to(target)


def _load_stream(stream, source, size, remap=None):
    """Load from ``stream``, of ``size`` bytes when known (a file) or None (a file object);
    ``remap`` (if given) is applied to every tensor."""
    prefix = read_up_to(stream, 8)
    if len(prefix) < 8:
        raise ValueError(f"load: {source} is {len(prefix)} bytes long, too short for a "
                         "safetensors file (at least 8 bytes for the header length): truncated?")
    header_length = int.from_bytes(prefix, "little")
    if header_length > MAX_HEADER_BYTES:
        raise ValueError(f"load: {source}: header length {header_length} exceeds the limit of "
                         f"{MAX_HEADER_BYTES} bytes: not a safetensors file, or corrupted")
    header_bytes = read_up_to(stream, header_length) if size is None or \
        8 + header_length <= size else b""
    if len(header_bytes) < header_length:
        file_size = size if size is not None else 8 + len(header_bytes)
        raise ValueError(f"load: {source}: header length {header_length} goes past the end of "
                         f"the file ({file_size} bytes): truncated?")
    entries, metadata, data_length = _parse_header(header_bytes, source)

    if size is not None:
        available = size - 8 - header_length
        data = read_up_to(stream, data_length) if available == data_length else b""
    else:
        data = read_up_to(stream, data_length)
        available = len(data) + len(stream.read(1) or b"")  # one more byte: trailing bytes?
    _check_layout(entries, available, source)
    if len(data) != data_length:  # the file changed between its stat and this read
        raise ValueError(f"load: {source}: the data section has {len(data)} bytes, expected "
                         f"{data_length}: the file changed while being read")
    tensors = _make_tensors(entries, data, source)
    if remap is not None:
        tensors = {name: remap(tensor) for name, tensor in tensors.items()}

    if metadata is None or STRUCTURE_KEY not in metadata:
        return tensors
    # Beside its structure, save writes only "format": "pt" (older files: nothing): anything
    # else in a minitorch checkpoint's metadata is damage, not a setting to ignore.
    others = {key: value for key, value in metadata.items() if key != STRUCTURE_KEY}
    if others not in ({}, {"format": "pt"}):
        raise ValueError(f"load: {source}: __metadata__ holds {others!r} beside "
                         f"{STRUCTURE_KEY!r}; a minitorch checkpoint holds only "
                         "'format': 'pt' there")
    try:
        structure = json_loads_strict(metadata[STRUCTURE_KEY])
    except (ValueError, RecursionError) as error:
        raise ValueError(f"load: {source}: __metadata__[{STRUCTURE_KEY!r}] is not valid JSON "
                         f"({error})") from None
    if not isinstance(structure, dict) or "root" not in structure:
        raise ValueError(f"load: {source}: __metadata__[{STRUCTURE_KEY!r}] has no 'root' entry")
    if structure.get("version") != FORMAT_VERSION:
        raise ValueError(f"load: {source}: structure version {structure.get('version')!r} is "
                         f"not supported (expected {FORMAT_VERSION})")
    return _rebuild(structure["root"], tensors, source, 0)


def _parse_header(header_bytes, source):
    """(entries [(name, (dtype, shape, begin, end))], metadata or None, data length) of the
    header: every field checked, the tensors back to back from byte 0 of the data section."""
    try:
        header = json_loads_strict(bytes(header_bytes).decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"load: {source}: the header is not valid UTF-8 JSON ({error})") \
            from None
    if not isinstance(header, dict):
        raise ValueError(f"load: {source}: the header must be a JSON object, got "
                         f"{type(header).__name__}")

    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())):
        raise ValueError(f"load: {source}: __metadata__ must map strings to strings")

    entries = [(name, _check_entry(name, entry, source)) for name, entry in header.items()]
    expected_begin = 0
    for name, (dtype, shape, begin, end) in sorted(entries, key=lambda e: e[1][2:]):
        if begin != expected_begin:
            problem = "overlaps the previous tensor" if begin < expected_begin else \
                "leaves a gap after the previous tensor"
            raise ValueError(f"load: {source}: tensor {name!r} starts at byte {begin} of the "
                             f"data section, expected {expected_begin}: it {problem}")
        expected_begin = end
    return entries, metadata, expected_begin


def _check_layout(entries, available, source):
    """The data section really holds ``available`` bytes: each tensor must fit, and no byte
    may follow the last one."""
    covered = 0
    for name, (dtype, shape, begin, end) in sorted(entries, key=lambda e: e[1][2:]):
        if end > available:
            raise ValueError(f"load: {source}: tensor {name!r} ends at byte {end} but the data "
                             f"section has {available} bytes: truncated?")
        covered = end
    if covered != available:
        raise ValueError(f"load: {source}: the tensors cover {covered} bytes but the data "
                         f"section has more ({available}): trailing bytes after the last tensor")


def _make_tensors(entries, data, source):
    tensors = {}
    for name, (dtype, shape, begin, end) in entries:
        count = (end - begin) // dtype.itemsize
        array = np.frombuffer(data, dtype=dtype, count=count, offset=begin)
        if dtype.kind == "b":
            raw = np.frombuffer(data, dtype=np.uint8, count=count, offset=begin)
            if count and raw.max() > 1:
                raise ValueError(f"load: {source}: BOOL tensor {name!r} holds bytes other than "
                                 "0 and 1")
        try:
            array = array.reshape(shape)
        except ValueError as error:  # more dimensions than numpy allows
            raise ValueError(f"load: {source}: tensor {name!r} has shape {list(shape)}, which "
                             f"numpy cannot hold ({error})") from None
        # copy out of the file buffer, into the machine's byte order
        array = array.astype(dtype.newbyteorder("="), copy=True)
        if dtype is _DTYPES["BF16"]:  # the one uint16 entry: its bits are bfloat16's
            array = array.view(_BFLOAT16_NUMPY)
        tensors[name] = Tensor._make(array)
    return tensors


def _check_entry(name, entry, source):
    where = f"load: {source}: tensor {name!r}"
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: header entry must be an object, got {type(entry).__name__}")
    missing = {"dtype", "shape", "data_offsets"} - set(entry)
    if missing:
        raise ValueError(f"{where}: header entry lacks {sorted(missing)}")
    dtype = _DTYPES.get(entry["dtype"]) if isinstance(entry["dtype"], str) else None
    if dtype is None:
        raise ValueError(f"{where}: dtype {entry['dtype']!r} is not supported (expected one of "
                         f"{sorted(_DTYPES)})")
    if entry["dtype"] == "BF16" and _BFLOAT16_NUMPY is None:
        raise RuntimeError(f"{where}: dtype BF16 needs the ml_dtypes package (numpy has no "
                           "bfloat16): pip install ml_dtypes")
    shape = entry["shape"]
    if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
        raise ValueError(f"{where}: shape must be a list of non-negative ints, got {shape!r}")
    offsets = entry["data_offsets"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(map(_is_count, offsets))):
        raise ValueError(f"{where}: data_offsets must be [begin, end] with non-negative ints, "
                         f"got {offsets!r}")
    begin, end = offsets
    if end < begin:
        raise ValueError(f"{where}: data_offsets {offsets} end before they begin")
    expected = math.prod(shape) * dtype.itemsize
    if end - begin != expected:
        raise ValueError(f"{where}: data_offsets {offsets} span {end - begin} bytes but shape "
                         f"{shape} of {entry['dtype']} needs {expected}")
    return dtype, tuple(shape), begin, end


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _rebuild(node, tensors, source, depth):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, dict) and "tensor" in node:
        return _rebuild_tensor(node, tensors, source)
    if isinstance(node, dict) and node.get("float") in ("nan", "inf", "-inf"):
        return float(node["float"])
    if depth >= MAX_NESTING:  # counts containers, as save does
        raise ValueError(f"load: {source}: the structure is nested more than {MAX_NESTING} "
                         "containers deep (serialization.MAX_NESTING)")
    if isinstance(node, dict) and len(node) >= 1:
        if "dict" in node and isinstance(node["dict"], list):
            result = {}
            for item in node["dict"]:
                if not (isinstance(item, list) and len(item) == 2
                        and isinstance(item[0], (str, int)) and not isinstance(item[0], bool)):
                    raise ValueError(f"load: {source}: malformed dict item {item!r} in the "
                                     "structure")
                if item[0] in result:
                    raise ValueError(f"load: {source}: the structure has a dict with the key "
                                     f"{item[0]!r} twice")
                result[item[0]] = _rebuild(item[1], tensors, source, depth + 1)
            return result
        if "list" in node and isinstance(node["list"], list):
            return [_rebuild(value, tensors, source, depth + 1) for value in node["list"]]
        if "tuple" in node and isinstance(node["tuple"], list):
            return tuple(_rebuild(value, tensors, source, depth + 1) for value in node["tuple"])
    raise ValueError(f"load: {source}: malformed node {_short(repr(node))} in the structure")


def _rebuild_tensor(node, tensors, source):
    name = node["tensor"]
    if not isinstance(name, str) or name not in tensors:
        raise ValueError(f"load: {source}: the structure refers to tensor {name!r}, which the "
                         "file does not hold")
    tensor = tensors[name]
    requires_grad = node.get("requires_grad", False)
    if not isinstance(requires_grad, bool):
        raise ValueError(f"load: {source}: requires_grad of tensor {name!r} must be true or "
                         f"false, got {requires_grad!r}")
    if requires_grad:
        if not tensor.dtype.is_floating_point:
            raise ValueError(f"load: {source}: the structure marks tensor {name!r} of dtype "
                             f"{tensor.dtype} requires_grad, but only floating-point tensors "
                             "can require gradients")
        tensor.requires_grad = True
    return tensor
