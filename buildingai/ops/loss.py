"""Loss primitives: element-wise binary cross-entropy on probabilities, and cross-entropy on
logits with class-index targets fused into one op.

``binary_cross_entropy`` is one op rather than a composite because its PyTorch semantics cannot be
composed faithfully from log and clamp: the logarithms are clamped to >= -100 (so a probability of
exactly 0 or 1 gives a finite loss), and the gradient is ``(x - t) / max(x (1 - x), 1e-12)``,
finite even there, where the chain rule through a clamped log would give 0 or nan.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import ArgumentError
from .base import Op

LOG_FLOOR = -100.0  # PyTorch's lower bound on log(x) and log(1 - x)
GRAD_EPSILON = 1e-12  # PyTorch's lower bound on x (1 - x) in the gradient


class BinaryCrossEntropy(Op):
    """``-(t * max(log x, -100) + (1 - t) * max(log(1 - x), -100))``, element-wise.

    x (probabilities in [0, 1]) and t (targets in [0, 1]) have the same shape -> same shape.
    """

    name, onnx = "binary_cross_entropy", None  # an exporter writes Log/Max/Mul/Sub

    def check(self, x, t):
        if x.size and (x.min() < 0 or x.max() > 1):
            raise ArgumentError(
                f"[binary_cross_entropy] all elements of input should be between 0 and 1, got "
                f"values in [{float(x.min())}, {float(x.max())}] (input {tuple(x.shape)})",
                help="apply sigmoid first, or use binary_cross_entropy_with_logits on the raw "
                "scores (more accurate)",
            )

    def forward(self, ctx, xp, x, t):
        floor = x.dtype.type(LOG_FLOOR)
        with xp.errstate(divide="ignore"):  # log(0) = -inf is clamped just below
            log_x = xp.maximum(xp.log(x), floor)
            log_not_x = xp.maximum(xp.log1p(-x), floor)
        return (t - 1) * log_not_x - t * log_x

    def backward(self, ctx, grad):
        x, t = ctx.inputs
        grad_x = grad * (x - t) / (x * (1 - x)).clamp(min=GRAD_EPSILON)
        grad_t = None
        if isinstance(t, type(x)) and t.requires_grad:
            grad_t = grad * ((-x).log1p().clamp(min=LOG_FLOOR) - x.log().clamp(min=LOG_FLOOR))
        return grad_x, grad_t


BINARY_CROSS_ENTROPY = BinaryCrossEntropy()


class CrossEntropy(Op):
    """``log_softmax`` and the negative log-likelihood of the target classes in one op.

    x: logits (C,), (N, C) or (N, C, d1, ...) with the classes along ``axis``; target: class
    indices shaped like x without that axis (entries equal to ``ignore_index`` count for nothing);
    weight (optional, (C,), a constant): per-class weights. -> per-sample losses (``"none"``) or
    their sum, or their weighted mean (``"mean"``: divided by the summed weights of the counted
    targets, nan when there are none). Targets are validated by the caller. The gradient,
    ``(softmax(x) - one_hot(target)) * weight[target] / normalizer``, is the ``cross_entropy_grad``
    op, built from the softmax the forward kept.
    """

    name, onnx = "cross_entropy", None  # an exporter writes LogSoftmax + NegativeLogLikelihoodLoss

    def forward(self, ctx, xp, x, target, weight=None, *, axis, ignore_index, reduction):
        shifted = x - x.max(axis=axis, keepdims=True)
        probs = xp.exp(shifted)
        total = probs.sum(axis=axis, keepdims=True)
        probs /= total
        valid = target != ignore_index
        all_valid = bool(valid.all())
        safe = xp.expand_dims(target if all_valid else xp.where(valid, target, 0), axis)
        picked = _at_targets(xp, shifted, safe, axis) - xp.log(total)
        if weight is None and all_valid:
            # every sample counts once: the common case, without the masks below
            count = target.size
            losses = -picked.squeeze(axis)
            if reduction == "none":
                out, share = losses, 1.0
            elif reduction == "sum":
                out, share = losses.sum(), 1.0
            elif count:
                out, share = losses.sum() / x.dtype.type(count), 1.0 / count
            else:  # the mean of nothing
                out, share = x.dtype.type("nan"), 1.0
            scale = xp.full(target.shape, share, dtype=x.dtype)
            ctx.probs, ctx.index, ctx.scale = probs, safe, scale
            return xp.asarray(out, dtype=x.dtype)
        # the weight of each sample: 0 where ignored
        if weight is None:
            scale = valid.astype(x.dtype)
        else:
            scale = xp.where(valid, weight.astype(x.dtype, copy=False)[safe.squeeze(axis)], 0)
            scale = scale.astype(x.dtype, copy=False)
        losses = picked.squeeze(axis) * -scale
        if reduction == "none":
            out = losses
        else:
            out = losses.sum()
            if reduction == "mean":
                normalizer = scale.sum()
                with xp.errstate(invalid="ignore", divide="ignore"):  # nothing counted: nan
                    out = out / normalizer
                    # ignored samples get no gradient even then (as with the composite form)
                    scale = xp.where(valid, scale / normalizer, 0).astype(x.dtype, copy=False)
        ctx.probs, ctx.index, ctx.scale = probs, safe, scale
        return xp.asarray(out, dtype=x.dtype)

    def backward(self, ctx, grad):
        from ..autograd.tensor import Tensor

        x = ctx.inputs[0]
        grad_x = CROSS_ENTROPY_GRAD(
            grad,
            x,
            Tensor(ctx.probs),
            Tensor(ctx.scale),
            index=ctx.index,
            axis=ctx.attrs["axis"],
        )
        return (grad_x,) + (None,) * (len(ctx.inputs) - 1)


class CrossEntropyGrad(Op):
    """The gradient of ``cross_entropy``: ``(p - one_hot) * expand(grad * scale)`` along ``axis``.

    Inputs: grad (the loss's gradient, () or the target's shape), x (the logits), probs
    (softmax(x) kept by the forward, a constant) and scale (per-sample weight over the
    normalizer, a constant); ``index``: the target classes, x's shape with 1 along ``axis``. Linear
    in grad; the gradient in x goes through softmax written with Tensor ops, so derivatives of
    every order are exact.
    """

    name, onnx = "cross_entropy_grad", None

    def forward(self, ctx, xp, grad, x, probs, scale, *, index, axis):
        coefficient = xp.expand_dims(grad * scale, axis)  # x's shape with 1 along the axis
        out = probs * coefficient
        if out.ndim == 2 and axis == 1:  # (N, C): one fancy-indexed subtraction
            out[_row_numbers(xp, out.shape[0]), index[:, 0]] -= coefficient[:, 0]
            return out
        at_target = xp.take_along_axis(out, index, axis=axis)
        at_target -= coefficient
        xp.put_along_axis(out, index, at_target, axis=axis)
        return out

    def backward(self, ctx, grad_of_output):
        from ..autograd.tensor import Tensor

        grad, x, _, scale = ctx.inputs
        axis, index = ctx.attrs["axis"], ctx.attrs["index"]
        probs = x.softmax(axis=axis)
        grad_grad = grad_x = None
        if grad.requires_grad:
            # sum over classes of grad_of_output * (p - one_hot), times scale
            along = (grad_of_output * probs).sum(axis=axis) - grad_of_output.take_along_axis(
                Tensor(index), axis=axis
            ).squeeze(axis)
            grad_grad = along * scale
        if x.requires_grad:
            # the transposed Jacobian of softmax applied to v = grad_of_output * coefficient
            v = grad_of_output * (grad * scale).unsqueeze(axis)
            grad_x = probs * (v - (probs * v).sum(axis=axis, keepdims=True))
        return grad_grad, grad_x, None, None


CROSS_ENTROPY, CROSS_ENTROPY_GRAD = CrossEntropy(), CrossEntropyGrad()


def _at_targets(xp, array, index, axis: int):
    """``take_along_axis(array, index, axis)``; (N, C) along 1 as one fancy index (NumPy's
    take_along_axis builds its index grids in Python: about 10 us a call)."""
    if array.ndim == 2 and axis == 1:
        return array[_row_numbers(xp, array.shape[0]), index[:, 0]][:, None]
    return xp.take_along_axis(array, index, axis=axis)


def _row_numbers(xp, count: int):
    """0, 1, ..., count - 1 (cached for NumPy: the same few batch sizes recur every step)."""
    return _numpy_rows(count) if xp is np else xp.arange(count)


@functools.lru_cache(maxsize=16)
def _numpy_rows(count: int) -> np.ndarray:
    rows = np.arange(count)
    rows.flags.writeable = False
    return rows
