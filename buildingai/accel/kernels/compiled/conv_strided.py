"""Compiled twins of the stride-2 convolution (an even image to half its size): the forward and
the input gradient, on the flat register tiles of ``flat_tile.py``, or, where they take it, on
the channel-vector tiles of ``conv_broadcast.py``: the forward reading the input in strides, the
input gradient phase by phase, each phase stored straight into its places.

A stride-2 convolution reads input row ``2*ho + i - ph`` for output row ``ho`` and kernel row
``i``. Write ``i - ph = 2*d + a`` with phase ``a`` in {0, 1}: the row read is row ``ho + d`` of
the phase image that keeps the input rows of parity ``a``. Likewise for columns. So the
input, split into its (up to) four phase images (N, C, H/2, W/2), is read by each tap (i, j)
at one phase image and one small shift (d_h, d_w) from the output position: a stride-1 read
on images of the output's own size, which is what the flat tiles do. No tap is added and none
is wasted: a 3x3 kernel is 1 + 2 + 2 + 4 taps over the four phases.

- ``correlate``: the phase images one after another in one buffer; each tap's flat shift
  carries its phase image's distance from the first, so one flat-tile pass sums all taps.
- ``correlate_transposed``: the input gradient, phase by phase: phase image (a, b) of the
  gradient is the output gradient correlated with the taps of that phase, turned (read at
  ``-d``); the phase images are then woven back into (N, C, H, W) (zero where no tap reads).

The NumPy references are ``accel/convolution.correlate_strided`` and
``correlate_strided_transposed`` (the records' im2col). Arrays are float32 and C-contiguous;
``padding`` is (ph, pw).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange, uint64

from . import conv as direct
from . import conv_broadcast, planes
from .tile_ir import LANES


@functools.lru_cache(maxsize=64)
def phase_plan(kernel: tuple, padding: tuple):
    """(phases, taps): ``phases`` the (a, b) read by some tap, in order; ``taps`` one
    (i, j, phase index, d_h, d_w) per kernel tap, i - ph = 2*d_h + a, j - pw = 2*d_w + b."""
    taps = []
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            d_h, a = divmod(i - padding[0], 2)
            d_w, b = divmod(j - padding[1], 2)
            taps.append((i, j, (a, b), d_h, d_w))
    phases = sorted({tap[2] for tap in taps})
    return tuple(phases), tuple((i, j, phases.index(p), dh, dw) for i, j, p, dh, dw in taps)


@functools.lru_cache(maxsize=256)
def _shift_masks(height: int, width: int, shifts: tuple):
    """int32 (Q, T + 1), Q = ceil(H*W / LANES), read-only: bit l of entry (q, k) says whether
    position p = q*LANES + l is in the (H, W) image and its neighbour at ``shifts[k]`` = (d_h,
    d_w) is inside it too; entry (q, T), whether p is in the image (``flat_tile.py``)."""
    per_image = -(-height * width // LANES)
    p = np.arange(per_image * LANES).reshape(per_image, LANES)
    h, w = p // width, p % width
    present = p < height * width
    inside = np.empty((per_image, len(shifts) + 1, LANES), bool)
    for k, (d_h, d_w) in enumerate(shifts):
        row, column = h + d_h, w + d_w
        inside[:, k] = present & (row >= 0) & (row < height) & (column >= 0) & (column < width)
    inside[:, len(shifts)] = present
    bits = (inside.astype(np.int64) << np.arange(LANES)).sum(axis=-1)
    masks = np.ascontiguousarray(bits.astype(np.uint32).view(np.int32))
    masks.flags.writeable = False
    return masks


def _transposed_by_phases(grad, weight, out, phases, plan):
    """``correlate_transposed`` on the channel-vector tiles: phase image (a, b) of the input
    gradient is the output gradient (zero-padded by the largest shift) correlated with that
    phase's taps, stored straight into its places in out (rows 2h + a, columns 2w + b); the
    places of a phase no tap reads are zero."""
    n, o, half_h, half_w = grad.shape
    c = weight.shape[1]
    pad = (max(abs(tap[3]) for tap in plan), max(abs(tap[4]) for tap in plan))
    flat, height, width, plane = conv_broadcast.padded_planes(grad, pad)
    rows = conv_broadcast.TILE[1] * LANES
    blocks = -(-c // rows)
    no_bias = planes.padded_bias(np.empty(0, np.float32), blocks * rows)
    which = direct.phase_index(phases)
    for a in range(2):
        for b in range(2):
            if which[a, b] < 0:
                out[:, :, a::2, b::2] = 0.0
    for p, (a, b) in enumerate(phases):
        mine = [tap for tap in plan if tap[2] == p]
        # phase image p at (h, w) reads the output gradient at (h - d_h, w - d_w)
        shifts = np.array([-dh * width - dw for *_, dh, dw in mine], np.int64)
        offsets = (np.arange(o, dtype=np.int64)[:, None] * plane + shifts).reshape(-1)
        weights = np.empty((blocks, o, len(mine), rows), np.float32)
        tap_rows = np.array([tap[0] for tap in mine], np.int64)
        tap_columns = np.array([tap[1] for tap in mine], np.int64)
        _pack_transposed(weight, tap_rows, tap_columns, weights)
        starts, places = _phase_positions(half_h, half_w, width, pad, (a, b), out.shape[3])
        # the phase's kernel: as many rows and columns as it has distinct shifts
        group = conv_broadcast.group_for(o, len({t[3] for t in mine}), len({t[4] for t in mine}))
        conv_broadcast.run(flat, o * plane, starts, offsets, weights, no_bias, out, places,
                           out.shape[2] * out.shape[3], group,
                           conv_broadcast.block_for(len(mine), o))  # fmt: skip


@functools.lru_cache(maxsize=64)
def _phase_positions(half_h: int, half_w: int, width: int, pad: tuple, phase: tuple,
                     out_width: int):  # fmt: skip
    """(starts, places), int64 (half_h*half_w,) each, read-only: where phase image position
    (h, w) starts reading the output gradient padded by ``pad`` into rows ``width`` long, and
    its place (2h + a)*W + 2w + b in a plane of the input gradient."""
    h = np.arange(half_h).reshape(-1, 1)
    w = np.arange(half_w).reshape(1, -1)
    starts = ((h + pad[0]) * width + w + pad[1]).reshape(-1).astype(np.int64)
    places = ((2 * h + phase[0]) * out_width + 2 * w + phase[1]).reshape(-1).astype(np.int64)
    starts.flags.writeable = places.flags.writeable = False
    return starts, places


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def _weave(parts, which, out):
    """out[n, c, 2*h + a, 2*w + b] = parts[which[a, b], n, c, h, w], zero where
    ``which[a, b] < 0``: the inverse of ``conv.split_phases``, row by row."""
    phases, n, c, height, width = parts.shape
    for task in prange(n * c):
        sample, channel = task // c, task % c
        for a in range(2):
            even, odd = which[a, 0], which[a, 1]
            for h in range(height):
                row = out[sample, channel, 2 * h + a]
                if even >= 0 and odd >= 0:
                    left, right = parts[even, sample, channel, h], parts[odd, sample, channel, h]
                    for w in range(width):
                        row[2 * w] = left[w]
                        row[2 * w + 1] = right[w]
                elif even >= 0:
                    left = parts[even, sample, channel, h]
                    for w in range(width):
                        row[2 * w] = left[w]
                        row[2 * w + 1] = 0.0
                elif odd >= 0:
                    right = parts[odd, sample, channel, h]
                    for w in range(width):
                        row[2 * w] = 0.0
                        row[2 * w + 1] = right[w]
                else:
                    row[:] = 0.0


def _pack_transposed(weight, tap_rows, tap_columns, weights):
    """weights[b, o, k, r] = weight[o, b*rows + r, i_k, j_k] (zero past the last channel): the
    filters of a convolution with their two channel axes swapped, for its input gradient.
    Written in order; each block reads ``rows`` neighbouring channels of every filter."""
    blocks, outputs, count, rows = weights.shape
    kernel = np.asarray(tap_rows) * weight.shape[3] + np.asarray(tap_columns)
    _transposed_packer(count, rows)(weight, kernel.astype(np.int64), weights)


@functools.cache
def _transposed_packer(count: int, rows: int):
    """``_pack_transposed`` for ``count`` taps and tiles of ``rows`` channels: constant loops
    that unroll, the blocks of channels shared among threads."""

    @njit(parallel=True, nogil=True, boundscheck=False, cache=True)
    def pack(weight, kernel, weights):
        blocks, outputs = weights.shape[0], weights.shape[1]
        channels, taps = weight.shape[1], weight.shape[2] * weight.shape[3]
        source, out = weight.reshape(-1), weights.reshape(-1)
        # unsigned indices: no test for a negative one's wraparound, so the loops vectorise
        for b in prange(blocks):
            for o in range(outputs):
                at = (b * outputs + o) * (count * rows)
                for r in range(rows):
                    c = b * rows + r
                    start = (o * channels + c) * taps
                    for tap in range(count):
                        value = source[uint64(start + kernel[tap])] if c < channels else 0.0
                        out[uint64(at + tap * rows + r)] = value

    return pack


def _phase_reads(x, kernel, padding):
    """(images, stride, shifts, masks): x's phase images (P, N, C, stride), planes ``stride``
    apart (``planes.plane_stride``), and for each kernel tap in order its flat distance from an
    output position in that buffer and its lane masks."""
    n, c, h, w = x.shape
    phases, plan = phase_plan(tuple(kernel), tuple(padding))
    half_w, stride = w // 2, planes.plane_stride((h // 2) * (w // 2), c)
    images = np.empty((len(phases), n, c, stride), np.float32)
    direct.split_phases(x, direct.phase_index(phases), images)
    shifts = np.array([p * n * c * stride + dh * half_w + dw for _, _, p, dh, dw in plan],
                      np.int64)  # fmt: skip
    masks = _shift_masks(h // 2, half_w, tuple((dh, dw) for *_, dh, dw in plan))
    return images, stride, shifts, masks


def correlate(x, taps, bias, out, padding):
    """out (N, O, H/2, W/2) = x (N, C, H, W) convolved with taps (O, C, kh, kw) at stride 2
    with zero padding, plus bias (O,) or shape (0,)."""
    n, c, h, w = x.shape
    o, _, kh, kw = taps.shape
    # the channel-vector tiles read the input in strides, no phase images; a 1x1 kernel reads
    # one phase image alone, a quarter of the input, which the flat tiles do faster
    if kh * kw > 1 and conv_broadcast.fits(c, o, out.shape[2] * out.shape[3]):
        conv_broadcast.correlate(x, taps, bias, out, padding, stride=2)
        return
    images, stride, shifts, masks = _phase_reads(x, (kh, kw), padding)
    half_w = w // 2
    rows, vectors = direct._flat_shape(o)
    # the plan lists every tap in the kernel's own order: the stride-1 tiles' packing fits
    weights = np.empty((-(-o // rows), c, kh, kw, rows), np.float32)
    planes.pack_weights(taps, weights, False)
    shape = (n, c, h // 2, half_w)
    direct.flat_correlation(images.reshape(-1), shape, stride, weights, bias, masks, shifts, out,
                            vectors)  # fmt: skip


def correlate_transposed(grad, weight, out, padding):
    """out (N, C, H, W) = the input gradient of a stride-2 convolution with weight (O, C, kh,
    kw) and zero padding, for the output gradient grad (N, O, H/2, W/2)."""
    n, o, half_h, half_w = grad.shape
    c, kh, kw = weight.shape[1:]
    phases, plan = phase_plan((kh, kw), tuple(padding))
    if kh * kw > 1 and conv_broadcast.fits(o, c, half_h * half_w):  # (1x1: as the forward)
        _transposed_by_phases(grad, weight, out, phases, plan)
        return
    rows, vectors = direct._flat_shape(c)
    parts = np.empty((len(phases), n, c, half_h, half_w), np.float32)
    no_bias = np.empty(0, np.float32)
    spaced, stride = planes.spaced_planes(grad)
    for p in range(len(phases)):
        mine = [tap for tap in plan if tap[2] == p]
        # phase image p at (h, w) reads the output gradient at (h - d_h, w - d_w)
        shifts = np.array([-dh * half_w - dw for *_, dh, dw in mine], np.int64)
        masks = _shift_masks(half_h, half_w, tuple((-dh, -dw) for *_, dh, dw in mine))
        weights = np.empty((-(-c // rows), o, len(mine), rows), np.float32)
        tap_rows = np.array([tap[0] for tap in mine], np.int64)
        tap_columns = np.array([tap[1] for tap in mine], np.int64)
        _pack_transposed(weight, tap_rows, tap_columns, weights)
        direct.flat_correlation(spaced, grad.shape, stride, weights, no_bias, masks, shifts,
                                parts[p], vectors)  # fmt: skip
    _weave(parts, direct.phase_index(phases), out)
