"""``layer_norm`` with its affine map as one op: ``standardize(x) * weight + bias``, and the two
ops its first-order backward is made of.

As a composite (``standardize``, a multiply, an add), a layer normalisation is three ops forward
and five backward (the standardize gradient, two products, two reductions), each with its own
dispatch, temporary and pass over memory. As one op the first-order backward is three: the input
gradient ``layer_norm_input_grad`` (the product with the weight and the standardize gradient in
one buffer), the weight gradient ``layer_norm_weight_grad`` (a column dot product of the upstream
gradient with the saved ``xhat``, no product temporary) and the bias gradient, a column ``sum``.
They run through dispatch like every op, so tracers and profilers see them.

Derivatives of higher order (``create_graph=True``) go through the composite's own rules, which
are written with differentiable Tensor ops, so they stay exact; the two gradient ops are therefore
never recorded and have no backward of their own.
"""

from __future__ import annotations

import functools

import numpy as np

from ..accel.kernels import compiled
from ..accel.kernels.compiled import compiled_twin
from ..accel.kernels.row_reduce import column_dot_into
from ..accel.kernels.split import split_rows, trailing_rows
from ..errors import ShapeError
from .abstract import ValueSpec, broadcast_shapes, memory_cost
from .base import Op
from .norm import (
    STANDARDIZE,
    STANDARDIZE_GRAD,
    _check_floating,
    _standardize_grad_rows,
    _standardize_rows,
)
from .reduce import SUM


def _leading_axes(ndim: int, axes) -> tuple:
    """The axes that are not normalised: x's first ``ndim - len(axes)``."""
    return tuple(range(ndim - len(axes)))


class LayerNorm(Op):
    """``xhat * weight + bias`` with ``xhat = standardize(x)`` over the trailing ``axes``.

    Inputs: x (*, *normalized), weight (*normalized,) and optionally bias (*normalized,) ->
    x's shape. Saves ``xhat`` and the reciprocal standard deviation ``rstd`` (x's leading shape
    with kept dimensions) for the first-order backward.
    """

    name = "layer_norm"
    autocast = "float32"
    save_inputs, save_output = True, False

    def check(self, x, weight, bias=None, *, axes, eps):
        _check_floating(self.name, x)

    def forward(self, ctx, xp, x, weight, bias=None, *, axes, eps):
        normalized = x.shape[x.ndim - len(axes) :]
        if _float32_rows(x, weight, bias, normalized) and x.size:
            xhat, out = xp.empty_like(x), xp.empty_like(x)
            rstd = xp.empty(x.shape[: x.ndim - len(axes)] + (1,) * len(axes), np.float32)
            rows = trailing_rows(axes, x, xhat, out, rstd)
            if rows is not None:  # the standardize and the affine map in one pass over each row
                kernel = functools.partial(
                    _layer_norm_rows,
                    weight=weight.reshape(-1),
                    bias=None if bias is None else bias.reshape(-1),
                    eps=eps,
                )
                split_rows(xp, kernel, *rows)
                ctx.xhat, ctx.rstd = xhat, rstd
                return out
        xhat = STANDARDIZE.forward(ctx, xp, x, axes=axes, eps=eps)  # sets ctx.rstd
        ctx.xhat = xhat
        out = xp.multiply(xhat, weight)
        if bias is not None:
            out += bias
        return out

    def infer(self, x, weight, bias=None, *, axes, eps):
        shape = broadcast_shapes(x.shape, weight.shape)
        if shape != tuple(x.shape):
            raise ShapeError(
                f"[layer_norm] weight {weight.shape} does not fit input {x.shape}",
                help="weight and bias have the normalized shape: x's trailing dimensions",
            )
        return x.with_dtype(np.result_type(x.dtype, weight.dtype))

    def cost(self, x, weight, bias=None, *, axes, eps):
        # the standardize (about 6 per element: sum, subtract, square-sum, scale, ...) and the
        # affine map (a multiply and an add)
        return memory_cost((x, weight, bias), self.infer(x, weight, bias, axes=axes, eps=eps), 8)

    def backward(self, ctx, grad):
        if ctx.create_graph:  # differentiable rules, for higher derivatives
            return self._composite_backward(ctx, grad)
        x, weight = ctx.inputs[0], ctx.inputs[1]
        axes = ctx.attrs["axes"]
        xhat = ctx.tensor(ctx.xhat)
        grad_x = grad_w = grad_b = None
        if x.requires_grad:
            rstd = ctx.tensor(ctx.rstd)
            grad_x = LAYER_NORM_INPUT_GRAD(grad, weight, xhat, rstd, axes=axes)
        if weight.requires_grad:
            grad_w = LAYER_NORM_WEIGHT_GRAD(grad, xhat, axes=axes)
        if len(ctx.inputs) == 2:
            return grad_x, grad_w
        if ctx.inputs[2].requires_grad:
            leading = _leading_axes(x.ndim, axes)
            grad_b = SUM(grad, axes=leading, keepdims=False) if leading else grad
        return grad_x, grad_w, grad_b

    def _composite_backward(self, ctx, grad):
        """What ``standardize(x) * weight + bias`` would back-propagate, recorded."""
        x, weight = ctx.inputs[0], ctx.inputs[1]
        axes, eps = ctx.attrs["axes"], ctx.attrs["eps"]
        leading = _leading_axes(x.ndim, axes)
        xhat = STANDARDIZE(x, axes=axes, eps=eps)  # recomputed, so its dependence on x counts
        grad_x = grad_w = grad_b = None
        if x.requires_grad:
            rstd = ctx.tensor(ctx.rstd)
            grad_x = STANDARDIZE_GRAD(grad * weight, x, xhat, rstd, axes=axes, eps=eps)
        if weight.requires_grad:
            grad_w = (grad * xhat).sum(axis=leading) if leading else grad * xhat
        grads = [grad_x, grad_w]
        if len(ctx.inputs) > 2:
            if ctx.inputs[2].requires_grad:
                grad_b = grad.sum(axis=leading) if leading else grad
            grads.append(grad_b)
        return tuple(grads)

    def to_onnx(self, emit, inputs, output, attrs):
        axes = attrs["axes"]
        if emit.opset >= 17:
            emit.node(
                "LayerNormalization",
                list(inputs),
                output,
                axis=-len(axes),
                epsilon=float(attrs["eps"]),
            )
            return
        xhat = emit.fresh("xhat")
        STANDARDIZE.to_onnx(emit, inputs[:1], xhat, attrs)
        scaled = emit.node("Mul", [xhat, inputs[1]], None if len(inputs) > 2 else output)
        if len(inputs) > 2:
            emit.node("Add", [scaled, inputs[2]], output)


class LayerNormInputGrad(Op):
    """The input gradient of ``layer_norm``: ``standardize_grad(grad * weight)`` over ``axes``,
    ``rstd * (gw - mean(gw) - xhat * mean(gw * xhat))`` with ``gw = grad * weight``.

    grad and xhat (the saved standardized input): x's shape; weight: (*normalized,); rstd: x's
    leading shape with kept dimensions -> x's shape and xhat's dtype. The product and the
    standardize gradient are computed in one buffer, rows split across threads.

    Not differentiable: ``layer_norm`` calls it only when no graph of its backward is recorded
    (higher derivatives take the composite rules). No ONNX mapping: it belongs to training
    graphs, which are not exported.
    """

    name = "layer_norm_input_grad"
    differentiable = False

    def forward(self, ctx, xp, grad, weight, xhat, rstd, *, axes):
        if grad.dtype == xhat.dtype == rstd.dtype == weight.dtype and grad.shape == xhat.shape:
            if not grad.flags.c_contiguous:
                grad = xp.ascontiguousarray(grad)  # e.g. the broadcast gradient of a mean
            if _float32_rows(grad, weight, None, grad.shape[grad.ndim - len(axes) :]):
                out = xp.empty_like(grad)
                rows = trailing_rows(axes, grad, xhat, rstd, out)
                if rows is not None:  # the product and the gradient in one pass over each row
                    kernel = functools.partial(
                        _layer_norm_input_grad_rows, weight=weight.reshape(-1)
                    )
                    split_rows(xp, kernel, *rows)
                    return out
            rows = trailing_rows(axes, grad, xhat, rstd)
            if rows is not None:
                grad_rows, xhat_rows, rstd_rows = rows
                grad_xhat = xp.multiply(grad_rows, weight.reshape(-1))
                split_rows(xp, _in_place_standardize_grad, grad_xhat, xhat_rows, rstd_rows)
                return grad_xhat.reshape(xhat.shape)
        # any other layout, dtype mix or device: standardize's own gradient of grad * weight
        return STANDARDIZE_GRAD.forward(None, xp, grad * weight, xhat, xhat, rstd, axes=axes, eps=0)

    def infer(self, grad, weight, xhat, rstd, *, axes):
        return xhat

    def cost(self, grad, weight, xhat, rstd, *, axes):
        # a product with the weight, two row sums (of g and g * xhat) and the combination
        return memory_cost((grad, weight, xhat, rstd), xhat, 7)


class LayerNormWeightGrad(Op):
    """The weight gradient of ``layer_norm``: ``sum(grad * xhat)`` over the leading axes.

    grad, xhat: x's shape -> (*normalized,) (the shape of the trailing ``axes``). Column dot
    products, with no (rows, features) product temporary where the layout allows.

    Not differentiable and not exported, for the reasons ``layer_norm_input_grad`` gives.
    """

    name = "layer_norm_weight_grad"
    differentiable = False

    def forward(self, ctx, xp, grad, xhat, *, axes):
        # column dot products for NumPy's float32/float64 (its einsum rejects bfloat16)
        if (
            xp is np
            and grad.dtype == xhat.dtype
            and grad.dtype.kind == "f"
            and grad.shape == xhat.shape
        ):
            if not grad.flags.c_contiguous:
                grad = np.ascontiguousarray(grad)
            rows = trailing_rows(axes, grad, xhat)
            if rows is not None:
                out = np.empty(rows[0].shape[1], grad.dtype)
                compiled.call(np, column_dot_into, [*rows, out])
                return out.reshape(xhat.shape[xhat.ndim - len(axes) :])
        leading = _leading_axes(xhat.ndim, axes)
        return xp.multiply(grad, xhat).sum(axis=leading)

    def infer(self, grad, xhat, *, axes):
        shape = broadcast_shapes(grad.shape, xhat.shape)
        normalized = shape[len(shape) - len(axes) :]
        return ValueSpec(normalized, np.result_type(grad.dtype, xhat.dtype), xhat.device)

    def cost(self, grad, xhat, *, axes):
        flops = 2 * xhat.numel  # a multiply-add per element
        _, read, written = memory_cost((grad, xhat), self.infer(grad, xhat, axes=axes))
        return flops, read, written


def _float32_rows(x, weight, bias, normalized) -> bool:
    """Whether x, weight and bias (or None) are float32 arrays of one kind (NumPy, or CuPy for
    the CUDA twins), weight and bias contiguous and of the ``normalized`` shape: the layout of
    the fused row kernels below."""
    params = (weight,) if bias is None else (weight, bias)
    return all(
        type(a) is type(x) and a.dtype == np.float32 and a.flags.c_contiguous for a in (x, *params)
    ) and all(tuple(a.shape) == tuple(normalized) for a in params)


@compiled_twin("rows.layer_norm_rows", params=("weight", "bias", "eps"))
def _layer_norm_rows(xp, x, xhat, out, rstd, *, weight, bias, eps) -> None:
    """Rows of x (rows, n) standardized into xhat (rstd (rows, 1): 1 / sqrt(var + eps)), and
    ``xhat * weight + bias`` into out; weight and bias (or None) are (n,)."""
    _standardize_rows(xp, x, xhat, rstd, eps=eps)
    xp.multiply(xhat, weight, out=out)
    if bias is not None:
        out += bias


@compiled_twin("rows.layer_norm_input_grad_rows", params=("weight",))
def _layer_norm_input_grad_rows(xp, grad, xhat, rstd, out, *, weight) -> None:
    """The standardize gradient of ``grad * weight`` for rows (rows, n), weight (n,), into out."""
    xp.multiply(grad, weight, out=out)
    _standardize_grad_rows(xp, out, xhat, rstd, out)


def _in_place_standardize_grad(xp, grad_xhat, xhat, rstd) -> None:
    """The standardize gradient of rows of ``grad_xhat``, written over it."""
    _standardize_grad_rows(xp, grad_xhat, xhat, rstd, grad_xhat)


LAYER_NORM = LayerNorm()
LAYER_NORM_INPUT_GRAD, LAYER_NORM_WEIGHT_GRAD = LayerNormInputGrad(), LayerNormWeightGrad()
