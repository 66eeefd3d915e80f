"""Sums of gradients that a split's pieces fill block by block.

``q, k, v = x.split(n, dim=-1)`` makes three views of x; their gradients reach the backward
engine one by one. Each fills one block of x's gradient (``Op.grad_block``), so the first is
copied into a new, unwritten array and each later one into its own block, as a concatenation
would write them: no zero array, and no block read back to be added to. What no piece has
written yet is recorded here, as ranges along the pieces' axis, and zeroed (``fill``) before
anything else reads the sum: a gradient that is not such a block, the node's own backward, or
the caller.

``Unwritten`` maps a sum's key (its node in the engine's walk) to ``(axis, [(start, stop),
...])``.
"""

from __future__ import annotations

import numpy as np

Unwritten = dict


def _region(axis: int, start: int, stop: int) -> tuple:
    """The index of ``start:stop`` along ``axis``, every axis before it whole."""
    return (slice(None),) * axis + (slice(start, stop),)


def start(shape: tuple, dtype, block: tuple, grad: np.ndarray, unwritten: Unwritten, key):
    """A new array of ``shape`` holding ``grad`` in ``block`` (``(axis, start, stop)``), the
    rest recorded as unwritten under ``key``."""
    total = np.empty(shape, dtype)
    axis = block[0]
    unwritten[key] = (axis, [(0, shape[axis])])  # all of it unwritten, then the first block
    write(total, block, grad, unwritten, key)
    return total


def write(
    total: np.ndarray, block: tuple | None, grad: np.ndarray, unwritten: Unwritten, key
) -> bool:
    """Copy ``grad`` into ``block`` of ``total`` and return True where that block is unwritten
    yet; else False, having changed nothing."""
    entry = unwritten.get(key)
    if entry is None or block is None:
        return False
    axis, first, last = block
    gap_axis, gaps = entry
    if axis != gap_axis:
        return False
    for at, (low, high) in enumerate(gaps):
        if low <= first and last <= high:
            total[_region(axis, first, last)] = grad
            gaps[at : at + 1] = [(a, b) for a, b in ((low, first), (last, high)) if a < b]
            if not gaps:
                del unwritten[key]
            return True
    return False


def fill(total: np.ndarray, unwritten: Unwritten, key) -> None:
    """Zero what no block has written into ``total`` yet (nothing where all is written), and
    forget ``key``."""
    entry = unwritten.pop(key, None)
    if entry is None:
        return
    axis, gaps = entry
    for low, high in gaps:
        total[_region(axis, low, high)] = 0
