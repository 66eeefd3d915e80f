"""``RReLU``: the randomized leaky ReLU layer, random slopes in training, their mean in eval."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from . import functional as F
from .module import Module


class RReLU(Module):
    """x where x > 0, else a * x, with ``a`` drawn per element uniform in [lower, upper] while
    training and ``(lower + upper) / 2`` in eval mode (``F.rrelu``). x: any shape (*) -> the
    same shape."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        if not 0 <= lower <= upper:
            raise ValueError(f"RReLU expects 0 <= lower <= upper, got lower={lower}, upper={upper}")
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.rrelu(x, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else ""
        )
