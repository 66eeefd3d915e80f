"""Draw a frozen graph with Graphviz: DOT text always, SVG/PNG when the ``dot`` program exists.

Each op node shows the op, its output shape and dtype, and the module path it ran in; inputs
are green, parameters and constants grey. Nodes of one module are grouped in a labelled box.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from ..graph.executor import StaticGraph
from ..graph.graph import Graph, Literal
from ..graph.symbolic import show_shape


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _label(*lines: str) -> str:
    """A DOT label of several lines (each escaped, joined by DOT's line break)."""
    return "\\n".join(_escape(line) for line in lines)


def graph_to_dot(graph: Graph, name: str = "graph") -> str:
    """The DOT description of ``graph``."""
    lines = [
        f'digraph "{_escape(name)}" {{',
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    shown: set = set()

    def value_node(value_id: int) -> str:
        value = graph.values[value_id]
        key = f"v{value_id}"
        if value_id not in shown:
            shown.add(value_id)
            colour = "#c8e6c9" if value.kind == "input" else "#eeeeee"
            label = _label(value.name, f"{show_shape(value.shape)} {value.dtype}")
            lines.append(f'  {key} [label="{label}", fillcolor="{colour}", shape=note];')
        return key

    producer = graph.producer()
    by_module: dict = {}
    for index, node in enumerate(graph.nodes):
        by_module.setdefault(node.module, []).append(index)
    for cluster, (module, indices) in enumerate(by_module.items()):
        indent = "  "
        if module:
            lines.append(f"  subgraph cluster_{cluster} {{")
            lines.append(f'    label="{_escape(module)}"; style=dashed; color="#90a4ae";')
            indent = "    "
        for index in indices:
            node = graph.nodes[index]
            out = graph.values[node.output]
            op_label = getattr(node.op, "label", node.op.name)
            parts = [op_label, f"{show_shape(out.shape)} {out.dtype}"] + (
                [module] if module else []
            )
            label = _label(*parts)
            lines.append(f'{indent}n{index} [label="{label}", fillcolor="#bbdefb"];')
        if module:
            lines.append("  }")
    for index, node in enumerate(graph.nodes):
        for position, ref in enumerate(node.inputs):
            if isinstance(ref, Literal):
                continue
            source = f"n{producer[ref]}" if ref in producer else value_node(ref)
            lines.append(f'  {source} -> n{index} [label="{position}"];')
    for position, value_id in enumerate(graph.outputs):
        lines.append(f'  out{position} [label="output {position}", fillcolor="#ffe0b2"];')
        source = f"n{producer[value_id]}" if value_id in producer else value_node(value_id)
        lines.append(f"  {source} -> out{position};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def plot_computation_graph(model_or_static_graph, path, input_signature: list | None = None):
    """Write the graph of a model, function or ``StaticGraph`` to ``path``.

    ``path`` ending in ``.dot`` (or ``.gv``) gets the DOT text; ``.svg`` / ``.png`` / ``.pdf``
    also get the rendered picture when Graphviz's ``dot`` program is installed (next to it,
    the DOT file is always written as ``path`` with the suffix ``.dot``). Returns the list of
    files written. A model or function is frozen first with ``input_signature``.
    """
    from ..graph.graph import GraphError
    from ..graph.trace import freeze

    source = model_or_static_graph
    if isinstance(source, StaticGraph):
        graph = source.graph
    elif isinstance(source, Graph):
        graph = source
    else:
        if input_signature is None:
            raise GraphError(
                "[plot_computation_graph] a model or function needs an input_signature",
                help="pass input_signature=[TensorSpec(...)], or freeze it first",
            )
        graph = freeze(source, input_signature).graph
    path = Path(path)
    name = getattr(type(model_or_static_graph), "__name__", "graph")
    dot_text = graph_to_dot(graph, name)
    dot_path = path if path.suffix in (".dot", ".gv") else path.with_suffix(".dot")
    dot_path.write_text(dot_text)
    written = [dot_path]
    if path.suffix in (".svg", ".png", ".pdf"):
        program = shutil.which("dot")
        if program is not None:
            subprocess.run(
                [program, f"-T{path.suffix[1:]}", str(dot_path), "-o", str(path)],
                check=True,
                capture_output=True,
                timeout=120,
            )
            written.append(path)
    return written
