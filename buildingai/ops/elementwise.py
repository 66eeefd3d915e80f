"""Element-wise primitive ops: arithmetic, math functions, rounding, comparisons and logic.

Binary ops broadcast. Backward rules return gradients shaped like the broadcast output; the engine
sums them back to each input's shape. Python scalars may stand for any input and receive no
gradient. Dtypes follow PyTorch where NumPy differs: an integer tensor meeting a float takes the
float's dtype (a Python float gives the default float dtype), and float-only functions (``sqrt``,
``exp``, true division...) of integer tensors give the default float dtype, not float64.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import BuildingAIError, DTypeError
from .base import Op
from .scalar_loops import extremum_with_scalar

_INTEGRAL = "biu"  # dtype kinds: bool, signed and unsigned integers


def _is_tensor(value) -> bool:
    return hasattr(value, "requires_grad")


def _needs(value) -> bool:
    return _is_tensor(value) and value.requires_grad


def _default_float():
    from ..backend import dtypes

    return dtypes.default_float_dtype


def as_float(x):
    """Integer and boolean arrays become the default float dtype, as in PyTorch."""
    if x.dtype.kind in _INTEGRAL:
        return x.astype(_default_float())
    return x


def promote(a, b):
    """Cast the operands of a binary op so that NumPy's result dtype is PyTorch's.

    The two libraries differ where integers meet floats: NumPy widens ``int64 + float32`` and
    ``int64 + 0.5`` to float64; PyTorch keeps the float's dtype (the default float dtype for a
    Python float). Everything else (same kinds, Python ints) already agrees.
    """
    kind_a = a.dtype.kind if hasattr(a, "dtype") else None
    kind_b = b.dtype.kind if hasattr(b, "dtype") else None
    if kind_a == kind_b:
        return a, b
    if kind_a is None:
        if isinstance(a, float) and kind_b in _INTEGRAL:
            b = b.astype(_default_float())
    elif kind_b is None:
        if isinstance(b, float) and kind_a in _INTEGRAL:
            a = a.astype(_default_float())
    elif kind_a in _INTEGRAL and kind_b not in _INTEGRAL:
        a = a.astype(b.dtype)
    elif kind_b in _INTEGRAL and kind_a not in _INTEGRAL:
        b = b.astype(a.dtype)
    return a, b


_FLOAT64 = np.dtype("float64")


def _is_float64(value) -> bool:
    dtype = getattr(value, "dtype", None)  # (NumPy reads `dtype == None` as the default, float64)
    return dtype is not None and dtype == _FLOAT64


def _keep_low_precision(array, out):
    """A Python float does not widen a bfloat16 array in PyTorch; ml_dtypes widens it to
    float32. Cast such a result back."""
    dtype = getattr(array, "dtype", None)
    if dtype is not None and dtype.kind == "V" and out.dtype != dtype:
        return out.astype(dtype)
    return out


def torch_dtype(ufunc, a, b, out):
    """``out = ufunc(a, b)`` again, with promoted operands, where NumPy widened to float64 and
    PyTorch would not (see ``promote``). The check costs one comparison on the common path;
    only the rare integer-meets-float32 call computes twice."""
    if out.dtype is not _FLOAT64:
        if type(b) is float or type(a) is float:
            return _keep_low_precision(a if type(b) is float else b, out)
        return out
    promoted_a, promoted_b = promote(a, b)
    if promoted_a is a and promoted_b is b:
        return out
    return ufunc(promoted_a, promoted_b)


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


class Add(Op):
    name, onnx = "add", "Add"
    fusion = ("add", None)
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        out = xp.add(a, b)
        if out.dtype is _FLOAT64 or type(a) is float or type(b) is float:
            return torch_dtype(xp.add, a, b, out)
        return out  # the common case, tested inline: this is the hottest op family

    def backward(self, ctx, grad):
        return grad, grad

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Add", inputs, output)


class Sub(Op):
    name, onnx = "sub", "Sub"
    fusion = ("subtract", None)
    save_inputs = False

    def forward(self, ctx, xp, a, b):
        out = xp.subtract(a, b)
        if out.dtype is _FLOAT64 or type(a) is float or type(b) is float:
            return torch_dtype(xp.subtract, a, b, out)
        return out  # the common case, tested inline: this is the hottest op family

    def backward(self, ctx, grad):
        return grad, -grad

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sub", inputs, output)


class Mul(Op):
    name, onnx = "mul", "Mul"
    fusion = ("multiply", None)

    def forward(self, ctx, xp, a, b):
        out = xp.multiply(a, b)
        if out.dtype is _FLOAT64 or type(a) is float or type(b) is float:
            return torch_dtype(xp.multiply, a, b, out)
        return out  # the common case, tested inline: this is the hottest op family

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        return (grad * b if _needs(a) else None), (grad * a if _needs(b) else None)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Mul", inputs, output)


class Div(Op):
    name, onnx = "div", "Div"
    fusion = ("true_divide", None)

    def forward(self, ctx, xp, a, b):
        out = xp.true_divide(a, b)
        if out.dtype is _FLOAT64 and _is_integral(a) and _is_integral(b):
            # integers divide into the default float dtype (NumPy gives float64)
            a = as_float(a) if hasattr(a, "dtype") else float(a)
            b = as_float(b) if hasattr(b, "dtype") else b
            return xp.true_divide(a, b)
        return torch_dtype(xp.true_divide, a, b, out)

    def backward(self, ctx, grad):
        a, b = ctx.inputs
        grad_a = grad / b if _needs(a) else None
        grad_b = -grad * a / (b * b) if _needs(b) else None
        return grad_a, grad_b

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Div", inputs, output)  # operands take the result's (float) dtype first


class Neg(Op):
    name, onnx = "neg", "Neg"
    fusion = ("negative", None)
    save_inputs = False

    def forward(self, ctx, xp, x):
        return xp.negative(x)

    def backward(self, ctx, grad):
        return (-grad,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Neg", inputs, output)


class Pow(Op):
    """``base ** exponent``; either may be a Python scalar.

    The exponent's gradient, base^exponent * log(base), is computed only when the exponent
    requires grad; it recomputes the power in backward rather than saving the output, so that
    ``y = x ** 2; y.add_(1)`` stays legal, as in PyTorch.
    """

    name, onnx = "pow", "Pow"

    def forward(self, ctx, xp, base, exponent):
        if type(exponent) in (int, float) and hasattr(base, "dtype") and base.dtype.kind == "f":
            fast = _SCALAR_POWERS.get(exponent)
            if fast is not None:  # multiplies and roots instead of a general pow (as PyTorch)
                return fast(xp, base)
        base, exponent = promote(base, exponent)
        return xp.power(base, exponent)

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


class Maximum(Op):
    """Element-wise maximum (NaN wins); at ties each input gets half the gradient (PyTorch)."""

    name, onnx = "maximum", "Max"
    fusion = ("maximum", None)

    def forward(self, ctx, xp, a, b):
        return torch_dtype(xp.maximum, a, b, xp.maximum(a, b))

    def backward(self, ctx, grad):
        return _select_backward(ctx, grad, loser_of_a=lambda a, b: a < b)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Max", inputs, output)


class Minimum(Op):
    """Element-wise minimum (NaN wins); at ties each input gets half the gradient (PyTorch)."""

    name, onnx = "minimum", "Min"
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


class Clamp(Op):
    """``min(max(x, low), high)``; either bound may be None, a Python scalar or a tensor.

    As in PyTorch the result is ``high`` where ``low > high``, and at a boundary (x == low or
    x == high) the gradient flows to x, not to the bound.
    """

    name, onnx = "clamp", "Clip"

    def forward(self, ctx, xp, x, low, high):
        if low is not None and high is not None:
            out = xp.clip(x, low, high)  # one pass; NaN stays NaN, low > high gives high
            if out.dtype is _FLOAT64:  # an integer x meeting float bounds: PyTorch's dtype
                x, low = promote(x, low)
                x, high = promote(x, high)
                out = xp.clip(x, low, high)
            return out
        if low is not None:
            return torch_dtype(xp.maximum, x, low, extremum_with_scalar(xp, xp.maximum, x, low))
        return torch_dtype(xp.minimum, x, high, extremum_with_scalar(xp, xp.minimum, x, high))

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
        out = x  # tensor bounds: max with the lower, then min with the upper (high wins)
        if not (hasattr(low, "value") and low.value is None):
            out = emit.simple("Max", [out, low], output if high is None else None)
        if not (hasattr(high, "value") and high.value is None):
            emit.simple("Min", [out, high], output)
        else:
            emit.node("Identity", [out], output)


class FloorDivide(Op):
    """``floor(a / b)`` (Python's ``//``); like PyTorch, it has no gradient."""

    name, onnx = "floor_divide", None  # ONNX Div truncates: an exporter writes Floor(Div)
    save_inputs = False
    differentiable = False

    def forward(self, ctx, xp, a, b):
        _refuse_integer_zero_division(self.name, b)
        return torch_dtype(xp.floor_divide, a, b, xp.floor_divide(a, b))

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.dtype(output).kind != "f":
            raise DTypeError(
                "[floor_divide] ONNX export supports floating-point operands only (ONNX's integer "
                "Div truncates towards zero)",
                help="convert the operands to a float dtype first",
            )
        emit.node("Floor", [emit.simple("Div", inputs, None)], output)


class Remainder(Op):
    """``a - floor(a / b) * b`` (Python's ``%``): the result has the divisor's sign."""

    name, onnx = "remainder", None  # ONNX Mod on floats is C fmod (the dividend's sign)

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


class Exp(Op):
    name, onnx = "exp", "Exp"
    fusion = ("exp", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.exp(as_float(x))

    def backward(self, ctx, grad):
        return (grad * ctx.output,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Exp", inputs, output)


class Expm1(Op):
    """exp(x) - 1, accurate for small x."""

    name, onnx = "expm1", None
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.expm1(as_float(x))

    def backward(self, ctx, grad):
        return (grad * (ctx.output + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Sub", [emit.node("Exp", [x]), emit.scalar(1, x)], output)


class Log(Op):
    name, onnx = "log", "Log"
    fusion = ("log", None)

    def forward(self, ctx, xp, x):
        return xp.log(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad / x,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Log", inputs, output)


class Log1p(Op):
    """log(1 + x), accurate for small x."""

    name, onnx = "log1p", None

    def forward(self, ctx, xp, x):
        return xp.log1p(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad / (x + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Log", [emit.node("Add", [x, emit.scalar(1, x)])], output)


class Sqrt(Op):
    name, onnx = "sqrt", "Sqrt"
    fusion = ("sqrt", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.sqrt(as_float(x))

    def backward(self, ctx, grad):
        return (grad / (ctx.output * 2),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sqrt", inputs, output)


class Rsqrt(Op):
    """1 / sqrt(x)."""

    name, onnx = "rsqrt", None
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return in_place(xp.reciprocal, xp.sqrt(as_float(x)))

    def backward(self, ctx, grad):
        out = ctx.output  # d/dx x^(-1/2) = -1/2 x^(-3/2) = -out^3 / 2
        return (grad * (out * out * out * -0.5),)

    def to_onnx(self, emit, inputs, output, attrs):
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Reciprocal", [emit.node("Sqrt", [x])], output)


class Reciprocal(Op):
    name, onnx = "reciprocal", "Reciprocal"
    fusion = ("reciprocal", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.reciprocal(as_float(x))

    def backward(self, ctx, grad):
        out = ctx.output
        return (-(grad * (out * out)),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Reciprocal", inputs, output)


class Square(Op):
    name, onnx = "square", None  # an exporter writes Mul(x, x)
    fusion = ("square", None)

    def forward(self, ctx, xp, x):
        return xp.square(x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * (x * 2.0),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Mul", [inputs[0], inputs[0]], output)


class Abs(Op):
    name, onnx = "abs", "Abs"
    fusion = ("absolute", None)

    def forward(self, ctx, xp, x):
        return xp.abs(x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * x.sign(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Abs", inputs, output)


class Sin(Op):
    name, onnx = "sin", "Sin"
    fusion = ("sin", None)

    def forward(self, ctx, xp, x):
        return xp.sin(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * x.cos(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sin", inputs, output)


class Cos(Op):
    name, onnx = "cos", "Cos"
    fusion = ("cos", None)

    def forward(self, ctx, xp, x):
        return xp.cos(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (-(grad * x.sin()),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Cos", inputs, output)


class Tanh(Op):
    name, onnx = "tanh", "Tanh"
    fusion = ("tanh", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.tanh(as_float(x))

    def backward(self, ctx, grad):
        out = ctx.output
        return (grad * (1 - out * out),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Tanh", inputs, output)


class Relu(Op):
    name, onnx = "relu", "Relu"
    fusion = ("maximum", 0)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return extremum_with_scalar(xp, xp.maximum, x, 0)  # NaN stays NaN

    def backward(self, ctx, grad):
        kept = type(grad)(ctx.out_data > 0)  # a constant: compared on the array, no dispatch
        data = grad.data
        # NumPy's where over an irregular mask runs about 10x slower than a product with it; the
        # product equals where's result unless an inf or NaN gradient lands where the mask is
        # off (0 * inf is NaN), so it is taken when every gradient is finite.
        if type(data) is np.ndarray and data.dtype.kind == "f" and bool(np.isfinite(data).all()):
            return (grad * kept,)
        return (grad.where(kept, 0.0),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Relu", inputs, output)


class LeakyRelu(Op):
    """x where x > 0, else negative_slope * x."""

    name, onnx = "leaky_relu", "LeakyRelu"  # ONNX attribute alpha = negative_slope

    def forward(self, ctx, xp, x, *, negative_slope):
        scaled = x * negative_slope
        if 0 <= negative_slope <= 1:  # then max(x, slope * x) is the same function, one pass less
            return in_place(xp.maximum, scaled, x)
        return xp.where(x > 0, x, scaled)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad.where(x > 0, grad * ctx.attrs["negative_slope"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("LeakyRelu", inputs, output, alpha=float(attrs["negative_slope"]))


EXP, EXPM1, LOG, LOG1P = Exp(), Expm1(), Log(), Log1p()
SQRT, RSQRT, RECIPROCAL, SQUARE, ABS = Sqrt(), Rsqrt(), Reciprocal(), Square(), Abs()
SIN, COS, TANH, RELU, LEAKY_RELU = Sin(), Cos(), Tanh(), Relu(), LeakyRelu()


# ----- piecewise-constant functions: zero gradient, as in PyTorch --------------------------------


class PiecewiseConstant(Op):
    """An op whose derivative is zero wherever it exists (sign, floor, ceil, round).

    Float outputs still carry a (zero) gradient, so ``x.floor().sum().backward()`` works as in
    PyTorch. Rounding returns integer inputs unchanged (as a copy); sign of a boolean is itself.
    """

    save_inputs = False

    def __init__(self, name: str, onnx: str | None, function, identity_kinds: str) -> None:
        self.name, self.onnx, self.function = name, onnx, function
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
            emit.node(self.onnx, [x], output)
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


class Clone(Op):
    """A copy with its own memory; the gradient passes through unchanged."""

    name, onnx = "clone", "Identity"
    save_inputs = False

    def forward(self, ctx, xp, x):
        return x.copy()

    def backward(self, ctx, grad):
        return (grad,)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("Identity", inputs, output)


CLONE = Clone()


# ----- selection, comparison, logic (no gradient except where's) -------------------------------


class Where(Op):
    """``condition ? a : b``; the condition gets no gradient."""

    name, onnx = "where", "Where"
    save_inputs = True

    def forward(self, ctx, xp, condition, a, b):
        out = xp.where(condition, a, b)
        if out.dtype is _FLOAT64 and not (_is_float64(a) or _is_float64(b)):
            return out.astype(_default_float())  # Python floats alone: the default float dtype
        return out

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


class Elementwise(Op):
    """An element-wise function without gradient (comparisons, logic, predicates);
    ``ufunc`` names the NumPy/CuPy function."""

    save_inputs = False
    differentiable = False

    def __init__(self, name: str, ufunc: str, onnx: str | None) -> None:
        self.name, self.ufunc, self.onnx = name, ufunc, onnx

    def forward(self, ctx, xp, *arrays):
        return getattr(xp, self.ufunc)(*arrays)

    def to_onnx(self, emit, inputs, output, attrs):
        operands = emit.operands(inputs)
        if self.name.startswith("logical_"):  # ONNX logic takes booleans only
            operands = [o if emit.dtype(o).kind == "b" else emit.cast(o, "bool") for o in operands]
        if self.name == "ne":
            emit.node("Not", [emit.node("Equal", operands, dtype="bool")], output)
        elif self.name == "isfinite":
            nan = emit.node("IsNaN", operands, dtype="bool")
            inf = emit.node("IsInf", operands, dtype="bool")
            emit.node("Not", [emit.node("Or", [nan, inf])], output)
        elif isinstance(self, Bitwise) and all(emit.dtype(o).kind == "b" for o in operands):
            logical = {"bitwise_and": "And", "bitwise_or": "Or", "bitwise_xor": "Xor"}
            emit.node(logical.get(self.name, "Not"), operands, output)
        else:
            emit.node(self.onnx, operands, output, dtype=emit.dtype(output))


class Bitwise(Elementwise):
    """Bitwise logic on integer or boolean tensors (on booleans, the logical operation)."""

    def check(self, *arrays):
        for value in arrays:
            if hasattr(value, "dtype") and value.dtype.kind not in _INTEGRAL:
                shown = ", ".join(str(getattr(v, "dtype", type(v).__name__)) for v in arrays)
                raise DTypeError(
                    f"[{self.name}] needs boolean or integer tensors, got {shown}",
                    help="compare first (e.g. (x > 0) & (y > 0)), or use logical_and/logical_or "
                    "for truth values of any dtype",
                )


WHERE = Where()
EQ = Elementwise("eq", "equal", "Equal")
NE = Elementwise("ne", "not_equal", None)
LT = Elementwise("lt", "less", "Less")
LE = Elementwise("le", "less_equal", "LessOrEqual")
GT = Elementwise("gt", "greater", "Greater")
GE = Elementwise("ge", "greater_equal", "GreaterOrEqual")

LOGICAL_AND = Elementwise("logical_and", "logical_and", "And")
LOGICAL_OR = Elementwise("logical_or", "logical_or", "Or")
LOGICAL_XOR = Elementwise("logical_xor", "logical_xor", "Xor")
LOGICAL_NOT = Elementwise("logical_not", "logical_not", "Not")
BITWISE_AND = Bitwise("bitwise_and", "bitwise_and", "BitwiseAnd")
BITWISE_OR = Bitwise("bitwise_or", "bitwise_or", "BitwiseOr")
BITWISE_XOR = Bitwise("bitwise_xor", "bitwise_xor", "BitwiseXor")
BITWISE_NOT = Bitwise("bitwise_not", "invert", "BitwiseNot")

ISNAN = Elementwise("isnan", "isnan", "IsNaN")
ISINF = Elementwise("isinf", "isinf", "IsInf")
ISFINITE = Elementwise("isfinite", "isfinite", None)
