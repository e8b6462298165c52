"""``minitorch.backends.cudnn``: PyTorch's cuDNN flags, settable so that programs which set them
(``torch.backends.cudnn.benchmark = True``) run unchanged. minitorch has no cuDNN: they change
nothing, and ``is_available()`` is False. Defaults are PyTorch's."""

enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    return False


def version():
    """None: no cuDNN library is loaded (as PyTorch without one)."""
    return None
