"""Containers, as in PyTorch: of modules, ``Sequential`` (a chain), ``ModuleList`` and
``ModuleDict``; of parameters, ``ParameterList`` and ``ParameterDict``. Their members are
registered (so ``parameters()`` finds them and ``state_dict`` saves them) under their position
("0", "1", ...) or key, so state_dict keys match PyTorch's.
May import: ``.module``, ``.parameter``, ``minitorch.tensor``.
"""
import operator
from collections import OrderedDict
from collections.abc import Iterable, Mapping

from ..tensor import Tensor
from .module import Module
from .parameter import Parameter


def _index(index, length, name):
    if not isinstance(index, int) or isinstance(index, bool):
        raise TypeError(f"{name} indices must be integers or slices, got {type(index).__name__}")
    if not -length <= index < length:
        raise IndexError(f"{name}: index {index} is out of range for length {length}")
    return index % length


class Sequential(Module):
    """Modules applied one after another: ``Sequential(Linear(2, 3), ReLU())`` or an OrderedDict."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return Sequential(OrderedDict(list(self._modules.items())[index]))
        return list(self._modules.values())[_index(index, len(self), "Sequential")]

    def __setitem__(self, index, module):
        key = list(self._modules)[_index(index, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, index):
        keys = list(self._modules)
        for key in (keys[index] if isinstance(index, slice)
                    else [keys[_index(index, len(self), "Sequential")]]):
            del self._modules[key]
        # Renumber, so the positions stay "0".."n-1" as in PyTorch.
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(self._modules.values()))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def forward(self, input):
        for module in self:
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, each registered (so ``parameters()`` sees them); no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self), "ModuleList"))]

    def __setitem__(self, index, module):
        setattr(self, str(_index(index, len(self), "ModuleList")), module)

    def __delitem__(self, index):
        values = list(self._modules.values())
        del values[index if isinstance(index, slice) else _index(index, len(self), "ModuleList")]
        self._modules = OrderedDict((str(i), m) for i, m in enumerate(values))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def append(self, module):
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules):
        for module in modules:
            self.append(module)
        return self

    def insert(self, index, module):
        values = list(self._modules.values())
        values.insert(index, module)
        self._modules = OrderedDict()
        for i, m in enumerate(values):
            self.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules, each registered under its key; no forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def pop(self, key):
        module = self._modules[key]
        del self._modules[key]
        return module

    def clear(self):
        self._modules.clear()

    def update(self, modules):
        items = modules.items() if hasattr(modules, "items") else modules
        for key, module in items:
            self[key] = module


def _as_parameter(value):
    """Tensors become Parameters (sharing memory), as PyTorch's parameter containers do; other
    values (None, numbers, strings) are kept as plain attributes."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


def _describe(value):
    if isinstance(value, Tensor):
        kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
        size = "x".join(str(n) for n in value.shape)
        return f"{kind} containing: [{value.dtype} of size {size}]"
    return f"Object of type: {type(value).__name__}"


class ParameterList(Module):
    """A list of parameters, each registered under its position: ``ParameterList([w1, w2])``.

    Tensors put in it are made Parameters; other objects are held too, unregistered.
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def _key(self, index):
        index = operator.index(index)
        if not -len(self) <= index < len(self):
            raise IndexError(f"ParameterList: index {index} is out of range for length "
                             f"{len(self)}")
        return str(index % len(self))

    def __getitem__(self, index):
        if isinstance(index, slice):
            return type(self)([self[i] for i in range(*index.indices(len(self)))])
        return getattr(self, self._key(index))

    def __setitem__(self, index, value):
        setattr(self, self._key(index), _as_parameter(value))

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __iadd__(self, values):
        return self.extend(values)

    def __dir__(self):
        return [key for key in super().__dir__() if not key.isdigit()]

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        if not isinstance(values, Iterable) or isinstance(values, Tensor):
            raise TypeError(f"ParameterList.extend should be called with an iterable, but got "
                            f"{type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({i}): {_describe(value)}" for i, value in enumerate(self))

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterList should not be called.")


class ParameterDict(Module):
    """An ordered dict of parameters, each registered under its key (a str).

    As PyTorch's: tensors put in it are made Parameters; a plain ``dict`` given to the
    constructor or ``update`` is added in sorted key order (an OrderedDict, a ParameterDict or
    a sequence of pairs in its own order).
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    @staticmethod
    def _check_key(key):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict: keys must be strings, got {type(key).__name__} "
                            f"{key!r}")
        return key

    def __getitem__(self, key):
        if self._check_key(key) not in self._keys:  # AttributeError, as PyTorch's getattr gives
            raise AttributeError(f"'ParameterDict' object has no key '{key}'")
        return getattr(self, key)

    def __setitem__(self, key, value):
        setattr(self, self._check_key(key), _as_parameter(value))
        self._keys[key] = None

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __reversed__(self):
        return reversed(list(self._keys))

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((key, self[key]) for key in self._keys)

    def values(self):
        return (self[key] for key in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def pop(self, key):
        value = self[key]
        del self[key]
        return value

    def popitem(self):
        if not self._keys:
            raise KeyError("popitem(): ParameterDict is empty")
        key = next(reversed(list(self._keys)))
        return key, self.pop(key)

    def clear(self):
        for key in list(self._keys):
            del self[key]

    def copy(self):
        return ParameterDict(OrderedDict(self.items()))

    def fromkeys(self, keys, default=None):
        return ParameterDict((key, default) for key in keys)

    def update(self, parameters):
        if not isinstance(parameters, Iterable):
            raise TypeError(f"ParameterDict.update should be called with an iterable of "
                            f"key/value pairs, but got {type(parameters).__name__}")
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        else:
            pairs = []
            for i, pair in enumerate(parameters):
                if not isinstance(pair, Iterable) or len(pair) != 2:
                    raise ValueError(f"ParameterDict update sequence element #{i} should be "
                                     f"a (key, value) pair, got {pair!r}")
                pairs.append(tuple(pair))
        for key, value in pairs:
            self[key] = value

    def __or__(self, other):
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other):
        merged = other.copy()
        merged.update(self)
        return merged

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({key}): {_describe(value)}" for key, value in self.items())

    def __call__(self, *args, **kwargs):
        raise RuntimeError("ParameterDict should not be called.")
