"""Norms and distances between vectors, with PyTorch's signatures: ``normalize``,
``cosine_similarity``, ``pairwise_distance`` and ``pdist``, composed from the vector norm and element-wise
ops (so their gradients, of any order, come from those records)."""

from __future__ import annotations

import numpy as np

from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.shape import broadcast_tensors
from ...linalg import vector_norm

__all__ = ["cosine_similarity", "normalize", "pairwise_distance", "pdist"]


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):  # noqa: A002
    """``input / max(||input||_p, eps)``, the p-norm taken along ``dim``: every vector along it
    scaled to unit length (a zero vector stays zero). Same shape as ``input``."""
    if out is not None:
        raise TypeError("[normalize] out= is not supported: use the returned tensor")
    norm = vector_norm(input, p, dim=dim, keepdim=True)
    return input / norm.clamp(min=eps)


def clamped_keeping_gradient(norm: Tensor, eps: float) -> Tensor:
    """``max(norm, eps)`` whose gradient is the norm's own, as PyTorch clamps in place outside
    autograd (``cosine_similarity``'s norms, ``gaussian_nll_loss``'s variance): the same value
    and the same derivatives."""
    return norm + (norm.clamp(min=eps) - norm).detach()


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between the vectors of ``x1`` and ``x2`` along ``dim``
    (broadcast against each other): ``sum(x1 * x2) / (max(||x1||, eps) * max(||x2||, eps))``.
    The result has ``dim`` removed: (N, D) and (N, D) -> (N,) with the default ``dim=1``."""
    x1, x2 = broadcast_tensors(x1, x2)
    if x1.ndim == 0:
        raise ShapeError(
            "[cosine_similarity] the inputs are 0-d: there is no dimension to compare along",
            help="pass vectors, e.g. of shape (D,) with dim=0, or (N, D)",
        )
    norms = [
        clamped_keeping_gradient(vector_norm(x, 2, dim=dim, keepdim=True), eps) for x in (x1, x2)
    ]
    return ((x1 / norms[0]) * (x2 / norms[1])).sum(dim)


def pairwise_distance(
    x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False
) -> Tensor:
    """The p-norm distance between the vectors in the last dimension of ``x1`` and ``x2``
    (broadcast against each other): ``||x1 - x2 + eps||_p``, the ``eps`` keeping the norm away
    from zero, where its gradient is undefined. (N, D) and (N, D) -> (N,), or (N, 1) with
    ``keepdim``."""
    x1, x2 = broadcast_tensors(x1, x2)
    if x1.ndim == 0:
        return (x1 - x2 + eps).abs()
    return vector_norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:  # noqa: A002 - PyTorch's name
    """The p-norm distances between every pair of rows of ``input`` (N, M), as the condensed
    vector (N (N - 1) / 2,) of pairs (i, j), i < j, in row-major order (SciPy's ``pdist``)."""
    if input.ndim != 2:
        raise ShapeError(
            f"[pdist] expects a 2-D input (N, M), got {tuple(input.shape)}",
            help="one row per point",
        )
    first, second = np.triu_indices(input.shape[0], k=1)  # fixed by N: a constant index
    return vector_norm(input[first] - input[second], p, dim=-1)
