"""``Linear`` (y = x Wᵀ + b) and ``Identity``, with PyTorch's parameter layout and init.
May import: ``.module``, ``.parameter``, ``.init``, ``.functional``, ``minitorch.creation``.
"""
import math

from ..creation import empty
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments, as PyTorch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x Wᵀ + b with ``weight`` (out_features, in_features) and ``bias`` (out_features,).

    Initialised as PyTorch: W ~ kaiming_uniform(a=√5), i.e. U(−1/√in, 1/√in), and b from
    the same range.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ValueError(f"Linear: {name} must be a non-negative int, got {n!r}")
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features))
        if bias:
            self.bias = Parameter(empty(out_features))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()
        if dtype is not None:
            self.to(dtype)

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.in_features
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self):
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
