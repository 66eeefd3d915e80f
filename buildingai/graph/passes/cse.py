"""Common-subexpression elimination: two nodes running the same op record on the same inputs
with the same attributes compute the same value; the second reads the first's result.

Ops are deterministic given their inputs, except records marked ``effectful`` (a random draw,
an optimizer update): those are never merged.
"""

from __future__ import annotations

from ..graph import Graph, Literal, Node


def eliminate_common_subexpressions(graph: Graph) -> Graph:
    out = graph.copy()
    out.nodes = []
    out.donations = {}
    renamed: dict = {}
    seen: dict = {}
    for node in graph.nodes:
        inputs = tuple(
            ref if isinstance(ref, Literal) else renamed.get(ref, ref) for ref in node.inputs
        )
        key = (id(node.op), inputs, _key(node.attrs))
        if getattr(node.op, "effectful", False):
            out.nodes.append(Node(node.op, inputs, node.attrs, node.output, node.module))
            continue
        if key in seen:
            renamed[node.output] = seen[key]
            continue
        seen[key] = node.output
        out.nodes.append(Node(node.op, inputs, node.attrs, node.output, node.module))
    out.outputs = [renamed.get(v, v) for v in graph.outputs]
    return out


def _key(value):
    """A hashable stand-in for an attribute value (arrays by content)."""
    if isinstance(value, dict):
        return tuple(sorted((k, _key(v)) for k, v in value.items()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_key(v) for v in value)
    if isinstance(value, slice):
        return ("slice", _key(value.start), _key(value.stop), _key(value.step))
    if hasattr(value, "shape") and hasattr(value, "tobytes"):
        return ("array", value.shape, str(value.dtype), value.tobytes())
    try:
        hash(value)
    except TypeError:
        return ("object", id(value))
    return (type(value).__name__, value)
