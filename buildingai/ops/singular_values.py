"""Singular values of matrices, the primitive under the spectral and nuclear matrix norms.

``svdvals``: (..., m, n) -> (..., k), k = min(m, n), largest first. Its gradient,
``U diag(g) V^T`` for the reduced SVD ``A = U diag(s) V^T``, is the record ``svdvals_backward``.
That record's own derivative (second derivatives of singular values) is not provided: its
backward raises, so a second derivative is never silently wrong.
"""

from __future__ import annotations

from ..errors import BuildingAIError, DTypeError, ShapeError
from .abstract import SymbolicSizeError, ValueSpec, prod
from .base import Op
from .families import symbolic_sizes
from .promotion import float_dtype


def _smaller_extent(m, n):
    """min(m, n) for ints, or a symbolic size both share; else SymbolicSizeError."""
    if isinstance(m, int) and isinstance(n, int):
        return min(m, n)
    if m == n:
        return m
    raise SymbolicSizeError(
        f"cannot tell which of the matrix sizes {m!r} and {n!r} is smaller",
        help="fix the last two sizes in the TensorSpec, or give both the same name",
    )


def _check_matrices(op: str, x) -> None:
    if x.ndim < 2:
        raise ShapeError(
            f"[{op}] needs matrices (..., m, n), got a tensor shaped {tuple(x.shape)}",
            help="reshape a vector into a matrix first, or use a vector norm",
        )
    if x.dtype.kind not in "f" or x.dtype.itemsize < 4:
        raise DTypeError(
            f"[{op}] computes in float32 or float64, got {x.dtype}",
            help="convert the input with .float() or .double() first",
        )


class SingularValues(Op):
    """The singular values of each matrix of a stack, in descending order.

    x: (..., m, n) -> (..., min(m, n)). The gradient of a singular value s_i is the outer
    product u_i v_i^T of its singular vectors (unique where the singular values are distinct).
    """

    name = "svdvals"
    autocast = "float32"

    def check(self, x):
        _check_matrices(self.name, x)

    def infer(self, x) -> ValueSpec:
        with symbolic_sizes(self.name):
            k = _smaller_extent(x.shape[-2], x.shape[-1])
        return ValueSpec((*x.shape[:-2], k), float_dtype(x.dtype), x.device)

    def cost(self, x) -> tuple:
        # a Golub-Kahan bidiagonalisation: about 4 m n^2 - 4 n^3 / 3 flops for m >= n
        out = self.infer(x)
        m, n = x.shape[-2], x.shape[-1]
        with symbolic_sizes(self.name):
            k = _smaller_extent(m, n)
            flops = prod(x.shape[:-2]) * (4 * (m + n) * k * k)
            return (flops, x.nbytes, out.nbytes)

    def forward(self, ctx, xp, x):
        return xp.linalg.svd(x, compute_uv=False)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (SVDVALS_BACKWARD(x, grad),)


class SingularValuesBackward(Op):
    """The gradient of ``svdvals``: ``U diag(grad) V^T`` from the reduced SVD of x.

    x: (..., m, n), grad: (..., k) -> (..., m, n).
    """

    name = "svdvals_backward"

    def infer(self, x, grad) -> ValueSpec:
        return x

    def cost(self, x, grad) -> tuple:
        flops, read, _ = SVDVALS.cost(x)
        return (flops + 2 * x.numel, read + grad.nbytes, x.nbytes)

    def forward(self, ctx, xp, x, grad):
        u, _, vh = xp.linalg.svd(x, full_matrices=False)
        return (u * grad[..., None, :]) @ vh

    def backward(self, ctx, grad):
        raise BuildingAIError(
            "[svdvals_backward] second derivatives of singular values (matrix 2-norms, nuclear "
            "norms, svdvals) are not available",
            help="take first derivatives only, or use the Frobenius norm ('fro'), whose second "
            "derivatives are",
        )


SVDVALS, SVDVALS_BACKWARD = SingularValues(), SingularValuesBackward()
