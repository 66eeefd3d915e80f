"""The sample-lane layout of the flat tiles (``flat_tile.py``): a batch of small images with
the vector lanes over samples instead of positions.

On a small image a same-size correlation spends many multiply-adds on the zero padding: with
a 3x3 kernel, 31% of a 4x4 image's taps and 16% of an 8x8 one's read outside it. In the flat
layout one vector holds 16 positions (a whole 4x4 image), and every tap reads inside the image
at some of them, so every tap is multiplied. Here x (N, C, H, W) is copied to (C, H, W, N'),
N' the batch rounded up to whole vectors, and one vector holds one position of ``LANES``
samples: a tap reads inside the image at all of its lanes or at none, and the tiles skip the
taps that read nothing (``flat_tile``'s ``skips``). The copy in and the copy out cost a pass
over the input and over the output each.

The flat tiles then read this layout as one image of C planes (H, W * N'): a tap (i, j) is the
shift ``((i - ph) * W + j - pw) * N'`` of the flat plane (the flat layout's shift times N'),
and the lane masks (``lane_masks``) say which taps each vector reads, all lanes or none.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange

from .planes import plane_stride
from .tile_ir import LANES

# The sample-lane layout runs for images of at most this many positions: on larger ones the
# padding it skips no longer pays for its slower tiles (docs/design_notes/performance.md).
MOST_POSITIONS = 16


def fits(samples: int, height: int, width: int, kernel: tuple, padding: tuple) -> bool:
    """Whether a same-size correlation of ``samples`` images runs in the sample-lane layout:
    a batch that fills whole vectors at least once, small images, and padding for the tiles
    to skip."""
    return (
        samples >= LANES
        and height * width <= MOST_POSITIONS
        and (padding[0] > 0 or padding[1] > 0)
        and kernel[0] * kernel[1] > 1
    )


def vectors_per_position(samples: int) -> int:
    """Vectors of ``LANES`` samples holding one position of the whole batch (N' / LANES)."""
    return -(-samples // LANES)


def tile_vectors(per_position: int) -> int:
    """Vectors per tile: the most, up to 3, that divide ``per_position``, so that no tile
    straddles two positions (whose taps differ) and its skipped taps are whole."""
    return next(v for v in (3, 2, 1) if per_position % v == 0)


@functools.lru_cache(maxsize=64)
def lane_masks(height: int, width: int, per_position: int, kernel: tuple, padding: tuple):
    """int32 (Q, kh*kw + 1), Q = H * W * per_position, read-only and kept per geometry: entry
    (q, i*kw + j) is every lane where tap (i, j) reads inside the image at the position of
    vector q, else 0; entry (q, kh*kw) is every lane (``flat_tile``'s table)."""
    kh, kw = kernel
    position = np.arange(height * width * per_position) // per_position
    h, w = position // width, position % width
    masks = np.zeros((position.size, kh * kw + 1), np.int64)
    every = (1 << LANES) - 1
    for i in range(kh):
        for j in range(kw):
            row, column = h + i - padding[0], w + j - padding[1]
            inside = (row >= 0) & (row < height) & (column >= 0) & (column < width)
            masks[:, i * kw + j] = np.where(inside, every, 0)
    masks[:, kh * kw] = every
    table = np.ascontiguousarray(masks.astype(np.uint32).view(np.int32))
    table.flags.writeable = False
    return table


def to_sample_lanes(x, samples: int):
    """(flat, stride): x (N, C, H, W) copied to planes (C, H, W, N') with ``samples`` = N'
    (samples past N zero), plane c starting at ``c * stride`` (``planes.plane_stride``)."""
    n, c, h, w = x.shape
    plane = h * w * samples
    stride = plane_stride(plane, c)
    flat = np.empty(c * stride, np.float32)
    _gather(x, flat.reshape(c, stride), samples)
    return flat, stride


def from_sample_lanes(planes, out):
    """out (N, O, H, W) = the first N samples of ``planes`` (O, H, W, N')."""
    _scatter(planes, out)


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def _gather(x, planes, samples):
    """planes[c, (h*W + w)*N' + n] = x[n, c, h, w], 0 for n >= N: the channel's (H*W*N')
    plane written in order."""
    n, c, h, w = x.shape
    for channel in prange(c):
        plane = planes[channel]
        for row in range(h):
            for column in range(w):
                base = (row * w + column) * samples
                for sample in range(n):
                    plane[base + sample] = x[sample, channel, row, column]
                for sample in range(n, samples):
                    plane[base + sample] = 0.0


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def _scatter(planes, out):
    """out[n, o, h, w] = planes[o, h, w, n]: each output plane written in order, the channel's
    (H, W, N') plane read in the L1 cache."""
    n, o, h, w = out.shape
    for channel in prange(o):
        plane = planes[channel]
        for sample in range(n):
            image = out[sample, channel]
            for row in range(h):
                for column in range(w):
                    image[row, column] = plane[row, column, sample]
