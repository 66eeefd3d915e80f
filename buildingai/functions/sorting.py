"""Sorting and selection, PyTorch's spellings: ``sort``, ``argsort``, ``topk``, ``kthvalue``.

Each computes the positions with one primitive (``sort_indices``: a stable sort, so equal
elements keep their input order and NaN counts as the largest value) and picks the values with
``gather_elements``, whose gradient flows back to the chosen elements.
"""

from __future__ import annotations

from numbers import Integral

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from ..ops import sort as ops
from ._common import check_scalar_axis, normalize_axis
from .reduce import ValuesIndices


def _axis(x: Tensor, dim, op: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, Integral):
        raise ShapeError(f"[{op}] works along one dimension, got dim={dim!r}", help="pass one int")
    if x.ndim == 0:
        check_scalar_axis(int(dim), op)
        return 0
    return normalize_axis(int(dim), x.ndim, op)


def _count(k, extent: int, op: str, axis: int, shape: tuple, low: int) -> int:
    if isinstance(k, bool) or not isinstance(k, Integral) or not low <= k <= extent:
        raise ShapeError(
            f"[{op}] k={k!r} is out of range for dimension {axis} of size {extent} of a tensor "
            f"shaped {shape}",
            help=f"pick k in [{low}, {extent}]",
        )
    return int(k)


def _select(x: Tensor, axis: int, k: int | None, descending: bool) -> ValuesIndices:
    """Values and indices of the first ``k`` elements along ``axis`` in sorted order."""
    if x.ndim == 0:  # PyTorch: a 0-d tensor sorts as itself, at index 0
        picked = _select(x.reshape(1), 0, k, descending)
        return ValuesIndices(picked.values.reshape(()), picked.indices.reshape(()))
    indices = apply(ops.SORT_INDICES, x, axis=axis, k=k, descending=bool(descending))
    return ValuesIndices(apply(ops.GATHER_ELEMENTS, x, indices, axis=axis), indices)


def sort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False):
    """``(values, indices)`` of ``x`` sorted along ``dim``, ascending unless ``descending``.

    x: (..., n, ...) -> two tensors of the same shape; indices are int64. The sort is always
    stable (``stable`` is accepted for PyTorch's signature). NaN sorts as the largest value.
    The gradient goes back to each value's original position.
    """
    return _select(x, _axis(x, dim, "sort"), None, descending)


def argsort(x: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    """The int64 positions that sort ``x`` along ``dim`` (``sort(...).indices``)."""
    axis = _axis(x, dim, "argsort")
    if x.ndim == 0:
        return sort(x).indices
    return apply(ops.SORT_INDICES, x, axis=axis, k=None, descending=bool(descending))


def topk(x: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):  # noqa: A002
    """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) elements along
    ``dim``, as ``torch.topk``.

    x: (..., n, ...) -> (..., k, ...). The result is always in sorted order (PyTorch leaves the
    order unspecified for ``sorted=False``); ties keep their input order.
    """
    axis = _axis(x, dim, "topk")
    extent = x.shape[axis] if x.ndim else 1
    k = _count(k, extent, "topk", axis, tuple(x.shape), low=0)
    return _select(x, axis, k, largest)


def kthvalue(x: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> ValuesIndices:
    """``(values, indices)`` of the ``k``-th smallest element along ``dim`` (k from 1), as
    ``torch.kthvalue``. x: (..., n, ...) -> (..., ...) (size 1 kept with ``keepdim``)."""
    axis = _axis(x, dim, "kthvalue")
    if x.ndim == 0:
        _count(k, 1, "kthvalue", 0, (), low=1)
        return sort(x)
    k = _count(k, x.shape[axis], "kthvalue", axis, tuple(x.shape), low=1)
    indices = apply(ops.SORT_INDICES, x, axis=axis, k=k, descending=False)
    indices = indices.narrow(axis, k - 1, 1)
    values = apply(ops.GATHER_ELEMENTS, x, indices, axis=axis)
    if not keepdim:
        values, indices = values.squeeze(axis), indices.squeeze(axis)
    return ValuesIndices(values, indices)


__all__ = ["sort", "argsort", "topk", "kthvalue"]

TENSOR_METHODS = {"sort": sort, "argsort": argsort, "topk": topk, "kthvalue": kthvalue}
