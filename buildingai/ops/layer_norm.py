"""``layer_norm`` with its affine map as one op: ``standardize(x) * weight + bias``, and the
gradient records its backward is made of.

As a composite (``standardize``, a multiply, an add), a layer normalisation is three ops forward
and five backward (the standardize gradient, two products, two reductions), each with its own
dispatch, temporary and pass over memory. As one op its backward is two: the input gradient
``layer_norm_input_grad`` (the product with the weight and the standardize gradient in one op)
and the parameters' gradients ``layer_norm_weight_grad`` (``sum(grad * xhat)`` over the leading
axes, and with a bias ``sum(grad)`` in the same pass). They run through dispatch like every op,
so tracers and profilers see them, and each has a backward of its own written with Tensor ops:
first derivatives and derivatives of every higher order take the same rules.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .abstract import ValueSpec, broadcast_shapes, memory_cost
from .base import Op
from .norm import STANDARDIZE, STANDARDIZE_GRAD, _check_floating, standardize_grad_vjp
from .reduce import SUM


def _leading_axes(ndim: int, axes) -> tuple:
    """The axes that are not normalised: x's first ``ndim - len(axes)``."""
    return tuple(range(ndim - len(axes)))


def _sum_leading(t, axes):
    """A Tensor summed over the axes that are not normalised (the parameters' shape)."""
    leading = _leading_axes(t.ndim, axes)
    return SUM(t, axes=leading, keepdims=False) if leading else t


class LayerNorm(Op):
    """``xhat * weight + bias`` with ``xhat = standardize(x)`` over the trailing ``axes``.

    Inputs: x (*, *normalized), weight (*normalized,) and optionally bias (*normalized,) ->
    x's shape. Saves ``xhat`` and the reciprocal standard deviation ``rstd`` (x's leading shape
    with kept dimensions) for the backward.
    """

    name = "layer_norm"
    autocast = "float32"
    save_inputs, save_output = True, False

    def check(self, x, weight, bias=None, *, axes, eps):
        _check_floating(self.name, x)

    def forward(self, ctx, xp, x, weight, bias=None, *, axes, eps):
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
        x, weight = ctx.inputs[0], ctx.inputs[1]
        attrs = ctx.attrs
        # the forward's xhat and rstd, as values: the gradient records recompute them from x
        # where their own backward needs how they depend on x
        xhat, rstd = ctx.tensor(ctx.xhat), ctx.tensor(ctx.rstd)
        grad_x = grad_w = grad_b = None
        if x.requires_grad:
            grad_x = LAYER_NORM_INPUT_GRAD(grad, x, weight, xhat, rstd, **attrs)
        with_bias = len(ctx.inputs) == 3 and ctx.inputs[2].requires_grad
        if weight.requires_grad and with_bias:  # both sums in one pass over grad
            sums = LAYER_NORM_WEIGHT_GRAD(grad, x, xhat, rstd, **attrs, with_bias=True)
            grad_w, grad_b = sums[0], sums[1]
        elif weight.requires_grad:
            grad_w = LAYER_NORM_WEIGHT_GRAD(grad, x, xhat, rstd, **attrs)
        elif with_bias:
            grad_b = _sum_leading(grad, attrs["axes"])
        if len(ctx.inputs) == 2:
            return grad_x, grad_w
        return grad_x, grad_w, grad_b

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

    Inputs: grad and x (x's shape), weight (*normalized,), and the forward's xhat (x's shape)
    and rstd (x's leading shape with kept dimensions), read as values -> x's shape and xhat's
    dtype. The backward recomputes xhat from x, so that derivatives of every order see how it
    depends on x. No ONNX mapping: it belongs to training graphs, which are not exported.
    """

    name = "layer_norm_input_grad"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, grad, x, weight, xhat, rstd, *, axes, eps):
        return STANDARDIZE_GRAD.forward(ctx, xp, grad * weight, x, xhat, rstd, axes=axes, eps=eps)

    def infer(self, grad, x, weight, xhat, rstd, *, axes, eps):
        return xhat

    def cost(self, grad, x, weight, xhat, rstd, *, axes, eps):
        # a product with the weight, two row sums (of g and g * xhat) and the combination
        return memory_cost((grad, weight, xhat, rstd), xhat, 7)  # x is not read

    def backward(self, ctx, grad_of_result):
        grad, x, weight, _, rstd = ctx.inputs
        axes, eps = ctx.attrs["axes"], ctx.attrs["eps"]
        xhat = STANDARDIZE(x, axes=axes, eps=eps)  # recomputed: its dependence on x counts
        weighted = grad * weight
        # standardize_grad is linear in its first input, with a symmetric Jacobian there
        grad_weighted, grad_x, grad_xhat = standardize_grad_vjp(
            grad_of_result, weighted, x, xhat, rstd, ctx.output, axes=axes, eps=eps
        )
        grad_x = grad_x + STANDARDIZE_GRAD(grad_xhat, x, xhat, rstd, axes=axes, eps=eps)
        grad_grad = grad_weighted * weight
        grad_weight = _sum_leading(grad_weighted * grad, axes)
        return grad_grad, grad_x, grad_weight, None, None


class LayerNormWeightGrad(Op):
    """The weight gradient of ``layer_norm``: ``sum(grad * xhat)`` over the leading axes; with
    ``with_bias`` also the bias gradient ``sum(grad)``, the two stacked: (2, *normalized).

    Inputs: grad and x (x's shape), and the forward's xhat (x's shape) and rstd, read as
    values -> (*normalized,) (the shape of the trailing ``axes``). The backward recomputes xhat
    from x, as ``layer_norm_input_grad``'s does. Not exported, for the reason it gives.
    """

    name = "layer_norm_weight_grad"
    save_inputs = True

    def forward(self, ctx, xp, grad, x, xhat, rstd, *, axes, eps, with_bias=False):
        leading = _leading_axes(xhat.ndim, axes)
        weight_grad = xp.multiply(grad, xhat).sum(axis=leading)
        if not with_bias:
            return weight_grad
        return xp.stack([weight_grad, grad.sum(axis=leading).astype(weight_grad.dtype)])

    def infer(self, grad, x, xhat, rstd, *, axes, eps, with_bias=False):
        shape = broadcast_shapes(grad.shape, xhat.shape)
        normalized = shape[len(shape) - len(axes) :]
        if with_bias:
            normalized = (2, *normalized)
        return ValueSpec(normalized, np.result_type(grad.dtype, xhat.dtype), xhat.device)

    def cost(self, grad, x, xhat, rstd, *, axes, eps, with_bias=False):
        # a multiply-add per element, and an add for the bias's sum
        flops = (3 if with_bias else 2) * xhat.numel
        out = self.infer(grad, x, xhat, rstd, axes=axes, eps=eps, with_bias=with_bias)
        _, read, written = memory_cost((grad, xhat), out)
        return flops, read, written

    def backward(self, ctx, grad_of_result):
        grad, x, _, rstd = ctx.inputs
        axes, eps = ctx.attrs["axes"], ctx.attrs["eps"]
        xhat = STANDARDIZE(x, axes=axes, eps=eps)  # recomputed: its dependence on x counts
        of_weight = grad_of_result
        if ctx.attrs.get("with_bias", False):
            of_weight = grad_of_result[0]
        grad_grad = of_weight * xhat
        if ctx.attrs.get("with_bias", False):
            grad_grad = grad_grad + grad_of_result[1]
        # through xhat: standardize's own gradient of grad * of_weight
        grad_x = STANDARDIZE_GRAD(grad * of_weight, x, xhat, rstd, axes=axes, eps=eps)
        return grad_grad, grad_x, None, None


LAYER_NORM = LayerNorm()
LAYER_NORM_INPUT_GRAD, LAYER_NORM_WEIGHT_GRAD = LayerNormInputGrad(), LayerNormWeightGrad()
