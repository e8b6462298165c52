"""``minitorch.backends.mps``: ``is_available()`` and ``is_built()``, both False (minitorch has no
Apple-GPU backend), so that device-picking code written for PyTorch runs unchanged."""


def is_available():
    return False


def is_built():
    return False
