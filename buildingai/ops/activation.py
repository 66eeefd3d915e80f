"""The rectifier records: ``relu`` and ``leaky_relu`` (the smooth activations, sigmoid, silu,
gelu and softplus, are in ``special.py``)."""

from __future__ import annotations

import functools

import numpy as np

from .elementwise import in_place
from .families import ElementwiseOp, FloatFunction, SameDtypeFunction
from .kernels.scalar_loops import extremum_with_scalar
from .kernels.split import elementwise
from .promotion import as_float, result_type


class Relu(ElementwiseOp):
    """max(x, 0); NaN stays NaN (booleans give int64, as NumPy's maximum with 0 does)."""

    name = "relu"
    fusion = ("maximum", 0)
    save_inputs, save_output = False, True

    def output_dtype(self, x) -> np.dtype:
        return result_type(x, 0)

    def forward(self, ctx, xp, x):
        return extremum_with_scalar(xp, xp.maximum, x, 0)  # NaN stays NaN

    def backward(self, ctx, grad):
        # the output as a constant: the mask has no derivative (a traced step still reads it
        # from the graph, as the array the output value holds)
        return (RELU_GRAD(grad, ctx.tensor(ctx.out_data)),)

    def to_onnx(self, emit, inputs, output, attrs):
        dtype = emit.dtype(output)
        if dtype.kind == "f":
            emit.node("Relu", inputs, output)
            return
        (x,) = emit.operands(inputs, dtype)  # ONNX's Relu takes no unsigned integers or bools
        emit.node("Max", [x, emit.scalar(0, x)], output)


class ReluGrad(SameDtypeFunction):
    """relu's gradient: ``grad`` where the output ``out`` is not 0, else 0 (PyTorch's rule, zero
    where out <= 0: out is >= 0 or NaN, so a NaN passes the gradient through).

    ``out`` is an input (the mask depends on it, its gradient is zero), so a recorded backward
    (a compiled training step, a higher derivative) reads the mask from the graph. Linear in
    ``grad``: its own gradient is the same op on the incoming gradient."""

    name = "relu_grad"
    flops_per_element = 2

    def forward(self, ctx, xp, grad, out):
        kept = out != 0
        # NumPy's where over an irregular mask is much slower than a product with it; the
        # product equals where's result unless an inf or NaN gradient lands where the mask is
        # off (0 * inf is NaN), so it is taken when every gradient is finite.
        if type(grad) is np.ndarray and grad.dtype.kind == "f" and bool(np.isfinite(grad).all()):
            return np.multiply(grad, kept, dtype=grad.dtype)
        return xp.where(kept, grad, grad.dtype.type(0))

    def backward(self, ctx, grad_of_output):
        return RELU_GRAD(grad_of_output, ctx.inputs[1]), None

    def to_onnx(self, emit, inputs, output, attrs):
        grad, out = inputs
        kept = emit.node("Not", [emit.node("Equal", [out, emit.scalar(0, out)])])
        emit.node("Where", [kept, grad, emit.scalar(0, grad)], output)


RELU_GRAD = ReluGrad()


def _exact_one(dtype, slope) -> bool:
    """Whether ``_leaky_slopes`` gives exactly 1 for x > 0 (so x passes unchanged): true for
    every slope in [0, 1], checked for the others."""
    one = np.ones(1, dtype)
    one *= 1 - slope
    one += slope
    return bool(one[0] == 1)


def _leaky_slopes(xp, x, slopes, out, *, slope) -> None:
    """slopes = 1 where x > 0, else ``slope`` (x's dtype); out = slopes * x."""
    np.greater(x, 0, out=slopes, casting="unsafe")
    slopes *= 1 - slope
    slopes += slope
    np.multiply(slopes, x, out=out)


class LeakyRelu(FloatFunction):
    """x where x > 0, else negative_slope * x."""

    name = "leaky_relu"
    flops_per_element = 2

    def forward(self, ctx, xp, x, *, negative_slope):
        x = as_float(x)
        ctx.slopes = None
        if (
            type(x) is np.ndarray
            and x.dtype in (np.float32, np.float64)
            and _exact_one(x.dtype, negative_slope)
        ):
            # x times its slope (1 or negative_slope): four cheap passes, where NumPy's maximum
            # and where are several times slower; the slopes are backward's factor
            slopes, out = np.empty_like(x), np.empty_like(x)
            kernel = functools.partial(_leaky_slopes, slope=negative_slope)
            elementwise(np, kernel, (x,), (slopes, out))
            ctx.slopes = slopes
            return out
        scaled = x * x.dtype.type(negative_slope)  # a scalar of x's dtype: bfloat16 stays bfloat16
        if 0 <= negative_slope <= 1:  # then max(x, slope * x) is the same function, one pass less
            return in_place(xp.maximum, scaled, x)
        return xp.where(x > 0, x, scaled)

    def backward(self, ctx, grad):
        if ctx.slopes is not None:  # a constant: the slopes do not depend on x almost everywhere
            return (grad * ctx.tensor(ctx.slopes),)
        (x,) = ctx.inputs
        return (grad.where(x > 0, grad * ctx.attrs["negative_slope"]),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("LeakyRelu", inputs, output, alpha=float(attrs["negative_slope"]))


RELU, LEAKY_RELU = Relu(), LeakyRelu()
