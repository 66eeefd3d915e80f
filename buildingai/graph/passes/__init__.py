"""Graph passes: each a small function ``Graph -> Graph`` that returns a new graph computing the
same outputs. ``optimize`` runs them in a sensible order."""

from __future__ import annotations

from ..graph import Graph
from .buffer_reuse import reuse_buffers
from .constant_folding import fold_constants
from .cse import eliminate_common_subexpressions
from .dead_code import eliminate_dead_code
from .fusion import fuse_elementwise
from .layer_activation import fuse_layer_relu
from .loss_gradient import join_loss_gradients
from .slices import assemble_slices


def optimize(graph: Graph) -> Graph:
    """Fold constants, merge repeated computations, join scattered slices and nll_loss's
    gradient with log_softmax's, drop unused nodes, join convolutions and linear layers with
    the ReLU after them, fuse element-wise chains and plan buffer reuse."""
    graph = fold_constants(graph)
    graph = eliminate_common_subexpressions(graph)
    graph = assemble_slices(graph)
    graph = join_loss_gradients(graph)
    graph = eliminate_dead_code(graph)
    graph = fuse_layer_relu(graph)
    graph = fuse_elementwise(graph)
    return reuse_buffers(graph)


__all__ = [
    "assemble_slices",
    "eliminate_common_subexpressions",
    "eliminate_dead_code",
    "fold_constants",
    "fuse_elementwise",
    "fuse_layer_relu",
    "join_loss_gradients",
    "optimize",
    "reuse_buffers",
]
