"""Anomaly detection for the backward pass: ``detect_anomaly`` and ``set_detect_anomaly``, as
``torch.autograd``'s.

With anomaly mode on:

- a backward formula that returns NaN in a gradient raises
  ``RuntimeError("Function 'DivBackward' returned nan values in its 0th output.")``, naming the
  node and which of its gradients (one per input of the forward op) is NaN, instead of letting
  the NaN spread silently into every parameter (``check_nan=False`` turns this check off);
- an error in a backward formula (this one included) is preceded by a warning that shows the
  stack of the *forward* call that made the failing node, which is where the bug usually is.

The mode is global (not per thread), as PyTorch's. It costs nothing when off: the engine reads
the flag once per backward pass, and the forward stacks are recorded by a wrapper that
replaces ``Function.apply`` only while the mode is on (rather than a test in ``apply``, which
runs for every op).

May import: functools, traceback, warnings, ``minitorch.autograd.function``.
"""
import functools
import traceback
import warnings

from .function import Function


class _AnomalyMode:
    enabled = False
    check_nan = True


_mode = _AnomalyMode()


def is_anomaly_enabled():
    return _mode.enabled


def is_anomaly_check_nan_enabled():
    return _mode.check_nan


def _set_anomaly_enabled(enabled, check_nan=True):
    _mode.enabled, _mode.check_nan = bool(enabled), bool(check_nan)
    Function.apply = _apply_recording_forward_stack if _mode.enabled else _plain_apply


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on inside it; warns, as
    PyTorch does, that it slows things down (each op then records its stack)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self._previous = (_mode.enabled, _mode.check_nan)
        _set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _set_anomaly_enabled(*self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            previous = (_mode.enabled, _mode.check_nan)  # per call: the function may recurse
            _set_anomaly_enabled(True, self.check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                _set_anomaly_enabled(*previous)
        return wrapper


class set_detect_anomaly:
    """``set_detect_anomaly(True)`` turns anomaly detection on at once (for good, as a plain
    call); as a context manager, the previous mode is restored on exit."""

    def __init__(self, mode, check_nan=True):
        self._previous = (_mode.enabled, _mode.check_nan)
        _set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set_anomaly_enabled(*self._previous)
        return False


# ------------------------------------------------------------------ forward stacks
_plain_apply = Function.__dict__["apply"]


@classmethod  # type: ignore[misc]
def _apply_recording_forward_stack(cls, *args, **kwargs):
    """``Function.apply``, then the caller's stack stored on the node it made."""
    outputs = _plain_apply.__func__(cls, *args, **kwargs)
    for out in outputs if type(outputs) is tuple else (outputs,):
        node = getattr(out, "_ctx", None)
        if node is not None and node.fn is cls and "forward_stack" not in node.__dict__:
            node.forward_stack = "".join(traceback.format_stack()[:-1])
    return outputs


def _warn_with_forward_stack(node):
    stack = node.__dict__.get("forward_stack")
    if stack is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      stacklevel=3)
    else:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused "
                      f"the error:\n{stack}", stacklevel=3)


# ------------------------------------------------------------------ the engine's hook
def checked_backward(node, grads, call_backward):
    """``call_backward(node, grads)`` (the engine's), with anomaly mode's checks around it."""
    try:
        input_grads = call_backward(node, grads)
    except Exception:
        _warn_with_forward_stack(node)
        raise
    if _mode.check_nan:
        for index, (tensor, grad) in enumerate(zip(node.inputs, input_grads)):
            if tensor is None or grad is None:
                continue
            data = grad._data
            if bool((data != data).any()):  # NaN is the one value unequal to itself
                _warn_with_forward_stack(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{index}th output.")
    return input_grads
