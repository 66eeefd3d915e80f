"""Constant folding: a node whose inputs are all constants is computed once, at optimisation
time, by its op record's own forward; its output becomes a constant.

Parameters count as constants here: a folded graph holds the values they had when it was
optimised (freeze again after changing weights). A node whose output is larger than all its
constant inputs together (a broadcast such as ``expand``) is kept: computing it on every call is
cheaper than holding the grown array.
"""

from __future__ import annotations

import math

import numpy as np

from ...autograd.dispatch import run_forward
from ...ops.abstract import ValueSpec, bytes_of
from ..graph import Graph, Literal, Node, Value
from ..symbolic import is_symbolic

# Do not materialise constants larger than this many elements.
_MAX_ELEMENTS = 1 << 22


class _Scratch:
    pass


def fold_constants(graph: Graph) -> Graph:
    """Replace every node computable from constants alone with its (constant) result."""
    out = graph.copy()
    out.nodes = []
    for node in graph.nodes:
        refs = node.input_ids()
        foldable = (
            refs
            and not getattr(node.op, "effectful", False)
            and all(ref in out.constants for ref in refs)
            and not is_symbolic(node.attrs)
            and math.prod(graph.values[node.output].shape) <= _MAX_ELEMENTS
            and not _grows(graph, node)
        )
        if not foldable:
            out.nodes.append(node)
            continue
        arrays = [
            ref.value if isinstance(ref, Literal) else out.constants[ref] for ref in node.inputs
        ]
        result = run_forward(node.op, _Scratch(), np, *arrays, **node.attrs)
        result = np.asarray(result)
        value = graph.values[node.output]
        out.constants[node.output] = result
        out.values[node.output] = Value(
            value.id, value.shape, value.dtype, "const", f"folded_{node.op.name}_{value.id}"
        )
    return out


def _grows(graph: Graph, node: Node) -> bool:
    """Whether the node's output is larger than its inputs together (a broadcast, a tile). The
    output's shape is the op record's ``infer`` on the input specs, as freeze recorded it."""
    inputs = [
        ValueSpec(graph.values[ref].shape, graph.values[ref].dtype) for ref in node.input_ids()
    ]
    out = graph.values[node.output]
    return bytes_of(ValueSpec(out.shape, out.dtype)) > bytes_of(*inputs)
