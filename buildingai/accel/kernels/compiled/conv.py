"""Compiled twins of the stride-1 convolution: a direct correlation (the forward, and the input
gradient as the correlation of the output gradient with the turned filters) and the weight
gradient, with no im2col columns.

The NumPy references are ``accel/convolution.correlate`` and ``correlate_weight_grad`` (the records'
im2col and one GEMM). The work is cut into register tiles (``register_tile.py``), one task each on
numba's threads:

- ``correlate`` with AVX2's 8-lane vectors and at least 8 input channels: output channels in
  the lanes, input values broadcast from a zero-padded copy (``conv_broadcast.py``); the tiles
  below read the input in place;
- ``correlate`` of a same-size convolution on images of at most 16 positions, for a batch of
  at least one vector of samples: the flat tiles on the sample-lane layout
  (``sample_lanes.py``), skipping the taps that read only padding;
- ``correlate`` without padding: tiles of the output taken on the input's grid
  (``grid_tile``), tasks (sample, grid tile, block of output channels);
- ``correlate`` with padding: tiles of one output row (``window_tile``), tasks (sample, output
  row, column tile, block of output channels), the padding left to the tiles' masks;
- ``correlate_weight_grad``: either tiles of (taps, output channels) over the output gradient
  copied channels-last (``sum_tile``), or tiles of (output channels, kernel columns) for one
  input channel and kernel row with lanes over output positions (``dot_tile``). Both sum a few
  samples at a time, so that their input and gradient stay in cache, and add those partial
  sums up in order: results do not depend on the thread count.

Beside them, ``im2col``: the columns of the im2col kernels (reference
``accel/convolution.columns_of``), made on every thread as shifted copies of whole flat images
(same-size stride 1; stride-2 halving, on the phase images of ``split_phases``) or row by row.

x, taps, bias, grad and out are float32 C-contiguous NCHW / (O, C, kh, kw) arrays; ``padding``
is (ph, pw); ``bias`` has shape (0,) when there is none.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, prange, uint64

from . import conv_broadcast, sample_lanes
from .activations import relu
from .flat_tile import flat_dot_tile, flat_tile
from .planes import (
    CACHE_BYTES,
    SUM_BLOCK,
    pack_weights,
    pad_planes,
    padded_bias,
    spaced_planes,
    tap_offsets,
)
from .register_tile import dot_tile, grid_tile, sum_tile, window_tile
from .tile_ir import LANES

# Accumulator vectors per tile: 24 of AVX-512's 32 registers, 12 of AVX2's 16, leaving room for
# the vectors a step loads and the broadcast weight.
ACCUMULATORS = 24 if LANES == 16 else 12
REGISTERS = 32 if LANES == 16 else 16
GRID_TILE = (8, 3) if LANES == 16 else (4, 3)  # (output channels, vectors)
# The grid tiles of an input of at most FEW_CHANNELS channels (a grayscale image) on AVX2: 8
# filters by one vector. Such a tile sums only a few taps, so its stores weigh more than its
# multiply-adds; from 6 channels on GRID_TILE is faster (docs/design_notes/performance.md)
FEW_CHANNELS = 2
FEW_CHANNELS_GRID_TILE = (8, 3) if LANES == 16 else (8, 1)
L1_BYTES = 1 << 16  # about what stays in the L1 cache while a tile runs
MIN_SUM_TASKS = 16  # tap blocks x channel tiles below which sum tiles leave threads idle
# Inputs of at most this many channels have them unrolled in the flat tiles (an image's 3).
UNROLLED_CHANNELS = 4
# Inputs of more channels than this are summed a group of this many channels at a time, every
# tap over the group before the next group: the rows one group's taps read stay in L1 (64
# channels: 24 KiB on AVX2), where a tap over every channel (256: 96 KiB) pushed out the rows
# the next tap reads again. Each tap's sum over a group starts from zero, as ``SUM_BLOCK``'s.
CHANNEL_GROUP = 64


def _weight_matrix(taps, bias, rows: int):
    """(weights (C*kh*kw, O'), bias (O',)) with O' the output channels rounded up to ``rows``
    (zero filters past O): row (c*kh + i)*kw + j holds tap (c, i, j) of every filter."""
    o = taps.shape[0]
    padded = _padded(o, rows)
    if padded == o:  # no filters to add: the transposed copy alone, and the bias as it is
        weights = np.ascontiguousarray(taps.reshape(o, -1).T)
        return weights, bias if bias.size else np.zeros(o, np.float32)
    weights = np.zeros((taps[0].size, padded), np.float32)
    weights[:, :o] = taps.reshape(o, -1).T
    shifts = np.zeros(padded, np.float32)
    if bias.size:
        shifts[:o] = bias
    return weights, shifts


def _same_size(kernel, padding) -> bool:
    """Whether a stride-1 correlation with this (kh, kw) kernel and padding keeps the image's
    size (odd kernel, half its size padded): then every tap is one shift of the flat image."""
    return 2 * padding[0] == kernel[0] - 1 and 2 * padding[1] == kernel[1] - 1


def _beyond_same_size(kernel, padding) -> bool:
    """Whether the padding is at least the same-size padding of an odd (kh, kw) kernel, more
    along one axis (the input gradient of a convolution without padding: kernel - 1)."""
    (kh, kw), (ph, pw) = kernel, padding
    odd = kh % 2 == 1 and kw % 2 == 1
    return odd and 2 * ph >= kh - 1 and 2 * pw >= kw - 1 and not _same_size(kernel, padding)


def _padded_to_same_size(x, kernel, padding):
    """(x zero-padded by what ``padding`` exceeds the same-size padding, that padding): the same
    correlation as a same-size one, for the flat tiles (a row tile of a 26-wide output row
    filled 26 of its 48 lanes)."""
    same = tuple((k - 1) // 2 for k in kernel)
    extra = tuple(p - q for p, q in zip(padding, same))
    n, c, h, w = x.shape
    padded = np.empty((n, c, h + 2 * extra[0], w + 2 * extra[1]), np.float32)
    pad_planes(x, padded, extra[0], extra[1])
    return padded, same


@functools.lru_cache(maxsize=256)
def _lane_masks(height: int, width: int, kernel: tuple, padding: tuple):
    """int32 (Q, kh*kw + 1), Q = ceil(H*W / LANES), read-only and kept per geometry: bit l of
    entry (q, i*kw + j) says whether flat position p = q*LANES + l is in the image and tap
    (i, j) of a same-size correlation reads inside it at p; entry (q, kh*kw), whether p is in
    the image (``flat_tile.py``)."""
    kh, kw = kernel
    per_image = -(-height * width // LANES)
    p = np.arange(per_image * LANES).reshape(per_image, LANES)
    h, w = p // width, p % width
    present = p < height * width
    inside = np.empty((per_image, kh * kw + 1, LANES), bool)
    for i in range(kh):
        for j in range(kw):
            row, column = h + i - padding[0], w + j - padding[1]
            inside[:, i * kw + j] = present & (row >= 0) & (row < height)
            inside[:, i * kw + j] &= (column >= 0) & (column < width)
    inside[:, kh * kw] = present
    bits = (inside.astype(np.int64) << np.arange(LANES)).sum(axis=-1)
    masks = np.ascontiguousarray(bits.astype(np.uint32).view(np.int32))
    masks.flags.writeable = False
    return masks


@functools.lru_cache(maxsize=256)
def _tap_shifts(width: int, kernel: tuple, padding: tuple):
    """int64 (kh*kw,): how far tap (i, j) of a same-size correlation reads from the output
    position in the flat image, (i - ph)*W + j - pw. Read-only, kept per geometry."""
    i = np.arange(kernel[0]).reshape(-1, 1) - padding[0]
    j = np.arange(kernel[1]).reshape(1, -1) - padding[1]
    shifts = np.ascontiguousarray((i * width + j).reshape(-1).astype(np.int64))
    shifts.flags.writeable = False
    return shifts


def _flat_geometry(x, kernel, padding, outputs):
    n, c, h, w = x.shape
    per_image = -(-h * w // LANES)
    values = [c, h, w, kernel[0], kernel[1], padding[0], padding[1], outputs, per_image,
              n * per_image]  # fmt: skip
    return np.array(values, np.int64)


def correlate_turned(grad, weight, out, padding):
    """out (N, C, H, W) = grad (N, O, Ho, Wo) correlated with the turned filters of weight
    (O, C, kh, kw) at stride 1 with zero padding: the input gradient of a convolution."""
    kernel = weight.shape[2:]
    if conv_broadcast.fits(grad.shape[1], out.shape[1], out.shape[2] * out.shape[3]):
        conv_broadcast.correlate(grad, weight, np.empty(0, np.float32), out, padding, turned=True)
    elif _same_size(kernel, padding):
        _correlate_flat(grad, weight, np.empty(0, np.float32), out, padding, turned=True)
    elif _beyond_same_size(kernel, padding):
        padded, same = _padded_to_same_size(grad, kernel, padding)
        _correlate_flat(padded, weight, np.empty(0, np.float32), out, same, turned=True)
    else:
        turned = np.ascontiguousarray(weight[:, :, ::-1, ::-1].transpose(1, 0, 2, 3))
        correlate(grad, turned, np.empty(0, np.float32), out, padding)


def correlate(x, taps, bias, out, padding, rectify: bool = False):
    """out (N, O, Ho, Wo) = x correlated with taps at stride 1 with zero padding, plus bias;
    with ``rectify``, max(that, 0) (``correlate_rectified``)."""
    if conv_broadcast.fits(x.shape[1], out.shape[1], out.shape[2] * out.shape[3]):
        conv_broadcast.correlate(x, taps, bias, out, padding, rectify=rectify)
        return
    if _same_size(taps.shape[2:], padding):
        _correlate_flat(x, taps, bias, out, padding)
    elif _beyond_same_size(taps.shape[2:], padding):
        padded, same = _padded_to_same_size(x, taps.shape[2:], padding)
        _correlate_flat(padded, taps, bias, out, same)
    elif tuple(padding) == (0, 0):
        _correlate_grid(x, taps, bias, out, rectify)
        return
    else:
        _correlate_windows(x, taps, bias, out, padding)
    if rectify:  # these tiles store without rectifying: the ReLU twin's pass, in place
        flat = out.reshape(-1)
        relu(flat, flat)


def correlate_rectified(x, taps, bias, out, padding):
    """out = max(``correlate``'s output, 0): a convolution and the ReLU that reads it. The
    broadcast and grid tiles store max(sum, 0) from their registers; after the other tiles,
    one pass over the output."""
    correlate(x, taps, bias, out, padding, rectify=True)


def _correlate_grid(x, taps, bias, out, rectify: bool = False):
    n, c, h, w = x.shape
    o, _, kh, kw = taps.shape
    ho, wo = out.shape[2:]
    rows, vectors = _grid_shape(c, o)
    weights, shifts = _weight_matrix(taps, bias, rows)
    offsets = tap_offsets(c, (kh, kw), h, w, c * kh * kw)
    limit = (ho - 1) * w + wo  # one past the last grid position that is an output
    loop = _grid_loop(rows, vectors, SUM_BLOCK, rectify)
    loop(x.reshape(-1), offsets, weights, shifts, out.reshape(-1), o, ho * wo, wo, c * h * w, w,
         limit)  # fmt: skip


@functools.cache
def _grid_loop(rows: int, vectors: int, block: int, rectify: bool = False):
    tile = grid_tile(rows, vectors, block, rectify)
    span = vectors * LANES

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, offsets, weights, bias, out, o, plane, wo, image, width, limit):
        n = x.shape[0] // image
        blocks = weights.shape[1] // rows
        tiles = (limit + span - 1) // span
        for task in prange(n * tiles * blocks):  # blocks fastest: they share a tile's input
            sample = task // (tiles * blocks)
            first = (task // blocks) % tiles * span
            channel = task % blocks * rows
            tile(
                x, sample * image + first, offsets, first, limit, weights, channel,
                weights.shape[1], bias, out, (sample * o + channel) * plane, plane, o - channel,
                width, wo,
            )  # fmt: skip

    return loop


def _rows_for(vectors: int) -> int:
    """Tile rows of ``vectors`` accumulators each that fit the registers with the ``vectors``
    a step loads and the broadcast weight (AVX2's 16 hold 2 rows of 4 vectors, not 3)."""
    return min(ACCUMULATORS // vectors, (REGISTERS - vectors - 1) // vectors)


def _padded(outputs: int, rows: int) -> int:
    """``outputs`` rounded up to whole tiles of ``rows`` output channels."""
    return -(-outputs // rows) * rows


def _grid_shape(channels: int, outputs: int) -> tuple[int, int]:
    """(output channels, vectors) of a grid tile over ``channels`` input channels:
    ``FEW_CHANNELS_GRID_TILE`` for at most ``FEW_CHANNELS`` of them unless it rounds ``outputs``
    up more than ``GRID_TILE`` (20 filters: 4 x 3, not 8 x 1 padded to 24), else ``GRID_TILE``."""
    few = FEW_CHANNELS_GRID_TILE[0]
    if channels <= FEW_CHANNELS and _padded(outputs, few) <= _padded(outputs, GRID_TILE[0]):
        return FEW_CHANNELS_GRID_TILE
    return GRID_TILE


def _flat_shape(outputs: int) -> tuple[int, int]:
    """(output channels, vectors) of a flat tile: ``GRID_TILE``, or one more vector and fewer
    channels where that rounds ``outputs`` up less (48 channels: 6 x 4)."""
    rows, vectors = GRID_TILE
    fewer = _rows_for(vectors + 1)
    if _padded(outputs, fewer) < _padded(outputs, rows):
        return fewer, vectors + 1
    return rows, vectors


def _correlate_flat(x, taps, bias, out, padding, turned=False):
    """``correlate`` of a same-size convolution; with ``turned``, taps (C, O, kh, kw) are a
    forward's filters, read turned (O and C swapped, each kernel turned half a circle): the
    correlation is then the input gradient of that forward. Small images of a whole vector of
    samples run in the sample-lane layout (``_correlate_sample_lanes``)."""
    n, c, h, w = x.shape
    kernel = tuple(taps.shape[2:])
    if sample_lanes.fits(n, h, w, kernel, padding):
        _correlate_sample_lanes(x, taps, bias, out, padding, turned=turned)
        return
    rows, vectors = _flat_shape(out.shape[1])
    weights = _packed_weights(taps, c, out.shape[1], rows, turned)
    masks = _lane_masks(h, w, kernel, tuple(padding))
    shifts = _tap_shifts(w, kernel, tuple(padding))
    planes, stride = spaced_planes(x)
    flat_correlation(planes, x.shape, stride, weights, bias, masks, shifts, out, vectors)


def _correlate_sample_lanes(x, taps, bias, out, padding, turned=False):
    """``_correlate_flat`` in the sample-lane layout (``sample_lanes.py``): the input copied
    with the batch in the lanes, the taps that read only padding skipped, the output copied
    back."""
    n, c, h, w = x.shape
    o = out.shape[1]
    kernel = tuple(taps.shape[2:])
    per_position = sample_lanes.vectors_per_position(n)
    samples = per_position * LANES
    vectors = sample_lanes.tile_vectors(per_position)
    weights = _packed_weights(taps, c, o, _rows_for(vectors), turned)
    planes, stride = sample_lanes.to_sample_lanes(x, samples)
    masks = sample_lanes.lane_masks(h, w, per_position, kernel, tuple(padding))
    shifts = _tap_shifts(w, kernel, tuple(padding)) * samples  # one position spans N' values
    lanes_out = np.empty((1, o, h, w * samples), np.float32)
    flat_correlation(planes, (1, c, h, w * samples), stride, weights, bias, masks, shifts,
                     lanes_out, vectors, skips=True)  # fmt: skip
    sample_lanes.from_sample_lanes(lanes_out.reshape(o, h, w, samples), out)


def _packed_weights(taps, channels: int, outputs: int, rows: int, turned: bool):
    """The filters as the flat tiles read them (``planes.pack_weights``): (blocks, C, kh, kw,
    rows), one tile's taps side by side."""
    weights = np.empty((-(-outputs // rows), channels) + tuple(taps.shape[2:]) + (rows,),
                       np.float32)  # fmt: skip
    pack_weights(taps, weights, turned)
    return weights


def flat_correlation(x, shape, stride, weights, bias, masks, shifts, out, vectors, skips=False):
    """The flat tiles' correlation: out (N, O, H, W) = the sum over channels c and taps k of
    weights[b, c, k, r] (output channel b*rows + r) times x at flat distance ``shifts[k]``
    from each output position, where ``masks`` (Q, taps + 1) lets tap k read, plus bias (O,)
    or shape (0,). ``x`` is flat; ``shape`` (N, C, H, W) and the plane ``stride`` say where
    sample n's channel c starts (``(n*C + c)*stride``), from which ``shifts`` may reach past
    the batch. With ``skips``, the tiles skip the taps whose masks keep no lane."""
    n, c, h, w = shape
    o = out.shape[1]
    blocks, _, *tap_axes, rows = weights.shape
    taps = math.prod(tap_axes)
    shifts_bias = padded_bias(bias, blocks * rows)
    group = max(1, CACHE_BYTES // (16 * c * vectors * LANES))  # tiles whose input fills ~L2/4
    per_image = -(-h * w // LANES)
    geometry = np.array([c, h, w, 1, taps, 0, 0, o, per_image, n * per_image, group, stride],
                        np.int64)  # fmt: skip
    # channel by channel where a tile's input of every channel would not stay in L1
    channel_major = c * vectors * LANES * 4 > L1_BYTES
    block = None
    if c * taps > SUM_BLOCK:  # a sum in blocks: SUM_BLOCK channels or taps long
        block = max(1, SUM_BLOCK // taps) if channel_major else SUM_BLOCK
    unrolled = c if c <= UNROLLED_CHANNELS and not channel_major and block is None else None
    grouped = CHANNEL_GROUP if not channel_major and c > CHANNEL_GROUP else None
    loop = _flat_loop(rows, vectors, block, channel_major, unrolled, grouped, skips)
    loop(x, masks.reshape(-1), shifts, geometry, weights.reshape(-1), shifts_bias,
         out.reshape(-1))  # fmt: skip


@functools.cache
def _flat_loop(
    rows: int,
    vectors: int,
    block: int | None,
    channel_major: bool,
    unrolled=None,
    grouped=None,
    skips=False,
):
    tile = flat_tile(rows, vectors, block, channel_major, unrolled, grouped, skips)

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, masks, tap_shifts, geometry, weights, bias, out):
        outputs, total = geometry[7], geometry[9]
        blocks = bias.shape[0] // rows
        per_block = weights.shape[0] // blocks
        tiles = (total + vectors - 1) // vectors
        group = geometry[10]
        for task in prange(tiles * blocks):
            # groups of ``group`` tiles, every block of channels over one group in turn: the
            # group's input stays in the L2 cache, a block's weights in L1
            start = task // (group * blocks) * group
            size = min(group, tiles - start)
            within = task - start * blocks
            block = within // size
            channel = block * rows
            first = (start + within % size) * vectors
            tile(x, masks, tap_shifts, geometry, first, weights, block * per_block, bias, out,
                 channel,
                 outputs - channel)  # fmt: skip

    return loop


def _window_shape(out_width: int) -> tuple[int, int]:
    """(output channels, vectors) of a window tile for output rows ``out_width`` long."""
    vectors = min(3, -(-out_width // LANES))
    return _rows_for(vectors), vectors


def _correlate_windows(x, taps, bias, out, padding):
    n, c, h, w = x.shape
    o, _, kh, kw = taps.shape
    ho, wo = out.shape[2:]
    rows, vectors = _window_shape(wo)
    weights, shifts = _weight_matrix(taps, bias, rows)
    geometry = np.array([c, h, w, kh, kw, padding[0], padding[1], wo], np.int64)
    # each tap's sum over channels in blocks, where the whole sum is long enough to need them
    block = None if c * kh * kw <= SUM_BLOCK else SUM_BLOCK
    loop = _window_loop(rows, vectors, block)
    loop(x.reshape(-1), geometry, weights, shifts, out.reshape(-1), n, o, ho)


@functools.cache
def _window_loop(rows: int, vectors: int, block: int | None):
    tile = window_tile(rows, vectors, block)
    span = vectors * LANES

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, geometry, weights, bias, out, n, o, ho):
        wo = geometry[7]
        image = x.shape[0] // n
        blocks = weights.shape[1] // rows
        tiles = (wo + span - 1) // span
        for task in prange(n * ho * tiles * blocks):  # blocks fastest: they share the rows read
            sample = task // (ho * tiles * blocks)
            line = (task // (tiles * blocks)) % ho
            left = (task // blocks) % tiles * span
            channel = task % blocks * rows
            tile(
                x, sample * image, geometry, weights, channel, weights.shape[1], bias, out,
                ((sample * o + channel) * ho + line) * wo + left, ho * wo, o - channel, line,
                left,
            )  # fmt: skip

    return loop


def correlate_weight_grad(x, grad, out, padding):
    """out (O, C, kh, kw) = the sum over samples and output positions of grad times the input
    window it saw (stride 1, zero padding).

    Two tilings: without padding and with enough tap blocks to share among threads, lanes over
    output channels (``sum_tile``, the gradient copied channels-last: no lane is wasted); else
    lanes over an output row's positions (``dot_tile``: no copy at all, the padding masked).
    """
    o, c, kh, kw = out.shape
    rows, vectors = _sum_shape(o)
    tasks = -(-c * kh * kw // rows) * -(-o // (vectors * LANES))
    if _same_size((kh, kw), padding) and tuple(padding) != (0, 0) and kw <= 8:
        _weight_grad_flat(x, grad, out, padding)
    elif tuple(padding) == (0, 0) and tasks >= MIN_SUM_TASKS:
        _weight_grad_by_channels(x, grad, out)
    else:
        _weight_grad_by_positions(x, grad, out, padding)


def _weight_grad_by_positions(x, grad, out, padding):
    n, c, h, w = x.shape
    o, _, kh, kw = out.shape
    ho, wo = grad.shape[2:]
    taps = min(kw, 8)
    rows = max(1, ACCUMULATORS // taps)
    vectors = -(-wo // LANES)
    columns = -(-kw // taps) * taps
    sums = np.zeros((-(-o // rows) * rows, c, kh, columns), np.float32)
    geometry = np.array([c, h, w, padding[0], padding[1], o, ho, wo], np.int64)
    chunk = max(1, CACHE_BYTES // (4 * (c * h * w + o * ho * wo)))
    _positions_loop(rows, taps, vectors)(x.reshape(-1), grad.reshape(-1), geometry, sums, n, kh,
                                      chunk)  # fmt: skip
    out[...] = sums[:o, :, :, :kw]


@functools.cache
def _positions_loop(rows: int, taps: int, vectors: int):
    tile = dot_tile(rows, taps, vectors)

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, grad, geometry, sums, n, kh, chunk):
        blocks, c, _, columns = sums.shape
        blocks //= rows
        groups = columns // taps
        stride = c * kh * columns  # between output channels in sums
        for begin in range(0, n, chunk):
            end = min(begin + chunk, n)
            for task in prange(blocks * c * kh * groups):
                block = task // (c * kh * groups)
                channel = (task // (kh * groups)) % c
                kernel_row = (task // groups) % kh
                first_tap = task % groups * taps
                tile(
                    x, grad, geometry, begin, end, channel, kernel_row, first_tap, block * rows,
                    sums.reshape(-1),
                    block * rows * stride + (channel * kh + kernel_row) * columns + first_tap,
                    stride,
                )  # fmt: skip

    return loop


def _weight_grad_flat(x, grad, out, padding):
    n, c, h, w = x.shape
    o, _, kh, kw = out.shape
    rows = max(1, ACCUMULATORS // kw)
    sums = np.zeros((-(-o // rows) * rows, c, kh, kw), np.float32)
    masks = _lane_masks(h, w, (kh, kw), tuple(padding))
    geometry = _flat_geometry(x, (kh, kw), padding, o)
    # samples per pass: a block's gradient stays in L1 through its tasks, the input in L2
    chunk = max(1, min(L1_BYTES // (8 * rows * h * w), CACHE_BYTES // (4 * c * h * w)))
    _flat_dot_loop(rows, kw)(x.reshape(-1), grad.reshape(-1), masks.reshape(-1), geometry, sums,
                             n, chunk)  # fmt: skip
    out[...] = sums[:o]


@functools.cache
def _flat_dot_loop(rows: int, taps: int):
    tile = flat_dot_tile(rows, taps)

    @njit(parallel=True, nogil=True, cache=True)
    def loop(x, grad, masks, geometry, sums, n, chunk):
        blocks, c, kh, columns = sums.shape
        blocks //= rows
        groups = columns // taps
        stride = c * kh * columns  # between output channels in sums
        flat = sums.reshape(-1)
        for begin in range(0, n, chunk):
            end = min(begin + chunk, n)
            for task in prange(blocks * c * kh * groups):
                block = task // (c * kh * groups)
                channel = (task // (kh * groups)) % c
                kernel_row = (task // groups) % kh
                first_tap = task % groups * taps
                tile(
                    x, grad, masks, geometry, begin, end, channel, kernel_row, first_tap,
                    block * rows, flat,
                    block * rows * stride + (channel * kh + kernel_row) * columns + first_tap,
                    stride,
                )  # fmt: skip

    return loop


def _sum_shape(outputs: int) -> tuple[int, int]:
    """(taps, vectors) of a sum tile for ``outputs`` output channels."""
    vectors = max(1, min(4, -(-outputs // LANES)))
    return _rows_for(vectors), vectors


def _weight_grad_by_channels(x, grad, out):
    n, c, h, w = x.shape
    o, _, kh, kw = out.shape
    ho, wo = grad.shape[2:]
    rows, vectors = _sum_shape(o)
    span = vectors * LANES
    taps = c * kh * kw
    tap_rows = -(-taps // rows) * rows
    channels = -(-o // span) * span
    offsets = tap_offsets(c, (kh, kw), h, w, tap_rows)
    if channels == o:
        channels_last = np.ascontiguousarray(grad.transpose(0, 2, 3, 1))
    else:
        channels_last = np.zeros((n, ho, wo, channels), np.float32)
        channels_last[..., :o] = grad.transpose(0, 2, 3, 1)
    sums = np.zeros((tap_rows, channels), np.float32)
    partial = np.zeros_like(sums)
    chunk = max(1, CACHE_BYTES // (4 * (c * h * w + ho * wo * channels)))
    grad_rows = channels_last.reshape(-1, channels)
    _channels_loop(rows, vectors)(x.reshape(-1), offsets, grad_rows, sums, partial, n, ho, wo,
                                  c * h * w, w, chunk)  # fmt: skip
    out[...] = sums[:taps, :o].T.reshape(out.shape)


@functools.cache
def _channels_loop(rows: int, vectors: int):
    tile = sum_tile(rows, vectors)
    span = vectors * LANES

    @njit(parallel=True, nogil=True, cache=True)
    def loop(padded, offsets, grad, sums, partial, n, ho, wo, image, row, chunk):
        channels = grad.shape[1]
        blocks = offsets.shape[0] // rows
        channel_tiles = channels // span
        flat = partial.reshape(-1)
        for begin in range(0, n, chunk):
            for task in prange(blocks * channel_tiles):
                block = task // channel_tiles
                left = (task % channel_tiles) * span
                for sample in range(begin, min(begin + chunk, n)):
                    for line in range(ho):
                        tile(
                            padded, sample * image + line * row, offsets, block * rows,
                            grad.reshape(-1), ((sample * ho + line) * wo) * channels + left,
                            channels, wo, flat, block * rows * channels + left, channels,
                        )  # fmt: skip
                # The chunk's sums (each row's added to them from zero) join the totals: three
                # levels of partial sums keep float32 rounding small over many positions.
                for r in range(block * rows, (block + 1) * rows):
                    for lane in range(left, left + span):
                        sums[r, lane] += partial[r, lane]
                        partial[r, lane] = 0.0

    return loop


def im2col(x, out, stride, padding, dilation):
    """out (C, kh, kw, N, Ho, Wo) = the im2col columns of x (N, C, H, W): ``out[c, i, j, n, h,
    w] = x[n, c, h*sh + i*dh - ph, w*sw + j*dw - pw]``, zero outside the image.

    A same-size stride-1 convolution's column of tap (i, j) and sample n is the flat image
    shifted by (i - ph)*W + j - pw (``_shifted_columns``: one contiguous copy per image, not
    one per row: small images have short rows); a stride-2 one that halves the image, likewise
    on x's four phase images (``conv_strided.py``); other geometries go row by row."""
    c, kh, kw, n = out.shape[:4]
    if tuple(stride) == (1, 1) and tuple(dilation) == (1, 1) and _same_size((kh, kw), padding):
        height, width = x.shape[2:]
        rows = np.repeat(np.arange(kh) - padding[0], kw).astype(np.int64)
        columns = np.tile(np.arange(kw) - padding[1], kh).astype(np.int64)
        flat = out.reshape(c, kh * kw, n, height * width)
        bases = np.zeros(kh * kw, np.int64)
        _shifted_columns(x.reshape(-1), bases, rows, columns, flat, height, width)
        return
    if _halves_at_stride_2(x.shape[2:], (kh, kw), stride, padding, dilation, out.shape[4:]):
        # tap (i, j) reads phase image (a, b) at (d_h, d_w): i - ph = 2*d_h + a, j - pw likewise
        height, width = x.shape[2] // 2, x.shape[3] // 2
        d_h, a = np.divmod(np.repeat(np.arange(kh) - padding[0], kw), 2)
        d_w, b = np.divmod(np.tile(np.arange(kw) - padding[1], kh), 2)
        read = sorted(set(zip(a.tolist(), b.tolist())))  # only these (a 1x1 kernel: one)
        which = phase_index(read)
        phases = np.empty((len(read), n, c, height * width), np.float32)
        split_phases(x, which, phases)
        bases = (which[a, b] * phases[0].size).astype(np.int64)
        flat = out.reshape(c, kh * kw, n, height * width)
        _shifted_columns(phases.reshape(-1), bases, d_h.astype(np.int64), d_w.astype(np.int64),
                         flat, height, width)  # fmt: skip
        return
    loop = _im2col_loop(kw, stride[1], dilation[1])
    loop(x, out, stride[0], dilation[0], padding[0], padding[1])


@functools.cache
def _im2col_loop(kw: int, sw: int, dw: int):
    """``im2col`` for kernels ``kw`` wide at column stride ``sw`` and dilation ``dw``: tasks
    (channel, kernel row) on threads, each input row read once for the kernel row's ``kw``
    taps. With the three constant, the taps' reads of one row form one interleaved access that
    vectorises; only the columns near the edges test for the padding."""

    @njit(parallel=True, nogil=True, boundscheck=False, cache=True)
    def loop(x, out, sh, dh, ph, pw):
        c, kh, _, n, ho, wo = out.shape
        height, width = x.shape[2], x.shape[3]
        source, target = x.reshape(-1), out.reshape(-1)
        plane = height * width
        tap_stride = n * ho * wo  # between the columns of taps (i, j) and (i, j + 1)
        # output columns [low, high) whose every tap reads inside the image
        low = min(wo, max(0, (pw + sw - 1) // sw))
        high = max(low, min(wo, (width - 1 - (kw - 1) * dw + pw) // sw + 1))
        # unsigned indices: no test for a negative one's wraparound, so the loops vectorise
        for task in prange(c * kh):
            channel, i = task // kh, task % kh
            for sample in range(n):
                image = (sample * c + channel) * plane
                for h in range(ho):
                    row = h * sh + i * dh - ph
                    line = (task * kw * n + sample) * ho * wo + h * wo
                    if row < 0 or row >= height:
                        for j in range(kw):
                            for w in range(wo):
                                target[uint64(line + j * tap_stride + w)] = 0.0
                        continue
                    start = image + row * width - pw  # where output column 0's tap 0 reads
                    for w in range(low, high):
                        for j in range(kw):
                            at = uint64(start + w * sw + j * dw)
                            target[uint64(line + j * tap_stride + w)] = source[at]
                    for edge in range(wo - (high - low)):  # [0, low) and [high, wo)
                        w = edge if edge < low else edge + high - low
                        for j in range(kw):
                            column = w * sw + j * dw - pw
                            inside = column >= 0 and column < width
                            value = source[uint64(start + w * sw + j * dw)] if inside else 0.0
                            target[uint64(line + j * tap_stride + w)] = value

    return loop


def _halves_at_stride_2(size, kernel, stride, padding, dilation, out_hw) -> bool:
    """Whether a convolution is stride 2, undilated, and maps an even (H, W) to (H/2, W/2)."""
    even = size[0] % 2 == 0 and size[1] % 2 == 0
    half = tuple(out_hw) == (size[0] // 2, size[1] // 2)
    return tuple(stride) == (2, 2) and tuple(dilation) == (1, 1) and even and half


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def _shifted_columns(x, bases, rows, columns, out, height, width):
    """out[c, k, n, p] = image (n, c) of the flat images starting at x[bases[k]] (each
    H*W, (N, C) of them) at position p shifted by (rows[k], columns[k]) rows and columns, zero
    where that falls outside the image: a contiguous copy of the image shifted by
    ``rows[k]*W + columns[k]``, then zeros on the columns the shift wraps round."""
    c, taps, n, plane = out.shape
    target = out.reshape(-1)
    # unsigned indices: no test for a negative one's wraparound, so the loops vectorise
    for task in prange(c * taps):
        channel, tap = task // taps, task % taps
        d_h, d_w = rows[tap], columns[tap]
        shift = d_h * width + d_w
        low = min(plane, max(0, -shift))  # positions [low, high) read inside the flat image
        high = max(low, min(plane, plane - shift))
        left = min(width, max(0, -d_w))  # columns [left, right) read inside their row
        right = max(left, min(width, width - d_w))
        for sample in range(n):
            start = bases[tap] + (sample * c + channel) * plane + shift
            at = (task * n + sample) * plane
            for p in range(low):
                target[uint64(at + p)] = 0.0
            for p in range(low, high):
                target[uint64(at + p)] = x[uint64(start + p)]
            for p in range(high, plane):
                target[uint64(at + p)] = 0.0
            if d_w != 0:  # the flat shift read the neighbouring row there
                for h in range(height):
                    for w in range(left):
                        target[uint64(at + h * width + w)] = 0.0
                    for w in range(right, width):
                        target[uint64(at + h * width + w)] = 0.0


def phase_index(phases):
    """int64 (2, 2): the index in ``phases`` of phase (a, b), or -1 where no tap reads it."""
    which = np.full((2, 2), -1, np.int64)
    for p, (a, b) in enumerate(phases):
        which[a, b] = p
    return which


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def split_phases(x, which, out):
    """out[which[a, b], n, c, h*W/2 + w] = x[n, c, 2*h + a, 2*w + b] for the phases (a, b)
    with ``which[a, b] >= 0``: the phase images, out (P, N, C, stride) with planes ``stride >=
    H*W/4`` apart (the values past H*W/4 are not written). Each input row is read once and its
    even and odd columns written apart (constant strides: vectorised as shuffles)."""
    phases, n, c, plane = out.shape
    height, width = x.shape[2] // 2, x.shape[3] // 2
    source, target = x.reshape(-1), out.reshape(-1)
    phase_size = n * c * plane
    # unsigned indices: no test for a negative one's wraparound, so the loops vectorise
    for task in prange(n * c):  # task = sample * C + channel
        for a in range(2):
            even, odd = which[a, 0], which[a, 1]
            for h in range(height):
                start = ((task * height + h) * 2 + a) * 2 * width  # input row 2*h + a
                left = even * phase_size + task * plane + h * width
                right = odd * phase_size + task * plane + h * width
                if even >= 0 and odd >= 0:
                    for w in range(width):
                        target[uint64(left + w)] = source[uint64(start + 2 * w)]
                        target[uint64(right + w)] = source[uint64(start + 2 * w + 1)]
                elif even >= 0:
                    for w in range(width):
                        target[uint64(left + w)] = source[uint64(start + 2 * w)]
                elif odd >= 0:
                    for w in range(width):
                        target[uint64(right + w)] = source[uint64(start + 2 * w + 1)]
