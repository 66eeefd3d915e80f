"""Quantised layers (int8 Linear / Conv2d, weight-only int8 for other modules) and the fake
quantisation modules of quantisation-aware training."""

from __future__ import annotations

import numpy as np

from ..autograd.mode import no_grad
from ..autograd.tensor import Tensor
from ..errors import BuildingAIError
from ..nn import functional as F
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module
from .observers import MovingAverageMinMaxObserver, Observer
from .ops import DEQUANTIZE_WEIGHT, FAKE_QUANTIZE, QUANTIZED_CONV2D, QUANTIZED_LINEAR
from .qparams import ACTIVATION_RANGE, WEIGHT_RANGE, quantize_weight, weight_scales


class QuantizationError(BuildingAIError):
    """A model or layer that cannot be quantised as asked."""


def _codes_and_scales(weight: Tensor) -> tuple[Tensor, Tensor]:
    codes, scales = quantize_weight(np, np.asarray(weight.numpy(), dtype=np.float32), axis=0)
    return Tensor(codes), Tensor(scales)


def _float_bias(bias) -> Tensor | None:
    return None if bias is None else Tensor(bias.numpy().astype(np.float32))


class _QuantizedLayer(Module):
    """What the int8 layers share: int8 ``weight`` (PyTorch's layout) with per-output-channel
    ``weight_scale`` buffers, a float ``bias`` buffer, and the activation grids: ``input_qparams``
    ``(scale, zero_point)`` (None: dynamic, from each input's range) and ``output_qparams`` (None:
    float output)."""

    def _setup(self, weight: Tensor, bias, input_qparams, output_qparams) -> None:
        codes, scales = _codes_and_scales(weight)
        self.register_buffer("weight", codes)
        self.register_buffer("weight_scale", scales)
        self.register_buffer("bias", _float_bias(bias))
        self.input_qparams = input_qparams
        self.output_qparams = output_qparams

    def _attrs(self) -> dict:
        input_scale, input_zero_point = self.input_qparams or (None, 0)
        output_scale, output_zero_point = self.output_qparams or (None, 0)
        return {
            "input_scale": None if input_scale is None else float(input_scale),
            "input_zero_point": int(input_zero_point),
            "output_scale": None if output_scale is None else float(output_scale),
            "output_zero_point": int(output_zero_point),
        }

    def _weights(self) -> list:
        return [self.weight, self.weight_scale] + ([] if self.bias is None else [self.bias])

    def extra_repr(self) -> str:
        mode = "dynamic" if self.input_qparams is None else "static"
        return f"{self._shape_repr()}, {mode}, int8 per-channel weights"


class QuantizedLinear(_QuantizedLayer):
    """int8 Linear: x (*, in_features) -> (*, out_features); see ``ops.QuantizedLinear``."""

    def __init__(self, linear: Linear, input_qparams=None, output_qparams=None) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self._setup(linear.weight, linear.bias, input_qparams, output_qparams)

    def forward(self, x: Tensor) -> Tensor:
        return QUANTIZED_LINEAR(x, *self._weights(), **self._attrs())

    def _shape_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class QuantizedConv2d(_QuantizedLayer):
    """int8 Conv2d: (N, C, H, W) -> (N, O, Ho, Wo); see ``ops.QuantizedConv2d``."""

    def __init__(self, conv: Conv2d, input_qparams=None, output_qparams=None) -> None:
        super().__init__()
        if conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise QuantizationError(
                f"[quant] Conv2d with padding={conv.padding!r}, padding_mode="
                f"{conv.padding_mode!r} cannot be quantised",
                help="use numeric padding with padding_mode='zeros'",
            )
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.kernel_size = conv.kernel_size
        self.conv_attrs = {
            "stride": tuple(conv.stride),
            "padding": tuple(conv.padding),
            "dilation": tuple(conv.dilation),
            "groups": conv.groups,
        }
        self._setup(conv.weight, conv.bias, input_qparams, output_qparams)

    def forward(self, x: Tensor) -> Tensor:
        return QUANTIZED_CONV2D(x, *self._weights(), **self.conv_attrs, **self._attrs())

    def _shape_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}"


class WeightOnlyInt8:
    """Forward pre-hook of weight-only quantisation: ``module.<name>`` is recomputed from the
    int8 buffers ``<name>_int8`` and ``<name>_scale`` before each call (the arithmetic stays
    float32). Used for layers without an int8 op here, such as LSTM. ``<name>_int8`` has the
    weight's shape (out, *), ``<name>_scale`` is (out,); the rebuilt weight is (out, *)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def __call__(self, module, inputs) -> None:
        for name in self.names:
            codes = getattr(module, name + "_int8")
            scale = getattr(module, name + "_scale")
            setattr(module, name, DEQUANTIZE_WEIGHT(codes, scale, axis=0))


def quantize_weights_only(module: Module, prefix: str = "weight") -> Module:
    """Store every parameter of ``module`` whose name starts with ``prefix`` as int8 with
    per-row scales, in place; the module then computes with the dequantised float32 weights.
    A weight (out, *) becomes buffers ``<name>_int8`` (out, *) and ``<name>_scale`` (out,); the
    module's input and output shapes do not change."""
    names = [n for n, p in module._parameters.items() if p is not None and n.startswith(prefix)]
    for name in names:
        codes, scales = _codes_and_scales(module._parameters.pop(name))
        module.register_buffer(name + "_int8", codes)
        module.register_buffer(name + "_scale", scales)
    for name, param in list(module._parameters.items()):  # biases stay float, not trained
        if param is not None:
            module._parameters.pop(name)
            module.register_buffer(name, Tensor(param.numpy()))
    hook = WeightOnlyInt8(names)
    hook(module, ())
    module.register_forward_pre_hook(hook)
    return module


# ----- quantisation-aware training ---------------------------------------------------------------


class FakeQuantize(Module):
    """Rounds a float tensor onto a uint8 grid and back (``ops.FakeQuantize``), with a
    straight-through gradient. In training mode an observer updates the grid from each batch
    (unless ``observer_enabled`` is False); in eval mode the grid is fixed.

    x: any shape -> same shape (one scalar scale and zero point for the whole tensor)."""

    def __init__(self, observer: Observer | None = None) -> None:
        super().__init__()
        self.observer = observer if observer is not None else MovingAverageMinMaxObserver()
        self.observer_enabled = True
        self.qmin, self.qmax = ACTIVATION_RANGE

    def qparams(self):
        return self.observer.qparams()

    def forward(self, x: Tensor) -> Tensor:
        if self.training and self.observer_enabled:
            with no_grad():
                self.observer.observe(x.numpy())
        scale, zero_point = self.observer.qparams()
        return FAKE_QUANTIZE(
            x,
            Tensor(np.asarray(scale, dtype=np.float32)),
            Tensor(np.asarray(zero_point, dtype=np.uint8)),
            qmin=self.qmin,
            qmax=self.qmax,
        )

    def extra_repr(self) -> str:
        return repr(self.observer)


def fake_quantize_weight(weight: Tensor) -> Tensor:
    """``weight`` rounded onto its per-output-channel symmetric int8 grid, straight-through
    gradient; the scales follow the current weights (constants for the gradient).

    weight (out, *) -> same shape, with one scale per output channel, ``(out,)``."""
    scales = weight_scales(np, np.asarray(weight.numpy(), dtype=np.float32), axis=0)
    zero_points = np.zeros(scales.shape, dtype=np.int8)
    return FAKE_QUANTIZE(
        weight,
        Tensor(scales),
        Tensor(zero_points),
        qmin=WEIGHT_RANGE[0],
        qmax=WEIGHT_RANGE[1],
        axis=0,
    )


class QATLinear(Module):
    """Linear trained through fake quantisation of its input and weight; it holds the float
    layer's own Parameters. ``quant.convert`` turns it into ``QuantizedLinear``.

    x (*, in_features) -> (*, out_features), as ``Linear``."""

    def __init__(self, linear: Linear, observer: type = MovingAverageMinMaxObserver) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.input_fake_quant = FakeQuantize(observer())
        self.output_fake_quant = FakeQuantize(observer())

    def forward(self, x: Tensor) -> Tensor:
        x = self.input_fake_quant(x)
        out = F.linear(x, fake_quantize_weight(self.weight), self.bias)
        return self.output_fake_quant(out)

    def to_float(self) -> Linear:
        layer = Linear(self.in_features, self.out_features, bias=self.bias is not None)
        layer.weight, layer.bias = self.weight, self.bias
        return layer


class QATConv2d(Module):
    """Conv2d trained through fake quantisation of its input and weight (see ``QATLinear``).

    x (N, C, H, W) -> (N, O, Ho, Wo), as ``Conv2d``."""

    def __init__(self, conv: Conv2d, observer: type = MovingAverageMinMaxObserver) -> None:
        super().__init__()
        if conv.padding_mode != "zeros":
            raise QuantizationError(
                f"[quant] Conv2d with padding_mode={conv.padding_mode!r} cannot be quantised",
                help="use padding_mode='zeros'",
            )
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.kernel_size, self.stride, self.padding = conv.kernel_size, conv.stride, conv.padding
        self.dilation, self.groups = conv.dilation, conv.groups
        self.weight = conv.weight
        self.bias = conv.bias
        self.input_fake_quant = FakeQuantize(observer())
        self.output_fake_quant = FakeQuantize(observer())

    def forward(self, x: Tensor) -> Tensor:
        x = self.input_fake_quant(x)
        weight = fake_quantize_weight(self.weight)
        out = F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)
        return self.output_fake_quant(out)

    def to_float(self) -> Conv2d:
        conv = Conv2d(
            self.in_channels,
            self.out_channels,
            self.kernel_size,
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
            bias=self.bias is not None,
        )
        conv.weight, conv.bias = self.weight, self.bias
        return conv
