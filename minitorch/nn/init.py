"""Parameter initialisation, as ``torch.nn.init``: each function fills a tensor in place,
under no_grad, from minitorch's global generator (so ``manual_seed`` fixes it) or the
``generator=`` given, and returns it.

Fan-in/fan-out and gains follow PyTorch exactly: for a weight of shape (out, in, *k),
fan_in = in·prod(k) and fan_out = out·prod(k).
May import: ``minitorch.tensor``, ``minitorch.random``, ``minitorch.autograd``.
"""
import math

import numpy as np

from ..autograd.grad_mode import no_grad
from ..random import numpy_generator


def _write(tensor, values):
    """Write ``values`` into the tensor's own memory (views and optimizers keep seeing it)."""
    with no_grad():
        tensor._data[...] = values
        tensor._version[0] += 1
    return tensor


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
                  "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions, got shape {tuple(tensor.shape)}")
    receptive_field = int(np.prod(tensor.shape[2:])) if tensor.ndim > 2 else 1
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode: expected 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    return _write(tensor, numpy_generator(generator).uniform(a, b, tensor.shape))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    return _write(tensor, numpy_generator(generator).normal(mean, std, tensor.shape))


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    """N(mean, std²) restricted to [a, b] (absolute bounds, as PyTorch), by redrawing outliers."""
    if not a < b:
        raise ValueError(f"trunc_normal_: need a < b, got a={a}, b={b}")
    values = numpy_generator(generator).normal(mean, std, tensor.shape)
    outside = (values < a) | (values > b)
    for _ in range(1000):
        if not outside.any():
            break
        values[outside] = numpy_generator(generator).normal(mean, std, int(outside.sum()))
        outside = (values < a) | (values > b)
    return _write(tensor, np.clip(values, a, b))


def constant_(tensor, val):
    return _write(tensor, val)


def zeros_(tensor):
    return _write(tensor, 0)


def ones_(tensor):
    return _write(tensor, 1)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    if 0 in tuple(tensor.shape):
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def eye_(tensor):
    """The identity matrix (ones on the main diagonal of a 2-D tensor, of any shape)."""
    if tensor.ndim != 2:
        raise ValueError(f"eye_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    return _write(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups=1):
    """The Dirac delta of a 3-, 4- or 5-D convolution weight (out, in, *kernel): output channel
    d of each of the ``groups`` groups copies input channel d at the kernel's centre."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_: only tensors with 3, 4, or 5 dimensions are supported, got "
                         f"shape {tuple(tensor.shape)}")
    sizes = tuple(tensor.shape)
    if not isinstance(groups, int) or groups <= 0 or sizes[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({sizes[0]}) must be divisible by groups, got "
                         f"groups={groups!r}")
    out_per_group = sizes[0] // groups
    values = np.zeros(sizes)
    centre = tuple(size // 2 for size in sizes[2:])
    for g in range(groups):
        for d in range(min(out_per_group, sizes[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _write(tensor, values)


def orthogonal_(tensor, gain=1, generator=None):
    """A (semi-)orthogonal matrix times ``gain`` (Saxe et al. 2013), the trailing dims flattened:
    Q of the QR factorisation of a standard normal matrix, each column's sign set by R's
    diagonal so that Q is uniformly distributed, as PyTorch does."""
    if tensor.ndim < 2:
        raise ValueError(f"orthogonal_: only tensors with 2 or more dimensions are supported, "
                         f"got shape {tuple(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = numpy_generator(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _write(tensor, (q * gain).reshape(tensor.shape))


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """N(0, std²) values with ``ceil(sparsity · rows)`` zeros at random rows of each column of a
    2-D tensor (Martens 2010)."""
    if tensor.ndim != 2:
        raise ValueError(f"sparse_: only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    values = numpy_generator(generator).normal(0.0, std, (rows, cols))
    for col in range(cols):
        values[numpy_generator(generator).permutation(rows)[:num_zeros], col] = 0
    return _write(tensor, values)
