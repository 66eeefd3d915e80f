"""Functional forms of the linear layers (``linear`` itself is a primitive in
``buildingai.functions.linalg``)."""

from __future__ import annotations

import math

from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.linalg import check_floating_input


def bilinear(x1: Tensor, x2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]``.

    x1: (*, in1), x2: (*, in2) with the same leading dimensions, weight: (out, in1, in2),
    bias: (out,) -> (*, out). PyTorch's layout, so Bilinear weights move across unchanged.
    """
    check_floating_input("bilinear", x1, weight)
    check_floating_input("bilinear", x2, weight)
    out, in1, in2 = weight.shape
    if (
        x1.ndim == 0
        or x2.ndim == 0
        or x1.shape[-1] != in1
        or x2.shape[-1] != in2
        or x1.shape[:-1] != x2.shape[:-1]
    ):
        raise ShapeError(
            f"[bilinear] expects x1 (*, {in1}) and x2 (*, {in2}) with the same leading "
            f"dimensions (weight {tuple(weight.shape)}), got {tuple(x1.shape)} and "
            f"{tuple(x2.shape)}"
        )
    lead = tuple(x1.shape[:-1])
    rows = math.prod(lead)
    # Contract i with one GEMM: (N, in1) @ (in1, out * in2) -> (N, out, in2) ...
    folded = weight.permute(1, 0, 2).reshape(in1, out * in2)
    partial = (x1.reshape(rows, in1) @ folded).reshape(rows, out, in2)
    # ... then j with a batched matrix-vector product: (N, out, in2) @ (N, in2, 1).
    y = (partial @ x2.reshape(rows, in2, 1)).reshape(lead + (out,))
    return y if bias is None else y + bias


__all__ = ["bilinear"]
