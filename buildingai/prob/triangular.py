"""Cholesky factors and triangular solves composed from differentiable Tensor ops, for the
multivariate normal. They loop over the D rows (O(D) slicing ops per call), which suits the event
sizes of variational posteriors and small Gaussians; the gradients come from the ops."""

from __future__ import annotations

import numpy as np

from .. import functions as F
from ..autograd.tensor import Tensor
from ..errors import ArgumentError


def cholesky(matrix: Tensor) -> Tensor:
    """The lower-triangular L with L L^T = ``matrix``: (..., D, D) -> (..., D, D). Both
    triangles are read (as (A + A^T) / 2), so the gradient is symmetric, as PyTorch's is."""
    matrix = (matrix + matrix.swapaxes(-1, -2)) * 0.5
    size = matrix.shape[-1]
    rows = np.arange(size)
    columns: list[Tensor] = []  # column j of L, each (..., D)
    for j in range(size):
        column = matrix[..., :, j]
        for k in range(j):
            column = column - columns[k] * columns[k][..., j : j + 1]
        pivot = column[..., j : j + 1]
        if not (pivot.numpy() > 0).all():
            raise ArgumentError(
                f"[MultivariateNormal] covariance_matrix is not positive definite (pivot {j} "
                f"of its Cholesky factorisation is {pivot.numpy().min():g})",
                help="pass a symmetric positive-definite covariance, or scale_tril directly",
            )
        below = F.tensor((rows >= j).astype(matrix.dtype), device=matrix.device)
        columns.append(column / pivot.sqrt() * below)
    return F.stack(columns, axis=-1)


def solve_lower(lower: Tensor, rhs: Tensor) -> Tensor:
    """y with ``lower`` @ y = ``rhs`` by forward substitution: lower (..., D, D),
    rhs (..., D) -> (..., D), broadcasting the leading axes."""
    size = lower.shape[-1]
    solved: list[Tensor] = []
    for i in range(size):
        value = rhs[..., i]
        if i:
            known = F.stack(solved, axis=-1)  # (..., i)
            value = value - (lower[..., i, :i] * known).sum(axis=-1)
        solved.append(value / lower[..., i, i])
    return F.stack(solved, axis=-1)


def diagonal(matrix: Tensor) -> Tensor:
    """The diagonal of the last two axes: (..., D, D) -> (..., D)."""
    return F.einsum("...ii->...i", matrix)
