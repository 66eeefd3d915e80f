"""``export_onnx``: write a frozen graph as an ONNX model.

Each node is written by its op record's ``to_onnx`` method (next to its forward and backward in
``buildingai/ops``), through the ``Emitter`` builder. Symbolic sizes become named dynamic
dimensions; shapes that depend on them inside the graph (reshape targets, slice bounds) are
computed from the inputs' shapes, so one file serves every batch size.
"""

from __future__ import annotations

import re

import numpy as np

from ..graph.executor import StaticGraph
from ..ops.abstract import DimExpr
from .check import ExportError, check_onnx, require_onnx
from .emit import Emitter
from .runtime_options import op_types_of, session_options


def export_onnx(
    static_or_model,
    path=None,
    input_signature: list | None = None,
    opset: int = 17,
    check: bool = True,
):
    """Export a ``StaticGraph`` (or a Module/function, frozen first with ``input_signature``)
    to ONNX at ``path`` (not written when None). Returns the ``onnx.ModelProto``.

    Raises ``ExportError`` listing every op without a mapping (with its module path) before
    anything is written. ``check=True`` runs ``onnx.checker.check_model(full_check=True)``.
    """
    onnx = require_onnx()
    static = static_or_model
    if not isinstance(static, StaticGraph):
        if input_signature is None:
            raise ExportError(
                "export_onnx needs an input_signature to freeze a model or function",
                help="pass input_signature=[TensorSpec((None, 784))], or freeze it first",
            )
        from ..graph.freezing import freeze

        static = freeze(static_or_model, input_signature)
    missing = check_onnx(static)
    if missing:
        raise ExportError(
            f"{len(missing)} op(s) have no ONNX mapping: " + "; ".join(missing),
            help="export a graph without them (compose them from mapped ops), or add a to_onnx "
            "method to the op record",
        )
    model = build_model(onnx, static.graph, opset)
    if check:
        onnx.checker.check_model(model, full_check=True)
    if path is not None:
        onnx.save(model, str(path))
    return model


def _safe(name: str, taken: set) -> str:
    name = re.sub(r"[^A-Za-z0-9_.:/-]", "_", name) or "value"
    candidate, k = name, 1
    while candidate in taken:
        k += 1
        candidate = f"{name}_{k}"
    taken.add(candidate)
    return candidate


def _dims(shape: tuple) -> list:
    return [repr(d) if isinstance(d, DimExpr) else int(d) for d in shape]


def build_model(onnx, graph, opset: int):
    helper = onnx.helper
    taken: set = set()
    names: dict = {}
    for value_id, value in graph.values.items():
        names[value_id] = _safe(value.name, taken)
    sources = {
        symbol: (names[graph.inputs[position]], axis)
        for symbol, (position, axis) in graph.symbols.items()
    }
    emit = Emitter(onnx, opset, sources)
    for value_id, value in graph.values.items():
        emit.dtypes[names[value_id]] = value.dtype
        emit.ranks[names[value_id]] = len(value.shape)
        emit.shapes[names[value_id]] = value.shape

    inputs = []
    for position, value_id in enumerate(graph.inputs):
        spec = graph.specs[position]
        dims = [s if s is not None else int(e) for e, s in zip(spec.shape, spec.symbols)]
        inputs.append(
            helper.make_tensor_value_info(
                names[value_id], helper.np_dtype_to_tensor_dtype(spec.dtype), dims
            )
        )
    for value_id, array in graph.constants.items():
        if any(n.output == value_id for n in graph.nodes):
            continue
        emit.constant(np.ascontiguousarray(np.asarray(array)), names[value_id])

    from ..graph.graph import Literal

    for node in graph.nodes:
        refs = [ref if isinstance(ref, Literal) else names[ref] for ref in node.inputs]
        node.op.to_onnx(emit, refs, names[node.output], node.attrs)

    outputs = []
    for position, value_id in enumerate(graph.outputs):
        value = graph.values[value_id]
        name = f"output{position}" if len(graph.outputs) > 1 else "output"
        emit.node("Identity", [names[value_id]], name)
        outputs.append(
            helper.make_tensor_value_info(
                name, helper.np_dtype_to_tensor_dtype(value.dtype), _dims(value.shape)
            )
        )
    onnx_graph = helper.make_graph(
        emit.nodes, "buildingai_graph", inputs, outputs, initializer=emit.initializers
    )
    model = helper.make_model(
        onnx_graph,
        opset_imports=[helper.make_opsetid("", opset)],
        producer_name="buildingai",
    )
    model.ir_version = min(model.ir_version, 10)  # readable by onnxruntime releases since 1.17
    return model


def run_onnxruntime(model, *inputs) -> list:
    """Run an exported model with onnxruntime on NumPy inputs (for tests and checks)."""
    try:
        import onnxruntime
    except ImportError as error:
        raise ExportError(
            "running an exported model needs 'onnxruntime', which is not installed",
            help="pip install 'buildingai[export]' (or pip install onnxruntime)",
        ) from error
    data = model if isinstance(model, bytes) else model.SerializeToString()
    options = session_options(onnxruntime, op_types_of(model))
    session = onnxruntime.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    feeds = {
        spec.name: np.asarray(getattr(x, "array", x))
        for spec, x in zip(session.get_inputs(), inputs)
    }
    return session.run(None, feeds)
