"""Linear algebra: matmul (``@``)."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..errors import ShapeError
from ..ops import linalg as ops


def matmul(a, b):
    """Matrix product with NumPy's rules: 1-D operands are treated as a row (left) or a column
    (right) vector and that dimension is removed again; batch dimensions broadcast.

    a: (..., n, k), b: (..., k, m) -> (..., n, m)
    """
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"[matmul] operands must have at least one dimension, got {tuple(a.shape)} and "
            f"{tuple(b.shape)}",
            help="use * to multiply by a scalar",
        )
    left_vector, right_vector = a.ndim == 1, b.ndim == 1
    if left_vector:
        a = a.reshape(1, a.shape[0])
    if right_vector:
        b = b.reshape(b.shape[0], 1)
    out = apply(ops.MATMUL, a, b)
    if left_vector and right_vector:
        return out.reshape(())
    if left_vector:
        return out.reshape(out.shape[:-2] + out.shape[-1:])
    if right_vector:
        return out.reshape(out.shape[:-1])
    return out


__all__ = ["matmul"]

TENSOR_METHODS = {
    "matmul": matmul, "__matmul__": matmul, "__rmatmul__": lambda self, other: matmul(other, self),
}  # fmt: skip
