"""``check_onnx``: which ops of a graph have no ONNX mapping, before anything is written."""

from __future__ import annotations

from ..errors import BuildingAIError


class ExportError(BuildingAIError):
    """A graph that cannot be exported: ops without an ONNX mapping, a missing dependency."""


def _graph_of(static_or_graph):
    return getattr(static_or_graph, "graph", static_or_graph)


def check_onnx(static_or_graph) -> list[str]:
    """One line per node whose op record has no ``to_onnx`` mapping: ``'op' at node k (in
    module.path)``. An empty list means the graph can be exported."""
    graph = _graph_of(static_or_graph)
    missing = []
    for index, node in enumerate(graph.nodes):
        ops = [op for op, _ in node.op.steps] if hasattr(node.op, "steps") else [node.op]
        for op in ops:
            if not callable(getattr(op, "to_onnx", None)):
                where = f" in {node.module}" if node.module else ""
                missing.append(f"'{op.name}' at node {index}{where}")
    return missing


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
