"""``Conv1d`` and ``Conv2d``, with PyTorch's arguments, parameter layout and initialisation.

``weight`` is (out_channels, in_channels / groups, *kernel_size) and ``bias`` (out_channels,),
both drawn as PyTorch draws them: W ~ kaiming_uniform(a=√5), i.e. U(−1/√fan_in, 1/√fan_in)
with fan_in = in_channels / groups · prod(kernel_size), and b from the same range. A
``padding_mode`` other than "zeros" pads the input with ``F.pad`` first (reflect, replicate,
circular), then convolves without padding, as PyTorch does.
May import: ``.module``, ``.parameter``, ``.init``, ``.functional``, ``minitorch.creation``.
"""
import math

from ..creation import empty
from ..ops.convolution import expand_param, same_padding
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter

PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What Conv1d and Conv2d share: the arguments' checks, the parameters, their init."""

    _dims = 0

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        dims = self._dims
        for name, n in (("in_channels", in_channels), ("out_channels", out_channels),
                        ("groups", groups)):
            if isinstance(n, bool) or not isinstance(n, int) or n < (1 if name == "groups"
                                                                      else 0):
                raise ValueError(f"{type(self).__name__}: {name} must be a "
                                 f"{'positive' if name == 'groups' else 'non-negative'} int, "
                                 f"got {n!r}")
        if in_channels % groups:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode not in PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {set(PADDING_MODES)}, but got "
                             f"padding_mode={padding_mode!r}")
        kernel_size = expand_param("kernel_size", kernel_size, dims)
        stride = expand_param("stride", stride, dims)
        dilation = expand_param("dilation", dilation, dims)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 "('valid', 'same')")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            amounts = [(0, 0)] * dims if padding == "valid" else \
                same_padding(kernel_size, dilation)
        else:
            padding = expand_param("padding", padding, dims)
            amounts = [(p, p) for p in padding]
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.groups, self.padding_mode = dilation, groups, padding_mode
        self.transposed, self.output_padding = False, (0,) * dims
        # F.pad's amounts for the non-zero padding modes: (left, right) from the last dim back
        self._reversed_padding_repeated_twice = [a for pair in reversed(amounts) for a in pair]
        self.weight = Parameter(empty(out_channels, in_channels // groups, *kernel_size))
        if bias:
            self.bias = Parameter(empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _conv_forward(self, input, weight, bias, conv):
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return conv(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return conv(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self):
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0,) * self._dims:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv2d(_ConvNd):
    """2-d convolution over (N, C, H, W) or unbatched (C, H, W) input, as ``torch.nn.Conv2d``."""

    _dims = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias, F.conv2d)


class Conv1d(_ConvNd):
    """1-d convolution over (N, C, L) or unbatched (C, L) input, as ``torch.nn.Conv1d``."""

    _dims = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1,
                 groups=1, bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias, F.conv1d)
