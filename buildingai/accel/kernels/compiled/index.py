"""Compiled twins of ``accel/embedding.py``: the rows of an embedding's gradient summed into
the table, one pass over the gradient, in float64 as the record's ``bincount`` sums."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def embedding_rows(indices, rows, out):
    """out (num, dim) = for each i, rows[i] added into row indices[i], every other row 0.
    indices (n,) int64, rows (n, dim) float32. Sums run in float64 over the rows that occur
    only, so a large table costs one zero fill."""
    num, dim = out.shape
    slot = np.full(num, -1, np.int64)
    order = np.empty(num, np.int64)  # the table rows that occur, in order of first sight
    used = 0
    for i in range(indices.size):
        if slot[indices[i]] < 0:
            slot[indices[i]] = used
            order[used] = indices[i]
            used += 1
    sums = np.zeros((used, dim), np.float64)
    for i in range(indices.size):
        target = sums[slot[indices[i]]]
        row = rows[i]
        for j in range(dim):
            target[j] += row[j]
    out[:] = 0
    for s in range(used):
        destination = out[order[s]]
        source = sums[s]
        for j in range(dim):
            destination[j] = source[j]
