"""Three-dimensional pooling layers, as PyTorch's: MaxPool3d, AvgPool3d, AdaptiveAvgPool3d,
AdaptiveMaxPool3d and MaxUnpool3d, on volumes (N, C, D, H, W) or unbatched (C, D, H, W).

Constructor arguments, defaults and reprs are PyTorch's (``stride`` defaults to
``kernel_size``). The layers hold no parameters; the math lives in ``functional/pool3d.py``.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional import pool3d as F
from .pool import _AdaptiveMaxPool, _AdaptivePool, _AvgPoolNd, _MaxPoolNd, _MaxUnpoolNd

__all__ = ["MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d", "MaxUnpool3d"]


class MaxPool3d(_MaxPoolNd):
    """Maximum over each window of a volume: (N, C, D, H, W) -> (N, C, Do, Ho, Wo); with
    ``return_indices`` also the flat positions of the maxima; see ``functional.max_pool3d``."""

    def forward(self, x: Tensor):
        return F.max_pool3d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip


class AvgPool3d(_AvgPoolNd):
    """Mean over each window of a volume: (N, C, D, H, W) -> (N, C, Do, Ho, Wo); see
    ``functional.avg_pool3d``."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
        divisor_override: int | None = None,
    ) -> None:
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool3d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


class AdaptiveAvgPool3d(_AdaptivePool):
    """Mean over windows tiling the volume into ``output_size`` (None keeps a size):
    (N, C, D, H, W) -> (N, C, od, oh, ow)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(_AdaptiveMaxPool):
    """Maximum over windows tiling the volume into ``output_size`` (None keeps a size):
    (N, C, D, H, W) -> (N, C, od, oh, ow), with ``return_indices`` also their positions."""

    def forward(self, x: Tensor):
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)


class MaxUnpool3d(_MaxUnpoolNd):
    """Max pooling's partial inverse: (N, C, D, H, W) values and their indices ->
    (N, C, Do, Ho, Wo), zeros elsewhere; see ``functional.max_unpool3d``."""

    _spatial = 3

    def forward(self, x: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return F.max_unpool3d(x, indices, self.kernel_size, self.stride, self.padding, output_size)
