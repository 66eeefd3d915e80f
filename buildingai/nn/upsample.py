"""Upsampling modules: thin wrappers over ``nn.functional.interpolate`` with PyTorch's names
and arguments."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.interpolate import interpolate
from .module import Module


class Upsample(Module):
    """Resample (N, C, *spatial) to ``size`` or by ``scale_factor`` with ``mode`` (see
    ``nn.functional.interpolate`` for the modes and ``align_corners``)."""

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        if isinstance(scale_factor, (tuple, list)):  # stored as floats, as PyTorch does
            scale_factor = tuple(float(factor) for factor in scale_factor)
        elif scale_factor is not None:
            scale_factor = float(scale_factor)
        self.size, self.scale_factor, self.mode = size, scale_factor, mode
        self.align_corners, self.recompute_scale_factor = align_corners, recompute_scale_factor

    def forward(self, x: Tensor) -> Tensor:
        return interpolate(
            x,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            described = f"scale_factor={self.scale_factor!r}"
        else:
            described = f"size={self.size!r}"
        return f"{described}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample(size, scale_factor, mode="nearest")`` for (N, C, H, W) inputs."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample(size, scale_factor, mode="bilinear", align_corners=True)``, as in PyTorch."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


__all__ = ["Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d"]
