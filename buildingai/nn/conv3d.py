"""Three-dimensional convolution layers, as PyTorch's: ``Conv3d`` and ``ConvTranspose3d``.

Arguments, parameters, initialisation and repr come from the shared bases in ``nn/conv.py``;
``weight`` is (out_channels, in_channels/groups, kd, kh, kw) for a convolution and
(in_channels, out_channels/groups, kd, kh, kw) for a transposed one. The math lives in
``nn.functional``.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .conv import _ConvNd, _ConvTransposeNd
from .functional.conv3d import conv3d, conv_transpose3d

__all__ = ["Conv3d", "ConvTranspose3d"]


class Conv3d(_ConvNd):
    """3-D convolution layer: (N, C_in, D, H, W) or (C_in, D, H, W) -> (N, C_out, Do, Ho, Wo)
    (or (C_out, Do, Ho, Wo)), see ``functional.conv3d``.

    ``padding`` may be an int, a triple, ``"same"`` or ``"valid"``; ``padding_mode`` is
    ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``; ``groups=in_channels`` makes a
    depthwise convolution.
    """

    _spatial = 3

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        dtype=None,
        device=None,
    ) -> None:
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, dtype=dtype, device=device,
        )  # fmt: skip

    def forward(self, x: Tensor) -> Tensor:
        if self.padding_mode != "zeros":
            x = self._explicit_padding(x)
            return conv3d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return conv3d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution layer: (N, C_in, D, H, W) or (C_in, D, H, W) ->
    (N, C_out, Do, Ho, Wo) (or (C_out, Do, Ho, Wo)) with
    Do = (D - 1)*s - 2*p + d*(k - 1) + output_padding + 1 (likewise Ho, Wo); see
    ``functional.conv_transpose3d``. ``forward(x, output_size=...)`` picks the output_padding
    that gives ``output_size``."""

    _spatial = 3

    def forward(self, x: Tensor, output_size=None) -> Tensor:
        return conv_transpose3d(
            x, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(x, output_size), self.groups, self.dilation,
        )  # fmt: skip
