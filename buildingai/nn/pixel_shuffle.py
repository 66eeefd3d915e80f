"""PixelShuffle and PixelUnshuffle: sub-pixel rearrangement layers (no parameters)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
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


__all__ = ["PixelShuffle", "PixelUnshuffle"]
