"""LPPool1d, LPPool2d and LPPool3d: power-average pooling layers (no parameters), with
PyTorch's arguments (see ``nn.functional.lp_pool1d`` / ``lp_pool2d`` / ``lp_pool3d``)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.lp_pool import lp_pool1d, lp_pool2d, lp_pool3d
from .module import Module


class _LPPool(Module):
    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def extra_repr(self) -> str:
        return (
            f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"ceil_mode={self.ceil_mode}"
        )


class LPPool1d(_LPPool):
    """(N, C, L) -> (N, C, Lo): the p-norm of each window, p = ``norm_type``."""

    def forward(self, x: Tensor) -> Tensor:
        return lp_pool1d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool2d(_LPPool):
    """(N, C, H, W) -> (N, C, Ho, Wo): the p-norm of each window, p = ``norm_type``."""

    def forward(self, x: Tensor) -> Tensor:
        return lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(_LPPool):
    """(N, C, D, H, W) -> (N, C, Do, Ho, Wo): the p-norm of each window, p = ``norm_type``."""

    def forward(self, x: Tensor) -> Tensor:
        return lp_pool3d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


__all__ = ["LPPool1d", "LPPool2d", "LPPool3d"]
