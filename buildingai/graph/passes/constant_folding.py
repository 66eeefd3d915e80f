"""Constant folding: a node whose inputs are all constants is computed once, at optimisation
time, by its op record's own forward; its output becomes a constant.

Parameters count as constants here: a folded graph holds the values they had when it was
optimised (freeze again after changing weights).
"""

from __future__ import annotations

import math

import numpy as np

from ..graph import Graph, Literal, Value
from ..symbolic import is_symbolic

# Broadcasting views would become full-size arrays: cheaper to keep computing them.
_GROWING = {"expand"}
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
            and all(ref in out.constants for ref in refs)
            and not is_symbolic(node.attrs)
            and node.op.name not in _GROWING
            and math.prod(graph.values[node.output].shape) <= _MAX_ELEMENTS
        )
        if not foldable:
            out.nodes.append(node)
            continue
        arrays = [
            ref.value if isinstance(ref, Literal) else out.constants[ref] for ref in node.inputs
        ]
        result = node.op.forward(_Scratch(), np, *arrays, **node.attrs)
        result = np.asarray(result)
        value = graph.values[node.output]
        out.constants[node.output] = result
        out.values[node.output] = Value(
            value.id, value.shape, value.dtype, "const", f"folded_{node.op.name}_{value.id}"
        )
    return out
