"""Trigonometric and hyperbolic functions (``tan``, ``asin``, ``atan2``, ``sinh``, ``acosh``...)
with PyTorch's names and ``arc*`` aliases, and the compositions PyTorch lists beside them:
``deg2rad``, ``rad2deg``, ``hypot``, ``logaddexp``, ``logaddexp2``, ``xlogy`` and ``sgn``.

The functions of one angle call the primitive ops of ``ops/trigonometry.py``; the compositions
are built from element-wise ops, so gradients of any order, tracing and every device come
with them.
"""

from __future__ import annotations

import math

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..errors import DTypeError
from ..ops import trigonometry as ops
from ..ops.promotion import float_dtype, is_float_dtype, result_type
from .creation import as_tensor
from .elementwise import _operand, exp, isinf, log, log1p, maximum, minimum, sign, where
from .inplace_math import _binary, _unary

TensorLike = Tensor | float | int | bool

_DEGREES_PER_RADIAN = 180.0 / math.pi
_RADIANS_PER_DEGREE = math.pi / 180.0
_INVERSE_LOG_2 = 1.0 / math.log(2.0)

# ----- circular ----------------------------------------------------------------------------------


def tan(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Tangent (x in radians). input: any shape (*) -> the same shape."""
    return apply(ops.TAN, _operand(input))


def asin(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Arcsine in [-pi/2, pi/2]; NaN outside [-1, 1]. input: any shape (*) -> the same shape."""
    return apply(ops.ASIN, _operand(input))


def acos(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Arccosine in [0, pi]; NaN outside [-1, 1]. input: any shape (*) -> the same shape."""
    return apply(ops.ACOS, _operand(input))


def atan(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Arctangent in (-pi/2, pi/2). input: any shape (*) -> the same shape."""
    return apply(ops.ATAN, _operand(input))


def atan2(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The angle of the point (other, input), atan(input / other) in the right quadrant, in
    [-pi, pi]. input, other: broadcastable -> the broadcast shape."""
    return apply(ops.ATAN2, input, other)


# ----- hyperbolic --------------------------------------------------------------------------------


def sinh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Hyperbolic sine. input: any shape (*) -> the same shape."""
    return apply(ops.SINH, _operand(input))


def cosh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Hyperbolic cosine. input: any shape (*) -> the same shape."""
    return apply(ops.COSH, _operand(input))


def asinh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Inverse hyperbolic sine. input: any shape (*) -> the same shape."""
    return apply(ops.ASINH, _operand(input))


def acosh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Inverse hyperbolic cosine; NaN below 1. input: any shape (*) -> the same shape."""
    return apply(ops.ACOSH, _operand(input))


def atanh(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Inverse hyperbolic tangent; +-inf at +-1, NaN outside [-1, 1].
    input: any shape (*) -> the same shape."""
    return apply(ops.ATANH, _operand(input))


arcsin, arccos, arctan, arctan2 = asin, acos, atan, atan2
arcsinh, arccosh, arctanh = asinh, acosh, atanh


# ----- compositions ------------------------------------------------------------------------------


def deg2rad(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Degrees to radians, input * pi / 180 (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return _operand(input) * _RADIANS_PER_DEGREE


def rad2deg(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Radians to degrees, input * 180 / pi (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return _operand(input) * _DEGREES_PER_RADIAN


def hypot(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """sqrt(input^2 + other^2) without overflow or underflow in the squares; +inf where
    either is infinite (even when the other is NaN). input, other: broadcastable -> the
    broadcast shape (floating-point inputs only, as in PyTorch)."""
    a, b = _common_float("hypot", input, other, integers=False)
    infinite = isinf(a) | isinf(b)
    # the length of the finite pairs only, so that no inf reaches a gradient through the
    # branch ``where`` drops there
    a, b = where(infinite, 0.0, a).abs(), where(infinite, 0.0, b).abs()
    big, small = maximum(a, b), minimum(a, b)
    # big * sqrt(1 + (small / big)^2): the ratio is at most 1; big == 0 gives 0 / 1
    ratio = small / where(big == 0, 1.0, big)
    return where(infinite, math.inf, big * (ratio * ratio + 1).sqrt())


def logaddexp(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """log(exp(input) + exp(other)) without overflow: max + log1p(exp(-|input - other|)).
    input, other: broadcastable -> the broadcast shape (floating-point inputs only)."""
    a, b = _common_float("logaddexp", input, other, integers=False)
    larger, gap = _larger_and_gap(a, b)
    return _equal_infinities_kept(a, b, larger + log1p(exp(gap)))


def logaddexp2(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """log2(2^input + 2^other) without overflow: max + log2(1 + 2^-|input - other|).
    input, other: broadcastable -> the broadcast shape (floating-point inputs only)."""
    a, b = _common_float("logaddexp2", input, other, integers=False)
    larger, gap = _larger_and_gap(a, b)
    return _equal_infinities_kept(a, b, larger + log1p(2.0**gap) * _INVERSE_LOG_2)


def _larger_and_gap(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    """max(a, b) and -|a - b|, each chosen by ``where`` on a >= b: every branch is smooth, so
    derivatives of any order are right at a == b too (max and abs have kinks there)."""
    a_larger = a >= b
    return where(a_larger, a, b), where(a_larger, b - a, a - b)


def _equal_infinities_kept(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """Two equal infinities give themselves (their gap is inf - inf = NaN), as in PyTorch."""
    return where(isinf(a) & (a == b), a, out)


def xlogy(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """input * log(other), 0 where input == 0 (even for other 0 or inf), NaN where other is
    NaN; integers give the default float dtype. input, other: broadcastable -> the broadcast
    shape."""
    x, y = _common_float("xlogy", input, other, integers=True)
    # where x == 0 and log(y) is not finite (y <= 0 or y = inf) the logarithm is taken of 1:
    # the product is then 0, not 0 * inf, and its gradient in x 0, as PyTorch's; elsewhere
    # 0 * log(y) is 0 already and keeps every derivative
    undefined = (x == 0) & ((y <= 0) | isinf(y))
    return x * log(where(undefined, 1.0, y))


def sgn(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The sign of real numbers (PyTorch's ``sgn`` extends it to complex ones): -1, 0 or 1,
    0 for NaN; zero gradient. input: any shape (*) -> the same shape."""
    return sign(input)


def _common_float(name: str, input, other, *, integers: bool) -> tuple[Tensor, Tensor]:
    """Both operands as tensors of their promoted dtype (PyTorch's ``result_type``), computed
    in that dtype as PyTorch does; integer and bool operands give the default float dtype when
    ``integers`` allows them, else a DTypeError."""
    promoted = result_type(input, other)
    if not integers and not is_float_dtype(promoted):
        raise DTypeError(
            f"[{name}] needs floating-point inputs, got {_dtype_name(input)} and "
            f"{_dtype_name(other)}",
            help="convert first, e.g. x.float() or x.astype('float32')",
        )
    dtype = float_dtype(promoted)
    device = next((v.device for v in (input, other) if isinstance(v, Tensor)), None)
    return _as_dtype(input, dtype, device), _as_dtype(other, dtype, device)


def _as_dtype(value, dtype, device) -> Tensor:
    if isinstance(value, Tensor):
        return value if value.dtype == dtype else value.astype(dtype)
    return as_tensor(value, dtype=dtype, device=device)


def _dtype_name(value) -> str:
    return str(value.dtype) if isinstance(value, Tensor) else f"a Python {type(value).__name__}"


__all__ = [
    "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh",
    "arcsin", "arccos", "arctan", "arctan2", "arcsinh", "arccosh", "arctanh",
    "deg2rad", "rad2deg", "hypot", "logaddexp", "logaddexp2", "xlogy", "sgn",
]  # fmt: skip


# ----- in-place forms (Tensor methods only, as in PyTorch) ---------------------------------------


_ONE_INPUT = {
    "tan": tan, "asin": asin, "arcsin": asin, "acos": acos, "arccos": acos,
    "atan": atan, "arctan": atan, "sinh": sinh, "cosh": cosh,
    "asinh": asinh, "arcsinh": asinh, "acosh": acosh, "arccosh": acosh,
    "atanh": atanh, "arctanh": atanh, "deg2rad": deg2rad, "rad2deg": rad2deg, "sgn": sgn,
}  # fmt: skip
_TWO_INPUTS = {"atan2": atan2, "arctan2": atan2, "hypot": hypot, "xlogy": xlogy}

TENSOR_METHODS = {
    **_ONE_INPUT,
    **_TWO_INPUTS,
    "logaddexp": logaddexp,
    "logaddexp2": logaddexp2,
    **{f"{name}_": _unary(name, function) for name, function in _ONE_INPUT.items()},
    **{f"{name}_": _binary(name, function) for name, function in _TWO_INPUTS.items()},
}
