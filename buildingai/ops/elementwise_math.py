"""Element-wise primitive ops beyond ``elementwise.py``: base-2 and base-10 logarithms, ``exp2``,
truncation, the normalized ``sinc``, ``copysign``, ``heaviside``, the C remainder ``fmod``, and
the integer-only ``gcd``, ``lcm`` and bit shifts.

Dtypes follow PyTorch: log2, log10, exp2, sinc and copysign give integer inputs the default
float dtype (``FloatFunction``); trunc keeps its input's; fmod, heaviside, gcd, lcm and the
shifts take PyTorch's promoted dtype of their operands. Backward rules are written with Tensor
ops, so second derivatives come for free.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BuildingAIError, DTypeError
from .elementwise import PiecewiseConstant, _needs, _refuse_integer_zero_division
from .families import ElementwiseOp, FloatFunction
from .promotion import as_float, float_dtype, pair_dtype, result_type, torch_dtype

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
