"""Faster kernels of ``standardize`` and ``standardize_grad`` (``ops/norm.py``) over every axis
but the channel axis 1: the statistics of batch normalisation in training.

The record normalises with NumPy reductions over axes (0, 2, 3, ...), which walk the input
several times with temporaries between them. Here an (N, C, *spatial) input is seen as (N, C, S)
and each channel computed in one task of the compiled twin (``kernels/compiled/channel_norm.py``):
its statistics, then its output, two reads of the input. The twins take float32 NumPy arrays;
everything else (float64, CuPy, acceleration without numba) runs the record.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.norm import STANDARDIZE, STANDARDIZE_GRAD
from ..ops.reduce import MEAN, VAR, kept_shape
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .registry import register

# ----- NumPy kernels on (N, C, S) arrays, each the reference of its compiled twin ---------------


@compiled_twin("channel_norm.standardize_channels", params=("eps",))
def _standardize_channels(xp, x, out, rstd, *, eps):
    """out = (x - mean) / sqrt(var + eps) per channel over axes 0 and 2 of (N, C, S) arrays;
    rstd (C,) receives 1 / sqrt(var + eps)."""
    count = x.shape[0] * x.shape[2]
    mean = x.sum(axis=(0, 2), dtype=np.float64) / count
    centered = x - mean[:, None].astype(x.dtype)
    variance = xp.square(centered).sum(axis=(0, 2), dtype=np.float64) / count
    rstd[...] = 1 / np.sqrt(variance + eps)
    xp.multiply(centered, rstd[:, None], out=out)


@compiled_twin("channel_norm.standardize_grad_channels")
def _standardize_grad_channels(xp, g, xhat, rstd, out):
    """out = rstd * (g - mean(g) - xhat * mean(g * xhat)), means per channel over axes 0 and 2
    of (N, C, S) arrays, rstd (C,)."""
    count = g.shape[0] * g.shape[2]
    mean = (g.sum(axis=(0, 2), dtype=np.float64) / count).astype(g.dtype)
    projection = (g * xhat).sum(axis=(0, 2), dtype=np.float64) / count
    xp.subtract(g, mean[:, None], out=out)
    out -= xhat * projection[:, None].astype(g.dtype)
    out *= rstd[:, None]


@compiled_twin("channel_norm.channel_means")
def _channel_means(xp, x, out):
    """out (C,) = the mean of each channel over axes 0 and 2 of an (N, C, S) array."""
    out[...] = x.sum(axis=(0, 2), dtype=np.float64) / (x.shape[0] * x.shape[2])


@compiled_twin("channel_norm.channel_variances", params=("correction",))
def _channel_variances(xp, x, out, *, correction):
    """out (C,) = the variance of each channel over axes 0 and 2 of an (N, C, S) array, divided
    by N * S - correction."""
    count = x.shape[0] * x.shape[2]
    mean = (x.sum(axis=(0, 2), dtype=np.float64) / count).astype(x.dtype)
    squares = xp.square(x - mean[:, None]).sum(axis=(0, 2), dtype=np.float64)
    out[...] = squares / (count - correction)


# ----- the registered kernels ---------------------------------------------------------------------


def _channel_axes(x, axes) -> bool:
    """Whether ``axes`` are every axis of x but the channel axis 1 (batch normalisation's)."""
    return axes is not None and x.ndim >= 2 and tuple(axes) == (0, *range(2, x.ndim))


def _float32_channels(xp, x, *arrays, axes, eps) -> bool:
    """A non-empty float32 NumPy input normalised over every axis but 1, twins available."""
    return (
        xp is np
        and x.dtype == np.float32
        and x.size > 0
        and _channel_axes(x, axes)
        and compiled.available()
    )


def _channels(array):
    """``array`` (N, C, *spatial) as (N, C, S), the twins' layout (a copy if not contiguous)."""
    return array.reshape(array.shape[0], array.shape[1], math.prod(array.shape[2:]))


def standardize(ctx, xp, x, *, axes, eps):
    """float32 channels: the compiled twin, one task per channel."""
    out = np.empty_like(x, order="C")
    rstd = np.empty(x.shape[1], np.float32)
    if not compiled.run(_standardize_channels, [_channels(x), _channels(out), rstd], {"eps": eps}):
        return NotImplemented
    ctx.rstd = rstd.reshape(kept_shape(x.shape, axes))
    return out


def standardize_grad(ctx, xp, g, x, xhat, rstd, *, axes, eps):
    """float32 channels of one shape: the compiled twin, one task per channel."""
    if not (g.dtype == xhat.dtype == rstd.dtype == np.float32 and g.shape == xhat.shape):
        return NotImplemented
    out = np.empty(g.shape, np.float32)
    arrays = [_channels(g), _channels(xhat), rstd.reshape(g.shape[1]), _channels(out)]
    if not compiled.run(_standardize_grad_channels, arrays):
        return NotImplemented
    return out


def _float32_channel_statistic(xp, x, *, axes, keepdims, correction=0) -> bool:
    """A float32 NumPy input reduced over every axis but 1, more values per channel than the
    correction, twins available."""
    return (
        xp is np
        and x.dtype == np.float32
        and x.size > 0
        and _channel_axes(x, axes)
        and x.size // x.shape[1] > correction
        and compiled.available()
    )


def _statistic(twin, x, axes, keepdims, **params):
    """The per-channel statistic ``twin`` computes, in the record's output shape."""
    out = np.empty(x.shape[1], np.float32)
    if not compiled.run(twin, [_channels(x), out], params):
        return NotImplemented
    return out.reshape(kept_shape(x.shape, axes)) if keepdims else out


def channel_mean(ctx, xp, x, *, axes, keepdims):
    """float32 channels: the compiled twin, one task per channel."""
    ctx.input_shape = x.shape  # as the record notes it for its backward
    return _statistic(_channel_means, x, axes, keepdims)


def channel_variance(ctx, xp, x, *, axes, keepdims, correction):
    """float32 channels: the compiled twin, one task per channel."""
    ctx.input_shape = x.shape
    return _statistic(_channel_variances, x, axes, keepdims, correction=correction)


register(
    STANDARDIZE,
    _float32_channels,
    standardize,
    name="standardize.channels",
    description="every axis but 1 (batch norm): one compiled task per channel, float32",
    requires=("numba",),
)
register(
    STANDARDIZE_GRAD,
    _float32_channels,
    standardize_grad,
    name="standardize_grad.channels",
    description="every axis but 1 (batch norm): one compiled task per channel, float32",
    requires=("numba",),
)
register(
    MEAN,
    _float32_channel_statistic,
    channel_mean,
    name="mean.channels",
    description="every axis but 1 (batch norm's running mean): one compiled task per channel",
    requires=("numba",),
)
register(
    VAR,
    _float32_channel_statistic,
    channel_variance,
    name="var.channels",
    description="every axis but 1 (batch norm's running variance): one compiled task per channel",
    requires=("numba",),
)
