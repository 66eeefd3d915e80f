"""Trigonometric and hyperbolic primitive ops beyond sin and cos (``elementwise.py``): tan, the
inverse functions, sinh, cosh, their inverses, and the two-argument arctangent ``atan2``.

Each is a ``FloatFunction``: integer and bool inputs give the default float dtype. Backward
rules are written with Tensor ops, so second derivatives come for free; ``fusion`` names the
NumPy/CuPy function the forward calls, for the graph's element-wise fusion pass. Under autocast
tan, asin, acos, sinh and cosh compute in float32, as on PyTorch's list of such ops.
"""

from __future__ import annotations

import math

import numpy as np

from .families import FloatFunction
from .promotion import as_float, float_dtype, pair_dtype, torch_dtype

_ARRAY = np.ndarray  # NumPy arrays of one dtype: NumPy's result dtype is then PyTorch's


def _needs(value) -> bool:
    """Whether ``value`` is a Tensor that requires grad (a Python number never does)."""
    return getattr(value, "requires_grad", False)


# ----- circular ----------------------------------------------------------------------------------


class Tan(FloatFunction):
    name = "tan"
    autocast = "float32"
    fusion = ("tan", None)
    save_inputs, save_output = False, True

    def forward(self, ctx, xp, x):
        return xp.tan(as_float(x))

    def backward(self, ctx, grad):
        out = ctx.output  # d/dx tan(x) = 1 + tan(x)^2
        return (grad * (out * out + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Tan", inputs, output)


class Asin(FloatFunction):
    """arcsin(x), NaN outside [-1, 1]."""

    name = "asin"
    autocast = "float32"
    fusion = ("arcsin", None)

    def forward(self, ctx, xp, x):
        return xp.arcsin(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / sqrt(1 - x^2)
        return (grad * (1 - x * x).rsqrt(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Asin", inputs, output)


class Acos(FloatFunction):
    """arccos(x), NaN outside [-1, 1]."""

    name = "acos"
    autocast = "float32"
    fusion = ("arccos", None)

    def forward(self, ctx, xp, x):
        return xp.arccos(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # -1 / sqrt(1 - x^2)
        return (-(grad * (1 - x * x).rsqrt()),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Acos", inputs, output)


class Atan(FloatFunction):
    name = "atan"
    fusion = ("arctan", None)

    def forward(self, ctx, xp, x):
        return xp.arctan(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / (1 + x^2)
        return (grad / (x * x + 1),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Atan", inputs, output)


class Atan2(FloatFunction):
    """The angle of the point (x, y): ``atan2(y, x)`` in [-pi, pi], with the quadrant taken
    from both signs. Either input may be a Python scalar; inputs broadcast."""

    name = "atan2"
    fusion = ("arctan2", None)

    def forward(self, ctx, xp, y, x):
        out = xp.arctan2(y, x)
        if type(y) is type(x) is _ARRAY and y.dtype is x.dtype is out.dtype:
            return out  # same float dtypes: NumPy's dtype is PyTorch's
        return torch_dtype(xp.arctan2, y, x, out, float_dtype(pair_dtype(y, x)))

    def backward(self, ctx, grad):
        y, x = ctx.inputs
        # d/dy = x / (x^2 + y^2), d/dx = -y / (x^2 + y^2)
        scale = grad / (x * x + y * y)
        grad_y = scale * x if _needs(y) else None
        grad_x = -(scale * y) if _needs(x) else None
        return grad_y, grad_x

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX has no Atan2: atan(y / x), turned by +-pi (the sign of y) where x < 0; both
        # zero gives y (0 with y's sign). Signed zeros are not told apart: x = -0 gives 0, not
        # +-pi, and y = -0 with x < 0 gives pi, not -pi.
        dtype = emit.dtype(output)
        y, x = emit.operands(inputs, dtype)
        zero = emit.scalar(0, y)
        ratio = emit.node("Atan", [emit.node("Div", [y, x])], dtype=dtype)
        y_negative = emit.node("Less", [y, zero], dtype=np.bool_)
        half_turn = emit.node(
            "Where", [y_negative, emit.scalar(-math.pi, y), emit.scalar(math.pi, y)], dtype=dtype
        )
        turned = emit.node("Add", [ratio, half_turn], dtype=dtype)
        x_negative = emit.node("Less", [x, zero], dtype=np.bool_)
        angle = emit.node("Where", [x_negative, turned, ratio], dtype=dtype)
        both_zero = emit.node(
            "And",
            [
                emit.node("Equal", [y, zero], dtype=np.bool_),
                emit.node("Equal", [x, zero], dtype=np.bool_),
            ],
            dtype=np.bool_,
        )
        emit.node("Where", [both_zero, y, angle], output)


TAN, ASIN, ACOS, ATAN, ATAN2 = Tan(), Asin(), Acos(), Atan(), Atan2()


# ----- hyperbolic --------------------------------------------------------------------------------


class Sinh(FloatFunction):
    name = "sinh"
    autocast = "float32"
    fusion = ("sinh", None)

    def forward(self, ctx, xp, x):
        return xp.sinh(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * COSH(x),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Sinh", inputs, output)


class Cosh(FloatFunction):
    name = "cosh"
    autocast = "float32"
    fusion = ("cosh", None)

    def forward(self, ctx, xp, x):
        return xp.cosh(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (grad * SINH(x),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Cosh", inputs, output)


class Asinh(FloatFunction):
    name = "asinh"
    fusion = ("arcsinh", None)

    def forward(self, ctx, xp, x):
        return xp.arcsinh(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / sqrt(x^2 + 1)
        return (grad * (x * x + 1).rsqrt(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Asinh", inputs, output)


class Acosh(FloatFunction):
    """arccosh(x), NaN below 1."""

    name = "acosh"
    fusion = ("arccosh", None)

    def forward(self, ctx, xp, x):
        return xp.arccosh(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / sqrt(x^2 - 1)
        return (grad * (x * x - 1).rsqrt(),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Acosh", inputs, output)


class Atanh(FloatFunction):
    """arctanh(x), NaN outside [-1, 1] and infinite at +-1."""

    name = "atanh"
    fusion = ("arctanh", None)

    def forward(self, ctx, xp, x):
        return xp.arctanh(as_float(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs  # 1 / (1 - x^2)
        return (grad / (1 - x * x),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Atanh", inputs, output)


SINH, COSH, ASINH, ACOSH, ATANH = Sinh(), Cosh(), Asinh(), Acosh(), Atanh()
