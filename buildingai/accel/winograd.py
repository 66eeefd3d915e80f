"""The weight gradient of a 3x3 stride-1 convolution by Winograd's minimal filtering
F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2016),
registered beside the record's im2col as ``conv2d_weight_grad.winograd`` (``convolution.py``).

Cut the output into 2x2 tiles; tile (n, t, s) reads a 4x4 tile d of the input. With the
constant matrices B (4x4), G (4x3) and A (4x2) below, the forward of a tile is
``y = A^T [(G w G^T) * (B^T d B)] A`` (``*`` element by element), so the weight gradient is

    dw[k, c] = G^T [ sum over tiles of (A e_k A^T) * (B^T d_c B) ] G

with e_k the output gradient's 2x2 tile of filter k and d_c the input's tile of channel c. The
sum over P = N * Ho/2 * Wo/2 tiles of the 16 transformed planes is 16 products (K, P) @ (P, C):
16 * K * C * P multiply-adds, where im2col's product takes 9 * K * C * 4P, 2.25 times as many.
The transforms are linear passes over the input, the output gradient and the result.

Only the weight gradient takes this path. A forward or input gradient by F(2x2, 3x3) has about
2.4 times PyTorch's float32 error against float64 (measured on ResNet-18's 256- and 512-channel
layers), over the 1.5 times the kernels may have: the products sum transformed terms larger
than the result, in long float32 sums. At 64 channels the error is within bounds (1.2 times),
but the transforms, four values per output, cost what the smaller product saves, and the direct
twins are as fast (docs/design_notes/performance.md). The weight gradient's sums over positions
are long either way, and its error stays within PyTorch's (``tests/accel/test_conv_winograd.py``).

``input_tiles``, ``grad_tiles`` and ``filter_grad`` are the NumPy references of the compiled
twins in ``kernels/compiled/winograd.py``.
"""

from __future__ import annotations

import math

import numpy as np

from ..backend.precision import gemm_result_dtype
from ..backend.threads import get_num_threads
from ..ops import conv
from .kernels import compiled
from .kernels.compiled import compiled_twin
from .products import matmul_array as product

# Where this path pays (docs/design_notes/performance.md has the measurements): at least
# LEAST_CHANNELS channels and filters with AVX-512's 16-lane tiles, LEAST_CHANNELS_AVX2 with
# AVX2's 8 lanes, at any image size (fewer: the direct twin, or im2col, is as fast or faster),
# and at least LEAST_TILES tiles in all (fewer: the transforms cost more than the product saves).
LEAST_CHANNELS = 64
LEAST_CHANNELS_AVX2 = 16
# On one thread with AVX-512 it pays from LEAST_CHANNELS_ONE_THREAD channels where the filters
# are at least LEAST_CHANNELS (on two, the direct twin's weight gradient keeps up there)
LEAST_CHANNELS_ONE_THREAD = 32
LEAST_TILES = 64
# Samples are taken in passes whose transformed planes (16 per input channel and per filter,
# each one value per tile) take at most PASS_BYTES, so that they stay in cache for the product,
# unless that leaves a pass fewer than PASS_TILES tiles (the products get too short to run
# fast); each pass's sums are added to the total.
PASS_BYTES = 4 << 20
PASS_TILES = 256
# G (4x3): the filter transform.
G = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], np.float32)


@compiled_twin("winograd.input_tiles", params=("ph", "pw"))
def input_tiles(xp, x, out, *, ph, pw) -> None:
    """out[:, :C*N*T*S] as (16, C, N, T, S) = B^T d B of each 4x4 input tile d of x (N, C, H,
    W), tile (t, s) reading rows 2t - ph .. 2t + 3 - ph and columns 2s - pw .. 2s + 3 - pw
    (zero outside), T = (H + 2ph - 2) / 2 and S likewise, both whole (an even output)."""
    n, c, height, width = x.shape
    down, across = (height + 2 * ph - 2) // 2, (width + 2 * pw - 2) // 2
    out = _planes(out, (c, n, down, across))
    padded = xp.zeros((c, n, height + 2 * ph, width + 2 * pw), x.dtype)
    padded[:, :, ph : ph + height, pw : pw + width] = x.transpose(1, 0, 2, 3)
    rows = [padded[:, :, i : i + 2 * down : 2, :] for i in range(4)]  # row i of every tile
    for i, line in enumerate(_b_transposed(*rows)):  # B^T down each column, then along rows
        columns = [line[..., j : j + 2 * across : 2] for j in range(4)]
        for j, plane in enumerate(_b_transposed(*columns)):
            out[4 * i + j] = plane


def _b_transposed(d0, d1, d2, d3):
    """B^T (d0, d1, d2, d3): the four rows of B^T d for the rows d0..d3 of d."""
    return d0 - d2, d1 + d2, d2 - d1, d1 - d3


@compiled_twin("winograd.grad_tiles")
def grad_tiles(xp, grad, out) -> None:
    """out[:, :K*N*T*S] as (16, K, N, T, S) = A e A^T of each 2x2 tile e of grad (N, K, 2T,
    2S)."""
    n, k, ho, wo = grad.shape
    out = _planes(out, (k, n, ho // 2, wo // 2))
    by_channel = grad.transpose(1, 0, 2, 3)
    top, bottom = by_channel[:, :, 0::2, :], by_channel[:, :, 1::2, :]
    for i, line in enumerate(_a_times(top, bottom)):  # A down each column, then along rows
        for j, plane in enumerate(_a_times(line[..., 0::2], line[..., 1::2])):
            out[4 * i + j] = plane


def _a_times(e0, e1):
    """A (e0, e1): the four rows of A e for the rows e0, e1 of e."""
    return e0, e0 + e1, e0 - e1, -e1


@compiled_twin("winograd.filter_grad")
def filter_grad(xp, sums, out) -> None:
    """out (K, C, 3, 3) = G^T m G for each (k, c), m (4, 4) the sums (16, K, C) of (k, c)."""
    k, c = sums.shape[1:]
    m = sums.reshape(4, 4, k, c)
    out[...] = xp.einsum("ia,ijkc,jb->kcab", G, m, G)


def _planes(buffer, shape):
    """The 16 planes of ``shape`` at the start of the rows of ``buffer`` (16, stride): a view."""
    return buffer[:, : math.prod(shape)].reshape((16,) + tuple(shape))


def planes_buffer(size: int):
    """A (16, stride) float32 buffer for 16 planes of ``size`` values: the stride is ``size``
    rounded up to 16 values (64 bytes), plus 16 more, so the planes do not start a power of two
    apart, where the transforms' sixteen write streams would share cache sets."""
    return np.empty((16, -(-size // 16) * 16 + 16), np.float32)


def run_transform(kernel, arrays, keywords=None) -> None:
    """``kernel`` on ``arrays``: by its compiled twin where it takes them, else in NumPy."""
    keywords = keywords or {}
    if not compiled.run(kernel, arrays, keywords):
        kernel(np, *arrays, **keywords)


def weight_grad(x, grad, padding):
    """The weight gradient (K, C, 3, 3) of a 3x3 stride-1 convolution of x (N, C, H, W) with
    zero padding (ph, pw), whose output gradient grad (N, K, Ho, Wo) has an even Ho and Wo."""
    n, channels = x.shape[:2]
    filters, ho, wo = grad.shape[1:]
    per_sample = (ho // 2) * (wo // 2)  # tiles
    most = max(PASS_BYTES // (64 * (channels + filters) * per_sample), -(-PASS_TILES // per_sample))
    samples = -(-n // -(-n // most))  # passes of equal size, as near as can be
    inputs = planes_buffer(channels * samples * per_sample)
    grads = planes_buffer(filters * samples * per_sample)
    sums = None
    for first in range(0, n, samples):
        part = slice(first, min(n, first + samples))
        tiles = (part.stop - part.start) * per_sample
        run_transform(input_tiles, (x[part], inputs), {"ph": padding[0], "pw": padding[1]})
        run_transform(grad_tiles, (grad[part], grads))
        # (16, K, P) @ (16, P, C): each plane's sum over the pass's tiles
        left = grads[:, : filters * tiles].reshape(16, filters, tiles)
        right = inputs[:, : channels * tiles].reshape(16, channels, tiles).swapaxes(1, 2)
        if sums is None:
            sums = product(np, left, right)
        else:
            sums += product(np, left, right)
    out = np.empty((filters, channels, 3, 3), np.float32)
    run_transform(filter_grad, (np.ascontiguousarray(sums), out))
    return out


def fits(xp, x, grad, *, weight_size, stride, padding, dilation, groups) -> bool:
    """float32 NumPy arrays, a 3x3 kernel at stride 1, undilated, one group, an even output,
    channels and tiles where the path pays (``channels_pay``, ``LEAST_TILES``), and the
    compiled transforms running (in NumPy they cost more than the product saves)."""
    ho, wo = grad.shape[2:]
    return (
        computes(xp, x, weight_size, stride, padding, dilation, groups, (ho, wo))
        and grad.dtype == np.float32
        and x.shape[0] * (ho // 2) * (wo // 2) >= LEAST_TILES
        and conv.output_hw(x.shape[2:], (3, 3), (1, 1), padding, (1, 1)) == (ho, wo)
        and compiled.available()
        and channels_pay(x.shape[1], grad.shape[1])
    )


def computes(xp, x, kernel, stride, padding, dilation, groups, out_hw) -> bool:
    """Whether F(2x2, 3x3) computes this convolution: a float32 NumPy input multiplied as
    stored (not where the math precision in force rounds it first, as the record's products
    do), a 3x3 kernel at stride 1, undilated, one group, zero padding, an even output (whole
    2x2 tiles)."""
    return (
        xp is np
        and x.dtype == np.float32
        and gemm_result_dtype(x, x) is None
        and tuple(kernel) == (3, 3)
        and tuple(stride) == (1, 1)
        and tuple(dilation) == (1, 1)
        and groups == 1
        and min(padding) >= 0
        and out_hw[0] % 2 == 0
        and out_hw[1] % 2 == 0
    )


def least_channels() -> int:
    """The fewest channels and filters this path takes on this CPU's vector width (asked once
    the compiled tier runs)."""
    return LEAST_CHANNELS_AVX2 if compiled.vector_lanes() == 8 else LEAST_CHANNELS


def channels_pay(channels: int, filters: int) -> bool:
    """Whether a layer of ``channels`` input channels and ``filters`` filters is wide enough
    for this path: both at least ``least_channels()``, or, at one thread, at least
    ``LEAST_CHANNELS_ONE_THREAD`` channels and ``LEAST_CHANNELS`` filters."""
    if min(channels, filters) >= least_channels():
        return True
    return (
        channels >= LEAST_CHANNELS_ONE_THREAD
        and filters >= LEAST_CHANNELS
        and get_num_threads() == 1
    )


def registered_weight_grad(ctx, xp, x, grad, *, weight_size, stride, padding, dilation, groups):
    """``conv2d_weight_grad`` by ``weight_grad``: what ``fits`` admits."""
    return weight_grad(np.ascontiguousarray(x), np.ascontiguousarray(grad), tuple(padding))
