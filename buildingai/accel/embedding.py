"""A faster ``embedding_grad`` (the record in ``ops/nn.py`` sums the gradient's rows with one
``bincount`` over (row, column) cells, in float64).

``embedding_grad.sorted`` sorts the indices once and sums each run of equal indices with one
``add.reduceat`` over whole rows (float64 sums, as the record's); its compiled twin
(``kernels/compiled/index.py``) adds each row into its table row in one pass over the gradient.
It applies to NumPy gradients of float32 or float64 with a table no larger than 2^24 elements.
"""

from __future__ import annotations

import numpy as np

from ..ops.nn import EMBEDDING_GRAD
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .registry import register

MAX_TABLE_ELEMENTS = 1 << 24


@compiled_twin("index.embedding_rows")
def _embedding_rows(xp, indices, rows, out) -> None:
    """out (num, dim) = the rows (n, dim) summed by their index (n,), other rows 0."""
    order = xp.argsort(indices, kind="stable")
    ordered = indices[order]
    starts = xp.flatnonzero(xp.concatenate(([True], ordered[1:] != ordered[:-1])))
    sums = xp.add.reduceat(rows[order].astype(xp.float64), starts, axis=0)
    out[...] = 0
    out[ordered[starts]] = sums


def _applies(xp, grad, indices, *, num_embeddings, padding_idx) -> bool:
    return (
        xp is np
        and grad.dtype in (np.float32, np.float64)
        and indices.size > 0
        and num_embeddings * grad.shape[-1] <= MAX_TABLE_ELEMENTS
    )


def embedding_grad(ctx, xp, grad, indices, *, num_embeddings, padding_idx):
    """``EmbeddingGrad.forward``: the table (num_embeddings, dim) of summed gradient rows."""
    dim = grad.shape[-1]
    rows = np.ascontiguousarray(grad.reshape(-1, dim))
    flat = np.ascontiguousarray(indices.reshape(-1), dtype=np.int64)
    out = np.empty((num_embeddings, dim), grad.dtype)
    compiled.call(xp, _embedding_rows, [flat, rows, out])
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


register(
    EMBEDDING_GRAD,
    _applies,
    embedding_grad,
    name="embedding_grad.sorted",
    description="the gradient's rows summed by index after one sort (a one-pass compiled loop "
    "for float32), instead of a bincount over every cell",
)
