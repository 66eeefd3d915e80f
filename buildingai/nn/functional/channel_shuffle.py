"""``channel_shuffle``, ShuffleNet's interleaving of channel groups, with PyTorch's signature:
a reshape, a transpose and a reshape, so the gradient is the inverse rearrangement."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...errors import ShapeError

__all__ = ["channel_shuffle"]


def channel_shuffle(input: Tensor, groups: int) -> Tensor:  # noqa: A002 - PyTorch's name
    """(N, C, *) -> the same shape, channels (g, C / g) read as (C / g, g): output channel
    i * g + j is input channel j * (C / g) + i."""
    if input.ndim < 3 or groups < 1 or input.shape[1] % groups:
        raise ShapeError(
            f"[channel_shuffle] expects an input (N, C, *) of 3 or more dimensions whose C is "
            f"divisible by groups={groups}, got {tuple(input.shape)}",
            help="choose groups dividing the channel count",
        )
    n, c, *rest = input.shape
    grouped = input.reshape(n, groups, c // groups, *rest)
    return grouped.transpose(1, 2).reshape(n, c, *rest)
