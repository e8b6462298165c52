"""``Flatten`` and ``Unflatten``: reshaping layers for ``Sequential`` models, as ``torch.nn``'s
(``Flatten()`` turns (N, C, H, W) into (N, C·H·W); ``Unflatten(1, (C, H, W))`` undoes it).
May import: ``.module``.
"""
from .module import Module


class Flatten(Module):
    """Flattens dims ``start_dim`` to ``end_dim`` into one (default: all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` into ``unflattened_size`` (a tuple or list of ints; one may be -1)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"Unflatten: dim must be an int (minitorch has no named tensors), "
                            f"got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, but found "
                            f"type {type(unflattened_size).__name__}")
        for i, size in enumerate(unflattened_size):
            if isinstance(size, bool) or not isinstance(size, int):
                raise TypeError(f"Unflatten: unflattened_size must be tuple of ints, but found "
                                f"element of type {type(size).__name__} at pos {i}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
