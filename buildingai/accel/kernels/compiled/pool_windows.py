"""Compiled twins of max pooling and its gradient for any window geometry
(``kernels/pool_windows.py`` has their NumPy references): one (sample, channel) plane per task
on numba's threads, the plane laid out in phase planes (``phase_planes.py``) so that each
window offset is one contiguous loop over the output grid, a select per value that vectorises.
x and the image are float32 (N, C, H, W), out and grad (N, C, Ho, Wo), choice int8 or int32 of
that shape; the geometry is (kh, kw), (sh, sw), (ph, pw), (dh, dw)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from . import phase_planes

_ZERO = np.float32(0.0)
_LOWEST = np.float32(-np.inf)

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def padded_window_max(x, out, size, stride, padding, dilation):
    """out[n, c, i, j] = the maximum of window (i, j), the padding -inf; NaN where one is NaN.
    Offsets in order, each a select: NaN, once there, stays; a larger value replaces."""
    n, c, height, width = x.shape
    ho, wo = out.shape[2], out.shape[3]
    kh, kw = size
    hq, wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    image, pooled = x.reshape(-1), out.reshape(-1)
    for plane in prange(n * c):
        planes = np.full(stride[0] * stride[1] * phase, _LOWEST)
        phase_planes.split(
            image, plane * height * width, height, width, planes, stride, padding, wq, phase
        )
        best = np.full(length, _LOWEST)
        for a in range(kh):
            for b in range(kw):
                at = phase_planes.tap(a, b, stride, dilation, wq, phase)
                for q in range(length):
                    value, kept = planes[at + uint64(q)], best[uint64(q)]
                    best[uint64(q)] = kept if (kept != kept) | (value <= kept) else value
        for i in range(ho):
            row, line = uint64((plane * ho + i) * wo), uint64(i * wq)
            for j in range(wo):
                pooled[row + uint64(j)] = best[line + uint64(j)]


@kernel
def padded_first_max(x, out, choice, size, stride, padding, dilation):
    """choice[n, c, i, j] = the first offset a * kw + b (in that order) whose element of the
    image equals the window's maximum out[n, c, i, j], or is NaN; 0 where none does. Offsets
    from the last to the first, each a select; a window whose maximum is -inf (where the
    padding, -inf here, would tie) is scanned again skipping the padding."""
    n, c, height, width = x.shape
    ho, wo = out.shape[2], out.shape[3]
    kh, kw = size
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    hq, wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    image, pooled, chosen = x.reshape(-1), out.reshape(-1), choice.reshape(-1)
    for plane in prange(n * c):
        planes = np.full(stride[0] * stride[1] * phase, _LOWEST)
        phase_planes.split(
            image, plane * height * width, height, width, planes, stride, padding, wq, phase
        )
        best = np.zeros(length, np.float32)
        phase_planes.spread(pooled, plane * ho * wo, ho, wo, best, wq)
        picks = np.zeros(length, np.int32)
        for offset in range(kh * kw - 1, -1, -1):
            at = phase_planes.tap(offset // kw, offset % kw, stride, dilation, wq, phase)
            for q in range(length):
                value, target = planes[at + uint64(q)], best[uint64(q)]
                wins = (value == target) | (value != value)
                picks[uint64(q)] = offset if wins else picks[uint64(q)]
        for i in range(ho):
            for j in range(wo):
                pick = picks[i * wq + j]
                if best[i * wq + j] == _LOWEST:  # the first element of the image that is -inf
                    pick = _first_lowest(image, plane, height, width, i, j, kh, kw, sh, sw,
                                         ph, pw, dh, dw)  # fmt: skip
                chosen[(plane * ho + i) * wo + j] = pick


@njit(inline="always")
def _first_lowest(image, plane, height, width, i, j, kh, kw, sh, sw, ph, pw, dh, dw):
    """The first offset of window (i, j) on the image (not the padding) that holds -inf; 0
    where none does."""
    for offset in range(kh * kw):
        row = i * sh + (offset // kw) * dh - ph
        column = j * sw + (offset % kw) * dw - pw
        if row < 0 or row >= height or column < 0 or column >= width:
            continue
        if image[(plane * height + row) * width + column] == _LOWEST:
            return offset
    return 0


@kernel
def padded_scatter(grad, choice, image, size, stride, padding, dilation):
    """image = zeros, then for each offset in order, grad added where the window's choice is
    that offset (zero elsewhere), as the reference adds: the same sums in the same order."""
    n, c, ho, wo = grad.shape
    height, width = image.shape[2], image.shape[3]
    kh, kw = size
    hq, wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    target, values, chosen = image.reshape(-1), grad.reshape(-1), choice.reshape(-1)
    for plane in prange(n * c):
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread_grad = np.zeros(length, np.float32)
        phase_planes.spread(values, plane * ho * wo, ho, wo, spread_grad, wq)
        picks = np.full(length, -1, np.int32)  # the grid's dropped columns: no offset
        for i in range(ho):
            for j in range(wo):
                picks[i * wq + j] = chosen[(plane * ho + i) * wo + j]
        for offset in range(kh * kw):
            at = phase_planes.tap(offset // kw, offset % kw, stride, dilation, wq, phase)
            for q in range(length):
                picked = spread_grad[uint64(q)] if picks[uint64(q)] == offset else _ZERO
                planes[at + uint64(q)] += picked
        phase_planes.join(
            planes, target, plane * height * width, height, width, stride, padding, wq, phase
        )
