"""CosineSimilarity and PairwiseDistance: ``nn.functional``'s vector comparisons as layers
(no parameters), with PyTorch's arguments."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.distance import cosine_similarity, pairwise_distance
from .module import Module


class CosineSimilarity(Module):
    """The cosine between the vectors of two inputs along ``dim`` (see
    ``nn.functional.cosine_similarity``): (N, D) and (N, D) -> (N,) with ``dim=1``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return cosine_similarity(x1, x2, self.dim, self.eps)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps}"


class PairwiseDistance(Module):
    """The p-norm distance between the vectors in the last dimension of two inputs (see
    ``nn.functional.pairwise_distance``): (N, D) and (N, D) -> (N,)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)

    def extra_repr(self) -> str:
        return f"p={self.norm}, eps={self.eps}, keepdim={self.keepdim}"


__all__ = ["CosineSimilarity", "PairwiseDistance"]
