"""``from_dlpack``: a tensor over the memory of another library's array, through DLPack.

``minitorch.from_dlpack(torch_tensor)`` (or a numpy, JAX, CuPy-on-CPU array) gives a tensor that
shares that memory, as ``torch.from_dlpack`` does; the other way, ``torch.from_dlpack(t)`` and
``np.from_dlpack(t)`` use ``Tensor.__dlpack__``. numpy does the DLPack work on both sides.
May import: ``minitorch.tensor``, ``minitorch.device``, numpy.
"""
import numpy as np

from .device import check_device
from .tensor import _NUMPY_OK, Tensor


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with ``ext_tensor``, any CPU array with ``__dlpack__``;
    ``copy=True`` gives a copy instead, ``device`` may only be the CPU."""
    if device is not None:
        check_device(device, "from_dlpack")
    if not hasattr(ext_tensor, "__dlpack__"):
        raise TypeError(f"from_dlpack: ext_tensor must have a __dlpack__ method (a DLPack array "
                        f"such as a torch tensor), got {type(ext_tensor).__name__}")
    device = ext_tensor.__dlpack_device__()
    if device[0] != 1:  # kDLCPU: minitorch's arrays are numpy arrays
        raise ValueError(f"from_dlpack: ext_tensor must be on the CPU (DLPack device type 1), "
                         f"got device {tuple(device)}")
    array = np.from_dlpack(ext_tensor)
    if copy:
        array = array.copy()
    if array.dtype not in _NUMPY_OK:  # converting would copy: the memory would not be shared
        raise TypeError(f"from_dlpack: ext_tensor's dtype must be one of minitorch's ("
                        f"{', '.join(str(d) for d in sorted(_NUMPY_OK, key=str))}), got "
                        f"{array.dtype}; convert it first")
    return Tensor._make(array)
