"""Max pooling on the flat image: window maxima with contiguous passes, and the gradient
scatter as one indexed assignment.

The records in ``ops/pool.py`` work one kernel offset at a time on strided (Ho, Wo)
views. For 2x2 windows of stride 2 every such view reads every other element, and NumPy runs a
strided inner loop per output row (12-14 values for the benchmark's images), so the passes cost
more than their bytes. When the windows lie inside the image (no padding, no ceil-mode
overhang) there are cheaper orders for the same results:

- The maximum: flatten the batch to one contiguous vector. Element (i, j) of the window
  starting at flat position p is ``p + i*dh*W + j*dw``, so the maximum over a window is
  separable: first over j for *every* position (kw - 1 passes over shifted contiguous
  slices), then over i (kh - 1 passes), then one strided gather at the window origins. NaN
  propagates as in the general path.
- The gradient of windows that do not overlap: each output gradient goes to one flat index,
  the window's origin plus the chosen offset, in one fancy-indexed assignment into zeros. The
  origins depend only on the geometry and are cached.

Finding the winners (the first maximum, which the gradient goes to) the same separable way
measured no faster than the general path's strided comparisons, so the general path keeps that.
Figures: docs/design_notes/performance.md.
"""

from __future__ import annotations

import functools

import numpy as np

from ...backend.device import strided_view
from ...ops.pool import window_choice
from .compiled import compiled_twin


def fits_flat(x_shape, out_hw, kernel, stride, padding, dilation) -> bool:
    """Whether every window lies inside the image: no padding, and the last window ends
    within it (ceil mode can make it overhang)."""
    if any(padding):
        return False
    return all(
        (out_hw[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) < x_shape[2 + a]
        for a in range(2)
    )


def _origins(xp, flat, x_shape, out_hw, stride):
    """The (N, C, Ho, Wo) view of ``flat`` (indexed like x (N, C, H, W) flattened) at each
    window's first element."""
    n, c, h, w = x_shape
    size = flat.itemsize
    shape = (n, c) + tuple(out_hw)
    strides = (c * h * w * size, h * w * size, stride[0] * w * size, stride[1] * size)
    return strided_view(xp, flat, shape, strides)


def _row_span(x_shape, kernel, dilation) -> int:
    """Flat distance from a window's first element to the first element of its last row."""
    return (kernel[0] - 1) * dilation[0] * x_shape[3]


# From 2^15 elements touched on both cores: pooling reads the output of the layer before it,
# which a split kernel left half in each core's cache (docs/design_notes/performance.md).
@compiled_twin("pooling.window_max", params=("size", "stride", "dilation"), parallel_from=1 << 15)
def window_max(xp, x, out, *, size, stride, dilation) -> None:
    """Max pooling of a contiguous x (N, C, H, W) whose windows fit (``fits_flat``) into out
    (N, C, Ho, Wo); ``size`` is the window's (kh, kw)."""
    kernel = size
    flat = x.reshape(-1)
    length = flat.size - (kernel[1] - 1) * dilation[1]
    best = flat[:length]
    for j in range(1, kernel[1]):
        shift = j * dilation[1]
        best = xp.maximum(best, flat[shift : shift + length])
    length -= _row_span(x.shape, kernel, dilation)
    rows = best
    best = rows[:length]
    for i in range(1, kernel[0]):
        shift = i * dilation[0] * x.shape[3]
        best = xp.maximum(best, rows[shift : shift + length])
    out[...] = _origins(xp, best, x.shape, out.shape[2:], stride)


@compiled_twin("pooling.window_first_max", params=("size", "stride", "dilation"))
def first_max_inside(xp, x, out, choice, *, size, stride, dilation) -> None:
    """``window_choice`` into ``choice`` for windows that lie inside the image (no padding)."""
    choice[...] = window_choice(xp, x, out, size, stride, (0, 0), dilation)


@compiled_twin("pooling.scatter_to_choice", params=("size", "stride", "dilation"))
def scatter_to_choice(xp, grad, choice, image, *, size, stride, dilation) -> None:
    """The gradient of max pooling for windows that fit and do not overlap: image (N, C, H, W)
    becomes zeros with each value of grad (N, C, Ho, Wo) at its window's chosen element."""
    n, c, h, w = image.shape
    kernel = size
    # The flat distance of each window offset i * kw + j from the window's first element.
    offset = xp.arange(kernel[0] * kernel[1])
    offset = offset // kernel[1] * (dilation[0] * w) + offset % kernel[1] * dilation[1]
    position = offset.take(choice)
    position += _window_origins(xp, tuple(image.shape), tuple(grad.shape[2:]), tuple(stride))
    flat = image.reshape(-1)
    flat[...] = 0
    flat[position.reshape(-1)] = grad.reshape(-1)


@functools.lru_cache(maxsize=8)
def _window_origins(xp, x_shape, out_hw, stride):
    """The flat index in x (N, C, H, W) of each window's first element, (N, C, Ho, Wo) int64,
    read-only. Cached per geometry: a training step pools the same shapes every time, and
    building it is a large part of the scatter."""
    n, c, h, w = x_shape
    ho, wo = out_hw
    origins = (
        (xp.arange(n * c) * (h * w)).reshape(n, c, 1, 1)
        + (xp.arange(ho) * (stride[0] * w)).reshape(ho, 1)
        + xp.arange(wo) * stride[1]
    )
    if isinstance(origins, np.ndarray):  # shared between calls: nobody may write to it
        origins.flags.writeable = False
    return origins
