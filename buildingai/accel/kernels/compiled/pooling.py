"""Compiled twins of 2x2 max pooling with stride 2 (no padding, no dilation), the common case:
the window maximum, the choice of each window's first maximum, and the gradient scatter, each
one pass over its arrays on numba's threads, one (sample, channel) plane per task. The NumPy
references (``pool_flat.window_max``, ``pool_flat.first_max_inside``,
``pool_flat.scatter_to_choice``) cover every geometry whose windows lie inside the image;
``accel/pooling.py`` registers the twins for this one only, whose fixed stride lets each row's
pairs be read as whole vectors. x and the image are float32 (N, C, H, W), the pooled arrays
(N, C, H // 2, W // 2); the geometry parameters are accepted for the references' signature."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

_ZERO = np.float32(0.0)
_FIRST, _ONE, _TWO, _THREE = (np.int8(k) for k in range(4))

kernel = njit(parallel=True, nogil=True, cache=True)


@njit(inline="always")
def _larger(best, value):
    """``best`` or ``value``, whichever is a window's first maximum so far: ``value`` where it
    is larger, or the first NaN. A select, not a branch (``|`` evaluates both sides): the loop
    then runs on vectors, where a branch on random data is mispredicted half the time."""
    return best if (best != best) | (value <= best) else value


@kernel
def window_max(x, out, size, stride, dilation):
    """out[n, c, h, w] = max of x[n, c, 2h:2h+2, 2w:2w+2]; NaN wins."""
    n, c, ho, wo = out.shape
    images = x.reshape(n * c, x.shape[2], x.shape[3])
    pooled = out.reshape(n * c, ho, wo)
    for plane in prange(n * c):
        for h in range(ho):
            top, bottom, row = images[plane, 2 * h], images[plane, 2 * h + 1], pooled[plane, h]
            for w in range(wo):
                best = _larger(top[2 * w], top[2 * w + 1])
                best = _larger(best, bottom[2 * w])
                row[w] = _larger(best, bottom[2 * w + 1])


@kernel
def window_first_max(x, out, choice, size, stride, dilation):
    """choice[n, c, h, w] = the offset i * 2 + j of the window's first element equal to its
    maximum ``out`` (or NaN). Selects, not branches: the loop then runs on vectors."""
    n, c, ho, wo = out.shape
    images = x.reshape(n * c, x.shape[2], x.shape[3])
    pooled = out.reshape(n * c, ho, wo)
    chosen = choice.reshape(n * c, ho, wo)
    for plane in prange(n * c):
        for h in range(ho):
            top, bottom = images[plane, 2 * h], images[plane, 2 * h + 1]
            row, picks = pooled[plane, h], chosen[plane, h]
            for w in range(wo):
                best = row[w]
                pick = _THREE
                value = bottom[2 * w]
                pick = _TWO if value == best or value != value else pick
                value = top[2 * w + 1]
                pick = _ONE if value == best or value != value else pick
                value = top[2 * w]
                picks[w] = _FIRST if value == best or value != value else pick


@kernel
def scatter_to_choice(grad, choice, image, size, stride, dilation):
    """image = zeros, then image[n, c, 2h + i, 2w + j] = grad[n, c, h, w] where i * 2 + j is
    the window's choice."""
    n, c, ho, wo = grad.shape
    height, width = image.shape[2], image.shape[3]
    images = image.reshape(n * c, height * width)
    grads = grad.reshape(n * c, ho * wo)
    chosen = choice.reshape(n * c, ho * wo)
    for plane in prange(n * c):
        target, values, picks = images[plane], grads[plane], chosen[plane]
        target[:] = _ZERO
        for h in range(ho):
            for w in range(wo):
                k = h * wo + w
                pick = np.int64(picks[k])
                target[(2 * h + pick // 2) * width + 2 * w + pick % 2] = values[k]
