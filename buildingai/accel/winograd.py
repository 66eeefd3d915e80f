"""Winograd's minimal filtering F(2x2, 3x3) for small float32 3x3 convolutions (``conv2d``).

Each 2x2 block of outputs is computed from the 4x4 input tile d under it as
``A^T [(G g G^T) * (B^T d B)] A``: 16 products per input and output channel pair instead of
the 36 of the direct sum, so the products (one batched matrix product over the 16 tile
positions, channels as the inner dimension) do 2.25 times fewer multiply-adds than im2col's.
The tile and output transforms are additions only. Lavin and Gray, "Fast Algorithms for
Convolutional Neural Networks" (2015), give the matrices below.

It pays where the convolution is one small product: a batch of one or a few images (inference
at batch 1), on which im2col's product runs far from the BLAS's peak and im2col's copy costs as
much again. The functions here are the NumPy references; ``input_tiles`` and ``output_tiles``
have compiled twins in ``kernels/compiled/winograd.py``, channels-last so that their loops run
on vectors of channels.
"""

from __future__ import annotations

import numpy as np

from ..ops import conv
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .products import matmul_array as product

# F(2x2, 3x3): out = A^T [(G g G^T) * (B^T d B)] A for a 4x4 tile d and a 3x3 filter g
B_T = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], np.float32)
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float32)
A_T = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], np.float32)
# G g G^T for every filter at once: the 16 tile positions from the 9 filter taps
FILTER_TRANSFORM = np.kron(G, G)  # (16, 9)

# Where it applies: at most this many 2x2 output blocks (all images together) and at least
# this many input and output channels, so that the 16 products are the work (measured in
# docs/design_notes/performance.md).
MAX_TILES = 256
MIN_CHANNELS = 16


def tiles_of(out_hw) -> tuple[int, int]:
    """The 2x2 output blocks along each axis that cover an output of size ``out_hw``."""
    return (out_hw[0] + 1) // 2, (out_hw[1] + 1) // 2


def channels_last_image(xp, x, padding, tiles):
    """x (N, C, H, W) channels-last inside zeros: (N, 2 * th + 2, 2 * tw + 2, C), x at offset
    ``padding``, so that every tile lies inside."""
    n, channels, height, width = x.shape
    image = xp.zeros((n, 2 * tiles[0] + 2, 2 * tiles[1] + 2, channels), x.dtype)
    image[:, padding[0] : padding[0] + height, padding[1] : padding[1] + width] = x.transpose(
        0, 2, 3, 1
    )
    return image


@compiled_twin("winograd.input_tiles")
def input_tiles(xp, image, out) -> None:
    """out (16, N * th * tw, C) = ``B^T d B`` of every 4x4 tile d (at stride 2) of the
    channels-last image (N, 2 * th + 2, 2 * tw + 2, C); position p = (n * th + i) * tw + j for
    the tile at row 2i, column 2j."""
    n, rows, columns, channels = image.shape
    th, tw = (rows - 2) // 2, (columns - 2) // 2
    sn, sh, sw, sc = image.strides
    shape, strides = (n, th, tw, 4, 4, channels), (sn, 2 * sh, 2 * sw, sh, sw, sc)
    tiles = xp.lib.stride_tricks.as_strided(image, shape, strides, writeable=False)
    transformed = xp.einsum("ai,nhwijc,bj->abnhwc", B_T, tiles, B_T)
    out[...] = transformed.reshape(16, n * th * tw, channels)


@compiled_twin("winograd.output_tiles")
def output_tiles(xp, products, bias, out) -> None:
    """out (N, O, Ho, Wo) = ``A^T m A`` of every tile's products m (the (16, N * th * tw, O) of
    ``input_tiles``' positions), plus bias (O,) where given."""
    n, out_channels, height, width = out.shape
    th, tw = tiles_of((height, width))
    blocks = products.reshape(4, 4, n, th, tw, out_channels)
    result = xp.einsum("ra,abnhwo,sb->nohrws", A_T, blocks, A_T)
    result = result.reshape(n, out_channels, 2 * th, 2 * tw)[:, :, :height, :width]
    if bias is not None:
        result = result + bias.reshape(out_channels, 1, 1)
    out[...] = result


def transformed_filters(xp, weight):
    """``G g G^T`` of every filter g of weight (O, C, 3, 3), as (16, C, O): one product."""
    out_channels, channels = weight.shape[:2]
    taps = weight.reshape(out_channels * channels, 9).T  # (9, O * C)
    filters = product(xp, xp.asarray(FILTER_TRANSFORM), taps)  # (16, O * C)
    return filters.reshape(16, out_channels, channels).transpose(0, 2, 1)


def fits(xp, x, weight, bias=None, *, stride, padding, dilation, groups) -> bool:
    """float32 NumPy arrays, a 3x3 kernel at stride 1 without dilation, one group, enough
    channels and few tiles."""
    if not (
        xp is np
        and x.dtype == weight.dtype == np.float32
        and tuple(weight.shape[2:]) == (3, 3)
        and tuple(stride) == tuple(dilation) == (1, 1)
        and groups == 1
        and min(x.shape[1], weight.shape[0]) >= MIN_CHANNELS
    ):
        return False
    out_hw = conv.output_hw(x.shape[2:], (3, 3), stride, padding, dilation)
    th, tw = tiles_of(out_hw)
    return min(out_hw) > 0 and x.shape[0] * th * tw <= MAX_TILES


def convolve(ctx, xp, x, weight, bias=None, *, stride, padding, dilation, groups):
    """``conv2d`` of x (N, C, H, W) with weight (O, C, 3, 3) by F(2x2, 3x3); NotImplemented
    where x or weight holds an inf or NaN: a transformed tile mixes its 16 inputs, so it would
    reach outputs whose windows do not hold it."""
    if not (np.isfinite(x.sum()) and np.isfinite(weight.sum())):
        return NotImplemented
    n, channels = x.shape[:2]
    out_channels = weight.shape[0]
    out_hw = conv.output_hw(x.shape[2:], (3, 3), stride, padding, dilation)
    th, tw = tiles_of(out_hw)
    image = channels_last_image(xp, x, padding, (th, tw))
    tiles = np.empty((16, n * th * tw, channels), np.float32)
    compiled.call(xp, input_tiles, (image, tiles))
    products = product(xp, tiles, transformed_filters(xp, weight))  # (16, tiles, O)
    out = np.empty((n, out_channels) + out_hw, np.float32)
    bias = None if bias is None else np.ascontiguousarray(bias, np.float32)
    compiled.call(xp, output_tiles, (np.ascontiguousarray(products), bias, out))
    return out
