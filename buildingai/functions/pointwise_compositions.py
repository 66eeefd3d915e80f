"""Point-wise compositions PyTorch names: ``addcmul``, ``addcdiv``, ``lerp``, ``clamp_min`` and
``clamp_max`` (optimizers written for PyTorch use them), each built from the element-wise ops,
so gradients, tracing and every device come with them."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .elementwise import clamp


def addcmul(input: Tensor, tensor1, tensor2, *, value=1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 * tensor2``, broadcast: the Adam second-moment update
    ``v.addcmul_(g, g, value=1 - beta2)``."""
    return input + value * tensor1 * tensor2


def addcdiv(input: Tensor, tensor1, tensor2, *, value=1) -> Tensor:  # noqa: A002
    """``input + value * tensor1 / tensor2``, broadcast: the Adam step
    ``p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)``."""
    return input + value * tensor1 / tensor2


def lerp(input: Tensor, end, weight) -> Tensor:  # noqa: A002 - PyTorch's name
    """``input + weight * (end - input)``: linear interpolation, as an exponential moving
    average writes it (``m.lerp_(g, 1 - beta1)``); ``weight`` is a number or a tensor."""
    return input + weight * (end - input)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A002 - PyTorch's names
    """``max(input, min)`` element-wise."""
    return clamp(input, min, None)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A002 - PyTorch's names
    """``min(input, max)`` element-wise."""
    return clamp(input, None, max)


__all__ = ["addcdiv", "addcmul", "clamp_max", "clamp_min", "lerp"]

TENSOR_METHODS = {
    "addcmul": addcmul, "addcdiv": addcdiv, "lerp": lerp, "clamp_min": clamp_min,
    "clamp_max": clamp_max,
}  # fmt: skip
