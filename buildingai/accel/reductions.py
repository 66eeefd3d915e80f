"""Faster sums and means of ``ops/reduce.py``, registered against the records they speed up:
sums over leading axes as one matrix-vector product with ones (a bias gradient), sums over
trailing axes as rows through ``einsum`` (``kernels/row_reduce.py``), where NumPy reduces row by
row; a mean is that sum divided by the count, as NumPy's ``mean`` divides its own sum. The
cumulative sum along the last axis runs its rows on numba's threads (NumPy's accumulates each
row in one slow strided call).
"""

from __future__ import annotations

import numpy as np

from ..ops import reduce
from .kernels import compiled
from .kernels.row_reduce import cumsum_rows, sum_axes
from .registry import register


def _float_numpy(x) -> bool:
    return type(x) is np.ndarray and x.dtype.kind == "f" and x.dtype.itemsize >= 4


# Below this many elements a sum over leading axes is faster as NumPy's own reduction than as
# ``ones @ a``: the product's call costs more than it saves.
COLUMN_SUM_MIN = 1 << 17
# Below this many elements a sum is faster as the record's own NumPy call, and a mean as
# np.mean's own two steps: the kernel's rows cost more than they save.
LEAST_ELEMENTS = 1 << 13


def _worth_it(x, axes) -> bool:
    """Whether the kernel beats the record: sums over trailing axes always, over leading axes
    (the column sums of a bias gradient) from ``COLUMN_SUM_MIN`` elements."""
    if x.size >= COLUMN_SUM_MIN:
        return True
    count = len(axes)
    return not (0 < count < x.ndim and sorted(axes) == list(range(count)))


def _sum_fits(xp, x, *, axes, keepdims) -> bool:
    return bool(axes) and x.ndim > 0 and _float_numpy(x) and _worth_it(x, axes)


def _sum(ctx, xp, x, *, axes, keepdims):
    ctx.input_shape = x.shape
    out = sum_axes(np, x, axes)
    if keepdims:
        return out
    return out.reshape(tuple(extent for axis, extent in enumerate(x.shape) if axis not in axes))


def _mean_fits(xp, x, *, axes, keepdims) -> bool:
    if axes is None:  # every element: NumPy's own sum, without ``np.mean``'s Python steps
        return _float_numpy(x) and x.size > 0
    return (
        _sum_fits(xp, x, axes=axes, keepdims=keepdims) and reduce.reduced_count(x.shape, axes) > 0
    )


def _mean(ctx, xp, x, *, axes, keepdims):
    if axes is None:  # the sum and the divide ``np.mean`` makes: the same bits
        ctx.input_shape = x.shape
        total = np.add.reduce(x, axis=None, keepdims=keepdims)
        return total / x.dtype.type(x.size)
    if x.size < LEAST_ELEMENTS:  # np.mean's sum and divide, without its Python steps
        ctx.input_shape = x.shape
        total = np.add.reduce(x, axis=axes, keepdims=keepdims)
    else:
        total = _sum(ctx, xp, x, axes=axes, keepdims=keepdims)
    total /= x.dtype.type(reduce.reduced_count(x.shape, axes))
    return total


def _sum_to_fits(xp, x, *, shape) -> bool:
    if not _float_numpy(x):
        return False
    axes = reduce.sum_to_axes(x.shape, shape)
    return bool(axes) and _worth_it(x, axes)


def _sum_to(ctx, xp, x, *, shape):
    ctx.input_shape = x.shape
    return sum_axes(np, x, reduce.sum_to_axes(x.shape, shape)).reshape(shape)


def _cumsum_fits(xp, x, *, axis, exclusive, reverse) -> bool:
    return type(x) is np.ndarray and x.dtype == np.float32 and x.ndim > 0 and axis == x.ndim - 1


def _cumsum(ctx, xp, x, *, axis, exclusive, reverse):
    if not x.size:
        return NotImplemented
    rows = np.ascontiguousarray(x).reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, np.float32)
    flags = {"exclusive": bool(exclusive), "reverse": bool(reverse)}
    if compiled.run(cumsum_rows, [rows, out], flags):
        return out.reshape(x.shape)
    return NotImplemented


register(
    reduce.SUM,
    _sum_fits,
    _sum,
    name="sum.rows_and_columns",
    min_size=LEAST_ELEMENTS,
    description="leading axes as a product with ones, trailing ones as einsum rows",
)
register(
    reduce.SUM_TO,
    _sum_to_fits,
    _sum_to,
    name="sum_to.rows_and_columns",
    description="leading axes as a product with ones, trailing ones as einsum rows",
)
register(
    reduce.MEAN,
    _mean_fits,
    _mean,
    name="mean.rows_and_columns",
    description="the sum as sum.rows_and_columns takes it, divided by the count; the mean of "
    "every element as NumPy's sum and one divide",
)
register(
    reduce.CUMSUM,
    _cumsum_fits,
    _cumsum,
    name="cumsum.rows",
    requires=("numba",),
    description="float32 cumulative sums along the last axis, one row per thread's task",
)
