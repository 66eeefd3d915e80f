"""The static graph: values (inputs, parameters, constants, op outputs), nodes (one op call
each) and a readable summary.

A ``Graph`` is plain data. ``freeze`` builds it by tracing, passes rewrite it, the executor runs
it, the ONNX exporter and the plotter read it. Every node names the op *record* it calls, so
running or exporting a graph never restates what an op computes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import BuildingAIError
from ..ops.abstract import ValueSpec, concrete
from .symbolic import show_shape


class GraphError(BuildingAIError):
    """A graph that cannot be built, optimised or run as asked."""


class Literal:
    """A node input that is a Python value (a scalar, or None) rather than a graph value."""

    __slots__ = ("value",)

    def __init__(self, value) -> None:
        self.value = value

    def __eq__(self, other) -> bool:
        return (
            isinstance(other, Literal)
            and type(other.value) is type(self.value)
            and other.value == self.value
        )

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))

    def __repr__(self) -> str:
        return repr(self.value)


@dataclass
class Value:
    """One tensor of the graph. ``kind`` is "input", "param" (a Module parameter or buffer),
    "const" (any other captured array) or "op" (a node output). ``shape`` holds ints and
    ``DimExpr`` for sizes that depend on the symbolic dimensions."""

    id: int
    shape: tuple
    dtype: np.dtype
    kind: str
    name: str


@dataclass
class Node:
    """One op call: ``output = op.forward(*inputs, **attrs)``. ``inputs`` holds value ids (int)
    and ``Literal`` s; ``module`` is the module path the call was made from ("" at top level)."""

    op: object
    inputs: tuple
    attrs: dict
    output: int
    module: str = ""

    def input_ids(self) -> list:
        return [ref for ref in self.inputs if not isinstance(ref, Literal)]


@dataclass
class Graph:
    """A static graph.

    - ``values``: id -> ``Value`` (its shape, of ints and ``DimExpr``, and dtype);
      ``constants``: id -> backend array (parameters and constants), of that value's shape.
    - ``inputs``: the ids of the graph inputs, one per ``specs`` entry (a ``TensorSpec``: the
      shape an input must have, symbolic sizes included, and its dtype).
    - ``nodes``: in execution order. ``outputs``: the ids returned; ``output_kind`` says whether
      the traced call returned one tensor ("single"), a tuple or a list.
    - ``symbols``: symbol name -> (input position, axis) where the size can be read.
    """

    values: dict = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)
    specs: list = field(default_factory=list)
    nodes: list = field(default_factory=list)
    outputs: list = field(default_factory=list)
    output_kind: str = "single"
    symbols: dict = field(default_factory=dict)
    # Set by the buffer-reuse pass: node index -> input id whose buffer the node may write into.
    donations: dict = field(default_factory=dict)

    # ----- building --------------------------------------------------------------------------
    def copy(self) -> Graph:
        """A copy whose lists and dicts can be changed without touching this graph (values,
        arrays and nodes themselves are shared: passes replace them, never mutate them)."""
        return Graph(
            values=dict(self.values),
            constants=dict(self.constants),
            inputs=list(self.inputs),
            specs=list(self.specs),
            nodes=list(self.nodes),
            outputs=list(self.outputs),
            output_kind=self.output_kind,
            symbols=dict(self.symbols),
            donations=dict(self.donations),
        )

    # ----- reading ----------------------------------------------------------------------------
    def consumers(self) -> dict:
        """value id -> list of node indices that read it."""
        readers: dict = {}
        for index, node in enumerate(self.nodes):
            for ref in node.input_ids():
                readers.setdefault(ref, []).append(index)
        return readers

    def producer(self) -> dict:
        """value id -> index of the node that computes it."""
        return {node.output: index for index, node in enumerate(self.nodes)}

    def parameter_count(self) -> int:
        return sum(
            int(np.prod(self.constants[v].shape))
            for v, value in self.values.items()
            if value.kind == "param" and v in self.constants
        )

    def summary(self) -> str:
        """A table of every node: op, inputs, output shape and dtype, module path, the parameters
        it reads, and its FLOPs and bytes moved from the op record's ``cost`` (symbolic sizes
        counted as 1)."""
        rows = [("#", "op", "inputs", "output", "module", "params", "FLOPs", "bytes")]
        total_flops = total_bytes = 0
        for index, node in enumerate(self.nodes):
            out = self.values[node.output]
            names = []
            params = 0
            for ref in node.inputs:
                if isinstance(ref, Literal):
                    names.append(repr(ref.value))
                    continue
                value = self.values[ref]
                names.append(value.name)
                if value.kind == "param":
                    params += int(np.prod(value.shape))
            flops, moved = self.cost(node)
            total_flops += flops or 0
            total_bytes += moved or 0
            rows.append(
                (
                    str(index),
                    getattr(node.op, "label", node.op.name),
                    ", ".join(names),
                    f"{show_shape(out.shape)} {out.dtype}",
                    node.module or "-",
                    str(params) if params else "",
                    _si(flops) if flops else "",
                    _si(moved) if moved else "",
                )
            )
        widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
        widths[2] = min(widths[2], 48)
        lines = []
        for row in rows:
            cells = [
                cell if len(cell) <= widths[c] else cell[: widths[c] - 3] + "..."
                for c, cell in enumerate(row)
            ]
            lines.append("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(cells)).rstrip())
        specs = ", ".join(repr(spec) for spec in self.specs)
        outputs = ", ".join(
            f"{self.values[v].name} {show_shape(self.values[v].shape)}" for v in self.outputs
        )
        header = [f"Graph({specs})", f"  outputs: {outputs}"]
        footer = [
            f"{len(self.nodes)} nodes, {self.parameter_count():,} parameters, "
            f"{_si(total_flops)} FLOPs, {_si(total_bytes)} bytes moved (symbolic sizes = 1)"
        ]
        return "\n".join(header + lines + footer)

    def cost(self, node: Node) -> tuple:
        """``(flops, bytes read + written)`` of one node from its op record's ``cost`` on the
        input specs, each symbol counted as 1; ``(None, None)`` when the record cannot say."""
        specs = [
            ref.value
            if isinstance(ref, Literal)
            else ValueSpec(self.values[ref].shape, self.values[ref].dtype)
            for ref in node.inputs
        ]
        try:
            flops, read, written = node.op.cost(*specs, **node.attrs)
        except (NotImplementedError, BuildingAIError):
            return None, None
        return concrete(flops), concrete(read) + concrete(written)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return (
            f"<Graph: {len(self.inputs)} inputs, {len(self.nodes)} nodes, "
            f"{len(self.outputs)} outputs>"
        )


def _si(count) -> str:
    if count is None:
        return ""
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if count >= scale:
            return f"{count / scale:.2f}{unit}"
    return str(int(count))
