"""Vision models as separable parts that compose with ``Sequential``:
``ImagePreprocessor`` -> encoder (``ResNetEncoder`` or ``VisionTransformer``) ->
``AdaptiveAvgPooler`` -> ``DenseClassifier``. ``image_classifier`` joins them by name, so an
encoder can be swapped without touching the rest."""

from .heads import AdaptiveAvgPooler, DenseClassifier, image_classifier
from .preprocess import IMAGENET_MEAN, IMAGENET_STD, ImagePreprocessor
from .resnet import (
    BasicBlock,
    Bottleneck,
    ResNetEncoder,
    from_torchvision_resnet,
    split_torchvision_resnet_state_dict,
)
from .vit import VisionTransformer

__all__ = [
    "ImagePreprocessor",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "ResNetEncoder",
    "BasicBlock",
    "Bottleneck",
    "from_torchvision_resnet",
    "split_torchvision_resnet_state_dict",
    "VisionTransformer",
    "AdaptiveAvgPooler",
    "DenseClassifier",
    "image_classifier",
]
