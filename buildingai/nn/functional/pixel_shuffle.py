"""Pixel shuffle: trade channels for resolution and back (sub-pixel convolution), as a reshape,
a permutation and a reshape, so the gradient is the inverse rearrangement."""

from __future__ import annotations

import operator

from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError


def _factor(name: str, argument: str, factor) -> int:
    try:
        factor = operator.index(factor)
    except TypeError:
        factor = None
    if factor is None or factor <= 0:
        raise ArgumentError(
            f"[{name}] {argument} must be a positive integer, got {factor!r}",
            help=f"pass e.g. {argument}=2",
        )
    return factor


def _check_rank(name: str, x: Tensor) -> None:
    if x.ndim < 3:
        raise ShapeError(
            f"[{name}] expects an input (*, C, H, W) with at least 3 dimensions, got shape "
            f"{tuple(x.shape)}",
            help="add a channel dimension, e.g. x.unsqueeze(0)",
        )


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002 - PyTorch's name
    """Rearrange ``(*, C * r * r, H, W)`` into ``(*, C, H * r, W * r)`` with ``r =
    upscale_factor``: output ``[c, h * r + i, w * r + j]`` is input ``[c * r * r + i * r + j, h,
    w]``, as in PyTorch's ``pixel_shuffle``."""
    r = _factor("pixel_shuffle", "upscale_factor", upscale_factor)
    _check_rank("pixel_shuffle", input)
    *batch, channels, height, width = input.shape
    if channels % (r * r):
        raise ShapeError(
            f"[pixel_shuffle] the {channels} channels of input {tuple(input.shape)} (dimension "
            f"-3) are not divisible by upscale_factor ** 2 = {r * r}",
            help="give the layer before it out_channels = C * upscale_factor ** 2",
        )
    lead = len(batch)
    out_channels = channels // (r * r)
    x = input.reshape(*batch, out_channels, r, r, height, width)
    # (*, C, r_h, r_w, H, W) -> (*, C, H, r_h, W, r_w)
    order = tuple(range(lead)) + tuple(lead + axis for axis in (0, 3, 1, 4, 2))
    x = x.permute(order)
    return x.reshape(*batch, out_channels, height * r, width * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """The inverse of ``pixel_shuffle``: ``(*, C, H * r, W * r)`` -> ``(*, C * r * r, H, W)``
    with ``r = downscale_factor``."""
    r = _factor("pixel_unshuffle", "downscale_factor", downscale_factor)
    _check_rank("pixel_unshuffle", input)
    *batch, channels, height, width = input.shape
    if height % r or width % r:
        raise ShapeError(
            f"[pixel_unshuffle] the height {height} and width {width} of input "
            f"{tuple(input.shape)} must both be divisible by downscale_factor = {r}",
            help="crop or pad the input to a multiple of downscale_factor",
        )
    lead = len(batch)
    x = input.reshape(*batch, channels, height // r, r, width // r, r)
    # (*, C, H, r_h, W, r_w) -> (*, C, r_h, r_w, H, W)
    order = tuple(range(lead)) + tuple(lead + axis for axis in (0, 2, 4, 1, 3))
    x = x.permute(order)
    return x.reshape(*batch, channels * r * r, height // r, width // r)


__all__ = ["pixel_shuffle", "pixel_unshuffle"]
