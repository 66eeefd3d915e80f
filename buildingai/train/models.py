"""Small ready-made models for configs and examples: an MLP and a small CNN.

They are ordinary Modules, written out in full; copy one into your own code to change it.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import nn
from ..autograd.tensor import Tensor
from ..nn.conv import Conv2d
from ..nn.dropout import Dropout
from ..nn.pool import MaxPool2d


def _check_sizes(model: str, **sizes) -> None:
    """Raise ``ValueError`` naming the first argument that is not an integer >= 1 (or a list of
    them): a negative width would otherwise fail deep inside a layer, naming no argument."""
    for name, value in sizes.items():
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in values):
            allowed = (
                "a list of integers >= 1"
                if isinstance(value, (list, tuple))
                else ("an integer >= 1")
            )
            raise ValueError(f"{model}: {name}={value!r}; it must be {allowed}")


def _check_dropout(model: str, dropout) -> None:
    if not (isinstance(dropout, (int, float)) and 0 <= dropout < 1):
        raise ValueError(f"{model}: dropout={dropout!r}; it must be a number in [0, 1)")


class MLP(nn.Module):
    """A multi-layer perceptron: Linear + ReLU (+ Dropout) per hidden layer, then a Linear.

    x: (N, *) -> (N, out_features); the input is flattened after the batch dimension, so
    ``(N, 1, 28, 28)`` images work as they come. ``normalize=(mean, std)`` standardises the
    input first (for MNIST pixels in [0, 1]: ``(0.1307, 0.3081)``).
    """

    def __init__(
        self,
        in_features: int = 784,
        hidden: Sequence[int] = (256, 256),
        out_features: int = 10,
        dropout: float = 0.0,
        normalize: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        _check_sizes("MLP", in_features=in_features, hidden=hidden, out_features=out_features)
        _check_dropout("MLP", dropout)
        self.normalize = tuple(normalize) if normalize is not None else None
        layers: list[nn.Module] = [nn.Flatten()]
        width = in_features
        for size in hidden:
            layers += [nn.Linear(width, size), nn.ReLU()]
            if dropout > 0:
                layers.append(Dropout(dropout))
            width = size
        layers.append(nn.Linear(width, out_features))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: Tensor) -> Tensor:
        if self.normalize is not None:
            mean, std = self.normalize
            x = (x - mean) / std
        return self.layers(x)


class SmallCNN(nn.Module):
    """Two or more conv blocks (3x3 conv, ReLU, 2x2 max-pool), then a hidden Linear layer.

    x: (N, in_channels, H, W) -> (N, num_classes). With the defaults on 28 x 28 images:
    (N, 1, 28, 28) -> conv 32 -> (N, 32, 14, 14) -> conv 64 -> (N, 64, 7, 7) -> 128 -> 10.
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 10,
        channels: Sequence[int] = (32, 64),
        hidden: int = 128,
        image_size: int = 28,
        dropout: float = 0.0,
        normalize: Sequence[float] | None = None,
    ) -> None:
        super().__init__()
        _check_sizes("SmallCNN", in_channels=in_channels, num_classes=num_classes,
                     channels=channels, hidden=hidden, image_size=image_size)  # fmt: skip
        _check_dropout("SmallCNN", dropout)
        self.normalize = tuple(normalize) if normalize is not None else None
        blocks: list[nn.Module] = []
        width, size = in_channels, image_size
        for out_channels in channels:
            blocks += [Conv2d(width, out_channels, 3, padding=1), nn.ReLU(), MaxPool2d(2)]
            width, size = out_channels, size // 2
        self.features = nn.Sequential(*blocks)
        head: list[nn.Module] = [nn.Flatten(), nn.Linear(width * size * size, hidden), nn.ReLU()]
        if dropout > 0:
            head.append(Dropout(dropout))
        head.append(nn.Linear(hidden, num_classes))
        self.classifier = nn.Sequential(*head)

    def forward(self, x: Tensor) -> Tensor:
        if self.normalize is not None:
            mean, std = self.normalize
            x = (x - mean) / std
        return self.classifier(self.features(x))  # (N, C, H, W) -> (N, num_classes)
