"""Shape primitives: ops that move or repeat elements without arithmetic."""

from __future__ import annotations

from ..errors import ShapeError
from .base import Op


class Reshape(Op):
    name, onnx = "reshape", "Reshape"
    save_inputs, view = False, True

    def check(self, x, *, shape):
        known = 1
        unknown = 0
        for extent in shape:
            if extent == -1:
                unknown += 1
            else:
                known *= extent
        total = x.size
        if (
            unknown > 1
            or (unknown == 0 and known != total)
            or (unknown == 1 and (known == 0 or total % known != 0))
        ):
            raise ShapeError(
                f"[reshape] cannot reshape {tuple(x.shape)} ({total} elements) to {tuple(shape)}",
                help="the product of the new shape must equal the element count; at most one "
                "dimension may be -1",
            )

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        return xp.reshape(x, shape)

    def backward(self, ctx, grad):
        return (grad.reshape(ctx.input_shape),)


class Expand(Op):
    """Broadcast to a larger shape (a read-only view: no memory is copied)."""

    name, onnx = "expand", "Expand"
    save_inputs, view = False, True

    def check(self, x, *, shape):
        if len(shape) < x.ndim or any(
            have != 1 and have != want for have, want in zip(x.shape[::-1], shape[::-1])
        ):
            raise ShapeError(
                f"[expand] cannot expand {tuple(x.shape)} to {tuple(shape)}",
                help="only dimensions of size 1 can grow; new dimensions go in front",
            )

    def forward(self, ctx, xp, x, *, shape):
        ctx.input_shape = x.shape
        return xp.broadcast_to(x, shape)

    def backward(self, ctx, grad):
        return (grad.sum_to(ctx.input_shape),)


class Permute(Op):
    name, onnx = "permute", "Transpose"
    save_inputs, view = False, True

    def check(self, x, *, axes):
        if sorted(axes) != list(range(x.ndim)):
            raise ShapeError(
                f"[permute] axes {tuple(axes)} are not a permutation of the {x.ndim} dimensions "
                f"of a tensor shaped {tuple(x.shape)}"
            )

    def forward(self, ctx, xp, x, *, axes):
        return xp.transpose(x, axes)

    def backward(self, ctx, grad):
        axes = ctx.attrs["axes"]
        inverse = [0] * len(axes)
        for position, axis in enumerate(axes):
            inverse[axis] = position
        return (grad.permute(tuple(inverse)),)


RESHAPE, EXPAND, PERMUTE = Reshape(), Expand(), Permute()
