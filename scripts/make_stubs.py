"""Writes the type stubs of the names minitorch binds at import time, from the op registry.

Tensor's ops (``x.sum()``, ``x @ y``, ``x.add_(y)``) are set on the class by
``minitorch.ops.registry.bind()``, and ``minitorch.relu`` or ``F.gelu`` are put in their module's
globals, so a type checker reading the source sees none of them. This script imports minitorch
and writes what it finds, with each function's signature from ``inspect``:

- ``minitorch/tensor.pyi``: the whole ``minitorch.tensor`` module, Tensor with every method;
- ``minitorch/_functions.pyi``: the ops ``minitorch/__init__.py`` takes from the registry;
- ``minitorch/nn/_functional_ops.pyi``: the ops ``nn/functional.py`` takes from it.

Parameters are typed ``Any`` (the code has no annotations); return types are ``Tensor`` for an
op unless ``OP_RETURNS`` says otherwise, and come from ``OWN_TYPES`` for tensor.py's own
members: a public member missing there stops the script, so a new one cannot go untyped.
``tests/test_typing.py`` checks that the committed stubs are what this script writes.

    python scripts/make_stubs.py            # rewrite the stubs
    python scripts/make_stubs.py --check    # exit 1 if a committed stub differs
"""
import argparse
import inspect
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What an op returns where it is not one Tensor: a type, or overloads as (parameters, type).
OP_RETURNS = {
    "max": [("", "Tensor"), ("other: Tensor", "Tensor"),
            ("dim: builtins.int, keepdim: builtins.bool = False", "_ValuesIndices")],
    "min": [("", "Tensor"), ("other: Tensor", "Tensor"),
            ("dim: builtins.int, keepdim: builtins.bool = False", "_ValuesIndices")],
    "sort": "_ValuesIndices",
    "topk": "_ValuesIndices",
    "nonzero": [("*, as_tuple: Literal[False] = False", "Tensor"),
                ("*, as_tuple: Literal[True]", "tuple[Tensor, ...]")],
    "unique": "Any",  # a Tensor, or a tuple of them when an inverse or counts are asked for
    "max_pool2d": "Any",  # a Tensor, or (values, indices) with return_indices=True
    "allclose": "builtins.bool",
    "split": "tuple[Tensor, ...]",
    "chunk": "tuple[Tensor, ...]",
    "unbind": "tuple[Tensor, ...]",
    "backward": "None",
    "setitem": "None",
    "type": [("", "builtins.str"), ("dtype: Any, non_blocking: Any = False, **kwargs: Any",
                                    "Tensor")],
}

# Types of tensor.py's own public members (private ones are Any), by qualified name.
OWN_TYPES = {
    "Tensor.__array_priority__": "builtins.int",
    "Tensor.requires_grad": "builtins.bool",
    "Tensor.grad": "Tensor | None",
    "Tensor.shape": "Size",
    "Tensor.size": [("", "Size"), ("dim: builtins.int", "builtins.int")],
    "Tensor.ndim": "builtins.int",
    "Tensor.dim": "builtins.int",
    "Tensor.numel": "builtins.int",
    "Tensor.__len__": "builtins.int",
    "Tensor.nelement": "builtins.int",
    "Tensor.dtype": "_DType",
    "Tensor.device": "_Device",
    "Tensor.is_cuda": "builtins.bool",
    "Tensor.is_cpu": "builtins.bool",
    "Tensor.get_device": "builtins.int",
    "Tensor.element_size": "builtins.int",
    "Tensor.itemsize": "builtins.int",
    "Tensor.nbytes": "builtins.int",
    "Tensor.__format__": "builtins.str",
    "Tensor.cuda": "NoReturn",
    "Tensor.new_tensor": "Tensor",
    "Tensor.new_zeros": "Tensor",
    "Tensor.new_ones": "Tensor",
    "Tensor.new_empty": "Tensor",
    "Tensor.new_full": "Tensor",
    "Tensor.is_leaf": "builtins.bool",
    "Tensor.grad_fn": "Any",
    "Tensor.data": "Tensor",
    "Tensor.is_contiguous": "builtins.bool",
    "Tensor.stride": [("", "tuple[builtins.int, ...]"), ("dim: builtins.int", "builtins.int")],
    "Tensor.data_ptr": "builtins.int",
    "Tensor.T": "Tensor",
    "Tensor.mT": "Tensor",
    "Tensor.numpy": "NDArray[Any]",
    "Tensor.item": "builtins.float | builtins.int | builtins.bool",
    "Tensor.tolist": "Any",
    "Tensor.__float__": "builtins.float",
    "Tensor.__int__": "builtins.int",
    "Tensor.__bool__": "builtins.bool",
    "Tensor.__index__": "builtins.int",
    "Tensor.__array__": "NDArray[Any]",
    "Tensor.__copy__": "Tensor",
    "Tensor.__dlpack__": "Any",
    "Tensor.__dlpack_device__": "tuple[builtins.int, builtins.int]",
    "Tensor.is_floating_point": "builtins.bool",
    "Tensor.cpu": "Tensor",
    "Tensor.detach": "Tensor",
    "Tensor.detach_": "Tensor",
    "Tensor.requires_grad_": "Tensor",
    "Tensor.register_hook": "_RemovableHandle",
    "Tensor.register_post_accumulate_grad_hook": "_RemovableHandle",
    "Tensor.retain_grad": "None",
    "Tensor.retains_grad": "builtins.bool",
    "Tensor.__repr__": "builtins.str",
    "Tensor.__str__": "builtins.str",
    "Tensor.__hash__": "builtins.int",
    "Tensor.__deepcopy__": "Tensor",
    "Tensor.__reduce__": "NoReturn",
    "Size.__repr__": "builtins.str",
    "Size.numel": "builtins.int",
    "normalize_dim": "builtins.int",
    "parse_size": "tuple[builtins.int, ...]",
    "check_fits": "None",
}

HEADER = '''"""Type stub written by scripts/make_stubs.py from the op registry: do not edit."""
# {what}
'''
TYPING = ("Any", "Literal", "NamedTuple", "NoReturn", "overload")

SKIP = {"__module__", "__doc__", "__slots__", "__weakref__", "__dict__", "__qualname__"}


def _default(value):
    """A default as stubs write it: simple literals as they are, anything else as ``...``."""
    simple = value is None or type(value) in (bool, int, float, str)
    return repr(value) if simple else "..."


def _params(fn, first=None):
    """``fn``'s parameters as stub text, every one typed Any; the first replaced by ``first``
    (``self``) where one is given."""
    out, star_done = [first] if first else [], False
    params = list(inspect.signature(fn).parameters.values())
    for p in params[1:] if first else params:
        if p.kind is p.VAR_POSITIONAL:
            out.append(f"*{p.name}: Any")
            star_done = True
        elif p.kind is p.VAR_KEYWORD:
            out.append(f"**{p.name}: Any")
        else:
            if p.kind is p.KEYWORD_ONLY and not star_done:
                out.append("*")
                star_done = True
            text = f"{p.name}: Any"
            out.append(text if p.default is p.empty else f"{text} = {_default(p.default)}")
    return ", ".join(out)


def _def(name, params, returns, indent="", decorators=()):
    lines = [f"{indent}{d}" for d in decorators]
    ignore = "  # type: ignore[override]" if name in ("__eq__", "__ne__") else ""
    lines.append(f"{indent}def {name}({params}) -> {returns}: ...{ignore}")
    return lines


def _function(name, fn, returns, first, indent="", decorators=()):
    """Stub lines of ``name``: ``fn``'s signature, or the overloads ``returns`` lists."""
    if isinstance(returns, list):
        lines = []
        first = first or next(iter(inspect.signature(fn).parameters)) + ": Tensor"
        for params, ret in returns:
            joined = ", ".join(p for p in (first, params) if p)
            lines += _def(name, joined, ret, indent, ("@overload",) + tuple(decorators))
        return lines
    return _def(name, _params(fn, first), returns, indent, decorators)


def _own_type(qualname):
    if qualname.endswith(".__init__"):
        return "None"
    private = qualname.split(".")[-1].startswith("_") and not qualname.endswith("__")
    if qualname in OWN_TYPES:
        return OWN_TYPES[qualname]
    if private or qualname.split(".")[0].startswith("_"):
        return "Any"
    raise SystemExit(f"make_stubs: {qualname} has no type: add it to OWN_TYPES in {__file__}")


def _class_lines(cls, methods):
    """A class of tensor.py: its own members, then ``methods`` (name -> stub lines)."""
    base = "(tuple[builtins.int, ...])" if issubclass(cls, tuple) else ""
    lines = [f"class {cls.__name__}{base}:"]
    for name, value in vars(cls).items():
        if name in SKIP or name in methods:
            continue
        qual, indent = f"{cls.__name__}.{name}", "    "
        if isinstance(value, property):
            lines += _def(name, "self", _own_type(qual), indent, ("@property",))
            if value.fset is not None:
                lines += _def(name, "self, value: Any", "None", indent, (f"@{name}.setter",))
        elif isinstance(value, classmethod):
            lines += _function(name, value.__func__, _own_type(qual), "cls", indent,
                               ("@classmethod",))
        elif inspect.isfunction(value):
            lines += _function(name, value, _own_type(qual), "self", indent)
        else:  # a slot or a class attribute
            lines.append(f"{indent}{name}: {_own_type(qual)}")
    for name in sorted(methods):
        lines += methods[name]
    return lines


def _op_returns(fn):
    return OP_RETURNS.get(fn.__name__, "Tensor")


def tensor_stub():
    """minitorch/tensor.pyi: tensor.py as written, with every method the registry binds."""
    from minitorch.ops import registry
    module = sys.modules["minitorch.tensor"]  # the attribute minitorch.tensor is the function
    methods = {}
    for decl in registry.OPS.values():
        for name in decl.methods:
            methods[name] = _function(name, decl.fn, _op_returns(decl.fn), "self", "    ")
        for name in decl.reflected:
            methods[name] = _def(name, "self, other: Any", "Tensor", "    ")
        for name in decl.inplace:
            methods[name] = _def(name, _params(decl.fn, "self"), "Tensor", "    ")
    for name, fn in registry.METHODS.items():
        if name not in methods:  # @tensor_method: no op of its own
            methods[name] = _function(name, fn, _op_returns(fn), "self", "    ")
    header = HEADER.format(what="minitorch.tensor: tensor.py, with the methods bound by "
                           "minitorch.ops.registry.bind()")
    lines = ["from numpy.typing import NDArray", "", "from .device import device as _Device",
             "from .dtype import dtype as _DType", "",
             "class _ValuesIndices(NamedTuple):", "    values: Tensor", "    indices: Tensor",
             ""]
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__ or name.startswith("__"):
            if name.startswith("_") and not name.startswith("__") and not callable(value):
                lines += [f"{name}: Any", ""]  # module constants (_BY_NUMPY)
            continue
        if inspect.isclass(value):
            lines += _class_lines(value, methods if value is module.Tensor else {}) + [""]
        elif inspect.isfunction(value):
            lines += _function(name, value, _own_type(name), None) + [""]
    return _finish(header, lines)


def _functions_stub(ops, what):
    lines = []
    for name in sorted(ops):
        lines += _function(name, ops[name], _op_returns(ops[name]), None) + [""]
    used = [n for n in ("Tensor", "_ValuesIndices") if re.search(rf"\b{n}\b", "\n".join(lines))]
    lines = [f"from minitorch.tensor import {', '.join(used)}", ""] + lines
    return _finish(HEADER.format(what=what), lines)


def _finish(header, lines):
    """The stub's text: ``header``, the imports its body uses, the body."""
    body = "\n".join(lines).rstrip("\n") + "\n"
    used = [n for n in TYPING if re.search(rf"\b{n}\b", body)]
    imports = ["import builtins"] if "builtins." in body else []
    imports.append(f"from typing import {', '.join(used)}")
    return header + "\n".join(imports) + "\n" + body


def stubs():
    """{path: text} of every stub, beside the minitorch imported (this checkout's by default,
    so that a test of an installed copy checks the stubs it ships)."""
    if ROOT not in sys.path:
        sys.path.insert(0, ROOT)
    import minitorch
    from minitorch.ops import registry
    package = os.path.dirname(os.path.abspath(minitorch.__file__))
    return {
        os.path.join(package, "tensor.pyi"): tensor_stub(),
        os.path.join(package, "_functions.pyi"): _functions_stub(
            registry.functions(), "the ops minitorch/__init__.py takes from the registry"),
        os.path.join(package, "nn", "_functional_ops.pyi"): _functions_stub(
            registry.functional(), "the ops minitorch/nn/functional.py takes from the registry"),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if a committed stub differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in stubs().items():
        old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(os.path.relpath(path))
        if not args.check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    verb = "out of date (run python scripts/make_stubs.py)" if args.check else "written"
    for path in stale:
        print(f"{path}: {verb}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
