"""Batch normalisation as a few ops: in training the batch's statistics, the normalisation
with its affine map and the gradient records its backward is made of; in evaluation one op.

Over an input x (N, C, *) the statistics are per channel C, over every other axis ("the channel
axes" below: 0, 2, 3, ...). ``batch_statistics`` computes the mean and biased variance of each
channel in one op (C,) x 2, which serve both the normalisation and the running statistics;
``batch_norm`` then maps x to ``(x - mean) * rstd * weight + bias`` in one op. Its backward is
two ops: ``batch_norm_grad_sums``, the per-channel sums ``sum(g * xhat)`` and ``sum(g)`` (the
weight and bias gradients), and ``batch_norm_input_grad``, which turns those sums into the input
gradient. Written as standardize, a multiply and an add, the same layer is three ops forward and
six backward, each a pass over memory.

The statistics are an input of ``batch_norm`` read as values: its backward accounts for how they
depend on x (they are x's own, as in training), and the gradient records recompute ``xhat`` and
``rstd`` from x with differentiable ops, so derivatives of every order are exact.

``batch_norm_eval`` normalises with given statistics (the running ones): a scale and a shift
per channel in one op, where the composite took ten ops and two passes over x.
"""

from __future__ import annotations

import math

from ..errors import ShapeError
from .abstract import ValueSpec, memory_cost
from .base import Op
from .norm import STANDARDIZE, STANDARDIZE_GRAD, _check_floating, _compute_dtype


def channel_axes(ndim: int) -> tuple:
    """Every axis of an (N, C, *) input but the channel axis 1."""
    return (0, *range(2, ndim))


def _per_channel(values, ndim: int):
    """(C,) values as (1, C, 1, ..., 1), to broadcast against an (N, C, *) input."""
    return values.reshape((1, -1) + (1,) * (ndim - 2))


def _normalized(xp, x, stats, eps):
    """(xhat, rstd as (1, C, 1...)) of x (N, C, *) with the per-channel ``stats`` (mean,
    biased variance), in the statistics' dtype."""
    work = x.astype(stats.dtype, copy=False)
    rstd = 1 / xp.sqrt(stats[1] + stats.dtype.type(eps))
    mean, rstd = _per_channel(stats[0], x.ndim), _per_channel(rstd, x.ndim)
    return (work - mean) * rstd, rstd


def _check_channels(name: str, x, stats) -> None:
    if x.ndim < 2 or tuple(stats.shape) != (2, x.shape[1]):
        raise ShapeError(
            f"[{name}] expects x (N, C, *) and statistics (2, C), got {tuple(x.shape)} and "
            f"{tuple(stats.shape)}",
            help="the statistics are batch_statistics(x): each channel's mean and variance",
        )


class BatchStatistics(Op):
    """The mean and the biased variance of each channel of x (N, C, *) -> (2, C): row 0 the
    means, row 1 the variances, over every axis but 1. Half-precision inputs give float32.

    Not differentiable: ``batch_norm``, which reads them, differentiates through them itself.
    """

    name = "batch_statistics"
    autocast = "float32"
    differentiable = False
    save_inputs = False

    def check(self, x):
        _check_floating(self.name, x)

    def forward(self, ctx, xp, x):
        axes = channel_axes(x.ndim)
        work = x.astype(_compute_dtype(x.dtype), copy=False)
        mean = work.mean(axis=axes)
        variance = xp.square(work - _per_channel(mean, x.ndim)).mean(axis=axes)
        return xp.stack([mean, variance])

    def infer(self, x):
        if x.ndim < 2:
            raise ShapeError(f"[{self.name}] expects x (N, C, *), got {x.shape}")
        return ValueSpec((2, x.shape[1]), _compute_dtype(x.dtype), x.device)

    def cost(self, x):
        # a sum, then a subtraction and a square-sum per element
        return memory_cost((x,), self.infer(x), 4)


class BatchNorm(Op):
    """``(x - mean) * rstd * weight + bias`` per channel, ``rstd = 1 / sqrt(var + eps)``.

    Inputs: x (N, C, *), stats (2, C) = ``batch_statistics(x)`` read as values, and optionally
    weight (C,) and then bias (C,) -> x's shape and dtype.
    """

    name = "batch_norm"
    autocast = "float32"
    save_inputs, save_output = True, False

    def check(self, x, stats, weight=None, bias=None, *, eps):
        _check_floating(self.name, x)
        _check_channels(self.name, x, stats)

    def forward(self, ctx, xp, x, stats, weight=None, bias=None, *, eps):
        out, _ = _normalized(xp, x, stats, eps)
        if weight is not None:
            out *= _per_channel(weight, x.ndim)
        if bias is not None:
            out += _per_channel(bias, x.ndim)
        return out.astype(x.dtype, copy=False)

    def infer(self, x, stats, weight=None, bias=None, *, eps):
        return x

    def cost(self, x, stats, weight=None, bias=None, *, eps):
        # a subtraction, a scaling and the affine map's multiply-add
        return memory_cost((x, stats, weight, bias), x, 4)

    def backward(self, ctx, grad):
        x, stats = ctx.inputs[0], ctx.inputs[1]
        weight = ctx.inputs[2] if len(ctx.inputs) > 2 else None
        eps = ctx.attrs["eps"]
        sums = BATCH_NORM_GRAD_SUMS(grad, x, stats, eps=eps)  # (2, C): sum(g * xhat), sum(g)
        grads = [None] * len(ctx.inputs)
        if x.requires_grad:
            params = () if weight is None else (weight,)
            grads[0] = BATCH_NORM_INPUT_GRAD(grad, x, stats, sums[0], sums[1], *params, eps=eps)
        if weight is not None and weight.requires_grad:
            grads[2] = sums[0]
        if len(ctx.inputs) > 3 and ctx.inputs[3].requires_grad:
            grads[3] = sums[1]
        return tuple(grads)


class BatchNormGradSums(Op):
    """The per-channel sums of batch normalisation's backward: ``sum(g * xhat)`` (the weight
    gradient) and ``sum(g)`` (the bias gradient) over every axis but 1 -> (2, C).

    Inputs: g and x (N, C, *), and the forward's statistics (2, C), read as values. The backward
    recomputes xhat from x, so that derivatives of every order see how it depends on x.
    No ONNX mapping: it belongs to training graphs, which are not exported.
    """

    name = "batch_norm_grad_sums"
    save_inputs = True

    def forward(self, ctx, xp, g, x, stats, *, eps):
        axes = channel_axes(x.ndim)
        xhat, _ = _normalized(xp, x, stats, eps)
        g = g.astype(stats.dtype, copy=False)
        return xp.stack([(g * xhat).sum(axis=axes), g.sum(axis=axes)])

    def infer(self, g, x, stats, *, eps):
        return stats

    def cost(self, g, x, stats, *, eps):
        # xhat's subtraction and scaling, a product and two sums
        _, read, written = memory_cost((g, x, stats), stats)
        return 5 * x.numel, read, written

    def backward(self, ctx, grad_of_result):
        g, x, stats = ctx.inputs
        eps, axes = ctx.attrs["eps"], channel_axes(x.ndim)
        xhat = STANDARDIZE(x, axes=axes, eps=eps)  # recomputed: its dependence on x counts
        rstd = _per_channel((stats[1] + eps).rsqrt(), x.ndim)
        weight_part = _per_channel(grad_of_result[0], x.ndim)
        grad_g = xhat * weight_part + _per_channel(grad_of_result[1], x.ndim)
        grad_x = STANDARDIZE_GRAD(g * weight_part, x, xhat, rstd, axes=axes, eps=eps)
        return grad_g, grad_x, None


class BatchNormInputGrad(Op):
    """The input gradient of batch normalisation in training:
    ``(g - sum_g / M - xhat * sum_gx / M) * rstd * weight``, M the values per channel.

    Inputs: g and x (N, C, *), the forward's statistics (2, C) read as values, the sums
    ``sum_gx = sum(g * xhat)`` and ``sum_g = sum(g)`` (C,) of ``batch_norm_grad_sums``, and
    optionally weight (C,) -> x's shape. The backward recomputes xhat and rstd from x.
    """

    name = "batch_norm_input_grad"
    save_inputs = True

    def forward(self, ctx, xp, g, x, stats, sum_gx, sum_g, weight=None, *, eps):
        count = math.prod(x.shape) // x.shape[1]
        ctx.count = count  # for the backward: M as this call saw it
        xhat, rstd = _normalized(xp, x, stats, eps)
        scale = rstd if weight is None else rstd * _per_channel(weight, x.ndim)
        out = g.astype(stats.dtype, copy=False) - _per_channel(sum_g / count, x.ndim)
        out -= xhat * _per_channel(sum_gx / count, x.ndim)
        out *= scale
        return out.astype(x.dtype, copy=False)

    def infer(self, g, x, stats, sum_gx, sum_g, weight=None, *, eps):
        return x

    def cost(self, g, x, stats, sum_gx, sum_g, weight=None, *, eps):
        # xhat, two multiply-adds and a scaling per element
        return memory_cost((g, x, stats, sum_gx, sum_g, weight), x, 6)

    def backward(self, ctx, grad_of_result):
        g, x, stats, sum_gx, sum_g = ctx.inputs[:5]
        weight = ctx.inputs[5] if len(ctx.inputs) > 5 else None
        eps, axes, ndim = ctx.attrs["eps"], channel_axes(x.ndim), x.ndim
        share = 1.0 / ctx.count  # 1 / M, as the forward saw it
        # result = rstd * w * (centred - xhat * projection), with xhat and rstd as functions of
        # x (d rstd / dx = -rstd^2 * xhat / M)
        xhat = STANDARDIZE(x, axes=axes, eps=eps)
        rstd = (x.var(axis=axes, correction=0, keepdims=True) + eps).rsqrt()
        rstd_value = _per_channel((stats[1] + eps).rsqrt(), ndim)  # STANDARDIZE_GRAD's cache
        centred = g - _per_channel(sum_g * share, ndim)
        projection = _per_channel(sum_gx * share, ndim)
        upstream = grad_of_result
        if weight is not None:
            upstream = upstream * _per_channel(weight, ndim)
        grad_g = upstream * rstd
        grad_sum_g = -grad_g.sum(axis=axes) * share
        grad_sum_gx = -(grad_g * xhat).sum(axis=axes) * share
        through_rstd = (upstream * (centred - xhat * projection)).mean(axis=axes, keepdims=True)
        through_xhat = STANDARDIZE_GRAD(upstream, x, xhat, rstd_value, axes=axes, eps=eps)
        grad_x = -(rstd * rstd) * xhat * through_rstd - projection * rstd * through_xhat
        grads = [grad_g, grad_x, None, grad_sum_gx, grad_sum_g]
        if weight is not None:
            plain = grad_of_result * rstd * (centred - xhat * projection)
            grads.append(plain.sum(axis=axes))
        return tuple(grads)


class BatchNormEval(Op):
    """Batch normalisation with given statistics (evaluation): ``(x - mean) * rstd * weight +
    bias`` per channel, ``rstd = 1 / sqrt(var + eps)``, in one op and one pass over x.

    Inputs: x (N, C, *), mean and var (C,) (the running statistics), and optionally weight (C,)
    and then bias (C,) -> x's shape and dtype. The statistics are constants of x here, so the
    backward is a per-channel scaling of the gradient (and sums for the other inputs).
    """

    name = "batch_norm_eval"
    autocast = "float32"
    save_inputs, save_output = True, False

    def check(self, x, mean, var, weight=None, bias=None, *, eps):
        _check_floating(self.name, x)
        if x.ndim < 2:
            raise ShapeError(
                f"[{self.name}] expects x (N, C, *), got {tuple(x.shape)}",
                help="add a batch dimension, e.g. x.reshape(1, -1)",
            )

    def forward(self, ctx, xp, x, mean, var, weight=None, bias=None, *, eps):
        dtype = _compute_dtype(x.dtype)
        scale = 1 / xp.sqrt(var.astype(dtype, copy=False) + dtype.type(eps))
        if weight is not None:
            scale = scale * weight
        out = x.astype(dtype, copy=False) - _per_channel(mean, x.ndim)
        out *= _per_channel(scale, x.ndim)
        if bias is not None:
            out += _per_channel(bias, x.ndim)
        return out.astype(x.dtype, copy=False)

    def infer(self, x, mean, var, weight=None, bias=None, *, eps):
        return x

    def cost(self, x, mean, var, weight=None, bias=None, *, eps):
        # a subtraction and a multiply-add per element
        return memory_cost((x, mean, var, weight, bias), x, 3)

    def backward(self, ctx, grad):
        x, mean, var = ctx.inputs[:3]
        weight = ctx.inputs[3] if len(ctx.inputs) > 3 else None
        eps, axes, ndim = ctx.attrs["eps"], channel_axes(x.ndim), x.ndim
        rstd = (var + eps).rsqrt()
        scale = rstd if weight is None else rstd * weight
        centred = x - _per_channel(mean, ndim)
        grads = [grad * _per_channel(scale, ndim) if x.requires_grad else None]
        grads.append(-(grad.sum(axis=axes) * scale) if mean.requires_grad else None)
        if var.requires_grad:  # d rstd / d var = -rstd^3 / 2
            spread = (grad * centred).sum(axis=axes) * (rstd * rstd * rstd * -0.5)
            grads.append(spread if weight is None else spread * weight)
        else:
            grads.append(None)
        if weight is not None:
            weighted = weight.requires_grad
            grads.append((grad * centred).sum(axis=axes) * rstd if weighted else None)
        if len(ctx.inputs) > 4:
            grads.append(grad.sum(axis=axes) if ctx.inputs[4].requires_grad else None)
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        eps = float(attrs["eps"])
        if len(inputs) == 5:
            x, mean, var, weight, bias = inputs
            emit.node("BatchNormalization", [x, weight, bias, mean, var], output, epsilon=eps)
            return
        x = inputs[0]
        positions = [0, *range(2, emit.rank(x))]

        def view(name):
            return emit.unsqueeze(name, positions)

        spread = emit.node("Sqrt", [emit.node("Add", [inputs[2], emit.scalar(eps, inputs[2])])])
        scale = emit.node("Reciprocal", [spread])
        if len(inputs) > 3:
            scale = emit.node("Mul", [scale, inputs[3]])
        centred = emit.node("Sub", [x, view(inputs[1])])
        emit.node("Mul", [centred, view(scale)], output)


BATCH_STATISTICS, BATCH_NORM, BATCH_NORM_EVAL = BatchStatistics(), BatchNorm(), BatchNormEval()
BATCH_NORM_GRAD_SUMS, BATCH_NORM_INPUT_GRAD = BatchNormGradSums(), BatchNormInputGrad()
