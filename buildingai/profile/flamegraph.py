"""The flame graph page: one self-contained HTML file (no network) with an icicle chart of the
trace (phase > module > op), the op and module tables, and optionally the computation graph.

The frame tree is built here; ``flamegraph_page.py`` holds the page's own CSS and JavaScript.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

from ..vis.graph_plot import plot_computation_graph
from .first_calls import one_time_costs
from .flamegraph_page import PAGE
from .summary import event_cost, summarize

PYTHON_FRAME = "(Python outside ops)"


def frame_tree(tracer) -> dict:
    """The trace as nested frames: ``{"name", "value" (ns), "calls", "flops", "children"}``;
    the root adds the traced time spent outside ops as its own frame. A first call that paid
    one-time costs is its own frame, ``linear (first call)``, beside the op's later calls."""
    root = {"name": "all", "value": 0, "calls": 0, "flops": 0, "children": {}}
    costs: dict = {}
    one_time = one_time_costs(tracer.events)
    for index, event in enumerate(tracer.events):
        duration = event.duration_ns
        flops = event_cost(event, costs)[0] if event.op is not None else 0
        node = root
        node["value"] += duration
        node["flops"] += flops
        frames = event.frames
        if index in one_time:
            frames = event.stack + (f"{event.name} (first call)",)
        for name in frames:
            child = node["children"].get(name)
            if child is None:
                child = {"name": name, "value": 0, "calls": 0, "flops": 0, "children": {}}
                node["children"][name] = child
            child["value"] += duration
            child["flops"] += flops
            node = child
        node["calls"] += 1
    outside = tracer.wall_ns - root["value"]
    if outside > 0:
        root["children"][PYTHON_FRAME] = {
            "name": PYTHON_FRAME, "value": outside, "calls": 0, "flops": 0, "children": {},
        }  # fmt: skip
        root["value"] += outside
    return _as_lists(root)


def _as_lists(node: dict) -> dict:
    children = sorted(node["children"].values(), key=lambda child: -child["value"])
    return {**node, "children": [_as_lists(child) for child in children]}


def write_flamegraph(
    tracer, path: str | os.PathLike, *, title: str, graph=None, graph_inputs=None
) -> Path:
    """Write the page to ``path`` (and ``<stem>.graph.dot`` beside it when ``graph`` is given)."""
    path = Path(path)
    summary = summarize(tracer)
    graph_section = ""
    if graph is not None:
        dot_path = path.with_name(path.stem + ".graph.dot")
        plot_computation_graph(graph, dot_path, example_inputs=graph_inputs)
        graph_section = (
            f'<section id="graph"><h2>Computation graph</h2><p><a href="{html.escape(dot_path.name)}">'
            f"{html.escape(dot_path.name)}</a> (Graphviz DOT, drawn by plot_computation_graph)</p>"
            f"<details><summary>DOT source</summary><pre>{html.escape(dot_path.read_text())}</pre>"
            "</details></section>"
        )
    data = json.dumps(frame_tree(tracer)).replace("</", "<\\/")  # no early </script>
    page = (
        PAGE.replace("@TITLE@", html.escape(title))
        .replace("@TOTALS@", html.escape(str(summary).split("\n", 1)[0]))
        .replace("@OPS@", _rows(summary.ops))
        .replace("@MODULES@", _rows(summary.modules))
        .replace("@GRAPH@", graph_section)
        .replace("@DATA@", data)
    )
    path.write_text(page, encoding="utf-8")
    return path


def _rows(rows: dict, top: int = 30) -> str:
    lines = []
    for row in list(rows.values())[:top]:
        lines.append(
            f"<tr><td>{html.escape(row.name)}</td><td>{row.calls}</td>"
            f"<td>{row.time_ns / 1e6:.3f}</td><td>{row.array_ns / 1e6:.3f}</td>"
            f"<td>{row.dispatch_ns / 1e6:.3f}</td><td>{row.flops:,}</td>"
            f"<td>{row.gflops_per_s:.2f}</td></tr>"
        )
    return "\n".join(lines)
