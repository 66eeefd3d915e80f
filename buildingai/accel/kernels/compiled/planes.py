"""How the direct convolution tiles lay out their operands (``conv.py``, ``conv_strided.py``,
``conv_broadcast.py``): input planes spaced so that they do not share an L1 set, zero-padded
copies, filters packed in the order a tile reads them, each tap's offset in a flat image, and the
cache and summation sizes the tiles are cut for.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, prange, uint64

CACHE_BYTES = 1 << 19  # about a quarter of L2: what one pass or group of tiles reads
# The forward tiles sum this many taps (channels of one tap, in window tiles) from zero before
# adding them to their totals: float32 rounding then grows about as sqrt(block) + sqrt(taps /
# block), not as sqrt(taps).
SUM_BLOCK = 64
# Addresses this many bytes apart share an L1 set (64 sets of 64-byte lines). Planes whose
# distance is a multiple of ``ALIASED_SPAN`` of it put the same position of many channels in a
# few sets; where more than ``SHARED_WAYS`` channels share one, the tiles read the planes
# spaced one cache line (``LINE`` values) further apart (``spaced_planes``).
L1_SET_SPAN = 4096
ALIASED_SPAN = 256
SHARED_WAYS = 4
LINE = 16


@functools.lru_cache(maxsize=256)
def tap_offsets(channels: int, kernel: tuple, height: int, width: int, count: int, plane=None):
    """int64 offsets, ``count`` long, of each tap (c, i, j) in a flat (C, H, W) image whose
    planes start ``plane`` apart (H*W unless given), in the weight matrix's row order; offset 0
    past the C*kh*kw taps (summed and thrown away). Read-only, and kept per geometry: building
    it costs more than a small convolution."""
    c = np.arange(channels).reshape(-1, 1, 1) * (height * width if plane is None else plane)
    i = np.arange(kernel[0]).reshape(1, -1, 1) * width
    j = np.arange(kernel[1]).reshape(1, 1, -1)
    offsets = np.zeros(count, np.int64)
    offsets[: channels * kernel[0] * kernel[1]] = (c + i + j).reshape(-1)
    offsets.flags.writeable = False
    return offsets


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def pad_planes(x, out, top, left):
    """out[n, c] = x[n, c] with ``top`` zero rows above and below it and ``left`` zero columns
    on either side."""
    n, c, h, w = x.shape
    width = out.shape[3]
    for task in prange(n * c):
        sample, channel = task // c, task % c
        plane, source = out[sample, channel], x[sample, channel]
        plane[:top] = 0.0
        plane[top + h :] = 0.0
        for row in range(h):
            line = plane[top + row]
            line[:left] = 0.0
            line[left : left + w] = source[row]
            line[left + w : width] = 0.0


def plane_stride(plane: int, channels: int) -> int:
    """How far apart the flat tiles read ``channels`` planes of ``plane`` values: one cache line
    further than ``plane`` where more than ``SHARED_WAYS`` of them would start in one L1 set. A
    tile reads the same positions of every channel in turn; 4 KiB apart (32x32 planes), all of
    them fall in one set of 8 lines and each read misses (a 64->64 3x3 forward ran at 41
    GFLOP/s, at 66 on 30x30 planes)."""
    span = math.gcd(plane * 4, L1_SET_SPAN)
    if span >= ALIASED_SPAN and channels * span > SHARED_WAYS * L1_SET_SPAN:
        return plane + LINE
    return plane


def spaced_planes(x):
    """(flat, stride): x (N, C, H, W) as a flat array whose plane of (n, c) starts at ``(n*C +
    c)*stride``, ``stride = plane_stride(H*W, C)``: x itself where the planes need no spacing,
    else a copy (the values between planes are never read)."""
    n, c, h, w = x.shape
    stride = plane_stride(h * w, c)
    if stride == h * w:
        return x.reshape(-1), stride
    spaced = np.empty((n * c, stride), np.float32)
    _copy_planes(x.reshape(n * c, h * w), spaced)
    return spaced.reshape(-1), stride


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def _copy_planes(source, target):
    """target[k, :P] = source[k] for the planes source (K, P) of target (K, stride)."""
    planes, size = source.shape
    for k in prange(planes):
        target[k, :size] = source[k]


def padded_bias(bias, length: int):
    """float32 (length,): bias (O,) followed by zeros, for blocks of filters padded past O
    (``pack_weights``); all zeros where bias has shape (0,)."""
    padded = np.zeros(length, np.float32)
    padded[: bias.size] = bias
    return padded


def pack_weights(taps, weights, turned):
    """weights[b, c, i, j, r] = tap (c, i, j) of output channel b*rows + r (zero past the
    last): taps[b*rows + r, c, i, j], or with ``turned`` taps[c, b*rows + r, kh-1-i, kw-1-j]
    (turning a kernel half a circle reverses its flat taps)."""
    blocks, c, kh, kw, rows = weights.shape
    _packer(kh * kw, rows, bool(turned))(taps, weights)


@functools.cache
def _packer(count: int, rows: int, turned: bool):
    """``pack_weights`` for kernels of ``count`` taps and tiles of ``rows`` output channels:
    with both constants the (tap, row) loops of a channel unroll into shuffles, and the blocks
    of output channels are shared among threads."""

    @njit(parallel=True, nogil=True, boundscheck=False, cache=True)
    def pack(taps, weights):
        blocks, c = weights.shape[0], weights.shape[1]
        o = taps.shape[1] if turned else taps.shape[0]
        source, out = taps.reshape(-1), weights.reshape(-1)
        # unsigned indices: no test for a negative one's wraparound, so the loops vectorise
        for b in prange(blocks):
            for channel in range(c):
                at = (b * c + channel) * (count * rows)  # one channel's taps, side by side
                for r in range(rows):
                    k = b * rows + r
                    if k >= o:
                        for tap in range(count):
                            out[uint64(at + tap * rows + r)] = 0.0
                    elif turned:  # taps (C, O, kh, kw): the row's kernel read backwards
                        start = (channel * o + k) * count + count - 1
                        for tap in range(count):
                            out[uint64(at + tap * rows + r)] = source[uint64(start - tap)]
                    else:
                        start = (k * c + channel) * count
                        for tap in range(count):
                            out[uint64(at + tap * rows + r)] = source[uint64(start + tap)]

    return pack
