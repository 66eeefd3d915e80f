"""Dead-code elimination: drop nodes whose results no output needs, and unused constants.
Effectful nodes (random draws, optimizer updates) always stay: their effect is the point."""

from __future__ import annotations

from ..graph import Graph


def eliminate_dead_code(graph: Graph) -> Graph:
    """Keep only the nodes (and constants) the outputs depend on; inputs always stay."""
    needed = set(graph.outputs)
    kept = []
    for node in reversed(graph.nodes):
        if node.output in needed or getattr(node.op, "effectful", False):
            kept.append(node)
            needed.update(node.input_ids())
    out = graph.copy()
    out.nodes = kept[::-1]
    out.donations = {}
    alive = needed | set(graph.inputs)
    out.values = {k: v for k, v in graph.values.items() if k in alive}
    out.constants = {k: v for k, v in graph.constants.items() if k in alive}
    return out
