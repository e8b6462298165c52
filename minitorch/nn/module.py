"""``Module``: the base class of layers, as ``torch.nn.Module``.

A module owns parameters, buffers and sub-modules, registered by plain attribute assignment
(``self.linear = Linear(2, 3)``), and gives them back by dotted name (``linear.weight``) for
optimizers (``parameters()``) and checkpoints (``state_dict``/``load_state_dict``, whose keys
match PyTorch's for the same architecture). It also switches train/eval mode, casts dtypes
and moves between devices (``to``/``double``/``float``/``half``/``cuda``/``cpu``), and prints
itself as a nested tree like PyTorch's repr. Calling a module runs ``forward`` between its
hooks (forward pre-hooks, forward hooks, full backward hooks and backward pre-hooks, with
PyTorch's order, arguments and return rules).
May import: ``minitorch.tensor``, ``minitorch.dtype``, ``minitorch.device``,
``minitorch.device_arrays``, ``minitorch.autograd``, ``.parameter``, ``.hooks``.
"""
import warnings
from collections import OrderedDict, namedtuple

import numpy as np

from ..autograd.grad_mode import no_grad
from ..device import parse_to
from ..device_arrays import device_of, resolve, to_device
from ..dtype import as_dtype, bfloat16, float16, float32, float64, of_array
from ..tensor import Tensor
from .hooks import BackwardHook, RemovableHandle
from .parameter import Parameter


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: keys expected but not given, and given but unexpected."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """Base class of every layer: subclasses set attributes in ``__init__``, define ``forward``."""

    training: bool

    def __init__(self):
        # object.__setattr__: our own __setattr__ needs these dicts to exist already.
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        # Hooks: id -> hook in call order, and the ids registered with_kwargs / always_call.
        for name in ("_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
                     "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
                     "_backward_pre_hooks", "_backward_hooks"):
            object.__setattr__(self, name, OrderedDict())
        # Set by the first registration: until then a call is forward alone, tested with one
        # attribute (testing the four hook dicts instead costs a third more per call).
        object.__setattr__(self, "_may_have_hooks", False)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required '
                                  '"forward" function')

    def __call__(self, *args, **kwargs):
        if not self._may_have_hooks:
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args, kwargs):
        """``forward`` between the hooks, in PyTorch's order: pre-hooks (each may replace the
        arguments), the backward hooks' wrapping of the inputs, forward, forward hooks (each
        may replace the result), the wrapping of the outputs. If anything raises, the forward
        hooks registered with ``always_call`` that have not run yet still run."""
        result = None
        called = set()
        try:
            for hook_id, hook in list(self._forward_pre_hooks.items()):
                if hook_id in self._forward_pre_hooks_with_kwargs:
                    new = hook(self, args, kwargs)
                    if new is not None:
                        if not (isinstance(new, tuple) and len(new) == 2):
                            raise RuntimeError("forward pre-hook must return None or a tuple of "
                                               f"(new_args, new_kwargs), but got {new}.")
                        args, kwargs = new
                else:
                    new = hook(self, args)
                    if new is not None:
                        args = new if isinstance(new, tuple) else (new,)
            backward_hook = None
            if self._backward_hooks or self._backward_pre_hooks:
                backward_hook = BackwardHook(self, list(self._backward_hooks.values()),
                                             list(self._backward_pre_hooks.values()))
                args = backward_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id in self._forward_hooks_always_called:
                    called.add(hook_id)
                if hook_id in self._forward_hooks_with_kwargs:
                    new = hook(self, args, kwargs, result)
                else:
                    new = hook(self, args, result)
                if new is not None:
                    result = new
            if backward_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  UserWarning, stacklevel=3)
                result = backward_hook.setup_output_hook(result)
            return result
        except Exception:
            for hook_id, hook in list(self._forward_hooks.items()):
                if hook_id not in self._forward_hooks_always_called or hook_id in called:
                    continue
                try:
                    if hook_id in self._forward_hooks_with_kwargs:
                        new = hook(self, args, kwargs, result)
                    else:
                        new = hook(self, args, result)
                    if new is not None:
                        result = new
                except Exception as error:
                    warnings.warn("module forward hook with ``always_call=True`` raised an "
                                  "exception that was silenced as another error was raised in "
                                  f"forward: {error}", UserWarning, stacklevel=3)
            raise

    # ------------------------------------------------------------------ hooks
    def _add_hook(self, hooks, hook, prepend, flags=()):
        """Register ``hook`` in ``hooks`` under a new id; ``flags``: (flag dict, whether to set
        the flag) pairs, whose dicts forget the id too when the handle removes it."""
        object.__setattr__(self, "_may_have_hooks", True)
        handle = RemovableHandle(hooks, extra_dict=[flag_dict for flag_dict, _ in flags])
        hooks[handle.id] = hook
        for flag_dict, on in flags:
            if on:
                flag_dict[handle.id] = True
        if prepend:
            hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Run ``hook(module, args)`` before each forward (``hook(module, args, kwargs)`` with
        ``with_kwargs``); a result other than None replaces the arguments (a non-tuple is
        wrapped in one; with kwargs it must be ``(args, kwargs)``). ``prepend`` runs it before
        the hooks already registered. Returns a handle whose ``remove()`` unregisters it."""
        return self._add_hook(self._forward_pre_hooks, hook, prepend,
                              [(self._forward_pre_hooks_with_kwargs, with_kwargs)])

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """Run ``hook(module, args, output)`` after each forward (``hook(module, args, kwargs,
        output)`` with ``with_kwargs``); a result other than None replaces the output.
        ``always_call`` runs it even when forward raises. Returns a removable handle."""
        return self._add_hook(self._forward_hooks, hook, prepend,
                              [(self._forward_hooks_with_kwargs, with_kwargs),
                               (self._forward_hooks_always_called, always_call)])

    def register_full_backward_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_input, grad_output)`` when the gradients with respect to the
        module's inputs have been computed (tuples, one entry per positional argument and
        output; None for non-tensors and inputs that need no gradient); a result other than
        None replaces ``grad_input``. Returns a removable handle."""
        return self._add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_output)`` when the gradients with respect to the module's
        outputs arrive, before the module's own backward; a result other than None replaces
        ``grad_output``. Returns a removable handle."""
        return self._add_hook(self._backward_pre_hooks, hook, prepend)

    # ------------------------------------------------------------------ registration
    def _check_name(self, name, kind):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'{kind} name can\'t contain "." or be empty, got {name!r}')
        if hasattr(self, name) and name not in self._parameters and name not in self._buffers \
                and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")

    def register_parameter(self, name, param):
        """Register ``param`` (a Parameter or None) under ``name``."""
        self._check_name(name, "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter "
                            f"'{name}' (minitorch.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Register a tensor that is state but not a parameter (saved unless not persistent)."""
        self._check_name(name, "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(minitorch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Register ``module`` (a Module or None) as a child under ``name``."""
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(minitorch.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module "
                                f"'{name}' (minitorch.nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(minitorch Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name):
        """Drop ``name`` from every registry, so one name means one thing."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def __getattr__(self, name):
        # Only called when normal lookup fails: the registered things live in the dicts.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))

    # ------------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """Yield (dotted name, module) for this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name,
                                            remove_duplicate)

    def modules(self, remove_duplicate=True):
        for _, module in self.named_modules(remove_duplicate=remove_duplicate):
            yield module

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry, prefix, recurse, remove_duplicate=True):
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        seen = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """Yield (dotted name, Parameter); a parameter shared by two modules comes once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target):
        module = self
        for item in target.split(".") if target else []:
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    def get_parameter(self, target):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._parameters:
            raise AttributeError(f"{type(module).__name__} has no parameter `{name}`")
        return module._parameters[name]

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode=True):
        """Set training mode (dropout active) on this module and every descendant."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be boolean, got {mode!r}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = param.grad.detach()
                param.grad._data[...] = 0

    def apply(self, fn):
        """Call ``fn`` on every child (recursively) and then on self, as PyTorch's ``apply``."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ dtypes and devices
    def _apply_to_tensors(self, convert):
        """Replace the data of every parameter, gradient and buffer by ``convert(array)``.

        Parameters keep their identity (an optimizer built before ``.double()`` still sees
        them), as in PyTorch, where ``param.data`` is swapped in place.
        """
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                param._data = convert(param._data)
                if param.grad is not None:
                    param.grad = Tensor._make(convert(param.grad._data))
            for name, buffer in module._buffers.items():
                if buffer is not None:
                    buffer._data = convert(buffer._data)
        return self

    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(tensor)`` (its device and
        dtype), with ``non_blocking``, as PyTorch's: moves the parameters, gradients and buffers
        to the device, in place (the Parameter objects stay, so an optimizer made before still
        holds them), and casts the floating point ones (integer ones keep their dtype, as in
        PyTorch)."""
        device, dtype, _ = parse_to(args, kwargs, "to")
        target = None if device is None else resolve(device, "to")
        if dtype is not None:
            dtype = as_dtype(dtype)
            if not dtype.is_floating_point:
                raise TypeError(f"to: nn.Module.to only accepts floating point dtypes, got "
                                f"{dtype}")

        def convert(array):
            if dtype is not None and of_array(array).is_floating_point:
                array = array.astype(dtype.numpy)
            return array if target is None else to_device(array, target)
        return self if dtype is None and target is None else self._apply_to_tensors(convert)

    def double(self):
        return self.to(float64)

    def float(self):
        return self.to(float32)

    def half(self):
        return self.to(float16)

    def bfloat16(self):
        return self.to(bfloat16)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        """``to`` the current GPU, or ``device``: RuntimeError where CUDA is not available."""
        target = resolve("cuda" if device is None else device, "cuda")
        if target.type != "cuda":
            raise RuntimeError(f"cuda: Invalid device, must be cuda device, got {target}")
        return self.to(target)

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self, destination=None, prefix="", keep_vars=False):
        """OrderedDict of dotted name → tensor (detached unless keep_vars) sharing memory with
        the parameters and persistent buffers, in registration order, as PyTorch's."""
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buffer if keep_vars else buffer.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination, prefix + name + ".", keep_vars)
        return destination

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copy ``state_dict``'s values into the parameters and buffers, in place (or, with
        ``assign=True``, make the given tensors the parameters and buffers themselves, as
        PyTorch's: a parameter keeps its ``requires_grad``).

        Values may be minitorch tensors or numpy arrays; they are cast to the destination dtype.
        With ``strict``, missing keys, unexpected keys and mis-shaped values raise a
        RuntimeError listing all of them; a mis-shaped value raises even without ``strict``
        (as in PyTorch). Returns ``(missing_keys, unexpected_keys)``.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict).__name__}")
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        mismatched = []
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            array = value._data if isinstance(value, Tensor) else np.asarray(value)
            if tuple(array.shape) != tuple(target.shape):
                mismatched.append(
                    f'size mismatch for {key}: copying a param with shape {tuple(array.shape)} '
                    f'from checkpoint, the shape in current model is {tuple(target.shape)}.')
        errors = []
        if strict and unexpected:
            errors.append("Unexpected key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in unexpected) + ". ")
        if strict and missing:
            errors.append("Missing key(s) in state_dict: "
                          + ", ".join(f'"{k}"' for k in missing) + ". ")
        errors.extend(mismatched)
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for key, target in own.items():
                if key not in state_dict:
                    continue
                value = state_dict[key]
                if assign:
                    self._assign(key, target, value)
                    continue
                array = value._data if isinstance(value, Tensor) else np.asarray(value)
                array = to_device(array, device_of(target._data))  # a CPU state into a GPU model
                np.copyto(target._data, array, casting="unsafe")
                target._version[0] += 1
        return _IncompatibleKeys(missing, unexpected)

    def _assign(self, key, target, value):
        """``load_state_dict(assign=True)`` for one entry: the value becomes the attribute."""
        owner_path, _, name = key.rpartition(".")
        owner = self.get_submodule(owner_path) if owner_path else self
        value = value if isinstance(value, Tensor) else Tensor(np.asarray(value))
        if isinstance(target, Parameter):
            value = Parameter(value.detach(), requires_grad=target.requires_grad)
        setattr(owner, name, value)

    # ------------------------------------------------------------------ printing
    def extra_repr(self):
        """The text inside this module's parentheses (its own settings); override it."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _addindent(repr(module), 2)
                       for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        text = self._get_name() + "("
        if lines:
            if len(extra_lines) == 1 and not child_lines:
                text += extra_lines[0]
            else:
                text += "\n  " + "\n  ".join(lines) + "\n"
        return text + ")"
