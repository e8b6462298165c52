"""The Vision Transformer against the same model built from torch.nn pieces: the state_dict
loads one to one, and float64 logits, attention maps and gradients agree. Skipped without
PyTorch."""
import numpy as np
import pytest

import minitorch
from minitorch.models.vit import VisionTransformer, patchify

torch = pytest.importorskip("torch")

CONFIG = dict(image_size=(4, 6), patch_size=2, in_channels=3, num_classes=5, d_model=8, nhead=2,
              num_layers=2, dim_feedforward=16)


class TorchViT(torch.nn.Module):
    """The same model in PyTorch: patches by ``F.unfold`` (PyTorch's own patch order), a Linear,
    the class token, positions, ``nn.TransformerEncoder`` of pre-norm layers with a final
    LayerNorm, and the head on the class token."""

    def __init__(self, image_size, patch_size, in_channels, num_classes, d_model, nhead,
                 num_layers, dim_feedforward):
        super().__init__()
        patches = (image_size[0] // patch_size) * (image_size[1] // patch_size)
        self.patch_size = patch_size
        self.patch_embedding = torch.nn.Linear(in_channels * patch_size ** 2, d_model)
        self.class_token = torch.nn.Parameter(torch.zeros(1, 1, d_model))
        self.pos_embedding = torch.nn.Parameter(torch.zeros(1, 1 + patches, d_model))
        layer = torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout=0.0,
                                                 activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, num_layers,
                                                   norm=torch.nn.LayerNorm(d_model),
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(d_model, num_classes)

    def embed(self, images):
        p = self.patch_size
        patches = torch.nn.functional.unfold(images, kernel_size=p, stride=p).transpose(1, 2)
        tokens = self.patch_embedding(patches)
        tokens = torch.cat([self.class_token.expand(len(images), -1, -1), tokens], dim=1)
        return tokens + self.pos_embedding

    def forward(self, images):
        return self.head(self.encoder(self.embed(images))[:, 0])


def twin_models(seed=0):
    """(minitorch model, torch model) in float64 with the same random parameters."""
    minitorch.manual_seed(seed)
    ours = VisionTransformer(**CONFIG).to(minitorch.float64)
    rng = np.random.default_rng(seed)
    with minitorch.no_grad():  # every parameter random: the zero head would hide gradients
        for parameter in ours.parameters():
            parameter.copy_(minitorch.tensor(rng.normal(0, 0.5, parameter.shape)))
    theirs = TorchViT(**CONFIG).double()
    state = {name: torch.from_numpy(value.detach().numpy().copy())
             for name, value in ours.state_dict().items()}
    assert set(state) == set(theirs.state_dict())  # the same names, one to one
    theirs.load_state_dict(state, strict=True)
    return ours, theirs


def test_state_dict_names_and_shapes_match_pytorchs():
    ours, theirs = twin_models()
    shapes = {name: tuple(value.shape) for name, value in ours.state_dict().items()}
    assert shapes == {name: tuple(value.shape) for name, value in theirs.state_dict().items()}


def test_float64_logits_and_gradients_match_pytorch():
    ours, theirs = twin_models()
    images = np.random.default_rng(3).normal(size=(3, 3, 4, 6))
    labels = np.array([0, 4, 2])
    x_ours = minitorch.tensor(images, requires_grad=True)
    x_theirs = torch.tensor(images, requires_grad=True)
    logits_ours, logits_theirs = ours(x_ours), theirs(x_theirs)
    np.testing.assert_allclose(logits_ours.detach().numpy(), logits_theirs.detach().numpy(),
                               rtol=1e-10, atol=1e-12)
    minitorch.nn.functional.cross_entropy(logits_ours, minitorch.tensor(labels)).backward()
    torch.nn.functional.cross_entropy(logits_theirs, torch.tensor(labels)).backward()
    np.testing.assert_allclose(x_ours.grad.numpy(), x_theirs.grad.numpy(), rtol=1e-9,
                               atol=1e-12)
    grads_theirs = dict(theirs.named_parameters())
    for name, parameter in ours.named_parameters():
        np.testing.assert_allclose(parameter.grad.numpy(), grads_theirs[name].grad.numpy(),
                                   rtol=1e-9, atol=1e-12, err_msg=name)


def test_class_token_attention_matches_pytorchs_attention_weights():
    ours, theirs = twin_models()
    images = np.random.default_rng(4).normal(size=(2, 3, 4, 6))
    maps = ours.class_token_attention(minitorch.tensor(images)).detach().numpy()
    with torch.no_grad():
        tokens, rows = theirs.embed(torch.tensor(images)), []
        for layer in theirs.encoder.layers:
            normed = layer.norm1(tokens)
            _, weights = layer.self_attn(normed, normed, normed, need_weights=True,
                                         average_attn_weights=False)
            rows.append(weights[:, :, 0, 1:])
            tokens = layer(tokens)
    expected = torch.stack(rows, dim=1)
    expected = (expected / expected.sum(-1, keepdim=True)).numpy()
    np.testing.assert_allclose(maps, expected.reshape(maps.shape), rtol=1e-10, atol=1e-12)


def test_the_patch_projection_is_torchvisions_strided_convolution():
    # The docstring's claim: the Linear's weight reshaped to (D, C, p, p) is the weight of a
    # Conv2d(C, D, p, stride=p), whose output, flattened, gives the same tokens in the same order.
    ours, _ = twin_models()
    images = np.random.default_rng(5).normal(size=(2, 3, 4, 6))
    linear = ours.patch_embedding
    tokens = linear(patchify(minitorch.tensor(images), 2)).detach().numpy()
    conv = torch.nn.Conv2d(3, 8, kernel_size=2, stride=2).double()
    with torch.no_grad():
        conv.weight.copy_(torch.from_numpy(linear.weight.detach().numpy().reshape(8, 3, 2, 2)))
        conv.bias.copy_(torch.from_numpy(linear.bias.detach().numpy()))
        expected = conv(torch.tensor(images)).flatten(2).transpose(1, 2).numpy()
    np.testing.assert_allclose(tokens, expected, rtol=1e-10, atol=1e-12)
