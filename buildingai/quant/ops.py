"""The quantisation op records: fake quantisation (for QAT and calibrated graphs), weight
dequantisation, and int8 linear / conv2d. Each runs through dispatch like any op and carries
its ONNX mapping, so quantised models export in QDQ form (QuantizeLinear / DequantizeLinear
around weights and activations) that onnxruntime fuses into its int8 kernels.

How the int8 ops compute here: activations are quantised to uint8 codes and weights are int8
codes; their products are summed exactly, as int32 accumulation would, by a float32 BLAS GEMM
on the integer values while the sums stay below 2**24 (else float64); the integer result is then
scaled by ``input_scale * weight_scale`` in float32. NumPy has no int8 GEMM, so the speed is
that of a float GEMM; the results are those of an int8 kernel.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..autograd.dispatch import run_forward
from ..ops.abstract import ValueSpec
from ..ops.base import Op
from ..ops.conv import CONV2D
from ..ops.linalg import LINEAR
from .qparams import (
    ACTIVATION_RANGE,
    WEIGHT_RANGE,
    _along,
    dequantize,
    dynamic_qparams,
    integer_matmul,
    quantize,
)


class FakeQuantize(Op):
    """``dequantize(quantize(x))``: x rounded onto the grid of ``scale``, ``zero_point`` and
    clamped to [qmin, qmax], still in floating point. Per tensor, or per slice along ``axis``
    for a 1-D ``scale``. The gradient is straight-through: ``grad`` where ``x`` falls inside
    the range, 0 where it was clamped (as PyTorch's ``fake_quantize_per_*_affine``).

    x: any shape; scale: () or (x.shape[axis],) float32; zero_point: same shape, uint8 or int8.
    """

    name = "fake_quantize"
    save_inputs = False

    def forward(self, ctx, xp, x, scale, zero_point, *, qmin, qmax, axis=None):
        scale = _along(xp, scale, x.ndim, axis)
        zero_point = _along(xp, zero_point, x.ndim, axis)
        codes = xp.rint(x / scale) + zero_point
        if getattr(ctx, "inputs", None) is not None:  # recorded: backward needs the range mask
            ctx.inside = (codes >= qmin) & (codes <= qmax)
        return ((xp.clip(codes, qmin, qmax) - zero_point) * scale).astype(x.dtype, copy=False)

    def backward(self, ctx, grad):
        inside = ctx.tensor(ctx.inside.astype(grad.dtype))
        return grad * inside, None, None

    def infer(self, x, scale, zero_point, **attrs):
        return ValueSpec(x.shape, x.dtype, x.device)

    def to_onnx(self, emit, inputs, output, attrs):
        x, scale, zero_point = inputs
        axis = {} if attrs.get("axis") is None else {"axis": int(attrs["axis"])}
        codes = emit.node(
            "QuantizeLinear", [x, scale, zero_point], dtype=emit.dtype(zero_point), **axis
        )
        emit.node("DequantizeLinear", [codes, scale, zero_point], output, **axis)


class DequantizeWeight(Op):
    """``codes * scale`` of an int8 weight with per-channel scales along ``axis`` (zero point
    0): weight-only quantisation (LSTM), stored as int8, computed in float32.

    codes: int8, any shape; scale: (codes.shape[axis],) float32 -> float32 of codes' shape.
    """

    name = "dequantize_weight"
    differentiable = False

    def forward(self, ctx, xp, codes, scale, *, axis=0):
        return dequantize(xp, codes, scale, 0, axis)

    def infer(self, codes, scale, *, axis=0):
        return ValueSpec(codes.shape, np.dtype(np.float32), codes.device)

    def to_onnx(self, emit, inputs, output, attrs):
        emit.node("DequantizeLinear", inputs, output, dtype=np.float32, axis=int(attrs["axis"]))

    def int8_onnx(self, attrs) -> str | None:
        return (
            "weight-only int8: the weights are stored in int8 and dequantised, the layer "
            "that uses them computes in float"
        )


def _quantize_input(xp, x, input_scale, input_zero_point):
    """Centred uint8 codes ``q - zero_point`` of ``x`` (integer-valued floats) and the scale;
    static when ``input_scale`` is given, else from ``x``'s own range (dynamic)."""
    if input_scale is None:
        input_scale, input_zero_point = dynamic_qparams(xp, x)
    codes = quantize(xp, x, input_scale, input_zero_point, *ACTIVATION_RANGE)
    codes -= np.float32(input_zero_point)  # a fresh array: centred in place
    return codes, np.float32(input_scale)


def _scale_and_bias(xp, total, scales, bias, static: bool):
    """Integer sums (..., out) times per-channel ``scales``, plus the bias. Static quantisation
    adds the bias as int32 codes on the sums' grid first (as int8 kernels do); dynamic adds the
    float bias after scaling (the grid is not known in advance)."""
    if bias is not None and static:
        total = total + bias_codes(xp, bias, scales)
    out = total.astype(xp.float32, copy=False) * scales
    if bias is not None and not static:
        out += bias
    return out


def bias_codes(xp, bias, scales):
    """The bias as int32-valued codes on the grid ``input_scale * weight_scale`` (per channel)."""
    return xp.rint(bias.astype(xp.float32) / scales.astype(xp.float32))


def _requantize(xp, out, output_scale, output_zero_point):
    """Round a float output onto its uint8 grid (static quantisation's output), as float."""
    if output_scale is None:
        return out
    codes = quantize(xp, out, output_scale, output_zero_point, *ACTIVATION_RANGE)
    return dequantize(xp, codes, output_scale, output_zero_point)


class QuantizedLinear(Op):
    """int8 ``x @ weight.T * scales + bias``: x (..., in) float, weight (out, in) int8 codes,
    weight_scale (out,) float32, bias (out,) float or None -> (..., out) in x's dtype.

    ``input_scale`` / ``input_zero_point``: the calibrated uint8 grid of x, or None to take it
    from each input's range (dynamic quantisation). ``output_scale`` / ``output_zero_point``
    (static only): the output is rounded onto that grid, as an int8 kernel's requantisation.
    """

    name = "quantized_linear"
    differentiable = False

    def forward(
        self,
        ctx,
        xp,
        x,
        weight,
        weight_scale,
        bias=None,
        *,
        input_scale=None,
        input_zero_point=0,
        output_scale=None,
        output_zero_point=0,
    ):
        codes, scale = _quantize_input(xp, x, input_scale, input_zero_point)
        rows = codes.reshape(-1, codes.shape[-1])
        total = integer_matmul(xp, rows, weight.T, ACTIVATION_RANGE[1], WEIGHT_RANGE[1])
        out = _scale_and_bias(xp, total, scale * weight_scale, bias, input_scale is not None)
        out = _requantize(xp, out, output_scale, output_zero_point)
        return out.reshape(*x.shape[:-1], weight.shape[0]).astype(x.dtype, copy=False)

    def infer(self, x, weight, weight_scale, bias=None, **attrs):
        return ValueSpec((*x.shape[:-1], weight.shape[0]), x.dtype, x.device)

    def cost(self, x, weight, weight_scale, bias=None, **attrs):
        return LINEAR.cost(x, weight, bias)

    def int8_onnx(self, attrs) -> str | None:
        return None  # static: QGemm / QLinearMatMul; dynamic: DynamicQuantizeMatMul

    def to_onnx(self, emit, inputs, output, attrs):
        x, weight, weight_scale, *rest = inputs
        if attrs.get("input_scale") is None:
            _dynamic_linear(emit, x, weight, weight_scale, rest, output)
            return
        weights = _dequantize_weight(emit, weight, weight_scale)
        rest = _quantized_bias(emit, attrs["input_scale"], weight_scale, rest)
        x = _qdq(emit, x, attrs["input_scale"], attrs["input_zero_point"])
        target = output if attrs.get("output_scale") is None else None
        if emit.rank(x) == 2:
            result = emit.node("Gemm", [x, weights, *rest], target, transB=1)
        else:
            transposed = emit.node("Transpose", [weights], perm=[1, 0])
            result = emit.node("MatMul", [x, transposed], None if rest else target)
            if rest:
                result = emit.node("Add", [result, rest[0]], target)
        if target is None:
            _qdq(emit, result, attrs["output_scale"], attrs["output_zero_point"], output)


class QuantizedConv2d(Op):
    """int8 2-D convolution: x (N, C, H, W) float, weight (O, C/groups, kh, kw) int8 codes,
    weight_scale (O,) float32, bias (O,) or None -> (N, O, Ho, Wo); quantisation attributes as
    ``QuantizedLinear``, convolution attributes as ``conv2d``."""

    name = "quantized_conv2d"
    differentiable = False

    def forward(
        self,
        ctx,
        xp,
        x,
        weight,
        weight_scale,
        bias=None,
        *,
        stride,
        padding,
        dilation,
        groups,
        input_scale=None,
        input_zero_point=0,
        output_scale=None,
        output_zero_point=0,
    ):
        codes, scale = _quantize_input(xp, x, input_scale, input_zero_point)
        depth = int(np.prod(weight.shape[1:]))
        exact = depth * ACTIVATION_RANGE[1] * WEIGHT_RANGE[1] < 2**24
        dtype = xp.float32 if exact else xp.float64
        # the float convolution of the codes, through conv2d's registered kernels where on
        total = run_forward(
            CONV2D, SimpleNamespace(), xp, codes.astype(dtype), weight.astype(dtype),
            stride=stride, padding=padding, dilation=dilation, groups=groups,
        )  # fmt: skip
        total = total.transpose(0, 2, 3, 1)  # channels last, to scale per channel
        out = _scale_and_bias(xp, total, scale * weight_scale, bias, input_scale is not None)
        out = xp.ascontiguousarray(out.transpose(0, 3, 1, 2))
        return _requantize(xp, out, output_scale, output_zero_point).astype(x.dtype, copy=False)

    def infer(self, x, weight, weight_scale, bias=None, **attrs):
        conv = {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}
        float_weight = ValueSpec(weight.shape, x.dtype, weight.device)
        return CONV2D.infer(x, float_weight, None, **conv)

    def cost(self, x, weight, weight_scale, bias=None, **attrs):
        conv = {k: attrs[k] for k in ("stride", "padding", "dilation", "groups")}
        return CONV2D.cost(x, weight, bias, **conv)

    def int8_onnx(self, attrs) -> str | None:
        if attrs.get("input_scale") is None:
            return (
                "a dynamically quantised convolution exports as DequantizeLinear + float Conv "
                "(onnxruntime has no dynamic int8 Conv kernel); quantise it statically with "
                "quant.prepare + quant.convert"
            )
        return None

    def to_onnx(self, emit, inputs, output, attrs):
        x, weight, weight_scale, *rest = inputs
        weights = _dequantize_weight(emit, weight, weight_scale)
        if attrs.get("input_scale") is None:  # a float Conv on the dequantised input
            codes, scale, zero_point = _dynamic_quantize(emit, x)
            x = emit.node("DequantizeLinear", [codes, scale, zero_point], dtype=np.float32)
        else:
            rest = _quantized_bias(emit, attrs["input_scale"], weight_scale, rest)
            x = _qdq(emit, x, attrs["input_scale"], attrs["input_zero_point"])
        (ph, pw), (sh, sw), (dh, dw) = attrs["padding"], attrs["stride"], attrs["dilation"]
        target = output if attrs.get("output_scale") is None else None
        result = emit.node(
            "Conv",
            [x, weights, *rest],
            target,
            dtype=np.float32,
            pads=[int(ph), int(pw), int(ph), int(pw)],
            strides=[int(sh), int(sw)],
            dilations=[int(dh), int(dw)],
            group=int(attrs["groups"]),
        )
        if target is None:
            _qdq(emit, result, attrs["output_scale"], attrs["output_zero_point"], output)


def _initializer(emit, name: str) -> np.ndarray:
    """The value of a constant already written to the graph (the layer's weights)."""
    for tensor in emit.initializers:
        if tensor.name == name:
            return emit.onnx.numpy_helper.to_array(tensor)
    raise KeyError(f"[quantized export] '{name}' is not a constant of the graph")


def _quantized_bias(emit, input_scale, weight_scale: str, rest: list) -> list:
    """[DequantizeLinear(int32 bias codes)] for a static layer's bias (the form int8 kernels
    fuse), computed as the eager forward computes it; [] without a bias."""
    if not rest:
        return rest
    scales = (np.float32(input_scale) * _initializer(emit, weight_scale)).astype(np.float32)
    codes = bias_codes(np, _initializer(emit, rest[0]), scales).astype(np.int32)
    zero_points = np.zeros(codes.shape, dtype=np.int32)
    return [
        emit.node(
            "DequantizeLinear",
            [emit.constant(codes), emit.constant(scales), emit.constant(zero_points)],
            dtype=np.float32,
            axis=0,
        )
    ]


def _dequantize_weight(emit, weight: str, weight_scale: str) -> str:
    """DequantizeLinear of int8 codes per output channel, with the explicit zero zero-points
    onnxruntime's int8 fusions look for."""
    channels = emit.shapes.get(weight_scale) or _initializer(emit, weight_scale).shape
    zero_points = emit.constant(np.zeros(tuple(int(c) for c in channels), dtype=np.int8))
    return emit.node(
        "DequantizeLinear", [weight, weight_scale, zero_points], dtype=np.float32, axis=0
    )


def _qdq(emit, x: str, scale, zero_point, output: str | None = None) -> str:
    """QuantizeLinear then DequantizeLinear of ``x`` on a static uint8 grid."""
    scale = emit.constant(np.asarray(scale, dtype=np.float32))
    zero_point = emit.constant(np.asarray(zero_point, dtype=np.uint8))
    rank = emit.rank(x)
    codes = emit.node("QuantizeLinear", [x, scale, zero_point], dtype=np.uint8, rank=rank)
    return emit.node(
        "DequantizeLinear", [codes, scale, zero_point], output, dtype=np.float32, rank=rank
    )


def _dynamic_quantize(emit, x: str) -> tuple[str, str, str]:
    """DynamicQuantizeLinear (three outputs: uint8 codes, scale, zero point)."""
    names = [emit.fresh("x_codes"), emit.fresh("x_scale"), emit.fresh("x_zero_point")]
    emit.nodes.append(emit.helper.make_node("DynamicQuantizeLinear", [x], names))
    for name, dtype in zip(names, (np.uint8, np.float32, np.uint8)):
        emit.dtypes[name] = np.dtype(dtype)
    return tuple(names)


def _dynamic_linear(emit, x, weight, weight_scale, rest, output) -> None:
    """The form onnxruntime's own dynamic quantisation writes (and fuses into one int8 op):
    DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by the scales (-> Add bias)."""
    codes, scale, zero_point = _dynamic_quantize(emit, x)
    transposed = emit.node("Transpose", [weight], dtype=np.int8, perm=[1, 0])  # (in, out)
    total = emit.node("MatMulInteger", [codes, transposed, zero_point], dtype=np.int32)
    total = emit.cast(total, np.float32)
    scales = emit.node("Mul", [scale, weight_scale], dtype=np.float32)
    emit.node("Mul", [total, scales], None if rest else output, dtype=np.float32)
    if rest:
        emit.node("Add", [emit.nodes[-1].output[0], rest[0]], output, dtype=np.float32)


FAKE_QUANTIZE = FakeQuantize()
DEQUANTIZE_WEIGHT = DequantizeWeight()
QUANTIZED_LINEAR = QuantizedLinear()
QUANTIZED_CONV2D = QuantizedConv2d()
