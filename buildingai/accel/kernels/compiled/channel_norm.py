"""Compiled twins of the channel normalisation kernels: ``standardize`` and its gradient over
every axis but the channel axis, as batch normalisation calls them (``accel/channel_norm.py``
holds the NumPy kernels they twin).

The arrays are (N, C, S) float32 views of (N, C, *spatial) inputs, per-channel values (C,).
Each channel is one task on numba's threads: its N rows of S values are summed row by row in
float32 vector lanes (``rows.py``'s reductions) and the row sums added in float64, so a
channel's statistics over N * S values keep about float32's precision however many there
are; the output is then written in one pass. A channel reads its inputs twice (the statistics,
then the output) instead of NumPy's five or more passes with temporaries.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from .rows import _centered_squares, _sum, _sum_and_dot, inline, kernel


@inline
def _statistics(x, c):
    """(mean as float32, sum of squared deviations as float64) of channel c of an (N, C, S)
    array: the rows' float32 sums added in float64, the mean first, then the centred squares."""
    batch, _, size = x.shape
    total = 0.0
    for n in range(batch):
        total += _sum(x[n, c])
    mean = np.float32(total / (batch * size))
    squares = 0.0
    for n in range(batch):
        squares += _centered_squares(x[n, c], mean)
    return mean, squares


@kernel
def standardize_channels(x, out, rstd, eps):
    """out = (x - mean) * rstd with rstd = 1 / sqrt(var + eps), mean and biased variance per
    channel over axes 0 and 2 of (N, C, S) arrays; rstd (C,) receives the reciprocals."""
    batch, channels, size = x.shape
    scale = 1.0 / (batch * size)
    for c in prange(channels):
        mean, squares = _statistics(x, c)
        reciprocal = np.float32(1.0 / np.sqrt(squares * scale + eps))
        rstd[c] = reciprocal
        for n in range(batch):
            row, result = x[n, c], out[n, c]
            for j in range(size):
                result[j] = (row[j] - mean) * reciprocal


@kernel
def standardize_grad_channels(g, xhat, rstd, out):
    """out = rstd * (g - mean(g) - xhat * mean(g * xhat)), the means per channel over axes 0
    and 2 of (N, C, S) arrays, rstd (C,)."""
    batch, channels, size = g.shape
    scale = 1.0 / (batch * size)
    for c in prange(channels):
        total = 0.0
        projection = 0.0
        for n in range(batch):
            row_total, row_projection = _sum_and_dot(g[n, c], xhat[n, c])
            total += row_total
            projection += row_projection
        mean = np.float32(total * scale)
        mean_projection = np.float32(projection * scale)
        reciprocal = rstd[c]
        for n in range(batch):
            grad, normalized, result = g[n, c], xhat[n, c], out[n, c]
            for j in range(size):
                result[j] = (grad[j] - mean - normalized[j] * mean_projection) * reciprocal


@kernel
def channel_means(x, out):
    """out (C,) = the mean of each channel over axes 0 and 2 of an (N, C, S) array."""
    batch, channels, size = x.shape
    scale = 1.0 / (batch * size)
    for c in prange(channels):
        total = 0.0
        for n in range(batch):
            total += _sum(x[n, c])
        out[c] = np.float32(total * scale)


@kernel
def channel_variances(x, out, correction):
    """out (C,) = the variance of each channel over axes 0 and 2 of an (N, C, S) array, the
    centred squares divided by N * S - correction."""
    batch, channels, size = x.shape
    for c in prange(channels):
        _, squares = _statistics(x, c)
        out[c] = np.float32(squares / (batch * size - correction))
