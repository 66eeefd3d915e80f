"""The remaining activation records: the exponential-linear family (``elu``, ``selu``,
``celu``), the piecewise-linear ones (``hardtanh``, ``hardsigmoid``, ``hardswish``,
``threshold``, ``prelu``) and the smooth ones (``mish``, ``softsign``, ``logsigmoid``).

Each follows PyTorch's formula and its derivative at the kinks (and at NaN: a comparison with
NaN is false, so the gradient takes PyTorch's branch). Forwards and first derivatives run as
array kernels (``kernels/activations_extra.py``) cut across threads; when the backward is itself
recorded (``create_graph``) the rules are Tensor expressions, so second derivatives come free.
Masks that do not depend on x almost everywhere are constants.
"""

from __future__ import annotations

import functools

import numpy as np

from ..accel.kernels import activations_extra as kernels
from ..accel.kernels.split import elementwise
from ..backend.device import array_namespace
from .families import ElementwiseOp, FloatFunction, SameDtypeFunction
from .promotion import as_float

# SELU's constants (Klambauer et al. 2017), as PyTorch and ONNX define them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _run(xp, kernel, x, **params):
    """``kernel(xp, x, out, **params)`` into a new array, cut across threads when large."""
    out = xp.empty_like(x)
    elementwise(xp, functools.partial(kernel, **params) if params else kernel, (x,), (out,))
    return out


def _times_derivative(ctx, grad, kernel, **params):
    """grad * f'(x) with f'(x) from an array kernel: a constant, for first derivatives only."""
    x = ctx.inputs[0].data
    return grad * ctx.tensor(_run(array_namespace(x), kernel, x, **params))


def _masked(ctx, grad, passes: np.ndarray):
    """grad where ``passes``, else 0. A product with the mask is several times faster than
    where over an irregular mask, and equal to it while every gradient is finite."""
    data = grad.data
    if type(data) is np.ndarray and data.dtype.kind == "f" and bool(np.isfinite(data).all()):
        return grad * ctx.tensor(passes.astype(data.dtype))
    return grad.where(ctx.tensor(passes), 0.0)


# ----- the exponential-linear family ------------------------------------------------------------


class _ExponentialLinear(FloatFunction):
    """scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1).

    A subclass gives ``constants(attrs) -> (alpha, scale, input_scale)``."""

    flops_per_element = 4  # scale, exp, subtract, multiply

    def constants(self, attrs) -> tuple:
        raise NotImplementedError

    def forward(self, ctx, xp, x, **attrs):
        alpha, scale, input_scale = self.constants(attrs)
        constants = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
        return _run(xp, kernels.exponential_linear, as_float(x), **constants)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        alpha, scale, input_scale = self.constants(ctx.attrs)
        if not ctx.create_graph:
            constants = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
            return (
                _times_derivative(ctx, grad, kernels.exponential_linear_derivative, **constants),
            )
        negative = grad * ((x * input_scale).exp() * (alpha * scale * input_scale))
        positive = grad * scale if scale != 1 else grad
        above = ctx.tensor(~(x.data <= 0))  # NaN takes the linear branch, as in PyTorch
        return (positive.where(above, negative),)


class Elu(_ExponentialLinear):
    """x where x > 0, else alpha * (exp(x) - 1)."""

    name = "elu"

    def constants(self, attrs) -> tuple:
        return attrs["alpha"], 1.0, 1.0

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Elu", inputs, output, alpha=float(attrs["alpha"]))


class Selu(_ExponentialLinear):
    """scale * elu(x, alpha) with SELU's fixed alpha and scale."""

    name = "selu"

    def constants(self, attrs) -> tuple:
        return SELU_ALPHA, SELU_SCALE, 1.0

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Selu", inputs, output, alpha=SELU_ALPHA, gamma=SELU_SCALE)


class Celu(_ExponentialLinear):
    """x where x > 0, else alpha * (exp(x / alpha) - 1)."""

    name = "celu"

    def constants(self, attrs) -> tuple:
        return attrs["alpha"], 1.0, 1.0 / attrs["alpha"]

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Celu", inputs, output, alpha=float(attrs["alpha"]))


# ----- piecewise-linear ---------------------------------------------------------------------------


def _inside(x, low, high) -> np.ndarray:
    """Where the gradient passes: not (x <= low or x >= high), as PyTorch (NaN passes)."""
    return ~((x <= low) | (x >= high))


class Hardtanh(SameDtypeFunction):
    """x limited to [min_val, max_val]; the gradient is 0 on and beyond the bounds."""

    name = "hardtanh"
    save_inputs = True

    def forward(self, ctx, xp, x, *, min_val, max_val):
        return xp.clip(x, min_val, max_val).astype(x.dtype, copy=False)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (_masked(ctx, grad, _inside(x.data, ctx.attrs["min_val"], ctx.attrs["max_val"])),)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = emit.dtype(output)
        (x,) = emit.operands(inputs, dtype)
        low = emit.constant(np.asarray(attrs["min_val"], dtype=dtype))
        high = emit.constant(np.asarray(attrs["max_val"], dtype=dtype))
        emit.node("Clip", [x, low, high], output)


# PyTorch's hardsigmoid gradient uses 1/6 rounded to float32, in every dtype
_ONE_SIXTH = float(np.float32(1.0 / 6.0))


class Hardsigmoid(FloatFunction):
    """min(max(x + 3, 0), 6) / 6; the gradient is 1/6 strictly inside (-3, 3)."""

    name = "hardsigmoid"
    flops_per_element = 3

    def forward(self, ctx, xp, x):
        return _run(xp, kernels.hardsigmoid, as_float(x))

    def backward(self, ctx, grad):  # the derivative is constant where it exists
        return (_times_derivative(ctx, grad, kernels.hardsigmoid_derivative, one_sixth=_ONE_SIXTH),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("HardSigmoid", inputs, output, alpha=1.0 / 6.0, beta=0.5)


class Hardswish(FloatFunction):
    """x * min(max(x + 3, 0), 6) / 6; the gradient is 0 up to -3, x / 3 + 0.5 inside (-3, 3),
    then 1 (PyTorch's choice at the kinks)."""

    name = "hardswish"
    flops_per_element = 4

    def forward(self, ctx, xp, x):
        return _run(xp, kernels.hardswish, as_float(x))

    def backward(self, ctx, grad):
        if not ctx.create_graph:
            return (_times_derivative(ctx, grad, kernels.hardswish_derivative),)
        (x,) = ctx.inputs
        below = ctx.tensor(x.data <= -3)
        above = ctx.tensor(~(x.data < 3))  # NaN takes the identity branch, as in PyTorch
        middle = grad * (x / 3.0 + 0.5)
        return (grad.where(above, middle).where(~below, 0.0),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("HardSwish", inputs, output)


class Threshold(SameDtypeFunction):
    """value where x <= threshold, else x (NaN stays NaN); the gradient passes where not
    x <= threshold."""

    name = "threshold"
    save_inputs = True

    def forward(self, ctx, xp, x, *, threshold, value):
        if x.dtype.kind != "f":
            return xp.where(x <= threshold, xp.asarray(value, dtype=x.dtype), x)
        return _run(xp, kernels.threshold, x, threshold=threshold, value=value)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (_masked(ctx, grad, ~(x.data <= ctx.attrs["threshold"])),)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX's ThresholdedRelu replaces with 0 only: a Where serves any value
        dtype = emit.dtype(output)
        (x,) = emit.operands(inputs, dtype)
        threshold = emit.constant(np.asarray(attrs["threshold"], dtype=dtype))
        value = emit.constant(np.asarray(attrs["value"], dtype=dtype))
        replaced = emit.node("LessOrEqual", [x, threshold], dtype="bool")
        emit.node("Where", [replaced, value, x], output)


def _slopes(xp, x, weight, dtype):
    """1 where x > 0, else weight (broadcast to x's shape), in ``dtype``."""
    positive = xp.greater(x, 0).astype(dtype)
    slopes = 1 - positive
    slopes *= xp.asarray(weight, dtype=dtype)
    slopes += positive
    return slopes


class Prelu(ElementwiseOp):
    """x where x > 0, else weight * x; ``weight`` broadcasts against x (the functional form
    shapes it to x's channel axis)."""

    name = "prelu"
    flops_per_element = 2

    def forward(self, ctx, xp, x, weight):
        dtype = self.output_dtype(x, weight)
        if dtype.kind != "f":
            return xp.where(x > 0, x, weight * x).astype(dtype, copy=False)
        # x times its slope (1 or weight): a product, where `where` over the sign pattern is
        # many times slower; 1 * x and weight * x are exact, so the values are where's
        slopes = _slopes(xp, x, weight, dtype)
        slopes *= x
        return slopes

    def backward(self, ctx, grad):
        x, weight = ctx.inputs
        arrays = (grad.data, x.data, weight.data)
        if not ctx.create_graph and all(
            type(a) is np.ndarray and a.dtype.kind == "f" and bool(np.isfinite(a).all())
            for a in arrays
        ):  # finite values: the products equal the where below (0 * inf would not)
            dtype = np.dtype(grad.dtype)
            slopes = ctx.tensor(_slopes(np, x.data, weight.data, dtype))
            negative = ctx.tensor((x.data <= 0).astype(dtype))
            return grad * slopes, (grad * x) * negative
        positive = ctx.tensor(x.data > 0)
        grad_x = grad.where(positive, grad * weight)
        grad_weight = (grad * x).where(~positive, 0.0)
        return grad_x, grad_weight

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("PRelu", inputs, output)


# ----- smooth -----------------------------------------------------------------------------------


class Mish(FloatFunction):
    """x * tanh(softplus(x))."""

    name = "mish"
    flops_per_element = 5

    def forward(self, ctx, xp, x):
        return _run(xp, kernels.mish, as_float(x))

    def backward(self, ctx, grad):
        if not ctx.create_graph:
            return (_times_derivative(ctx, grad, kernels.mish_derivative),)
        (x,) = ctx.inputs
        tanh_softplus = x.softplus().tanh()
        slope = tanh_softplus + x * x.sigmoid() * (1.0 - tanh_softplus * tanh_softplus)
        return (grad * slope,)

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.opset >= 18:
            emit.simple("Mish", inputs, output)
            return
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Mul", [x, emit.node("Tanh", [emit.node("Softplus", [x])])], output)


class Softsign(FloatFunction):
    """x / (1 + |x|)."""

    name = "softsign"
    flops_per_element = 3

    def forward(self, ctx, xp, x):
        return _run(xp, kernels.softsign, as_float(x))

    def backward(self, ctx, grad):
        if not ctx.create_graph:
            return (_times_derivative(ctx, grad, kernels.softsign_derivative),)
        (x,) = ctx.inputs
        # PyTorch's derivative of x / (1 + |x|) term by term (NaN at infinities, as there)
        denominator = x.abs() + 1.0
        return (grad / denominator - grad * x * x.sign() / (denominator * denominator),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Softsign", inputs, output)


class Logsigmoid(FloatFunction):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), finite for any x."""

    name = "logsigmoid"
    flops_per_element = 6

    def forward(self, ctx, xp, x):
        return _run(xp, kernels.logsigmoid, as_float(x))

    def backward(self, ctx, grad):
        if not ctx.create_graph:
            return (_times_derivative(ctx, grad, kernels.logsigmoid_derivative),)
        (x,) = ctx.inputs
        return (grad * (-x).sigmoid(),)

    def to_onnx(self, emit, inputs, output, attrs):
        # the stable form: exp(-|x|) <= 1 never overflows (ONNX has no LogSigmoid, no Log1p)
        (x,) = emit.operands(inputs, emit.dtype(output))
        decay = emit.node("Exp", [emit.node("Neg", [emit.node("Abs", [x])])])
        log_term = emit.node("Log", [emit.node("Add", [decay, emit.scalar(1, x)])])
        emit.node("Sub", [emit.node("Min", [x, emit.scalar(0, x)]), log_term], output)


ELU, SELU, CELU = Elu(), Selu(), Celu()
HARDTANH, HARDSIGMOID, HARDSWISH, THRESHOLD, PRELU = (
    Hardtanh(),
    Hardsigmoid(),
    Hardswish(),
    Threshold(),
    Prelu(),
)
MISH, SOFTSIGN, LOGSIGMOID = Mish(), Softsign(), Logsigmoid()
