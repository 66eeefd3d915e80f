"""Element-wise primitive ops: arithmetic, math functions, rounding, selection (comparisons and
logic are in ``logic.py``).

Binary ops broadcast. Backward rules return gradients shaped like the broadcast output; the engine
sums them back to each input's shape. Python scalars may stand for any input and receive no
gradient. Dtypes follow PyTorch's promotion (``promotion.result_type``) where NumPy differs: an
integer tensor meeting a float takes the float's dtype (a Python float gives the default float
dtype), a 0-d tensor does not widen a dimensioned tensor of its own category, and float-only
functions (``sqrt``, ``exp``, true division...) of integer tensors give the default float dtype,
not float64. Every record inherits ``infer`` and ``cost`` from its family (``ops/families.py``).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BuildingAIError
from .families import ElementwiseOp, FloatFunction, SameDtypeFunction
from .promotion import (
    INTEGRAL,
    as_float,
    cast_operands,
    float_dtype,
    pair_dtype,
    result_type,
    torch_dtype,
)

_INTEGRAL = INTEGRAL
_INT64 = np.dtype(np.int64)


def _is_tensor(value) -> bool:
    return hasattr(value, "requires_grad")


def _needs(value) -> bool:
    """Whether ``value`` is a Tensor that requires grad (a Python number never does)."""
    return getattr(value, "requires_grad", False)


def in_place(ufunc, array, *operands):
    """``ufunc(array, *operands)`` written into ``array``, a temporary the caller owns.

    NumPy returns 0-d results as scalars, which have no memory to reuse; those are recomputed.
    """
    if array.ndim:
        return ufunc(array, *operands, out=array)
    return ufunc(array, *operands)


def _is_integral(value) -> bool:
    """True for integer/bool arrays and Python ints."""
    if hasattr(value, "dtype"):
        return value.dtype.kind in _INTEGRAL
    return isinstance(value, int)


def _refuse_integer_zero_division(op, divisor) -> None:
    """Integer division by zero has no answer (NumPy would silently return 0)."""
    if not _is_integral(divisor):
        return
    has_zero = bool((divisor == 0).any()) if hasattr(divisor, "any") else divisor == 0
    if has_zero:
        raise BuildingAIError(
            f"[{op}] integer division by zero",
            help="make sure the divisor has no zeros, or convert to a float dtype first",
        )


def _scalar_array(value, dtype):
    """A Python scalar as a 0-d array of ``dtype`` (for ONNX initializers)."""
    return np.asarray(value, dtype=dtype)


# ----- arithmetic ---------------------------------------------------------------------------------


_ARRAY = np.ndarray  # NumPy arrays of one dtype: NumPy's result dtype is then PyTorch's


class Add(ElementwiseOp):
    name = "add"
    fusion = ("add", None)
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        out = xp.add(a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype:
            return out  # the common case, tested inline: this is the hottest op family
        return torch_dtype(xp.add, a, b, out)

    def backward(self, ctx, grad):
        return grad, grad

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Add", inputs, output)


class Sub(ElementwiseOp):
    name = "sub"
    fusion = ("subtract", None)
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        out = xp.subtract(a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype:
            return out  # the common case, tested inline: this is the hottest op family
        return torch_dtype(xp.subtract, a, b, out)

    def backward(self, ctx, grad):
        return grad, -grad

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sub", inputs, output)


class Mul(ElementwiseOp):
    name = "mul"
    fusion = ("multiply", None)

    def forward(self, ctx, xp, a, b):
        out = xp.multiply(a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype:
            return out  # the common case, tested inline: this is the hottest op family
        return torch_dtype(xp.multiply, a, b, out)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        return (grad * b if _needs(a) else None), (grad * a if _needs(b) else None)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Mul", inputs, output)


class Div(FloatFunction):
    """True division: integers divide into the default float dtype (NumPy gives float64)."""

    name = "div"
    fusion = ("true_divide", None)

    def forward(self, ctx, xp, a, b):
        out = xp.true_divide(a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype is out.dtype:
            return out  # same float dtypes: NumPy's dtype is PyTorch's
        return torch_dtype(xp.true_divide, a, b, out, float_dtype(pair_dtype(a, b)))

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_a = grad / b if _needs(a) else None
        grad_b = -grad * a / (b * b) if _needs(b) else None
        return grad_a, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Div", inputs, output)  # operands take the result's (float) dtype first


class Neg(SameDtypeFunction):
    name = "neg"
    fusion = ("negative", None)
    save_inputs = False

    def forward(self, ctx, xp, x):
        return xp.negative(x)

    def backward(self, ctx, grad):
        return (-grad,)

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.dtype(output).kind == "u":  # ONNX's Neg takes signed types: 0 - x wraps alike
            (x,) = inputs
            emit.node("Sub", [emit.scalar(0, x), x], output)
            return
        emit.simple("Neg", inputs, output)


class Pow(ElementwiseOp):
    """``base ** exponent``; either may be a Python scalar.

    The exponent's gradient, base^exponent * log(base), is computed only when the exponent
    requires grad; it recomputes the power in backward rather than saving the output, so that
    ``y = x ** 2; y.add_(1)`` stays legal, as in PyTorch.
    """

    name = "pow"
    autocast = "float32"

    def forward(self, ctx, xp, base, exponent):
        if type(exponent) in (int, float) and hasattr(base, "dtype") and base.dtype.kind == "f":
            fast = _SCALAR_POWERS.get(exponent)
            if fast is not None:  # multiplies and roots instead of a general pow (as PyTorch)
                return fast(xp, base)
        want = result_type(base, exponent)
        return xp.power(*cast_operands((base, exponent), want)).astype(want, copy=False)

    def backward(self, ctx, grad):
        base, exponent = ctx.inputs
        grad_base = grad_exponent = None
        if _needs(base):
            if _is_tensor(exponent):
                # PyTorch: a zero exponent gives a zero gradient even at base 0 (not 0 * inf)
                term = grad * (exponent * base ** (exponent - 1))
                grad_base = term.where(exponent != 0, 0.0)
            elif exponent == 0:
                grad_base = grad.new_zeros(grad.shape)
            elif exponent == 1:
                grad_base = grad
            elif exponent == 2:
                grad_base = grad * (base * 2.0)
            else:
                grad_base = grad * (base ** (exponent - 1) * exponent)
        if _needs(exponent):
            power = base**exponent
            if _is_tensor(base):
                term = grad * (power * base.log())
                # d/dy 0^y is taken as 0 for y >= 0 (PyTorch), not 0 * log(0) = nan
                grad_exponent = term.where(~((base == 0) & (exponent >= 0)), 0.0)
            elif base == 0:
                term = grad * (power * -math.inf)
                grad_exponent = term.where(~(exponent >= 0), 0.0)
            else:
                log_base = math.log(base) if base > 0 else math.nan
                grad_exponent = grad * (power * log_base)
        return grad_base, grad_exponent

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Pow", inputs, output)


def _cube(xp, x):
    out = xp.square(x)
    return in_place(xp.multiply, out, x)


_SCALAR_POWERS = {
    2: lambda xp, x: xp.square(x),
    3: _cube,
    0.5: lambda xp, x: xp.sqrt(x),
    -0.5: lambda xp, x: in_place(xp.reciprocal, xp.sqrt(x)),
    -1: lambda xp, x: xp.reciprocal(x),
    -2: lambda xp, x: in_place(xp.reciprocal, xp.square(x)),
}


class Maximum(ElementwiseOp):
    """Element-wise maximum (NaN wins); at ties each input gets half the gradient (PyTorch)."""

    name = "maximum"
    fusion = ("maximum", None)

    def forward(self, ctx, xp, a, b):
        return torch_dtype(xp.maximum, a, b, xp.maximum(a, b))

    def backward(self, ctx, grad):
        return _select_backward(ctx, grad, loser_of_a=lambda a, b: a < b)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Max", inputs, output)


class Minimum(ElementwiseOp):
    """Element-wise minimum (NaN wins); at ties each input gets half the gradient (PyTorch)."""

    name = "minimum"
    fusion = ("minimum", None)

    def forward(self, ctx, xp, a, b):
        return torch_dtype(xp.minimum, a, b, xp.minimum(a, b))

    def backward(self, ctx, grad):
        return _select_backward(ctx, grad, loser_of_a=lambda a, b: a > b)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Min", inputs, output)


def _select_backward(ctx, grad, loser_of_a):
    """Gradient of maximum/minimum: the winner takes the gradient, a tie splits it in halves."""
    a, b = ctx.inputs
    shared = (grad * 0.5).where(a == b, grad)
    grad_a = shared.where(~loser_of_a(a, b), 0.0) if _needs(a) else None
    grad_b = shared.where(~loser_of_a(b, a), 0.0) if _needs(b) else None
    return grad_a, grad_b


class Clamp(ElementwiseOp):
    """``min(max(x, low), high)``; either bound may be None, a Python scalar or a tensor.

    As in PyTorch the result is ``high`` where ``low > high``, and at a boundary (x == low or
    x == high) the gradient flows to x, not to the bound.
    """

    name = "clamp"
    flops_per_element = 2

    def forward(self, ctx, xp, x, low, high):
        if low is not None and high is not None:
            out = xp.clip(x, low, high)  # one pass; NaN stays NaN, low > high gives high
            if out.dtype != x.dtype or hasattr(low, "dtype") or hasattr(high, "dtype"):
                want = result_type(x, low, high)  # bounds of other dtypes: PyTorch's dtype
                if out.dtype != want:
                    out = xp.clip(*cast_operands((x, low, high), want)).astype(want, copy=False)
            return out
        if low is not None:
            return torch_dtype(xp.maximum, x, low, xp.maximum(x, low))
        return torch_dtype(xp.minimum, x, high, xp.minimum(x, high))

    def backward(self, ctx, grad):
        x, low, high = ctx.inputs
        grad_x = grad_low = grad_high = None
        if low is not None and high is not None:
            if _needs(x):
                grad_x = grad.where((x >= low) & (x <= high), 0.0)
            if _needs(low):
                grad_low = grad.where((x < low) & (low < high), 0.0)
            if _needs(high):
                grad_high = grad.where((x > high) | (high < low), 0.0)
        elif low is not None:
            grad_x = grad.where(x >= low, 0.0) if _needs(x) else None
            grad_low = grad.where(x < low, 0.0) if _needs(low) else None
        else:
            grad_x = grad.where(x <= high, 0.0) if _needs(x) else None
            grad_high = grad.where(x > high, 0.0) if _needs(high) else None
        return grad_x, grad_low, grad_high

    def to_onnx(self, emit, inputs, output, attrs):
        x, low, high = inputs
        bounds = [b for b in (low, high) if not (hasattr(b, "value") and b.value is None)]
        if all(hasattr(b, "value") for b in bounds):  # scalar bounds: one Clip
            dtype = emit.dtype(output)
            operands = emit.operands([x], dtype) + [
                "" if b.value is None else emit.constant(_scalar_array(b.value, dtype))
                for b in (low, high)
            ]
            emit.node("Clip", operands, output)
            return
        # tensor bounds: max with the lower, then min with the upper (high wins), all operands
        # in the result's dtype
        dtype = emit.dtype(output)
        out = emit.operands([x], dtype)[0]
        if not (hasattr(low, "value") and low.value is None):
            out = emit.node("Max", [out, *emit.operands([low], dtype)], dtype=dtype)
        if not (hasattr(high, "value") and high.value is None):
            out = emit.node("Min", [out, *emit.operands([high], dtype)], dtype=dtype)
        emit.node("Identity", [out], output)


class FloorDivide(ElementwiseOp):
    """``floor(a / b)`` (Python's ``//``). Piecewise constant: a float result carries a zero
    gradient (PyTorch's ``div(a, b, rounding_mode="floor")``), so a loss that uses it still
    backpropagates through its other terms."""

    name = "floor_divide"  # ONNX's Div truncates: to_onnx floors it
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        _refuse_integer_zero_division(self.name, b)
        return torch_dtype(xp.floor_divide, a, b, xp.floor_divide(a, b))

    def backward(self, ctx, grad):
        zero = grad.new_zeros(grad.shape)  # the derivative wherever it exists
        return zero, zero

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = emit.dtype(output)
        a, b = emit.operands(inputs, dtype)
        if dtype.kind == "f":
            emit.node("Floor", [emit.node("Div", [a, b])], output)
            return
        # ONNX's integer Div truncates towards zero; a - mod(a, b) (Python's sign rule) is a
        # multiple of b, so dividing it is exact and gives the floor
        remainder = emit.node("Mod", [a, b], fmod=0)
        emit.node("Div", [emit.node("Sub", [a, remainder]), b], output)


class Remainder(ElementwiseOp):
    """``a - floor(a / b) * b`` (Python's ``%``): the result has the divisor's sign."""

    name = "remainder"  # ONNX Mod on floats is C fmod (the dividend's sign)

    def forward(self, ctx, xp, a, b):
        _refuse_integer_zero_division(self.name, b)
        return torch_dtype(xp.remainder, a, b, xp.remainder(a, b))

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_b = -grad * (a // b) if _needs(b) else None
        return (grad if _needs(a) else None), grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.dtype(output).kind != "f":  # ONNX Mod with fmod=0 has Python's sign rule
            emit.simple("Mod", inputs, output, fmod=0)
            return
        a, b = emit.operands(inputs, emit.dtype(output))
        quotient = emit.node("Floor", [emit.node("Div", [a, b])])
        emit.node("Sub", [a, emit.node("Mul", [quotient, b])], output)


ADD, SUB, MUL, DIV, NEG, POW = Add(), Sub(), Mul(), Div(), Neg(), Pow()
MAXIMUM, MINIMUM, CLAMP = Maximum(), Minimum(), Clamp()
FLOOR_DIVIDE, REMAINDER = FloorDivide(), Remainder()


# ----- unary math ------------------------------------------------------------------------------


class Exp(FloatFunction):
    name = "exp"
    autocast = "float32"
    fusion = ("exp", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.exp(as_float(x))

    def backward(self, ctx, grad):
        return (grad * ctx.output,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Exp", inputs, output)


class Expm1(FloatFunction):
    """exp(x) - 1, accurate for small x."""

    name = "expm1"
    autocast = "float32"
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.expm1(as_float(x))

    def backward(self, ctx, grad):
        return (grad * (ctx.output + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Sub", [emit.node("Exp", [x]), emit.scalar(1, x)], output)


class Log(FloatFunction):
    name = "log"
    autocast = "float32"
    fusion = ("log", None)

    def forward(self, ctx, xp, x):
        return xp.log(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad / x,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Log", inputs, output)


class Log1p(FloatFunction):
    """log(1 + x), accurate for small x."""

    name = "log1p"
    autocast = "float32"

    def forward(self, ctx, xp, x):
        return xp.log1p(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad / (x + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Log", [emit.node("Add", [x, emit.scalar(1, x)])], output)


class Sqrt(FloatFunction):
    name = "sqrt"
    fusion = ("sqrt", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.sqrt(as_float(x))

    def backward(self, ctx, grad):
        return (grad / (ctx.output * 2),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sqrt", inputs, output)


class Rsqrt(FloatFunction):
    """1 / sqrt(x)."""

    name = "rsqrt"
    flops_per_element = 2
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return in_place(xp.reciprocal, xp.sqrt(as_float(x)))

    def backward(self, ctx, grad):
        out = ctx.output  # d/dx x^(-1/2) = -1/2 x^(-3/2) = -out^3 / 2
        return (grad * (out * out * out * -0.5),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Reciprocal", [emit.node("Sqrt", [x])], output)


class Reciprocal(FloatFunction):
    name = "reciprocal"
    fusion = ("reciprocal", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.reciprocal(as_float(x))

    def backward(self, ctx, grad):
        out = ctx.output
        return (-(grad * (out * out)),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Reciprocal", inputs, output)


class Square(ElementwiseOp):
    """x * x; booleans square into int64, as ``x ** 2`` does in PyTorch."""

    name = "square"
    fusion = ("square", None)

    def output_dtype(self, x) -> np.dtype:
        return result_type(x, 2)

    def forward(self, ctx, xp, x):
        if x.dtype.kind == "b":
            x = x.astype(_INT64)
        return xp.square(x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * (x * 2.0),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))  # booleans square in int64
        emit.node("Mul", [x, x], output)


class Abs(SameDtypeFunction):
    name = "abs"
    fusion = ("absolute", None)

    def forward(self, ctx, xp, x):
        return xp.abs(x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * x.sign(),)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX's Abs takes no booleans, which are their own absolute value
        emit.node("Identity" if emit.dtype(output).kind == "b" else "Abs", inputs, output)


class Sin(FloatFunction):
    name = "sin"
    fusion = ("sin", None)

    def forward(self, ctx, xp, x):
        return xp.sin(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * x.cos(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sin", inputs, output)


class Cos(FloatFunction):
    name = "cos"
    fusion = ("cos", None)

    def forward(self, ctx, xp, x):
        return xp.cos(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (-(grad * x.sin()),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Cos", inputs, output)


class Tanh(FloatFunction):
    name = "tanh"
    fusion = ("tanh", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.tanh(as_float(x))

    def backward(self, ctx, grad):
        return (TANH_GRAD(grad, ctx.output),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Tanh", inputs, output)


class TanhGrad(FloatFunction):
    """``grad * (1 - t^2)``, t the tanh's output (a differentiable input: the tanh's second
    derivative flows through it)."""

    name = "tanh_grad"
    flops_per_element = 3

    def forward(self, ctx, xp, grad, out):
        return grad * (1 - out * out)

    def backward(self, ctx, grad_of_output):
        grad, out = ctx.inputs
        grad_grad = grad_out = None
        if grad.requires_grad:
            grad_grad = TANH_GRAD(grad_of_output, out)
        if out.requires_grad:
            grad_out = grad_of_output * grad * (-2 * out)
        return grad_grad, grad_out


EXP, EXPM1, LOG, LOG1P = Exp(), Expm1(), Log(), Log1p()
SQRT, RSQRT, RECIPROCAL, SQUARE, ABS = Sqrt(), Rsqrt(), Reciprocal(), Square(), Abs()
SIN, COS, TANH, TANH_GRAD = Sin(), Cos(), Tanh(), TanhGrad()


# ----- piecewise-constant functions: zero gradient, as in PyTorch --------------------------------


class PiecewiseConstant(SameDtypeFunction):
    """An op whose derivative is zero wherever it exists (sign, floor, ceil, round).

    Float outputs still carry a (zero) gradient, so ``x.floor().sum().backward()`` works as in
    PyTorch. Rounding returns integer inputs unchanged (as a copy); sign of a boolean is itself.
    ``onnx_type`` is the ONNX operator of the same name.
    """

    save_inputs = False

    def __init__(self, name: str, onnx_type: str, function, identity_kinds: str) -> None:
        self.name, self.onnx_type, self.function = name, onnx_type, function
        self.identity_kinds = identity_kinds  # dtype kinds on which the op is the identity

    def forward(self, ctx, xp, x, **attrs):
        if x.dtype.kind in self.identity_kinds:
            return x.copy()
        return self.function(xp, x, **attrs)

    def backward(self, ctx, grad):
        return (grad.new_zeros(grad.shape),)

    def to_onnx(self, emit, inputs, output, attrs):
        x = inputs[0]
        if emit.dtype(x).kind in self.identity_kinds:
            emit.node("Identity", [x], output)
            return
        decimals = attrs.get("decimals", 0)
        if not decimals:
            emit.node(self.onnx_type, [x], output)
            return
        scale = emit.scalar(10.0**decimals, x)
        rounded = emit.node("Round", [emit.node("Mul", [x, scale])])
        emit.node("Div", [rounded, scale], output)


def _sign(xp, x):
    # PyTorch's sign(NaN) is 0; NumPy's is NaN
    out = xp.sign(x)
    return xp.nan_to_num(out, copy=not out.ndim, nan=0.0)  # 0-d results are scalars: no copy=False


def _round(xp, x, *, decimals):
    # half to even, as in PyTorch; decimals scale by 10**decimals, round, and scale back
    return xp.round(x, decimals) if decimals else xp.rint(x)


SIGN = PiecewiseConstant("sign", "Sign", _sign, "b")
FLOOR = PiecewiseConstant("floor", "Floor", lambda xp, x: xp.floor(x), _INTEGRAL)
CEIL = PiecewiseConstant("ceil", "Ceil", lambda xp, x: xp.ceil(x), _INTEGRAL)
ROUND = PiecewiseConstant("round", "Round", _round, _INTEGRAL)


# ----- copies -----------------------------------------------------------------------------------


class Clone(SameDtypeFunction):
    """A copy with its own memory; the gradient passes through unchanged."""

    name = "clone"
    flops_per_element = 0
    save_inputs = False

    def forward(self, ctx, xp, x):
        return x.copy()

    def backward(self, ctx, grad):
        return (grad,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Identity", inputs, output)


CLONE = Clone()


# ----- selection ---------------------------------------------------------------------------------


class Where(ElementwiseOp):
    """``condition ? a : b``; the condition gets no gradient. The result has PyTorch's dtype of
    ``a`` and ``b`` (the condition does not take part)."""

    name = "where"
    save_inputs = True

    def output_dtype(self, condition, a, b) -> np.dtype:
        return result_type(a, b)

    def forward(self, ctx, xp, condition, a, b):
        out = xp.where(condition, a, b)
        if type(a) is type(b) is _ARRAY and a.dtype is b.dtype:
            return out
        want = result_type(a, b)  # (of two Python scalars too: where(mask, 1.0, 0.0))
        if out.dtype != want:
            out = xp.where(condition, *cast_operands((a, b), want))
        return out if out.dtype == want else out.astype(want)

    def backward(self, ctx, grad):
        condition, a, b = ctx.inputs
        # a literal 0 for the unselected side, not grad * 0: an inf or nan in the upstream
        # gradient there must not leak in (0 * inf is nan)
        grad_a = self(condition, grad, 0.0) if _needs(a) else None
        grad_b = self(condition, 0.0, grad) if _needs(b) else None
        return None, grad_a, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        condition, a, b = inputs
        emit.node("Where", [condition, *emit.operands([a, b], emit.dtype(output))], output)


WHERE = Where()

# Comparisons, logic and bitwise ops live in ops/logic.py; the public functions read them here.
from .logic import (  # noqa: E402, F401
    BITWISE_AND,
    BITWISE_NOT,
    BITWISE_OR,
    BITWISE_XOR,
    EQ,
    GE,
    GT,
    ISFINITE,
    ISINF,
    ISNAN,
    LE,
    LOGICAL_AND,
    LOGICAL_NOT,
    LOGICAL_OR,
    LOGICAL_XOR,
    LT,
    NE,
    Bitwise,
    Predicate,
)
