"""Normalisation primitive: ``standardize`` (zero mean, unit variance over some axes) and its
adjoint ``standardize_grad``.

Layer, group and batch normalisation all reduce to ``(x - mean) / sqrt(var + eps)`` over some
axes followed by a per-feature affine map. Written with mean/var/sub/mul/rsqrt the normalisation
costs about eight ops forward and twice as many backward; as one primitive it is one dispatch
forward and one backward. Layer normalisation with an affine map is its own op
(``ops/layer_norm.py``) built on these; batch and group normalisation keep the composite
``xhat * w + b``.

The backward rule calls ``standardize_grad``, whose own backward is written with differentiable
Tensor ops (and ``standardize_grad`` again), so derivatives of any order are exact.
"""

from __future__ import annotations

import numpy as np

from ..errors import DTypeError
from .abstract import memory_cost
from .base import Op
from .reduce import kept_shape


def _check_floating(name: str, x) -> None:
    if x.dtype.kind not in "fV":  # "V": ml_dtypes' bfloat16
        raise DTypeError(
            f"[{name}] expects a floating-point tensor, got {x.dtype} of shape {tuple(x.shape)}",
            help="convert first, e.g. x.astype('float32')",
        )


def _compute_dtype(dtype):
    """Half-precision inputs are normalised in float32: their sums lose too many digits."""
    return np.dtype("float32") if dtype.itemsize < 4 else dtype


class Standardize(Op):
    """``xhat = (x - mean(x)) / sqrt(var(x) + eps)`` over ``axes`` (biased variance).

    x: any shape -> same shape. Saves its output ``xhat`` (a Tensor, so second derivatives see
    how it depends on x) and the reciprocal standard deviation ``rstd`` (reduced shape, kept
    dimensions) as a cache for the first-order backward.
    """

    name = "standardize"
    autocast = "float32"
    save_inputs, save_output = True, True

    def check(self, x, *, axes, eps):
        _check_floating(self.name, x)

    def forward(self, ctx, xp, x, *, axes, eps):
        work = x.astype(_compute_dtype(x.dtype), copy=False)
        if x.size == 0:
            ctx.rstd = xp.empty(kept_shape(x.shape, axes), dtype=work.dtype)
            return xp.empty_like(x)
        centered = work - work.mean(axis=axes, keepdims=True)
        variance = xp.square(centered).mean(axis=axes, keepdims=True)
        variance += work.dtype.type(eps)
        rstd = xp.sqrt(variance, out=variance)
        xp.reciprocal(rstd, out=rstd)
        centered *= rstd
        ctx.rstd = rstd
        return centered.astype(x.dtype, copy=False)

    def infer(self, x, *, axes, eps):
        return x

    def cost(self, x, *, axes, eps):
        # a sum, a subtraction, a squared sum, the reciprocal square root's share and a scaling
        return memory_cost((x,), x, 5)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        rstd = ctx.tensor(ctx.rstd)  # a constant: standardize_grad's backward recomputes it
        return (STANDARDIZE_GRAD(grad, x, ctx.output, rstd, **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        # (x - mean) / sqrt(var + eps) over the axes, with the biased variance, as forward computes
        x, axes = inputs[0], attrs["axes"]
        centered = emit.node("Sub", [x, emit.reduce("ReduceMean", x, axes, True)])
        variance = emit.reduce("ReduceMean", emit.node("Mul", [centered, centered]), axes, True)
        spread = emit.node("Sqrt", [emit.node("Add", [variance, emit.scalar(attrs["eps"], x)])])
        emit.node("Div", [centered, spread], output)


class StandardizeGrad(Op):
    """The gradient of ``standardize``: ``dx = rstd * (g - mean(g) - xhat * mean(g * xhat))``.

    Inputs: g (upstream gradient), x, xhat (the output of ``standardize``, a Tensor), rstd (its
    cached reciprocal standard deviation, used as a constant). The Jacobian of ``dx`` in ``g``
    is symmetric, so the gradient with respect to ``g`` is this op again; the rest is written
    with Tensor ops, with ``rstd`` recomputed from ``x`` so that its dependence on ``x`` counts.
    """

    name = "standardize_grad"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, g, x, xhat, rstd, *, axes, eps):
        if g.size == 0:
            return xp.zeros_like(x)
        dtype = _compute_dtype(g.dtype)
        g = g.astype(dtype, copy=False)
        xhat = xhat.astype(dtype, copy=False)
        projection = (g * xhat).mean(axis=axes, keepdims=True)
        out = g - g.mean(axis=axes, keepdims=True)
        out -= xhat * projection
        out *= rstd.astype(dtype, copy=False)
        return out.astype(x.dtype, copy=False)

    def infer(self, g, x, xhat, rstd, *, axes, eps):
        return x

    def cost(self, g, x, xhat, rstd, *, axes, eps):
        # two row sums (of g and g * xhat), a subtraction, a product and a scaling
        return memory_cost((g, xhat, rstd), x, 6)  # x itself is not read, only its dtype

    def backward(self, ctx, grad):
        g, x, xhat, rstd = ctx.inputs
        axes, eps = ctx.attrs["axes"], ctx.attrs["eps"]
        grads = standardize_grad_vjp(grad, g, x, xhat, rstd, ctx.output, axes=axes, eps=eps)
        return (*grads, None)


def standardize_grad_vjp(grad, g, x, xhat, rstd, dx, *, axes, eps) -> tuple:
    """The gradients of ``dx = standardize_grad(g, x, xhat, rstd)`` given ``grad`` (dx's
    upstream gradient): in g, in x through rstd, and in xhat, as Tensors that are
    differentiable again. ``layer_norm``'s gradient records chain the last into x themselves."""
    # rstd as a function of x: d rstd / dx = -rstd^2 * xhat / N
    r = (x.var(axis=axes, correction=0, keepdims=True) + eps).rsqrt()
    grad_g = STANDARDIZE_GRAD(grad, x, xhat, rstd, axes=axes, eps=eps)
    grad_xhat = -r * (
        grad * (g * xhat).mean(axis=axes, keepdims=True)
        + g * (grad * xhat).mean(axis=axes, keepdims=True)
    )
    grad_x = -r * (grad * dx).mean(axis=axes, keepdims=True) * xhat
    return grad_g, grad_x, grad_xhat


STANDARDIZE, STANDARDIZE_GRAD = Standardize(), StandardizeGrad()
