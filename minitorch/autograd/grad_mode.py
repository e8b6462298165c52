"""Whether operations record the graph: ``no_grad``, ``enable_grad``, ``set_grad_enabled``,
``inference_mode``.

Each works as a context manager and as a decorator, like PyTorch's. The mode is per thread,
as PyTorch's is: the C kernels release the GIL, so two Python threads run ops at the same time,
and one thread's ``no_grad`` must not switch off recording in the other. Every thread starts
with grad mode on, whatever the thread that started it had.
"""
import functools
import threading


class _State(threading.local):
    # A class attribute: a thread that has not set the mode reads this default.
    enabled = True


_state = _State()


def is_grad_enabled():
    return _state.enabled


class _GradMode:
    """Sets grad mode to ``self.mode`` inside a ``with`` block or a decorated function."""

    mode = True

    def __new__(cls, fn=None):
        # ``@no_grad`` without parentheses decorates ``fn`` directly, as in PyTorch.
        instance = super().__new__(cls)
        return instance if fn is None else instance(fn)

    def __init__(self, fn=None):
        pass

    def __enter__(self):
        self._previous = _state.enabled
        _state.enabled = self.mode

    def __exit__(self, *exc):
        _state.enabled = self._previous
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    """Ops inside do not record the graph: their results have ``requires_grad=False``."""

    mode = False


class enable_grad(_GradMode):
    """Ops inside record the graph, even within ``no_grad``."""

    mode = True


class set_grad_enabled(_GradMode):
    """``set_grad_enabled(False)`` is ``no_grad()``; as a plain call it sets this thread's mode
    for good."""

    def __new__(cls, mode):
        return object.__new__(cls)

    def __init__(self, mode):
        self.mode = bool(mode)
        self._previous = _state.enabled
        _state.enabled = self.mode  # effective immediately, as torch.set_grad_enabled(False) is

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _state.enabled = self._previous
        return False

    def __call__(self, fn):
        mode = self.mode
        _state.enabled = self._previous  # used as a decorator: don't leave the mode changed

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with set_grad_enabled(mode):
                return fn(*args, **kwargs)
        return wrapper


class _InferenceState(threading.local):
    enabled = False


_inference = _InferenceState()


def is_inference_mode_enabled():
    return _inference.enabled


class inference_mode(_GradMode):
    """``inference_mode()`` (or ``inference_mode(True)``): no graph is recorded, as under
    ``no_grad``, and ``is_inference_mode_enabled()`` is True; ``inference_mode(False)`` turns
    both back (grad mode on), as PyTorch's. A context manager and a decorator (``@inference_mode``
    with or without parentheses).

    Differs from PyTorch: tensors made inside are ordinary tensors (PyTorch marks them
    "inference tensors", which autograd later refuses); minitorch gains no speed from the mode
    beyond ``no_grad``'s."""

    def __new__(cls, mode=True):
        instance = object.__new__(cls)
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without parentheses
            instance.__init__(True)
            return instance(mode)
        return instance

    def __init__(self, mode=True):
        self.mode = not bool(mode)    # grad mode inside
        self.inference = bool(mode)

    def __enter__(self):
        self._previous = _state.enabled, _inference.enabled
        _state.enabled, _inference.enabled = self.mode, self.inference

    def __exit__(self, *exc):
        _state.enabled, _inference.enabled = self._previous
        return False

    def __call__(self, fn):
        inference = self.inference

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(inference):
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return inference_mode(self.inference)
