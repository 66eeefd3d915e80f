"""Compiled twins of the in-place update kernels (``accel/kernels/updates.py``): one pass over
flat float32 arrays, ``out`` possibly the same array as ``x``. No multiply-add is contracted
into an FMA, so each entry is rounded as the NumPy kernel rounds it, step by step: the same
bits as the out-of-place formulas a hand-written optimizer would otherwise run.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def lerp(x, end, out, weight):
    """out = x + weight * (end - x)."""
    w = np.float32(weight)
    for i in prange(x.size):
        v = x[i]
        out[i] = v + w * (end[i] - v)


@kernel
def addcmul(x, tensor1, tensor2, out, value):
    """out = x + value * tensor1 * tensor2."""
    scale = np.float32(value)
    for i in prange(x.size):
        out[i] = x[i] + scale * tensor1[i] * tensor2[i]


@kernel
def addcdiv(x, tensor1, tensor2, out, value):
    """out = x + value * tensor1 / tensor2."""
    scale = np.float32(value)
    for i in prange(x.size):
        out[i] = x[i] + scale * tensor1[i] / tensor2[i]
