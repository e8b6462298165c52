"""``save`` and ``load``: checkpoints in the safetensors layout, without pickle.

A file is::

    8 bytes      N, the header's length (unsigned, little-endian)
    N bytes      JSON: {"<tensor name>": {"dtype": "F32"|"F64"|"I64"|"BOOL", "shape": [...],
                        "data_offsets": [begin, end]}, ..., "__metadata__": {str: str}}
    the rest     every tensor's raw little-endian bytes, back to back, in offset order

which is exactly what the ``safetensors`` library reads and writes. The object saved may be a
nested structure (dicts with str or int keys, lists, tuples, tensors, numbers, strings, bools,
None, e.g. ``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``): its
tensors become the file's tensors, named by their dotted path (``model.fc.weight``,
``optimizer.state.0.exp_avg``), and the rest of the structure is one JSON string in
``__metadata__["minitorch.structure"]``. A file without that entry (written by another
program) loads as a flat ``{name: tensor}`` dict.

Writes are atomic: the bytes go to a temporary file in the same folder, which is flushed,
fsynced and then renamed over the target, so a crash never leaves half a checkpoint under the
real name. Loading checks every field of the header before touching the data, and raises
ValueError naming what is wrong, so a truncated or corrupted file never loads.

May import: json, math, os, tempfile, numpy, ``minitorch.tensor``.
"""
import json
import math
import os
import tempfile

import numpy as np

from .tensor import Tensor

STRUCTURE_KEY = "minitorch.structure"
FORMAT_VERSION = 1

# safetensors dtype name <-> the little-endian numpy dtype of its bytes
_DTYPES = {"F32": np.dtype("<f4"), "F64": np.dtype("<f8"), "I64": np.dtype("<i8"),
           "BOOL": np.dtype("|b1")}
_NAME_OF_DTYPE = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64",
                  np.dtype(np.int64): "I64", np.dtype(np.bool_): "BOOL"}

# A header larger than this is treated as corruption rather than read into memory (the same
# limit as the safetensors library).
MAX_HEADER_BYTES = 100_000_000


# ---------------------------------------------------------------------------------------- save
def save(obj, f):
    """Write ``obj`` to ``f`` (a path, or a binary file object) in the safetensors layout.

    ``obj``: a tensor, or nested dicts (str or int keys) / lists / tuples of tensors, ints,
    floats, strings, bools and None. Anything else raises TypeError naming where it is in the
    structure (e.g. ``obj['model']['fc'][2]``). Tensors that appear several times are stored
    once and come back as one tensor. ``requires_grad`` is kept; the graph is not.
    """
    tensors = []          # (name, numpy array), in file order
    structure = _describe(obj, "obj", [], tensors, {}, set())
    metadata = {STRUCTURE_KEY: json.dumps({"version": FORMAT_VERSION, "root": structure},
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
    _atomic_write(os.fspath(_check_path(f, "save")), write_to)


def _check_path(f, caller):
    if not isinstance(f, (str, bytes, os.PathLike)):
        raise TypeError(f"{caller}: f must be a path (str or os.PathLike) or a binary file "
                        f"object, got {type(f).__name__}")
    return f


def _atomic_write(path, write_to):
    folder = os.path.dirname(os.path.abspath(path))
    fd, temp_path = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                     suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as stream:
            write_to(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp_path, path)
    except BaseException:
        try:
            os.unlink(temp_path)
        except OSError:
            pass
        raise
    _fsync_folder(folder)


def _fsync_folder(folder):
    """Make the rename itself durable (best effort: not every platform can open a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _array_bytes(array):
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def _describe(obj, where, path, tensors, name_of_tensor, taken_names):
    """The JSON description of ``obj``; its tensors are appended to ``tensors``.

    Encoding: None, bools, ints, finite floats and strings are themselves; everything else is a
    one-key object: ``{"tensor": name}`` (``"requires_grad": true`` added when set),
    ``{"dict": [[key, value], ...]}`` (keys str or int, order kept), ``{"list": [...]}``,
    ``{"tuple": [...]}``, ``{"float": "nan" | "inf" | "-inf"}``.
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
            tensors.append((name, obj._data))
        node = {"tensor": name}
        if obj.requires_grad:
            node["requires_grad"] = True
        return node
    if isinstance(obj, dict):
        items = []
        for key, value in obj.items():
            if isinstance(key, bool) or not isinstance(key, (str, int)):
                raise TypeError(f"save: dict keys must be str or int, but {where} has a key "
                                f"{key!r} of type {type(key).__name__}")
            items.append([key, _describe(value, f"{where}[{key!r}]", path + [str(key)], tensors,
                                         name_of_tensor, taken_names)])
        return {"dict": items}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_describe(value, f"{where}[{index}]", path + [str(index)], tensors,
                                 name_of_tensor, taken_names)
                       for index, value in enumerate(obj)]}
    raise TypeError(f"save: cannot save {where} of type {type(obj).__name__}: only tensors, "
                    "dicts, lists, tuples, int, float, str, bool and None can be saved "
                    "(wrap arrays with minitorch.tensor)")


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
def load(f):
    """Read what ``save`` wrote to ``f`` (a path or a binary file object).

    Returns the saved structure with fresh tensors (copied out of the file). A safetensors
    file from elsewhere loads as ``{name: tensor}``. Raises ValueError if the file is truncated
    or its header is inconsistent, naming the tensor and the problem.
    """
    if hasattr(f, "read"):
        buffer = f.read()
        source = getattr(f, "name", "the file object")
    else:
        source = os.fspath(_check_path(f, "load"))
        with open(source, "rb") as stream:
            buffer = stream.read()
    tensors, metadata = _parse(memoryview(buffer), source)
    if metadata is None or STRUCTURE_KEY not in metadata:
        return tensors
    try:
        structure = json.loads(metadata[STRUCTURE_KEY])
    except (ValueError, RecursionError) as error:
        raise ValueError(f"load: {source}: __metadata__[{STRUCTURE_KEY!r}] is not valid JSON "
                         f"({error})") from None
    if not isinstance(structure, dict) or "root" not in structure:
        raise ValueError(f"load: {source}: __metadata__[{STRUCTURE_KEY!r}] has no 'root' entry")
    if structure.get("version") != FORMAT_VERSION:
        raise ValueError(f"load: {source}: structure version {structure.get('version')!r} is "
                         f"not supported (expected {FORMAT_VERSION})")
    try:
        return _rebuild(structure["root"], tensors, source)
    except RecursionError:
        raise ValueError(f"load: {source}: the structure is nested too deeply") from None


def _parse(buffer, source):
    """Validate the layout of ``buffer``; returns ({name: Tensor}, metadata or None)."""
    size = len(buffer)
    if size < 8:
        raise ValueError(f"load: {source} is {size} bytes long, too short for a safetensors "
                         "file (at least 8 bytes for the header length): truncated?")
    header_length = int.from_bytes(buffer[:8], "little")
    if header_length > MAX_HEADER_BYTES:
        raise ValueError(f"load: {source}: header length {header_length} exceeds the limit of "
                         f"{MAX_HEADER_BYTES} bytes: not a safetensors file, or corrupted")
    if 8 + header_length > size:
        raise ValueError(f"load: {source}: header length {header_length} goes past the end of "
                         f"the file ({size} bytes): truncated?")
    try:
        header = json.loads(bytes(buffer[8:8 + header_length]).decode("utf-8"))
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

    data_start, data_length = 8 + header_length, size - 8 - header_length
    entries = [(name, _check_entry(name, entry, source)) for name, entry in header.items()]
    expected_begin = 0
    for name, (dtype, shape, begin, end) in sorted(entries, key=lambda e: e[1][2:]):
        if begin != expected_begin:
            problem = "overlaps the previous tensor" if begin < expected_begin else \
                "leaves a gap after the previous tensor"
            raise ValueError(f"load: {source}: tensor {name!r} starts at byte {begin} of the "
                             f"data section, expected {expected_begin}: it {problem}")
        if end > data_length:
            raise ValueError(f"load: {source}: tensor {name!r} ends at byte {end} but the data "
                             f"section has {data_length} bytes: truncated?")
        expected_begin = end
    if expected_begin != data_length:
        raise ValueError(f"load: {source}: the tensors cover {expected_begin} bytes but the data "
                         f"section has {data_length}: trailing bytes after the last tensor")

    tensors = {}
    for name, (dtype, shape, begin, end) in entries:
        count = (end - begin) // dtype.itemsize
        array = np.frombuffer(buffer, dtype=dtype, count=count, offset=data_start + begin)
        if dtype.kind == "b":
            raw = np.frombuffer(buffer, dtype=np.uint8, count=count, offset=data_start + begin)
            if count and raw.max() > 1:
                raise ValueError(f"load: {source}: BOOL tensor {name!r} holds bytes other than "
                                 "0 and 1")
        # copy out of the file buffer, into the machine's byte order
        tensors[name] = Tensor._make(array.reshape(shape).astype(dtype.newbyteorder("="),
                                                                 copy=True))
    return tensors, metadata


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


def _rebuild(node, tensors, source):
    if node is None or isinstance(node, (bool, int, float, str)):
        return node
    if isinstance(node, dict) and len(node) >= 1:
        if "tensor" in node:
            name = node["tensor"]
            if not isinstance(name, str) or name not in tensors:
                raise ValueError(f"load: {source}: the structure refers to tensor {name!r}, "
                                 "which the file does not hold")
            tensor = tensors[name]
            if node.get("requires_grad"):
                tensor.requires_grad = True
            return tensor
        if "dict" in node and isinstance(node["dict"], list):
            result = {}
            for item in node["dict"]:
                if not (isinstance(item, list) and len(item) == 2
                        and isinstance(item[0], (str, int)) and not isinstance(item[0], bool)):
                    raise ValueError(f"load: {source}: malformed dict item {item!r} in the "
                                     "structure")
                result[item[0]] = _rebuild(item[1], tensors, source)
            return result
        if "list" in node and isinstance(node["list"], list):
            return [_rebuild(value, tensors, source) for value in node["list"]]
        if "tuple" in node and isinstance(node["tuple"], list):
            return tuple(_rebuild(value, tensors, source) for value in node["tuple"])
        if node.get("float") in ("nan", "inf", "-inf"):
            return float(node["float"])
    raise ValueError(f"load: {source}: malformed node {node!r} in the structure")
