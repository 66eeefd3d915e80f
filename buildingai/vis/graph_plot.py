"""Draw a graph with Graphviz: DOT text always, SVG/PNG when the ``dot`` program exists.

Each op node shows the op, its output shape and dtype, and the module path it ran in; inputs
are green, parameters and constants grey. Nodes of one module are grouped in a labelled box.
The graph is a frozen one, or a model's most recent call: recorded as it ran (``runs.py``) or
replayed from its shapes (``replay.py``).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from ..graph.executor import StaticGraph
from ..graph.freezing import freeze
from ..graph.graph import Graph, GraphError, Literal
from ..graph.symbolic import show_shape
from ..nn.call_signature import last_call_signature
from ..nn.module import Module
from .replay import leaving_no_trace, refuse_training_that_changes, replay, stand_in_specs
from .runs import last_run, record_call


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


class DotSource(str):
    """DOT text that Jupyter shows as a picture: SVG rendered by Graphviz's ``dot`` program
    when it is installed, the text itself otherwise."""

    def _repr_svg_(self) -> str | None:
        program = shutil.which("dot")
        if program is None:
            return None
        rendered = subprocess.run(
            [program, "-Tsvg"],
            input=str(self),
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return rendered.stdout

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        printer.text(str(self))


def plot_computation_graph(
    source,
    path=None,
    input_signature: list | None = None,
    *,
    example_inputs=None,
) -> DotSource | list[Path]:
    """Draw the graph of a model, a function or a ``StaticGraph``.

    Which graph: a ``StaticGraph`` or ``Graph`` as it is; with ``input_signature``, the model
    or function frozen with it; with ``example_inputs`` (a Tensor or a tuple of them), one call
    on them, recorded now; otherwise, for a Module or its bound ``forward``, the model's most
    recent call: the call itself when ``record_runs(model)`` recorded it, else the model run
    once more on stand-in values of that call's shapes and dtypes, leaving no trace (see
    ``vis/replay.py``; a forward that branches on values may take another branch).

    A model in training mode is drawn where training mode changes nothing it computes; with
    active dropout or batch statistics (a replay or a freeze would draw one random training
    call) it is refused: call ``model.eval()`` first, or record its training calls.

    Without ``path`` it returns the DOT text as a ``DotSource`` (a str that Jupyter shows as
    SVG when Graphviz's ``dot`` is installed). With ``path`` it writes the DOT text there when
    ``path`` ends in ``.dot`` or ``.gv``; for ``.svg`` / ``.png`` / ``.pdf`` it writes the DOT
    text next to it (suffix ``.dot``) and the rendered picture when ``dot`` is installed, and
    returns the list of files written.
    """
    module = _module_of(source)
    name = type(module).__name__ if module is not None else _name_of(source)
    if isinstance(source, StaticGraph):
        graph = source.graph
    elif isinstance(source, Graph):
        graph = source
    elif input_signature is not None:
        graph = _frozen(module if module is not None else source, module, input_signature, name)
    elif example_inputs is not None:
        inputs = example_inputs if isinstance(example_inputs, (tuple, list)) else (example_inputs,)
        graph = record_call(module if module is not None else source, tuple(inputs), module)
    else:
        graph = _most_recent_run(source, module, name)
    dot_text = DotSource(graph_to_dot(graph, name))
    if path is None:
        return dot_text
    return _write(dot_text, Path(path))


def _module_of(source):
    """The Module that ``source`` calls: itself, or the owner of a bound ``forward``."""
    if isinstance(source, Module):
        return source
    owner = getattr(source, "__self__", None)
    if isinstance(owner, Module) and getattr(source, "__name__", None) == "forward":
        return owner
    return None


def _name_of(source) -> str:
    if isinstance(source, (StaticGraph, Graph)):
        return type(source).__name__
    return getattr(source, "__qualname__", None) or type(source).__name__


def _most_recent_run(source, module, name: str) -> Graph:
    if module is None:
        raise GraphError(
            f"[plot_computation_graph] {name} is not a Module or its forward, so its calls "
            "are not recorded",
            help="pass example_inputs=(x,) to record one call, or "
            "input_signature=[TensorSpec(...)] to freeze it",
        )
    graph = last_run(module)
    if graph is not None:
        return graph
    signature = last_call_signature(module)
    if signature is not None:
        return replay(module, signature, name)
    raise GraphError(
        f"[plot_computation_graph] {name} has not been called on its own yet, so it has no "
        "most recent call to draw: run the model once, or pass example inputs",
        help="call the model, then plot again; or plot_computation_graph(model.forward, "
        "example_inputs=(x,)); a part called only inside its model is drawn with that model",
    )


def _frozen(target, module, input_signature: list, name: str) -> Graph:
    """The graph of ``target`` frozen with ``input_signature``. A model in training mode is
    frozen as in evaluation (its flags put back after) when that mode changes nothing."""
    if module is None or not any(part.training for part in module.modules()):
        return freeze(target, input_signature).graph
    refuse_training_that_changes(module, stand_in_specs(input_signature, module), {}, name)
    with leaving_no_trace(module):
        module.eval()
        return freeze(target, input_signature).graph


def _write(dot_text: str, path: Path) -> list:
    """Write ``dot_text`` (and the picture ``path`` asks for, when ``dot`` is installed)."""
    dot_path = path if path.suffix in (".dot", ".gv") else path.with_suffix(".dot")
    dot_path.write_text(dot_text)
    written = [dot_path]
    if path.suffix in (".svg", ".png", ".pdf"):
        program = shutil.which("dot")
        if program is None:
            print(
                f"plot_computation_graph: Graphviz's dot program is not installed, so only "
                f"{dot_path} was written, not {path} (install Graphviz to render it)",
                file=sys.stderr,
            )
        else:
            subprocess.run(
                [program, f"-T{path.suffix[1:]}", str(dot_path), "-o", str(path)],
                check=True,
                capture_output=True,
                timeout=120,
            )
            written.append(path)
    return written
