"""Affine layers: Linear (y = x W^T + b) and Bilinear (y = x1^T A x2 + b)."""

from __future__ import annotations

import math

from .. import functions
from ..autograd.tensor import Tensor
from ..errors import ShapeError
from . import init
from ._utils import empty_parameter, init_like_linear_
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
        return functions.linear(x, self.weight, self.bias)

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
        in1, in2, out = self.in1_features, self.in2_features, self.out_features
        if (
            x1.ndim == 0
            or x2.ndim == 0
            or x1.shape[-1] != in1
            or x2.shape[-1] != in2
            or x1.shape[:-1] != x2.shape[:-1]
        ):
            raise ShapeError(
                f"[Bilinear] expects x1 (*, {in1}) and x2 (*, {in2}) with the same leading "
                f"dimensions, got {tuple(x1.shape)} and {tuple(x2.shape)}"
            )
        lead = tuple(x1.shape[:-1])
        rows = math.prod(lead)
        # Contract i with one GEMM: (N, in1) @ (in1, out * in2) -> (N, out, in2) ...
        weight = self.weight.permute(1, 0, 2).reshape(in1, out * in2)
        partial = (x1.reshape(rows, in1) @ weight).reshape(rows, out, in2)
        # ... then j with a batched matrix-vector product: (N, out, in2) @ (N, in2, 1).
        y = (partial @ x2.reshape(rows, in2, 1)).reshape(lead + (out,))
        return y if self.bias is None else y + self.bias

    def extra_repr(self) -> str:
        return (
            f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
            f"out_features={self.out_features}, bias={self.bias is not None}"
        )
