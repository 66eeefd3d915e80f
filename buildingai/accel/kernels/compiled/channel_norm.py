"""Compiled twins of the channel normalisation kernels (``accel/channel_norm.py`` holds the
NumPy kernels they twin): ``standardize`` and its gradient over every axis but the channel
axis, and batch normalisation's statistics, per-channel gradient sums and maps.

The arrays are (N, C, S) or (N, C * S) float32 views of (N, C, *spatial) inputs, per-channel
values (C,). In ``standardize_channels`` and its kin each channel is one task on numba's
threads: its N rows of S values are summed row by row in float32 vector lanes (``rows.py``'s
reductions) and the row sums added in float64. Batch normalisation's kernels sum blocks of
channels column by column in float64 (see below), and its maps run rows of S values on
numba's threads.
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


# ----- batch normalisation in training: statistics, the affine map, the gradient ------------------
# The per-channel sums run over blocks of channels: a task adds the N rows of its block's
# columns (x seen as (N, C * S), the block's columns contiguous in each row) into float64
# partial sums, one per column, then adds each channel's S partial sums. The rows go four at a
# time: their four terms of a column are added in float32, then to the column's float64 sum,
# so each float64 partial sum is read and written once per four rows (a quarter of the
# conversions and of the partial sums' traffic). The column loop is a vertical add, vectorised
# without reordering any sum, and a block spans hundreds of values per row however small S is.
ROWS_TOGETHER = 4


@kernel
def batch_statistics_blocks(x, stats, size, block):
    """stats (2, C) = the mean and the biased variance of each channel of x (N, C * size), in
    one pass: the sums of ``x - k`` and of its squares, k the channel's first value (a shift
    near the mean, so that the variance ``E[(x - k)^2] - (mean - k)^2`` loses nothing to
    cancellation where the mean is large against the spread). The deviations are float32:
    each is rounded at the precision of its size, the data's own where k lies among them."""
    batch, columns = x.shape
    channels = columns // size
    count = batch * size
    whole = batch - batch % ROWS_TOGETHER
    for task in prange((channels + block - 1) // block):
        first, last = task * block, min(channels, task * block + block)
        start, width = first * size, (last - first) * size
        shifts = np.empty(width, np.float32)
        for c in range(first, last):
            for j in range(size):
                shifts[(c - first) * size + j] = x[0, c * size]
        sums = np.zeros(width, np.float64)
        squares = np.zeros(width, np.float64)
        for n in range(0, whole, ROWS_TOGETHER):
            r0, r1 = x[n, start : start + width], x[n + 1, start : start + width]
            r2, r3 = x[n + 2, start : start + width], x[n + 3, start : start + width]
            for k in range(width):
                d0, d1 = r0[k] - shifts[k], r1[k] - shifts[k]
                d2, d3 = r2[k] - shifts[k], r3[k] - shifts[k]
                sums[k] += (d0 + d1) + (d2 + d3)
                squares[k] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3)
        for n in range(whole, batch):
            row = x[n, start : start + width]
            for k in range(width):
                deviation = row[k] - shifts[k]
                sums[k] += deviation
                squares[k] += deviation * deviation
        for c in range(first, last):
            offset = (c - first) * size
            total = 0.0
            total_squares = 0.0
            for j in range(size):
                total += sums[offset + j]
                total_squares += squares[offset + j]
            shifted_mean = total / count
            stats[0, c] = shifts[offset] + shifted_mean
            stats[1, c] = max(0.0, total_squares / count - shifted_mean * shifted_mean)


@kernel
def batch_norm_grad_sums_blocks(g, x, mean, rstd, sums, size, block):
    """sums (2, C) = ``sum(g * xhat)`` and ``sum(g)`` per channel of g and x (N, C * size),
    xhat = (x - mean) * rstd with mean and rstd (C,); each column's sums in float64."""
    batch, columns = x.shape
    channels = columns // size
    whole = batch - batch % ROWS_TOGETHER
    for task in prange((channels + block - 1) // block):
        first, last = task * block, min(channels, task * block + block)
        start, width = first * size, (last - first) * size
        means = np.empty(width, np.float32)
        for c in range(first, last):
            for j in range(size):
                means[(c - first) * size + j] = mean[c]
        projection = np.zeros(width, np.float64)
        total = np.zeros(width, np.float64)
        for n in range(0, whole, ROWS_TOGETHER):
            g0, g1 = g[n, start : start + width], g[n + 1, start : start + width]
            g2, g3 = g[n + 2, start : start + width], g[n + 3, start : start + width]
            x0, x1 = x[n, start : start + width], x[n + 1, start : start + width]
            x2, x3 = x[n + 2, start : start + width], x[n + 3, start : start + width]
            for k in range(width):
                m = means[k]
                total[k] += (g0[k] + g1[k]) + (g2[k] + g3[k])
                projection[k] += (g0[k] * (x0[k] - m) + g1[k] * (x1[k] - m)) + (
                    g2[k] * (x2[k] - m) + g3[k] * (x3[k] - m)
                )
        for n in range(whole, batch):
            grads, row = g[n, start : start + width], x[n, start : start + width]
            for k in range(width):
                total[k] += grads[k]
                projection[k] += grads[k] * (row[k] - means[k])
        for c in range(first, last):
            offset = (c - first) * size
            channel_projection = 0.0
            channel_total = 0.0
            for j in range(size):
                channel_projection += projection[offset + j]
                channel_total += total[offset + j]
            sums[0, c] = channel_projection * rstd[c]
            sums[1, c] = channel_total


@kernel
def batch_norm_map(x, out, mean, var, weight, bias, eps):
    """out = (x - mean) * (rstd * weight) + bias per channel of x, out (N, C, S), with
    rstd = 1 / sqrt(var + eps); mean, var, weight and bias (C,), weight and bias empty when
    absent."""
    batch, channels, size = x.shape
    scale = np.empty(channels, np.float32)
    shift = np.zeros(channels, np.float32)
    for c in range(channels):
        scale[c] = np.float32(1) / np.sqrt(var[c] + np.float32(eps))
        if weight.size:
            scale[c] *= weight[c]
        if bias.size:
            shift[c] = bias[c]
    if size == 1:  # (N, C): the channels are the contiguous axis
        for n in prange(batch):
            for c in range(channels):
                out[n, c, 0] = (x[n, c, 0] - mean[c]) * scale[c] + shift[c]
        return
    for row in prange(batch * channels):
        n = row // channels
        c = row - n * channels
        m, s, t = mean[c], scale[c], shift[c]
        for j in range(size):
            out[n, c, j] = (x[n, c, j] - m) * s + t


@kernel
def channel_affine_grad_map(g, x, out, grad_scale, mean, scale, shift):
    """out = g * grad_scale + (x - mean) * scale + shift per channel of g, x and out
    (N, C, S); the coefficients (C,)."""
    batch, channels, size = x.shape
    if size == 1:
        for n in prange(batch):
            for c in range(channels):
                out[n, c, 0] = g[n, c, 0] * grad_scale[c] + (
                    (x[n, c, 0] - mean[c]) * scale[c] + shift[c]
                )
        return
    for row in prange(batch * channels):
        n = row // channels
        c = row - n * channels
        a, m, s, t = grad_scale[c], mean[c], scale[c], shift[c]
        for j in range(size):
            out[n, c, j] = g[n, c, j] * a + ((x[n, c, j] - m) * s + t)
