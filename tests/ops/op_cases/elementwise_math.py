"""Cases of the ops of ``buildingai/ops/elementwise_math.py``: log2, log10, exp2, trunc, sinc,
copysign, heaviside, fmod, and the integer-only gcd, lcm and bit shifts.
``tests/functions/test_elementwise_math.py`` sweeps their special values further."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import buildingai as bai

from .base import NOT_DIFFERENTIABLE, Draw, Sample, case, torch, trailing_sizes
from .elementwise import _mixed, _operand_pair, unary

SWEEP = ("tests/functions/test_elementwise_math.py",)
SMALL_FUNCTIONS = ("tests/functions/test_small_functions.py",)

unary("log2", lambda x: x.log2(), low=0.2, torch=torch.log2, gradgrad=True, covered_by=SWEEP)
unary("log10", lambda x: x.log10(), low=0.2, torch=torch.log10, gradgrad=True, covered_by=SWEEP)
unary("exp2", lambda x: x.exp2(), torch=torch.exp2, gradgrad=True, covered_by=SWEEP)
unary("trunc", lambda x: x.trunc(), low=-4.0, high=4.0, torch=torch.trunc, covered_by=SWEEP)
unary(
    "sinc",
    lambda x: x.sinc(),
    low=-3.0,
    high=3.0,
    torch=torch.sinc,
    gradgrad=True,
    covered_by=SWEEP,
)


def _copysign(d: Draw) -> Sample:
    """Magnitudes and signs that broadcast against each other; mixed dtypes and Python
    numbers among them in the dtype draws."""
    a, b = _operand_pair(d)
    if d.mixed:
        a, b = _mixed(d, a, b)
    return d.capture("copysign", lambda: bai.copysign(a, b))


case(
    "copysign",
    _copysign,
    torch=torch.copysign,
    gradgrad=True,
    onnx="ONNX has no copysign, and no operator reads the sign of -0.0 or of NaN",
    covered_by=SWEEP,
)


def _heaviside(d: Draw) -> Sample:
    """Steps of both signs with zeros among them (where ``values`` is taken)."""
    x, values = _operand_pair(d)
    flat = x.array.reshape(-1)
    flat[:: max(1, flat.size // 3)] = 0.0
    if d.mixed and d.choice((False, True)):
        values = 0.5  # a Python number takes x's dtype
    return d.capture("heaviside", lambda: bai.heaviside(x, values))


case(
    "heaviside",
    _heaviside,
    torch=torch.heaviside,
    no_grad="heaviside has no derivative, in PyTorch neither: its backward raises",
    covered_by=SWEEP,
)


def _fmod(d: Draw) -> Sample:
    """Dividends and divisors of both signs, divisors away from 0."""
    a, b = _operand_pair(d)
    b.array[...] = np.where(b.array < 0, -0.3, 0.3) + b.array
    if d.mixed:
        a, b = _mixed(d, a, b)
    return d.capture("fmod", lambda: bai.fmod(a, b))


case("fmod", _fmod, torch=torch.fmod, gradgrad=True, covered_by=SWEEP)


def integer_function(name: str, reference: Callable, shift_low: int | None = None) -> None:
    """A case of an integer-only op: operands of small values (shift amounts from
    ``shift_low``, past the narrowest dtype's width) in the case's integer dtypes; in the
    dtype draws, a Python int on the right."""

    def make(d: Draw) -> Sample:
        rest = trailing_sizes(d)
        a = d.ints("n", *rest, low=-8, high=9, dtype=d.dtype)
        if shift_low is None:
            b = d.ints(*rest, low=-8, high=9, dtype=d.dtype)
        else:
            b = d.ints(*rest, low=shift_low, high=11, dtype=d.dtype)
        if d.mixed and d.choice((False, True)):
            b = 3
        return d.call(name, a, b)

    case(
        name,
        make,
        dtypes=(np.int32, np.int64, np.uint8),
        torch=reference,
        no_grad=NOT_DIFFERENTIABLE,
        onnx=f"ONNX has no {name} for signed integers"
        if shift_low is not None
        else f"ONNX has no {name} operator",
        covered_by=SWEEP,
    )


integer_function("gcd", torch.gcd)
integer_function("lcm", torch.lcm)
integer_function("bitwise_left_shift", torch.bitwise_left_shift, shift_low=-2)
integer_function("bitwise_right_shift", torch.bitwise_right_shift, shift_low=-2)


unary("erfc", lambda x: x.erfc(), low=-3.0, high=5.0, torch=torch.erfc, gradgrad=True,
      onnx="ONNX has no erfc; 1 - Erf loses the tail", covered_by=SMALL_FUNCTIONS)  # fmt: skip
unary("erfinv", lambda x: x.erfinv(), low=-0.95, high=0.95, torch=torch.erfinv, gradgrad=True,
      onnx="ONNX has no inverse error function", covered_by=SMALL_FUNCTIONS)  # fmt: skip
unary("signbit", lambda x: x.signbit(), torch=torch.signbit, no_grad=NOT_DIFFERENTIABLE,
      onnx="ONNX cannot read the sign of -0.0 or of NaN", covered_by=SMALL_FUNCTIONS)  # fmt: skip


def nan_ignoring(name: str, reference: Callable) -> None:
    """A case of ``fmax``/``fmin``: operands that broadcast, with NaNs and ties among them."""

    def make(d: Draw) -> Sample:
        a, b = _operand_pair(d)
        if d.mixed:
            a, b = _mixed(d, a, b)
        if isinstance(b, bai.Tensor) and b.dtype.kind == "f":
            flat = b.array.reshape(-1)
            flat[:: max(1, flat.size // 2)] = np.nan
        return d.capture(name, lambda: getattr(bai, name)(a, b))

    case(name, make, torch=reference, gradgrad=True,
         onnx=f"ONNX's Max and Min propagate NaN; {name} ignores it",
         covered_by=SMALL_FUNCTIONS)  # fmt: skip


nan_ignoring("fmax", torch.fmax)
nan_ignoring("fmin", torch.fmin)


NEW_FUNCTIONS = ("tests/functions/test_frexp_nextafter_bessel.py",)
NO_BESSEL_ONNX = "ONNX has no Bessel function operator"


def _frexp_part(name: str, index: int):
    def make(d: Draw) -> Sample:
        x = d.floats("n", *trailing_sizes(d), low=-40.0, high=40.0)
        return d.capture(name, lambda: bai.frexp(x)[index])

    return make


case("frexp_mantissa", _frexp_part("frexp_mantissa", 0), dtypes=(np.float32, np.float64),
     torch=lambda x: torch.frexp(x).mantissa,
     onnx="ONNX has no operator that splits a float into mantissa and exponent",
     covered_by=NEW_FUNCTIONS)  # fmt: skip
case("frexp_exponent", _frexp_part("frexp_exponent", 1), dtypes=(np.float32, np.float64),
     torch=lambda x: torch.frexp(x).exponent, no_grad=NOT_DIFFERENTIABLE,
     onnx="ONNX has no operator that splits a float into mantissa and exponent",
     covered_by=NEW_FUNCTIONS)  # fmt: skip


def _nextafter(d: Draw) -> Sample:
    """Starts and directions that broadcast, equal pairs among them."""
    a, b = _operand_pair(d)
    b.array.reshape(-1)[:1] = a.array.reshape(-1)[:1]
    return d.capture("nextafter", lambda: bai.nextafter(a, b))


case("nextafter", _nextafter, dtypes=(np.float32, np.float64), torch=torch.nextafter,
     onnx="ONNX has no nextafter", covered_by=NEW_FUNCTIONS)  # fmt: skip
unary("i0", lambda x: bai.i0(x), low=-12.0, high=12.0, torch=torch.i0, gradgrad=True,
      onnx=NO_BESSEL_ONNX, covered_by=NEW_FUNCTIONS)  # fmt: skip
unary("i0e", lambda x: bai.i0e(x), low=-12.0, high=12.0, torch=torch.special.i0e,
      gradgrad=True, onnx=NO_BESSEL_ONNX, covered_by=NEW_FUNCTIONS)  # fmt: skip
unary("i1", lambda x: bai.i1(x), low=-12.0, high=12.0, torch=torch.special.i1, gradgrad=True,
      onnx=NO_BESSEL_ONNX, covered_by=NEW_FUNCTIONS)  # fmt: skip
unary("i1e", lambda x: bai.i1e(x), low=-12.0, high=12.0, torch=torch.special.i1e,
      gradgrad=True, onnx=NO_BESSEL_ONNX, covered_by=NEW_FUNCTIONS)  # fmt: skip
