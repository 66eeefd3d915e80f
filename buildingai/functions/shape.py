"""Shape functions: reshape, expand, permute and friends."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..ops import shape as ops
from ._common import as_shape, normalize_axis


def reshape(x, *shape):
    """The same elements in a new shape (a view when possible); one dimension may be -1."""
    shape = as_shape(shape)
    if tuple(x.shape) == shape:
        return x
    return apply(ops.RESHAPE, x, shape=shape)


def expand(x, *shape):
    """Broadcast to ``shape`` without copying; -1 keeps a dimension."""
    shape = as_shape(shape)
    lead = len(shape) - x.ndim
    shape = tuple(
        x.shape[axis - lead] if extent == -1 else extent for axis, extent in enumerate(shape)
    )
    if tuple(x.shape) == shape:
        return x
    return apply(ops.EXPAND, x, shape=shape)


def permute(x, *axes):
    """Reorder dimensions: ``x.permute(0, 2, 1)``."""
    axes = tuple(normalize_axis(a, x.ndim, "permute") for a in as_shape(axes))
    if axes == tuple(range(x.ndim)):
        return x
    return apply(ops.PERMUTE, x, axes=axes)


def transpose(x, *axes):
    """With no axes, reverse the dimensions (NumPy); with two axes, swap them (PyTorch)."""
    if not axes:
        return permute(x, tuple(reversed(range(x.ndim))))
    if len(axes) == 2 and all(isinstance(a, int) for a in axes):
        return swapaxes(x, *axes)
    return permute(x, *axes)


def swapaxes(x, axis1: int, axis2: int):
    """Exchange two dimensions."""
    order = list(range(x.ndim))
    first = normalize_axis(axis1, x.ndim, "swapaxes")
    second = normalize_axis(axis2, x.ndim, "swapaxes")
    order[first], order[second] = order[second], order[first]
    return permute(x, tuple(order))


broadcast_to = expand
view = reshape
swapdims = swapaxes

__all__ = ["reshape", "view", "expand", "broadcast_to", "permute", "transpose", "swapaxes",
           "swapdims"]  # fmt: skip

TENSOR_METHODS = {
    "reshape": reshape, "view": reshape, "expand": expand, "broadcast_to": expand,
    "permute": permute, "transpose": transpose, "swapaxes": swapaxes, "swapdims": swapaxes,
    "T": property(lambda x: permute(x, tuple(reversed(range(x.ndim))))),
    "mT": property(lambda x: swapaxes(x, -1, -2)),
}  # fmt: skip
