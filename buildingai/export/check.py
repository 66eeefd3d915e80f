"""``check_onnx``: which ops of a graph have no ONNX mapping, before anything is written."""

from __future__ import annotations

from ..errors import BuildingAIError


class ExportError(BuildingAIError):
    """A graph that cannot be exported: ops without an ONNX mapping, a missing dependency."""


def _graph_of(static_or_graph):
    return getattr(static_or_graph, "graph", static_or_graph)


def check_onnx(static_or_graph, int8: bool = False) -> list[str]:
    """One line per node whose op record has no ``to_onnx`` mapping: ``'op' at node k (in
    module.path)``. An empty list means the graph can be exported.

    With ``int8=True``, also one line per quantised node whose export would not run on
    onnxruntime's int8 kernels, with the reason the op record gives (``int8_onnx``), e.g. a
    dynamically quantised convolution. ``float_kernels`` asks onnxruntime itself about a
    written model (float layers left in a partly quantised model included)."""
    graph = _graph_of(static_or_graph)
    missing = []
    for index, node in enumerate(graph.nodes):
        ops = [op for op, _ in node.op.steps] if hasattr(node.op, "steps") else [node.op]
        where = f" in {node.module}" if node.module else ""
        for op in ops:
            if not callable(getattr(op, "to_onnx", None)):
                missing.append(f"'{op.name}' at node {index}{where}")
            elif int8 and callable(getattr(op, "int8_onnx", None)):
                reason = op.int8_onnx(node.attrs)
                if reason:
                    missing.append(f"'{op.name}' at node {index}{where}: {reason}")
    return missing


# ONNX ops that do the bulk of a network's arithmetic: left in the optimised graph, they run in
# floating point (their int8 forms are QLinear*, QGemm, *Integer, DynamicQuantize*).
_FLOAT_COMPUTE = (
    "Conv",
    "FusedConv",
    "ConvTranspose",
    "Gemm",
    "FusedGemm",
    "MatMul",
    "FusedMatMul",
    "LSTM",
    "GRU",
    "RNN",
    "Einsum",
    "Attention",
)


def float_kernels(model) -> list[str]:
    """The compute nodes (Conv, Gemm, MatMul, LSTM...) that onnxruntime still runs in floating
    point after its graph optimisations (which fuse QDQ groups into int8 kernels), one line
    each: ``'Conv' (node name) in float``. Needs ``onnxruntime``."""
    import os
    import tempfile

    onnx = require_onnx()
    try:
        import onnxruntime
    except ImportError as error:
        raise ExportError(
            "float_kernels needs 'onnxruntime', which is not installed",
            help="pip install 'buildingai[export]' (or pip install onnxruntime)",
        ) from error
    data = model if isinstance(model, bytes) else model.SerializeToString()
    with tempfile.TemporaryDirectory() as folder:
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
        options.optimized_model_filepath = os.path.join(folder, "optimized.onnx")
        onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        optimized = onnx.load(options.optimized_model_filepath)
    return [
        f"'{node.op_type}' ({node.name or node.output[0]}) in float"
        for node in optimized.graph.node
        if node.op_type in _FLOAT_COMPUTE
    ]


def require_onnx():
    """Import onnx, or raise an error that says how to install it."""
    try:
        import onnx
    except ImportError as error:
        raise ExportError(
            "ONNX export needs the 'onnx' package, which is not installed",
            help="pip install 'buildingai[export]' (or pip install onnx onnxruntime)",
        ) from error
    return onnx
