"""``LayerNorm`` and ``RMSNorm`` over one or several trailing dims, on their fused kernels.
May import: ``.module``, ``.parameter``, ``.functional``, ``.init``, ``minitorch.creation``.
"""
from ..creation import ones, zeros
from . import functional as F
from . import init
from .module import Module
from .parameter import Parameter


class LayerNorm(Module):
    """(x − mean) / sqrt(var + eps) · weight + bias over the trailing ``normalized_shape`` dims.

    ``weight`` starts at ones and ``bias`` at zeros; ``elementwise_affine=False`` has neither,
    ``bias=False`` keeps only the weight (PyTorch's arguments).
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        if not shape or any(not isinstance(n, int) or n < 0 for n in shape):
            raise ValueError(f"LayerNorm: normalized_shape must be an int or a non-empty tuple "
                             f"of ints, got {normalized_shape!r}")
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*shape))
            if bias:
                self.bias = Parameter(zeros(*shape))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if dtype is not None:
            self.to(dtype)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x²) + eps) · weight over the trailing ``normalized_shape`` dims.

    ``weight`` starts at ones (none with ``elementwise_affine=False``); ``eps=None`` is the
    input dtype's machine epsilon, as in PyTorch.
    """

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        if not shape or any(isinstance(n, bool) or not isinstance(n, int) or n < 0
                            for n in shape):
            raise ValueError(f"RMSNorm: normalized_shape must be an int or a non-empty tuple "
                             f"of non-negative ints, got {normalized_shape!r}")
        self.normalized_shape = shape
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*shape))
        else:
            self.register_parameter("weight", None)
        if dtype is not None:
            self.to(dtype)

    def reset_parameters(self):
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
