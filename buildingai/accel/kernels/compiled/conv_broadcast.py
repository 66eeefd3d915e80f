"""The channel-vector correlation: output channels in the lanes, each input value broadcast
(``broadcast_tile.py``), on a zero-padded copy of the input.

``correlate`` and ``correlate_turned`` of ``compiled/conv.py`` (stride 1) and the stride-2
``correlate`` and ``correlate_transposed`` of ``compiled/conv_strided.py`` (``run``, with a
table of where each output goes) run it on AVX2's 8-lane vectors for inputs of at
least ``LEAST_CHANNELS`` channels, where it measured faster than the flat tiles
(docs/design_notes/performance.md). AVX-512 keeps the flat tiles: there this tile won on 8x8
maps only, and a ResNet-18 step did not move beyond its noise (the same notes).

Tasks are (tile of ``positions`` output positions, block of ``vectors * LANES`` output
channels), in groups of tiles whose input stays in the L2 cache, each block over a group in
turn. A tile's positions run on from one sample into the next; the batch's last tile starts
early enough to end at its end, so it computes a few positions twice (the same values) rather
than reading past it. Each output is summed by one task in a fixed order: results do not
depend on the thread count.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange
from numpy.lib.stride_tricks import as_strided

from . import planes
from .broadcast_tile import broadcast_tile
from .tile_ir import LANES

# (output positions, vectors of output channels) per tile: 12 accumulators, 2 weight vectors
# and the broadcast of AVX2's 16 registers (2 vectors: the weights of 16 channels, no waste on
# 16, 32, 64... filters)
TILE = (6, 2)
# Fewer input channels than this stay on the flat tiles, whose unrolled channels suit an
# image's 1 to 3 (performance.md).
LEAST_CHANNELS = 8


def fits(channels: int, outputs: int, out_plane: int) -> bool:
    """Whether the channel-vector tiles take a correlation of ``channels`` input channels onto
    ``outputs`` output planes of ``out_plane`` positions: AVX2's vectors, enough channels,
    outputs that leave at most an eighth of the tiles' lanes empty (8 of 16 would leave half),
    and at least one tile's positions per plane (a tile steps into at most one next sample)."""
    rows = TILE[1] * LANES
    return (
        LANES == 8
        and channels >= LEAST_CHANNELS
        and (-outputs) % rows * 8 <= outputs
        and out_plane >= TILE[0]
    )


def correlate(
    x, taps, bias, out, padding, turned: bool = False, stride: int = 1, rectify: bool = False
) -> None:
    """out (N, O, Ho, Wo) = x (N, C, H, W) correlated at ``stride`` with taps (O, C, kh, kw)
    (with ``turned``: a forward's filters (C, O, kh, kw) turned, as ``planes.pack_weights``
    reads them) with zero padding ``padding``, plus bias (O,) or shape (0,); with ``rectify``,
    max(that, 0), which the tiles store from their registers."""
    n, c, h, w = x.shape
    o, (out_height, out_width) = out.shape[1], out.shape[2:]
    kh, kw = taps.shape[2:]
    rows = TILE[1] * LANES
    blocks = -(-o // rows)
    weights = np.empty((blocks, c, kh, kw, rows), np.float32)
    planes.pack_weights(taps, weights, turned)
    shifts = planes.padded_bias(bias, blocks * rows)
    flat, height, width, plane = padded_planes(x, padding)
    starts = _output_starts(out_height, out_width, width, stride)
    offsets = planes.tap_offsets(c, (kh, kw), height, width, c * kh * kw, plane)
    places = _in_order(out_height * out_width)
    run(flat, c * plane, starts, offsets, weights, shifts, out, places, out_height * out_width,
        group_for(c, kh, kw), block_for(kh * kw, c), rectify)  # fmt: skip


def run(
    x, image, starts, offsets, weights, bias, out, places, out_plane, group, block, rectify=False
) -> None:
    """The tiles' loop: ``broadcast_tile``'s sums for every output position (``starts`` and
    ``places`` one entry each per position of a sample) and block of output channels, x and
    out flat, weights packed (blocks, T, vectors * LANES), bias padded to the blocks; with
    ``rectify``, each sum stored as max(sum, 0)."""
    positions, vectors = TILE
    loop = _loop(positions, vectors, block, rectify)
    loop(x.reshape(-1), image, starts, offsets, weights.reshape(-1), bias, out.reshape(-1),
         places, out_plane, group)  # fmt: skip


def group_for(channels: int, kh: int, kw: int) -> int:
    """Tiles whose input (about kh rows of a tile's positions + kw - 1 values per channel)
    fills a quarter of L2."""
    return max(1, planes.CACHE_BYTES // (4 * channels * kh * (TILE[0] + kw - 1)))


def padded_planes(x, padding):
    """(flat, height, width, plane): x (N, C, H, W) zero-padded, flat, its plane of (n, c)
    (``height`` rows of ``width``) starting at ``(n*C + c) * plane``. The planes are spaced as
    ``planes.plane_stride`` spaces them: a tile reads one value of every channel in turn, and
    planes 4 KiB apart would all fall in one L1 set. x itself where neither is needed."""
    n, c, h, w = x.shape
    top, left = padding
    height, width = h + 2 * top, w + 2 * left
    plane = planes.plane_stride(height * width, c)
    if not (top or left):
        if plane == height * width:
            return x.reshape(-1), height, width, plane
        flat, plane = planes.spaced_planes(x)
        return flat, height, width, plane
    buffer = np.empty((n * c, plane), np.float32)  # the values between planes are never read
    item = buffer.itemsize
    padded = as_strided(buffer, (n, c, height, width), (c * plane * item, plane * item,
                                                        width * item, item))  # fmt: skip
    planes.pad_planes(x, padded, top, left)
    return buffer.reshape(-1), height, width, plane


def block_for(kernel_taps: int, channels: int) -> int | None:
    """How many taps a tile sums from zero before adding them to its totals: whole channels'
    taps, at least ``planes.SUM_BLOCK`` (72 for a 3x3 kernel, 8 channels); None where the whole
    sum is no longer."""
    block = -(-planes.SUM_BLOCK // kernel_taps) * kernel_taps
    return None if channels * kernel_taps <= block else block


@functools.lru_cache(maxsize=256)
def _in_order(count: int):
    """int64 (count,): 0, 1, ..., count - 1, read-only: outputs stored in their own order."""
    places = np.arange(count, dtype=np.int64)
    places.flags.writeable = False
    return places


@functools.lru_cache(maxsize=256)
def _output_starts(out_height: int, out_width: int, width: int, stride: int):
    """int64 (Ho*Wo,): where output position (i, j) starts reading a padded input plane of rows
    ``width`` long, ``(i*width + j)*stride``. Read-only, kept per geometry."""
    rows = np.arange(out_height).reshape(-1, 1) * (width * stride)
    columns = np.arange(out_width) * stride
    starts = np.ascontiguousarray((rows + columns).reshape(-1), dtype=np.int64)
    starts.flags.writeable = False
    return starts


@functools.cache
def _loop(positions: int, vectors: int, block: int | None, rectify: bool = False):
    tile = broadcast_tile(positions, vectors, block, rectify)
    rows = vectors * LANES

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, image, starts, offsets, weights, bias, out, places, out_plane, group):
        plane = starts.shape[0]
        n = x.shape[0] // image
        o = out.shape[0] // (n * out_plane)
        blocks = bias.shape[0] // rows
        per_block = offsets.shape[0] * rows
        total = n * plane
        tiles = (total + positions - 1) // positions
        for task in prange(tiles * blocks):
            # groups of ``group`` tiles, each block of channels over one group in turn: the
            # group's input stays in the L2 cache, a block's weights nearer still
            begin = task // (group * blocks) * group
            size = min(group, tiles - begin)
            within = task - begin * blocks
            block_index = within // size
            first = min((begin + within % size) * positions, total - positions)
            channel = block_index * rows
            tile(x, image, starts, first, offsets, weights, block_index * per_block, bias,
                 channel, out, o, places, out_plane, o - channel)  # fmt: skip

    return loop
