"""Faster kernels over every axis but the channel axis 1: batch normalisation in training and
evaluation (the records of ``ops/batch_norm.py``), and ``standardize``, its gradient, ``mean``
and ``var`` (``ops/norm.py``, ``ops/reduce.py``) when called over those axes.

The records normalise with NumPy reductions over axes (0, 2, 3, ...), which walk the input
several times with temporaries between them. Here an (N, C, *spatial) input is seen as (N, C, S)
or (N, C * S) and handed to the compiled twins (``kernels/compiled/channel_norm.py``): each
per-channel statistic is one pass over the input summed in float64 (two for ``var``'s; batch
normalisation's mean and variance together take one, of shifted sums and squares), each map
(the normalisation with its affine map, the input gradient) one pass that reads its inputs and
writes its output once. The twins take float32 NumPy arrays; everything else (float64,
CuPy, acceleration without numba) runs the record.
"""

from __future__ import annotations

import math

import numpy as np

from ..ops.batch_norm import (
    BATCH_NORM,
    BATCH_NORM_EVAL,
    BATCH_NORM_GRAD_SUMS,
    BATCH_NORM_INPUT_GRAD,
    BATCH_STATISTICS,
)
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


@compiled_twin("channel_norm.batch_statistics_blocks", params=("size", "block"))
def _batch_statistics(xp, x, stats, *, size, block):
    """stats (2, C) = the mean and the biased variance of each channel of x (N, C * size),
    summed in float64 (``block``: the channels of one compiled task)."""
    channels = x.reshape(x.shape[0], -1, size)
    mean = channels.mean(axis=(0, 2), dtype=np.float64)
    centered = channels - mean[:, None]
    stats[0] = mean
    stats[1] = np.square(centered).mean(axis=(0, 2))


@compiled_twin("channel_norm.batch_norm_grad_sums_blocks", params=("size", "block"))
def _batch_norm_grad_sums(xp, g, x, mean, rstd, sums, *, size, block):
    """sums (2, C) = ``sum(g * xhat)`` and ``sum(g)`` per channel of g and x (N, C * size),
    xhat = (x - mean) * rstd, mean and rstd (C,); summed in float64."""
    grads = g.reshape(g.shape[0], -1, size).astype(np.float64)
    centered = x.reshape(x.shape[0], -1, size) - mean[:, None]
    sums[0] = (grads * centered).sum(axis=(0, 2)) * rstd
    sums[1] = grads.sum(axis=(0, 2))


@compiled_twin("channel_norm.batch_norm_map", params=("eps",))
def _batch_norm_map(xp, x, out, mean, var, weight, bias, *, eps):
    """out = (x - mean) * (rstd * weight) + bias per channel of x, out (N, C, S), rstd =
    1 / sqrt(var + eps); the rest (C,), weight and bias None when absent."""
    scale = 1 / np.sqrt(var + np.float32(eps))
    if weight is not None:
        scale *= weight
    np.subtract(x, mean[:, None], out=out)
    out *= scale[:, None]
    if bias is not None:
        out += bias[:, None]


@compiled_twin("channel_norm.channel_affine_grad_map")
def _channel_affine_grad_map(xp, g, x, out, grad_scale, mean, scale, shift):
    """out = g * grad_scale + (x - mean) * scale + shift per channel of (N, C, S) arrays."""
    np.subtract(x, mean[:, None], out=out)
    out *= scale[:, None]
    out += shift[:, None]
    out += g * grad_scale[:, None]


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


# ----- batch normalisation: training and evaluation -------------------------------------------


def _float32_batch(xp, x, *arrays, **attrs) -> bool:
    """A non-empty float32 NumPy input (N, C, *), twins available."""
    return (
        xp is np and x.dtype == np.float32 and x.ndim >= 2 and x.size > 0 and compiled.available()
    )


def _float32(*arrays) -> bool:
    """Whether every array given (None skipped) is float32."""
    return all(array is None or array.dtype == np.float32 for array in arrays)


def _positions(x) -> int:
    """The values per sample and channel of x (N, C, *): S of its (N, C, S) view."""
    return math.prod(x.shape[2:])


def _block(channels: int, size: int) -> int:
    """Channels per compiled task of the per-channel sums: a few hundred values of each row,
    and at least two tasks where there are two channels."""
    return max(1, min(max(1, 256 // size), (channels + 1) // 2))


def _columns(array):
    """``array`` (N, C, *spatial) as (N, C * S) (a copy if not contiguous)."""
    return array.reshape(array.shape[0], -1)


def _reciprocal_deviation(stats, eps):
    """1 / sqrt(var + eps) (C,) from statistics (2, C), as the record computes it."""
    return 1 / np.sqrt(stats[1] + np.float32(eps))


def batch_statistics(ctx, xp, x):
    """float32: the compiled twin, one task per block of channels, sums in float64."""
    if x.size == 0:  # the twin reads each channel's first value
        return NotImplemented
    size = _positions(x)
    stats = np.empty((2, x.shape[1]), np.float32)
    keywords = {"size": size, "block": _block(x.shape[1], size)}
    if not compiled.run(_batch_statistics, [_columns(x), stats], keywords):
        return NotImplemented
    return stats


def _normalize(x, mean, var, weight, bias, eps):
    """``(x - mean) * (rstd * weight) + bias`` per channel in one pass (rows on numba's
    threads), or NotImplemented where the twin does not run."""
    if not _float32(mean, var, weight, bias):
        return NotImplemented
    out = np.empty(x.shape, np.float32)
    arrays = [_channels(x), _channels(out), mean, var, weight, bias]
    if not compiled.run(_batch_norm_map, arrays, {"eps": eps}):
        return NotImplemented
    return out


def batch_norm(ctx, xp, x, stats, weight=None, bias=None, *, eps):
    """float32: the normalisation and the affine map in one pass."""
    return _normalize(x, stats[0], stats[1], weight, bias, eps)


def batch_norm_eval(ctx, xp, x, mean, var, weight=None, bias=None, *, eps):
    """float32: the normalisation and the affine map in one pass."""
    return _normalize(x, mean, var, weight, bias, eps)


def batch_norm_grad_sums(ctx, xp, g, x, stats, *, eps):
    """float32 of one shape: the compiled twin, one task per block of channels."""
    if not (_float32(g, stats) and g.shape == x.shape):
        return NotImplemented
    size = _positions(x)
    sums = np.empty_like(stats)
    arrays = [
        _columns(g),
        _columns(x),
        np.ascontiguousarray(stats[0]),
        _reciprocal_deviation(stats, eps),
        sums,
    ]
    if not compiled.run(
        _batch_norm_grad_sums, arrays, {"size": size, "block": _block(x.shape[1], size)}
    ):
        return NotImplemented
    return sums


def batch_norm_input_grad(ctx, xp, g, x, stats, sum_gx, sum_g, weight=None, *, eps):
    """float32 of one shape: ``g * a + (x - mean) * b + c`` per channel in one pass, with
    a = rstd * weight, b = -a * rstd * sum_gx / M and c = -a * sum_g / M."""
    if not (_float32(g, stats, sum_gx, sum_g, weight) and g.shape == x.shape):
        return NotImplemented
    count = math.prod(x.shape) // x.shape[1]
    ctx.count = count  # as the record notes it for its backward
    rstd = _reciprocal_deviation(stats, eps)
    grad_scale = rstd if weight is None else rstd * weight
    share = np.float32(1 / count)
    scale = -grad_scale * rstd * (sum_gx * share)
    shift = -grad_scale * (sum_g * share)
    out = np.empty(x.shape, np.float32)
    arrays = [_channels(g), _channels(x), _channels(out), grad_scale]
    arrays += [np.ascontiguousarray(stats[0]), scale, shift]
    if not compiled.run(_channel_affine_grad_map, arrays):
        return NotImplemented
    return out


for _op, _kernel in (
    (BATCH_STATISTICS, batch_statistics),
    (BATCH_NORM, batch_norm),
    (BATCH_NORM_EVAL, batch_norm_eval),
    (BATCH_NORM_GRAD_SUMS, batch_norm_grad_sums),
    (BATCH_NORM_INPUT_GRAD, batch_norm_input_grad),
):
    register(
        _op,
        _float32_batch,
        _kernel,
        name=f"{_op.name}.channels",
        description="float32 channels: one compiled pass, channels on numba's threads",
        requires=("numba",),
    )
