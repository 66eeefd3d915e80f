"""Unfold and Fold: sliding windows as columns and columns summed back into an image (no
parameters); ``nn.functional.unfold`` and ``fold`` as layers, with PyTorch's arguments."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.fold import fold, unfold
from .module import Module


class Unfold(Module):
    """(N, C, H, W) -> (N, C * kh * kw, L): every sliding window of the image as a column."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )


class Fold(Module):
    """(N, C * kh * kw, L) -> (N, C, H, W), (H, W) = ``output_size``: each column added back at
    its window's pixels, the adjoint of ``Unfold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x: Tensor) -> Tensor:
        return fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
            f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}"
        )


__all__ = ["Fold", "Unfold"]
