"""Activation functions beyond relu/gelu/silu/softplus, with PyTorch's names, argument names
and defaults (``buildingai.elu(x, alpha=1.0)`` is ``torch.nn.functional.elu``).

``inplace=True`` is accepted so PyTorch model code runs unchanged; the result is computed out of
place, which gives the same values and gradients.
"""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import BuildingAIError, ShapeError
from ..ops import activation_extra as ops
from ._common import normalize_axis
from .elementwise import sigmoid, tanh
from .shape import chunk


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1); x: any shape."""
    return apply(ops.ELU, x, alpha=float(alpha))


def selu(x: Tensor, inplace: bool = False) -> Tensor:
    """1.0507 * elu(x, 1.6733): the self-normalising constants of PyTorch and ONNX.
    x: any shape (*) -> the same shape."""
    return apply(ops.SELU, x)


def celu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x / alpha) - 1). x: any shape (*) -> the same shape."""
    if alpha == 0:
        raise BuildingAIError(
            "[celu] alpha must not be 0 (celu divides x by alpha)", help="pass alpha != 0"
        )
    return apply(ops.CELU, x, alpha=float(alpha))


def hardtanh(
    x: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
) -> Tensor:
    """x limited to [min_val, max_val]; zero gradient on and beyond the bounds.
    x: any shape (*) -> the same shape."""
    if min_val > max_val:
        raise BuildingAIError(
            f"[hardtanh] min_val {min_val} is greater than max_val {max_val}",
            help="pass min_val <= max_val",
        )
    return apply(ops.HARDTANH, x, min_val=min_val, max_val=max_val)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): hardtanh(x, 0, 6), as in PyTorch. x: any shape (*) -> the same shape."""
    return hardtanh(x, 0.0, 6.0)


def hardsigmoid(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x + 3, 0), 6) / 6. x: any shape (*) -> the same shape."""
    return apply(ops.HARDSIGMOID, x)


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * min(max(x + 3, 0), 6) / 6. x: any shape (*) -> the same shape."""
    return apply(ops.HARDSWISH, x)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)). x: any shape (*) -> the same shape."""
    return apply(ops.MISH, x)


def softsign(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """input / (1 + |input|). input: any shape (*) -> the same shape."""
    return apply(ops.SOFTSIGN, input)


def logsigmoid(x: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably (finite for any x). x: any shape (*) -> the same shape."""
    return apply(ops.LOGSIGMOID, x)


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """input - tanh(input). input: any shape (*) -> the same shape."""
    return input - tanh(input)


def threshold(x: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """value where x <= threshold, else x (NaN stays NaN). x: any shape (*) -> the same shape."""
    return apply(ops.THRESHOLD, x, threshold=threshold, value=value)


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002 - PyTorch's name
    """a * sigmoid(b), where a and b are the two halves of input along ``dim``:
    input: (..., 2k, ...) -> (..., k, ...)."""
    if input.ndim == 0:
        raise ShapeError(
            "[glu] needs a tensor with at least 1 dimension, got a 0-d tensor",
            help="glu halves input along dim: reshape it first",
        )
    axis = normalize_axis(dim, input.ndim, "glu")
    if input.shape[axis] % 2:
        raise ShapeError(
            f"[glu] dimension {dim} of shape {tuple(input.shape)} has odd size {input.shape[axis]}",
            help="glu splits input into two equal halves along dim: its size must be even",
        )
    first, second = chunk(input, 2, axis)
    return first * sigmoid(second)


def prelu(x: Tensor, weight: Tensor) -> Tensor:
    """x where x > 0, else weight * x, with one slope per channel: x: (N, C, ...) and weight
    (C,) or (1,). A 1-D x has no channel axis and takes a single slope."""
    count = weight.size
    if count != 1:
        channels = x.shape[1] if x.ndim >= 2 else 1
        if count != channels:
            raise ShapeError(
                f"[prelu] weight has {count} slopes but x of shape {tuple(x.shape)} has "
                f"{channels} channels (dimension 1)",
                help="pass one slope per channel, or a single slope (PReLU(num_parameters=1))",
            )
        # one slope per channel, broadcast over the trailing axes: (C,) -> (C, 1, ..., 1)
        weight = weight.reshape((count,) + (1,) * (x.ndim - 2))
    elif weight.ndim:
        weight = weight.reshape(())
    return apply(ops.PRELU, x, weight)


__all__ = [
    "celu",
    "elu",
    "glu",
    "hardsigmoid",
    "hardswish",
    "hardtanh",
    "logsigmoid",
    "mish",
    "prelu",
    "relu6",
    "selu",
    "softsign",
    "tanhshrink",
    "threshold",
]
