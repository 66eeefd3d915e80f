"""Faster kernels of the resize records (``ops/resize.py``: ``interpolate`` and
``interpolate_grad``), registered beside them. The records apply each axis's sparse matrix as a
few weighted gathers. Where both axes of an image repeat each pixel a whole number of times
(nearest upsampling by 2), the repeat and its gradient's block sums run as one compiled pass
(``kernels/pixel_repeat.py``). Other float32 images resize through both axis maps in compiled
passes, rows across threads (``kernels/separable_resize.py``): height then width where the
height shrinks, width then height where it grows. Where those do not apply (float64, inputs of
other ranks, no numba) and an output row mixes many inputs (area pooling to a few pixels), a
kernel multiplies by the dense matrix instead, which BLAS runs faster than the gathers. Inputs
holding an inf or NaN keep the gathers: the dense matrix's zero weights would spread NaN along
the axis. An area resize to one pixel per map is a global average: the sum of each map as
rows, divided by its size.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ..backend.threads import blas_called
from ..ops import resize
from ..ops.promotion import as_float
from .kernels import compiled, pixel_repeat, separable_resize
from .kernels.row_reduce import sum_axes
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
    if key[0] == "area":  # sums: the record divides once by the bins' sizes afterwards
        matrix = (matrix > 0).astype(np.float64)
    return np.ascontiguousarray(matrix.T if transpose else matrix)


def _keys(in_sizes, size, mode, align_corners, scales) -> list:
    attrs = {"size": size, "mode": mode, "align_corners": align_corners, "scales": scales}
    return resize.axis_keys(in_sizes, attrs)


def _along(xp, x, key: tuple, transpose: bool, axis: int):
    """W (or W^T) of ``key`` applied along ``axis`` of x: one product where rows are long."""
    dense = _dense(key, transpose)
    if dense is None or x.dtype.kind != "f" or not bool(xp.isfinite(x).all()):
        plan = resize.axis_map(key, transpose)
        return resize.along(xp, x, resize.summing(plan) if key[0] == "area" else plan, axis)
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
    keys = _keys(input_size, size, mode, align_corners, scales)
    for axis, key in enumerate(keys, start=2):
        x = _along(xp, x, key, False, axis)
    if mode == "area":  # each bin's sum, divided once by its size, as the record does
        x = x / resize.area_sizes(xp, keys, x.dtype)
    return xp.ascontiguousarray(x)


def _interpolate_grad_fits(xp, grad, *, input_size, size, mode, align_corners, scales) -> bool:
    keys = _keys(input_size, size, mode, align_corners, scales)
    return any(_dense(key, True) is not None for key in keys)


def _interpolate_grad(ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
    keys = _keys(input_size, size, mode, align_corners, scales)
    if mode == "area":  # divided once by the bins' sizes, then spread, as the record does
        grad = grad / resize.area_sizes(xp, keys, grad.dtype)
    for axis, key in enumerate(keys, start=2):
        grad = _along(xp, grad, key, True, axis)
    return xp.ascontiguousarray(grad)


# ----- area resizes to one pixel: a global average -----------------------------------------------


def _one_pixel(size) -> bool:
    return all(extent == 1 for extent in size)


def _global_fits(xp, x, *, size, mode, align_corners, scales) -> bool:
    """Float NumPy inputs resized by area to one pixel per map."""
    return (
        mode == "area"
        and _one_pixel(size)
        and type(x) is np.ndarray
        and x.dtype.kind == "f"
        and x.size > 0
    )


def _global_mean(ctx, xp, x, *, size, mode, align_corners, scales):
    """Each map's sum as rows (``row_reduce.sum_axes``), divided by its size, as the record
    divides its bins' sums."""
    ctx.input_size = tuple(x.shape[2:])
    total = sum_axes(np, x, tuple(range(2, x.ndim)))
    total /= x.dtype.type(math.prod(x.shape[2:]))
    return total


def _global_grad_fits(xp, grad, *, input_size, size, mode, align_corners, scales) -> bool:
    return (
        mode == "area"
        and _one_pixel(size)
        and type(grad) is np.ndarray
        and grad.dtype.kind == "f"
        and math.prod(input_size) > 0
    )


def _global_spread(ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
    """Each map's gradient divided by the map's size, written to every pixel of it."""
    share = grad / grad.dtype.type(math.prod(input_size))
    return np.ascontiguousarray(np.broadcast_to(share, grad.shape[:2] + tuple(input_size)))


register(
    resize.INTERPOLATE,
    _global_fits,
    _global_mean,
    name="interpolate.global_mean",
    description="area resizes to one pixel: each map's sum as rows, divided by its size",
)
register(
    resize.INTERPOLATE_GRAD,
    _global_grad_fits,
    _global_spread,
    name="interpolate_grad.global_mean",
    description="area resizes to one pixel: each map's share of the gradient, broadcast",
)


# ----- nearest upsampling by whole factors ---------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _repeat_factor(key: tuple) -> int | None:
    """f where the axis of ``key`` maps output pixel i to input pixel i // f (its plan is one
    unit gather of that pattern), else None."""
    columns, _, unit, padded = resize.axis_map(key, False)
    _, in_size, out_size = key[:3]
    if not unit or padded or columns.shape[1] != 1 or in_size == 0 or out_size % in_size:
        return None
    factor = out_size // in_size
    pattern = np.repeat(np.arange(in_size), factor)
    return factor if np.array_equal(columns[:, 0], pattern) else None


def _factors(in_sizes, size, mode, align_corners, scales):
    """(fh, fw) of an image whose two axes both repeat pixels, else None."""
    if len(in_sizes) != 2 or mode not in ("nearest", "nearest-exact"):
        return None
    factors = [_repeat_factor(key) for key in _keys(in_sizes, size, mode, align_corners, scales)]
    return None if None in factors else tuple(factors)


def _repeat_fits(xp, x, *, size, mode, align_corners, scales) -> bool:
    return (
        type(x) is np.ndarray
        and x.dtype == np.float32
        and _factors(tuple(x.shape[2:]), size, mode, align_corners, scales) is not None
    )


def _repeat(ctx, xp, x, *, size, mode, align_corners, scales):
    """Each pixel written into its block in one pass; NotImplemented where the twin declines."""
    ctx.input_size = input_size = tuple(x.shape[2:])
    fh, fw = _factors(input_size, size, mode, align_corners, scales)
    x = np.ascontiguousarray(x)
    n, c, h, w = x.shape
    out = np.empty((n, c, h * fh, w * fw), np.float32)
    arrays = [x.reshape(n * c * h, w), out.reshape(n * c * h * fh, w * fw)]
    done = compiled.run(pixel_repeat.repeat_pixels, arrays, {"fh": fh, "fw": fw})
    return out if done else NotImplemented


def _blocks_fit(xp, grad, *, input_size, size, mode, align_corners, scales) -> bool:
    return (
        type(grad) is np.ndarray
        and grad.dtype == np.float32
        and _factors(tuple(input_size), size, mode, align_corners, scales) is not None
    )


def _block_sums(ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
    """Each block of the gradient summed onto its pixel in one pass."""
    fh, fw = _factors(tuple(input_size), size, mode, align_corners, scales)
    grad = np.ascontiguousarray(grad)
    n, c = grad.shape[:2]
    h, w = input_size
    out = np.empty((n, c, h, w), np.float32)
    arrays = [grad.reshape(n * c * h * fh, w * fw), out.reshape(n * c * h, w)]
    done = compiled.run(pixel_repeat.sum_pixel_blocks, arrays, {"fh": fh, "fw": fw})
    return out if done else NotImplemented


register(
    resize.INTERPOLATE,
    _repeat_fits,
    _repeat,
    name="interpolate.pixel_repeat",
    requires=("numba",),
    description="nearest upsampling by whole factors: each pixel written into its block",
)
register(
    resize.INTERPOLATE_GRAD,
    _blocks_fit,
    _block_sums,
    name="interpolate_grad.pixel_blocks",
    requires=("numba",),
    description="nearest upsampling by whole factors: each gradient block summed in one pass",
)


# ----- any 2-D map: both axes in one pass over each output row -------------------------------------


@functools.lru_cache(maxsize=256)
def _taps(key: tuple, transpose: bool) -> tuple:
    """(int32 columns, float32 weights) of the axis map, contiguous, as the compiled pass reads
    them (int32 indices: half the bytes of int64 in the pass's gather)."""
    columns, weights, _, _ = resize.axis_map(key, transpose)
    if key[0] == "area":  # sums: the kernel divides once by the bins' sizes (``_separable``)
        weights = (weights != 0).astype(np.float32)
    return np.ascontiguousarray(columns, np.int32), np.ascontiguousarray(weights, np.float32)


def _image_fits(x) -> bool:
    """A float32 NumPy image (N, C, h, w)."""
    return type(x) is np.ndarray and x.dtype == np.float32 and x.ndim == 4


def _separable_fits(xp, x, *, size, mode, align_corners, scales) -> bool:
    return _image_fits(x)


def _separable(xp, x, keys, transpose: bool, out_sizes):
    """Both axis maps of ``keys`` applied to x (N, C, h, w); NotImplemented where the twin
    declines. Each output pixel of a row is a scalar gather of its taps (LLVM emits no vector
    gathers here), so the width map goes where there are fewer rows to gather: after the
    height map where it removes rows, before it where it adds them."""
    n, c, h, w = x.shape
    out = np.empty((n, c, *out_sizes), np.float32)
    (columns_h, weights_h), (columns_w, weights_w) = (_taps(key, transpose) for key in keys)
    if columns_h.shape[1] == 0 or columns_w.shape[1] == 0:
        return NotImplemented  # an empty axis: the record's zeros
    area = keys[0][0] == "area"  # the taps sum; one division by the bins' sizes, as the record
    if area and transpose:
        x = x / resize.area_sizes(np, keys, np.float32)
    planes = np.ascontiguousarray(x).reshape(n * c, h, w)
    arrays = [planes, columns_h, weights_h, columns_w, weights_w, out.reshape(n * c, *out_sizes)]
    if out_sizes[0] <= h:
        kernel = separable_resize.resize_planes
    else:
        kernel = separable_resize.resize_planes_width_first
    if not compiled.run(kernel, arrays):
        return NotImplemented
    if area and not transpose:
        out /= resize.area_sizes(np, keys, np.float32)
    return out


def _interpolate_separable(ctx, xp, x, *, size, mode, align_corners, scales):
    ctx.input_size = input_size = tuple(x.shape[2:])
    keys = _keys(input_size, size, mode, align_corners, scales)
    return _separable(xp, x, keys, False, tuple(size))


def _separable_grad_fits(xp, grad, *, input_size, size, mode, align_corners, scales) -> bool:
    return _image_fits(grad)


def _interpolate_grad_separable(ctx, xp, grad, *, input_size, size, mode, align_corners, scales):
    keys = _keys(tuple(input_size), size, mode, align_corners, scales)
    return _separable(xp, grad, keys, True, tuple(input_size))


register(
    resize.INTERPOLATE,
    _separable_fits,
    _interpolate_separable,
    name="interpolate.separable",
    requires=("numba",),
    description="float32 images: both axis maps in compiled passes over rows, rows across "
    "threads, the width map on the side with fewer rows",
)
register(
    resize.INTERPOLATE_GRAD,
    _separable_grad_fits,
    _interpolate_grad_separable,
    name="interpolate_grad.separable",
    requires=("numba",),
    description="float32 gradients: both transposed axis maps in compiled passes over rows, "
    "rows across threads, the width map on the side with fewer rows",
)


# ----- long rows as dense products, where the compiled passes do not apply ------------------------
# Registered last: a float32 image takes the separable passes first where numba runs, which
# beat the products at every area resize measured (docs/design_notes/performance.md); the
# products serve float64, other ranks, and machines without numba.
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
