"""The op registry: every op's public names, declared once, on the op itself.

    @op(methods="__add__", reflected="__radd__", inplace="add_ __iadd__")
    def add(input, other, alpha=1):
        ...

declares ``minitorch.add``, ``Tensor.add`` and ``Tensor.__add__`` (the function itself, no
wrapper), ``Tensor.__radd__`` (arguments swapped) and ``Tensor.add_``/``__iadd__`` (the result
written into the tensor's memory). ``op``'s options (names: a list or one space-separated str):

- ``function``: also ``minitorch.<name>`` (default True: only where PyTorch has ``torch.<name>``)
- ``method``: also ``Tensor.<name>`` (default True)
- ``aliases``: more names for the same op, both as function and method (``clip`` for clamp)
- ``methods``: more Tensor names bound to the function itself (operators: ``__add__``)
- ``reflected``: Tensor names bound with the two arguments swapped (``__radd__``)
- ``inplace``: Tensor names of the in-place form, ``x.add_(y)``: x = add(x, y) in x's memory
- ``functional``: also ``minitorch.nn.functional.<name>``, only where PyTorch's ``F.<name>`` takes
  the same arguments (where it differs, nn/functional.py keeps a wrapper of its own)

``@tensor_method("zero_")`` declares a method that is no op of its own (fills, casts, ``copy_``).
``ops/__init__.py`` imports every module of the package and calls ``bind()``; minitorch and
nn.functional take their names from ``functions()`` and ``functional()``.
May import: ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.backends.tape`` (a
captured step's record of an in-place write).
"""
from dataclasses import dataclass

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..backends import tape as tapes
from ..tensor import Tensor


@dataclass(frozen=True)
class Declaration:
    name: str
    fn: object
    function: bool
    aliases: tuple
    methods: tuple      # every Tensor name bound to ``fn`` itself
    reflected: tuple
    inplace: tuple
    functional: bool


OPS = {}       # op name -> Declaration
METHODS = {}   # Tensor method name -> the function bound under it


def _names(value):
    return tuple(value.split()) if isinstance(value, str) else tuple(value)


def _declare_method(name, fn):
    if name in METHODS:
        raise ValueError(f"Tensor.{name} is declared twice")
    if name in vars(Tensor):
        raise ValueError(f"Tensor.{name} is defined in tensor.py; it cannot be declared again")
    METHODS[name] = fn


def op(name=None, *, function=True, method=True, aliases=(), methods=(), reflected=(),
       inplace=(), functional=False):
    """Declare the decorated function as an op with these public names; returns it unchanged."""
    def declare(fn):
        op_name = name or fn.__name__
        if op_name in OPS:
            raise ValueError(f"op {op_name!r} is declared twice")
        alias_names = _names(aliases)
        bound = ((op_name,) + alias_names if method else ()) + _names(methods)
        for method_name in bound:
            _declare_method(method_name, fn)
        for method_name in _names(reflected):
            _declare_method(method_name, _reflect(fn))
        for method_name in _names(inplace):
            _declare_method(method_name, _inplace_method(fn, method_name))
        OPS[op_name] = Declaration(op_name, fn, function, alias_names, bound, _names(reflected),
                                   _names(inplace), functional)
        return fn
    return declare


def tensor_method(*names):
    """Declare the decorated function of ``self`` as the Tensor method(s) ``names``."""
    def declare(fn):
        for method_name in names:
            _declare_method(method_name, fn)
        return fn
    return declare


def _reflect(fn):
    def reflected(self, other):
        return fn(other, self)
    reflected.__name__ = reflected.__qualname__ = f"reflected_{fn.__name__}"
    return reflected


def _inplace_method(fn, method_name):
    def method(self, *args, **kwargs):
        return apply_inplace(self, fn, *args, **kwargs)
    method.__name__ = method.__qualname__ = method_name
    method.__doc__ = f"In-place {fn.__name__}: self = {fn.__name__}(self, ...) in self's memory."
    return method


def check_inplace(tensor):
    """RuntimeError for an in-place change of a leaf that requires grad while grad mode is on."""
    if tensor.requires_grad and tensor._ctx is None and is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation (wrap it in `with minitorch.no_grad():`)")


def apply_inplace(tensor, fn, *args, **kwargs):
    """``tensor = fn(tensor, *args, **kwargs)`` written into tensor's memory: the generic
    in-place op, differentiable (the tensor's history moves to the op that made the result)."""
    check_inplace(tensor)
    return write_inplace(tensor, fn(tensor._history_alias(), *args, **kwargs))


def write_inplace(tensor, result):
    """``tensor._inplace(result)``; while a step is captured, its copy into tensor's memory is
    recorded too (a replay writes the new values again: a BatchNorm's step count)."""
    tensor._inplace(result)
    if tapes.recording() is not None:
        tapes.replayed(np.copyto, tensor._data, result._data, "unsafe")
    return tensor


def bind():
    """Set every declared method on Tensor."""
    for method_name, fn in METHODS.items():
        setattr(Tensor, method_name, fn)


def functions():
    """``minitorch.<name>`` -> op, for the ops PyTorch has as ``torch.<name>`` (and aliases)."""
    return {n: d.fn for d in OPS.values() if d.function for n in (d.name,) + d.aliases}


def namespace():
    """Every op under its name and aliases: ``minitorch.ops.<name>``."""
    return {n: d.fn for d in OPS.values() for n in (d.name,) + d.aliases}


def functional():
    """``minitorch.nn.functional.<name>`` -> op, for the ops declared ``functional=True``."""
    return {d.name: d.fn for d in OPS.values() if d.functional}
