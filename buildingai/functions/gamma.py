"""The log-gamma family: ``lgamma``, ``digamma`` and ``polygamma``, as in PyTorch."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..ops.gamma_functions import LGAMMA, POLYGAMMA

__all__ = ["digamma", "lgamma", "polygamma"]


def lgamma(x: Tensor | float) -> Tensor:
    """log |Gamma(x)| elementwise; its gradient is ``digamma(x)``."""
    return apply(LGAMMA, x)


def digamma(x: Tensor | float) -> Tensor:
    """The derivative of ``lgamma`` elementwise: ``polygamma(0, x)``."""
    return apply(POLYGAMMA, x, n=0)


def polygamma(n: int, x: Tensor | float) -> Tensor:
    """The (n + 1)-th derivative of ``lgamma`` elementwise (n = 0: digamma), as
    ``torch.special.polygamma(n, x)``."""
    return apply(POLYGAMMA, x, n=n)


def _polygamma_method(x: Tensor, n: int) -> Tensor:
    return polygamma(n, x)


TENSOR_METHODS = {"lgamma": lgamma, "digamma": digamma, "polygamma": _polygamma_method}
