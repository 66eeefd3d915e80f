"""Reductions over axes. Attributes are already normalised by the public functions: ``axes`` is
None (all axes) or a tuple of non-negative ints."""

from __future__ import annotations

from ..errors import ShapeError
from .base import Op


def kept_shape(shape: tuple, axes) -> tuple:
    """The shape a reduction over ``axes`` has with keepdims=True."""
    if axes is None:
        return (1,) * len(shape)
    return tuple(1 if axis in axes else extent for axis, extent in enumerate(shape))


class Sum(Op):
    name, onnx = "sum", "ReduceSum"
    save_inputs = False

    def forward(self, ctx, xp, x, *, axes, keepdims):
        ctx.input_shape = x.shape
        return xp.sum(x, axis=axes, keepdims=keepdims)

    def backward(self, ctx, grad):
        if not ctx.attrs["keepdims"]:
            grad = grad.reshape(kept_shape(ctx.input_shape, ctx.attrs["axes"]))
        return (grad.expand(ctx.input_shape),)


class SumTo(Op):
    """Sum a broadcast array back to ``shape``: the adjoint of ``expand``."""

    name, onnx = "sum_to", "ReduceSum"
    save_inputs = False

    def check(self, x, *, shape):
        if len(shape) > x.ndim or any(
            want != 1 and want != have for have, want in zip(x.shape[::-1], shape[::-1])
        ):
            raise ShapeError(f"[sum_to] cannot sum {tuple(x.shape)} down to {tuple(shape)}")

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        lead = x.ndim - len(shape)
        axes = tuple(range(lead)) + tuple(
            lead + axis
            for axis, want in enumerate(shape)
            if want == 1 and x.shape[lead + axis] != 1
        )
        out = xp.sum(x, axis=axes, keepdims=True) if axes else x
        return out.reshape(shape)

    def backward(self, ctx, grad):
        return (grad.expand(ctx.input_shape),)


SUM, SUM_TO = Sum(), SumTo()
