"""Compiled twins of ``accel/embedding.py`` (the rows of an embedding's gradient summed into
the table, one pass over the gradient, in float64 as the record's ``bincount`` sums) and of
``accel/kernels/column_blocks.py`` (a block of columns added to, row by row)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange


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


@njit(parallel=True, nogil=True, cache=True)
def add_columns(total, grad, start):
    """total[:, :, start:start + width] += grad for total (a, b, columns) and grad (a, b,
    width), float32, last axes contiguous: each row's block in one vectorised pass, the rows
    of each of the a planes on one of numba's threads (NumPy adds such a block one short row
    at a time, at several times the cost)."""
    width = grad.shape[2]
    for outer in prange(grad.shape[0]):
        for middle in range(grad.shape[1]):
            block = total[outer, middle, start : start + width]
            source = grad[outer, middle]
            for column in range(width):
                block[column] += source[column]
