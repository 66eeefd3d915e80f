"""Linear algebra primitives."""

from __future__ import annotations

from ..errors import ShapeError
from .base import Op


class MatMul(Op):
    """Matrix product of two arrays of rank >= 2, with batch dimensions broadcast.

    (The public ``matmul`` turns 1-D operands into matrices first, as NumPy does.)
    """

    name, onnx = "matmul", "MatMul"

    def check(self, a, b):
        if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
            raise ShapeError(
                f"[matmul] cannot multiply {tuple(a.shape)} by {tuple(b.shape)}: inner dimensions "
                f"{a.shape[-1]} != {b.shape[-2]}",
                help="the last dimension of the left operand must equal the second-to-last of the "
                "right one; transpose an operand (x.T or x.swapaxes(-1, -2)) if needed",
            )

    def forward(self, ctx, xp, a, b):
        return xp.matmul(a, b)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_a = grad @ b.swapaxes(-1, -2) if a.requires_grad else None
        grad_b = a.swapaxes(-1, -2) @ grad if b.requires_grad else None
        return grad_a, grad_b


MATMUL = MatMul()
