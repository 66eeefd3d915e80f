"""Pooling layers: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool1d/2d, AdaptiveMaxPool1d/2d.

Constructor arguments and defaults are PyTorch's (``stride`` defaults to ``kernel_size``). The
layers hold no parameters; the math lives in ``nn.functional``.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional import pool as F
from .functional.unpool import max_unpool1d, max_unpool2d
from .module import Module


class _MaxPoolNd(Module):
    """The settings of MaxPool1d and MaxPool2d (``stride`` defaults to ``kernel_size``)."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        dilation=1,
        return_indices: bool = False,
        ceil_mode: bool = False,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
            f"dilation={self.dilation}, ceil_mode={self.ceil_mode}"
        )


class MaxPool2d(_MaxPoolNd):
    """Maximum over each window: (N, C, H, W) -> (N, C, Ho, Wo); see ``functional.max_pool2d``."""

    def forward(self, x: Tensor):
        return F.max_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip


class MaxPool1d(_MaxPoolNd):
    """Maximum over each window: (N, C, L) -> (N, C, Lo); see ``functional.max_pool1d``."""

    def forward(self, x: Tensor):
        return F.max_pool1d(
            x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
            self.return_indices,
        )  # fmt: skip


class _MaxUnpoolNd(Module):
    """The settings of MaxUnpool1d and MaxUnpool2d (``stride`` defaults to ``kernel_size``)."""

    _spatial = 2  # the dimensions each size covers (tuples of this length, as PyTorch keeps)

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        self.kernel_size = self._sizes(kernel_size)
        self.stride = self.kernel_size if stride is None else self._sizes(stride)
        self.padding = self._sizes(padding)

    def _sizes(self, value) -> tuple:
        return (value,) * self._spatial if isinstance(value, int) else tuple(value)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool2d(_MaxUnpoolNd):
    """Max pooling's partial inverse: (N, C, H, W) values and their indices -> (N, C, Ho, Wo),
    zeros elsewhere; see ``functional.max_unpool2d``."""

    def forward(self, x: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd):
    """Max pooling's partial inverse: (N, C, L) values and their indices -> (N, C, Lo)."""

    _spatial = 1

    def forward(self, x: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return max_unpool1d(x, indices, self.kernel_size, self.stride, self.padding, output_size)


class _AvgPoolNd(Module):
    """The settings of AvgPool1d and AvgPool2d (``stride`` defaults to ``kernel_size``)."""

    def __init__(
        self,
        kernel_size,
        stride=None,
        padding=0,
        ceil_mode: bool = False,
        count_include_pad: bool = True,
    ) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """Mean over each window: (N, C, H, W) -> (N, C, Ho, Wo); see ``functional.avg_pool2d``."""

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
        return F.avg_pool2d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode,
            self.count_include_pad, self.divisor_override,
        )  # fmt: skip


class AvgPool1d(_AvgPoolNd):
    """Mean over each window: (N, C, L) -> (N, C, Lo); see ``functional.avg_pool1d``."""

    def forward(self, x: Tensor) -> Tensor:
        return F.avg_pool1d(
            x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad
        )


class _AdaptivePool(Module):
    def __init__(self, output_size) -> None:
        super().__init__()
        self.output_size = output_size

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(_AdaptivePool):
    """Mean over windows tiling the input into ``output_size``: (N, C, H, W) -> (N, C, oh, ow)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveAvgPool1d(_AdaptivePool):
    """Mean over windows tiling the input into ``output_size``: (N, C, L) -> (N, C, o)."""

    def forward(self, x: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(x, self.output_size)


class _AdaptiveMaxPool(_AdaptivePool):
    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__(output_size)
        self.return_indices = return_indices


class AdaptiveMaxPool2d(_AdaptiveMaxPool):
    """Maximum over windows tiling the input into ``output_size``: (N, C, H, W) -> (N, C, oh, ow)."""

    def forward(self, x: Tensor):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(_AdaptiveMaxPool):
    """Maximum over windows tiling the input into ``output_size``: (N, C, L) -> (N, C, o)."""

    def forward(self, x: Tensor):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)
