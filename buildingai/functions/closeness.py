"""Comparing whole tensors: ``isclose``, ``allclose`` and ``equal``, as PyTorch's (tests and
checks in ported programs ask them)."""

from __future__ import annotations

from ..autograd.tensor import Tensor
from .creation import tensor
from .elementwise import where


def _as_tensor(value, like: Tensor) -> Tensor:
    return value if isinstance(value, Tensor) else tensor(value, device=like.device)


def isclose(
    input: Tensor,  # noqa: A002 - PyTorch's name
    other,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> Tensor:
    """Element-wise ``|input - other| <= atol + rtol * |other|`` (bool, the broadcast shape);
    equal infinities are close, NaNs only with ``equal_nan``."""
    other = _as_tensor(other, input)
    if not input.dtype.kind == other.dtype.kind == "f":  # integers and bools: exact, as PyTorch
        close = (input - other).abs() <= atol + rtol * other.abs() if rtol or atol else None
        same = input == other
        return same if close is None else same | close
    # infinities are close only to themselves: measure the distance between finite values only
    finite = input.isfinite() & other.isfinite()
    input_part, other_part = where(finite, input, 0), where(finite, other, 0)
    within = (input_part - other_part).abs() <= atol + rtol * other_part.abs()
    close = (input == other) | (finite & within)
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(
    input: Tensor,  # noqa: A002 - PyTorch's name
    other,
    rtol: float = 1e-05,
    atol: float = 1e-08,
    equal_nan: bool = False,
) -> bool:
    """True when every element of ``input`` is close to ``other``'s (``isclose``)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002 - PyTorch's name
    """True when both tensors have the same shape and the same values (False otherwise,
    different shapes included)."""
    other = _as_tensor(other, input)
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool((input == other).all())


__all__ = ["allclose", "equal", "isclose"]

TENSOR_METHODS = {"isclose": isclose, "allclose": allclose, "equal": equal}
