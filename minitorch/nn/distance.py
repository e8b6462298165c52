"""Distance layers: ``CosineSimilarity`` and ``PairwiseDistance`` (module wrappers around
``nn.functional``'s, with PyTorch's arguments).
May import: ``.module``, ``.functional``.
"""
from . import functional as F
from .module import Module


class CosineSimilarity(Module):
    """x1·x2 / (max(‖x1‖, eps)·max(‖x2‖, eps)) along dim."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """‖x1 - x2 + eps‖_p over the last dim."""

    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
