"""Vision parts: ImagePreprocessor, ResNetEncoder, VisionTransformer, AdaptiveAvgPooler,
DenseClassifier and the image_classifier pipeline. Encoders are compared in float64 with
equivalent PyTorch models built here from torch.nn (torchvision's structure and names), including
a torchvision-style ResNet-18 state dict loaded through the documented name mapping."""

from __future__ import annotations

import numpy as np
import pytest

import buildingai as bai
import buildingai.nn.functional as F
from buildingai.errors import ArgumentError, CheckpointError, DTypeError, ShapeError
from buildingai.nn.vision import (
    AdaptiveAvgPooler,
    BasicBlock,
    DenseClassifier,
    ImagePreprocessor,
    ResNetEncoder,
    VisionTransformer,
    from_torchvision_resnet,
    image_classifier,
    split_torchvision_resnet_state_dict,
)
from tests.helpers import check_op
from tests.nn.test_attention import compare_modules

torch = pytest.importorskip("torch")
tnn = torch.nn
WIDTHS = (8, 16, 32, 64)


def _images(shape=(4, 3, 32, 32), seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ----- the torchvision structure, written with torch.nn -----------------------------------------
class TorchBasicBlock(tnn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        self.conv1 = tnn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(planes)
        self.relu = tnn.ReLU()
        self.conv2 = tnn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = tnn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class TorchBottleneck(tnn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1, base_width=64):
        super().__init__()
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = tnn.Conv2d(inplanes, width, 1, bias=False)
        self.bn1 = tnn.BatchNorm2d(width)
        self.conv2 = tnn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False)
        self.bn2 = tnn.BatchNorm2d(width)
        self.conv3 = tnn.Conv2d(width, planes * 4, 1, bias=False)
        self.bn3 = tnn.BatchNorm2d(planes * 4)
        self.relu = tnn.ReLU()
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class TorchResNet(tnn.Module):
    """torchvision.models.ResNet, generalised to any stage count and widths; ``num_classes=None``
    leaves out avgpool and fc (the encoder alone)."""

    def __init__(
        self, block, layers, widths=(64, 128, 256, 512), num_classes=None, in_channels=3,
        stem="imagenet", groups=1, width_per_group=64,
    ):  # fmt: skip
        super().__init__()
        self.inplanes = widths[0]
        self.groups, self.base_width = groups, width_per_group
        if stem == "imagenet":
            self.conv1 = tnn.Conv2d(in_channels, widths[0], 7, 2, 3, bias=False)
            self.maxpool = tnn.MaxPool2d(3, 2, 1)
        else:
            self.conv1 = tnn.Conv2d(in_channels, widths[0], 3, 1, 1, bias=False)
            self.maxpool = tnn.Identity()
        self.bn1 = tnn.BatchNorm2d(widths[0])
        self.relu = tnn.ReLU()
        self.stage_names = []
        for k, (count, planes) in enumerate(zip(layers, widths)):
            name = f"layer{k + 1}"
            setattr(self, name, self._make_layer(block, planes, count, 1 if k == 0 else 2))
            self.stage_names.append(name)
        self.has_head = num_classes is not None
        if self.has_head:
            self.avgpool = tnn.AdaptiveAvgPool2d((1, 1))
            self.fc = tnn.Linear(self.inplanes, num_classes)

    def _make_layer(self, block, planes, blocks, stride):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = tnn.Sequential(
                tnn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                tnn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, 1, None, self.groups, self.base_width))
        return tnn.Sequential(*layers)

    def features(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for name in self.stage_names:
            x = getattr(self, name)(x)
        return x

    def forward(self, x):
        x = self.features(x)
        if self.has_head:
            x = self.fc(torch.flatten(self.avgpool(x), 1))
        return x


def _randomise_batch_norms(model, seed=0):
    """Give every BatchNorm2d of a torch model non-trivial statistics and affine parameters, so
    eval-mode comparisons test them."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, tnn.BatchNorm2d):
                size = module.num_features
                module.running_mean.copy_(torch.randn(size, generator=generator) * 0.1)
                module.running_var.copy_(torch.rand(size, generator=generator) + 0.5)
                module.weight.copy_(torch.rand(size, generator=generator) + 0.5)
                module.bias.copy_(torch.randn(size, generator=generator) * 0.1)
    return model


def _numpy_state(model):
    return {key: value.detach().numpy() for key, value in model.state_dict().items()}


# ----- ImagePreprocessor ---------------------------------------------------------------------
def test_preprocessor_uint8_channels_last():
    pixels = np.random.default_rng(0).integers(0, 256, size=(2, 5, 6, 3), dtype=np.uint8)
    prep = ImagePreprocessor(channels_last=True)
    out = prep(bai.tensor(pixels))
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    expected = (pixels.transpose(0, 3, 1, 2) / 255.0 - mean[:, None, None]) / std[:, None, None]
    assert out.shape == (2, 3, 5, 6) and out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_preprocessor_float_input_is_not_rescaled_and_unbatched_works():
    image = np.random.default_rng(1).random((3, 4, 4))
    prep = ImagePreprocessor(mean=(0.5, 0.5, 0.5), std=(0.25, 0.5, 1.0)).to(bai.float64)
    out = prep(bai.tensor(image))
    expected = (image - 0.5) / np.array([0.25, 0.5, 1.0])[:, None, None]
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12)
    hwc = ImagePreprocessor(normalize=False, channels_last=True)(bai.tensor(image))
    assert hwc.shape == (4, 3, 4)  # (H, W, C) = (3, 4, 4) -> (C, H, W)


def test_preprocessor_without_normalisation_only_scales():
    pixels = np.array([[[[0, 51], [102, 255]]]], dtype=np.uint8)  # (1, 1, 2, 2)
    prep = ImagePreprocessor(normalize=False)
    np.testing.assert_allclose(prep(bai.tensor(pixels)).numpy(), pixels / 255.0, rtol=1e-6)
    assert prep.mean is None and prep.std is None and dict(prep.state_dict()) == {}


def test_preprocessor_statistics_are_buffers_that_follow_to():
    prep = ImagePreprocessor(mean=(0.5,), std=(0.5,))
    assert list(prep.parameters()) == []
    assert set(prep.state_dict()) == {"mean", "std"}  # 255 (pixel_max) is not saved
    prep.to(bai.float64)
    pixels = np.full((1, 1, 2, 2), 255, dtype=np.uint8)
    out = prep(bai.tensor(pixels))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out.numpy(), 1.0)


def test_preprocessor_gradients_match_pytorch():
    prep = ImagePreprocessor(mean=(0.1, 0.2), std=(0.3, 0.4), channels_last=True, dtype=bai.float64)
    mean = torch.tensor([0.1, 0.2], dtype=torch.float64)[:, None, None]
    std = torch.tensor([0.3, 0.4], dtype=torch.float64)[:, None, None]
    check_op(
        prep, (2, 3, 4, 2), torch_fn=lambda x: (x.permute(0, 3, 1, 2) - mean) / std, gradgrad=True
    )


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mean": (0.5, 0.5), "std": (0.5,)}, "2 mean\\(s\\) and 1 std"),
        ({"mean": (0.5,), "std": (0.0,)}, "every std must be positive"),
    ],
)
def test_preprocessor_argument_errors(kwargs, match):
    with pytest.raises(ArgumentError, match=match):
        ImagePreprocessor(**kwargs)


def test_preprocessor_input_errors():
    prep = ImagePreprocessor()
    with pytest.raises(ShapeError, match=r"expected images \(N, C, H, W\).*\(4, 4\)"):
        prep(bai.zeros(4, 4))
    with pytest.raises(ShapeError, match="images have 1 channels .* mean and std have 3") as info:
        prep(bai.zeros(2, 1, 4, 4))
    assert "channels_last" in str(info.value)
    with pytest.raises(DTypeError, match="expected uint8 images .* got int32"):
        prep(bai.tensor(np.zeros((1, 3, 2, 2), dtype=np.int32)))


# ----- ResNetEncoder: structure and shapes ---------------------------------------------------
@pytest.mark.parametrize(
    "blocks,block,widths,stem,in_channels,size,expected",
    [
        ([2, 2, 2, 2], "basic", WIDTHS, "imagenet", 3, 32, (2, 64, 1, 1)),
        ([3, 4, 6, 3], "bottleneck", WIDTHS, "imagenet", 3, 32, (2, 256, 1, 1)),
        ([1, 1, 1], "basic", (4, 8, 16), "cifar", 1, 16, (2, 16, 4, 4)),
        ([1], "bottleneck", (4,), "cifar", 3, 8, (2, 16, 8, 8)),
        ([1, 2], "basic", (4, 8), "imagenet", 3, 24, (2, 8, 3, 3)),
    ],
    ids=["resnet18", "resnet50", "three-stages", "one-stage", "odd-size"],
)
def test_resnet_shapes(blocks, block, widths, stem, in_channels, size, expected):
    encoder = ResNetEncoder(blocks, block, widths, in_channels=in_channels, stem=stem)
    out = encoder(bai.randn(2, in_channels, size, size))
    assert tuple(out.shape) == expected
    assert encoder.out_channels == expected[1]
    assert encoder.stage_channels[-1] == expected[1]
    assert len(encoder.stages()) == len(blocks)


def test_resnet_default_widths_double_and_reduction():
    encoder = ResNetEncoder([1, 1, 1, 1], "basic")
    assert encoder.widths == (64, 128, 256, 512) and encoder.out_channels == 512
    assert encoder.reduction == 32
    assert ResNetEncoder([1, 1], "basic", (4, 8), stem="cifar").reduction == 2


def test_resnet_names_match_torchvision():
    ours = ResNetEncoder([2, 2, 2, 2], "basic", WIDTHS)
    theirs = TorchResNet(TorchBasicBlock, [2, 2, 2, 2], WIDTHS, num_classes=10)
    expected = [key for key in theirs.state_dict() if not key.startswith("fc.")]
    assert list(ours.state_dict()) == expected
    assert "layer2.0.downsample.0.weight" in expected and "layer1.0.downsample" not in str(expected)


def test_resnet_initialisation():
    encoder = ResNetEncoder([1, 1], "bottleneck", (16, 32), zero_init_residual=True)
    weight = encoder.layer2[0].conv2.weight.numpy()  # (32, 32, 3, 3): fan_out = 288
    assert abs(weight.std() - np.sqrt(2.0 / 288)) < 0.2 * np.sqrt(2.0 / 288)
    assert np.all(encoder.layer1[0].bn3.weight.numpy() == 0)
    assert np.all(encoder.bn1.weight.numpy() == 1)
    basic = ResNetEncoder([1], "basic", (4,), zero_init_residual=True)
    assert np.all(basic.layer1[0].bn2.weight.numpy() == 0)


# ----- ResNetEncoder against PyTorch ---------------------------------------------------------
def _compare_eval(ours, theirs, images):
    ours.to(bai.float64)
    theirs.double()
    _randomise_batch_norms(theirs)
    ours.load_state_dict(_numpy_state(theirs))
    ours.eval()
    theirs.eval()
    out = ours(bai.tensor(images))
    with torch.no_grad():
        expected = theirs.features(torch.tensor(images))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-9, atol=1e-11)


def test_resnet18_style_matches_pytorch_in_eval():
    _compare_eval(
        ResNetEncoder([2, 2, 2, 2], "basic", WIDTHS),
        TorchResNet(TorchBasicBlock, [2, 2, 2, 2], WIDTHS),
        _images(),
    )


def test_resnet50_style_matches_pytorch_in_eval():
    _compare_eval(
        ResNetEncoder([3, 4, 6, 3], "bottleneck", WIDTHS),
        TorchResNet(TorchBottleneck, [3, 4, 6, 3], WIDTHS),
        _images((2, 3, 32, 32)),
    )


def test_resnext_style_cifar_stem_matches_pytorch_in_eval():
    _compare_eval(
        ResNetEncoder([1, 1], "bottleneck", (8, 16), stem="cifar", groups=2, width_per_group=8),
        TorchResNet(TorchBottleneck, [1, 1], (8, 16), stem="cifar", groups=2, width_per_group=8),
        _images((2, 3, 8, 8)),
    )


class _Features(tnn.Module):
    """A torch ResNet whose forward is its feature map (what compare_modules calls)."""

    def __init__(self, resnet):
        super().__init__()
        self.resnet = resnet

    def forward(self, x):
        return self.resnet.features(x)


class _Wrapped(bai.nn.Module):
    """Our encoder under the same ``resnet.`` prefix."""

    def __init__(self, encoder):
        super().__init__()
        self.resnet = encoder

    def forward(self, x):
        return self.resnet(x)


@pytest.mark.parametrize(
    "block,torch_block,stem",
    [("basic", TorchBasicBlock, "imagenet"), ("bottleneck", TorchBottleneck, "cifar")],
)
def test_resnet_gradients_match_pytorch_in_training(block, torch_block, stem):
    """Train mode: batch statistics in the forward pass, input and parameter gradients, and the
    running statistics each batch norm updates."""
    ours = _Wrapped(ResNetEncoder([1, 1], block, (4, 8), stem=stem))
    theirs = _Features(TorchResNet(torch_block, [1, 1], (4, 8), stem=stem))
    compare_modules(ours, theirs, [_images((3, 3, 12, 12))], train=True)
    for key, value in theirs.state_dict().items():
        np.testing.assert_allclose(
            ours.state_dict()[key].numpy(), value.numpy(), rtol=1e-9, atol=1e-12, err_msg=key
        )


@pytest.mark.parametrize(
    "block,torch_block", [("basic", TorchBasicBlock), ("bottleneck", TorchBottleneck)]
)
def test_tiny_resnet_second_derivatives(block, torch_block):
    """Input gradients and second derivatives against PyTorch and finite differences (train
    mode: batch statistics), as a gradient penalty or meta-learning would need them."""
    ours = ResNetEncoder([1, 1], block, (2, 2), in_channels=1, stem="cifar").to(bai.float64)
    theirs = TorchResNet(torch_block, [1, 1], (2, 2), in_channels=1, stem="cifar").double()
    ours.load_state_dict(_numpy_state(theirs))
    # finite differences of second derivatives cost a second per block type; one suffices
    check_op(
        ours, (2, 1, 3, 3), torch_fn=theirs.features, gradgrad=True, gradcheck=block == "basic"
    )


# ----- torchvision weights -------------------------------------------------------------------
def _torchvision_resnet18(num_classes=10, seed=0):
    """A ResNet-18 (torchvision structure, small widths) with trained-looking statistics."""
    torch.manual_seed(seed)
    model = TorchResNet(TorchBasicBlock, [2, 2, 2, 2], WIDTHS, num_classes=num_classes)
    return _randomise_batch_norms(model.double().eval(), seed)


def test_from_torchvision_resnet18_features_and_classifier():
    model = _torchvision_resnet18()
    state = model.state_dict()  # torch tensors, with fc.* and num_batches_tracked
    encoder = from_torchvision_resnet(state, dtype=bai.float64).eval()
    assert encoder.blocks == (2, 2, 2, 2) and encoder.block == "basic"
    assert encoder.widths == WIDTHS and encoder.stem == "imagenet"

    images = _images()
    with torch.no_grad():
        features = model.features(torch.tensor(images))
        logits = model(torch.tensor(images))
    ours = encoder(bai.tensor(images))
    np.testing.assert_allclose(ours.numpy(), features.numpy(), rtol=1e-9, atol=1e-11)

    _, head_state = split_torchvision_resnet_state_dict(state)
    assert set(head_state) == {"fc.weight", "fc.bias"}
    head = DenseClassifier(10, in_features=encoder.out_channels, dtype=bai.float64)
    head.load_state_dict(head_state)
    pipeline = image_classifier(encoder, 10)
    pipeline.classifier = head
    np.testing.assert_allclose(
        pipeline(bai.tensor(images)).numpy(), logits.numpy(), rtol=1e-9, atol=1e-11
    )


def test_load_torchvision_state_dict_into_an_existing_encoder():
    model = _torchvision_resnet18()
    # A checkpoint saved from DataParallel: every key starts with "module."
    state = {"module." + key: value for key, value in model.state_dict().items()}
    encoder = ResNetEncoder([2, 2, 2, 2], "basic", WIDTHS).to(bai.float64)
    result = encoder.load_torchvision_state_dict(state)
    assert not result.missing_keys and not result.unexpected_keys
    images = _images((2, 3, 32, 32))
    with torch.no_grad():
        expected = model.features(torch.tensor(images))
    out = encoder.eval()(bai.tensor(images))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-9, atol=1e-11)


def test_from_torchvision_infers_bottleneck_groups_stem_and_channels():
    model = TorchResNet(
        TorchBottleneck, [1, 2], (8, 16), in_channels=1, stem="cifar", groups=2,
        width_per_group=16,
    )  # fmt: skip
    encoder = from_torchvision_resnet(model.state_dict())
    assert encoder.block == "bottleneck" and encoder.blocks == (1, 2)
    assert encoder.widths == (8, 16) and encoder.in_channels == 1 and encoder.stem == "cifar"
    assert encoder.layer1[0].conv2.groups == 2
    assert encoder.out_channels == 64


def test_torchvision_mapping_errors():
    state = _torchvision_resnet18().state_dict()
    with pytest.raises(CheckpointError, match="no 'conv1.weight'"):
        from_torchvision_resnet({k: v for k, v in state.items() if k != "conv1.weight"})
    with pytest.raises(CheckpointError, match=r"found stages \[1, 2, 3\]|found stages \[1, 3, 4\]"):
        from_torchvision_resnet({k: v for k, v in state.items() if not k.startswith("layer2.")})
    with pytest.raises(CheckpointError, match="found stages \\[\\]"):
        from_torchvision_resnet({"fc.weight": state["fc.weight"]})
    odd = dict(state)
    odd["conv1.weight"] = torch.zeros(8, 3, 5, 5)
    with pytest.raises(CheckpointError, match="a 5x5 stem is neither"):
        from_torchvision_resnet(odd)
    encoder = ResNetEncoder([2, 2, 2], "basic", WIDTHS[:3])
    with pytest.raises(CheckpointError, match="Unexpected key.*layer4"):
        encoder.load_torchvision_state_dict(state)
    result = encoder.load_torchvision_state_dict(state, strict=False)
    assert result.unexpected_keys and all(k.startswith("layer4.") for k in result.unexpected_keys)


# ----- ResNetEncoder errors ------------------------------------------------------------------
@pytest.mark.parametrize(
    "args,kwargs,match",
    [
        (([],), {}, "blocks must be a non-empty list"),
        (([2, 0],), {}, "blocks must be a non-empty list"),
        (([2, 2], "wide"), {}, "block must be 'basic' or 'bottleneck', got 'wide'"),
        (([2, 2], "basic", (8, 16)), {"stem": "tiny"}, "stem must be 'imagenet' or 'cifar'"),
        (([2, 2], "basic", WIDTHS), {}, r"2 stages \(blocks=\[2, 2\]\) but widths=\[8, 16, 32"),
        (([1], "basic", (8,)), {"groups": 32}, r"\[BasicBlock\] supports only groups=1"),
    ],
)
def test_resnet_argument_errors(args, kwargs, match):
    with pytest.raises(ArgumentError, match=match):
        ResNetEncoder(*args, **kwargs)


def test_resnet_input_error_names_the_layout():
    encoder = ResNetEncoder([1], "basic", (4,))
    with pytest.raises(
        ShapeError, match=r"expected images \(N, 3, H, W\), got shape \(2, 8, 8, 3\)"
    ):
        encoder(bai.randn(2, 8, 8, 3))
    with pytest.raises(ShapeError, match="channels_last=True"):
        encoder(bai.randn(8, 8, 3))


def test_basic_block_alone():
    block = BasicBlock(4, 8, stride=2)
    assert block.downsample is not None
    assert tuple(block(bai.randn(2, 4, 6, 6)).shape) == (2, 8, 3, 3)
    assert BasicBlock(4, 4).downsample is None


# ----- VisionTransformer ---------------------------------------------------------------------
class TorchViT(tnn.Module):
    """The same ViT encoder written with torch.nn, with our parameter names."""

    def __init__(self, image, patch, dim, depth, heads, mlp_dim, channels=3, class_token=True):
        super().__init__()
        self.patch_embed = tnn.Conv2d(channels, dim, patch, stride=patch)
        tokens = (image[0] // patch[0]) * (image[1] // patch[1]) + int(class_token)
        self.class_token = tnn.Parameter(torch.randn(1, 1, dim)) if class_token else None
        self.pos_embedding = tnn.Parameter(torch.randn(1, tokens, dim))
        self.dropout = tnn.Dropout(0.0)
        self.layers = tnn.ModuleList(
            tnn.TransformerEncoderLayer(
                dim,
                heads,
                mlp_dim,
                0.0,
                activation="gelu",
                layer_norm_eps=1e-6,
                batch_first=True,
                norm_first=True,
            )  # fmt: skip
            for _ in range(depth)
        )
        self.norm = tnn.LayerNorm(dim, eps=1e-6)

    def forward(self, images):
        x = self.patch_embed(images).flatten(2).transpose(1, 2)
        if self.class_token is not None:
            x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        x = self.dropout(x + self.pos_embedding)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


@pytest.mark.parametrize(
    "image,patch,class_token", [((8, 8), (4, 4), True), ((8, 12), (4, 2), False)]
)
def test_vit_matches_pytorch(image, patch, class_token):
    """Values, input gradients and every parameter's gradient (class token and positions
    included), in float64; train mode with dropout 0 (PyTorch's fused inference path is off)."""
    torch.manual_seed(0)
    ours = VisionTransformer(image, patch, 8, 2, 2, 16, channels=2, class_token=class_token)
    theirs = TorchViT(image, patch, 8, 2, 2, 16, channels=2, class_token=class_token)
    compare_modules(ours, theirs, [_images((2, 2, *image))], train=True)


def test_tiny_vit_second_derivatives():
    torch.manual_seed(0)
    ours = VisionTransformer(4, 2, 4, 1, 2, 8, channels=1).to(bai.float64)
    theirs = TorchViT((4, 4), (2, 2), 4, 1, 2, 8, channels=1).double()
    ours.load_state_dict(_numpy_state(theirs))

    def reference(images):
        # PyTorch's fused CPU attention kernel has no second derivative; its math kernel has.
        with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
            return theirs(images)

    check_op(ours, (1, 1, 4, 4), torch_fn=reference, gradgrad=True)


@pytest.mark.parametrize(
    "image,patch,class_token,tokens", [(32, 8, True, 17), (32, 4, False, 64), ((16, 8), 4, True, 9)]
)
def test_vit_shapes(image, patch, class_token, tokens):
    vit = VisionTransformer(image, patch, 16, 1, 4, 32, class_token=class_token)
    size = (image, image) if isinstance(image, int) else image
    out = vit(bai.randn(3, 3, *size))
    assert tuple(out.shape) == (3, tokens, 16)
    assert vit.num_tokens == tokens and vit.out_channels == vit.dim == 16


def test_vit_layers_start_from_independent_draws():
    vit = VisionTransformer(8, 4, 8, 2, 2, 16)
    first, second = vit.layers[0].linear1.weight.numpy(), vit.layers[1].linear1.weight.numpy()
    assert not np.allclose(first, second)
    assert np.all(vit.class_token.numpy() == 0)
    assert 0.005 < vit.pos_embedding.numpy().std() < 0.05


def test_vit_dropout_is_active_in_training_only():
    bai.manual_seed(0)
    vit = VisionTransformer(8, 4, 8, 1, 2, 16, dropout=0.5)
    images = bai.randn(2, 3, 8, 8)
    vit.eval()
    np.testing.assert_array_equal(vit(images).numpy(), vit(images).numpy())
    vit.train()
    assert not np.allclose(vit(images).numpy(), vit(images).numpy())


@pytest.mark.parametrize(
    "args,match",
    [
        ((30, 8, 16, 1, 4, 32), r"image_size \(30, 30\) is not divisible by patch_size \(8, 8\)"),
        ((32, 8, 18, 1, 4, 32), "dim=18 is not divisible by heads=4"),
        ((32, 8, 16, 0, 4, 32), "depth must be at least 1"),
        ((32, (8, 8, 8), 16, 1, 4, 32), "patch_size must be a positive int or a pair"),
    ],
)
def test_vit_argument_errors(args, match):
    with pytest.raises(ArgumentError, match=match):
        VisionTransformer(*args)


def test_vit_input_error_suggests_the_fix():
    vit = VisionTransformer(16, 4, 8, 1, 2, 16)
    with pytest.raises(ShapeError, match=r"expected images \(N, 3, 16, 16\), got shape") as info:
        vit(bai.randn(2, 3, 32, 32))
    assert "image_size=(32, 32)" in str(info.value)


# ----- AdaptiveAvgPooler ---------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (1, 1, 1, 1), (0, 3, 2, 2)], ids=str)
def test_pooler_feature_maps(shape):
    check_op(AdaptiveAvgPooler(), shape, torch_fn=lambda x: x.mean(dim=(2, 3)), gradgrad=True)


@pytest.mark.parametrize("shape", [(2, 5, 3), (1, 1, 4), (0, 2, 3)], ids=str)
def test_pooler_tokens_mean(shape):
    check_op(AdaptiveAvgPooler(), shape, torch_fn=lambda x: x.mean(dim=1), gradgrad=True)


def test_pooler_class_token():
    pooler = AdaptiveAvgPooler(class_token=True)
    check_op(pooler, (2, 5, 3), torch_fn=lambda x: x[:, 0], gradgrad=True)
    # a feature map has no class token: the same pooler averages it
    check_op(pooler, (2, 3, 2, 2), torch_fn=lambda x: x.mean(dim=(2, 3)))


def test_pooler_errors():
    with pytest.raises(
        ShapeError, match=r"\(N, C, H, W\) or tokens \(N, T, D\), got shape \(2, 3\)"
    ):
        AdaptiveAvgPooler()(bai.zeros(2, 3))
    with pytest.raises(ShapeError, match="needs at least one token"):
        AdaptiveAvgPooler(class_token=True)(bai.zeros(2, 0, 3))


# ----- DenseClassifier -----------------------------------------------------------------------
def _torch_head(in_features, hidden, classes):
    layers, width = [], in_features
    for size in hidden:
        layers += [tnn.Dropout(0.0), tnn.Linear(width, size), tnn.ReLU()]
        width = size
    head = tnn.Module()
    head.mlp = tnn.Sequential(*layers) if layers else tnn.Identity()
    head.dropout = tnn.Dropout(0.0)
    head.fc = tnn.Linear(width, classes)
    head.forward = lambda x: head.fc(head.dropout(head.mlp(x)))
    return head


@pytest.mark.parametrize("hidden", [None, 6, [6, 5]], ids=["linear", "one-hidden", "two-hidden"])
def test_classifier_matches_pytorch(hidden):
    sizes = [] if hidden is None else [hidden] if isinstance(hidden, int) else hidden
    compare_modules(
        DenseClassifier(3, hidden, in_features=4),
        _torch_head(4, sizes, 3),
        [_images((5, 4))],
        train=True,
    )


def test_classifier_on_any_leading_shape_and_names():
    head = DenseClassifier(7, [16], dropout=0.1, in_features=8)
    assert tuple(head(bai.randn(2, 3, 8)).shape) == (2, 3, 7)
    assert set(head.state_dict()) == {"mlp.1.weight", "mlp.1.bias", "fc.weight", "fc.bias"}
    gelu = DenseClassifier(2, 4, activation="gelu", in_features=3)
    assert isinstance(gelu.mlp[2], bai.nn.GELU)


def test_classifier_dropout_in_training_only():
    bai.manual_seed(0)
    head = DenseClassifier(3, 32, dropout=0.5, in_features=16)
    x = bai.randn(4, 16)
    head.eval()
    np.testing.assert_array_equal(head(x).numpy(), head(x).numpy())
    head.train()
    assert not np.allclose(head(x).numpy(), head(x).numpy())


def test_classifier_errors():
    with pytest.raises(ArgumentError, match="in_features must be a positive int, got 0"):
        DenseClassifier(10, in_features=0)
    with pytest.raises(ArgumentError, match="num_classes must be a positive int"):
        DenseClassifier(0, in_features=4)
    with pytest.raises(ArgumentError, match="hidden must be None, a positive int"):
        DenseClassifier(3, [4, -1], in_features=4)
    with pytest.raises(ArgumentError, match="activation must be 'relu' or 'gelu'"):
        DenseClassifier(3, 4, activation="tanh", in_features=4)
    head = DenseClassifier(3, in_features=8)
    with pytest.raises(
        ShapeError, match=r"expected features \(N, 8\), got shape \(2, 8, 4, 4\)"
    ) as info:
        head(bai.randn(2, 8, 4, 4))
    assert "AdaptiveAvgPooler" in str(info.value)
    with pytest.raises(ShapeError, match="in_features=encoder.out_channels"):
        head(bai.randn(2, 5))


# ----- pipelines -----------------------------------------------------------------------------
def _train(model, images, labels, steps=6, lr=3e-3):
    optimizer = bai.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _data(seed=0):
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(4, 32, 32, 3), dtype=np.uint8)  # channels-last uint8
    labels = rng.integers(0, 10, size=4)
    return bai.tensor(pixels), bai.tensor(labels)


def _resnet():
    return ResNetEncoder([2, 2, 2, 2], "basic", WIDTHS)  # out_channels 64


def _vit():
    return VisionTransformer(32, 8, 64, 2, 4, 128)  # out_channels 64


@pytest.mark.parametrize("make_encoder", [_resnet, _vit], ids=["resnet", "vit"])
def test_pipeline_trains(make_encoder):
    bai.manual_seed(0)
    model = image_classifier(
        make_encoder(), 10, preprocessor=ImagePreprocessor(channels_last=True), hidden=32
    )
    assert [name for name, _ in model.named_children()] == [
        "preprocess", "encoder", "pool", "classifier",
    ]  # fmt: skip
    images, labels = _data()
    losses = _train(model, images, labels)
    assert losses[-1] < 0.7 * losses[0], losses


def test_swapping_the_encoder_keeps_the_other_parts():
    bai.manual_seed(0)
    preprocess = ImagePreprocessor(channels_last=True)
    pooler = AdaptiveAvgPooler()
    model = image_classifier(_resnet(), 10, preprocessor=preprocess, pooler=pooler)
    head = model.classifier
    images, labels = _data()
    assert tuple(model(images).shape) == (4, 10)

    model.encoder = _vit()  # the only change
    assert model.preprocess is preprocess and model.pool is pooler and model.classifier is head
    assert [type(m).__name__ for m in model] == [
        "ImagePreprocessor", "VisionTransformer", "AdaptiveAvgPooler", "DenseClassifier",
    ]  # fmt: skip
    losses = _train(model, images, labels)
    assert losses[-1] < 0.7 * losses[0], losses


def test_pipeline_with_class_token_pooling_and_state_dict_round_trip():
    bai.manual_seed(0)
    model = image_classifier(_vit(), 10, pooler=AdaptiveAvgPooler(class_token=True))
    twin = image_classifier(_vit(), 10, pooler=AdaptiveAvgPooler(class_token=True))
    twin.load_state_dict(model.state_dict())
    images = bai.randn(2, 3, 32, 32)
    model.eval()
    twin.eval()
    np.testing.assert_allclose(model(images).numpy(), twin(images).numpy(), rtol=1e-6)


def test_pipeline_needs_an_encoder_with_out_channels():
    with pytest.raises(ArgumentError, match=r"encoder \(Linear\) has no integer out_channels"):
        image_classifier(bai.nn.Linear(3, 4), 10)


def test_lazy_classifier_follows_either_encoder_unchanged():
    """DenseClassifier(num_classes) sizes itself on its first call, so the same pipeline takes a
    ResNet (64 channels) or a ViT (48-dim tokens) without touching the other parts."""
    from buildingai.nn import (
        AdaptiveAvgPooler,
        DenseClassifier,
        ResNetEncoder,
        Sequential,
        VisionTransformer,
    )

    images = bai.randn(2, 3, 32, 32)
    for encoder in (
        ResNetEncoder(blocks=[1, 1], block="basic", widths=(8, 64), stem="cifar"),
        VisionTransformer(image_size=32, patch_size=8, dim=48, depth=1, heads=4, mlp_dim=64),
    ):
        classifier = DenseClassifier(10, hidden=16)
        assert list(classifier.parameters()) == []
        model = Sequential(encoder, AdaptiveAvgPooler(), classifier)
        logits = model(images)
        assert logits.shape == (2, 10)
        assert classifier.in_features == encoder.out_channels
        assert classifier.fc.weight.shape == (10, 16)
        assert len(list(classifier.parameters())) == 4


def test_lazy_classifier_built_after_eval_follows_its_parents_mode():
    classifier = DenseClassifier(3, hidden=4, dropout=0.5).eval()
    features = bai.randn(8, 6)
    first = classifier(features)  # builds mlp and fc now, after eval()
    assert not any(module.training for _, module in classifier.named_modules())
    np.testing.assert_array_equal(classifier(features).numpy(), first.numpy())  # no dropout
    trained = DenseClassifier(3, hidden=4, dropout=0.5)
    trained(features)
    assert all(module.training for _, module in trained.named_modules())
