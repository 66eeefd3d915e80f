"""``gumbel_softmax``: a differentiable sample of a categorical distribution (Jang et al.,
2017), with PyTorch's signature: softmax((logits + g) / tau), g Gumbel(0, 1) noise drawn
through the ``rand`` record (so a compiled or frozen graph draws new noise on every run)."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...functions.index import one_hot
from ...functions.nn import softmax
from ...functions.random_like import rand_like

__all__ = ["gumbel_softmax"]


def gumbel_softmax(
    logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10, dim: int = -1
) -> Tensor:
    """Samples (same shape as ``logits``) that sum to 1 along ``dim``, lower ``tau`` nearer one
    hot. With ``hard``, exactly one-hot vectors whose gradient is the soft sample's (the
    straight-through estimator). ``eps`` is unused, as in PyTorch."""
    exponential = -(1.0 - rand_like(logits)).log()  # Exp(1) noise, -log(1 - u)
    gumbels = -exponential.log()
    soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    classes = soft.shape[dim]
    chosen = one_hot(soft.argmax(dim), classes).movedim(-1, dim).to(soft.dtype)
    return chosen - soft.detach() + soft
