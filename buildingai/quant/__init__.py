"""Post-training and quantisation-aware int8 quantisation, in PyTorch's spelling.

Example::

    from buildingai import quant
    small = quant.quantize_dynamic(model)                  # int8 weights, no calibration

    quant.prepare(model, observer=quant.PercentileObserver)  # in place (inplace=False: a copy)
    with buildingai.no_grad():
        for images, _ in calibration_batches:
            model(images)
    quant.convert(model)                                   # static: calibrated activations

    quant.prepare_qat(model)                               # train it, then quant.convert(model)

Quantised models export to ONNX in QDQ form (``export_onnx``) for onnxruntime's int8 kernels;
``export.check_onnx(graph, int8=True)`` lists quantised ops that would not run on them, and
``export.float_kernels(onnx_model)`` what onnxruntime still runs in float after its fusions.
"""

from .convert import convert, prepare, prepare_qat, quantize_dynamic
from .modules import (
    FakeQuantize,
    QATConv2d,
    QATLinear,
    QuantizationError,
    QuantizedConv2d,
    QuantizedLinear,
    WeightOnlyInt8,
    fake_quantize_weight,
    quantize_weights_only,
)
from .observers import (
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    Observer,
    PercentileObserver,
)
from .ops import FAKE_QUANTIZE

__all__ = [
    "FAKE_QUANTIZE",
    "FakeQuantize",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "Observer",
    "PercentileObserver",
    "QATConv2d",
    "QATLinear",
    "QuantizationError",
    "QuantizedConv2d",
    "QuantizedLinear",
    "WeightOnlyInt8",
    "convert",
    "fake_quantize_weight",
    "prepare",
    "prepare_qat",
    "quantize_dynamic",
    "quantize_weights_only",
]
