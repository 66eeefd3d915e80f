"""Compiled twin of the depthwise convolution's forward (one input channel per group, as
``avg_pool2d`` runs it): for each output plane a direct loop over its kernel's taps, reading the
input in place, one (sample, output channel) plane per task on numba's threads. The NumPy
reference is ``accel/convolution.depthwise_correlate`` (whole-array multiply-adds per tap over
the windows view of a padded copy), whose passes cost more than the work in small images.

x (N, C, H, W), weight (O, 1, kh, kw) with O a multiple of C, bias (O,) or shape (0,), out (N,
O, Ho, Wo): float32, C-contiguous. Each output sums its taps in the reference's order (row by
row of the kernel), then adds the bias.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

_ZERO = np.float32(0.0)


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def correlate(x, weight, bias, out, stride, padding, dilation):
    """out[n, o, i, j] = sum over (a, b) of weight[o, 0, a, b] * x[n, o // (O / C), i*sh + a*dh
    - ph, j*sw + b*dw - pw] (zero outside the image), plus bias[o]."""
    n, c, height, width = x.shape
    o, _, kh, kw = weight.shape
    ho, wo = out.shape[2], out.shape[3]
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    per_group = o // c
    source, taps, target = x.reshape(-1), weight.reshape(-1), out.reshape(-1)
    # output columns [low, high) whose every tap reads inside the row
    low = min(wo, max(0, (pw + sw - 1) // sw))
    high = max(low, min(wo, (width - 1 - (kw - 1) * dw + pw) // sw + 1))
    # flat unsigned indices only (a view made inside the loops costs a reference count each
    # time; a signed index, a test for wraparound), and each output row summed in a buffer of
    # the task's own: the loops over columns vectorise
    for task in prange(n * o):
        sample, channel = task // o, task % o
        plane = (sample * c + channel // per_group) * height * width
        first_tap = channel * kh * kw
        shift = bias[channel] if bias.size else _ZERO
        sums = np.empty(wo, np.float32)
        for i in range(ho):
            sums[:] = _ZERO
            for a in range(kh):
                row = i * sh + a * dh - ph
                if row < 0 or row >= height:
                    continue
                line = plane + row * width
                for b in range(kw):
                    tap = taps[first_tap + a * kw + b]
                    start = line + b * dw - pw
                    # constant strides for the common ones: those loops vectorise
                    if sw == 1:
                        for j in range(low, high):
                            sums[uint64(j)] += tap * source[uint64(start + j)]
                    elif sw == 2:
                        for j in range(low, high):
                            sums[uint64(j)] += tap * source[uint64(start + 2 * j)]
                    else:
                        for j in range(low, high):
                            sums[uint64(j)] += tap * source[uint64(start + j * sw)]
                    # the edges, [0, low) and [high, wo): an image narrower than the
                    # kernel's reach can put a tap past either side of either edge
                    for edge in range(wo - (high - low)):
                        j = edge if edge < low else edge + high - low
                        column = j * sw + b * dw - pw
                        if column >= 0 and column < width:
                            sums[j] += tap * source[line + column]
            at = (task * ho + i) * wo
            for j in range(wo):
                target[uint64(at + j)] = sums[uint64(j)] + shift if bias.size else sums[uint64(j)]
