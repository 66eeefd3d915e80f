"""Faster kernels of the max-pooling records (``ops/pool.py``), registered beside them. The
records work one window offset at a time on strided views, for every geometry; these compute the
same values another way where it pays:

- ``*.twin_2x2`` (numba): 2x2 windows of stride 2 without padding or dilation, the common case,
  one pass over the arrays per (sample, channel) plane (``kernels/compiled/pooling.py``).
- ``max_pool2d.flat`` and ``max_pool2d_scatter.flat``: windows inside the image (no padding, no
  ceil-mode overhang): the maximum as contiguous passes over the flat batch, and the gradient of
  windows that do not overlap as one indexed assignment (``kernels/pool_flat.py``).
- ``*.twin_windows`` (numba): the three records for any geometry (padding, dilation,
  overlapping windows, ceil mode), each window scanned once per (sample, channel) plane
  (``kernels/compiled/pool_windows.py``).
- ``max_pool2d_scatter.offsets``: any geometry, the record's loop over offsets, with plain
  assignments where windows do not overlap and, for finite NumPy floats, a product with the mask
  in place of ``where`` (NumPy's ``where`` over an irregular mask is much slower).
"""

from __future__ import annotations

import numpy as np

from ..ops import pool
from .kernels import compiled
from .kernels.pool_flat import first_max_inside, fits_flat, scatter_to_choice, window_max
from .kernels.pool_windows import padded_first_max, padded_scatter, padded_window_max
from .registry import register

NUMBA = ("numba",)


def _out_hw(x, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    return tuple(
        pool.pool_output_size(
            x.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode
        )
        for a in range(2)
    )


def _is_2x2(kernel, stride, padding, dilation) -> bool:
    return (
        tuple(kernel) == tuple(stride) == (2, 2) and tuple(dilation) == (1, 1) and not any(padding)
    )


def _disjoint(kernel, stride, dilation) -> bool:
    """Whether every image position belongs to at most one window."""
    return all(stride[a] >= dilation[a] * (kernel[a] - 1) + 1 for a in range(2))


def _twin_geometry(kernel, stride, dilation) -> dict:
    return {"size": tuple(kernel), "stride": tuple(stride), "dilation": tuple(dilation)}


def _any_geometry(padding, dilation) -> dict:
    return {"padding": tuple(padding), "dilation": tuple(dilation)}


# ----- max_pool2d ---------------------------------------------------------------------------------


def _flat_max_fits(xp, x, *, kernel, stride, padding, dilation, ceil_mode) -> bool:
    out_hw = _out_hw(x, kernel, stride, padding, dilation, ceil_mode)
    return fits_flat(x.shape, out_hw, kernel, stride, padding, dilation)


def _twin_max_fits(xp, x, *, kernel, stride, padding, dilation, ceil_mode) -> bool:
    """2x2 windows of stride 2, all inside the image (``fits_flat``): ceil mode on an odd size
    would add a window overhanging its edge."""
    return (
        xp is np
        and _is_2x2(kernel, stride, padding, dilation)
        and (not ceil_mode or (x.shape[2] % 2 == 0 and x.shape[3] % 2 == 0))
    )


def _twin_max(ctx, xp, x, *, kernel, stride, padding, dilation, ceil_mode):
    x = np.ascontiguousarray(x)
    height, width = x.shape[2:]  # windows inside the image: each axis halved, rounded down
    out = np.empty(x.shape[:2] + (height // 2, width // 2), x.dtype)
    if compiled.run(window_max, [x, out], _twin_geometry(kernel, stride, dilation)):
        return out
    return NotImplemented


def _flat_max(ctx, xp, x, *, kernel, stride, padding, dilation, ceil_mode):
    x = xp.ascontiguousarray(x)
    out_hw = _out_hw(x, kernel, stride, padding, dilation, ceil_mode)
    out = xp.empty(x.shape[:2] + out_hw, dtype=x.dtype)
    window_max(xp, x, out, **_twin_geometry(kernel, stride, dilation))
    return out


def _windows_max(ctx, xp, x, *, kernel, stride, padding, dilation, ceil_mode):
    """Max pooling by the twin that scans each window once: any geometry, float32."""
    out = np.empty(x.shape[:2] + _out_hw(x, kernel, stride, padding, dilation, ceil_mode), x.dtype)
    geometry = {"size": tuple(kernel), "stride": tuple(stride), **_any_geometry(padding, dilation)}
    if compiled.run(padded_window_max, [x, out], geometry):
        return out
    return NotImplemented


# ----- max_pool2d_choice --------------------------------------------------------------------------


def _twin_choice_fits(xp, x, out, *, kernel, stride, padding, dilation) -> bool:
    return (
        xp is np
        and _is_2x2(kernel, stride, padding, dilation)
        and fits_flat(x.shape, out.shape[2:], kernel, stride, padding, dilation)
    )


def _twin_choice(ctx, xp, x, out, *, kernel, stride, padding, dilation):
    choice = np.empty(out.shape, dtype=pool.choice_dtype(np, kernel))
    geometry = _twin_geometry(kernel, stride, dilation)
    if compiled.run(first_max_inside, [x, out, choice], geometry):
        return choice
    return NotImplemented


def _windows_choice(ctx, xp, x, out, *, kernel, stride, padding, dilation):
    """``window_choice`` by the twin that scans each window once: any geometry, float32."""
    choice = np.empty(out.shape, dtype=pool.choice_dtype(np, kernel))
    geometry = {"size": tuple(kernel), "stride": tuple(stride), **_any_geometry(padding, dilation)}
    if compiled.run(padded_first_max, [x, out, choice], geometry):
        return choice
    return NotImplemented


# ----- max_pool2d_scatter -------------------------------------------------------------------------


def _flat_scatter_fits(xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    image_shape = tuple(grad.shape[:2]) + tuple(input_size)
    return _disjoint(kernel, stride, dilation) and fits_flat(
        image_shape, grad.shape[2:], kernel, stride, padding, dilation
    )


def _twin_scatter_fits(xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    return (
        xp is np
        and _is_2x2(kernel, stride, padding, dilation)
        and _flat_scatter_fits(
            xp,
            grad,
            choice,
            input_size=input_size,
            kernel=kernel,
            stride=stride,
            padding=padding,
            dilation=dilation,
        )
    )


def _twin_scatter(ctx, xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    image = np.empty(tuple(grad.shape[:2]) + tuple(input_size), dtype=grad.dtype)
    geometry = _twin_geometry(kernel, stride, dilation)
    if compiled.run(scatter_to_choice, [grad, choice, image], geometry):
        return image
    return NotImplemented


def _flat_scatter(ctx, xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    image = xp.empty(tuple(grad.shape[:2]) + tuple(input_size), dtype=grad.dtype)
    scatter_to_choice(xp, grad, choice, image, **_twin_geometry(kernel, stride, dilation))
    return image


def _is_numpy(xp, *arrays, **attrs) -> bool:
    return xp is np


def _windows_scatter(ctx, xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    """The gradient scatter by the twin that walks the windows once: any geometry, float32."""
    image = np.empty(tuple(grad.shape[:2]) + tuple(input_size), dtype=grad.dtype)
    geometry = {"size": tuple(kernel), "stride": tuple(stride), **_any_geometry(padding, dilation)}
    if compiled.run(padded_scatter, [grad, choice, image], geometry):
        return image
    return NotImplemented


def _offsets_scatter(ctx, xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
    out_hw = grad.shape[2:]
    geometry = pool.padded_size(input_size, out_hw, kernel, stride, padding, dilation)
    padded = np.zeros(grad.shape[:2] + geometry, dtype=grad.dtype)
    disjoint = _disjoint(kernel, stride, dilation)
    # A product with the mask equals where() unless an inf or NaN sits where the mask is off.
    finite = grad.dtype.kind == "f" and bool(np.isfinite(grad).all())
    for index, _, _, rows, cols in pool.window_offsets(kernel, stride, dilation, out_hw):
        mask = choice == index
        picked = grad * mask if finite else np.where(mask, grad, 0)
        if disjoint:  # every position belongs to at most one window: no add needed
            padded[:, :, rows, cols] = picked
        else:
            padded[:, :, rows, cols] += picked
    ph, pw = padding
    return padded[:, :, ph : ph + input_size[0], pw : pw + input_size[1]]


# ----- registrations, in the order they are tried -------------------------------------------------

register(
    pool.MAX_POOL2D,
    _twin_max_fits,
    _twin_max,
    name="max_pool2d.twin_2x2",
    requires=NUMBA,
    description="2x2 stride-2 max pooling in one pass",
)
register(
    pool.MAX_POOL2D,
    _is_numpy,
    _windows_max,
    name="max_pool2d.twin_windows",
    requires=NUMBA,
    description="window maxima of any geometry, each window scanned once",
)
register(
    pool.MAX_POOL2D,
    _flat_max_fits,
    _flat_max,
    name="max_pool2d.flat",
    description="window maxima as contiguous passes over the flat batch",
)
register(
    pool.MAX_POOL2D_CHOICE,
    _twin_choice_fits,
    _twin_choice,
    name="max_pool2d_choice.twin_2x2",
    requires=NUMBA,
    description="2x2 stride-2 first maxima in one pass",
)
register(
    pool.MAX_POOL2D_CHOICE,
    _is_numpy,
    _windows_choice,
    name="max_pool2d_choice.twin_windows",
    requires=NUMBA,
    description="first maxima of any window geometry, each window scanned once",
)
register(
    pool.MAX_POOL2D_SCATTER,
    _twin_scatter_fits,
    _twin_scatter,
    name="max_pool2d_scatter.twin_2x2",
    requires=NUMBA,
    description="2x2 stride-2 gradient scatter in one pass",
)
register(
    pool.MAX_POOL2D_SCATTER,
    _is_numpy,
    _windows_scatter,
    name="max_pool2d_scatter.twin_windows",
    requires=NUMBA,
    description="gradient scatter of any window geometry, each window visited once",
)
register(
    pool.MAX_POOL2D_SCATTER,
    _flat_scatter_fits,
    _flat_scatter,
    name="max_pool2d_scatter.flat",
    description="gradient of non-overlapping windows as one indexed assignment",
)
register(
    pool.MAX_POOL2D_SCATTER,
    _is_numpy,
    _offsets_scatter,
    name="max_pool2d_scatter.offsets",
    description="gradient scatter with assignments and mask products",
)
