"""Searching by value, as PyTorch spells it: ``unique``, ``unique_consecutive``, ``nonzero``,
``argwhere`` (both from ``positions.py``), ``isin``, ``searchsorted``, ``bucketize``,
``masked_select`` and ``nan_to_num``.

Positions and sets found from the values are computed with the array library (NumPy or CuPy):
they depend on the data (most of them in their shape), so they carry no gradient and a frozen
graph refuses them. ``masked_select`` and ``nan_to_num`` return input values through recorded
ops and are differentiable.
"""

from __future__ import annotations

import math
from numbers import Number

import numpy as np

from ..autograd.tensor import Tensor
from ..backend.device import array_namespace
from ..errors import ArgumentError, DTypeError, IndexingError, ShapeError
from ._common import dimensioned_axis
from .dtype_info import finfo
from .elementwise import clone, isnan
from .index import getitem, masked_fill
from .positions import argwhere, computed_from, nonzero

_INT64 = np.dtype(np.int64)


def _array(value, op: str, name: str):
    """The backend array of a tensor, or of a number / list (an array on the host)."""
    if isinstance(value, Tensor):
        return value.array
    if isinstance(value, (Number, list, tuple, np.ndarray)):
        return np.asarray(value)
    raise TypeError(f"[{op}] {name} must be a tensor or a number, got {type(value).__name__}")


# ----- unique ---------------------------------------------------------------------------------


def _rows_along(array, axis: int | None, op: str):
    """The elements to compare, one per row (N, K): every element of the flattened array for
    axis None, else the slices along ``axis``, each flattened."""
    if axis is None:
        return array.reshape(-1, 1), None
    xp = array_namespace(array)
    moved = xp.moveaxis(array, axis, 0)
    rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    if rows.shape[1] == 0 and rows.shape[0] > 0:
        raise ShapeError(
            f"[{op}] the slices along dim {axis} of a tensor shaped {tuple(array.shape)} are "
            "empty, so there is nothing to compare",
            help="pick a dim whose slices hold elements, or use dim=None",
        )
    return rows, moved.shape[1:]


def _distinct(array, axis: int | None, consecutive: bool, op: str):
    """``(values, inverse, counts)``: the distinct rows of ``array`` along ``axis`` (sorted, or
    each run of consecutive equal rows for ``consecutive``), where each row went (int64), and
    how many rows each holds (int64). NaN never equals itself, so each NaN stays apart, as in
    PyTorch."""
    xp = array_namespace(array)
    rows, slice_shape = _rows_along(array, axis, op)
    count = rows.shape[0]
    if consecutive:
        order = xp.arange(count)
    else:  # lexicographic, stable: the first key is the row's first element
        order = xp.lexsort(rows.T[::-1])
    ordered = rows[order]
    starts = xp.ones(count, dtype=bool)  # where a run of equal rows begins
    if count > 1:
        starts[1:] = xp.any(ordered[1:] != ordered[:-1], axis=1)
    run = xp.cumsum(starts) - 1  # the run of each ordered row
    inverse = xp.empty(count, dtype=_INT64)
    inverse[order] = run
    firsts = xp.nonzero(starts)[0]
    counts = xp.diff(xp.concatenate([firsts, xp.asarray([count])])).astype(_INT64)
    if axis is None:
        return ordered[firsts].reshape(-1), inverse.reshape(array.shape), counts
    values = ordered[firsts].reshape((len(firsts),) + tuple(slice_shape))
    return xp.moveaxis(values, 0, axis), inverse, counts


def _found(input: Tensor, found: tuple, return_inverse: bool, return_counts: bool):
    values, inverse, counts = found
    results = [computed_from(values, input.array)]
    if return_inverse:
        results.append(computed_from(inverse, input.array))
    if return_counts:
        results.append(computed_from(counts, input.array))
    return results[0] if len(results) == 1 else tuple(results)


def unique(
    input: Tensor,  # noqa: A002 - PyTorch's name
    sorted: bool = True,  # noqa: A002 - PyTorch's name
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """The distinct elements of ``input`` (dim None: of the flattened tensor, shape (U,)) or its
    distinct slices along ``dim`` (shape with U slices along dim), in ascending order.

    ``return_inverse`` adds where each element (shaped like ``input``) or slice (shape (n,))
    went, ``return_counts`` how many each output holds (U,); both int64. The result is always
    sorted, as PyTorch's (``sorted`` is accepted for its signature). No gradient.
    """
    axis = None if dim is None else dimensioned_axis(int(dim), input.ndim, "unique")
    found = _distinct(input.array, axis, consecutive=False, op="unique")
    return _found(input, found, return_inverse, return_counts)


def unique_consecutive(
    input: Tensor,  # noqa: A002 - PyTorch's name
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """The first element (or slice along ``dim``) of every run of consecutive equal ones, as
    ``torch.unique_consecutive``: ``[1, 1, 2, 2, 3, 1, 1, 2]`` -> ``[1, 2, 3, 1, 2]``.

    Shapes and the optional int64 ``inverse`` / ``counts`` are those of ``unique``. No gradient.
    """
    axis = None if dim is None else dimensioned_axis(int(dim), input.ndim, "unique_consecutive")
    found = _distinct(input.array, axis, consecutive=True, op="unique_consecutive")
    return _found(input, found, return_inverse, return_counts)


# ----- positions ------------------------------------------------------------------------------


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each of ``elements`` occurs in ``test_elements`` (bool, shaped like
    ``elements``; with ``invert`` whether it does not). Either may be a number, not both; the
    two are compared in their common dtype, and NaN matches nothing. ``assume_unique`` promises
    that each holds distinct values (as in NumPy), which may be faster. No gradient.
    """
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise ArgumentError(
            "[isin] elements and test_elements may not both be numbers",
            help="make one of them a tensor",
        )
    searched = _array(elements, "isin", "elements")
    tested = _array(test_elements, "isin", "test_elements")
    if searched.dtype.kind == "b" or tested.dtype.kind == "b":
        raise DTypeError(
            f"[isin] does not take bool tensors (got {searched.dtype} and {tested.dtype})",
            help="compare integers instead, e.g. x.long()",
        )
    xp = array_namespace(searched if isinstance(elements, Tensor) else tested)
    common = np.result_type(searched.dtype, tested.dtype)
    found = xp.isin(
        xp.asarray(searched, dtype=common),
        xp.asarray(tested, dtype=common),
        assume_unique=assume_unique,
        invert=invert,
    )
    return computed_from(xp.asarray(found), searched, tested)


# ----- searchsorted -----------------------------------------------------------------------------


def _check_sorter(sorter, sequence) -> object:
    array = _array(sorter, "searchsorted", "sorter")
    if array.dtype.kind not in "iu":
        raise DTypeError(
            f"[searchsorted] sorter must hold integers, got dtype {array.dtype}",
            help="pass the indices argsort returns (int64)",
        )
    if tuple(array.shape) != tuple(sequence.shape):
        raise ShapeError(
            f"[searchsorted] sorter shaped {tuple(array.shape)} must have the shape of "
            f"sorted_sequence {tuple(sequence.shape)}",
            help="pass sorted_sequence.argsort(dim=-1)",
        )
    extent = sequence.shape[-1]
    if array.size and (int(array.min()) < 0 or int(array.max()) >= extent):
        raise IndexingError(
            f"[searchsorted] sorter holds positions outside 0..{extent - 1} (from "
            f"{int(array.min())} to {int(array.max())})",
            help="pass the indices argsort returns along the last dimension",
        )
    return array


def _bound(rows, targets, right: bool):
    """PyTorch's binary search of each target (R, K) in its row (R, n): the first position
    whose value is ``>=`` the target (``right``: ``>``). Its very comparisons matter where NaN
    takes part: none holds with NaN, so a NaN target lands at n."""
    xp = array_namespace(rows)
    extent = rows.shape[1]
    start = xp.zeros(targets.shape, dtype=_INT64)
    end = xp.full(targets.shape, extent, dtype=_INT64)
    for _ in range(extent.bit_length()):  # each step at least halves every [start, end)
        middle = (start + end) // 2
        probe = xp.take_along_axis(rows, xp.minimum(middle, extent - 1), axis=1)
        stop_left = probe > targets if right else probe >= targets
        open_range = start < end
        start = xp.where(open_range & ~stop_left, middle + 1, start)
        end = xp.where(open_range & stop_left, middle, end)
    return start


def searchsorted(
    sorted_sequence: Tensor,
    input,  # noqa: A002 - PyTorch's name
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter=None,
) -> Tensor:
    """Where each value of ``input`` would go in ``sorted_sequence`` to keep it sorted: the
    first position i with ``sequence[i-1] < value <= sequence[i]`` (``right=True`` or
    ``side='right'``: ``sequence[i-1] <= value < sequence[i]``).

    sorted_sequence: (n,) for every value, or (..., n) with ``input`` (..., k) sharing the
    leading dimensions; ``input`` may be a number (-> 0-d). ``sorter`` (int64, shaped like the
    sequence) gives the order of an unsorted sequence. Returns int64 (``out_int32``: int32)
    shaped like ``input``. No gradient.
    """
    if side not in (None, "left", "right"):
        raise ArgumentError(f"[searchsorted] side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise ArgumentError(
            "[searchsorted] side='left' and right=True ask for opposite sides",
            help="pass only one of them (side is preferred)",
        )
    right = bool(right) or side == "right"
    sequence = sorted_sequence.array
    values = _array(input, "searchsorted", "input")
    if sequence.ndim == 0:
        raise ShapeError(
            "[searchsorted] sorted_sequence must have at least 1 dimension, got a 0-d tensor",
            help="reshape it: sorted_sequence.reshape(1)",
        )
    extent = sequence.shape[-1]
    if sequence.ndim == 1:
        rows = sequence.reshape(1, extent)
        targets = values.reshape(1, values.size)
    elif values.ndim != sequence.ndim or tuple(values.shape[:-1]) != tuple(sequence.shape[:-1]):
        raise ShapeError(
            f"[searchsorted] a sorted_sequence shaped {tuple(sequence.shape)} needs input "
            f"shaped {tuple(sequence.shape[:-1])} + (k,), got {tuple(values.shape)}",
            help="the leading dimensions must match, or pass a 1-D sorted_sequence",
        )
    else:
        rows = sequence.reshape(-1, extent)
        targets = values.reshape(rows.shape[0], values.shape[-1])
    if sorter is not None:
        order = _check_sorter(sorter, sequence).reshape(rows.shape)
        rows = array_namespace(rows).take_along_axis(rows, order.astype(_INT64), axis=1)
    xp = array_namespace(rows)
    common = np.result_type(rows.dtype, targets.dtype)
    found = _bound(xp.asarray(rows, dtype=common), xp.asarray(targets, dtype=common), right)
    found = found.reshape(values.shape).astype(np.int32 if out_int32 else _INT64)
    return computed_from(found, sequence, values)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False):  # noqa: A002
    """The bucket of each value of ``input`` between 1-D ``boundaries``: i with
    ``boundaries[i-1] < value <= boundaries[i]`` (``right=True``: ``boundaries[i-1] <= value <
    boundaries[i]``), which is ``searchsorted(boundaries, input, right=right)``.

    input: (...) or a number -> int64 (``out_int32``: int32) of the same shape. No gradient.
    """
    if boundaries.ndim != 1:
        raise ShapeError(
            f"[bucketize] boundaries must be 1-D, got shape {tuple(boundaries.shape)}",
            help="use searchsorted for a batch of sorted sequences",
        )
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# ----- selecting and replacing values -----------------------------------------------------------


def masked_select(input: Tensor, mask) -> Tensor:  # noqa: A002 - PyTorch's name
    """The elements of ``input`` where the boolean ``mask`` is True, in C order: a new 1-D
    tensor (z,). ``input`` and ``mask`` are broadcast together first. The gradient goes back to
    the selected positions (summed over broadcast copies)."""
    if not isinstance(mask, Tensor):
        mask = Tensor(np.asarray(mask))
    if mask.dtype.kind != "b":
        raise DTypeError(
            f"[masked_select] the mask must be boolean, got dtype {mask.dtype}",
            help="build it with a comparison (x > 0) or convert it with .bool()",
        )
    try:
        shape = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    except ValueError:
        raise ShapeError(
            f"[masked_select] mask of shape {tuple(mask.shape)} cannot be broadcast with input "
            f"of shape {tuple(input.shape)}",
            help="each dimension must match or be 1; unsqueeze the mask to align it",
        ) from None
    if tuple(input.shape) != shape:
        input = input.expand(shape)  # noqa: A001
    if tuple(mask.shape) != shape:
        mask = mask.expand(shape)  # a recorded op, so a mask made from traced values stays one
    return getitem(input, mask)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf=None, neginf=None) -> Tensor:  # noqa: A002
    """``input`` with NaN replaced by ``nan``, +inf by ``posinf`` and -inf by ``neginf``; by
    default the largest and the lowest finite value of its dtype. Integer and bool tensors come
    back as a copy. Same shape; the gradient is 0 at the replaced elements, as PyTorch's."""
    if input.dtype.kind != "f":
        return clone(input)
    limits = finfo(input.dtype)
    posinf = limits.max if posinf is None else posinf
    neginf = limits.min if neginf is None else neginf
    # a replacement beyond the dtype's range becomes inf, as PyTorch's cast makes it
    with np.errstate(over="ignore"):
        out = masked_fill(input, isnan(input), nan)
        out = masked_fill(out, input == math.inf, posinf)
        return masked_fill(out, input == -math.inf, neginf)


__all__ = ["unique", "unique_consecutive", "nonzero", "argwhere", "isin", "searchsorted",
           "bucketize", "masked_select", "nan_to_num"]  # fmt: skip

TENSOR_METHODS = {
    "unique": unique, "unique_consecutive": unique_consecutive, "nonzero": nonzero,
    "argwhere": argwhere, "masked_select": masked_select, "nan_to_num": nan_to_num,
}  # fmt: skip
