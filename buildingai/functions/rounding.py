"""Division rounded to an integer: ``torch.div(a, b, rounding_mode="floor" | "trunc")``."""

from __future__ import annotations

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..ops import elementwise as ops
from ..ops.promotion import INTEGRAL


def _integral(value) -> bool:
    if isinstance(value, Tensor):
        return value.dtype.kind in INTEGRAL
    return isinstance(value, int)


def _magnitude(value):
    return apply(ops.ABS, value) if isinstance(value, Tensor) else abs(value)


def _sign(value):
    if isinstance(value, Tensor):
        return apply(ops.SIGN, value)
    return (value > 0) - (value < 0)


def rounded_division(a, b, rounding_mode: str) -> Tensor:
    """``a / b`` rounded down (``"floor"``, Python's ``//``) or towards zero (``"trunc"``).

    Integer operands give an exact integer result in their dtype. For floats, "trunc" is
    ``sign(q) * floor(|q|)`` of the true quotient q (zero gradient, as in PyTorch).
    """
    if rounding_mode == "floor":
        return apply(ops.FLOOR_DIVIDE, a, b)
    if rounding_mode != "trunc":
        raise ValueError(
            f"[div] rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}"
        )
    if _integral(a) and _integral(b):
        # on magnitudes floor and truncation agree; the signs are put back after
        magnitude = apply(ops.FLOOR_DIVIDE, _magnitude(a), _magnitude(b))
        return apply(ops.MUL, apply(ops.MUL, magnitude, _sign(a)), _sign(b))
    quotient = apply(ops.DIV, a, b)
    return apply(ops.MUL, apply(ops.SIGN, quotient), apply(ops.FLOOR, apply(ops.ABS, quotient)))
