"""Padding layers with PyTorch's names and arguments: Zero/Constant/Reflection/Replication/
Circular padding of the last 1, 2 or 3 dimensions, thin wrappers over ``F.pad``.

``padding`` is an int (the same on every side) or a tuple ``(left, right, top, bottom, front,
back)`` with 2, 4 or 6 entries, starting from the last dimension, and is stored as that tuple.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..autograd.tensor import Tensor
from ..errors import ShapeError
from .functional.padding import pad
from .module import Module


def _sides(padding, count: int) -> tuple:
    """PyTorch's ``_ntuple``: an iterable is taken as it is, a number repeated ``count`` times."""
    if isinstance(padding, Iterable):
        return tuple(padding)
    return (padding,) * count


class _PadNd(Module):
    """Pad the last ``_dims`` dimensions of the input with ``_mode``."""

    _dims = 1
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _sides(padding, 2 * self._dims)

    def _check_rank(self, x: Tensor) -> None:
        """The copying modes take an input with or without its batch dimension, as in PyTorch."""
        ranks = (self._dims + 1, self._dims + 2)
        if x.ndim not in ranks:
            spatial = ("L",) if self._dims == 1 else ("D", "H", "W")[3 - self._dims :]
            layout = ", ".join(("N", "C") + spatial)
            raise ShapeError(
                f"[{type(self).__name__}] expects a {ranks[0]}D or {ranks[1]}D input ({layout}) "
                f"or without N, got shape {tuple(x.shape)}",
                help=f"it pads the last {self._dims} dimension(s); use F.pad(x, pad, "
                f"{self._mode!r}) to pad any dimensions",
            )

    def forward(self, x: Tensor) -> Tensor:
        self._check_rank(x)
        return pad(x, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    """Pad with a constant ``value``; any input rank, as in PyTorch."""

    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, x: Tensor) -> Tensor:
        return pad(x, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dimension with ``value``: (*, W) -> (*, W + left + right)."""

    _dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last two dimensions with ``value``: (*, H, W) -> (*, H + top + bottom,
    W + left + right)."""

    _dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last three dimensions with ``value``: (*, D, H, W) -> (*, D + front + back,
    H + top + bottom, W + left + right)."""

    _dims = 3


class _ZeroPadNd:
    """Constant padding whose value is always zero: built from ``padding`` alone, and shown
    by it alone. Mixed in before a ConstantPadNd."""

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd, ConstantPad1d):
    """Pad the last dimension with zeros: (*, W) -> (*, W + left + right)."""


class ZeroPad2d(_ZeroPadNd, ConstantPad2d):
    """Pad the last two dimensions with zeros: (*, H, W) -> (*, H + top + bottom,
    W + left + right)."""


class ZeroPad3d(_ZeroPadNd, ConstantPad3d):
    """Pad the last three dimensions with zeros."""


class ReflectionPad1d(_PadNd):
    """Mirror the input at its edges, without repeating the edge: (N, C, W) or (C, W) ->
    W + left + right. Each width must be smaller than W."""

    _dims, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Mirror the input at its edges, without repeating the edge: (N, C, H, W) or (C, H, W)
    -> (H + top + bottom, W + left + right). Each width must be smaller than its dimension."""

    _dims, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Mirror the last three dimensions of (N, C, D, H, W) or (C, D, H, W) at their edges."""

    _dims, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values: (N, C, W) or (C, W) -> W + left + right."""

    _dims, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Repeat the edge values: (N, C, H, W) or (C, H, W) -> (H + top + bottom,
    W + left + right)."""

    _dims, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last three dimensions of (N, C, D, H, W) or (C, D, H, W)."""

    _dims, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap around: the left padding copies the right end and the reverse. (N, C, W) or (C, W)
    -> W + left + right."""

    _dims, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wrap the last two dimensions of (N, C, H, W) or (C, H, W) around."""

    _dims, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wrap the last three dimensions of (N, C, D, H, W) or (C, D, H, W) around."""

    _dims, _mode = 3, "circular"


__all__ = [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]
