"""A faster kernel of the resize records (``ops/resize.py``: ``interpolate`` and
``interpolate_grad``), registered beside them. The records apply each axis's sparse matrix as a
few weighted gathers; where an output row mixes many inputs (area pooling to a few pixels) this
kernel multiplies by the dense matrix instead, which BLAS runs faster. Inputs holding an inf or
NaN keep the gathers: the dense matrix's zero weights would spread NaN along the axis.
"""

from __future__ import annotations

import functools

import numpy as np

from ..backend.threads import blas_called
from ..ops import resize
from ..ops.promotion import as_float
from .registry import register


@functools.lru_cache(maxsize=256)
def _dense(key: tuple, transpose: bool):
    """The (rows, columns) matrix W (or W^T) of ``key`` where its rows are long, else None."""
    columns = resize.axis_map(key, transpose)[0]
    _, in_size, out_size = key[:3]
    n_columns = out_size if transpose else in_size
    if 8 * columns.shape[1] <= n_columns:
        return None
    matrix = resize.resize_matrix(*key)
    return np.ascontiguousarray(matrix.T if transpose else matrix)


def _keys(in_sizes, size, mode, align_corners, scales) -> list:
    attrs = {"size": size, "mode": mode, "align_corners": align_corners, "scales": scales}
    return resize.axis_keys(in_sizes, attrs)


def _along(xp, x, key: tuple, transpose: bool, axis: int):
    """W (or W^T) of ``key`` applied along ``axis`` of x: one product where rows are long."""
    dense = _dense(key, transpose)
    if dense is None or x.dtype.kind != "f" or not bool(xp.isfinite(x).all()):
        return resize.along(xp, x, resize.axis_map(key, transpose), axis)
    moved = xp.moveaxis(x, axis, -1)
    product = (moved @ xp.asarray(dense, dtype=x.dtype).T).astype(x.dtype, copy=False)
    blas_called()
    return xp.moveaxis(product, -1, axis)


def _interpolate_fits(xp, x, *, size, mode, align_corners, scales) -> bool:
    keys = _keys(tuple(x.shape[2:]), size, mode, align_corners, scales)
    return any(_dense(key, False) is not None for key in keys)


def _interpolate(ctx, xp, x, *, size, mode, align_corners, scales):
    if resize.output_dtype(x.dtype, mode) != x.dtype:
        x = as_float(x)
    ctx.input_size = input_size = tuple(x.shape[2:])
    for axis, key in enumerate(_keys(input_size, size, mode, align_corners, scales), start=2):
        x = _along(xp, x, key, False, axis)
    return xp.ascontiguousarray(x)


def _interpolate_grad_fits(xp, grad, *, input_size, size, mode, align_corners, scales) -> bool:
    keys = _keys(input_size, size, mode, align_corners, scales)
    return any(_dense(key, True) is not None for key in keys)


def _interpolate_grad(ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
    for axis, key in enumerate(_keys(input_size, size, mode, align_corners, scales), start=2):
        grad = _along(xp, grad, key, True, axis)
    return xp.ascontiguousarray(grad)


register(
    resize.INTERPOLATE,
    _interpolate_fits,
    _interpolate,
    name="interpolate.dense",
    description="long resize rows (area pooling) as one matrix product per axis",
)
register(
    resize.INTERPOLATE_GRAD,
    _interpolate_grad_fits,
    _interpolate_grad,
    name="interpolate_grad.dense",
    description="long resize rows (area pooling) as one matrix product per axis",
)
