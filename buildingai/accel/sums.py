"""Large float32 sums of two arrays of one shape on BuildingAI's threads: ``a + b`` (the
``add`` record's forward) and the backward engine's in-place sums of gradients
(``registry.sum_into``).

NumPy adds on the calling thread alone. At two threads the kernel after a sum usually reads it
on both (a layer norm after a residual sum, a product after a gradient sum), and each thread
then fetches half its input from the other core's cache: a (16, 64, 128) layer norm took about
twice as long after NumPy's sum as after a sum cut across both threads
(docs/design_notes/performance.md). The compiled twin (``kernels/sums.py``) cuts a sum into the
contiguous parts a row kernel takes, and gives NumPy's bits. On one thread the twin declines
and NumPy adds, as without acceleration.
"""

from __future__ import annotations

import numpy as np

from ..ops.elementwise import ADD
from .kernels import compiled, sums
from .registry import register, register_sum_into

_FLOAT32 = np.dtype(np.float32)

# Sums of this many elements or more are cut across threads.
LEAST_ELEMENTS = 1 << 16


def _same_float32(a, b) -> bool:
    """Two C-contiguous float32 NumPy arrays of one shape."""
    return (
        type(a) is np.ndarray
        and type(b) is np.ndarray
        and a.dtype is _FLOAT32
        and b.dtype is _FLOAT32
        and a.shape == b.shape
        and a.flags.c_contiguous
        and b.flags.c_contiguous
    )


def _add_applies(xp, a, b) -> bool:
    return _same_float32(a, b)


def add_across_threads(ctx, xp, a, b):
    """a + b, cut across threads; NotImplemented (NumPy's add) on one thread."""
    out = np.empty_like(a)
    if compiled.run(sums.add, [a.reshape(-1), b.reshape(-1), out.reshape(-1)]):
        return out
    return NotImplemented


def _sum_applies(total, addend) -> bool:
    return total.size >= LEAST_ELEMENTS and _same_float32(total, addend)


def sum_across_threads(total, addend):
    """total += addend, cut across threads; NotImplemented (NumPy's add) on one thread."""
    flat = total.reshape(-1)
    if compiled.run(sums.add, [flat, addend.reshape(-1), flat]):
        return None
    return NotImplemented


register(
    ADD,
    _add_applies,
    add_across_threads,
    name="add.threads",
    requires=("numba",),
    # the call size of two arrays of one shape is their element count squared
    min_size=LEAST_ELEMENTS**2,
    description="large float32 sums of one shape cut across threads, as the row kernels "
    "after them cut their input",
)
register_sum_into(
    _sum_applies,
    sum_across_threads,
    name="sum_into.threads",
    requires=("numba",),
    description="the backward engine's large float32 sums of gradients cut across threads",
)
