"""``device``: where a tensor's memory lives, as ``torch.device``: the CPU, or a CUDA GPU.

``minitorch.device("cpu")``, ``device("cuda:0")``, ``device("cpu", 0)`` and the ``device=``
argument of every creation function, ``.to(...)`` and ``Module.to(...)`` follow PyTorch, so a
program that picks ``"cuda" if minitorch.cuda.is_available() else "cpu"`` runs unchanged. Any
device PyTorch knows can be named; a tensor can be put on the CPU, and on a CUDA GPU where CuPy
and a GPU are present (``device_arrays.py`` holds the arrays there); elsewhere putting a tensor
on a device raises a RuntimeError saying why.

Differs from PyTorch: a device also compares equal to its string (``x.device == "cpu"``), which
``torch.device`` does not.
May import: ``minitorch.dtype``.
"""
from .dtype import _BY_NAME
from .dtype import dtype as _dtype

# The device types PyTorch names (torch.device("gpu") is an error there too).
DEVICE_TYPES = ("cpu", "cuda", "mps", "xpu", "meta", "hip", "xla", "ipu", "hpu", "mtia", "lazy",
                "vulkan", "privateuseone")


class device:
    """A device: ``type`` ("cpu", "cuda", ...) and ``index`` (an int, or None for "the current
    one"), parsed from ``"cpu"``, ``"cuda:1"``, a (type, index) pair, or a bare int (a CUDA
    index, as ``torch.device(0)``)."""

    __slots__ = ("_type", "_index")

    def __init__(self, type, index=None):  # noqa: A002  (PyTorch's parameter name)
        if isinstance(type, device):
            if index is not None:
                raise TypeError("device: index must not be given with a device object")
            type, index = type.type, type.index
        elif isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        elif isinstance(type, str):
            type, index = _parse(type, index)
        else:
            raise TypeError(f"device: expected a str, an int or a device, got "
                            f"{type.__class__.__name__}")
        if index is not None and (not isinstance(index, int) or isinstance(index, bool)
                                  or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index!r}")
        self._type, self._index = type, index

    @property
    def type(self):
        return self._type

    @property
    def index(self):
        return self._index

    def __str__(self):
        return self._type if self._index is None else f"{self._type}:{self._index}"

    def __repr__(self):
        index = "" if self._index is None else f", index={self._index}"
        return f"device(type='{self._type}'{index})"

    def __eq__(self, other):
        if isinstance(other, str):
            return str(self) == other
        if isinstance(other, device):
            return (self._type, self._index) == (other._type, other._index)
        return NotImplemented

    def __hash__(self):
        return hash(str(self))  # equal to its string, so hashed as it

    def __reduce__(self):
        return (device, (self._type, self._index))


def _parse(text, index):
    kind, colon, number = text.partition(":")
    if kind not in DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(DEVICE_TYPES)} device type at start of "
                           f"device string: {text}")
    if colon:
        if index is not None:
            raise RuntimeError(f"device: type {text!r} already holds an index; index={index} "
                               "must not be given too")
        if not number.isdigit():
            raise RuntimeError(f"Invalid device string: {text!r}")
        index = int(number)
    return kind, index


CPU = device("cpu")


def check_device(value, caller="device"):
    """Nothing for None or a CPU device (a ``device``, ``"cpu"``, ``"cpu:0"``); a RuntimeError for
    any other device, naming it: for what makes CPU tensors only (``from_dlpack``, the legacy
    typed constructors, ``Generator``)."""
    if value is None:
        return
    if isinstance(value, device) and value._type == "cpu":
        return
    parsed = device(value) if isinstance(value, (str, int, device)) and not isinstance(
        value, bool) else None
    if parsed is None:
        raise TypeError(f"{caller}: device must be a str, an int or a minitorch.device, got "
                        f"{type(value).__name__}")
    if parsed.type == "cpu":
        return
    raise RuntimeError(f"{caller}: device {str(parsed)!r} is not available here: {caller} works "
                       "on the CPU only; use device='cpu'")


def parse_to(args, kwargs, caller="to"):
    """``(device, dtype, copy)`` from the arguments of ``Tensor.to``/``Module.to``, as PyTorch
    reads them: ``to(dtype)``, ``to(device, dtype=None)``, ``to(tensor)`` (its device and dtype),
    each followed by ``non_blocking`` and ``copy`` (positional or keyword), and the keywords
    ``device``, ``dtype``, ``non_blocking``, ``copy``, ``memory_format``. A string is a device
    unless it names a dtype (``"float64"``). The device comes back parsed (a ``device``, or
    None), not yet checked usable here (``device_arrays.resolve`` does that)."""
    kwargs = dict(kwargs)
    device_arg, dtype_arg = kwargs.pop("device", None), kwargs.pop("dtype", None)
    kwargs.pop("memory_format", None)  # layouts are numpy's: every format is accepted
    flags = {"non_blocking": kwargs.pop("non_blocking", False), "copy": kwargs.pop("copy", False)}
    if kwargs:
        raise TypeError(f"{caller}: unexpected keyword arguments {sorted(kwargs)}")
    rest = list(args)
    if rest:
        first = rest.pop(0)
        if isinstance(first, _dtype) or isinstance(first, str) and first in _BY_NAME or (
                isinstance(first, type) and isinstance(getattr(first, "dtype", None), _dtype)):
            dtype_arg = first
        elif isinstance(first, (str, int, device)) and not isinstance(first, bool):
            device_arg = first
            if rest and not isinstance(rest[0], bool):  # to(device, dtype, ...)
                dtype_arg = rest.pop(0)
        elif hasattr(first, "dtype") and hasattr(first, "device"):  # to(other_tensor)
            device_arg, dtype_arg = first.device, first.dtype
        elif first is not None:
            raise TypeError(f"{caller}: expected a dtype, a device or a tensor, got "
                            f"{type(first).__name__}")
    for name, value in zip(("non_blocking", "copy"), rest):
        flags[name] = value
    if len(rest) > 2:
        raise TypeError(f"{caller}: too many positional arguments {tuple(args)!r}")
    if device_arg is not None and not isinstance(device_arg, device):
        if not isinstance(device_arg, (str, int)) or isinstance(device_arg, bool):
            raise TypeError(f"{caller}: device must be a str, an int or a minitorch.device, got "
                            f"{type(device_arg).__name__}")
        device_arg = device(device_arg)
    return device_arg, dtype_arg, bool(flags["copy"])
