"""Channel dropout: zero whole feature maps (one draw per sample and channel)."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...backend.random import Generator
from ...errors import ShapeError
from ...functions.nn import dropout, dropout_mask


def _channel_dropout(
    name: str, x: Tensor, p: float, training: bool, inplace: bool, generator, spatial_dims: int
) -> Tensor:
    """x: (N, C, *spatial) or (C, *spatial) with ``spatial_dims`` spatial axes."""
    if not training or p == 0.0:
        return x
    if x.ndim not in (spatial_dims + 1, spatial_dims + 2):
        layout = ", ".join(["N", "C"] + [f"D{i + 1}" for i in range(spatial_dims)])
        raise ShapeError(
            f"[{name}] expects input ({layout}) or without N, got shape {tuple(x.shape)}",
            help="channel dropout zeroes whole feature maps; use dropout for single elements",
        )
    kept = x.ndim - spatial_dims  # the (N, C) or (C,) axes: one draw each
    mask_shape = tuple(x.shape[:kept]) + (1,) * spatial_dims
    mask = dropout_mask(mask_shape, p, generator, x.device)
    return dropout(x, p, True, inplace, mask=mask)


def dropout1d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability ``p`` (PyTorch's
    signature; ``inplace=True`` writes into ``input``)."""
    return _channel_dropout("dropout1d", input, p, training, inplace, generator, 1)


def dropout2d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero whole channels of (N, C, H, W) inputs with probability ``p``. A 3-D input is read
    as (N, C, L), as PyTorch does."""
    if input.ndim == 3:
        return _channel_dropout("dropout2d", input, p, training, inplace, generator, 1)
    return _channel_dropout("dropout2d", input, p, training, inplace, generator, 2)


def dropout3d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    p: float = 0.5,
    training: bool = True,
    inplace: bool = False,
    *,
    generator: Generator | None = None,
) -> Tensor:
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability ``p``."""
    return _channel_dropout("dropout3d", input, p, training, inplace, generator, 3)


__all__ = ["dropout1d", "dropout2d", "dropout3d"]
