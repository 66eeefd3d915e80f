"""Compiled twins of ``accel/kernels/pixel_repeat.py``: (rows, width) float32 arrays, rows on
numba's threads, each output row written once; sums in the record's order."""

from __future__ import annotations

from numba import njit, prange

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def repeat_pixels(x, out, fh, fw):
    rows, width = x.shape
    for r in prange(rows):
        source, first = x[r], out[r * fh]
        if fw == 2:  # the common factor, as a loop LLVM vectorises
            for j in range(width):
                first[2 * j] = source[j]
                first[2 * j + 1] = source[j]
        else:
            for j in range(width):
                for k in range(fw):
                    first[j * fw + k] = source[j]
        for i in range(1, fh):
            out[r * fh + i, :] = first


@njit(inline="always")
def _column(grad, r, fh, j):
    """The sum of column j over the fh gradient rows of image row r, top to bottom."""
    total = grad[r * fh, j]
    for i in range(1, fh):
        total += grad[r * fh + i, j]
    return total


@kernel
def sum_pixel_blocks(grad, out, fh, fw):
    rows, width = out.shape
    for r in prange(rows):
        result = out[r]
        if fh == 2 and fw == 2:  # the common factors, as a loop LLVM vectorises
            top, bottom = grad[2 * r], grad[2 * r + 1]
            for j in range(width):
                left = top[2 * j] + bottom[2 * j]
                result[j] = left + (top[2 * j + 1] + bottom[2 * j + 1])
            continue
        for j in range(width):
            total = _column(grad, r, fh, j * fw)
            for k in range(1, fw):
                total += _column(grad, r, fh, j * fw + k)
            result[j] = total
