"""Compiled twins of prelu's kernels (``accel/prelu.py`` holds the NumPy kernels they twin):
the forward, the input gradient and the slopes' gradient, on float32 arrays seen as (N, C, S)
with one slope per channel, weight (C,).

The maps run the N * C rows of S values on numba's threads, each a compare and a select (one
read of each input, one write). The slopes' gradient cuts the rows into ``TASKS`` equal runs:
a row's masked dot product is summed in float32 vector lanes (in blocks, as ``rows.py``'s
``_dot``) and added to its channel's float64 partial sum of that run, and the runs' partial
sums are added at the end. The work splits evenly however few channels there are, and the
sums' order does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .rows import _ZERO, SUM_BLOCK, kernel, reduction

TASKS = 64  # runs of rows of the slopes' gradient, each with its own partial sums


@kernel
def prelu_channels(x, weight, out):
    """out = x where x > 0, else weight[c] * x, for x and out (N, C, S) and weight (C,)."""
    _, channels, size = x.shape
    for r in prange(x.shape[0] * channels):
        n, c = r // channels, r % channels
        slope, row, result = weight[c], x[n, c], out[n, c]
        for j in range(size):
            value = row[j]
            result[j] = value if value > 0 else slope * value


@kernel
def prelu_input_grad_channels(g, x, weight, out):
    """out = g where x > 0, else weight[c] * g, for g, x and out (N, C, S) and weight (C,)."""
    _, channels, size = x.shape
    for r in prange(x.shape[0] * channels):
        n, c = r // channels, r % channels
        slope, grads, row, result = weight[c], g[n, c], x[n, c], out[n, c]
        for j in range(size):
            result[j] = grads[j] if row[j] > 0 else slope * grads[j]


@reduction
def _negative_block_dot(g, x):
    """The float32 sum of g * x over the entries where not x > 0 (NaN entries count) of two
    1-D rows of at most ``SUM_BLOCK`` entries, from zero."""
    total = _ZERO
    for j in range(x.size):
        value = x[j]
        total += _ZERO if value > 0 else g[j] * value
    return total


@reduction
def _negative_dot(g, x):
    """``_negative_block_dot`` of two 1-D rows, block by block as ``rows._dot``."""
    total = _ZERO
    for start in range(0, x.size, SUM_BLOCK):
        total += _negative_block_dot(g[start : start + SUM_BLOCK], x[start : start + SUM_BLOCK])
    return total


@kernel
def prelu_weight_grad_channels(g, x, out):
    """out (C,) = the sum over axes 0 and 2 of g * x where not x > 0, for g and x (N, C, S)."""
    _, channels, _ = x.shape
    rows = x.shape[0] * channels
    tasks = max(1, min(TASKS, rows))
    partial = np.zeros((tasks, channels), np.float64)
    for task in prange(tasks):
        for r in range(task * rows // tasks, (task + 1) * rows // tasks):
            n, c = r // channels, r % channels
            partial[task, c] += _negative_dot(g[n, c], x[n, c])
    for c in range(channels):
        total = 0.0
        for task in range(tasks):
            total += partial[task, c]
        out[c] = total
