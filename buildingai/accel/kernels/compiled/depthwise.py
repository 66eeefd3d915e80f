"""Compiled twins of the depthwise convolution (one input channel per group, as ``avg_pool2d``
runs it): the forward, the input gradient and the weight gradient, one plane (or one output
channel) per task on numba's threads. The NumPy references are in ``accel/convolution.py``:
``depthwise_correlate`` (whole-array multiply-adds per tap over the windows view of a padded
copy), ``depthwise_input_grad`` (a contraction, then col2im) and ``depthwise_weight_grad`` (a
contraction over the windows view).

x (N, C, H, W), weight (O, 1, kh, kw) with O a multiple of C, bias (O,) or shape (0,), grad and
out (N, O, Ho, Wo): float32, C-contiguous.

Each image plane is copied once, zero-padded, into the phase planes of ``phase_planes.py``,
where each tap is one long loop over the output grid's contiguous values that vectorises whole.

The forward sums its taps in the reference's order (row by row of the kernel), then adds the
bias: the same float32 operations, the same bits. The gradients sum in other orders.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from . import phase_planes

# ----- forward ------------------------------------------------------------------------------------


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def correlate(x, weight, bias, out, stride, padding, dilation):
    """out[n, o, i, j] = sum over (a, b) of weight[o, 0, a, b] * x[n, o // (O / C), i*sh + a*dh
    - ph, j*sw + b*dw - pw] (zero outside the image), plus bias[o]. One (sample, output
    channel) per task."""
    n, c, height, width = x.shape
    o, _, kh, kw = weight.shape
    ho, wo = out.shape[2], out.shape[3]
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    per_group = o // c
    source, taps, target = x.reshape(-1), weight.reshape(-1), out.reshape(-1)
    for task in prange(n * o):
        sample, channel = task // o, task % o
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        start = (sample * c + channel // per_group) * height * width
        phase_planes.split(source, start, height, width, planes, stride, padding, wq, phase)
        sums = np.zeros(length, np.float32)
        for a in range(kh):
            for b in range(kw):
                tap = taps[channel * kh * kw + a * kw + b]
                at = phase_planes.tap(a, b, stride, dilation, wq, phase)
                for q in range(length):
                    sums[uint64(q)] += tap * planes[at + uint64(q)]
        shift = bias[channel] if bias.size else np.float32(0.0)
        for i in range(ho):
            row, line = uint64((task * ho + i) * wo), uint64(i * wq)
            if bias.size:
                for j in range(wo):
                    target[row + uint64(j)] = sums[line + uint64(j)] + shift
            else:
                for j in range(wo):
                    target[row + uint64(j)] = sums[line + uint64(j)]


# ----- the input gradient -------------------------------------------------------------------------


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def depthwise_input_grad(grad, weight, out, stride, padding, dilation):
    """out[n, c] = the sum over the output channels o of group c, over the taps (a, b) and the
    outputs (i, j), of weight[o, 0, a, b] * grad[n, o, i, j], added at x's pixel (i*sh + a*dh -
    ph, j*sw + b*dw - pw) where it is inside the image. One (sample, input channel) per task:
    its gradient is summed in zero phase planes of the padded image, then cut out of them."""
    n, o, ho, wo = grad.shape
    c, height, width = out.shape[1], out.shape[2], out.shape[3]
    kh, kw = weight.shape[2], weight.shape[3]
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    per_group = o // c
    source, taps, target = grad.reshape(-1), weight.reshape(-1), out.reshape(-1)
    for task in prange(n * c):
        sample, channel = task // c, task % c
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread = np.zeros(length, np.float32)
        for m in range(per_group):
            oc = channel * per_group + m
            phase_planes.spread(source, (sample * o + oc) * ho * wo, ho, wo, spread, wq)
            for a in range(kh):
                for b in range(kw):
                    tap = taps[oc * kh * kw + a * kw + b]
                    at = phase_planes.tap(a, b, stride, dilation, wq, phase)
                    for q in range(length):  # the grid's dropped columns add zeros
                        planes[at + uint64(q)] += tap * spread[uint64(q)]
        phase_planes.join(
            planes, target, task * height * width, height, width, stride, padding, wq, phase
        )


# ----- the weight gradient ------------------------------------------------------------------------


@njit(nogil=True, boundscheck=False, cache=True, fastmath={"reassoc", "contract"})
def _shifted_dot(grid, planes, at, length):
    """The float32 sum of grid[q] * planes[at + q] for q < length, in vector lanes
    (reassociated)."""
    total = np.float32(0.0)
    for q in range(length):
        total += grid[uint64(q)] * planes[at + uint64(q)]
    return total


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def depthwise_weight_grad(x, grad, out, stride, padding, dilation):
    """out[o, 0, a, b] = the sum over the samples and the outputs (i, j) of grad[n, o, i, j] *
    x[n, o // (O / C), i*sh + a*dh - ph, j*sw + b*dw - pw] (zero outside the image). One output
    channel per task, so its sums do not depend on the thread count: per sample and tap a
    float32 dot product in vector lanes, added up over the samples in float64."""
    n, c, height, width = x.shape
    o, ho, wo = grad.shape[1], grad.shape[2], grad.shape[3]
    kh, kw = out.shape[2], out.shape[3]
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    per_group = o // c
    source, gradient, target = x.reshape(-1), grad.reshape(-1), out.reshape(-1)
    for oc in prange(o):
        channel = oc // per_group
        totals = np.zeros(kh * kw, np.float64)
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread = np.zeros(length, np.float32)
        for sample in range(n):
            start = (sample * c + channel) * height * width
            phase_planes.split(source, start, height, width, planes, stride, padding, wq, phase)
            phase_planes.spread(gradient, (sample * o + oc) * ho * wo, ho, wo, spread, wq)
            for a in range(kh):
                for b in range(kw):
                    at = phase_planes.tap(a, b, stride, dilation, wq, phase)
                    totals[a * kw + b] += _shifted_dot(spread, planes, at, length)
        for tap in range(kh * kw):
            target[oc * kh * kw + tap] = np.float32(totals[tap])
