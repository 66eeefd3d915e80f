"""Reductions: ``buildingai.sum(x, axis=1)`` and ``x.sum(dim=1, keepdim=True)`` alike."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..ops import reduce as ops
from ._common import as_shape, normalize_axes, pick


def sum(x, axis=None, keepdims=None, *, dim=None, keepdim=None):  # noqa: A001 - NumPy's name
    """Sum over ``axis`` (an int, a tuple of ints, or None for all axes)."""
    axes = normalize_axes(pick("axis", axis, "dim", dim), x.ndim, "sum")
    keep = bool(pick("keepdims", keepdims, "keepdim", keepdim, False))
    return apply(ops.SUM, x, axes=axes, keepdims=keep)


def sum_to(x, *shape):
    """Sum a (broadcast) tensor down to ``shape``: the adjoint of ``expand``."""
    shape = as_shape(shape)
    if tuple(x.shape) == shape:
        return x
    return apply(ops.SUM_TO, x, shape=shape)


__all__ = ["sum", "sum_to"]

TENSOR_METHODS = {"sum": sum, "sum_to": sum_to}
