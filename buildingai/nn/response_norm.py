"""LocalResponseNorm: AlexNet's normalisation across neighbouring channels as a layer (no
parameters; see ``nn.functional.local_response_norm``)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .functional.response_norm import local_response_norm
from .module import Module


class LocalResponseNorm(Module):
    """(N, C, *) -> the same shape: x / (k + alpha * mean of x^2 over ``size`` channels)^beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x: Tensor) -> Tensor:
        return local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["LocalResponseNorm"]
