"""The remaining activation records: the exponential-linear family (``elu``, ``selu``,
``celu``), the piecewise-linear ones (``hardtanh``, ``hardsigmoid``, ``hardswish``,
``threshold``, ``prelu``) and the smooth ones (``mish``, ``softsign``, ``logsigmoid``).

Each follows PyTorch's formula and its derivative at the kinks (and at NaN: a comparison with
NaN is false, so the gradient takes PyTorch's branch). Where a first derivative is more than a
product or a mask, it is a gradient record of its own (``exponential_linear_grad``,
``hardswish_grad``, ``mish_grad``, ``softsign_grad``): one op for ``grad * f'(x)``, whose own
backward gives the second derivative in Tensor ops. prelu has two (``prelu_input_grad`` and
``prelu_weight_grad``, the slopes' a sum over the axes they are broadcast along). Masks that
do not depend on x almost everywhere are constants.
"""

from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .abstract import ValueSpec, broadcast_shapes, memory_cost
from .activation import RELU_GRAD
from .base import Op
from .families import ElementwiseOp, FloatFunction, SameDtypeFunction
from .promotion import as_float
from .reduce import sum_to_axes

# SELU's constants (Klambauer et al. 2017), as PyTorch and ONNX define them
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _gate(ctx, grad, passes):
    """grad where the boolean array ``passes`` holds, else 0: relu's gradient gate
    (``relu_grad``) with a constant mask, in grad's dtype as relu's output is."""
    return RELU_GRAD(grad, ctx.tensor(passes.astype(grad.array.dtype)))


# ----- the exponential-linear family ------------------------------------------------------------


class _ExponentialLinear(FloatFunction):
    """scale * x where x > 0, else scale * alpha * (exp(input_scale * x) - 1).

    A subclass gives ``constants(attrs) -> (alpha, scale, input_scale)``."""

    flops_per_element = 4  # scale, exp, subtract, multiply

    def constants(self, attrs) -> tuple:
        raise NotImplementedError

    def forward(self, ctx, xp, x, **attrs):
        alpha, scale, input_scale = self.constants(attrs)
        x = as_float(x)
        # min(x, 0): the branch not taken must not overflow
        negative = xp.expm1(xp.minimum(x, 0) * input_scale) * (alpha * scale)
        return xp.where(x <= 0, negative, x * scale)  # NaN takes the linear branch

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        alpha, scale, input_scale = self.constants(ctx.attrs)
        constants = {"alpha": alpha, "scale": scale, "input_scale": input_scale}
        return (EXPONENTIAL_LINEAR_GRAD(grad, x, **constants),)


class ExponentialLinearGrad(FloatFunction):
    """The gradient of elu, selu and celu: ``grad * f'(x)`` with
    f'(x) = alpha * scale * input_scale * exp(input_scale * x) up to 0, then scale (NaN: scale,
    as in PyTorch)."""

    name = "exponential_linear_grad"
    flops_per_element = 5

    def forward(self, ctx, xp, grad, x, *, alpha, scale, input_scale):
        x = as_float(x)
        slope = xp.exp(xp.minimum(x, 0) * input_scale) * (alpha * scale * input_scale)
        return xp.where(x <= 0, grad * slope, grad * scale)

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        attrs = ctx.attrs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = EXPONENTIAL_LINEAR_GRAD(grad_of_output, x, **attrs)
        if x.requires_grad:
            # f''(x) = alpha * scale * input_scale^2 * exp(input_scale * x) up to 0, then 0
            input_scale = attrs["input_scale"]
            curvature = attrs["alpha"] * attrs["scale"] * input_scale * input_scale
            below = ctx.tensor(x.array <= 0)
            exponential = (x.clamp(None, 0.0) * input_scale).exp()
            grad_x = (grad_of_output * grad * exponential * curvature).where(below, 0.0)
        return grad_grad, grad_x


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
        return (_gate(ctx, grad, _inside(x.array, ctx.attrs["min_val"], ctx.attrs["max_val"])),)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = emit.dtype(output)
        (x,) = emit.operands(inputs, dtype)
        low = emit.constant(np.asarray(attrs["min_val"], dtype=dtype))
        high = emit.constant(np.asarray(attrs["max_val"], dtype=dtype))
        emit.node("Clip", [x, low, high], output)


def _ramp(xp, x):
    """min(max(x + 3, 0), 6); NaN stays NaN."""
    return xp.minimum(xp.maximum(x + 3, 0), 6)


# PyTorch's hardsigmoid gradient uses 1/6 rounded to float32, in every dtype
_ONE_SIXTH = float(np.float32(1.0 / 6.0))


class Hardsigmoid(FloatFunction):
    """min(max(x + 3, 0), 6) / 6; the gradient is 1/6 strictly inside (-3, 3)."""

    name = "hardsigmoid"
    flops_per_element = 3

    def forward(self, ctx, xp, x):
        return _ramp(xp, as_float(x)) / 6

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        # x as a value: the derivative is constant in x where it exists, so nothing of
        # higher order flows back to it
        return (HARDSIGMOID_GRAD(grad, ctx.tensor(x.array)),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("HardSigmoid", inputs, output, alpha=1.0 / 6.0, beta=0.5)


class HardsigmoidGrad(FloatFunction):
    """hardsigmoid's gradient: ``grad / 6`` strictly inside (-3, 3), else 0 (and at NaN, as in
    PyTorch, with 1/6 rounded to float32)."""

    name = "hardsigmoid_grad"
    flops_per_element = 3

    def forward(self, ctx, xp, grad, x):
        strictly_inside = (x > -3) & (x < 3)
        return xp.where(strictly_inside, grad * _ONE_SIXTH, 0)

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs  # linear in grad; constant in x where the derivative exists
        grad_grad = HARDSIGMOID_GRAD(grad_of_output, x) if grad.requires_grad else None
        return grad_grad, None


class Hardswish(FloatFunction):
    """x * min(max(x + 3, 0), 6) / 6; the gradient is 0 up to -3, x / 3 + 0.5 inside (-3, 3),
    then 1 (PyTorch's choice at the kinks)."""

    name = "hardswish"
    flops_per_element = 4

    def forward(self, ctx, xp, x):
        x = as_float(x)
        return x * _ramp(xp, x) / 6

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (HARDSWISH_GRAD(grad, x),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("HardSwish", inputs, output)


class HardswishGrad(FloatFunction):
    """hardswish's gradient: 0 where x <= -3, ``grad * (x / 3 + 0.5)`` inside (-3, 3), ``grad``
    from 3 up (and at NaN, as in PyTorch)."""

    name = "hardswish_grad"
    flops_per_element = 4

    def forward(self, ctx, xp, grad, x):
        x = as_float(x)
        inside = xp.where(x < 3, grad * (x / 3 + 0.5), grad)
        return xp.where(x <= -3, 0, inside)

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = HARDSWISH_GRAD(grad_of_output, x)
        if x.requires_grad:  # the slope x / 3 + 0.5 has derivative 1/3 inside (-3, 3)
            grad_x = _gate(ctx, grad_of_output * grad / 3.0, _inside(x.array, -3, 3))
        return grad_grad, grad_x


class Threshold(SameDtypeFunction):
    """value where x <= threshold, else x (NaN stays NaN); the gradient passes where not
    x <= threshold."""

    name = "threshold"
    save_inputs = True

    def forward(self, ctx, xp, x, *, threshold, value):
        return xp.where(x <= threshold, xp.asarray(value, dtype=x.dtype), x)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (_gate(ctx, grad, ~(x.array <= ctx.attrs["threshold"])),)

    def to_onnx(self, emit, inputs, output, attrs):
        # ONNX's ThresholdedRelu replaces with 0 only: a Where serves any value
        dtype = emit.dtype(output)
        (x,) = emit.operands(inputs, dtype)
        threshold = emit.constant(np.asarray(attrs["threshold"], dtype=dtype))
        value = emit.constant(np.asarray(attrs["value"], dtype=dtype))
        replaced = emit.node("LessOrEqual", [x, threshold], dtype="bool")
        emit.node("Where", [replaced, value, x], output)


class Prelu(ElementwiseOp):
    """x where x > 0, else weight * x; ``weight`` broadcasts against x (the functional form
    shapes it to x's channel axis)."""

    name = "prelu"
    flops_per_element = 2

    def forward(self, ctx, xp, x, weight):
        dtype = self.output_dtype(x, weight)
        return xp.where(x > 0, x, weight * x).astype(dtype, copy=False)

    def backward(self, ctx, grad):
        x, weight = ctx.inputs
        grad_x = grad_weight = None
        if x.requires_grad:
            grad_x = PRELU_INPUT_GRAD(grad, x, weight)
        if weight.requires_grad:
            grad_weight = PRELU_WEIGHT_GRAD(grad, x, weight)
        return grad_x, grad_weight

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("PRelu", inputs, output)


def _negative(ctx, x):
    """The constant mask ``not x > 0`` of a Tensor x, as a Tensor (NaN counts as negative, as
    prelu's forward takes weight * x there)."""
    return ctx.tensor(~(x.array > 0))


class PreluInputGrad(ElementwiseOp):
    """prelu's input gradient: grad where x > 0, else grad * weight (weight broadcasts as in
    prelu). Inputs grad, x and weight -> their broadcast shape. The derivative in x is zero
    wherever it exists; in grad and weight it is the same masks again."""

    name = "prelu_input_grad"
    flops_per_element = 2

    def forward(self, ctx, xp, grad, x, weight):
        dtype = self.output_dtype(grad, x, weight)
        return xp.where(x > 0, grad, grad * weight).astype(dtype, copy=False)

    def backward(self, ctx, grad_of_result):
        grad, x, weight = ctx.inputs
        grad_grad = grad_weight = None
        if grad.requires_grad:
            grad_grad = PRELU_INPUT_GRAD(grad_of_result, x, weight)
        if weight.requires_grad:  # summed back to weight's shape by the engine
            grad_weight = (grad_of_result * grad).where(_negative(ctx, x), 0.0)
        return grad_grad, None, grad_weight


class PreluWeightGrad(Op):
    """prelu's weight gradient: grad * x where not x > 0, else 0, summed over the axes weight
    is broadcast along. Inputs grad and x (the output's shape) and weight (read for its shape
    only) -> weight's shape. Its derivatives: the same mask times x (in grad) or grad (in x)."""

    name = "prelu_weight_grad"
    save_inputs = True

    def forward(self, ctx, xp, grad, x, weight):
        dtype = np.result_type(grad.dtype, x.dtype, weight.dtype)
        terms = xp.where(x > 0, 0, grad * x).astype(dtype, copy=False)
        summed = sum_to_axes(terms.shape, weight.shape)
        return terms.sum(axis=summed, keepdims=True).reshape(weight.shape)

    def infer(self, grad, x, weight):
        terms = broadcast_shapes(grad.shape, x.shape)
        if broadcast_shapes(terms, weight.shape) != terms:
            raise ShapeError(
                f"[prelu_weight_grad] weight {weight.shape} does not broadcast to the shape "
                f"{terms} of grad {grad.shape} and x {x.shape}",
                help="weight has one slope per channel of x, or a single slope",
            )
        dtype = np.result_type(grad.dtype, x.dtype, weight.dtype)
        return ValueSpec(tuple(weight.shape), dtype, x.device)

    def cost(self, grad, x, weight):
        return memory_cost((grad, x), self.infer(grad, x, weight), 3)  # compare, multiply, add

    def backward(self, ctx, grad_of_result):
        grad, x, _ = ctx.inputs
        negative = _negative(ctx, x)
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = (grad_of_result * x).where(negative, 0.0)
        if x.requires_grad:
            grad_x = (grad_of_result * grad).where(negative, 0.0)
        return grad_grad, grad_x, None


# ----- smooth -----------------------------------------------------------------------------------


class Mish(FloatFunction):
    """x * tanh(softplus(x))."""

    name = "mish"
    flops_per_element = 5

    def forward(self, ctx, xp, x):
        x = as_float(x)
        return x * xp.tanh(xp.logaddexp(0, x))  # softplus(x) = log(1 + exp(x)), no overflow

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (MISH_GRAD(grad, x),)

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.opset >= 18:
            emit.simple("Mish", inputs, output)
            return
        (x,) = emit.operands(inputs, emit.dtype(output))
        emit.node("Mul", [x, emit.node("Tanh", [emit.node("Softplus", [x])])], output)


class MishGrad(FloatFunction):
    """mish's gradient: ``grad * (t + x s (1 - t^2))`` with t = tanh(softplus(x)) and
    s = sigmoid(x), the derivative of softplus."""

    name = "mish_grad"
    flops_per_element = 10

    def forward(self, ctx, xp, grad, x):
        x = as_float(x)
        t = xp.tanh(xp.logaddexp(0, x))
        with np.errstate(over="ignore"):  # exp(-x) = inf: the sigmoid is 0
            s = 1 / (1 + xp.exp(-x))
        return grad * (t + x * s * (1 - t * t))

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = MISH_GRAD(grad_of_output, x)
        if x.requires_grad:
            # mish'' = s (1 - t^2) (2 + x (1 - s) - 2 x s t)
            t, s = x.softplus().tanh(), x.sigmoid()
            second = s * (1 - t * t) * (2 + x * (1 - s) - 2 * x * s * t)
            grad_x = grad_of_output * grad * second
        return grad_grad, grad_x


class Softsign(FloatFunction):
    """x / (1 + |x|)."""

    name = "softsign"
    flops_per_element = 3

    def forward(self, ctx, xp, x):
        x = as_float(x)
        return x / (1 + xp.abs(x))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (SOFTSIGN_GRAD(grad, x),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("Softsign", inputs, output)


class SoftsignGrad(FloatFunction):
    """softsign's gradient, ``grad / (1 + |x|)^2``, written as PyTorch's derivative of
    x / (1 + |x|) term by term (the quotient rule), which is NaN at infinities."""

    name = "softsign_grad"
    flops_per_element = 6

    def forward(self, ctx, xp, grad, x):
        x = as_float(x)
        denominator = 1 + xp.abs(x)
        with np.errstate(over="ignore", invalid="ignore"):  # inf / inf at infinities: NaN
            return grad / denominator - grad * x * xp.sign(x) / (denominator * denominator)

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = SOFTSIGN_GRAD(grad_of_output, x)
        if x.requires_grad:  # softsign'' = -2 sign(x) / (1 + |x|)^3
            denominator = x.abs() + 1.0
            second = x.sign() * -2.0 / (denominator * denominator * denominator)
            grad_x = grad_of_output * grad * second
        return grad_grad, grad_x


class Logsigmoid(FloatFunction):
    """log(sigmoid(x)) = min(x, 0) - log1p(exp(-|x|)), finite for any x."""

    name = "logsigmoid"
    flops_per_element = 6

    def forward(self, ctx, xp, x):
        x = as_float(x)
        return xp.minimum(x, 0) - xp.log1p(xp.exp(-xp.abs(x)))

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        return (LOGSIGMOID_GRAD(grad, x),)

    def to_onnx(self, emit, inputs, output, attrs):
        # the stable form: exp(-|x|) <= 1 never overflows (ONNX has no LogSigmoid, no Log1p)
        (x,) = emit.operands(inputs, emit.dtype(output))
        decay = emit.node("Exp", [emit.node("Neg", [emit.node("Abs", [x])])])
        log_term = emit.node("Log", [emit.node("Add", [decay, emit.scalar(1, x)])])
        emit.node("Sub", [emit.node("Min", [x, emit.scalar(0, x)]), log_term], output)


class LogsigmoidGrad(FloatFunction):
    """logsigmoid's gradient: ``grad * sigmoid(-x)`` = ``grad / (1 + exp(x))`` (d/dx
    log(sigmoid(x)) = 1 - sigmoid(x)), 0 where exp(x) overflows."""

    name = "logsigmoid_grad"
    flops_per_element = 4

    def forward(self, ctx, xp, grad, x):
        x = as_float(x)
        with np.errstate(over="ignore"):  # exp(x) = inf: the sigmoid of -x is 0
            return grad / (1 + xp.exp(x))

    def backward(self, ctx, grad_of_output):
        grad, x = ctx.inputs
        grad_grad = grad_x = None
        if grad.requires_grad:
            grad_grad = LOGSIGMOID_GRAD(grad_of_output, x)
        if x.requires_grad:  # d/dx sigmoid(-x) = -s (1 - s), s = sigmoid(-x)
            s = (-x).sigmoid()
            grad_x = -(grad_of_output * grad * s * (1 - s))
        return grad_grad, grad_x


ELU, SELU, CELU = Elu(), Selu(), Celu()
HARDTANH, HARDSIGMOID, HARDSWISH, THRESHOLD, PRELU = (
    Hardtanh(),
    Hardsigmoid(),
    Hardswish(),
    Threshold(),
    Prelu(),
)
MISH, SOFTSIGN, LOGSIGMOID = Mish(), Softsign(), Logsigmoid()
LOGSIGMOID_GRAD = LogsigmoidGrad()
EXPONENTIAL_LINEAR_GRAD, HARDSWISH_GRAD = ExponentialLinearGrad(), HardswishGrad()
HARDSIGMOID_GRAD = HardsigmoidGrad()
MISH_GRAD, SOFTSIGN_GRAD = MishGrad(), SoftsignGrad()
PRELU_INPUT_GRAD, PRELU_WEIGHT_GRAD = PreluInputGrad(), PreluWeightGrad()
