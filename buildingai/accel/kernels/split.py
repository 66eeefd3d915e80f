"""Running one large array op on several threads: the op's arrays are cut along their first
dimension and each thread computes its own rows (``backend.threads.parallel_for``).

Element-wise ops pass flat views of contiguous arrays; row-wise ops (softmax over the last axis,
normalisation) pass ``(rows, features)`` views. CuPy arrays, and NumPy arrays that are not
contiguous, run in one call: the GPU has its own parallelism, and a non-contiguous array has no
flat view to cut. A kernel with a compiled twin (``compiled/``) hands float32 work to it instead,
on the CPU or, for CuPy arrays, on the GPU.
"""

from __future__ import annotations

import numpy as np

from ...backend import threads
from ...backend.threads import parallel_for
from . import compiled

# Each thread takes its whole range in one kernel call: many short ufunc calls queue on the GIL.


def split_rows(xp, kernel, *arrays) -> None:
    """Call ``kernel(xp, *parts)`` with ``parts[i] = arrays[i][start:stop]`` over row ranges
    that together cover the common first dimension, concurrently. Each call must write only
    into its own rows of the output arrays among ``arrays``."""
    if xp is not np:
        if not compiled.run_gpu(kernel, arrays):
            kernel(xp, *arrays)
        return
    if compiled.run(kernel, arrays):
        return

    def run(start: int, stop: int) -> None:
        kernel(np, *(array[start:stop] for array in arrays))

    parallel_for(run, len(arrays[0]), arrays[0].size * len(arrays))


def _contiguous_alike(arrays) -> bool:
    """Whether ``arrays`` are C-contiguous arrays of one type: all NumPy or all CuPy."""
    kind = type(arrays[0])
    contiguous = True
    for array in arrays:  # a loop, not all(): a generator costs more on every kernel call
        if type(array) is not kind or not array.flags.c_contiguous:
            contiguous = False
            break
    return contiguous


def _contiguous(arrays) -> bool:
    """Whether every one of ``arrays`` is a C-contiguous NumPy array."""
    return type(arrays[0]) is np.ndarray and _contiguous_alike(arrays)


def flat_or_none(*arrays):
    """Flat views of ``arrays`` when every one is a C-contiguous NumPy array, else None."""
    if not _contiguous(arrays):
        return None
    return [array.reshape(-1) for array in arrays]


def elementwise(xp, kernel, inputs: tuple, outputs: tuple) -> None:
    """``kernel(xp, *inputs, *outputs)`` for same-shape arrays: through its CUDA twin for CuPy
    arrays, else split across threads (or its compiled twin) when they all have flat views,
    else one call."""
    first = inputs[0]
    if xp is not np:
        if not compiled.run_gpu(kernel, (*inputs, *outputs)):
            kernel(xp, *inputs, *outputs)
        return
    work = first.size * (len(inputs) + len(outputs))
    small = first.ndim and work < threads.MIN_PARALLEL_WORK and work < compiled.min_work(kernel)
    flat = None if small else flat_or_none(*inputs, *outputs)
    if flat is None:
        kernel(xp, *inputs, *outputs)
        return
    split_rows(xp, kernel, *flat)


def trailing_rows(axes, *arrays):
    """``(rows, -1)`` views of ``arrays`` when ``axes`` are the trailing axes of the first one
    and the arrays are C-contiguous, all NumPy or all CuPy, with the same leading dimensions (so
    row r of each view belongs to the same slice) and at least one row; else None. Reduced
    arrays (kept dimensions) fit too.
    """
    first = arrays[0]
    ndim, count = first.ndim, len(axes)
    if ndim == 0:
        return None
    if count == 1:  # the commonest call, the last axis, without sorting
        if axes[0] % ndim != ndim - 1:
            return None
    elif sorted(axis % ndim for axis in axes) != list(range(ndim - count, ndim)):
        return None
    if not _contiguous_alike(arrays):
        return None
    lead = ndim - count
    leading = first.shape[:lead]
    rows = 1
    for extent in leading:
        rows *= extent
    if rows < 1:
        return None
    views = []
    for array in arrays:
        if array.shape[:lead] != leading:
            return None
        views.append(array.reshape(rows, -1))
    return views
