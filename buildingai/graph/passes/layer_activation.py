"""A layer and the ReLU after it: a ``conv2d`` or ``linear`` whose only reader is a ``relu``
becomes one ``conv2d_relu`` (``ops/conv.py``) or ``linear_relu`` (``ops/linalg.py``) node.

The joined convolution's direct kernel stores max(sum, 0) from its register tiles instead of
making a second pass over the whole output (which, after a convolution split across threads,
reads much of it from the other cores' caches); the joined linear layer rectifies its fresh
product in place: one step, one array and one pass fewer.
"""

from __future__ import annotations

from ...ops.activation import RELU
from ...ops.conv import CONV2D, CONV2D_RELU
from ...ops.linalg import LINEAR, LINEAR_RELU
from ..graph import Graph, Literal, Node

# Each layer op the pass joins with a ReLU after it, and the op of the pair.
JOINED = {CONV2D: CONV2D_RELU, LINEAR: LINEAR_RELU}


def fuse_layer_relu(graph: Graph) -> Graph:
    """Join each ``conv2d`` -> ``relu`` and ``linear`` -> ``relu`` pair whose layer output
    nothing else reads (and the graph does not return) into one node at the layer's place."""
    readers = graph.consumers()
    producer = graph.producer()
    returned = set(graph.outputs)
    relu_of: dict = {}  # index of a joined layer -> index of its ReLU
    for index, node in enumerate(graph.nodes):
        if node.op is not RELU or isinstance(node.inputs[0], Literal):
            continue
        source = node.inputs[0]
        at = producer.get(source)
        if (
            at is not None
            and graph.nodes[at].op in JOINED
            and readers.get(source) == [index]
            and source not in returned
            and graph.values[source].dtype == graph.values[node.output].dtype
        ):
            relu_of[at] = index
    if not relu_of:
        return graph
    out = graph.copy()
    out.donations = {}
    folded = set(relu_of.values())
    nodes = []
    for index, node in enumerate(graph.nodes):
        if index in folded:
            continue
        if index in relu_of:  # the ReLU's output, computed where the layer was
            relu = graph.nodes[relu_of[index]]
            out.values.pop(node.output, None)
            node = Node(JOINED[node.op], node.inputs, node.attrs, relu.output, node.module)
        nodes.append(node)
    out.nodes = nodes
    return out
