"""Element-wise math beyond ``elementwise.py``, with PyTorch's names: ``log2``, ``log10``,
``exp2``, ``trunc`` (alias ``fix``), ``frac``, ``sinc``, ``copysign``, ``heaviside``,
``float_power``, ``fmod``, ``gcd``, ``lcm``, the bit shifts with their ``<<`` and ``>>``
operators, ``frexp``, ``nextafter``, the modified Bessel functions ``i0`` and (``torch.special``'s)
``i0e``, ``i1``, ``i1e``, and the in-place method forms PyTorch has for them.

Most call the primitive ops of ``ops/elementwise_math.py``; ``frac`` and ``float_power`` are
compositions of other ops, so gradients of any order, tracing and every device come with them.
"""

from __future__ import annotations

from typing import NamedTuple

from ..autograd.dispatch import apply
from ..autograd.tensor import Tensor
from ..backend.dtypes import float64
from ..errors import DTypeError
from ..ops import elementwise_math as ops
from ..ops.promotion import is_float_dtype
from .creation import as_tensor, ones_like
from .elementwise import _operand, _reflected, mul
from .elementwise import pow as _pow
from .inplace_math import _binary, _unary

TensorLike = Tensor | float | int | bool

# ----- logarithms and powers ---------------------------------------------------------------------


def log2(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Base-2 logarithm; -inf at 0, NaN below (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return apply(ops.LOG2, _operand(input))


def log10(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Base-10 logarithm; -inf at 0, NaN below (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return apply(ops.LOG10, _operand(input))


def exp2(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """2 ** input (integers give the default float dtype). input: any shape (*) -> the same
    shape."""
    return apply(ops.EXP2, _operand(input))


def float_power(input: TensorLike, exponent: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """input ** exponent computed in float64 whatever the operands' dtypes, as PyTorch does;
    either may be a Python number. input, exponent: broadcastable -> the broadcast shape
    (float64); gradients return to each operand in its own dtype."""
    base, power = _in_float64(input), _in_float64(exponent)
    if not isinstance(base, Tensor) and not isinstance(power, Tensor):
        base = as_tensor(base, dtype=float64)
    return _pow(base, power)


def _in_float64(value):
    """A Tensor cast to float64 (differentiably); a Python number as it is, since it takes
    the other operand's float64."""
    if isinstance(value, Tensor) and value.dtype != float64:
        return value.astype(float64)
    return value


# ----- rounding and sinc -------------------------------------------------------------------------


def trunc(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Round towards zero (-2.7 -> -2.0); zero gradient. Integer tensors are returned as a
    copy. input: any shape (*) -> the same shape."""
    return apply(ops.TRUNC, _operand(input))


fix = trunc


def frac(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The fractional part input - trunc(input), with input's sign (-2.5 -> -0.5); NaN for
    +-inf; the gradient passes through unchanged. Floating-point tensors only, as in PyTorch.
    input: any shape (*) -> the same shape."""
    x = _operand(input)
    if not is_float_dtype(x.dtype):
        raise DTypeError(
            f"[frac] takes floating-point tensors, got {x.dtype} (as in PyTorch)",
            help="convert first, e.g. x.float(); the fractional part of an integer is 0",
        )
    return x - trunc(x)


def sinc(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The normalized sinc sin(pi x) / (pi x), 1 at 0 (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return apply(ops.SINC, _operand(input))


# ----- signs and steps ---------------------------------------------------------------------------


def copysign(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """|input| with the sign of other, signed zeros included (copysign(1, -0.0) is -1.0);
    integers give the default float dtype. The gradient flows to input only.
    input, other: broadcastable -> the broadcast shape."""
    return apply(ops.COPYSIGN, _operand(input), other)


def heaviside(input: TensorLike, values: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The step function: 0 where input < 0, ``values`` where input == 0, 1 where input > 0
    (NaN gives 0). Tensor operands must share one dtype, as in PyTorch; no derivative.
    input, values: broadcastable -> the broadcast shape."""
    return apply(ops.HEAVISIDE, _operand(input), values)


# ----- remainders and integer functions ----------------------------------------------------------


def fmod(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """C's remainder input - trunc(input / other) * other, with the dividend's sign
    (fmod(-3, 2) is -1; ``remainder`` gives 1). Integer division by zero is an error; a float
    one gives NaN. input, other: broadcastable -> the broadcast shape."""
    return apply(ops.FMOD, _operand(input), other)


def gcd(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Greatest common divisor, non-negative (gcd(0, 0) is 0); integer tensors only.
    input, other: broadcastable -> the broadcast shape."""
    return apply(ops.GCD, _operand(input), other)


def lcm(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """Least common multiple, non-negative (0 when either is 0); integer tensors only.
    input, other: broadcastable -> the broadcast shape."""
    return apply(ops.LCM, _operand(input), other)


def bitwise_left_shift(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002
    """``input << other`` on integers: bits shifted out are lost, and a shift by a negative
    amount or by the dtype's width or more gives 0 (PyTorch's rule); either may be a Python
    int. input, other: broadcastable -> the broadcast shape."""
    return apply(ops.BITWISE_LEFT_SHIFT, input, other)


def bitwise_right_shift(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002
    """``input >> other`` on integers, arithmetic (the sign fills signed integers); a shift by
    a negative amount or by the dtype's width or more gives 0, or -1 for negative signed
    values (PyTorch's rule); either may be a Python int. input, other: broadcastable -> the
    broadcast shape."""
    return apply(ops.BITWISE_RIGHT_SHIFT, input, other)


# ----- error functions, NaN-ignoring extremes, sign and infinity tests ---------------------------


def erfc(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """1 - erf(input), accurate where it is tiny (integers give the default float dtype).
    input: any shape (*) -> the same shape."""
    return apply(ops.ERFC, _operand(input))


def erfinv(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The inverse of erf: NaN outside [-1, 1], +-inf at +-1 (integers give the default float
    dtype). input: any shape (*) -> the same shape."""
    return apply(ops.ERFINV, _operand(input))


def fmax(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The larger of input and other, ignoring a NaN (NaN only where both are); a tie's
    gradient goes to input. input, other: broadcastable -> the broadcast shape."""
    return apply(ops.FMAX, input, other)


def fmin(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """The smaller of input and other, ignoring a NaN (NaN only where both are); a tie's
    gradient goes to input. input, other: broadcastable -> the broadcast shape."""
    return apply(ops.FMIN, input, other)


def signbit(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """True where the sign bit is set: negatives, -0.0 and NaNs with the sign (boolean).
    input: any shape (*) -> the same shape."""
    return apply(ops.SIGNBIT, _operand(input))


def isposinf(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """True where input is +inf (boolean). input: any shape (*) -> the same shape."""
    return input == float("inf")


def isneginf(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """True where input is -inf (boolean). input: any shape (*) -> the same shape."""
    return input == float("-inf")


def isreal(input: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """True where the imaginary part is 0: everywhere, as BuildingAI's dtypes are real
    (boolean). input: any shape (*) -> the same shape."""
    return ones_like(input, dtype="bool")


def ldexp(input: TensorLike, other: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """input * 2 ** other, as PyTorch computes it: integers give the default float dtype, and a
    float input keeps its dtype against integer exponents.
    input, other: broadcastable -> the broadcast shape."""
    base = 2.0
    if isinstance(input, Tensor) and is_float_dtype(input.dtype):
        base = as_tensor(2.0, dtype=input.dtype)  # 0-d: a wider float exponent still wins
    return mul(input, _pow(base, other))


# ----- floating-point decomposition and neighbours -----------------------------------------------


class Frexp(NamedTuple):
    """``frexp``'s result: input = mantissa * 2 ** exponent."""

    mantissa: Tensor
    exponent: Tensor


def frexp(input: Tensor) -> Frexp:  # noqa: A002 - PyTorch's name
    """Split input into a mantissa with 0.5 <= |mantissa| < 1 (input's dtype) and an int32
    exponent, input = mantissa * 2 ** exponent; 0, inf and NaN keep themselves with exponent 0.
    Floating-point tensors only, as in PyTorch; the gradient flows through the mantissa.
    input: any shape (*) -> (mantissa (*), exponent (*))."""
    x = _operand(input)
    return Frexp(apply(ops.FREXP_MANTISSA, x), apply(ops.FREXP_EXPONENT, x))


def nextafter(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - PyTorch's name
    """The next floating-point value after input towards other (other where they are equal),
    in their promoted dtype; floating-point tensors only, as in PyTorch. The gradient flows to
    input unchanged, 0 to other. input, other: broadcastable -> the broadcast shape."""
    if not isinstance(other, Tensor):
        raise DTypeError(
            f"[nextafter] other must be a Tensor, got a Python {type(other).__name__} "
            "(as in PyTorch)",
            help="wrap it, e.g. bai.tensor(2.0, dtype=input.dtype)",
        )
    return apply(ops.NEXTAFTER, _operand(input), other)


# ----- modified Bessel functions of the first kind -----------------------------------------------


def i0(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """I0, the modified Bessel function of the first kind of order 0: even, 1 at 0, inf past
    |x| = 709.78 and NaN at +-inf (as in PyTorch); integers give the default float dtype.
    input: any shape (*) -> the same shape."""
    return apply(ops.I0, _operand(input))


def i0e(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """exp(-|x|) I0(x), finite for every x (0 at +-inf); ``torch.special.i0e``.
    input: any shape (*) -> the same shape."""
    return apply(ops.I0E, _operand(input))


def i1(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """I1, the modified Bessel function of the first kind of order 1: odd, x/2 near 0, NaN at
    +-inf (as in PyTorch); ``torch.special.i1``. input: any shape (*) -> the same shape."""
    return apply(ops.I1, _operand(input))


def i1e(input: TensorLike) -> Tensor:  # noqa: A002 - PyTorch's name
    """exp(-|x|) I1(x), finite for every x (0 at +-inf); ``torch.special.i1e``.
    input: any shape (*) -> the same shape."""
    return apply(ops.I1E, _operand(input))


__all__ = [
    "log2", "log10", "exp2", "float_power", "trunc", "fix", "frac", "sinc", "copysign",
    "heaviside", "fmod", "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift",
    "erfc", "erfinv", "fmax", "fmin", "signbit", "isposinf", "isneginf", "isreal", "ldexp",
    "erfc_", "ldexp_", "Frexp", "frexp", "nextafter", "i0", "i0_", "i0e", "i1", "i1e",
]  # fmt: skip


# ----- in-place forms (Tensor methods only, as in PyTorch) ---------------------------------------


def float_power_(x: Tensor, exponent: TensorLike) -> Tensor:
    """``x = float_power(x, exponent)`` in place; x must be float64, the result's dtype."""
    if x.dtype != float64:
        raise DTypeError(
            f"[float_power_] the base has dtype {x.dtype}, but float_power's result is float64 "
            "(as in PyTorch)",
            help="use the out-of-place form, x = x.float_power(e), or convert first with "
            "x = x.double()",
        )
    return _float_power_written(x, exponent)


_float_power_written = _binary("float_power", float_power)


_ONE_INPUT = {
    "log2": log2, "log10": log10, "exp2": exp2, "trunc": trunc, "fix": fix, "frac": frac,
    "sinc": sinc, "erfc": erfc, "erfinv": erfinv, "i0": i0,
}  # fmt: skip
_TWO_INPUTS = {
    "copysign": copysign, "heaviside": heaviside, "fmod": fmod, "gcd": gcd, "lcm": lcm,
    "bitwise_left_shift": bitwise_left_shift, "bitwise_right_shift": bitwise_right_shift,
    "fmax": fmax, "fmin": fmin, "ldexp": ldexp, "nextafter": nextafter,
}  # fmt: skip
_IN_PLACE = {
    **{f"{name}_": _unary(name, function) for name, function in _ONE_INPUT.items()},
    **{f"{name}_": _binary(name, function) for name, function in _TWO_INPUTS.items()},
    "float_power_": float_power_,
}

# PyTorch also spells these in-place forms as functions: torch.erfc_(x), torch.ldexp_(x, e)
erfc_, ldexp_, i0_ = _IN_PLACE["erfc_"], _IN_PLACE["ldexp_"], _IN_PLACE["i0_"]

TENSOR_METHODS = {
    **_ONE_INPUT,
    "frexp": frexp, "signbit": signbit, "isposinf": isposinf, "isneginf": isneginf, "isreal": isreal,
    **_TWO_INPUTS,
    "float_power": float_power,
    **_IN_PLACE,
    "__lshift__": bitwise_left_shift, "__rlshift__": _reflected(bitwise_left_shift),
    "__rshift__": bitwise_right_shift, "__rrshift__": _reflected(bitwise_right_shift),
    "__ilshift__": _IN_PLACE["bitwise_left_shift_"],
    "__irshift__": _IN_PLACE["bitwise_right_shift_"],
}  # fmt: skip
