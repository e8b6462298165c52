"""``minitorch.cuda``: what a PyTorch program asks of ``torch.cuda`` before choosing its device.

minitorch computes on the CPU: ``is_available()`` is False and ``device_count()`` 0, so
``device = "cuda" if minitorch.cuda.is_available() else "cpu"`` picks the CPU; the seeding
functions are no-ops (there is no CUDA generator to seed), as PyTorch's are without a GPU; and
what would need a GPU (``current_device``, ``synchronize``, ``get_device_name``) raises a
RuntimeError saying there is none.
May import: nothing of minitorch.
"""


def is_available():
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def manual_seed(seed):
    """No-op: no CUDA device, so no CUDA generator (as ``torch.cuda.manual_seed`` then)."""


def manual_seed_all(seed):
    """No-op, as ``manual_seed``."""


def seed():
    """No-op, as ``manual_seed``."""


def seed_all():
    """No-op, as ``manual_seed``."""


def empty_cache():
    """No-op: no CUDA memory is ever allocated."""


def _no_cuda(name):
    raise RuntimeError(f"cuda.{name}: no CUDA device: minitorch computes on the CPU only "
                       "(cuda.is_available() is False)")


def current_device():
    _no_cuda("current_device")


def synchronize(device=None):
    _no_cuda("synchronize")


def get_device_name(device=None):
    _no_cuda("get_device_name")


def set_device(device):
    _no_cuda("set_device")
