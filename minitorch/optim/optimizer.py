"""``Optimizer``: the base class that holds parameter groups and per-parameter state.

A subclass only says how one group is updated (``_update_group``) and which hyperparameters
are valid (``_check_hyperparameters``); everything else (param groups with defaults filled,
``zero_grad``, ``step(closure)``, ``add_param_group``, ``state_dict``/``load_state_dict`` in
PyTorch's layout) lives here.

Updates are written on the parameters' numpy storage (``p._data``) in place, so a tensor that
a model holds sees the new values, and each update bumps the tensor's version counter as an
in-place op would (a graph that saved the old value then refuses to backward through it).

May import: numpy, ``minitorch.tensor``, ``minitorch.autograd``, ``minitorch.device_arrays``.
"""
import copy

import numpy as np

from ..autograd.grad_mode import enable_grad
from ..backends.tape import host, recording
from ..device_arrays import to_device
from ..tensor import Tensor


class _RequiredParameter:
    """Marks a hyperparameter with no default: each param group must give it."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def implementation_options(**options):
    """PyTorch's choices among its own implementations of a step (``foreach``, ``fused``,
    ``capturable``), as the group entries PyTorch keeps: minitorch has one implementation, so
    they are accepted and change nothing; ``differentiable=True`` is refused (no such step)."""
    if options.get("differentiable"):
        raise NotImplementedError("differentiable=True: minitorch's optimizer steps are not "
                                  "recorded by autograd")
    return options


class Optimizer:
    """Base class of optimizers, as ``torch.optim.Optimizer``.

    ``params`` is an iterable of tensors, or of dicts each with a ``"params"`` entry and
    per-group hyperparameters that override ``defaults``.
    """

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        self.state = {}            # parameter tensor -> its dict of state (keyed by identity)
        self.param_groups = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got a {type(params).__name__}")
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __repr__(self):
        lines = [type(self).__name__ + " ("]
        for index, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {index}")
            lines.extend(f"    {key}: {group[key]}" for key in sorted(group) if key != "params")
        return "\n".join(lines) + "\n)"

    # ------------------------------------------------------------------ groups
    def add_param_group(self, param_group):
        """Add a group of parameters (a dict with ``"params"``), filling missing options."""
        if not isinstance(param_group, dict):
            raise TypeError(f"add_param_group: param_group must be a dict, got "
                            f"{type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError("add_param_group: param_group must have a 'params' entry")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs; "
                            "use a list instead")
        params = list(params)
        for index, p in enumerate(params):
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but params[{index}] is a "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"can't optimize a non-leaf Tensor (params[{index}] has "
                                 f"grad_fn={p.grad_fn!r})")
            if not p.dtype.is_floating_point:
                raise TypeError(f"optimizer can only optimize floating point tensors, params"
                                f"[{index}] has dtype {p.dtype}")
        if len({id(p) for p in params}) != len(params):
            raise ValueError("optimizer contains a parameter group with duplicate parameters")
        taken = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in taken for p in params):
            raise ValueError("some parameters appear in more than one parameter group")

        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name!r}")
            group.setdefault(name, default)
        self._check_hyperparameters(group)
        self.param_groups.append(group)

    def _check_hyperparameters(self, group):
        """Raise ValueError naming a hyperparameter of ``group`` that is out of range."""
        lr = group.get("lr")
        if lr is not None and lr is not required and not lr >= 0:
            raise ValueError(f"Invalid learning rate: lr must be >= 0, got {lr}")

    # ------------------------------------------------------------------ stepping
    def zero_grad(self, set_to_none=True):
        """Reset every parameter's ``.grad``: to None (the default) or to zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad = False
                    p.grad.zero_()

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns ``closure()`` if given.

        ``closure`` re-evaluates the model and returns the loss (it runs with grad enabled).
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            with_grad = [p for p in group["params"] if p.grad is not None]
            if not with_grad:
                continue
            if recording() is None:
                self._update_group(group, with_grad)
            else:  # a captured step's replay runs the update again: its scalars change
                host(_GroupUpdate(self, group, with_grad))
        return loss

    def _update_group(self, group, params):
        """Apply one update to ``params`` (those of ``group`` that have a ``.grad``)."""
        raise NotImplementedError

    def _split_update(self, group, params, grads):
        """The update as one kernel call per parameter, for a captured step (Adam's says how);
        None: this optimizer's update runs whole, after the backward."""
        return None

    @staticmethod
    def _grad_array(p):
        grad = p.grad
        if not isinstance(grad, Tensor):
            raise TypeError(f"a parameter's .grad must be a Tensor, got {type(grad).__name__}")
        if tuple(grad.shape) != tuple(p.shape):
            raise ValueError(f"a parameter of shape {tuple(p.shape)} has a .grad of shape "
                             f"{tuple(grad.shape)}")
        return grad._data

    @staticmethod
    def _mark_updated(p):
        p._version[0] += 1

    def _state_array(self, state, name, like):
        """``state[name]`` as a zero-initialised tensor shaped like ``like``; its numpy array."""
        if name not in state:
            state[name] = Tensor._make(np.zeros_like(like))
        return state[name]._data

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self):
        """The optimizer's state in PyTorch's layout.

        ``{"state": {index: {name: tensor or number}}, "param_groups": [{..., "params":
        [index, ...]}]}``, indices counting the parameters of all groups in order. Unlike
        PyTorch, the tensors are copies (a snapshot): later steps do not change a state dict
        already taken.
        """
        index_of, packed_groups = {}, []
        for group in self.param_groups:
            packed = {key: copy.deepcopy(value) for key, value in group.items()
                      if key != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        packed_state = {}
        for group in self.param_groups:
            for p in group["params"]:
                if p in self.state:
                    packed_state[index_of[id(p)]] = {
                        name: _copy_state_value(value) for name, value in self.state[p].items()}
        return {"state": packed_state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict):
        """Restore state from ``state_dict()`` output; the parameters are the ones given at
        construction, matched by position. Tensors are copied and cast to the parameter's dtype,
        on the parameter's device (a checkpoint loads on the CPU; the model may be on a GPU).
        """
        if not isinstance(state_dict, dict) or "state" not in state_dict \
                or "param_groups" not in state_dict:
            raise ValueError("load_state_dict: state_dict must be a dict with 'state' and "
                             "'param_groups' entries")
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups: "
                             f"expected {len(self.param_groups)}, got {len(saved_groups)}")
        for index, (group, saved) in enumerate(zip(self.param_groups, saved_groups)):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError(f"loaded state dict contains a parameter group {index} that "
                                 f"doesn't match the size of optimizer's group: expected "
                                 f"{len(group['params'])} parameters, got {len(saved['params'])}")
        param_of = {}
        for group, saved in zip(self.param_groups, saved_groups):
            for p, saved_index in zip(group["params"], saved["params"]):
                param_of[int(saved_index)] = p

        new_state = {}
        for key, saved_param_state in state_dict["state"].items():
            key = int(key)
            if key not in param_of:
                raise ValueError(f"load_state_dict: state for parameter index {key} matches no "
                                 "parameter of this optimizer")
            p = param_of[key]
            restored = {}
            for name, value in saved_param_state.items():
                if isinstance(value, Tensor):
                    if name != "step" and value._data.dtype.kind == "f":
                        if tuple(value.shape) != tuple(p.shape) and value.ndim != 0:
                            raise ValueError(f"load_state_dict: state {name!r} of parameter "
                                             f"{key} has shape {tuple(value.shape)}, expected "
                                             f"{tuple(p.shape)}")
                        value = Tensor._make(to_device(value._data.astype(p._data.dtype, copy=True),
                                                       p.device))
                    else:
                        value = Tensor._make(value._data.copy())
                else:
                    value = copy.deepcopy(value)
                restored[name] = value
            new_state[p] = restored

        new_groups = []
        for group, saved in zip(self.param_groups, saved_groups):
            restored_group = {key: copy.deepcopy(value) for key, value in saved.items()
                              if key != "params"}
            if "betas" in restored_group and isinstance(restored_group["betas"], list):
                restored_group["betas"] = tuple(restored_group["betas"])
            restored_group["params"] = group["params"]
            new_groups.append(restored_group)
        self.state = new_state
        # the groups' dicts refilled, not replaced: a captured step's update holds them
        for group, restored_group in zip(self.param_groups, new_groups):
            group.clear()
            group.update(restored_group)


def _copy_state_value(value):
    if isinstance(value, Tensor):
        return Tensor._make(value._data.copy())
    return copy.deepcopy(value)


class _GroupUpdate:
    """``optimizer._update_group(group, params)`` as a host callback of a captured step
    (backends/tape.py): a replay makes it again; the arrays it reads and writes and the Python
    values of the parameters' state (step counts) are what capture's check rolls back."""

    def __init__(self, optimizer, group, params):
        self.optimizer, self.group, self.params = optimizer, group, params
        self.grads = [p.grad for p in params]  # the step's own: a replay rewrites them

    def __call__(self):
        held = [p.grad for p in self.params]
        try:
            for p, grad in zip(self.params, self.grads):
                p.grad = grad
            self.optimizer._update_group(self.group, self.params)
        finally:
            for p, grad in zip(self.params, held):
                p.grad = grad

    def arrays(self):
        found = []
        for p, grad in zip(self.params, self.grads):
            found += [p._data, grad._data]
            found += [v._data for v in self.optimizer.state.get(p, {}).values()
                      if isinstance(v, Tensor)]
        return found

    def save(self):
        return [{k: v for k, v in self.optimizer.state.get(p, {}).items()
                 if not isinstance(v, Tensor)} for p in self.params]

    def restore(self, saved):
        for p, values in zip(self.params, saved):
            self.optimizer.state.setdefault(p, {}).update(values)

    def adopt(self):
        """Each parameter's ``.grad`` back on this step's gradient (an eager call moved it)."""
        for p, grad in zip(self.params, self.grads):
            p.grad = grad

    def split(self):
        """The update in parts for backends/update_schedule.py, or None where the optimizer
        has none: ``(prepare, updates, finish)``, host callbacks ``prepare`` (before every
        update) and ``finish`` (where this update was), and ``updates``, one ``(arrays, call)``
        per parameter. Should the optimizer's state be replaced after the capture
        (``load_state_dict``), the parts' calls, which hold the old state's memory, stand down
        and ``finish`` makes the whole update, as this callback does."""
        parts = self.optimizer._split_update(self.group, self.params,
                                             [grad._data for grad in self.grads])
        if parts is None:
            return None
        prepare, updates, enable = parts
        recorded_state, whole = self.optimizer.state, [False]

        def prepare_if_current():
            replaced = self.optimizer.state is not recorded_state
            if replaced != whole[0]:
                enable(not replaced)
                whole[0] = replaced
            if not replaced:
                prepare()

        def finish():
            if whole[0]:
                self()
        return prepare_if_current, updates, finish
