"""Compiled twins of the stride-1 convolution: a direct correlation (the forward, and the input
gradient as the correlation of the output gradient with the turned filters) and the weight
gradient, both without im2col columns.

The NumPy references are ``ops/conv.correlate`` and ``ops/conv.correlate_weight_grad`` (im2col
and one GEMM). Here the input is read in place, from one zero-padded copy:

- ``correlate``: each task is one output row of one image for ``rows`` output channels; a
  ``register_tile.bias_tile`` sums the kernel taps of every input channel straight from the
  padded rows (one shifted row per tap) into registers, starting from the bias.
- ``correlate_weight_grad``: the output gradient is copied channels-last, and each task sums,
  for ``rows`` taps and a few vectors of output channels, the products over every output
  position (``register_tile.sum_tile``), a few images at a time so that both operands stay in
  cache.

x, taps, bias, grad and out are float32 NCHW / (O, C, kh, kw) arrays; ``padding`` is (ph, pw).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange

from .register_tile import LANES, grid_tile, sum_tile

# (rows, vectors) of each tile: 24 accumulators of 32 vector registers with AVX-512, 12 of 16
# with AVX2, leaving registers for the loaded vectors and the broadcast scalar.
ACCUMULATORS = 24 if LANES == 16 else 12
CACHE_BYTES = 1 << 19  # the images summed in one parallel pass of the weight gradient fit this


FORWARD_TILE = (8, 3) if LANES == 16 else (4, 3)  # (rows, vectors)


def _padded(x, padding):
    """x (N, C, H, W) zero-padded by ``padding``, flat (x itself when there is no padding)."""
    n, c, h, w = x.shape
    ph, pw = padding
    if ph == pw == 0:
        return x.reshape(-1)
    buffer = np.empty((n, c, h + 2 * ph, w + 2 * pw), np.float32)
    buffer[:, :, :ph] = 0
    buffer[:, :, ph + h :] = 0
    buffer[:, :, ph : ph + h, :pw] = 0
    buffer[:, :, ph : ph + h, pw + w :] = 0
    buffer[:, :, ph : ph + h, pw : pw + w] = x
    return buffer.reshape(-1)


def _tap_offsets(channels: int, kernel: tuple, plane: int, row: int, count: int) -> np.ndarray:
    """Offset of tap (c, i, j) in the flat padded input, ``count`` long (zeros past the taps)."""
    c, i, j = np.meshgrid(*(np.arange(size) for size in (channels, *kernel)), indexing="ij")
    offsets = np.zeros(count, np.int64)
    offsets[: c.size] = (c * plane + i * row + j).reshape(-1)
    return offsets


def correlate(x, taps, bias, out, padding):
    """out (N, O, Ho, Wo) = x correlated with taps (stride 1), plus bias (shape (0,) for none).

    The output is computed on the padded input's grid (rows as wide as the padded input, the
    last kw - 1 columns of each thrown away), so that a tap is one shift of the flat image.
    """
    n, c, h, w = x.shape
    o, _, kh, kw = taps.shape
    ho, wo = out.shape[2:]
    rows, vectors = FORWARD_TILE
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    padded = _padded(x, padding)
    channels_out = -(-o // rows) * rows
    weights = np.zeros((c * kh * kw, channels_out), np.float32)
    weights[:, :o] = taps.reshape(o, -1).T
    shifts = np.zeros(channels_out, np.float32)
    if bias.size:
        shifts[:o] = bias
    offsets = _tap_offsets(c, (kh, kw), hp * wp, wp, c * kh * kw)
    limit = (ho - 1) * wp + wo  # one past the last grid position that is an output
    _forward_loop(rows, vectors)(
        padded, offsets, weights, shifts, out.reshape(-1), n, o, ho * wo, wo, c * hp * wp, wp, limit
    )


@functools.cache
def _forward_loop(rows: int, vectors: int):
    """The parallel loop over (sample, tile of grid positions, block of ``rows`` output
    channels), blocks fastest: every block reuses a tile's input rows from cache."""
    tile = grid_tile(rows, vectors)
    span = vectors * LANES

    @njit(parallel=True, nogil=True)
    def loop(padded, offsets, weights, bias, out, n, o, plane, wo, image, width, limit):
        blocks = weights.shape[1] // rows
        tiles = (limit + span - 1) // span
        for task in prange(n * tiles * blocks):
            sample = task // (tiles * blocks)
            first = (task // blocks) % tiles * span
            channel = task % blocks * rows
            tile(
                padded, sample * image + first, offsets, first, limit, weights, channel,
                weights.shape[1], bias, out, (sample * o + channel) * plane, plane, o - channel,
                width, wo,
            )  # fmt: skip

    return loop


def correlate_weight_grad(x, grad, out, padding):
    """out (O, C, kh, kw) = the sum over every sample and output position of grad times the
    input window it saw (stride 1)."""
    n, c, h, w = x.shape
    o, _, kh, kw = out.shape
    ho, wo = grad.shape[2:]
    vectors = max(1, min(4, -(-o // LANES)))
    rows = ACCUMULATORS // vectors
    span = vectors * LANES
    row = w + 2 * padding[1]
    hp = h + 2 * padding[0]
    padded = _padded(x, padding)
    taps = c * kh * kw
    tap_rows = -(-taps // rows) * rows
    channels = -(-o // span) * span
    offsets = _tap_offsets(c, (kh, kw), hp * row, row, tap_rows)
    channels_last = np.zeros((n, ho, wo, channels), np.float32)
    channels_last[..., :o] = grad.transpose(0, 2, 3, 1)
    sums = np.zeros((tap_rows, channels), np.float32)
    per_sample = 4 * (c * hp * row + ho * wo * channels)
    chunk = max(1, CACHE_BYTES // per_sample)
    _weight_loop(rows, vectors)(
        padded,
        offsets,
        channels_last.reshape(-1, channels),
        sums,
        n,
        ho,
        wo,
        c * hp * row,
        row,
        chunk,
    )
    out[...] = sums[:taps, :o].T.reshape(out.shape)


@functools.cache
def _weight_loop(rows: int, vectors: int):
    tile = sum_tile(rows, vectors)
    span = vectors * LANES

    @njit(parallel=True, nogil=True)
    def loop(padded, offsets, grad, sums, n, ho, wo, image, row, chunk):
        channels = grad.shape[1]
        blocks = offsets.shape[0] // rows
        channel_tiles = channels // span
        for begin in range(0, n, chunk):
            for task in prange(blocks * channel_tiles):
                block = task // channel_tiles
                left = (task % channel_tiles) * span
                for sample in range(begin, min(begin + chunk, n)):
                    for line in range(ho):
                        tile(
                            padded, sample * image + line * row, offsets, block * rows, grad,
                            ((sample * ho + line) * wo) * channels + left, channels, wo, sums,
                            block * rows * channels + left, channels,
                        )  # fmt: skip

    return loop
