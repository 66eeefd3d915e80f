"""The shrinkage functions of sparse coding, with PyTorch's signatures: ``hardshrink`` zeroes
the values within ``lambd`` of zero, ``softshrink`` also moves the others ``lambd`` towards
zero. Composed from comparisons and ``where``, so the gradient is 1 outside the band and 0
inside it (and at its edges), as PyTorch's."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...functions.elementwise import where

__all__ = ["hardshrink", "softshrink"]


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002 - PyTorch's name
    """x where |x| > lambd, else 0. input: any shape (*) -> the same shape."""
    return where((input > lambd) | (input < -lambd), input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x - lambd where x > lambd, x + lambd where x < -lambd, else 0 (``lambd`` >= 0)."""
    if lambd < 0:
        raise ValueError(f"[softshrink] lambd must be non-negative, got {lambd}")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))
