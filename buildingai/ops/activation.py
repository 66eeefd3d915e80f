"""The rectifier records: ``relu`` and ``leaky_relu`` (the smooth activations, sigmoid, silu,
gelu and softplus, are in ``special.py``)."""

from __future__ import annotations

import numpy as np

from .abstract import total
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
        return xp.maximum(x, 0)  # NaN stays NaN

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
    (a traced training step, a higher derivative) reads the mask from the graph. Linear in
    ``grad``: its own gradient is the same op on the incoming gradient."""

    name = "relu_grad"
    flops_per_element = 2

    def forward(self, ctx, xp, grad, out):
        return xp.where(out != 0, grad, grad.dtype.type(0))

    def backward(self, ctx, grad_of_output):
        return RELU_GRAD(grad_of_output, ctx.inputs[1]), None

    def to_onnx(self, emit, inputs, output, attrs):
        grad, out = inputs
        kept = emit.node("Not", [emit.node("Equal", [out, emit.scalar(0, out)])])
        emit.node("Where", [kept, grad, emit.scalar(0, grad)], output)


RELU_GRAD = ReluGrad()


class ReluAfter:
    """The ReLU after a layer, joined to the layer's record (``conv2d_relu``, ``linear_relu``:
    what ``graph/passes/layer_activation.py`` makes), mixed in before that record; the joined
    op's forward rectifies the layer's. One max per output more in the cost; the backward
    masks the gradient with the output, then is the layer's; the export is the layer's
    nodes, then a Relu."""

    save_output = True  # the ReLU's mask

    def cost(self, *specs, **attrs):
        flops, read, written = super().cost(*specs, **attrs)
        return total((flops, self.infer(*specs, **attrs).numel)), read, written

    def backward(self, ctx, grad):
        return super().backward(ctx, RELU_GRAD(grad, ctx.tensor(ctx.out_data)))

    def to_onnx(self, emit, inputs, output, attrs):
        layer = emit.fresh(self.name)
        super().to_onnx(emit, inputs, layer, attrs)
        emit.node("Relu", [layer], output)


class LeakyRelu(FloatFunction):
    """x where x > 0, else negative_slope * x."""

    name = "leaky_relu"
    flops_per_element = 2

    def forward(self, ctx, xp, x, *, negative_slope):
        x = as_float(x)
        scaled = x * x.dtype.type(negative_slope)  # a scalar of x's dtype: bfloat16 stays bfloat16
        return xp.where(x > 0, x, scaled)

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        # x detached: the slopes have no derivative in x (almost everywhere)
        return (LEAKY_RELU_GRAD(grad, x.detach(), **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.simple("LeakyRelu", inputs, output, alpha=float(attrs["negative_slope"]))


class LeakyReluGrad(SameDtypeFunction):
    """leaky_relu's gradient: ``grad`` where x > 0, else ``negative_slope * grad``.

    Inputs: grad and x (detached by leaky_relu's backward). Linear in ``grad``: its gradient there
    is the same op on the incoming gradient; in x it is zero almost everywhere."""

    name = "leaky_relu_grad"
    flops_per_element = 2

    def forward(self, ctx, xp, grad, x, *, negative_slope):
        return xp.where(x > 0, grad, grad * grad.dtype.type(negative_slope))

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
