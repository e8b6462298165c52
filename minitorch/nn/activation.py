"""Activation layers: ``ReLU``, ``GELU``, ``SiLU``, ``Mish``, ``Softplus``, ``Tanh``, ``Sigmoid``,
``Softmax``, ``LogSoftmax``, ``Hardtanh``, ``ReLU6``, ``LeakyReLU``, ``ELU``, ``CELU``, ``SELU``,
``Hardsigmoid``, ``Hardswish``, ``Softsign``, ``LogSigmoid``, ``Tanhshrink``, ``Softshrink``,
``Hardshrink``, ``Threshold``, ``GLU``, ``Softmin`` (module wrappers around ``nn.functional``,
with PyTorch's arguments and reprs).
May import: ``.module``, ``.functional``.
"""
from . import functional as F
from .module import Module


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x·Φ(x); ``approximate="tanh"`` uses the tanh approximation."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x·σ(x), also called swish."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Mish(Module):
    """x·tanh(softplus(x))."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Softplus(Module):
    """(1/β)·log(1 + e^(β·x)), linear where β·x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Tanh(Module):
    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        # _stacklevel=5: the warning about an implicit dim (None) points at the caller's line
        return F.softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim, _stacklevel=5)

    def extra_repr(self):
        return f"dim={self.dim}"


class _InplaceActivation(Module):
    """An activation whose only argument is ``inplace`` (its repr shows it only when True)."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Hardtanh(Module):
    """x clipped to [min_val, max_val] (``min_value``/``max_value``: PyTorch's old names)."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False, min_value=None, max_value=None):
        super().__init__()
        self.min_val = min_val if min_value is None else min_value
        self.max_val = max_val if max_value is None else max_value
        self.inplace = inplace
        if self.max_val <= self.min_val:
            raise ValueError(f"Hardtanh: max_val ({self.max_val}) must be greater than "
                             f"min_val ({self.min_val})")

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else "")


class ReLU6(_InplaceActivation):
    """min(max(x, 0), 6)."""

    def forward(self, input):
        return F.relu6(input, self.inplace)


class LeakyReLU(Module):
    """x, or negative_slope·x for x <= 0."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x, or alpha·(e^x - 1) for x <= 0."""

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    """x, or alpha·(e^(x/alpha) - 1) for x <= 0."""

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)


class SELU(_InplaceActivation):
    """scale·elu(x, alpha) with the self-normalizing constants."""

    def forward(self, input):
        return F.selu(input, self.inplace)


class Hardsigmoid(_InplaceActivation):
    """relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)


class Hardswish(_InplaceActivation):
    """x·relu6(x + 3) / 6."""

    def forward(self, input):
        return F.hardswish(input, self.inplace)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class LogSigmoid(Module):
    """log σ(x), computed without overflow."""

    def forward(self, input):
        return F.logsigmoid(input)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class Softshrink(Module):
    """x ∓ lambd outside [-lambd, lambd], 0 inside."""

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Hardshrink(Softshrink):
    """x outside [-lambd, lambd], 0 inside."""

    def forward(self, input):
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else "")


class GLU(Module):
    """a·σ(b), a and b the two halves of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along dim."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"
