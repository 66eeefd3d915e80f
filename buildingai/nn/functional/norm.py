"""Normalisation functions: layer_norm, batch_norm, group_norm, rms_norm.

Each centres and scales its input over some axes with the ``standardize`` primitive (or, for
rms_norm, a short composite) and then applies an optional per-feature affine map ``xhat * w + b``;
``layer_norm`` with a weight does both in one op (``ops/layer_norm.py``), as does ``batch_norm``
in training (``ops/batch_norm.py``).
Arguments, defaults and semantics follow ``torch.nn.functional``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from ...autograd.dispatch import apply
from ...autograd.mode import no_grad
from ...autograd.tensor import Tensor
from ...errors import ArgumentError, ShapeError
from ...ops import norm as ops
from ...ops.batch_norm import BATCH_NORM, BATCH_NORM_EVAL, BATCH_STATISTICS
from ...ops.layer_norm import LAYER_NORM


def _shape_tuple(normalized_shape) -> tuple[int, ...]:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(map(int, normalized_shape))


def _check_trailing(op: str, x: Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The axes of the trailing dimensions ``shape``, which must end ``x``'s shape."""
    count = len(shape)
    if count == 0 or x.ndim < count or tuple(x.shape[x.ndim - count :]) != shape:
        raise ShapeError(
            f"[{op}] normalized_shape {shape} does not match the last dimensions of input "
            f"{tuple(x.shape)}",
            help=f"the input must have shape (*, {', '.join(map(str, shape))})"
            if count
            else "normalized_shape must name at least one dimension",
        )
    return tuple(range(x.ndim - count, x.ndim))


def _check_parameter(op: str, name: str, value: Tensor | None, shape: tuple[int, ...]) -> None:
    if value is not None and tuple(value.shape) != shape:
        raise ShapeError(
            f"[{op}] {name} has shape {tuple(value.shape)} but {shape} is expected",
            help=f"{name} holds one value per normalised feature",
        )


def _affine(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    if weight is not None:
        x = x * weight
    if bias is not None:
        x = x + bias
    return x


def standardize(x: Tensor, axes: Sequence[int], eps: float = 1e-5) -> Tensor:
    """``(x - mean) / sqrt(var + eps)`` over ``axes`` (biased variance), as one primitive.
    x: any shape -> same shape."""
    axes = tuple(sorted(axis % x.ndim for axis in axes))
    return apply(ops.STANDARDIZE, x, axes=axes, eps=float(eps))


def layer_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    normalized_shape,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dimensions, then scale by ``weight`` and
    shift by ``bias`` (both shaped ``normalized_shape``).

    input: (*, *normalized_shape) -> same shape.
    """
    shape = _shape_tuple(normalized_shape)
    axes = _check_trailing("layer_norm", input, shape)
    _check_parameter("layer_norm", "weight", weight, shape)
    _check_parameter("layer_norm", "bias", bias, shape)
    if weight is None:
        return _affine(standardize(input, axes, eps), None, bias)
    inputs = (input, weight) if bias is None else (input, weight, bias)
    return apply(LAYER_NORM, *inputs, axes=axes, eps=float(eps))  # one op, affine included


def rms_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    normalized_shape,
    weight: Tensor | None = None,
    eps: float | None = None,
) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dimensions.

    ``eps=None`` uses the machine epsilon of the input's dtype (PyTorch 2.4+).
    input: (*, *normalized_shape) -> same shape.
    """
    shape = _shape_tuple(normalized_shape)
    axes = _check_trailing("rms_norm", input, shape)
    _check_parameter("rms_norm", "weight", weight, shape)
    if eps is None:
        eps = float(np.finfo(input.dtype).eps)
    out = input * (input.square().mean(axis=axes, keepdims=True) + eps).rsqrt()
    return out if weight is None else out * weight


def _channel_view(value: Tensor, ndim: int) -> Tensor:
    """(C,) -> (1, C, 1, ..., 1), to broadcast against an (N, C, *) input."""
    return value.reshape((1, -1) + (1,) * (ndim - 2))


def _channel_affine(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """``x * weight + bias`` per channel: x (N, C, *), weight and bias (C,) or None."""
    if weight is not None:
        weight = _channel_view(weight, x.ndim)
    if bias is not None:
        bias = _channel_view(bias, x.ndim)
    return _affine(x, weight, bias)


def _check_channel_parameters(
    op: str,
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None,
    bias: Tensor | None,
) -> None:
    """Each of the running statistics, weight and bias, when given, is (C,) for input (N, C, *)."""
    channels = input.shape[1]
    for name, value in (
        ("running_mean", running_mean),
        ("running_var", running_var),
        ("weight", weight),
        ("bias", bias),
    ):
        _check_parameter(op, name, value, (channels,))


def _update_running_stats(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
    mean_of: Callable[[Tensor], Tensor],
    variance_of: Callable[[Tensor], Tensor],
) -> None:
    """Blend the statistics of input into the running ones given, in place and outside the
    graph: ``running = (1 - momentum) * running + momentum * statistic``, the statistic (C,)
    being ``mean_of`` or ``variance_of`` (unbiased) the detached input."""
    if running_mean is None and running_var is None:
        return
    with no_grad():
        batch = input.detach()
        if running_mean is not None:
            mean = mean_of(batch).astype(running_mean.dtype)
            running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
        if running_var is not None:
            variance = variance_of(batch).astype(running_var.dtype)
            running_var.copy_(running_var * (1 - momentum) + variance * momentum)


def _blend_running_stats(
    stats: Tensor,
    count: int,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    momentum: float,
) -> None:
    """Blend a batch's statistics (2, C) (mean, biased variance over ``count`` values per
    channel) into the running ones given, in place and outside the graph::

        running_mean = (1 - momentum) * running_mean + momentum * mean
        running_var  = (1 - momentum) * running_var  + momentum * unbiased_var
    """
    with no_grad():
        if running_mean is not None:
            mean = stats[0].astype(running_mean.dtype)
            running_mean.copy_(running_mean * (1 - momentum) + mean * momentum)
        if running_var is not None:
            variance = (stats[1] * (count / (count - 1))).astype(running_var.dtype)
            running_var.copy_(running_var * (1 - momentum) + variance * momentum)


def batch_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation of input (N, C, *) per channel C.

    Training: normalise with the batch's mean and biased variance over every axis but 1, and,
    when running statistics are given, update them in place (outside the graph)::

        running_mean = (1 - momentum) * running_mean + momentum * mean
        running_var  = (1 - momentum) * running_var  + momentum * unbiased_var

    Evaluation: normalise with ``running_mean`` and ``running_var``. ``weight`` and ``bias``
    (C,) apply per channel. Returns the same shape as ``input``.
    """
    if input.ndim < 2:
        raise ShapeError(
            f"[batch_norm] expects input (N, C, *), got {tuple(input.shape)}",
            help="add a batch dimension, e.g. x.reshape(1, -1)",
        )
    _check_channel_parameters("batch_norm", input, running_mean, running_var, weight, bias)
    axes = (0,) + tuple(range(2, input.ndim))

    if training:
        count = math.prod(input.shape[axis] for axis in axes)
        if count <= 1:
            raise ArgumentError(
                f"[batch_norm] expected more than 1 value per channel when training, got input "
                f"size {tuple(input.shape)}",
                help="use a batch of 2 or more samples, or call model.eval() to use the running "
                "statistics",
            )
        stats = apply(BATCH_STATISTICS, input)  # (2, C): each channel's mean and variance
        _blend_running_stats(stats, count, running_mean, running_var, momentum)
        if weight is None and bias is not None:
            return _channel_affine(apply(BATCH_NORM, input, stats, eps=float(eps)), None, bias)
        params = () if weight is None else (weight,) if bias is None else (weight, bias)
        return apply(BATCH_NORM, input, stats, *params, eps=float(eps))

    if running_mean is None or running_var is None:
        raise ArgumentError(
            "[batch_norm] running_mean and running_var are required when training=False",
            help="pass the running statistics, or training=True to use the batch's own",
        )
    if weight is None and bias is not None:
        out = apply(BATCH_NORM_EVAL, input, running_mean, running_var, eps=float(eps))
        return _channel_affine(out, None, bias)
    params = () if weight is None else (weight,) if bias is None else (weight, bias)
    return apply(BATCH_NORM_EVAL, input, running_mean, running_var, *params, eps=float(eps))


def group_norm(
    input: Tensor,  # noqa: A002 - PyTorch's argument name
    num_groups: int,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    """Split the C channels of input (N, C, *) into ``num_groups`` groups and normalise each
    sample's group over its channels and positions; ``weight`` and ``bias`` (C,) apply per
    channel. Returns the same shape as ``input``."""
    if input.ndim < 2:
        raise ShapeError(
            f"[group_norm] expects input (N, C, *), got {tuple(input.shape)}",
            help="add a batch dimension, e.g. x.reshape(1, -1)",
        )
    batch, channels = input.shape[0], input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise ShapeError(
            f"[group_norm] {channels} channels cannot be split into {num_groups} groups "
            f"(input {tuple(input.shape)})",
            help="num_groups must be positive and divide the number of channels",
        )
    _check_parameter("group_norm", "weight", weight, (channels,))
    _check_parameter("group_norm", "bias", bias, (channels,))
    per_group = channels // num_groups * math.prod(input.shape[2:])
    grouped = input.reshape(batch, num_groups, per_group)  # (N, G, C/G * positions)
    out = standardize(grouped, (2,), eps).reshape(input.shape)
    return _channel_affine(out, weight, bias)


__all__ = ["standardize", "layer_norm", "rms_norm", "batch_norm", "group_norm"]
