"""Indexing: ``x[...]`` with ints, slices, None, Ellipsis, integer arrays and boolean masks."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..ops import index as ops


def _normalize_index(index) -> tuple:
    """A tuple index whose tensors are replaced by their backend arrays."""
    if not isinstance(index, tuple):
        index = (index,)
    parts = []
    for part in index:
        if isinstance(part, Tensor):
            part = part.data
        elif isinstance(part, list):
            import numpy as np

            part = np.asarray(part)
        parts.append(part)
    return tuple(parts)


def getitem(x, index):
    """``x[index]``, differentiable; the gradient adds back into the indexed positions."""
    return apply(ops.GETITEM, x, index=_normalize_index(index))


def zeros_index_add(values, shape, index):
    """A zero tensor of ``shape`` with ``values`` added at ``index`` (the adjoint of getitem)."""
    return apply(ops.ZEROS_INDEX_ADD, values, shape=tuple(shape), index=_normalize_index(index))


__all__ = ["getitem", "zeros_index_add"]

TENSOR_METHODS = {
    "__getitem__": getitem,
    "getitem": getitem,
    "zeros_index_add": zeros_index_add,
}
