"""nll_loss's gradient through log_softmax: an ``nll_loss_grad`` whose only reader is the
``log_softmax_grad`` of the same log-probabilities becomes one ``log_softmax_nll_grad`` node
(``ops/log_softmax_nll.py``).

A model that returns ``log_softmax`` output and trains with ``nll_loss`` (PyTorch's word
language model) traces that pair in its backward: a scattered array of zeros the size of the
log-probabilities, then a pass that reads it and writes the gradient. The joined op writes the
gradient in one pass over the log-probabilities, with the same values.
"""

from __future__ import annotations

from ...ops.log_softmax_nll import LOG_SOFTMAX_NLL_GRAD
from ...ops.loss import NLL_LOSS_GRAD
from ...ops.nn import LOG_SOFTMAX_GRAD
from ..graph import Graph, Literal, Node


def join_loss_gradients(graph: Graph) -> Graph:
    """Join each ``nll_loss_grad`` -> ``log_softmax_grad`` pair along one axis whose scattered
    array nothing else reads (and the graph does not return) into one node at the
    ``log_softmax_grad``'s place."""
    readers = graph.consumers()
    producer = graph.producer()
    returned = set(graph.outputs)
    joined: dict = {}  # index of a log_softmax_grad -> index of the nll_loss_grad it reads
    for index, node in enumerate(graph.nodes):
        if node.op is not LOG_SOFTMAX_GRAD or any(isinstance(r, Literal) for r in node.inputs):
            continue
        scattered, log_probs = node.inputs
        at = producer.get(scattered)
        if at is None or scattered in returned or readers.get(scattered) != [index]:
            continue
        source = graph.nodes[at]
        if (
            _wrapped_nll_loss_grad(source.op)
            and source.inputs[1] == log_probs
            and source.attrs.get("axis") == node.attrs["axis"]
            and graph.values[scattered].dtype == graph.values[node.output].dtype
        ):
            joined[index] = at
    if not joined:
        return graph
    out = graph.copy()
    out.donations = {}
    folded = set(joined.values())
    nodes = []
    for index, node in enumerate(graph.nodes):
        if index in folded:
            continue
        if index in joined:  # the gradient, computed from the nll_loss_grad's inputs
            source = graph.nodes[joined[index]]
            out.values.pop(source.output, None)
            op = type(source.op)(LOG_SOFTMAX_NLL_GRAD, source.op.names)  # the same wrapper
            node = Node(op, source.inputs, source.attrs, node.output, node.module)
        nodes.append(node)
    out.nodes = nodes
    return out


def _wrapped_nll_loss_grad(op) -> bool:
    """Whether ``op`` is ``nll_loss_grad`` as a training graph runs it: inside the wrapper that
    takes its target classes as the last input (``graph.training.WithSavedAttributes``)."""
    return getattr(op, "names", None) == ("index",) and op.op is NLL_LOSS_GRAD
