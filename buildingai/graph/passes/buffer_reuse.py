"""Buffer reuse: let a fused element-wise kernel write its result into an input buffer that dies
at that node (same shape and dtype, computed inside the graph), saving one allocation.

The executor already frees every slot right after its last reader (NumPy then recycles the
memory); this pass adds the in-place writes. The plan only names a candidate: at run time the
executor hands the buffer over only if nothing else references it (no view of it is alive),
which it checks with the array's reference count.
"""

from __future__ import annotations

from ..graph import Graph
from .fusion import FusedElementwise


def reuse_buffers(graph: Graph) -> Graph:
    out = graph.copy()
    out.donations = {}
    last_reader: dict = {}
    for index, node in enumerate(graph.nodes):
        for ref in node.input_ids():
            last_reader[ref] = index
    protected = set(graph.outputs) | set(graph.inputs) | set(graph.constants)
    for index, node in enumerate(graph.nodes):
        if not isinstance(node.op, FusedElementwise):
            continue
        target = graph.values[node.output]
        last_step_reads = {
            node.inputs[value] for kind, value in node.op.steps[-1][1] if kind == "in"
        }
        earlier_reads = {
            node.inputs[value]
            for _, operands in node.op.steps[:-1]
            for kind, value in operands
            if kind == "in"
        }
        for ref in node.input_ids():
            value = graph.values[ref]
            if (
                ref not in protected
                and last_reader.get(ref) == index
                and value.shape == target.shape
                and value.dtype == target.dtype
                and ref in last_step_reads
                and ref not in earlier_reads  # earlier steps must not see it overwritten
            ):
                out.donations[index] = ref
                break
    return out
