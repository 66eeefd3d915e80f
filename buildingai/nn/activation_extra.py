"""More activation modules with PyTorch's names, arguments and defaults: thin wrappers over the
functions of the same name (``ELU(alpha)(x)`` is ``buildingai.elu(x, alpha)``); ``PReLU`` owns
its learnable slopes.

``inplace=True`` writes the result into the input and returns it, as in PyTorch (see
``nn.functional.activation``).
"""

from __future__ import annotations

import warnings

from .. import functions
from ..autograd.tensor import Tensor
from . import functional as F
from . import init
from ._utils import empty_parameter
from .module import Module


def _inplace(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ELU(Module):
    """x where x > 0, else alpha * (exp(x) - 1). x: any shape (*) -> the same shape."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace(self.inplace)


class SELU(Module):
    """1.0507 * elu(x, 1.6733), the self-normalising activation.
    x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.selu(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class CELU(Module):
    """x where x > 0, else alpha * (exp(x / alpha) - 1). x: any shape (*) -> the same shape."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.celu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + _inplace(self.inplace)


class Hardtanh(Module):
    """x limited to [min_val, max_val]. x: any shape (*) -> the same shape."""

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: float | None = None,
        max_value: float | None = None,
    ) -> None:
        super().__init__()
        # min_value / max_value: PyTorch's deprecated spellings, still accepted there
        if min_value is not None or max_value is not None:
            warnings.warn(
                "Hardtanh: min_value and max_value are deprecated; use min_val and max_val",
                DeprecationWarning,
                stacklevel=2,
            )
        min_val = min_val if min_value is None else min_value
        max_val = max_val if max_value is None else max_value
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + _inplace(self.inplace)


class ReLU6(Hardtanh):
    """min(max(x, 0), 6). x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Hardsigmoid(Module):
    """min(max(x + 3, 0), 6) / 6. x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardsigmoid(x, self.inplace)


class Hardswish(Module):
    """x * min(max(x + 3, 0), 6) / 6. x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.hardswish(x, self.inplace)


class Mish(Module):
    """x * tanh(softplus(x)). x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.mish(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GLU(Module):
    """a * sigmoid(b) for the halves a, b of x along ``dim``: (..., 2k, ...) -> (..., k, ...)."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return functions.glu(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSigmoid(Module):
    """log(sigmoid(x)), computed stably. x: any shape (*) -> the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return functions.logsigmoid(x)


class Softsign(Module):
    """x / (1 + |x|). x: any shape (*) -> the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return functions.softsign(x)


class Tanhshrink(Module):
    """x - tanh(x). x: any shape (*) -> the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return functions.tanhshrink(x)


class Threshold(Module):
    """value where x <= threshold, else x (NaN stays NaN). x: any shape (*) -> the same shape."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.threshold(x, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + _inplace(self.inplace)


class PReLU(Module):
    """x where x > 0, else weight * x, with a learnable slope: one for all channels
    (``num_parameters=1``) or one per channel (dimension 1 of x: (N, C, ...))."""

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None
    ) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = empty_parameter((num_parameters,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Set every slope back to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, x: Tensor) -> Tensor:
        return functions.prelu(x, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"
