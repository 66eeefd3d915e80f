"""Compiled twins of max pooling and its gradient for any window geometry
(``kernels/pool_windows.py`` has their NumPy references): one (sample, channel) plane per task
on numba's threads. x and the image are float32 (N, C, H, W), out and grad (N, C, Ho, Wo),
choice int8 or int32 of that shape; the geometry is (kh, kw), (sh, sw), (ph, pw), (dh, dw).

A plane whose output grid is long is laid out in phase planes (``phase_planes.py``), where each
window offset is one contiguous loop of selects over the grid that vectorises. Where the grid is
short against the window (``_short``: a 7x7 window over a 7x7 map has one output), those loops
would be mostly their own overhead, and each window is scanned on the image instead, skipping
the padding; a window of whole rows (global pooling) is one contiguous span, scanned in eight
independent lanes with unsigned indices, which need no wraparound test (``_span_max``,
``_span_first``). Both give the references' values, NaN included.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from . import phase_planes

_ZERO = np.float32(0.0)
_LOWEST = np.float32(-np.inf)
_NAN = np.float32(np.nan)
_1, _2, _3, _4, _5, _6, _7 = (uint64(k) for k in range(1, 8))  # unsigned offsets of the lanes

kernel = njit(parallel=True, nogil=True, cache=True)


@njit(inline="always")
def _short(length, kh, kw):
    """Whether a grid of ``length`` values is too short for one loop per window offset."""
    return length < 4 * kh * kw


@njit(inline="always")
def _inside(position, step, pad, spacing, taps, size):
    """The window offsets [low, high) along one axis whose pixels, position * step + offset *
    spacing - pad, lie in the image of ``size``: the loops over them need no test."""
    first = position * step - pad
    if spacing == 1:  # the common case, without the two integer divisions (most of a short scan)
        low, high = max(0, -first), min(taps, size - first)
        return low, max(low, high)
    low = max(0, -(first // spacing)) if first < 0 else 0
    high = min(taps, (size - 1 - first) // spacing + 1) if first < size else 0
    return low, max(low, high)


@njit(inline="always")
def _larger(kept, value):
    """``kept`` or ``value``, the running maximum: NaN, once there, stays; a larger value
    replaces. A select, not a branch."""
    return kept if (kept != kept) | (value <= kept) else value


@njit(inline="always")
def _span(i, j, rows, columns, stride, padding, dilation, width):
    """Where window (i, j)'s image elements start and how many there are when they are one
    contiguous span: whole rows, one after another (``rows``, ``columns``: ``_inside``'s
    ranges); a length of -1 where they are not."""
    if dilation[0] != 1 or dilation[1] != 1 or columns[1] - columns[0] != width:
        return 0, -1
    first_row = i * stride[0] + rows[0] - padding[0]
    return first_row * width, (rows[1] - rows[0]) * width  # (its first column is column 0)


@njit(inline="always")
def _span_max(image, begin, length):
    """The maximum of ``image[begin : begin + length]``, NaN where one is NaN (``_larger``'s
    values), in eight lanes that do not wait on each other."""
    base, count = uint64(begin), uint64(length)
    lanes = count - count % uint64(8)
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _LOWEST
    unordered = False
    for k in range(uint64(0), lanes, uint64(8)):
        at = base + k
        v0, v1, v2, v3 = image[at], image[at + _1], image[at + _2], image[at + _3]
        v4, v5, v6, v7 = image[at + _4], image[at + _5], image[at + _6], image[at + _7]
        a0, a1, a2, a3 = max(a0, v0), max(a1, v1), max(a2, v2), max(a3, v3)
        a4, a5, a6, a7 = max(a4, v4), max(a5, v5), max(a6, v6), max(a7, v7)
        unordered |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
        unordered |= (v4 != v4) | (v5 != v5) | (v6 != v6) | (v7 != v7)
    best = max(max(max(a0, a1), max(a2, a3)), max(max(a4, a5), max(a6, a7)))
    for k in range(lanes, count):
        value = image[base + k]
        best = max(best, value)
        unordered |= value != value
    return _NAN if unordered else best  # (max passes NaN over: it is flagged instead)


@njit(inline="always")
def _span_first(image, begin, length, target):
    """The first position in ``image[begin : begin + length]`` whose element equals ``target``
    or is NaN, or ``length`` where none does: a minimum over the span, which vectorises."""
    base, count = uint64(begin), uint64(length)
    first = count
    for k in range(count):
        value = image[base + k]
        first = min(first, k if (value == target) | (value != value) else count)
    return first


# ----- the maxima ---------------------------------------------------------------------------------


@kernel
def padded_window_max(x, out, size, stride, padding, dilation):
    """out[n, c, i, j] = the maximum of window (i, j), the padding -inf; NaN where one is NaN."""
    n, c, height, width = x.shape
    ho, wo = out.shape[2], out.shape[3]
    kh, kw = size
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    sh, sw = stride
    ph, pw = padding
    dh, dw = dilation
    image, pooled = x.reshape(-1), out.reshape(-1)
    short = _short(length, kh, kw)
    for plane in prange(n * c):
        start = plane * height * width
        if short:
            for i in range(ho):
                rows = _inside(i, sh, ph, dh, kh, height)
                for j in range(wo):
                    columns = _inside(j, sw, pw, dw, kw, width)
                    begin, length = _span(i, j, rows, columns, stride, padding, dilation, width)
                    if length >= 0:
                        pooled[(plane * ho + i) * wo + j] = _span_max(image, start + begin, length)
                        continue
                    best = _LOWEST
                    for a in range(rows[0], rows[1]):
                        line = start + (i * sh + a * dh - ph) * width + j * sw - pw
                        for b in range(columns[0], columns[1]):
                            best = _larger(best, image[line + b * dw])
                    pooled[(plane * ho + i) * wo + j] = best
            continue
        planes = np.full(stride[0] * stride[1] * phase, _LOWEST)
        phase_planes.split(image, start, height, width, planes, stride, padding, wq, phase)
        best_of = np.full(length, _LOWEST)
        for offset in range(kh * kw):
            at = phase_planes.tap(offset // kw, offset % kw, stride, dilation, wq, phase)
            for q in range(length):
                best_of[uint64(q)] = _larger(best_of[uint64(q)], planes[at + uint64(q)])
        for i in range(ho):
            row, line = uint64((plane * ho + i) * wo), uint64(i * wq)
            for j in range(wo):
                pooled[row + uint64(j)] = best_of[line + uint64(j)]


# ----- the first maxima ---------------------------------------------------------------------------


@kernel
def padded_first_max(x, out, choice, size, stride, padding, dilation):
    """choice[n, c, i, j] = the first offset a * kw + b (in that order) whose element of the
    image equals the window's maximum out[n, c, i, j], or is NaN; 0 where none does. On phase
    planes, offsets from the last to the first, each a select; a window whose maximum is -inf
    (where the padding, -inf there, would tie) is scanned again on the image."""
    n, c, height, width = x.shape
    ho, wo = out.shape[2], out.shape[3]
    kh, kw = size
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    image, pooled, chosen = x.reshape(-1), out.reshape(-1), choice.reshape(-1)
    short = _short(length, kh, kw)
    for plane in prange(n * c):
        start = plane * height * width
        if short:
            for i in range(ho):
                for j in range(wo):
                    at = (plane * ho + i) * wo + j
                    chosen[at] = _first(image, start, pooled[at], i, j, size, height, width,
                                        stride, padding, dilation)  # fmt: skip
            continue
        planes = np.full(stride[0] * stride[1] * phase, _LOWEST)
        phase_planes.split(image, start, height, width, planes, stride, padding, wq, phase)
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
                at = (plane * ho + i) * wo + j
                target = best[i * wq + j]
                if target == _LOWEST:
                    chosen[at] = _first(image, start, target, i, j, size, height, width,
                                        stride, padding, dilation)  # fmt: skip
                else:
                    chosen[at] = picks[i * wq + j]


@njit(inline="always")
def _first(image, start, target, i, j, size, height, width, stride, padding, dilation):
    """The first offset of window (i, j) whose element of the image equals ``target`` or is
    NaN; 0 where none does."""
    kh, kw = size
    rows = _inside(i, stride[0], padding[0], dilation[0], kh, height)
    columns = _inside(j, stride[1], padding[1], dilation[1], kw, width)
    begin, length = _span(i, j, rows, columns, stride, padding, dilation, width)
    if length >= 0:
        found = _span_first(image, start + begin, length, target)
        if found == length:
            return 0
        return (rows[0] + found // width) * kw + columns[0] + found % width
    for a in range(rows[0], rows[1]):
        line = start + (i * stride[0] + a * dilation[0] - padding[0]) * width
        line += j * stride[1] - padding[1]
        for b in range(columns[0], columns[1]):
            value = image[line + b * dilation[1]]
            if value == target or value != value:
                return a * kw + b
    return 0


# ----- the gradient -------------------------------------------------------------------------------


@kernel
def padded_scatter(grad, choice, image, size, stride, padding, dilation):
    """image = zeros, then for each offset in order, grad added where the window's choice is
    that offset (zero elsewhere on phase planes), as the reference adds: the same sums in the
    same order."""
    n, c, ho, wo = grad.shape
    height, width = image.shape[2], image.shape[3]
    kh, kw = size
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    target, values, chosen = image.reshape(-1), grad.reshape(-1), choice.reshape(-1)
    short = _short(length, kh, kw)
    disjoint = stride[0] > (kh - 1) * dilation[0] and stride[1] > (kw - 1) * dilation[1]
    offsets = np.arange(kh * kw)  # each offset's shift in the image, found without a division
    tap_rows, tap_columns = (offsets // kw) * dilation[0], (offsets % kw) * dilation[1]
    for plane in prange(n * c):
        start = plane * height * width
        if short:
            for k in range(uint64(height * width)):  # unsigned: no wraparound test
                target[uint64(start) + k] = _ZERO
            if disjoint:  # one value at most per element: any order gives the same sums
                for i in range(ho):
                    for j in range(wo):
                        at = (plane * ho + i) * wo + j
                        offset = np.int64(chosen[at])
                        row = i * stride[0] + tap_rows[offset] - padding[0]
                        column = j * stride[1] + tap_columns[offset] - padding[1]
                        if row >= 0 and row < height and column >= 0 and column < width:
                            target[start + row * width + column] += values[at]
                continue
            for a in range(kh):  # offset by offset, as the reference adds
                for b in range(kw):
                    offset = a * kw + b
                    for i in range(ho):
                        row = i * stride[0] + a * dilation[0] - padding[0]
                        if row < 0 or row >= height:
                            continue
                        for j in range(wo):
                            at = (plane * ho + i) * wo + j
                            column = j * stride[1] + b * dilation[1] - padding[1]
                            if chosen[at] == offset and column >= 0 and column < width:
                                target[start + row * width + column] += values[at]
            continue
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
        phase_planes.join(planes, target, start, height, width, stride, padding, wq, phase)
