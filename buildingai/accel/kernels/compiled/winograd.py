"""Compiled twins of the F(2x2, 3x3) Winograd transforms (``accel/winograd.py``, whose NumPy
functions are the references). Both work channels-last, so that every inner loop runs along a
vector of channels: ``input_tiles`` reads the image channels-last (NumPy's transposing copy,
with the zero padding, is made by the caller) and writes the 16 sums and differences of each
4x4 tile; ``output_tiles`` combines each tile's
16 products into its 2x2 outputs, one image row pair at a time, and writes them back
channels-first with the bias. Tile rows run in parallel on numba's threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

kernel = njit(parallel=True, nogil=True, cache=True)


@kernel
def input_tiles(image, out):
    """out (16, N * th * tw, C) = B^T d B of every 4x4 tile d of the channels-last image
    (N, 2 * th + 2, 2 * tw + 2, C)."""
    n, rows, columns, channels = image.shape
    th, tw = (rows - 2) // 2, (columns - 2) // 2
    for tile_row in prange(n * th):
        s = tile_row // th
        r0, r1 = image[s, 2 * (tile_row - s * th)], image[s, 2 * (tile_row - s * th) + 1]
        r2, r3 = image[s, 2 * (tile_row - s * th) + 2], image[s, 2 * (tile_row - s * th) + 3]
        for j in range(tw):
            p = tile_row * tw + j
            q = 2 * j
            for c in range(channels):
                # B^T d: sums and differences of the tile's rows, column by column
                t00, t01 = r0[q, c] - r2[q, c], r0[q + 1, c] - r2[q + 1, c]
                t02, t03 = r0[q + 2, c] - r2[q + 2, c], r0[q + 3, c] - r2[q + 3, c]
                t10, t11 = r1[q, c] + r2[q, c], r1[q + 1, c] + r2[q + 1, c]
                t12, t13 = r1[q + 2, c] + r2[q + 2, c], r1[q + 3, c] + r2[q + 3, c]
                t20, t21 = r2[q, c] - r1[q, c], r2[q + 1, c] - r1[q + 1, c]
                t22, t23 = r2[q + 2, c] - r1[q + 2, c], r2[q + 3, c] - r1[q + 3, c]
                t30, t31 = r1[q, c] - r3[q, c], r1[q + 1, c] - r3[q + 1, c]
                t32, t33 = r1[q + 2, c] - r3[q + 2, c], r1[q + 3, c] - r3[q + 3, c]
                # (B^T d) B: the same along each row
                out[0, p, c], out[1, p, c] = t00 - t02, t01 + t02
                out[2, p, c], out[3, p, c] = t02 - t01, t01 - t03
                out[4, p, c], out[5, p, c] = t10 - t12, t11 + t12
                out[6, p, c], out[7, p, c] = t12 - t11, t11 - t13
                out[8, p, c], out[9, p, c] = t20 - t22, t21 + t22
                out[10, p, c], out[11, p, c] = t22 - t21, t21 - t23
                out[12, p, c], out[13, p, c] = t30 - t32, t31 + t32
                out[14, p, c], out[15, p, c] = t32 - t31, t31 - t33


@kernel
def output_tiles(products, bias, out):
    """out (N, O, Ho, Wo) = A^T m A of every tile's 16 products m (16, N * th * tw, O), plus
    bias (O,), or no bias where it is empty."""
    n, out_channels, height, width = out.shape
    th, tw = (height + 1) // 2, (width + 1) // 2
    for tile_row in prange(n * th):
        s = tile_row // th
        i = tile_row - s * th
        pair = np.empty((2, 2 * tw, out_channels), np.float32)  # two output rows, channels-last
        for j in range(tw):
            p = tile_row * tw + j
            for o in range(out_channels):
                m = products
                # A^T m: two rows from the tile's four
                s00 = m[0, p, o] + m[4, p, o] + m[8, p, o]
                s01 = m[1, p, o] + m[5, p, o] + m[9, p, o]
                s02 = m[2, p, o] + m[6, p, o] + m[10, p, o]
                s03 = m[3, p, o] + m[7, p, o] + m[11, p, o]
                s10 = m[4, p, o] - m[8, p, o] - m[12, p, o]
                s11 = m[5, p, o] - m[9, p, o] - m[13, p, o]
                s12 = m[6, p, o] - m[10, p, o] - m[14, p, o]
                s13 = m[7, p, o] - m[11, p, o] - m[15, p, o]
                # (A^T m) A: two columns from four
                pair[0, 2 * j, o], pair[0, 2 * j + 1, o] = s00 + s01 + s02, s01 - s02 - s03
                pair[1, 2 * j, o], pair[1, 2 * j + 1, o] = s10 + s11 + s12, s11 - s12 - s13
        for r in range(min(2, height - 2 * i)):
            for o in range(out_channels):
                offset = bias[o] if bias.size else np.float32(0.0)
                target = out[s, o, 2 * i + r]
                for w in range(width):
                    target[w] = pair[r, w, o] + offset
