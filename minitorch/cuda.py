"""``minitorch.cuda``: what a PyTorch program asks of ``torch.cuda``: is there a GPU, which is
current, wait for it.

Where CuPy is installed and sees a GPU, ``is_available()`` is True and tensors can be put on
``"cuda"`` (``device_arrays.py``); elsewhere it is False and ``device_count()`` 0, so
``device = "cuda" if minitorch.cuda.is_available() else "cpu"`` picks the CPU, and what needs a
GPU (``current_device``, ``synchronize``, ``get_device_name``, ``set_device``) raises a
RuntimeError saying why. The seeding functions change nothing: a GPU tensor's random numbers
are drawn on the host by the global generator (``minitorch.manual_seed`` seeds them), as
PyTorch's seeding functions change nothing without a GPU.
May import: ``minitorch.device_arrays``.
"""
from . import device_arrays


def is_available():
    return device_arrays.device_count() > 0


def device_count():
    return device_arrays.device_count()


def is_initialized():
    return is_available()


def is_bf16_supported(including_emulation=True):
    return False  # bfloat16 arrays run on the CPU only (ml_dtypes is numpy's)


def manual_seed(seed):
    """No-op: GPU random numbers come from the host's generator (see the module's text)."""


def manual_seed_all(seed):
    """No-op, as ``manual_seed``."""


def seed():
    """No-op, as ``manual_seed``."""


def seed_all():
    """No-op, as ``manual_seed``."""


def _index(device, caller):
    """The GPU index ``device`` (None: the current GPU, an int, "cuda:i", a device) names."""
    if device is None:
        return device_arrays.current_cuda_index()
    target = device_arrays.resolve(device, f"cuda.{caller}")
    if target.type != "cuda":
        raise ValueError(f"cuda.{caller}: Expected a cuda device, but got: {target}")
    return target.index


def current_device():
    """The index of the current GPU."""
    return device_arrays.current_cuda_index()


def set_device(device):
    """Make ``device`` the current GPU: where ``"cuda"`` tensors go and kernels run."""
    device_arrays.gpu_library().cuda.Device(_index(device, "set_device")).use()


def synchronize(device=None):
    """Wait until every kernel queued on the GPU has finished (kernels run asynchronously: time
    GPU work with a synchronize before reading the clock)."""
    device_arrays.gpu_library().cuda.Device(_index(device, "synchronize")).synchronize()


def get_device_name(device=None):
    gpu = device_arrays.gpu_library()
    name = gpu.cuda.runtime.getDeviceProperties(_index(device, "get_device_name"))["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def empty_cache():
    """Give the GPU memory that the GPU library keeps for reuse back to the driver (a no-op
    without a GPU)."""
    if is_available():
        device_arrays.gpu_library().get_default_memory_pool().free_all_blocks()


def memory_allocated(device=None):
    """Bytes of GPU memory held by live arrays (0 without a GPU)."""
    if not is_available():
        return 0
    return int(device_arrays.gpu_library().get_default_memory_pool().used_bytes())


class device:  # noqa: N801  (PyTorch's name)
    """``with minitorch.cuda.device(1):``: make a GPU current for the block."""

    def __init__(self, device):
        self._target = device

    def __enter__(self):
        self._previous = current_device()
        set_device(self._target)

    def __exit__(self, *exc):
        set_device(self._previous)


__all__ = ["is_available", "device_count", "is_initialized", "is_bf16_supported", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "current_device", "set_device", "synchronize",
           "get_device_name", "empty_cache", "memory_allocated", "device"]
