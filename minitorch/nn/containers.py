"""Containers of modules: ``Sequential`` (a chain), ``ModuleList`` and ``ModuleDict`` (holders
whose members are registered, so their parameters are found and saved), as in PyTorch.
Members are registered under their position ("0", "1", ...) or key, so state_dict keys match.
May import: ``.module``.
"""
from collections import OrderedDict

from .module import Module


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
