"""Compiled twins of the depthwise convolution (one input channel per group, as ``avg_pool2d``
runs it): the forward, the input gradient and the weight gradient, one plane (or one output
channel) per task on numba's threads. The NumPy references are in ``accel/convolution.py``:
``depthwise_correlate`` (whole-array multiply-adds per tap over the windows view of a padded
copy), ``depthwise_input_grad`` (a contraction, then col2im) and ``depthwise_weight_grad`` (a
contraction over the windows view).

x (N, C, H, W), weight (O, 1, kh, kw) with O a multiple of C, bias (O,) or shape (0,), grad and
out (N, O, Ho, Wo): float32, C-contiguous.

Each image plane is copied once, zero-padded, into sh * sw phase planes (stride (sh, sw)): phase
(r, s) holds the padded pixels (u * sh + r, v * sw + s) at (u, v), in rows of Wq = ceil(Wp /
sw) (Wp = W + 2 pw). Output (i, j) sits at i * Wq + j of a grid of the same width, and tap (a,
b) reads phase (a dh mod sh, b dw mod sw) at the grid position plus one fixed shift, (a dh div
sh) * Wq + (b dw div sw). So each tap is one long loop over Ho * Wq contiguous values that
vectorises whole; the Wq - Wo columns of each grid row past the outputs are computed and
dropped (their reads run past a phase's last row by at most (kw - 1) dw div sw values, which
each phase keeps as a margin). At stride 1 the one phase is the padded plane itself.

The forward sums its taps in the reference's order (row by row of the kernel), then adds the
bias: the same float32 operations, the same bits. The gradients sum in other orders.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64


@njit(inline="always")
def _geometry(height, width, ho, wo, kh, kw, stride, padding, dilation):
    """(hq, wq, phase, length): the phase planes' rows and row length, the values one phase
    takes with its margin, and the grid's Ho * Wq positions."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    # the padded image as far as the windows reach (beyond H + 2 ph where a stride's phases
    # round up)
    hp = max(height + 2 * ph, (ho - 1) * sh + (kh - 1) * dh + 1)
    wp = max(width + 2 * pw, (wo - 1) * sw + (kw - 1) * dw + 1)
    hq, wq = -(-hp // sh), -(-wp // sw)
    return hq, wq, hq * wq + (kw - 1) * dw // sw, ho * wq


@njit(inline="always")
def _tap(a, b, stride, dilation, wq, phase):
    """Where tap (a, b) reads: the start of its phase plane plus its shift on the grid."""
    (sh, sw), (dh, dw) = stride, dilation
    rows, columns = a * dh, b * dw
    plane = (rows % sh) * sw + columns % sw
    return uint64(plane * phase + (rows // sh) * wq + columns // sw)


@njit(inline="always")
def _columns(r, sw, pw, width, wq):
    """The columns [low, high) of phase column r whose padded pixels are in the image."""
    low = max(0, -(-(pw - r) // sw))
    return low, max(low, min(wq, -(-(width + pw - r) // sw)))


@njit(inline="always", boundscheck=False)
def _split(source, start, height, width, planes, stride, padding, wq, phase):
    """The (H, W) plane of ``source`` (flat) at ``start`` into the phase planes' pixels; the
    padding's places are left as they are (zeros). Phase by phase and row by row: each row a
    loop of strided reads and contiguous writes, with no division per pixel."""
    (sh, sw), (ph, pw) = stride, padding
    for r in range(sh):
        for s in range(sw):
            plane = uint64((r * sw + s) * phase)
            low, high = _columns(s, sw, pw, width, wq)
            for u in range(phase // wq):
                row = u * sh + r - ph
                if row < 0 or row >= height:
                    continue
                at, line = plane + uint64(u * wq), uint64(start + row * width + s - pw)
                for v in range(low, high):
                    planes[at + uint64(v)] = source[line + uint64(v * sw)]


@njit(inline="always", boundscheck=False)
def _join(planes, target, start, height, width, stride, padding, wq, phase):
    """``_split`` backwards: the image's pixels of the phase planes into ``target`` (flat) at
    ``start``, the padding's places dropped."""
    (sh, sw), (ph, pw) = stride, padding
    for r in range(sh):
        for s in range(sw):
            plane = uint64((r * sw + s) * phase)
            low, high = _columns(s, sw, pw, width, wq)
            for u in range(phase // wq):
                row = u * sh + r - ph
                if row < 0 or row >= height:
                    continue
                at, line = plane + uint64(u * wq), uint64(start + row * width + s - pw)
                for v in range(low, high):
                    target[line + uint64(v * sw)] = planes[at + uint64(v)]


@njit(inline="always", boundscheck=False)
def _spread(source, start, ho, wo, grid, wq):
    """The (Ho, Wo) plane of ``source`` at ``start`` into the first Wo columns of ``grid``'s
    rows of Wq; the other columns stay as they are (zeros)."""
    for i in range(ho):
        at, line = uint64(i * wq), uint64(start + i * wo)
        for j in range(wo):
            grid[at + uint64(j)] = source[line + uint64(j)]


# ----- forward ------------------------------------------------------------------------------------


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def correlate(x, weight, bias, out, stride, padding, dilation):
    """out[n, o, i, j] = sum over (a, b) of weight[o, 0, a, b] * x[n, o // (O / C), i*sh + a*dh
    - ph, j*sw + b*dw - pw] (zero outside the image), plus bias[o]. One (sample, output
    channel) per task."""
    n, c, height, width = x.shape
    o, _, kh, kw = weight.shape
    ho, wo = out.shape[2], out.shape[3]
    hq, wq, phase, length = _geometry(height, width, ho, wo, kh, kw, stride, padding, dilation)
    per_group = o // c
    source, taps, target = x.reshape(-1), weight.reshape(-1), out.reshape(-1)
    for task in prange(n * o):
        sample, channel = task // o, task % o
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        start = (sample * c + channel // per_group) * height * width
        _split(source, start, height, width, planes, stride, padding, wq, phase)
        sums = np.zeros(length, np.float32)
        for a in range(kh):
            for b in range(kw):
                tap = taps[channel * kh * kw + a * kw + b]
                at = _tap(a, b, stride, dilation, wq, phase)
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
    hq, wq, phase, length = _geometry(height, width, ho, wo, kh, kw, stride, padding, dilation)
    per_group = o // c
    source, taps, target = grad.reshape(-1), weight.reshape(-1), out.reshape(-1)
    for task in prange(n * c):
        sample, channel = task // c, task % c
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread = np.zeros(length, np.float32)
        for m in range(per_group):
            oc = channel * per_group + m
            _spread(source, (sample * o + oc) * ho * wo, ho, wo, spread, wq)
            for a in range(kh):
                for b in range(kw):
                    tap = taps[oc * kh * kw + a * kw + b]
                    at = _tap(a, b, stride, dilation, wq, phase)
                    for q in range(length):  # the grid's dropped columns add zeros
                        planes[at + uint64(q)] += tap * spread[uint64(q)]
        _join(planes, target, task * height * width, height, width, stride, padding, wq, phase)


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
    hq, wq, phase, length = _geometry(height, width, ho, wo, kh, kw, stride, padding, dilation)
    per_group = o // c
    source, gradient, target = x.reshape(-1), grad.reshape(-1), out.reshape(-1)
    for oc in prange(o):
        channel = oc // per_group
        totals = np.zeros(kh * kw, np.float64)
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread = np.zeros(length, np.float32)
        for sample in range(n):
            start = (sample * c + channel) * height * width
            _split(source, start, height, width, planes, stride, padding, wq, phase)
            _spread(gradient, (sample * o + oc) * ho * wo, ho, wo, spread, wq)
            for a in range(kh):
                for b in range(kw):
                    at = _tap(a, b, stride, dilation, wq, phase)
                    totals[a * kw + b] += _shifted_dot(spread, planes, at, length)
        for tap in range(kh * kw):
            target[oc * kh * kw + tap] = np.float32(totals[tap])
