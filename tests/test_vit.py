"""The Vision Transformer (minitorch.models.vit) and the digits it trains on
(minitorch.vision.digits): patches that round-trip and keep their grid order, the class token's
attention maps, clear errors for bad images, gradients, and the loader's shapes and split."""
import gzip
import hashlib
import os
import re

import numpy as np
import pytest

import minitorch
from minitorch.autograd import gradcheck
from minitorch.models.vit import VisionTransformer, patchify, unpatchify
from minitorch.vision import digits
from minitorch.vision.digits import load_digits, read_digits

TINY = dict(image_size=(4, 6), patch_size=2, in_channels=3, num_classes=5, d_model=8, nhead=2,
            num_layers=2, dim_feedforward=16)


def tiny_model(**changes):
    minitorch.manual_seed(0)
    return VisionTransformer(**{**TINY, **changes})


def values(tensor):
    """A tensor's values as numpy, also for one that requires grad."""
    return tensor.detach().numpy()


def random_images(*shape, dtype=np.float32, seed=0):
    return minitorch.tensor(np.random.default_rng(seed).normal(size=shape).astype(dtype))


# ----------------------------------------------------------------------------- patches


@pytest.mark.parametrize("shape, patch", [((2, 3, 6, 4), 2), ((1, 1, 8, 8), 4),
                                          ((3, 2, 5, 5), 5), ((2, 1, 3, 6), 1)])
def test_patchify_then_unpatchify_gives_the_image_back_exactly(shape, patch):
    images = random_images(*shape, dtype=np.float64)
    patches = patchify(images, patch)
    n, channels, height, width = shape
    assert tuple(patches.shape) == (n, (height // patch) * (width // patch),
                                    channels * patch * patch)
    back = unpatchify(patches, patch, (height, width))
    assert np.array_equal(back.numpy(), images.numpy())


def test_patch_k_is_the_one_at_grid_row_k_div_cols_and_column_k_mod_cols():
    images = random_images(2, 3, 6, 4).numpy()
    patches = patchify(minitorch.tensor(images), 2).numpy()
    cols = 4 // 2
    for k in range(patches.shape[1]):
        row, col = divmod(k, cols)
        block = images[:, :, 2 * row:2 * row + 2, 2 * col:2 * col + 2]  # (N, C, p, p)
        assert np.array_equal(patches[:, k], block.reshape(2, -1))


def test_patchify_works_on_non_contiguous_images_and_passes_gradients():
    base = random_images(2, 4, 6, 3, dtype=np.float64)
    images = base.permute(0, 3, 1, 2)  # (2, 3, 4, 6), a strided view
    assert np.array_equal(patchify(images, 2).numpy(),
                          patchify(minitorch.tensor(images.numpy().copy()), 2).numpy())
    leaf = random_images(1, 2, 4, 4, dtype=np.float64).requires_grad_()
    assert gradcheck(lambda x: patchify(x, 2) * 3.0, (leaf,))


@pytest.mark.parametrize("call, message", [
    (lambda: patchify(random_images(1, 1, 8, 8), 3), "not divisible into 3×3"),
    (lambda: patchify(random_images(1, 8, 8), 2), r"\(N, C, H, W\)"),
    (lambda: patchify(random_images(1, 1, 8, 8), 0), "patch_size"),
    (lambda: unpatchify(random_images(1, 16, 4), 2, 7), "not divisible"),
    (lambda: unpatchify(random_images(1, 15, 4), 2, 8), r"\(N, 16, C·4\)"),
    (lambda: unpatchify(random_images(1, 16, 5), 2, 8), r"\(N, 16, C·4\)"),
])
def test_bad_patch_arguments_raise_value_errors_that_say_why(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# ----------------------------------------------------------------------------- the model


def test_forward_gives_logits_and_the_state_dict_uses_pytorchs_block_names():
    model = tiny_model()
    logits = model(random_images(3, 3, 4, 6))
    assert tuple(logits.shape) == (3, 5) and logits.dtype == minitorch.float32
    keys = list(model.state_dict())
    assert keys[:4] == ["class_token", "pos_embedding", "patch_embedding.weight",
                        "patch_embedding.bias"]
    assert "encoder.layers.1.self_attn.in_proj_weight" in keys
    assert "encoder.layers.0.linear2.bias" in keys and "encoder.norm.weight" in keys
    assert keys[-2:] == ["head.weight", "head.bias"]
    assert tuple(model.pos_embedding.shape) == (1, 1 + 6, 8)  # class token + 2×3 patches
    assert model.encoder.layers[0].norm_first


def test_a_fresh_model_predicts_uniformly_so_its_first_loss_is_log_num_classes():
    model = tiny_model()
    logits = model(random_images(4, 3, 4, 6))
    assert np.array_equal(values(logits), np.zeros((4, 5), np.float32))  # the head starts at 0


def test_token_k_plus_1_is_patch_k_projected_plus_position_k_plus_1():
    model = tiny_model()
    model.eval()
    images = random_images(2, 3, 4, 6)
    tokens = values(model.embed(images))
    patches = patchify(images, 2).numpy()
    weight, bias = values(model.patch_embedding.weight), values(model.patch_embedding.bias)
    positions = values(model.pos_embedding)[0]
    expected = patches @ weight.T + bias + positions[1:]
    np.testing.assert_allclose(tokens[:, 1:], expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tokens[:, 0], np.broadcast_to(
        values(model.class_token)[0, 0] + positions[0], (2, 8)), rtol=1e-6)


def test_moving_a_patch_moves_its_token_with_its_position():
    # One lit patch at grid (1, 2); its token differs from the blank image's only there.
    model = tiny_model()
    blank = np.zeros((1, 3, 4, 6), np.float32)
    lit = blank.copy()
    lit[0, :, 2:4, 4:6] = 1.0
    changed = np.abs(values(model.embed(minitorch.tensor(lit)))
                     - values(model.embed(minitorch.tensor(blank)))).sum(-1)[0]
    assert np.flatnonzero(changed > 1e-6).tolist() == [1 + 1 * 3 + 2]


BAD_IMAGES = [
    ((2, 3, 4, 4), ValueError, r"must be 4×6, got 4×4 .*\(N, 3, 4, 6\)"),
    ((2, 3, 6, 4), ValueError, r"must be 4×6, got 6×4"),
    ((2, 1, 4, 6), ValueError, r"must have 3 channel\(s\), got 1"),
    ((3, 4, 6), ValueError, r"must be \(N, 3, 4, 6\), got shape \(3, 4, 6\)"),
]


@pytest.mark.parametrize("shape, error, message", BAD_IMAGES)
def test_images_of_the_wrong_size_or_channels_raise_a_clear_error(shape, error, message):
    model = tiny_model()
    with pytest.raises(error, match=message):
        model(random_images(*shape))
    with pytest.raises(error, match=message):
        model.class_token_attention(random_images(*shape))


def test_images_of_integers_or_not_tensors_raise_type_errors():
    model = tiny_model()
    with pytest.raises(TypeError, match="floating point"):
        model(minitorch.zeros(1, 3, 4, 6, dtype=minitorch.int64))
    with pytest.raises(TypeError, match="must be a Tensor"):
        model(np.zeros((1, 3, 4, 6), np.float32))


@pytest.mark.parametrize("changes, message", [
    (dict(image_size=7), r"image_size 7×7 is not divisible into 2×2 patches"),
    (dict(image_size=(4, 5)), r"image_size 4×5 is not divisible"),
    (dict(image_size=(4, 0)), "image_size must be a positive int"),
    (dict(patch_size=0), "patch_size must be a positive int"),
    (dict(num_layers=0), "num_layers must be a positive int"),
    (dict(d_model=9), "divisible by num_heads"),
])
def test_bad_model_arguments_raise_value_errors(changes, message):
    with pytest.raises(ValueError, match=message):
        tiny_model(**changes)


# ----------------------------------------------------------------------------- attention


def test_class_token_attention_has_the_grids_shape_and_each_map_sums_to_1():
    model = tiny_model()
    maps = values(model.class_token_attention(random_images(3, 3, 4, 6)))
    assert maps.shape == (3, 2, 2, 2, 3)  # (N, layers, heads, grid rows, grid columns)
    assert (maps >= 0).all()
    np.testing.assert_allclose(maps.sum(axis=(-2, -1)), 1.0, rtol=1e-5)


def test_class_token_attention_is_what_each_layer_used_in_forward():
    # Hooks make every layer's self_attn return its weights during a normal forward: the maps
    # must be those weights' class-token row over the patches, rescaled to sum to 1.
    model = tiny_model()
    model.eval()
    seen = []

    def ask_for_weights(module, args, kwargs):
        return args, {**kwargs, "need_weights": True, "average_attn_weights": False}

    def keep_weights(module, args, output):
        seen.append(values(output[1]))

    for layer in model.encoder.layers:
        layer.self_attn.register_forward_pre_hook(ask_for_weights, with_kwargs=True)
        layer.self_attn.register_forward_hook(keep_weights)
    images = random_images(2, 3, 4, 6)
    logits = values(model(images))
    hooked = np.stack([w[:, :, 0, 1:] for w in seen], axis=1)  # (N, layers, heads, patches)
    hooked = hooked / hooked.sum(-1, keepdims=True)
    seen.clear()
    maps = values(model.class_token_attention(images))
    np.testing.assert_allclose(maps.reshape(hooked.shape), hooked, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(values(model(images)), logits, rtol=1e-6)  # the hooks changed none


# ----------------------------------------------------------------------------- gradients


def _randomised(model):
    """``model`` in float64 with every parameter random (the head starts at zero otherwise,
    which would hide the gradients of everything below it)."""
    model.to(minitorch.float64)
    rng = np.random.default_rng(1)
    with minitorch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(minitorch.tensor(rng.normal(0, 0.5, parameter.shape)))
    return model


def test_gradcheck_through_the_whole_model_in_float64():
    model = _randomised(tiny_model(num_layers=1, image_size=4, in_channels=1))
    images = random_images(2, 1, 4, 4, dtype=np.float64).requires_grad_()
    assert gradcheck(lambda x: model(x), (images,))
    # the parameters too: gradcheck perturbs the Parameter the model reads
    assert gradcheck(lambda position: model(images.detach()), (model.pos_embedding,))
    assert gradcheck(lambda weight: model(images.detach()),
                     (model.encoder.layers[0].self_attn.in_proj_weight,))


def test_every_parameter_gets_a_gradient():
    model = _randomised(tiny_model())
    model(random_images(2, 3, 4, 6, dtype=np.float64)).square().sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and np.abs(parameter.grad.numpy()).sum() > 0, name


# ----------------------------------------------------------------------------- digits


# The test set of UCI's optdigits: its documented count of each digit 0..9.
UCI_CLASS_COUNTS = [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]


def test_the_shipped_file_is_the_one_the_data_readme_names():
    readme = open(os.path.join(os.path.dirname(digits.DATA_PATH), "README.md")).read()
    documented = re.search(r"SHA-256\s+`([0-9a-f]{64})`", readme).group(1)
    with open(digits.DATA_PATH, "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == documented
    assert "CC BY 4.0" in readme and "Alpaydin" in readme


def test_read_digits_gives_the_1797_images_of_uci_optdigits_test_set():
    pixels, labels = read_digits()
    assert pixels.shape == (1797, 8, 8) and pixels.dtype == np.uint8
    assert labels.shape == (1797,) and labels.dtype == np.int64
    assert pixels.min() == 0 and pixels.max() == 16
    assert np.bincount(labels).tolist() == UCI_CLASS_COUNTS


def test_load_digits_returns_the_documented_shapes_dtypes_and_ranges():
    data = load_digits()
    assert data.train_images.shape == (1438, 1, 8, 8) and data.test_images.shape == (359, 1, 8, 8)
    for images, labels in ((data.train_images, data.train_labels),
                           (data.test_images, data.test_labels)):
        assert images.dtype == np.float32 and labels.dtype == np.int64
        assert images.min() >= 0.0 and images.max() <= 1.0 and len(images) == len(labels)
    # each digit held out in proportion: a fifth of its images, rounded
    assert np.bincount(data.test_labels).tolist() == [round(c * 0.2) for c in UCI_CLASS_COUNTS]


def test_the_split_is_a_partition_fixed_by_the_seed():
    pixels, labels = read_digits()
    data = load_digits(test_size=0.25, seed=7)

    def rows(images, labels):
        table = np.concatenate([np.rint(images.reshape(len(labels), -1) * 16), labels[:, None]],
                               axis=1)
        return table[np.lexsort(table.T[::-1])]

    together = rows(np.concatenate([data.train_images, data.test_images]),
                    np.concatenate([data.train_labels, data.test_labels]))
    assert np.array_equal(together, rows(pixels / 16.0, labels))  # every image once
    again = load_digits(test_size=0.25, seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(data, again))
    other = load_digits(test_size=0.25, seed=8)
    assert not np.array_equal(data.test_labels, other.test_labels) or \
        not np.array_equal(data.test_images, other.test_images)


def test_test_size_zero_holds_nothing_out_and_bad_sizes_are_refused():
    data = load_digits(test_size=0)
    assert data.train_images.shape == (1797, 1, 8, 8) and data.test_images.shape == (0, 1, 8, 8)
    for bad in (1.0, -0.1, float("nan"), "0.2", True):
        with pytest.raises(ValueError, match="test_size"):
            load_digits(test_size=bad)


@pytest.mark.parametrize("content, message", [
    (b"not gzip at all", "not a readable digits file"),
    (gzip.compress(b"1,2,3\n4,5,6\n"), "64 pixels and a label"),
    (gzip.compress(("0," * 64 + "12\n").encode()), "labels in 0..9"),
    (gzip.compress(("17," * 64 + "1\n").encode()), "pixels must be in 0..16"),
], ids=["not-gzip", "short-rows", "bad-label", "bad-pixel"])
def test_a_damaged_digits_file_is_a_value_error_naming_it(tmp_path, content, message):
    path = tmp_path / "digits.csv.gz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as error:
        load_digits(path=str(path))
    assert str(path) in str(error.value)
