"""Sums along the rows of a matrix, the reductions inside softmax and layer normalisation.

NumPy reduces the last axis of a (rows, n) array one row at a time, each row a separate call
of its inner loop: for rows of 64-128 values that per-row overhead is most of the cost.
``einsum`` walks the same rows with its own unrolled sum-of-products loops, and a product and
its sum in one pass, with no temporary (figures: docs/design_notes/performance.md).

einsum adds each row with a few running float32 sums rather than NumPy's pairwise blocks, so its
rounding grows with the row's length: ``row_sum`` and ``row_dot`` use it for rows up to
``LONGEST_ROW`` values, ``sum_axes`` adds blocks of ``ROW_BLOCK`` values and then their sums,
which round as NumPy's pairwise sums do, for up to ``LONGEST_SUM`` values. Longer rows, other
array types and other ranks keep ``sum``.

Sums down the columns (over the leading axes: bias gradients) are a BLAS matrix-vector product
with a vector of ones, ``column_sum``. ``cumsum_rows`` is the cumulative sum along each row.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ...backend.threads import blas_called
from . import compiled
from .compiled import compiled_twin

LONGEST_ROW = 4096
ROW_BLOCK = 256  # sum_axes adds its rows in blocks this long ...
LONGEST_SUM = ROW_BLOCK * ROW_BLOCK  # ... up to this many values, then NumPy's pairwise sum


def _summable(xp, x) -> bool:
    """NumPy float32/float64 arrays: einsum adds booleans with ``or``, and small floats and
    integers in their own narrow dtype, where ``sum`` widens."""
    return xp is np and x.dtype.kind == "f" and x.dtype.itemsize >= 4


def _einsum_fits(xp, *arrays) -> bool:
    first = arrays[0]
    return _summable(xp, first) and first.ndim == 2 and first.shape[1] <= LONGEST_ROW


def row_sum(xp, a):
    """a (rows, n) -> (rows, 1): the sum of each row."""
    if _einsum_fits(xp, a):
        return np.einsum("ij->i", a)[:, None]
    return a.sum(axis=-1, keepdims=True)


def sum_axes(xp, x, axes: tuple):
    """``x.sum(axis=axes, keepdims=True)``; when the summed axes end with x's last ones, those
    are summed first as rows (a convolution's bias gradient: N * C row sums of H * W, then a
    sum over N). When they are x's first ones (a linear layer's bias gradient), they are column
    sums."""
    count = len(axes)
    if 0 < count < x.ndim and sorted(axes) == list(range(count)) and x.flags.c_contiguous:
        rows = math.prod(x.shape[:count])
        columns = column_sum(xp, x.reshape((rows,) + x.shape[count:]))
        return columns.reshape((1,) * count + x.shape[count:])
    trailing = x.ndim
    while trailing > 0 and trailing - 1 in axes:
        trailing -= 1
    span = 1
    for extent in x.shape[trailing:]:
        span *= extent
    if not _summable(xp, x) or trailing == x.ndim or span > LONGEST_SUM or not x.flags.c_contiguous:
        return x.sum(axis=axes, keepdims=True)
    rows = _blocked_row_sums(x.reshape(-1, span)).reshape(x.shape[:trailing])
    rest = tuple(axis for axis in axes if axis < trailing)
    if rest:
        rows = rows.sum(axis=rest, keepdims=True)
    return rows.reshape(rows.shape + (1,) * (x.ndim - trailing))


def _blocked_row_sums(a):
    """a (rows, n) -> (rows,): each row summed by einsum in blocks of ``ROW_BLOCK`` values,
    then the blocks' sums: einsum's few running sums round like NumPy's pairwise ones over a
    block, not over a whole long row."""
    rows, n = a.shape
    if n <= ROW_BLOCK:
        return np.einsum("ij->i", a)
    whole = n - n % ROW_BLOCK
    blocks = a[:, :whole].reshape(rows, whole // ROW_BLOCK, ROW_BLOCK)
    sums = np.einsum("ij->i", np.einsum("ijk->ij", blocks))
    if whole < n:
        sums += np.einsum("ij->i", a[:, whole:])
    return sums


def row_dot(xp, a, b):
    """a, b (rows, n) -> (rows, 1): sum(a * b) of each row, without the product's temporary."""
    if _einsum_fits(xp, a) and a.shape == b.shape:
        return np.einsum("ij,ij->i", a, b)[:, None]
    return (a * b).sum(axis=-1, keepdims=True)


def column_sum(xp, a):
    """a (rows, *rest) -> rest: the sum over the first axis. NumPy float32/float64 arrays go
    through BLAS as ``ones @ a``, a matrix-vector product whose blocked, fused multiply-add
    sums are no less accurate than NumPy's row-by-row accumulation, and faster; float32 ones
    through the compiled twin where it is available (BLAS's threads, spinning after the sum,
    would take the cores of the element-wise work that follows)."""
    if not (_summable(xp, a) and a.flags.c_contiguous and a.ndim >= 2 and a.shape[0]):
        return a.sum(axis=0)
    flat = a.reshape(a.shape[0], math.prod(a.shape[1:]))
    out = np.empty(flat.shape[1], a.dtype)
    compiled.call(np, _column_sum_into, [flat, out])
    return out.reshape(a.shape[1:])


@compiled_twin("rows.cumsum_rows", params=("exclusive", "reverse"))
def cumsum_rows(xp, x, out, *, exclusive, reverse) -> None:
    """out (rows, n) = the cumulative sum of each row of x (rows, n), as the ``cumsum`` record
    computes it along its last axis (``exclusive`` leaves each element out, ``reverse`` sums
    from the end). The reference of its twin, which sums each row in the same order."""
    rows = xp.flip(x, 1) if reverse else x
    sums = xp.cumsum(rows, axis=1)
    if exclusive:  # each sum moved one place on, the first 0
        sums = xp.concatenate([xp.zeros_like(sums[:, :1]), sums[:, :-1]], axis=1)
    out[...] = xp.flip(sums, 1) if reverse else sums


# OpenBLAS runs a matrix-vector product of fewer elements on the calling thread (2304 x its
# GEMM_MULTITHREAD_THRESHOLD, 4): its threads stay asleep.
BLAS_THREADED_GEMV = 9216


@compiled_twin("rows.column_sum")
def _column_sum_into(xp, a, out) -> None:
    """out (n,) = the sum of a (rows, n) over its rows, as ``ones @ a`` on BLAS."""
    length = a.shape[0]
    ones = _ones(length, a.dtype.str) if length <= _CACHED_ONES else np.ones(length, a.dtype)
    np.matmul(ones, a, out=out)
    if a.size >= BLAS_THREADED_GEMV:
        blas_called()


@compiled_twin("rows.column_dot")
def column_dot_into(xp, a, b, out) -> None:
    """out (n,) = the sum of a * b (rows, n) over its rows, without the product's temporary."""
    np.einsum("ij,ij->j", a, b, out=out)


# Vectors of ones are kept for up to this many rows (256 KiB each in float32); longer ones are
# made per call, a pass over one row count against the product's rows times columns.
_CACHED_ONES = 1 << 16


@functools.lru_cache(maxsize=16)
def _ones(length: int, dtype: str):
    ones = np.ones(length, dtype)
    ones.flags.writeable = False
    return ones
