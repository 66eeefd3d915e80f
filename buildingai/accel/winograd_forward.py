"""The forward and the input gradient of a 3x3 stride-1 convolution by Winograd's F(2x2, 3x3),
registered beside the direct twins as ``conv2d.winograd`` and ``conv2d_input_grad.winograd``
(``convolution.py``), where the register tiles have AVX2's 8 lanes.

With the constant matrices of ``winograd.py`` (B, G, and A: (4, 2)), output tile (n, t, s) of
filter k, 2x2, is ``A^T [sum over c of U[k, c] * V[c, n, t, s]] A`` with ``U = G w G^T`` the
filter's 4x4 transform and ``V = B^T d B`` that of the 4x4 input tile the outputs read. The sum
over channels is 16 products (K, C) @ (C, P) over the P tiles: 16 K C P multiply-adds where the
direct twin takes 36 K C P. The input gradient is the forward of the output gradient with the
filters turned (input and output channels swapped, each kernel turned half a circle).

Where it runs, and why there only (docs/design_notes/performance.md has the measurements):

- With 8-lane tiles the direct twin runs a 64-channel layer at about 60 GFLOP/s; this path,
  in passes of a few samples whose planes stay in cache, takes about a third less time on
  ResNet-18's first stage (64 channels at 32x32). Fewer channels or tiles leave too little
  product for the transforms' cost. With AVX-512's tiles the direct twin was as fast.
- Each product sums ``C`` transformed terms, larger than the result they make: the float32 error
  grows with the channels summed, 1.2 times PyTorch's at 64, 1.6 at 128, 2.3 at 256. So the
  summed channels (the input's for the forward, the filters' for the input gradient) are at
  most ``MOST_SUMMED`` (64), inside the 1.5 times allowed
  (``tests/accel/test_conv_winograd_forward.py``).

``filter_tiles`` and ``output_tiles`` are the NumPy references (the latter of the compiled twin
in ``kernels/compiled/winograd.py``); the input transform is the weight gradient's.
"""

from __future__ import annotations

import numpy as np

from ..ops import conv
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .products import matmul_array as product
from .winograd import G, computes, input_tiles, planes_buffer, run_transform

# Where the path pays over the direct twin (docs/design_notes/performance.md has the
# measurements): at least LEAST_CHANNELS channels and filters (32 took longer than the direct
# twin) and LEAST_TILES tiles (on fewer, the direct twin's channel-vector tiles are as fast,
# and faster at two threads). At most MOST_SUMMED channels summed by a product: its float32
# error grows with them.
LEAST_CHANNELS = 64
LEAST_TILES = 4096
MOST_SUMMED = 64
# Samples go in passes of about this many tiles: the transformed planes of a pass (16 per
# channel and per filter, one value per tile) then stay in cache between the transforms and the
# products, where one pass of a whole batch would not.
PASS_TILES = 512


def filter_tiles(xp, weight):
    """U (16, K, C): ``G w G^T`` (4x4) of each filter w = weight[k, c] (K, C, 3, 3), its 16
    values as 16 planes."""
    down = xp.tensordot(G, weight, axes=([1], [2]))  # (4, K, C, 3): G w
    both = xp.tensordot(down, G, axes=([3], [1]))  # (4, K, C, 4): G w G^T
    return xp.ascontiguousarray(both.transpose(0, 3, 1, 2)).reshape(16, *weight.shape[:2])


@compiled_twin("winograd.output_tiles")
def output_tiles(xp, sums, bias, out) -> None:
    """out (N, K, 2T, 2S) = A^T m A of each tile's 4x4 sums m, plus bias (K,) where it has any
    values; sums (16, K, N*T*S), the tiles in (n, t, s) order. A^T's rows: (1, 1, 1, 0),
    (0, 1, -1, -1)."""
    n, k, ho, wo = out.shape
    m = sums.reshape(4, 4, k, n, ho // 2, wo // 2)
    for i, row in enumerate(_a_transposed(*m)):  # A^T down each column, then along rows
        for j, plane in enumerate(_a_transposed(*row)):  # (K, N, T, S)
            values = plane.transpose(1, 0, 2, 3)
            out[:, :, i::2, j::2] = values + bias[:, None, None] if bias.size else values


def _a_transposed(m0, m1, m2, m3):
    """A^T (m0, m1, m2, m3): the two rows of A^T m for the rows m0..m3 of m."""
    return m0 + m1 + m2, m1 - m2 - m3


def forward(x, weight, bias, padding):
    """out (N, K, Ho, Wo) = x (N, C, H, W) correlated with weight (K, C, 3, 3) at stride 1 with
    zero padding (ph, pw), plus bias (K,) (size 0: none); Ho and Wo even."""
    n, channels, height, width = x.shape
    filters = weight.shape[0]
    ho, wo = height + 2 * padding[0] - 2, width + 2 * padding[1] - 2
    per_sample = (ho // 2) * (wo // 2)
    samples = min(n, max(1, PASS_TILES // per_sample))
    transformed = filter_tiles(np, weight)
    inputs = planes_buffer(channels * samples * per_sample)
    out = np.empty((n, filters, ho, wo), np.float32)
    for first in range(0, n, samples):
        part = slice(first, min(n, first + samples))
        tiles = (part.stop - part.start) * per_sample
        run_transform(input_tiles, (x[part], inputs), {"ph": padding[0], "pw": padding[1]})
        planes = inputs[:, : channels * tiles].reshape(16, channels, tiles)
        sums = product(np, transformed, planes)  # (16, K, tiles)
        run_transform(output_tiles, (sums, bias, out[part]))
    return out


def _fits(xp, x, weight_shape, summed, stride, padding, dilation, groups, out_hw) -> bool:
    """What F(2x2, 3x3) computes (``winograd.computes``), on enough tiles, channels and filters
    where the path pays, at most ``MOST_SUMMED`` summed, with the compiled transforms running
    on 8-lane tiles."""
    ho, wo = out_hw
    return (
        computes(xp, x, weight_shape[2:], stride, padding, dilation, groups, out_hw)
        and min(weight_shape[:2]) >= LEAST_CHANNELS
        and summed <= MOST_SUMMED
        and x.shape[0] * (ho // 2) * (wo // 2) >= LEAST_TILES
        and compiled.vector_lanes() == 8
    )


def forward_fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups) -> bool:
    out_hw = conv.output_hw(x.shape[2:], weight.shape[2:], stride, padding, dilation)
    return _fits(xp, x, weight.shape, x.shape[1], stride, padding, dilation, groups, out_hw)


def registered_forward(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    """``conv2d`` by ``forward``: what ``forward_fits`` admits."""
    bias = np.empty(0, np.float32) if bias is None else bias.astype(np.float32, copy=False)
    return forward(np.ascontiguousarray(x), weight, bias, tuple(padding))


def _turned_padding(padding) -> tuple:
    """The padding of the input gradient as a correlation with the turned 3x3 filters."""
    return (2 - padding[0], 2 - padding[1])


def input_grad_fits(xp, grad, weight, *, input_size, stride, padding, dilation, groups) -> bool:
    full_hw = conv.output_hw(input_size, weight.shape[2:], stride, padding, dilation)
    return (
        full_hw == tuple(grad.shape[2:])
        and max(padding) <= 2
        and _fits(
            xp,
            grad,
            weight.shape,
            grad.shape[1],
            stride,
            _turned_padding(padding),
            dilation,
            groups,
            tuple(input_size),
        )  # fmt: skip
    )


def registered_input_grad(ctx, xp, grad, weight, *, input_size, stride, padding, dilation, groups):
    """``conv2d_input_grad`` by ``forward`` on the output gradient with the turned filters."""
    turned = weight[:, :, ::-1, ::-1].transpose(1, 0, 2, 3)  # (C, K, 3, 3)
    empty = np.empty(0, np.float32)
    return forward(np.ascontiguousarray(grad), turned, empty, _turned_padding(padding))
