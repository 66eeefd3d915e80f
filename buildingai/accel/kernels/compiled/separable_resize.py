"""Compiled twin of ``accel/kernels/separable_resize.py``: float32 planes, int64 columns, the
output rows of every plane cut into blocks across numba's threads. Each row is the height taps'
weighted input rows summed into a buffer (contiguous, vectorised), then each output pixel the
width taps of that buffer. ``resize_planes_width_first`` maps every input row along the width
first (rows across threads), then sums the height taps' weighted rows of that into each output
row (rows across threads again). Products and sums round as the NumPy kernels' do: no FMA
contraction."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_ZERO = np.float32(0.0)
_BLOCKS = 256  # blocks of output rows: enough to balance the threads, one buffer each


@njit(parallel=True, nogil=True, cache=True)
def resize_planes(x, columns_h, weights_h, columns_w, weights_w, out):
    planes, h, w = x.shape
    mh, mw = out.shape[1], out.shape[2]
    taps_h, taps_w = columns_h.shape[1], columns_w.shape[1]
    tasks = planes * mh
    blocks = min(tasks, _BLOCKS)
    for block in prange(blocks):
        row = np.empty(w + 1, np.float32)  # one past the end: the width map's zero pixel
        row[w] = _ZERO
        for task in range(block * tasks // blocks, (block + 1) * tasks // blocks):
            plane, i = task // mh, task % mh
            source = columns_h[i, 0]
            if source < h:
                weight = weights_h[i, 0]
                for j in range(w):
                    row[j] = x[plane, source, j] * weight
            else:
                row[:w] = _ZERO
            for k in range(1, taps_h):
                source = columns_h[i, k]
                if source < h:  # a zero row adds nothing
                    weight = weights_h[i, k]
                    for j in range(w):
                        row[j] = row[j] + x[plane, source, j] * weight
            result = out[plane, i]
            for j in range(mw):
                total = row[columns_w[j, 0]] * weights_w[j, 0]
                for k in range(1, taps_w):
                    total = total + row[columns_w[j, k]] * weights_w[j, k]
                result[j] = total


@njit(parallel=True, nogil=True, cache=True)
def resize_planes_width_first(x, columns_h, weights_h, columns_w, weights_w, out):
    planes, h, w = x.shape
    mh, mw = out.shape[1], out.shape[2]
    taps_h, taps_w = columns_h.shape[1], columns_w.shape[1]
    rows = np.empty((planes, h, mw), np.float32)  # every input row mapped along the width
    tasks = planes * h
    blocks = min(tasks, _BLOCKS)
    for block in prange(blocks):
        source = np.empty(w + 1, np.float32)  # one past the end: the width map's zero pixel
        source[w] = _ZERO
        for task in range(block * tasks // blocks, (block + 1) * tasks // blocks):
            plane, r = task // h, task % h
            source[:w] = x[plane, r]
            result = rows[plane, r]
            for j in range(mw):
                total = source[columns_w[j, 0]] * weights_w[j, 0]
                for k in range(1, taps_w):
                    total = total + source[columns_w[j, k]] * weights_w[j, k]
                result[j] = total
    tasks = planes * mh
    blocks = min(tasks, _BLOCKS)
    for block in prange(blocks):
        for task in range(block * tasks // blocks, (block + 1) * tasks // blocks):
            plane, i = task // mh, task % mh
            result = out[plane, i]
            source = columns_h[i, 0]
            if source < h:
                weight = weights_h[i, 0]
                for j in range(mw):
                    result[j] = rows[plane, source, j] * weight
            else:
                result[:] = _ZERO
            for k in range(1, taps_h):
                source = columns_h[i, k]
                if source < h:  # a zero row adds nothing
                    weight = weights_h[i, k]
                    for j in range(mw):
                        result[j] = result[j] + rows[plane, source, j] * weight
