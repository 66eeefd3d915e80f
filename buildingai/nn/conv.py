"""Convolution layers: Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d.

Parameter names, layouts and initialisation are PyTorch's: ``weight`` is
(out_channels, in_channels/groups, *kernel) for a convolution and
(in_channels, out_channels/groups, *kernel) for a transposed one; both start
kaiming_uniform_(a=sqrt(5)) and the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)). The math lives in
``nn.functional``.
"""

from __future__ import annotations

from ..autograd.tensor import Tensor
from ..functions.shape import pad as _pad
from ._utils import empty_parameter, init_like_linear_
from .functional import conv as F
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _tuple(value, count: int, name: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * count
    values = tuple(value)
    if len(values) != count or not all(isinstance(v, int) for v in values):
        raise ValueError(f"{name} must be an int or a tuple of {count} ints, got {value!r}")
    return values


class _ConvNd(Module):
    """What every convolution layer shares: arguments, parameters, initialisation, repr."""

    _spatial = 2
    _transposed = False

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
        output_padding=0,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        count = self._spatial
        if groups < 1:
            raise ValueError(f"[{name}] groups must be a positive integer, got {groups}")
        if in_channels % groups:
            raise ValueError(
                f"[{name}] in_channels={in_channels} must be divisible by groups={groups}"
            )
        if out_channels % groups:
            raise ValueError(
                f"[{name}] out_channels={out_channels} must be divisible by groups={groups}"
            )
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"[{name}] padding_mode must be one of {_PADDING_MODES}, got {padding_mode!r}"
            )
        if self._transposed and padding_mode != "zeros":
            raise ValueError(f"[{name}] only padding_mode='zeros' is supported")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, count, "kernel_size")
        self.stride = _tuple(stride, count, "stride")
        self.dilation = _tuple(dilation, count, "dilation")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(
                    f"[{name}] padding must be an int, a tuple, 'same' or 'valid', got {padding!r}"
                )
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError(
                    f"[{name}] padding='same' is not supported for strided convolutions "
                    f"(stride={self.stride})"
                )
            self.padding = padding
        else:
            self.padding = _tuple(padding, count, "padding")
        self.output_padding = _tuple(output_padding, count, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = empty_parameter(shape, dtype, device)
        if bias:
            self.bias = empty_parameter((out_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the initial weights again (from the default generator), as PyTorch does."""
        init_like_linear_(self.weight, self.bias)

    def _explicit_padding(self, x: Tensor) -> Tensor:
        """For padding_mode other than 'zeros': pad ``x`` itself (the op then pads nothing)."""
        if self.padding == "valid":
            return x
        if self.padding == "same":
            pairs = []
            for k, d in zip(self.kernel_size, self.dilation):
                total = d * (k - 1)
                pairs.append((total // 2, total - total // 2))
        else:
            pairs = [(p, p) for p in self.padding]
        flat = []
        for before, after in reversed(pairs):  # PyTorch's order: last dimension first
            flat += [before, after]
        return _pad(x, tuple(flat), mode=self.padding_mode)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"
        text += f", stride={self.stride}"
        zeros = (0,) * self._spatial
        if self.padding != zeros:
            text += f", padding={self.padding}"
        if self.dilation != (1,) * self._spatial:
            text += f", dilation={self.dilation}"
        if self.output_padding != zeros:
            text += f", output_padding={self.output_padding}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text


class Conv2d(_ConvNd):
    """2-D convolution layer: (N, C_in, H, W) -> (N, C_out, Ho, Wo), see ``functional.conv2d``.

    ``padding`` may be an int, a pair, ``"same"`` or ``"valid"``; ``padding_mode`` is
    ``"zeros"``, ``"reflect"``, ``"replicate"`` or ``"circular"``; ``groups=in_channels`` makes a
    depthwise convolution.
    """

    _spatial = 2

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
            return F.conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return F.conv2d(
            x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups
        )


class Conv1d(_ConvNd):
    """1-D convolution layer: (N, C_in, L) -> (N, C_out, Lo), see ``functional.conv1d``."""

    _spatial = 1

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
        stride, dilation = self.stride[0], self.dilation[0]
        if self.padding_mode != "zeros":
            x = self._explicit_padding(x)
            return F.conv1d(x, self.weight, self.bias, stride, 0, dilation, self.groups)
        padding = self.padding if isinstance(self.padding, str) else self.padding[0]
        return F.conv1d(x, self.weight, self.bias, stride, padding, dilation, self.groups)


class _ConvTransposeNd(_ConvNd):
    """What every transposed convolution layer shares: PyTorch's argument order (output_padding
    after padding), and the output_padding that gives a requested output size."""

    _transposed = True

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        groups: int = 1,
        bias: bool = True,
        dilation=1,
        padding_mode: str = "zeros",
        dtype=None,
        device=None,
    ) -> None:
        if isinstance(padding, str):
            raise ValueError(f"[{type(self).__name__}] padding must be an int or a tuple")
        super().__init__(
            in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
            padding_mode, output_padding, dtype=dtype, device=device,
        )  # fmt: skip

    def _output_padding(self, x: Tensor, output_size) -> tuple[int, ...]:
        """The output_padding that makes the output ``output_size`` (the trailing sizes)."""
        if output_size is None:
            return self.output_padding
        count = self._spatial
        wanted = tuple(output_size)[-count:]
        extras = []
        for axis in range(count):
            smallest = (
                (x.shape[x.ndim - count + axis] - 1) * self.stride[axis]
                - 2 * self.padding[axis]
                + self.dilation[axis] * (self.kernel_size[axis] - 1)
                + 1
            )
            extra = wanted[axis] - smallest
            if not 0 <= extra < max(self.stride[axis], self.dilation[axis]):
                raise ValueError(
                    f"[{type(self).__name__}] requested output size {wanted} is not reachable "
                    f"from input {tuple(x.shape)}: sizes along axis {axis} lie in "
                    f"[{smallest}, {smallest + max(self.stride[axis], self.dilation[axis]) - 1}]"
                )
            extras.append(extra)
        return tuple(extras)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution layer: (N, C_in, H, W) -> (N, C_out, Ho, Wo) with
    Ho = (H - 1)*s - 2*p + d*(k - 1) + output_padding + 1; see ``functional.conv_transpose2d``.
    ``forward(x, output_size=...)`` picks the output_padding that gives ``output_size``."""

    _spatial = 2

    def forward(self, x: Tensor, output_size=None) -> Tensor:
        return F.conv_transpose2d(
            x, self.weight, self.bias, self.stride, self.padding,
            self._output_padding(x, output_size), self.groups, self.dilation,
        )  # fmt: skip


class ConvTranspose1d(ConvTranspose2d):
    """1-D transposed convolution layer: (N, C_in, L) -> (N, C_out, Lo); see
    ``functional.conv_transpose1d``."""

    _spatial = 1

    def forward(self, x: Tensor, output_size=None) -> Tensor:
        return F.conv_transpose1d(
            x, self.weight, self.bias, self.stride[0], self.padding[0],
            self._output_padding(x, output_size)[0], self.groups, self.dilation[0],
        )  # fmt: skip
