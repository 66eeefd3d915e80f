"""Buffer reuse: let a fused element-wise kernel write its result into an input buffer that dies
at that node (same shape and dtype, computed inside the graph), saving one allocation.

The executor already frees every slot right after its last reader (NumPy then recycles the
memory); this pass adds the in-place writes. The plan only names a candidate: at run time the
executor hands the buffer over only if nothing else references it (no view of it is alive),
which it checks with the array's reference count.
"""

from __future__ import annotations

from ..graph import Graph, Literal, Node
from .fusion import FusedElementwise


def reuse_buffers(graph: Graph) -> Graph:
    """Plan, for each fused kernel, one input buffer it may overwrite (see module doc)."""
    out = graph.copy()
    out.donations = {}
    last_reader: dict = {}
    for index, node in enumerate(graph.nodes):
        for ref in node.input_ids():
            last_reader[ref] = index
    protected = set(graph.outputs) | set(graph.inputs) | set(graph.constants)
    for index, node in enumerate(graph.nodes):
        kernel = node.op
        if not isinstance(kernel, FusedElementwise):
            continue
        target = graph.values[node.output]
        readers: dict = {}  # kernel input position -> steps that read it
        for step, (_, operands) in enumerate(kernel.steps):
            for kind, value in operands:
                if kind == "in":
                    readers.setdefault(value, []).append(step)
        for position, ref in enumerate(node.inputs):
            value = graph.values.get(ref) if not isinstance(ref, Literal) else None
            steps = readers.get(position, [])
            if (
                value is not None
                and ref not in protected
                and last_reader.get(ref) == index
                and value.shape == target.shape
                and value.dtype == target.dtype
                and len(steps) == 1  # a later step must not read it once overwritten
                and kernel.full_shape[steps[0]]
            ):
                rebuilt = FusedElementwise(kernel.steps, kernel.full_shape, out_step=steps[0])
                out.nodes[index] = Node(rebuilt, node.inputs, node.attrs, node.output, node.module)
                out.donations[index] = ref
                break
    return out
