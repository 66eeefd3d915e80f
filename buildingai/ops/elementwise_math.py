"""Element-wise primitive ops beyond ``elementwise.py``: base-2 and base-10 logarithms, ``exp2``,
truncation, the normalized ``sinc``, ``copysign``, ``heaviside``, the C remainder ``fmod``, the
integer-only ``gcd``, ``lcm`` and bit shifts, ``erfc``, ``erfinv``, the NaN-ignoring ``fmax`` and
``fmin``, ``signbit``, ``frexp``'s two parts, ``nextafter``, and the modified Bessel functions
``i0``, ``i1`` and their scaled forms ``i0e``, ``i1e``.

Dtypes follow PyTorch: log2, log10, exp2, sinc and copysign give integer inputs the default
float dtype (``FloatFunction``); trunc keeps its input's; fmod, heaviside, gcd, lcm and the
shifts take PyTorch's promoted dtype of their operands. Backward rules are written with Tensor
ops, so second derivatives come for free.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BuildingAIError, DTypeError
from .bessel import i0_array, i0e_array, i1_array, i1e_array
from .elementwise import PiecewiseConstant, _needs, _refuse_integer_zero_division
from .families import ElementwiseOp, FloatFunction
from .promotion import as_float, float_dtype, pair_dtype, result_type, torch_dtype
from .special import (
    _ERF_MID_P,
    _ERF_MID_Q,
    _ERFC_FAR_R,
    _ERFC_FAR_S,
    _ERFC_NEAR_R,
    _ERFC_NEAR_S,
    _ERFC_SWITCH,
    _ERX,
    TWO_OVER_SQRT_PI,
    _horner,
    erf_array,
)

_ARRAY = np.ndarray  # NumPy arrays of one dtype: NumPy's result dtype is then PyTorch's
_INTEGERS = "iu"  # dtype kinds of signed and unsigned integers (booleans excluded)
_LN2 = 0.6931471805599453  # the constants of PyTorch's backward formulas
_LN10 = 2.3025850929940456
_SINC_CURVATURE = -(math.pi**2) / 3  # sinc''(0)


def _dtype_names(*values) -> str:
    return " and ".join(
        str(value.dtype) if hasattr(value, "dtype") else f"a Python {type(value).__name__}"
        for value in values
    )


# ----- logarithms and powers of 2 and 10 ---------------------------------------------------------


class Log2(FloatFunction):
    """log2(x): -inf at 0, NaN below."""

    name = "log2"
    autocast = "float32"
    fusion = ("log2", None)

    def forward(self, ctx, xp, x):
        return xp.log2(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / (x ln 2)
        return (grad / (x * _LN2),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))  # ONNX has no Log2: ln(x) / ln(2)
        emit.node("Div", [emit.node("Log", [x]), emit.scalar(_LN2, x)], output)


class Log10(FloatFunction):
    """log10(x): -inf at 0, NaN below."""

    name = "log10"
    autocast = "float32"
    fusion = ("log10", None)

    def forward(self, ctx, xp, x):
        return xp.log10(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / (x ln 10)
        return (grad / (x * _LN10),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))  # ONNX has no Log10: ln(x) / ln(10)
        emit.node("Div", [emit.node("Log", [x]), emit.scalar(_LN10, x)], output)


class Exp2(FloatFunction):
    name = "exp2"
    fusion = ("exp2", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.exp2(as_float(x))

    def backward(self, ctx, grad):
        return (grad * ctx.output * _LN2,)  # d/dx 2^x = 2^x ln 2

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Pow", [emit.scalar(2.0, x), x], output)


LOG2, LOG10, EXP2 = Log2(), Log10(), Exp2()


# ----- truncation and sinc -----------------------------------------------------------------------


class Trunc(PiecewiseConstant):
    """Round towards zero (-2.7 -> -2, keeping the sign of zero); zero gradient. Integer
    inputs are returned as a copy; booleans are refused, as in PyTorch."""

    def check(self, x):
        if x.dtype.kind == "b":
            raise DTypeError(
                "[trunc] takes integer or floating-point tensors, got bool (as in PyTorch)",
                help="convert first, e.g. x.astype('int64') or x.float()",
            )

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = inputs
        if emit.dtype(x).kind in self.identity_kinds:
            emit.node("Identity", [x], output)
            return
        # ONNX has no Trunc: ceil below zero, floor above (both keep the sign of zero)
        negative = emit.node("Less", [x, emit.scalar(0, x)], dtype=np.bool_)
        emit.node("Where", [negative, emit.node("Ceil", [x]), emit.node("Floor", [x])], output)


TRUNC = Trunc("trunc", None, lambda xp, x: xp.trunc(x), _INTEGERS)


class Sinc(FloatFunction):
    """The normalized sinc, sin(pi x) / (pi x), and 1 at x = 0.

    The first derivative is PyTorch's formula, with PyTorch's 0 where pi x^2 is 0; there the
    rule follows the Taylor series 1 - (pi x)^2 / 6, so that the second derivative at 0 is the
    true -pi^2 / 3 (PyTorch's is NaN).
    """

    name = "sinc"
    flops_per_element = 4

    def forward(self, ctx, xp, x):
        x = as_float(x)
        zero = x == 0
        turned = xp.where(zero, 1, x) * math.pi  # no 0 / 0 where the answer is 1
        return xp.where(zero, 1, xp.sin(turned) / turned)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        tiny = x * x * math.pi == 0
        safe = x.where(~tiny, 1.0)  # the formula's branch never divides by 0, even unselected
        turned = safe * math.pi
        slope = (turned * turned.cos() - turned.sin()) / (safe * safe * math.pi)
        return (grad * slope.where(~tiny, x * _SINC_CURVATURE),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        turned = emit.node("Mul", [x, emit.scalar(math.pi, x)])
        ratio = emit.node("Div", [emit.node("Sin", [turned]), turned])
        zero = emit.node("Equal", [x, emit.scalar(0, x)], dtype=np.bool_)
        emit.node("Where", [zero, emit.scalar(1, x), ratio], output)


SINC = Sinc()


# ----- signs and steps ---------------------------------------------------------------------------


class Copysign(FloatFunction):
    """|a| with the sign of b, signed zeros and NaN signs included; integers give the default
    float dtype. PyTorch's gradients: ``grad * out / a`` (0 where a == 0) for a, 0 for b."""

    name = "copysign"
    fusion = ("copysign", None)
    save_output = True

    def forward(self, ctx, xp, a, b):
        out = xp.copysign(a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype is out.dtype:
            return out  # same float dtypes: NumPy's dtype is PyTorch's
        return torch_dtype(xp.copysign, a, b, out, float_dtype(pair_dtype(a, b)))

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_a = grad_b = None
        if _needs(a):
            zero = a == 0
            # +-1 (NaN where a is inf or NaN, as PyTorch's ratio); the branch where never
            # divides by 0, so that a second derivative is 0 there, not 0 / 0
            ratio = (ctx.output / a.where(~zero, 1.0)).where(~zero, 0.0)
            grad_a = grad * ratio
        if _needs(b):
            grad_b = b.new_zeros(b.shape)
        return grad_a, grad_b


COPYSIGN = Copysign()


class Heaviside(ElementwiseOp):
    """The step function: 0 where x < 0, ``values`` where x == 0, 1 where x > 0 (NaN gives 0,
    as in PyTorch). Tensors must share one dtype, as in PyTorch; a Python number takes the
    promoted dtype. No derivative: backward raises, as PyTorch's does."""

    name = "heaviside"
    save_inputs = False

    def check(self, x, values):
        if hasattr(values, "dtype") and hasattr(x, "dtype") and values.dtype != x.dtype:
            raise DTypeError(
                f"[heaviside] input and values must have one dtype, got {_dtype_names(x, values)} "
                "(as in PyTorch)",
                help="convert values first, e.g. values.astype(input.dtype)",
            )

    def forward(self, ctx, xp, x, values):
        want = result_type(x, values)
        out = xp.where(x == 0, values, x > 0)
        return out if out.dtype == want else out.astype(want)

    def backward(self, ctx, grad):
        raise BuildingAIError(
            "[heaviside] has no derivative (PyTorch has none either)",
            help="detach its input (x.detach()) where the step needs no gradient, or use a smooth "
            "step such as sigmoid(k * x)",
        )

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = emit.dtype(output)
        x, values = emit.operands(inputs, dtype)
        if dtype.kind == "b":  # True stays True, False takes the value: a logical or
            emit.node("Or", [x, values], output)
            return
        positive = emit.node("Greater", [x, emit.scalar(0, x)], dtype=np.bool_)
        zero = emit.node("Equal", [x, emit.scalar(0, x)], dtype=np.bool_)
        emit.node("Where", [zero, values, emit.cast(positive, dtype)], output)


HEAVISIDE = Heaviside()


# ----- remainders --------------------------------------------------------------------------------


class Fmod(ElementwiseOp):
    """C's ``fmod``: a - trunc(a / b) * b, with the dividend's sign (``remainder`` takes the
    divisor's). Integer division by zero is refused; a float one gives NaN."""

    name = "fmod"
    fusion = ("fmod", None)

    def check(self, a, b):
        if result_type(a, b).kind == "b":
            raise DTypeError(
                "[fmod] takes numbers, got bool and bool (as in PyTorch)",
                help="convert first, e.g. x.astype('int64')",
            )

    def forward(self, ctx, xp, a, b):
        _refuse_integer_zero_division(self.name, b)
        return torch_dtype(xp.fmod, a, b, xp.fmod(a, b))

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        # PyTorch's: d/da = 1, d/db = -trunc(a / b)
        grad_b = -grad * TRUNC(a / b) if _needs(b) else None
        return (grad if _needs(a) else None), grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Mod", inputs, output, fmod=1)  # ONNX's Mod with C's sign rule


FMOD = Fmod()


# ----- integer-only functions --------------------------------------------------------------------


class IntegerFunction(ElementwiseOp):
    """A binary function of integers only (gcd, lcm, bit shifts), in PyTorch's promoted integer
    dtype; booleans and floats are refused, as in PyTorch; no gradient. ``compute(xp, a, b)``
    receives both operands as arrays of that dtype."""

    save_inputs = False
    differentiable = False

    def __init__(self, name: str, compute, example: str) -> None:
        self.name, self.compute, self.example = name, compute, example

    def check(self, a, b):
        if result_type(a, b).kind not in _INTEGERS:
            raise DTypeError(
                f"[{self.name}] takes integer tensors, got {_dtype_names(a, b)}",
                help=f"convert first, e.g. {self.example}",
            )

    def forward(self, ctx, xp, a, b):
        want = result_type(a, b)
        return self.compute(xp, xp.asarray(a, dtype=want), xp.asarray(b, dtype=want))


def _left_shift(xp, a, b):
    # PyTorch's rule: a shift by a negative amount or by the width or more gives 0
    width = a.dtype.itemsize * 8
    valid = (b >= 0) & (b < width)
    return xp.where(valid, xp.left_shift(a, xp.where(valid, b, 0)), 0)


def _right_shift(xp, a, b):
    # out of range, every bit is shifted out: the sign fills signed integers, 0 unsigned ones
    width = a.dtype.itemsize * 8
    valid = (b >= 0) & (b < width)
    filled = xp.right_shift(a, width - 1) if a.dtype.kind == "i" else 0
    return xp.where(valid, xp.right_shift(a, xp.where(valid, b, 0)), filled)


GCD = IntegerFunction("gcd", lambda xp, a, b: xp.gcd(a, b), "x.astype('int64')")
LCM = IntegerFunction("lcm", lambda xp, a, b: xp.lcm(a, b), "x.astype('int64')")
BITWISE_LEFT_SHIFT = IntegerFunction(
    "bitwise_left_shift", _left_shift, "x.astype('int64') << 2, or x * 2**n for floats"
)
BITWISE_RIGHT_SHIFT = IntegerFunction(
    "bitwise_right_shift", _right_shift, "x.astype('int64') >> 2, or floor(x / 2**n) for floats"
)


# ----- the complementary and inverse error functions ---------------------------------------------


def _erfc_float64(xp, x):
    """erfc of a float64 array with full relative precision in the tail (fdlibm's ranges):
    1 - erf(x) near 0, where nothing cancels; the tail formula for |x| >= 0.84375, where
    1 - erf(x) would lose the small result to rounding; 2 - erfc(|x|) for negative x."""
    flat = x.reshape(-1)
    ax = xp.abs(flat)
    out = 1.0 - erf_array(xp, flat)  # near 0, and NaN for NaN
    mid = (ax >= 0.84375) & (ax < 1.25)
    if mid.any():
        s = ax[mid] - 1.0
        out[mid] = (1.0 - _ERX) - _horner(s, _ERF_MID_P) / _horner(s, _ERF_MID_Q)
    for low, high, r, s in ((1.25, _ERFC_SWITCH, _ERFC_NEAR_R, _ERFC_NEAR_S),
                            (_ERFC_SWITCH, 28.0, _ERFC_FAR_R, _ERFC_FAR_S)):  # fmt: skip
        band = (ax >= low) & (ax < high)
        if band.any():
            v = ax[band]
            inverse_square = 1.0 / (v * v)
            ratio = _horner(inverse_square, r) / _horner(inverse_square, s)
            # exp(-x^2) with x split so that the square of its high part is exact
            z = (v.view(xp.uint64) & xp.uint64(0xFFFFFFFF00000000)).view(xp.float64)
            out[band] = xp.exp(-z * z - 0.5625) * xp.exp((z - v) * (z + v) + ratio) / v
    out[ax >= 28.0] = 0.0  # below the smallest float64
    tail = (ax >= 0.84375) & (flat < 0)
    out[tail] = 2.0 - out[tail]
    return out.reshape(x.shape)


class Erfc(FloatFunction):
    """1 - erf(x), accurate where it is tiny (large x). Gradient: -2/sqrt(pi) exp(-x^2)."""

    name = "erfc"

    def forward(self, ctx, xp, x):
        x = as_float(x)
        if xp.__name__ != "numpy":  # CuPy: 1 - erf, without the far tail's relative precision
            return 1.0 - erf_array(xp, x)
        return _erfc_float64(xp, x.astype(np.float64)).astype(x.dtype, copy=False)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * ((x * x).neg().exp() * -TWO_OVER_SQRT_PI),)


# Giles' single-precision approximation of erfinv ("Approximating the erfinv function", 2010)
_ERFINV_CENTRAL = (
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)  # fmt: skip


class Erfinv(FloatFunction):
    """The inverse of erf on (-1, 1); +-inf at +-1, NaN outside. Giles' approximation, refined
    by Newton steps on erf in float64. Gradient: sqrt(pi)/2 exp(erfinv(x)^2)."""

    name = "erfinv"
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        x = as_float(x)
        with np.errstate(divide="ignore", invalid="ignore"):  # +-1 and |x| > 1: inf and NaN
            return self._inverse(xp, x.astype(np.float64)).astype(x.dtype, copy=False)

    def _inverse(self, xp, y):
        w = -xp.log1p(-y * y)
        central = w < 5.0
        t = xp.where(central, w - 2.5, xp.sqrt(xp.maximum(w, 5.0)) - 3.0)
        p = xp.where(central, _ERFINV_CENTRAL[0], _ERFINV_TAIL[0])
        for c_central, c_tail in zip(_ERFINV_CENTRAL[1:], _ERFINV_TAIL[1:], strict=True):
            p = p * t + xp.where(central, c_central, c_tail)
        out = p * y
        finite = xp.isfinite(out)
        for _ in range(2):  # Newton: each step squares the relative error
            step = (erf_array(xp, out) - y) / (TWO_OVER_SQRT_PI * xp.exp(-out * out))
            out = xp.where(finite, out - step, out)
        return xp.where(xp.abs(y) == 1, xp.copysign(np.inf, y), out)

    def backward(self, ctx, grad):
        out = ctx.output
        return (grad * ((out * out).exp() * (1 / TWO_OVER_SQRT_PI)),)


ERFC, ERFINV = Erfc(), Erfinv()


# ----- NaN-ignoring maximum and minimum, and the sign bit ----------------------------------------


class NanIgnoringSelect(ElementwiseOp):
    """``fmax``/``fmin``: the larger (smaller) of a and b, NaN only where both are. Gradient as
    PyTorch's: to a where a wins, ties included, or b is NaN; to b elsewhere."""

    def __init__(self, name: str, ufunc: str, a_wins) -> None:
        self.name, self.ufunc, self.a_wins = name, ufunc, a_wins

    def check(self, a, b):
        if result_type(a, b).kind == "b":
            raise DTypeError(
                f"[{self.name}] takes numbers, got bool and bool (as in PyTorch)",
                help="convert first, e.g. x.astype('int64')",
            )

    def forward(self, ctx, xp, a, b):
        ufunc = getattr(xp, self.ufunc)
        out = torch_dtype(ufunc, a, b, ufunc(a, b))
        # a tie of signed zeros returns a, as PyTorch's (NumPy's fmax prefers +0.0)
        return xp.where(a == b, a, out).astype(out.dtype, copy=False)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        to_a = self.a_wins(a, b) | (b != b)  # b != b: b is NaN
        grad_a = grad.where(to_a, 0.0) if _needs(a) else None
        grad_b = grad.where(~to_a, 0.0) if _needs(b) else None
        return grad_a, grad_b


FMAX = NanIgnoringSelect("fmax", "fmax", lambda a, b: a >= b)
FMIN = NanIgnoringSelect("fmin", "fmin", lambda a, b: a <= b)


class Signbit(ElementwiseOp):
    """True where the sign bit is set: negatives, -0.0 and NaNs with the sign; no gradient.
    ONNX has no operator that reads it (``Sign`` of -0.0 is 0)."""

    name = "signbit"
    save_inputs = False
    differentiable = False

    def output_dtype(self, *operands) -> np.dtype:
        return np.dtype(bool)

    def forward(self, ctx, xp, x):
        return xp.signbit(x)


SIGNBIT = Signbit()


# ----- floating-point decomposition and neighbours -----------------------------------------------


def _refuse_non_float(name: str, *values) -> None:
    if any(getattr(value, "dtype", np.dtype(float)).kind != "f" for value in values):
        raise DTypeError(
            f"[{name}] takes floating-point tensors, got {_dtype_names(*values)} (as in PyTorch)",
            help="convert first, e.g. x.float() or x.double()",
        )


def _frexp_parts(xp, x):
    if x.dtype.itemsize < 4:  # bfloat16 has no frexp: float32 holds its values exactly
        mantissa, exponent = xp.frexp(x.astype(np.float32))
        return mantissa.astype(x.dtype), exponent
    return xp.frexp(x)


class FrexpExponent(ElementwiseOp):
    """The int32 exponent e of x = m * 2^e with 0.5 <= |m| < 1 (0 for 0, inf and NaN); no
    gradient."""

    name = "frexp_exponent"
    save_inputs = False
    differentiable = False

    def output_dtype(self, *operands) -> np.dtype:
        return np.dtype(np.int32)

    def check(self, x):
        _refuse_non_float("frexp", x)

    def forward(self, ctx, xp, x):
        return _frexp_parts(xp, x)[1].astype(np.int32, copy=False)


class FrexpMantissa(ElementwiseOp):
    """The mantissa m of x = m * 2^e with 0.5 <= |m| < 1, in x's dtype (x itself for 0, inf
    and NaN). PyTorch's gradient, grad / 2^e with 2^e in the default float dtype (float32:
    0 for e >= 128, inf for e < -149)."""

    name = "frexp_mantissa"

    def output_dtype(self, *operands) -> np.dtype:
        return np.dtype(operands[0].dtype)

    def check(self, x):
        _refuse_non_float("frexp", x)

    def forward(self, ctx, xp, x):
        return _frexp_parts(xp, x)[0]

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        scaled = grad / FREXP_EXPONENT(x).exp2()
        return (scaled if scaled.dtype == x.dtype else scaled.astype(x.dtype),)


FREXP_EXPONENT, FREXP_MANTISSA = FrexpExponent(), FrexpMantissa()


class Nextafter(ElementwiseOp):
    """The next floating-point value after a towards b (b where a == b, NaN if either is), in
    the operands' promoted float dtype. PyTorch's gradients: grad for a (0 where a == b), 0
    for b."""

    name = "nextafter"

    def check(self, a, b):
        _refuse_non_float("nextafter", a, b)

    def forward(self, ctx, xp, a, b):
        want = result_type(a, b)
        a, b = xp.asarray(a, dtype=want), xp.asarray(b, dtype=want)
        if want.itemsize < 4 and want != np.float16:  # bfloat16: ml_dtypes has no nextafter
            return _bfloat16_nextafter(xp, a, b)
        # where a == b the result is b, signed zeros included (NumPy's float16 keeps a)
        return xp.where(a == b, b, xp.nextafter(a, b))

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_b = b.new_zeros(b.shape) if _needs(b) else None
        return (grad.where(a != b, 0.0) if _needs(a) else None), grad_b


def _bfloat16_nextafter(xp, a, b):
    # step the 16-bit pattern: +-1 on the magnitude, the smallest subnormal from zero
    bits = a.view(xp.uint16).astype(xp.int32)
    towards_larger_magnitude = (b > a) == (a > 0)
    stepped = xp.where(towards_larger_magnitude, bits + 1, bits - 1)
    smallest = xp.where(b > a, 1, 0x8001)  # +-1 unit in the last place from zero
    stepped = xp.where(a == 0, smallest, stepped).astype(xp.uint16).view(a.dtype)
    same = a == b
    return xp.where(same, b, xp.where((a != a) | (b != b), a + b, stepped))


NEXTAFTER = Nextafter()


# ----- modified Bessel functions of the first kind -----------------------------------------------


class BesselFunction(FloatFunction):
    """An order-0 or order-1 modified Bessel function of the first kind (or its form scaled by
    exp(-|x|)), from Cephes' Chebyshev series evaluated in float64 (``ops/bessel.py``). ONNX
    has no Bessel operator."""

    flops_per_element = 60  # two exponentials and a series of 25 to 30 terms

    def __init__(self, name: str, compute, slope) -> None:
        self.name, self.compute, self.slope = name, compute, slope

    def forward(self, ctx, xp, x):
        x = as_float(x)
        with np.errstate(over="ignore", invalid="ignore"):  # inf past |x| = 709.78, NaN at inf
            return self.compute(xp, x.astype(np.float64)).astype(x.dtype, copy=False)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * self.slope(x),)


def _over_x(value, x):
    """value / x away from 0, where the quotient's limit is taken instead (the branch never
    divides by 0, so a second derivative is finite there)."""
    zero = x == 0
    return value / x.where(~zero, 1.0)


def _i1_slope(x):
    # i1' = i0 - i1 / x, with the limit 1/2 at 0
    return (I0(x) - _over_x(I1(x), x)).where(x != 0, 0.5)


def _i1e_slope(x):
    # i1e' = i0e - i1e (sign(x) + 1/x), with the limit 1/2 at 0
    scaled = I1E(x)
    return (I0E(x) - scaled * x.sign() - _over_x(scaled, x)).where(x != 0, 0.5)


I0 = BesselFunction("i0", i0_array, lambda x: I1(x))
I0E = BesselFunction("i0e", i0e_array, lambda x: I1E(x) - x.sign() * I0E(x))
I1 = BesselFunction("i1", i1_array, _i1_slope)
I1E = BesselFunction("i1e", i1e_array, _i1e_slope)
