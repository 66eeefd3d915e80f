"""Activation modules: thin wrappers that call the functions of the same name
(``ReLU()(x)`` is ``buildingai.relu(x)``)."""

from __future__ import annotations

from .. import functions
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from . import functional as F
from .module import Module

# `inplace=True` writes the result into the input and returns it, as in PyTorch (see
# nn.functional.activation).


class ReLU(Module):
    """max(x, 0), element-wise. x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x, True) if self.inplace else F.relu(x)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x otherwise. x: any shape (*) -> the same shape."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x) (Phi: the standard normal CDF); ``approximate='tanh'`` uses the tanh
    approximation. x: any shape (*) -> the same shape."""

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return functions.gelu(x, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x) (also called swish). x: any shape (*) -> the same shape."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, x: Tensor) -> Tensor:
        return F.silu(x, self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """tanh(x), element-wise. x: any shape (*) -> the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return functions.tanh(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)), element-wise. x: any shape (*) -> the same shape."""

    def forward(self, x: Tensor) -> Tensor:
        return functions.sigmoid(x)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta; linear (x) where beta * x > threshold, for stability.
    x: any shape (*) -> the same shape."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: Tensor) -> Tensor:
        return functions.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``dim``; with ``dim=None`` PyTorch's implicit dimension and
    its warning (see ``nn.functional.softmax``). x: any shape (*) -> the same shape."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along ``dim``, computed stably; the dimension is chosen as ``Softmax``'s.
    x: any shape (*) -> the same shape."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.log_softmax(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along ``dim``, the dimension chosen as ``Softmax``'s."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: Tensor) -> Tensor:
        return F.softmin(x, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of each pixel: (N, C, H, W) or (C, H, W), along dimension
    -3."""

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim not in (3, 4):
            raise ShapeError(
                f"[Softmax2d] expects a 3-D (C, H, W) or 4-D (N, C, H, W) input, got "
                f"{tuple(x.shape)}"
            )
        return F.softmax(x, -3)


class Hardshrink(Module):
    """x where |x| > lambd, else 0 (see ``nn.functional.hardshrink``)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return F.hardshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Module):
    """x moved ``lambd`` towards zero, 0 within ``lambd`` of it (see
    ``nn.functional.softshrink``)."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, x: Tensor) -> Tensor:
        return F.softshrink(x, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"
