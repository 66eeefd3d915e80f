"""Singular values of matrices, the primitive under the spectral and nuclear matrix norms.

``svdvals``: (..., m, n) -> (..., k), k = min(m, n), largest first. With the reduced SVD
``A = U diag(s) V^T``, four records close under differentiation up to second order:

- ``svdvals(A)``, whose gradient for an upstream g is
- ``svdvals_backward(A, g) = U diag(g) V^T``, whose gradients for an upstream H are
  ``svdvals_hessian(A, g, H)`` (in A) and
- ``svd_project(A, H) = diag(U^T H V)`` (in g: the change of the singular values along H),
  whose gradients are ``svdvals_hessian(A, k, H)`` and ``svdvals_backward(A, k)``.

``svdvals_hessian`` is the derivative of ``<H, U diag(g) V^T>`` in A (PyTorch's SVD backward
rule with gU = H V diag(g), gV = H^T U diag(g)); it assumes distinct singular values, as
PyTorch does. Its own backward (third derivatives) raises, so none is ever silently wrong.
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
        x, upstream = ctx.inputs
        return SVDVALS_HESSIAN(x, upstream, grad), SVD_PROJECT(x, grad)


class SvdProject(Op):
    """``diag(U^T H V)``: how the singular values of x change along the direction H.

    x: (..., m, n), H: (..., m, n) -> (..., k).
    """

    name = "svd_project"

    def infer(self, x, direction) -> ValueSpec:
        return SVDVALS.infer(x)

    def cost(self, x, direction) -> tuple:
        flops, read, written = SVDVALS.cost(x)
        return (flops + 2 * x.numel * x.shape[-1], read + direction.nbytes, written)

    def forward(self, ctx, xp, x, direction):
        u, _, vh = xp.linalg.svd(x, full_matrices=False)
        return (u * (direction @ xp.swapaxes(vh, -1, -2))).sum(axis=-2)

    def backward(self, ctx, grad):
        x, direction = ctx.inputs
        return SVDVALS_HESSIAN(x, grad, direction), SVDVALS_BACKWARD(x, grad)


def _svd_backward(xp, u, s, vh, grad_u, grad_vh):
    """PyTorch's SVD backward rule (real, reduced SVD, distinct singular values, no gradient
    for s): the gradient in A of a function of U and V^T with gradients grad_u, grad_vh."""
    m, n = u.shape[-2], vh.shape[-1]

    def transposed(a):
        return xp.swapaxes(a, -1, -2)

    def skew(a):
        return a - transposed(a)

    squares = s * s
    gaps = squares[..., None, :] - squares[..., :, None]  # s_j^2 - s_i^2
    k = s.shape[-1]
    gaps[..., xp.arange(k), xp.arange(k)] = 1.0  # the diagonal is not divided
    u_part = skew(transposed(u) @ grad_u) * s[..., None, :]
    v_part = s[..., :, None] * skew(vh @ transposed(grad_vh))
    inner = (u_part + v_part) / gaps  # (..., k, k)
    if m > n:  # the part of grad_u outside U's columns
        grad_u_over_s = grad_u / s[..., None, :]
        outer = u @ inner + grad_u_over_s - u @ (transposed(u) @ grad_u_over_s)
        return outer @ vh
    if m < n:  # the part of grad_vh outside V's columns
        over_s_grad_vh = grad_vh / s[..., :, None]
        outer = inner @ vh + over_s_grad_vh - (over_s_grad_vh @ transposed(vh)) @ vh
        return u @ outer
    return u @ inner @ vh


class SvdvalsHessian(Op):
    """The gradient in x of ``<H, U diag(g) V^T>``: the second derivative of the singular
    values, applied to g and H.

    x: (..., m, n), g: (..., k), H: (..., m, n) -> (..., m, n).
    """

    name = "svdvals_hessian"

    def infer(self, x, weights, direction) -> ValueSpec:
        return x

    def cost(self, x, weights, direction) -> tuple:
        flops, read, _ = SVDVALS.cost(x)
        return (flops + 8 * x.numel * x.shape[-1], read + weights.nbytes + direction.nbytes,
                x.nbytes)  # fmt: skip

    def forward(self, ctx, xp, x, weights, direction):
        u, s, vh = xp.linalg.svd(x, full_matrices=False)
        grad_u = (direction @ xp.swapaxes(vh, -1, -2)) * weights[..., None, :]
        grad_vh = weights[..., :, None] * (xp.swapaxes(u, -1, -2) @ direction)
        return _svd_backward(xp, u, s, vh, grad_u, grad_vh)

    def backward(self, ctx, grad):
        raise BuildingAIError(
            "[svdvals_hessian] third derivatives of singular values (matrix 2-norms, nuclear "
            "norms, svdvals) are not available",
            help="take first or second derivatives only, or use the Frobenius norm ('fro')",
        )


SVDVALS, SVDVALS_BACKWARD = SingularValues(), SingularValuesBackward()
SVD_PROJECT, SVDVALS_HESSIAN = SvdProject(), SvdvalsHessian()
