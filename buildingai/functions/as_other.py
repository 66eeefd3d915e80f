"""Methods that take a shape or dtype from another tensor, as PyTorch spells them:
``x.view_as(y)``, ``x.reshape_as(y)``, ``x.expand_as(y)``, ``x.type_as(y)``."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .creation import astype, to_device
from .shape import expand, reshape, view


def view_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.view(other.shape)``: a view of ``x`` with ``other``'s shape (same element count)."""
    return view(x, tuple(other.shape))


def reshape_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.reshape(other.shape)``: ``x`` with ``other``'s shape (same element count)."""
    return reshape(x, tuple(other.shape))


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """``x.expand(other.shape)``: ``x`` broadcast to ``other``'s shape."""
    return expand(x, tuple(other.shape))


def type_as(x: Tensor, other: Tensor) -> Tensor:
    """``x`` cast to ``other``'s dtype and moved to its device, as PyTorch's ``type_as``."""
    return to_device(astype(x, other.dtype), other.device)


__all__: list[str] = []  # methods only, as in PyTorch (torch.view_as does not exist)

TENSOR_METHODS = {
    "view_as": view_as,
    "reshape_as": reshape_as,
    "expand_as": expand_as,
    "type_as": type_as,
}
