"""``Dropout``: inverted dropout in training mode, the identity in eval mode.
May import: ``.module``, ``.functional``.
"""
from . import functional as F
from .module import Module


class Dropout(Module):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p) while training."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p!r}")
        self.p = float(p)
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"
