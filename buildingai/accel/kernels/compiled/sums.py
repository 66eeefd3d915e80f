"""Compiled twin of ``accel/kernels/sums.py``: a flat float32 sum, cut into contiguous parts
across numba's threads (prange's static schedule)."""

from __future__ import annotations

from numba import njit, prange

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def add(a, b, out):
    for i in prange(out.size):
        out[i] = a[i] + b[i]
