"""ResNet encoders (He et al., 2016) with torchvision's module structure and parameter names.

``ResNetEncoder`` is torchvision's ``ResNet`` without its head (``avgpool``, ``fc``): it maps
images (N, C, H, W) to the last feature map (N, out_channels, H', W'). Because every sub-module
carries torchvision's name (``conv1``, ``bn1``, ``layer1.0.conv1``, ``layer2.0.downsample.0``...),
a torchvision ResNet state dict loads after dropping the ``fc.*`` classifier entries; see
``split_torchvision_resnet_state_dict`` and ``from_torchvision_resnet``.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Mapping, Sequence

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, CheckpointError, ShapeError
from .. import init
from ..activation import ReLU
from ..containers import Identity, Sequential
from ..conv import Conv2d
from ..module import IncompatibleKeys, Module
from ..norm import BatchNorm2d
from ..pool import MaxPool2d

_STEMS = ("imagenet", "cifar")


def _is_count(value) -> bool:
    """A positive integer (Python or NumPy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 1


def _conv3x3(in_channels: int, out_channels: int, stride: int, groups: int, options: dict):
    return Conv2d(
        in_channels, out_channels, 3, stride=stride, padding=1, groups=groups, bias=False,
        **options,
    )  # fmt: skip


def _conv1x1(in_channels: int, out_channels: int, stride: int, options: dict):
    return Conv2d(in_channels, out_channels, 1, stride=stride, bias=False, **options)


def _downsample(in_channels: int, out_channels: int, stride: int, options: dict) -> Module | None:
    """The projection of the shortcut when a block changes resolution or width (torchvision's
    option B: a strided 1x1 convolution and batch norm); None when the identity fits."""
    if stride == 1 and in_channels == out_channels:
        return None
    return Sequential(
        _conv1x1(in_channels, out_channels, stride, options), BatchNorm2d(out_channels, **options)
    )


class BasicBlock(Module):
    """Two 3x3 convolutions with a residual connection (ResNet-18/34).

    x: (N, in_channels, H, W) -> (N, planes, H / stride, W / stride).
    """

    expansion = 1

    def __init__(
        self,
        in_channels: int,
        planes: int,
        stride: int = 1,
        groups: int = 1,
        width_per_group: int = 64,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        if groups != 1 or width_per_group != 64:
            raise ArgumentError(
                f"[BasicBlock] supports only groups=1 and width_per_group=64, got "
                f"groups={groups}, width_per_group={width_per_group}",
                help="grouped (ResNeXt) and wide ResNets use block='bottleneck'",
            )
        options = {"dtype": dtype, "device": device}
        self.conv1 = _conv3x3(in_channels, planes, stride, 1, options)
        self.bn1 = BatchNorm2d(planes, **options)
        self.relu = ReLU()
        self.conv2 = _conv3x3(planes, planes, 1, 1, options)
        self.bn2 = BatchNorm2d(planes, **options)
        self.downsample = _downsample(in_channels, planes, stride, options)
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + shortcut)


class Bottleneck(Module):
    """1x1 reduce, 3x3 (strided, possibly grouped), 1x1 expand by 4, with a residual connection
    (ResNet-50/101/152, ResNeXt, Wide ResNet). The stride sits on the 3x3 convolution, as in
    torchvision ("ResNet v1.5").

    x: (N, in_channels, H, W) -> (N, 4 * planes, H / stride, W / stride).
    """

    expansion = 4

    def __init__(
        self,
        in_channels: int,
        planes: int,
        stride: int = 1,
        groups: int = 1,
        width_per_group: int = 64,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        options = {"dtype": dtype, "device": device}
        width = int(planes * (width_per_group / 64.0)) * groups
        out_channels = planes * self.expansion
        self.conv1 = _conv1x1(in_channels, width, 1, options)
        self.bn1 = BatchNorm2d(width, **options)
        self.conv2 = _conv3x3(width, width, stride, groups, options)
        self.bn2 = BatchNorm2d(width, **options)
        self.conv3 = _conv1x1(width, out_channels, 1, options)
        self.bn3 = BatchNorm2d(out_channels, **options)
        self.relu = ReLU()
        self.downsample = _downsample(in_channels, out_channels, stride, options)
        self.stride = stride

    def forward(self, x: Tensor) -> Tensor:
        shortcut = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + shortcut)


_BLOCKS = {"basic": BasicBlock, "bottleneck": Bottleneck}


class ResNetEncoder(Module):
    """The convolutional body of a ResNet: stem, then one stage per entry of ``blocks``.

    images: (N, in_channels, H, W) -> features (N, out_channels, H / reduction, W / reduction).

    - ``blocks``: residual blocks per stage, any number of stages (``[2, 2, 2, 2]`` with
      ``block="basic"`` is ResNet-18, ``[3, 4, 6, 3]`` with ``"bottleneck"`` is ResNet-50).
    - ``widths``: the ``planes`` of each stage; None means 64 doubling per stage
      (64, 128, 256, 512 for four stages). A bottleneck stage outputs 4 * planes channels.
    - ``stem``: ``"imagenet"`` is a 7x7 stride-2 convolution and a 3x3 stride-2 max pool
      (reduction 4 before the stages); ``"cifar"`` a 3x3 stride-1 convolution and no pooling,
      for small images such as 32x32. The stem has ``widths[0]`` channels.
    - ``groups`` and ``width_per_group`` give ResNeXt (32, 4) and Wide ResNet (1, 128) blocks.
    - ``zero_init_residual``: start the last batch norm of every block at zero, so each block
      begins as the identity (Goyal et al., 2017).

    Every stage after the first halves the resolution. Attributes: ``out_channels``,
    ``reduction`` (the total stride), ``stage_channels`` (channels after each stage).
    Sub-module names are torchvision's: ``conv1``, ``bn1``, ``relu``, ``maxpool``,
    ``layer1`` ... ``layerK`` (each a Sequential of blocks).
    """

    def __init__(
        self,
        blocks: Sequence[int] = (3, 4, 6, 3),
        block: str = "bottleneck",
        widths: Sequence[int] | None = None,
        in_channels: int = 3,
        stem: str = "imagenet",
        *,
        groups: int = 1,
        width_per_group: int = 64,
        zero_init_residual: bool = False,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        blocks = tuple(blocks)
        if not blocks or not all(_is_count(n) for n in blocks):
            raise ArgumentError(
                f"[ResNetEncoder] blocks must be a non-empty list of positive block counts per "
                f"stage, got {list(blocks)}",
                help="e.g. blocks=[2, 2, 2, 2] for ResNet-18, [3, 4, 6, 3] for ResNet-50",
            )
        if block not in _BLOCKS:
            raise ArgumentError(
                f"[ResNetEncoder] block must be 'basic' or 'bottleneck', got {block!r}",
                help="'basic' (two 3x3 convolutions) for ResNet-18/34, 'bottleneck' for "
                "ResNet-50 and deeper",
            )
        if stem not in _STEMS:
            raise ArgumentError(
                f"[ResNetEncoder] stem must be 'imagenet' or 'cifar', got {stem!r}",
                help="'imagenet': 7x7/2 convolution + 3x3/2 max pool; 'cifar': one 3x3/1 "
                "convolution, for small images",
            )
        widths = tuple(64 * 2**i for i in range(len(blocks))) if widths is None else tuple(widths)
        if len(widths) != len(blocks) or not all(_is_count(w) for w in widths):
            raise ArgumentError(
                f"[ResNetEncoder] widths must give one positive width per stage: {len(blocks)} "
                f"stages (blocks={list(blocks)}) but widths={list(widths)}",
                help="pass as many widths as blocks, e.g. widths=(8, 16, 32, 64) with four stages",
            )
        blocks, widths = tuple(int(n) for n in blocks), tuple(int(w) for w in widths)
        block_class = _BLOCKS[block]
        options = {"dtype": dtype, "device": device}

        self.in_channels = in_channels
        self.blocks = blocks
        self.block = block
        self.widths = widths
        self.stem = stem
        if stem == "imagenet":
            self.conv1 = Conv2d(
                in_channels, widths[0], 7, stride=2, padding=3, bias=False, **options
            )
        else:
            self.conv1 = Conv2d(
                in_channels, widths[0], 3, stride=1, padding=1, bias=False, **options
            )
        self.bn1 = BatchNorm2d(widths[0], **options)
        self.relu = ReLU()
        self.maxpool = MaxPool2d(3, stride=2, padding=1) if stem == "imagenet" else Identity()

        channels = widths[0]
        stage_channels = []
        for stage, (count, planes) in enumerate(zip(blocks, widths)):
            stride = 1 if stage == 0 else 2
            layers = []
            for index in range(count):
                layers.append(
                    block_class(
                        channels,
                        planes,
                        stride if index == 0 else 1,
                        groups,
                        width_per_group,
                        **options,
                    )  # fmt: skip
                )
                channels = planes * block_class.expansion
            self.add_module(f"layer{stage + 1}", Sequential(*layers))
            stage_channels.append(channels)
        self.stage_channels = tuple(stage_channels)
        self.out_channels = channels
        self.reduction = (4 if stem == "imagenet" else 1) * 2 ** (len(blocks) - 1)
        self._reset_parameters(zero_init_residual)

    def _reset_parameters(self, zero_init_residual: bool) -> None:
        # torchvision's initialisation: He-normal convolutions (fan_out, as the backward pass
        # sees them), batch norm at the identity.
        for module in self.modules():
            if isinstance(module, Conv2d):
                init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, BatchNorm2d):
                init.ones_(module.weight)
                init.zeros_(module.bias)
        if zero_init_residual:
            for module in self.modules():
                if isinstance(module, Bottleneck):
                    init.zeros_(module.bn3.weight)
                elif isinstance(module, BasicBlock):
                    init.zeros_(module.bn2.weight)

    def stages(self) -> list[Sequential]:
        """The stages ``layer1`` ... ``layerK`` in order (for feature pyramids or freezing)."""
        return [getattr(self, f"layer{k + 1}") for k in range(len(self.blocks))]

    def forward(self, images: Tensor) -> Tensor:
        if images.ndim != 4 or images.shape[1] != self.in_channels:
            raise ShapeError(
                f"[ResNetEncoder] expected images (N, {self.in_channels}, H, W), got shape "
                f"{tuple(images.shape)}",
                help="channels-last images (N, H, W, C) go through "
                "ImagePreprocessor(channels_last=True) first; in_channels sets C",
            )
        x = self.maxpool(self.relu(self.bn1(self.conv1(images))))  # (N, widths[0], H/4, W/4)
        for stage in self.stages():
            x = stage(x)
        return x  # (N, out_channels, H / reduction, W / reduction)

    def load_torchvision_state_dict(
        self, state_dict: Mapping, strict: bool = True
    ) -> IncompatibleKeys:
        """Load the weights of a torchvision ``ResNet`` (``model.state_dict()``; PyTorch tensors,
        NumPy arrays or Tensors) into this encoder. The ``fc.*`` classifier entries are set aside
        (load them into a ``DenseClassifier`` with ``split_torchvision_resnet_state_dict``), a
        ``module.`` prefix left by ``DataParallel`` is removed; every other name is used as is.
        Returns ``(missing_keys, unexpected_keys)`` as ``load_state_dict`` does."""
        backbone, _ = split_torchvision_resnet_state_dict(state_dict)
        return self.load_state_dict(backbone, strict=strict)

    def extra_repr(self) -> str:
        return (
            f"blocks={list(self.blocks)}, block={self.block!r}, widths={self.widths}, "
            f"in_channels={self.in_channels}, stem={self.stem!r}"
        )


# ----- torchvision weights ---------------------------------------------------------------------
def _host_array(value):
    """A PyTorch tensor (on any device, with or without grad) as a NumPy array; anything else
    unchanged (``load_state_dict`` reads Tensors and arrays itself)."""
    if hasattr(value, "detach") and hasattr(value, "cpu") and hasattr(value, "numpy"):
        return value.detach().cpu().numpy()
    return value


def split_torchvision_resnet_state_dict(state_dict: Mapping) -> tuple[dict, dict]:
    """Split a torchvision ResNet state dict into ``(encoder_state, classifier_state)``.

    The name mapping: ``conv1.*``, ``bn1.*`` and ``layerK.B.{conv,bn}I.*`` /
    ``layerK.B.downsample.{0,1}.*`` keep their names in ``ResNetEncoder``; ``fc.weight`` and
    ``fc.bias`` keep theirs in ``DenseClassifier(num_classes, in_features=...)`` (whose last
    layer is ``fc``); a leading ``module.`` (``DataParallel``) is removed. PyTorch tensors
    become NumPy arrays.
    """
    encoder_state: dict = {}
    classifier_state: dict = {}
    for key, value in state_dict.items():
        name = key[len("module.") :] if key.startswith("module.") else key
        if name.startswith("fc."):
            classifier_state[name] = _host_array(value)
        else:
            encoder_state[name] = _host_array(value)
    return encoder_state, classifier_state


_BLOCK_KEY = re.compile(r"^layer(\d+)\.(\d+)\.")


def from_torchvision_resnet(state_dict: Mapping, *, dtype=None, device=None) -> ResNetEncoder:
    """A ``ResNetEncoder`` shaped like the torchvision ResNet that produced ``state_dict``,
    holding its weights: stages, blocks per stage, block type, widths, groups,
    width_per_group, input channels and stem are read from the weight shapes
    (``layer1.0.conv3`` present means bottleneck blocks; a 7x7 ``conv1`` the ImageNet stem).

    The ``fc.*`` entries are not used; see ``split_torchvision_resnet_state_dict``.
    """
    state, _ = split_torchvision_resnet_state_dict(state_dict)

    def shape(key: str) -> tuple[int, ...]:
        if key not in state:
            raise CheckpointError(
                f"[from_torchvision_resnet] the state dict has no '{key}'; it does not look "
                "like a torchvision ResNet",
                help="expected keys such as conv1.weight, bn1.weight, layer1.0.conv1.weight",
            )
        return tuple(state[key].shape)

    counts: dict[int, int] = {}
    for key in state:
        match = _BLOCK_KEY.match(key)
        if match:
            stage, index = int(match.group(1)), int(match.group(2))
            counts[stage] = max(counts.get(stage, 0), index + 1)
    if not counts or sorted(counts) != list(range(1, len(counts) + 1)):
        raise CheckpointError(
            f"[from_torchvision_resnet] found stages {sorted(counts)} in the state dict; expected "
            "layer1, layer2, ... without gaps",
            help="pass the state dict of a torchvision-style ResNet (model.state_dict())",
        )
    blocks = [counts[stage] for stage in range(1, len(counts) + 1)]
    bottleneck = "layer1.0.conv3.weight" in state
    widths, groups, width_per_group = [], 1, 64
    for stage in range(1, len(blocks) + 1):
        if bottleneck:
            planes = shape(f"layer{stage}.0.conv3.weight")[0] // Bottleneck.expansion
            width, per_group_in = shape(f"layer{stage}.0.conv2.weight")[:2]
            groups = width // per_group_in
            width_per_group = width * 64 // (groups * planes)
        else:
            planes = shape(f"layer{stage}.0.conv1.weight")[0]
        widths.append(planes)
    stem_shape = shape("conv1.weight")
    stem = {7: "imagenet", 3: "cifar"}.get(stem_shape[-1])
    if stem is None:
        raise CheckpointError(
            f"[from_torchvision_resnet] conv1.weight has shape {stem_shape}: a {stem_shape[-1]}x"
            f"{stem_shape[-1]} stem is neither the ImageNet (7x7) nor the CIFAR (3x3) one",
            help="build ResNetEncoder yourself and load_state_dict the weights",
        )
    encoder = ResNetEncoder(
        blocks, "bottleneck" if bottleneck else "basic", widths, in_channels=stem_shape[1],
        stem=stem, groups=groups, width_per_group=width_per_group, dtype=dtype, device=device,
    )  # fmt: skip
    encoder.load_state_dict(state)
    return encoder


__all__ = [
    "BasicBlock",
    "Bottleneck",
    "ResNetEncoder",
    "from_torchvision_resnet",
    "split_torchvision_resnet_state_dict",
]
