"""Dropout layers: Dropout (single elements) and Dropout1d/2d/3d (whole channels).

They are active in training mode only (``model.train()``) and draw their masks from the default
generator, or from the ``generator`` given to the layer, so a seed reproduces a run.
"""

from __future__ import annotations

import numbers

from ..autograd.tensor import Tensor
from ..backend.random import Generator
from ..errors import ArgumentError, ShapeError
from ..functions.nn import dropout
from .functional.alpha_dropout import alpha_dropout, feature_alpha_dropout
from .functional.channel_dropout import dropout1d, dropout2d, dropout3d
from .module import Module

# `inplace=True` writes the result into the input and returns it, as in PyTorch.


class _DropoutNd(Module):
    def __init__(
        self, p: float = 0.5, inplace: bool = False, generator: Generator | None = None
    ) -> None:
        super().__init__()
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise ArgumentError(
                f"[{type(self).__name__}] p must be a probability in [0, 1], got {p!r}",
                help="p is the probability of dropping an element (0 keeps everything)",
            )
        self.p = float(p)
        self.inplace = inplace
        self.generator = generator

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` in training and scale the rest by
    ``1 / (1 - p)``; the identity in evaluation. x: any shape -> same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p, self.training, self.inplace, generator=self.generator)


class _ChannelDropout(_DropoutNd):
    """Zero whole channels: one draw per (sample, channel), shared by every position."""

    # input rank -> how many leading axes the mask keeps ((N, C) or (C,)); the rest are positions
    _mask_axes: dict[int, int] = {}
    _function = None  # the functional form: dropout1d / dropout2d / dropout3d
    _layout = ""

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        if x.ndim not in self._mask_axes:
            raise ShapeError(
                f"[{type(self).__name__}] expects input {self._layout}, got shape {tuple(x.shape)}",
                help="channel dropout zeroes whole feature maps; use Dropout for single elements",
            )
        return type(self)._function(x, self.p, True, self.inplace, generator=self.generator)


class Dropout1d(_ChannelDropout):
    """Channel dropout for (N, C, L) or (C, L) inputs: each channel is zeroed with
    probability ``p`` in training, the rest scaled by ``1 / (1 - p)``."""

    _mask_axes = {2: 1, 3: 2}
    _layout = "(N, C, L) or (C, L)"
    _function = staticmethod(dropout1d)


class Dropout2d(_ChannelDropout):
    """Channel dropout for (N, C, H, W) inputs: each feature map is zeroed with probability
    ``p`` in training, the rest scaled by ``1 / (1 - p)``. A 3-D input is read as (N, C, L),
    as PyTorch does."""

    _mask_axes = {3: 2, 4: 2}
    _layout = "(N, C, H, W) or (N, C, L)"
    _function = staticmethod(dropout2d)


class Dropout3d(_ChannelDropout):
    """Channel dropout for (N, C, D, H, W) or (C, D, H, W) inputs."""

    _mask_axes = {4: 1, 5: 2}
    _layout = "(N, C, D, H, W) or (C, D, H, W)"
    _function = staticmethod(dropout3d)


class AlphaDropout(_DropoutNd):
    """Alpha dropout for self-normalising (SELU) networks in training; the identity in
    evaluation (see ``nn.functional.alpha_dropout``)."""

    def forward(self, x: Tensor) -> Tensor:
        return alpha_dropout(x, self.p, self.training, self.inplace, generator=self.generator)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (see ``nn.functional.feature_alpha_dropout``)."""

    def forward(self, x: Tensor) -> Tensor:
        return feature_alpha_dropout(
            x, self.p, self.training, self.inplace, generator=self.generator
        )


__all__ = ["AlphaDropout", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout"]
