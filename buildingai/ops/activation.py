"""The rectifier records: ``relu`` and ``leaky_relu`` (the smooth activations, sigmoid, silu,
gelu and softplus, are in ``special.py``)."""

from __future__ import annotations

import functools

import numpy as np

from ..accel.kernels.compiled import compiled_twin
from ..accel.kernels.scalar_loops import extremum_with_scalar
from ..accel.kernels.split import elementwise
from .elementwise import in_place
from .families import ElementwiseOp, FloatFunction, SameDtypeFunction
from .promotion import as_float, result_type


class Relu(ElementwiseOp):
    """max(x, 0); NaN stays NaN (booleans give int64, as NumPy's maximum with 0 does)."""

    name = "relu"
    fusion = ("maximum", 0)
    save_inputs, save_output = False, True

    def output_dtype(self, x) -> np.dtype:
        return result_type(x, 0)

    def forward(self, ctx, xp, x):
        if type(x) is np.ndarray and x.dtype.kind == "f":
            out = np.empty_like(x)
            elementwise(np, _relu_kernel, (x,), (out,))
            return out
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
        if type(grad) is np.ndarray and grad.dtype.kind == "f" and grad.shape == out.shape:
            result = np.empty_like(grad)
            elementwise(np, _relu_grad_kernel, (grad, out), (result,))
            return result
        return xp.where(out != 0, grad, grad.dtype.type(0))

    def backward(self, ctx, grad_of_output):
        return RELU_GRAD(grad_of_output, ctx.inputs[1]), None

    def to_onnx(self, emit, inputs, output, attrs):
        grad, out = inputs
        kept = emit.node("Not", [emit.node("Equal", [out, emit.scalar(0, out)])])
        emit.node("Where", [kept, grad, emit.scalar(0, grad)], output)


RELU_GRAD = ReluGrad()


@compiled_twin("activations.relu")
def _relu_kernel(xp, x, out) -> None:
    """out = max(x, 0) for float NumPy arrays of one shape; NaN stays NaN."""
    extremum_with_scalar(xp, xp.maximum, x, 0, out=out)


@compiled_twin("activations.relu_grad")
def _relu_grad_kernel(xp, grad, out, result) -> None:
    """result = grad where out != 0, else 0, for float NumPy arrays of one shape."""
    kept = out != 0
    # NumPy's where over an irregular mask is much slower than a product with it; the product
    # equals where's result unless an inf or NaN gradient lands where the mask is off (0 * inf
    # is NaN), so it is taken when every gradient is finite.
    if bool(np.isfinite(grad).all()):
        np.multiply(grad, kept, out=result)
    else:
        np.copyto(result, np.where(kept, grad, grad.dtype.type(0)))


def _exact_one(dtype, slope) -> bool:
    """Whether ``_leaky_slopes`` gives exactly 1 for x > 0 (so x passes unchanged): true for
    every slope in [0, 1], checked for the others."""
    one = np.ones(1, dtype)
    one *= 1 - slope
    one += slope
    return bool(one[0] == 1)


def _leaky_slopes(xp, x, slopes, *, slope) -> None:
    """slopes = 1 where x > 0, else ``slope`` (x's dtype): a compare written as float and one
    multiply-add, where NumPy's ``where`` over an irregular mask is several times slower."""
    np.greater(x, 0, out=slopes, casting="unsafe")
    slopes *= 1 - slope
    slopes += slope


@compiled_twin("activations.leaky_relu", params=("slope",))
def _leaky_relu_kernel(xp, x, out, *, slope) -> None:
    """out = x where x > 0, else slope * x (float NumPy arrays of one shape)."""
    _leaky_slopes(xp, x, out, slope=slope)
    out *= x


@compiled_twin("activations.leaky_relu_grad", params=("slope",))
def _leaky_relu_grad_kernel(xp, grad, x, result, *, slope) -> None:
    """result = grad where x > 0, else slope * grad (float NumPy arrays of one shape)."""
    _leaky_slopes(xp, x, result, slope=slope)
    result *= grad


def _fast_leaky(x, negative_slope) -> bool:
    """Whether x takes the slopes kernels: a float32/float64 NumPy array, and a slope for which
    they give exactly 1 where x > 0."""
    return (
        type(x) is np.ndarray
        and x.dtype in (np.float32, np.float64)
        and _exact_one(x.dtype, negative_slope)
    )


class LeakyRelu(FloatFunction):
    """x where x > 0, else negative_slope * x."""

    name = "leaky_relu"
    flops_per_element = 2

    def forward(self, ctx, xp, x, *, negative_slope):
        x = as_float(x)
        if _fast_leaky(x, negative_slope):
            out = np.empty_like(x)
            kernel = functools.partial(_leaky_relu_kernel, slope=negative_slope)
            elementwise(np, kernel, (x,), (out,))
            return out
        scaled = x * x.dtype.type(negative_slope)  # a scalar of x's dtype: bfloat16 stays bfloat16
        if 0 <= negative_slope <= 1:  # then max(x, slope * x) is the same function, one pass less
            return in_place(xp.maximum, scaled, x)
        return xp.where(x > 0, x, scaled)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        slope = ctx.attrs["negative_slope"]
        if _fast_leaky(x.data, slope) and grad.shape == x.shape and grad.dtype == x.dtype:
            # x detached: the slopes have no derivative in x (almost everywhere)
            return (LEAKY_RELU_GRAD(grad, x.detach(), negative_slope=slope),)
        return (grad.where(x > 0, grad * slope),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("LeakyRelu", inputs, output, alpha=float(attrs["negative_slope"]))


class LeakyReluGrad(SameDtypeFunction):
    """leaky_relu's gradient: ``grad`` where x > 0, else ``negative_slope * grad``.

    Inputs: grad and x (detached by leaky_relu's backward), float arrays of one shape and
    dtype. Linear in ``grad``: its gradient there is the same op on the incoming gradient; in x
    it is zero almost everywhere."""

    name = "leaky_relu_grad"
    flops_per_element = 2

    def forward(self, ctx, xp, grad, x, *, negative_slope):
        if type(x) is np.ndarray:
            result = np.empty_like(x)
            kernel = functools.partial(_leaky_relu_grad_kernel, slope=negative_slope)
            elementwise(np, kernel, (grad, x), (result,))
            return result
        return xp.where(x > 0, grad, grad * x.dtype.type(negative_slope))

    def backward(self, ctx, grad_of_output):
        x = ctx.inputs[1]
        return LEAKY_RELU_GRAD(grad_of_output, x, **ctx.attrs), None

    def to_onnx(self, emit, inputs, output, attrs):
        grad, x = inputs
        scaled = emit.node("Mul", [grad, emit.scalar(attrs["negative_slope"], grad)])
        positive = emit.node("Greater", [x, emit.scalar(0, x)], dtype="bool")
        emit.node("Where", [positive, grad, scaled], output)


LEAKY_RELU_GRAD = LeakyReluGrad()


RELU, LEAKY_RELU = Relu(), LeakyRelu()
