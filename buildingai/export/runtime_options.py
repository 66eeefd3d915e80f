"""The options every onnxruntime session of BuildingAI opens with."""

from __future__ import annotations

# Ops whose int8 x int8 products onnxruntime runs on its U8S8 kernels (QDQ pairs around a
# product fuse into QLinearConv / QGemm; dynamic quantization exports DynamicQuantizeLinear).
_INT8_PRODUCTS = {"QuantizeLinear", "DynamicQuantizeLinear", "MatMulInteger", "ConvInteger"}


def op_types_of(model) -> set:
    """The node op types of an ONNX model given as a ModelProto, bytes or a file path (empty
    where the ``onnx`` package is missing to read bytes or a file)."""
    if not hasattr(model, "graph"):
        try:
            import onnx
        except ImportError:
            return set()
        model = onnx.load_from_string(model) if isinstance(model, bytes) else onnx.load(model)
    return {node.op_type for node in model.graph.node}


def session_options(onnxruntime, op_types=()):
    """Quiet session options; exact int8 products for a model whose ``op_types`` (the node
    op types of its graph) hold int8 activations.

    On x86 CPUs without VNNI, onnxruntime's default U8S8 kernels add pairs of uint8 x int8
    products in 16 bits, which saturates: results then differ from the int8 model's own
    arithmetic by many quanta. ``session.x64quantprecision`` makes it use U8U8 products there
    (nothing changes elsewhere). It is left off for weight-only models: its int8-to-uint8
    weight rewrite gives a per-axis DequantizeLinear a scalar zero point, which onnxruntime
    then refuses, and those models compute in float anyway."""
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    if _INT8_PRODUCTS.intersection(op_types):
        options.add_session_config_entry("session.x64quantprecision", "1")
    return options
