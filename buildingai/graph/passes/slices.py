"""Slices assembled: a sum of ``zeros_index_add`` results, each putting a tensor into zeros at
its own slice of one axis, the slices side by side and covering the axis, is the
concatenation of those tensors.

A backward traces that sum wherever a tensor is split (``split``, ``chunk``, slicing by
hand): each piece's gradient is scattered into zeros of the whole shape by ``getitem``'s
adjoint, and the pieces' gradients are added. nanoGPT's attention splits its fused query, key
and value product this way: three (B, T, 3C) arrays of zeros, three copies and two sums become
one concatenation that writes (B, T, 3C) once.

Where each piece is a ``reshape`` that merges the trailing axes of a strided array into the
last axis (the heads' gradients, (B, T, H, D) seen as (B, T, C)), that reshape would copy:
the concatenation then joins the arrays before the merge, and one reshape of its contiguous
result merges the axes for free.
"""

from __future__ import annotations

from math import prod

from ...ops.shape import CONCATENATE, RESHAPE
from ..graph import Graph, Literal, Node, Value


def assemble_slices(graph: Graph) -> Graph:
    """Replace each sum of ``zeros_index_add`` slices that tile an axis by one
    ``concatenate`` of the sliced values; the nodes it no longer needs are left for
    dead-code elimination."""
    producer = graph.producer()
    readers = graph.consumers()
    kept = set(graph.outputs)
    nodes: list = list(graph.nodes)  # a replaced node may become two (a list)
    added: dict = {}
    changed = False
    for position, node in enumerate(graph.nodes):
        if node.op.name != "add" or any(isinstance(ref, Literal) for ref in node.inputs):
            continue
        pieces: list = []
        if not all(_collect(graph, ref, producer, readers, kept, pieces) for ref in node.inputs):
            continue
        joined = _tiling(graph, pieces, graph.values[node.output])
        if joined is None:
            continue
        values, axis = joined
        merged = _merged_inputs(graph, values, axis, producer, readers, kept)
        if merged is None:
            nodes[position] = Node(CONCATENATE, tuple(values), {"axis": axis}, node.output,
                                   node.module)  # fmt: skip
        else:
            result = graph.values[node.output]
            joined_id = max(graph.values) + 1 + len(added)
            shape = _joined_shape(graph, merged, axis)
            added[joined_id] = Value(joined_id, shape, result.dtype, "op", f"{result.name}/joined")
            nodes[position] = [
                Node(CONCATENATE, tuple(merged), {"axis": axis}, joined_id, node.module),
                Node(RESHAPE, (joined_id,), {"shape": tuple(result.shape)}, node.output,
                     node.module),
            ]  # fmt: skip
        changed = True
    if not changed:
        return graph
    out = graph.copy()
    out.nodes = [one for entry in nodes for one in (entry if isinstance(entry, list) else [entry])]
    out.values.update(added)
    out.donations = {}
    return out


def _merged_inputs(graph, values, axis, producer, readers, kept) -> list | None:
    """The inputs of the reshapes that made ``values`` where each merges the trailing axes of
    an array, from ``axis`` on, into the last axis ``axis`` (and is read only here); else
    None."""
    inputs = []
    for value in values:
        if value not in producer or value in kept or len(readers.get(value, ())) != 1:
            return None
        node = graph.nodes[producer[value]]
        if node.op.name != "reshape" or not isinstance(node.inputs[0], int):
            return None
        before = tuple(graph.values[node.inputs[0]].shape)
        after = tuple(graph.values[value].shape)
        if len(after) != axis + 1 or len(before) <= len(after) or before[:axis] != after[:axis]:
            return None
        if not all(isinstance(extent, int) for extent in before):
            return None
        if prod(before[axis:]) != after[axis]:
            return None
        inputs.append(node.inputs[0])
    trailing = {tuple(graph.values[ref].shape)[axis + 1 :] for ref in inputs}
    return inputs if len(trailing) == 1 else None


def _joined_shape(graph: Graph, inputs: list, axis: int) -> tuple:
    shapes = [tuple(graph.values[ref].shape) for ref in inputs]
    first = shapes[0]
    return first[:axis] + (sum(shape[axis] for shape in shapes),) + first[axis + 1 :]


def _collect(graph: Graph, ref: int, producer: dict, readers: dict, kept: set, pieces: list):
    """Add to ``pieces`` the ``zeros_index_add`` nodes summed into value ``ref`` (through
    adds read nowhere else); False where the value is anything else."""
    if ref not in producer or ref in kept or len(readers.get(ref, ())) != 1:
        return False
    node = graph.nodes[producer[ref]]
    if node.op.name == "zeros_index_add":
        pieces.append(node)
        return True
    if node.op.name == "add" and not any(isinstance(r, Literal) for r in node.inputs):
        return all(_collect(graph, r, producer, readers, kept, pieces) for r in node.inputs)
    return False


def _tiling(graph: Graph, pieces: list, result) -> tuple | None:
    """(the values in order along the axis, the axis) where the pieces put tensors of the
    result's dtype, uncut by broadcasting, into slices of one axis that tile it; else None."""
    shape = tuple(result.shape)
    if len(pieces) < 2 or not all(isinstance(extent, int) for extent in shape):
        return None
    placed = []
    for node in pieces:
        if tuple(node.attrs["shape"]) != shape or not isinstance(node.inputs[0], int):
            return None
        span = _span(node.attrs["index"], shape)
        values = graph.values[node.inputs[0]]
        if span is None or values.dtype != result.dtype:
            return None
        axis, start, stop = span
        if tuple(values.shape) != shape[:axis] + (stop - start,) + shape[axis + 1 :]:
            return None
        placed.append((axis, start, stop, node.inputs[0]))
    placed.sort()
    axis = placed[0][0]
    reach = 0
    for piece_axis, start, stop, _ in placed:
        if piece_axis != axis or start != reach:
            return None
        reach = stop
    if reach != shape[axis]:
        return None
    return [value for *_, value in placed], axis


def _span(index, shape: tuple) -> tuple | None:
    """(axis, start, stop) where ``index`` is basic slices that keep every axis whole but one,
    taken with step 1; else None."""
    parts = list(index) if isinstance(index, tuple) else [index]
    if parts and parts[-1] is Ellipsis:
        parts.pop()
    if len(parts) > len(shape) or not all(isinstance(part, slice) for part in parts):
        return None
    span = None
    for axis, part in enumerate(parts):
        start, stop, step = part.indices(shape[axis])
        if (start, stop, step) == (0, shape[axis], 1):
            continue
        if span is not None or step != 1 or start >= stop:
            return None
        span = (axis, start, stop)
    return span
