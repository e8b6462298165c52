"""The Vision Transformer of "An Image is Worth 16x16 Words" (Dosovitskiy et al., 2021).

An image is cut into non-overlapping p×p patches (:func:`patchify`; :func:`unpatchify` puts them
back), each patch is flattened and projected by one Linear to ``d_model``, a learned class
token is put in front, learned position embeddings are added, and a stack of pre-norm
``nn.TransformerEncoderLayer`` (the encoder of ``nn.TransformerEncoder``, with its final
LayerNorm as ``norm``) lets every patch attend to every other. The class token's output goes
through a Linear head to the class logits. :meth:`VisionTransformer.class_token_attention`
gives, per layer and head, where the class token looks among the patches.

The state_dict names its blocks as PyTorch does (``encoder.layers.0.self_attn.in_proj_weight``,
``encoder.norm.weight``, ...), so the same model built from ``torch.nn`` pieces loads it one to
one (tests/test_vit_parity_torch.py). The patch projection is a Linear on flattened patches
rather than torchvision's ``Conv2d(C, D, p, stride=p)``; the two are the same map, and the
Linear's weight reshaped to (D, C, p, p) is that convolution's weight.
May import: ``minitorch``, ``minitorch.nn``.
"""
from __future__ import annotations

import math

import minitorch
from minitorch import nn
from minitorch.tensor import Tensor


def _pair(value, name):
    """(height, width) from an int or a pair of ints, each >= 1."""
    pair = (value, value) if isinstance(value, int) else tuple(value)
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1
                                 for v in pair):
        raise ValueError(f"{name} must be a positive int or a pair of them, got {value!r}")
    return pair


def patchify(images: Tensor, patch_size: int) -> Tensor:
    """(N, C, H, W) images → (N, (H/p)·(W/p), C·p·p) patches, p = ``patch_size``.

    Patches come row by row: patch k is the one at grid row k // (W/p), column k % (W/p).
    Each is flattened channel first, then its rows, as (C, p, p): the layout of a
    ``Conv2d(C, D, p, stride=p)`` weight. Differentiable (a reshape and a permute).
    """
    if not isinstance(patch_size, int) or isinstance(patch_size, bool) or patch_size < 1:
        raise ValueError(f"patchify: patch_size must be a positive int, got {patch_size!r}")
    if images.ndim != 4:
        raise ValueError(f"patchify: images must be (N, C, H, W), got shape "
                         f"{tuple(images.shape)}")
    n, channels, height, width = images.shape
    if height % patch_size or width % patch_size:
        raise ValueError(f"patchify: the image size {height}×{width} is not divisible into "
                         f"{patch_size}×{patch_size} patches")
    rows, cols, p = height // patch_size, width // patch_size, patch_size
    # (N, C, rows, p, cols, p): split each spatial axis into (patch index, offset in patch)
    grid = images.reshape(n, channels, rows, p, cols, p)
    return grid.permute(0, 2, 4, 1, 3, 5).reshape(n, rows * cols, channels * p * p)


def unpatchify(patches: Tensor, patch_size: int, image_size) -> Tensor:
    """The inverse of :func:`patchify`: (N, (H/p)·(W/p), C·p·p) → (N, C, H, W), with
    ``image_size`` H (square) or (H, W)."""
    height, width = _pair(image_size, "unpatchify: image_size")
    if not isinstance(patch_size, int) or isinstance(patch_size, bool) or patch_size < 1:
        raise ValueError(f"unpatchify: patch_size must be a positive int, got {patch_size!r}")
    if height % patch_size or width % patch_size:
        raise ValueError(f"unpatchify: the image size {height}×{width} is not divisible into "
                         f"{patch_size}×{patch_size} patches")
    rows, cols, p = height // patch_size, width // patch_size, patch_size
    if patches.ndim != 3 or patches.shape[1] != rows * cols or patches.shape[2] % (p * p):
        raise ValueError(f"unpatchify: patches of a {height}×{width} image in {p}×{p} patches "
                         f"must be (N, {rows * cols}, C·{p * p}), got shape "
                         f"{tuple(patches.shape)}")
    n, channels = patches.shape[0], patches.shape[2] // (p * p)
    grid = patches.reshape(n, rows, cols, channels, p, p)
    return grid.permute(0, 3, 1, 4, 2, 5).reshape(n, channels, height, width)


class VisionTransformer(nn.Module):
    """Images (N, C, H, W) → class logits (N, num_classes).

    ``image_size`` is H (square) or (H, W) and must be divisible into ``patch_size`` patches;
    the rest are ``nn.TransformerEncoderLayer``'s arguments (``d_model``, ``nhead``,
    ``dim_feedforward``, ``dropout``, ``activation``, ``layer_norm_eps``), ``num_layers``
    copies of it. Initialisation as torchvision's ViT: the patch projection's weight truncated
    N(0, 1/(C·p·p)) and its bias zero, the positions N(0, 0.02²), the head zero (the first
    logits are all 0, the loss ln(num_classes)); the class token N(0, 0.02²) (torchvision's
    starts at zero); the encoder's layers initialise themselves (``nn.TransformerEncoderLayer``).

    Parameters (the state_dict's names): ``patch_embedding`` (Linear C·p·p → d_model),
    ``class_token`` (1, 1, d_model), ``pos_embedding`` (1, 1 + patches, d_model),
    ``encoder`` (``nn.TransformerEncoder``: ``layers.<i>.…`` and the final ``norm``), ``head``
    (Linear d_model → num_classes).
    """

    def __init__(self, image_size=8, patch_size: int = 2, in_channels: int = 1,
                 num_classes: int = 10, d_model: int = 64, nhead: int = 4, num_layers: int = 2,
                 dim_feedforward: int = 128, dropout: float = 0.0, activation="gelu",
                 layer_norm_eps: float = 1e-5):
        super().__init__()
        self.image_size = _pair(image_size, "VisionTransformer: image_size")
        for name, value in (("patch_size", patch_size), ("in_channels", in_channels),
                            ("num_classes", num_classes), ("d_model", d_model),
                            ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"VisionTransformer: {name} must be a positive int, "
                                 f"got {value!r}")
        height, width = self.image_size
        if height % patch_size or width % patch_size:
            raise ValueError(f"VisionTransformer: image_size {height}×{width} is not divisible "
                             f"into {patch_size}×{patch_size} patches")
        self.patch_size, self.in_channels, self.num_classes = patch_size, in_channels, num_classes
        self.grid_size = (height // patch_size, width // patch_size)
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.d_model, self.nhead, self.num_layers = d_model, nhead, num_layers

        patch_dim = in_channels * patch_size * patch_size
        self.patch_embedding = nn.Linear(patch_dim, d_model)
        # A shared random bias would be most of every token at the start (a patch holds few
        # pixels), so that all images look alike and training stalls for epochs.
        nn.init.trunc_normal_(self.patch_embedding.weight, std=math.sqrt(1.0 / patch_dim))
        nn.init.zeros_(self.patch_embedding.bias)
        self.class_token = nn.Parameter(minitorch.empty(1, 1, d_model))
        self.pos_embedding = nn.Parameter(minitorch.empty(1, 1 + self.num_patches, d_model))
        nn.init.normal_(self.class_token, std=0.02)
        nn.init.normal_(self.pos_embedding, std=0.02)
        self.dropout = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout, activation,
                                           layer_norm_eps, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers,
                                             norm=nn.LayerNorm(d_model, eps=layer_norm_eps))
        self.head = nn.Linear(d_model, num_classes)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def _check_images(self, images) -> None:
        height, width = self.image_size
        expected = f"(N, {self.in_channels}, {height}, {width})"
        if not isinstance(images, Tensor):
            raise TypeError(f"VisionTransformer: images must be a Tensor {expected}, got "
                            f"{type(images).__name__}")
        if not images.is_floating_point():
            raise TypeError(f"VisionTransformer: images must be floating point, got "
                            f"{images.dtype}")
        if images.ndim != 4:
            raise ValueError(f"VisionTransformer: images must be {expected}, got shape "
                             f"{tuple(images.shape)}")
        if images.shape[1] != self.in_channels:
            raise ValueError(f"VisionTransformer: images must have {self.in_channels} "
                             f"channel(s), got {images.shape[1]} (shape {tuple(images.shape)}, "
                             f"expected {expected})")
        if tuple(images.shape[2:]) != self.image_size:
            raise ValueError(f"VisionTransformer: images must be {height}×{width}, got "
                             f"{images.shape[2]}×{images.shape[3]} (shape "
                             f"{tuple(images.shape)}, expected {expected})")

    def embed(self, images: Tensor) -> Tensor:
        """The encoder's input (N, 1 + patches, d_model): the class token, then the projected
        patches in :func:`patchify`'s order, each plus its position embedding."""
        self._check_images(images)
        patches = self.patch_embedding(patchify(images, self.patch_size))
        class_tokens = self.class_token.expand(images.shape[0], -1, -1)
        tokens = minitorch.cat([class_tokens, patches], dim=1) + self.pos_embedding
        return self.dropout(tokens)

    def forward(self, images: Tensor) -> Tensor:
        features = self.encoder(self.embed(images))
        return self.head(features[:, 0])

    def class_token_attention(self, images: Tensor) -> Tensor:
        """Where the class token looks: (N, num_layers, nhead, grid_h, grid_w).

        Entry [n, l, h, i, j] is head h of layer l's attention weight from the class token to
        the patch at grid row i, column j. The class token's weight on itself is left out and
        the rest rescaled, so each map sums to 1 over the grid. Each layer's ``self_attn`` is
        run once more, on the input the layer gives it (pre-norm: ``norm1`` of the layer's
        input), with ``need_weights=True``; call it in eval mode, or attention dropout (if any)
        shows in the maps.
        """
        tokens = self.embed(images)
        maps = []
        for layer in self.encoder.layers:
            normed = layer.norm1(tokens)
            _, weights = layer.self_attn(normed, normed, normed, need_weights=True,
                                         average_attn_weights=False)  # (N, heads, L, L)
            maps.append(weights[:, :, 0, 1:])
            tokens = layer(tokens)
        to_patches = minitorch.stack(maps, dim=1)  # (N, layers, heads, patches)
        to_patches = to_patches / to_patches.sum(dim=-1, keepdim=True)
        return to_patches.reshape(images.shape[0], self.num_layers, self.nhead, *self.grid_size)
