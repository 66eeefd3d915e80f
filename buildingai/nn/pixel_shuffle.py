"""PixelShuffle, PixelUnshuffle and ChannelShuffle: rearrangement layers (no parameters)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.channel_shuffle import channel_shuffle
from .functional.pixel_shuffle import pixel_shuffle, pixel_unshuffle
from .module import Module


class PixelShuffle(Module):
    """``(*, C * r * r, H, W)`` -> ``(*, C, H * r, W * r)`` with ``r = upscale_factor``: the
    upsampling step of an efficient sub-pixel convolution network."""

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H * r, W * r)`` -> ``(*, C * r * r, H, W)`` with ``r = downscale_factor``: the
    inverse of ``PixelShuffle``."""

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x: Tensor) -> Tensor:
        return pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """(N, C, *) -> the same shape, the ``groups`` channel groups interleaved (ShuffleNet)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, x: Tensor) -> Tensor:
        return channel_shuffle(x, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


__all__ = ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle"]
