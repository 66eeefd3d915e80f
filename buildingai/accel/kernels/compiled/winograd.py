"""Compiled twins of the Winograd transforms (``accel/winograd.py``, ``accel/winograd_forward.py``;
their NumPy functions of the same names are the references): each reads its input once and
writes the sixteen transformed planes (or, for the forward's output, the tiles they sum to) on
numba's threads, one channel (or one channel of one sample) per task.

Arrays are float32 and C-contiguous. A tile (n, t, s) covers output rows 2t, 2t + 1 and
columns 2s, 2s + 1, and reads input rows 2t - ph .. 2t + 3 - ph (columns likewise). The
transforms write rows of ``out`` (16, stride), each plane at the start of its row: a stride a
little past a power of two keeps the sixteen streams out of one another's cache sets.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

BLOCK = 64  # channels per block of filter_grad


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def input_tiles(x, out, ph, pw):
    """out[:, :C*N*T*S] as (16, C, N, T, S) = B^T d B of each 4x4 input tile d of x (N, C, H,
    W), zero outside the image. B^T's rows: (1, 0, -1, 0), (0, 1, 1, 0), (0, -1, 1, 0),
    (0, 1, 0, -1)."""
    n, c, height, width = x.shape
    tiles_down, tiles_across = (height + 2 * ph - 2) // 2, (width + 2 * pw - 2) // 2
    span = 2 * tiles_across + 2
    plane = out.shape[1]  # between the 16 transformed planes
    target = out.reshape(-1)
    source = x.reshape(-1)
    for channel in prange(c):
        # a tile row's four input rows, the padding columns zero throughout
        rows = np.zeros((4, span), np.float32)
        mixed = np.empty((4, span), np.float32)  # B^T applied down each column
        for sample in range(n):
            image = (sample * c + channel) * height * width
            for t in range(tiles_down):
                for r in range(4):
                    row = 2 * t - ph + r
                    if row >= 0 and row < height:
                        start = uint64(image + row * width)
                        for column in range(width):
                            rows[r, pw + column] = source[start + uint64(column)]
                    else:
                        for column in range(width):
                            rows[r, pw + column] = 0.0
                for column in range(span):
                    d0, d1 = rows[0, column], rows[1, column]
                    d2, d3 = rows[2, column], rows[3, column]
                    mixed[0, column] = d0 - d2
                    mixed[1, column] = d1 + d2
                    mixed[2, column] = d2 - d1
                    mixed[3, column] = d1 - d3
                # unsigned flat indices: no wraparound test, the loop over s vectorises
                line = ((channel * n + sample) * tiles_down + t) * tiles_across
                for i in range(4):
                    first = uint64(4 * i * plane + line)
                    for s in range(tiles_across):
                        c0, c1 = mixed[i, 2 * s], mixed[i, 2 * s + 1]
                        c2, c3 = mixed[i, 2 * s + 2], mixed[i, 2 * s + 3]
                        at = first + uint64(s)
                        target[at] = c0 - c2
                        target[at + uint64(plane)] = c1 + c2
                        target[at + uint64(2 * plane)] = c2 - c1
                        target[at + uint64(3 * plane)] = c1 - c3


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def grad_tiles(grad, out):
    """out[:, :K*N*T*S] as (16, K, N, T, S) = A e A^T of each 2x2 tile e of grad (N, K, 2T,
    2S). A's rows: (1, 0), (1, 1), (1, -1), (0, -1)."""
    n, k, ho, wo = grad.shape
    tiles_down, tiles_across = ho // 2, wo // 2
    plane = out.shape[1]  # between the 16 transformed planes
    source, target = grad.reshape(-1), out.reshape(-1)
    for channel in prange(k):
        for sample in range(n):
            for t in range(tiles_down):
                top = uint64(((sample * k + channel) * ho + 2 * t) * wo)
                bottom = top + uint64(wo)
                line = ((channel * n + sample) * tiles_down + t) * tiles_across
                for s in range(tiles_across):
                    e00, e01 = source[top + uint64(2 * s)], source[top + uint64(2 * s + 1)]
                    e10, e11 = source[bottom + uint64(2 * s)], source[bottom + uint64(2 * s + 1)]
                    at = uint64(line + s)
                    # A down each column: rows e0, e0 + e1, e0 - e1, -e1; then along each row
                    _grad_row(target, at, plane, e00, e01)
                    _grad_row(target, at + uint64(4 * plane), plane, e00 + e10, e01 + e11)
                    _grad_row(target, at + uint64(8 * plane), plane, e00 - e10, e01 - e11)
                    _grad_row(target, at + uint64(12 * plane), plane, -e10, -e11)


@njit(inline="always", boundscheck=False)
def _grad_row(target, at, plane, a, b):
    """A row of A e A^T, from the row (a, b) of A e: its four values, ``plane`` apart."""
    target[at] = a
    target[at + uint64(plane)] = a + b
    target[at + uint64(2 * plane)] = a - b
    target[at + uint64(3 * plane)] = -b


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def filter_grad(sums, out):
    """out (K, C, 3, 3) = G^T m G for each (k, c), m the 4x4 of sums (16, K, C). G's rows:
    (1, 0, 0), (1/2, 1/2, 1/2), (1/2, -1/2, 1/2), (0, 0, 1)."""
    k, c = sums.shape[1], sums.shape[2]
    source, target = sums.reshape(-1), out.reshape(-1)
    half = np.float32(0.5)
    for row in prange(k):
        # a block of channels' sums, copied plane by plane: the 16 planes lie a power of two
        # apart, and reading them channel by channel would miss the cache at every plane
        m = np.empty((16, BLOCK), np.float32)
        down = np.empty((3, 4), np.float32)  # G^T m of one (k, c)
        for first in range(0, c, BLOCK):
            width = min(BLOCK, c - first)
            for j in range(16):
                start = uint64((j * k + row) * c + first)
                for lane in range(width):
                    m[j, lane] = source[start + uint64(lane)]
            for lane in range(width):
                for j in range(4):
                    m0, m1, m2, m3 = m[j, lane], m[4 + j, lane], m[8 + j, lane], m[12 + j, lane]
                    down[0, j] = m0 + half * (m1 + m2)
                    down[1, j] = half * (m1 - m2)
                    down[2, j] = half * (m1 + m2) + m3
                at = uint64(9 * (row * c + first + lane))
                for a in range(3):
                    l0, l1, l2, l3 = down[a, 0], down[a, 1], down[a, 2], down[a, 3]
                    target[at + uint64(3 * a)] = l0 + half * (l1 + l2)
                    target[at + uint64(3 * a + 1)] = half * (l1 - l2)
                    target[at + uint64(3 * a + 2)] = half * (l1 + l2) + l3


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def output_tiles(sums, bias, out):
    """out (N, K, 2T, 2S) = A^T m A of each tile's 4x4 sums m, plus bias (K,) unless it is
    empty; sums (16, K, N*T*S), the tiles in (n, t, s) order. A^T's rows: (1, 1, 1, 0),
    (0, 1, -1, -1)."""
    n, k, ho, wo = out.shape
    tiles_down, tiles_across = ho // 2, wo // 2
    tiles = sums.shape[2]
    plane = k * tiles  # between the 16 planes
    source, target = sums.reshape(-1), out.reshape(-1)
    biased = bias.size > 0
    for task in prange(k * n):
        channel, sample = task // n, task % n
        shift = bias[channel] if biased else np.float32(0.0)
        for t in range(tiles_down):
            top = uint64(((sample * k + channel) * ho + 2 * t) * wo)
            bottom = top + uint64(wo)
            line = uint64(channel * tiles + (sample * tiles_down + t) * tiles_across)
            for s in range(tiles_across):
                at = line + uint64(s)
                # A^T down each column j: (m0 + m1 + m2, m1 - m2 - m3), then along the rows
                a0, b0 = _down(source, at, plane, 0)
                a1, b1 = _down(source, at, plane, 1)
                a2, b2 = _down(source, at, plane, 2)
                a3, b3 = _down(source, at, plane, 3)
                target[top + uint64(2 * s)] = a0 + a1 + a2 + shift
                target[top + uint64(2 * s + 1)] = a1 - a2 - a3 + shift
                target[bottom + uint64(2 * s)] = b0 + b1 + b2 + shift
                target[bottom + uint64(2 * s + 1)] = b1 - b2 - b3 + shift


@njit(inline="always", boundscheck=False)
def _down(source, at, plane, j):
    """Column j of A^T m, (m0 + m1 + m2, m1 - m2 - m3), for the 4x4 sums m at ``at``, m[i, j]
    being ``(4i + j) * plane`` further."""
    m0 = source[at + uint64(j * plane)]
    m1 = source[at + uint64((4 + j) * plane)]
    m2 = source[at + uint64((8 + j) * plane)]
    m3 = source[at + uint64((12 + j) * plane)]
    return m0 + m1 + m2, m1 - m2 - m3
