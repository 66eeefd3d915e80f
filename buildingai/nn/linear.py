"""Affine layers: Linear (y = x W^T + b) and Bilinear (y = x1^T A x2 + b)."""

from __future__ import annotations

import math

from .. import functions
from ..autograd.tensor import Tensor
from . import init
from ._utils import empty_parameter, init_like_linear_
from .functional.bilinear import bilinear
from .module import Module


class Linear(Module):
    """y = x W^T + b, applied to the last dimension: x (*, in_features) -> (*, out_features).

    ``weight`` is (out_features, in_features) and ``bias`` (out_features,), as in PyTorch, and
    both start as PyTorch's: W ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform_ with a=sqrt(5)),
    b ~ U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the initial weights again (from the default generator)."""
        init_like_linear_(self.weight, self.bias)

    def forward(self, x: Tensor) -> Tensor:
        # read from their store: ``self.weight`` reaches it only after the instance and class
        # lookups fail (``Module.__getattr__``), which costs more than the op's dispatch
        parameters = self._parameters
        if "weight" in parameters and "bias" in parameters:
            return functions.linear(x, parameters["weight"], parameters["bias"])
        return functions.linear(x, self.weight, self.bias)  # replaced by a plain attribute

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Bilinear(Module):
    """y[..., k] = sum_ij x1[..., i] A[k, i, j] x2[..., j] + b[k].

    x1: (*, in1_features), x2: (*, in2_features) -> (*, out_features); ``weight`` is
    (out_features, in1_features, in2_features). Both parameters start U(-1/sqrt(in1),
    1/sqrt(in1)), as in PyTorch.
    """

    def __init__(
        self,
        in1_features: int,
        in2_features: int,
        out_features: int,
        bias: bool = True,
        dtype=None,
        device=None,
    ) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = empty_parameter((out_features, in1_features, in2_features), dtype, device)
        if bias:
            self.bias = empty_parameter((out_features,), dtype, device)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the initial weights again (from the default generator)."""
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, got {self.in1_features}")
        bound = 1 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
