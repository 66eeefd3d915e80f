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
Taps go three to a loop (``_three_taps``): each pass reads and writes its partial sums once for
three taps instead of once for each.

The forward sums its taps in the reference's order (row by row of the kernel), then adds the
bias: the same float32 operations, the same bits. The input gradient adds each phase plane's
taps in that order too, gathered (``_gathered_taps``); the weight gradient sums in other orders.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange, uint64

from . import phase_planes

# The tasks run in at most this many ranges, each with its buffers allocated once (the padding's
# places of the phase planes stay zero from task to task: no task writes them). A fixed count,
# not one per thread: numba's thread count in a kernel keeps it out of the on-disk cache.
RANGES = 64

# ----- taps, three to a loop ----------------------------------------------------------------------


@njit(inline="always", boundscheck=False)
def _three_taps(sums, at, source, t0, s0, t1, s1, t2, s2, length):
    """sums[at + q] += t0 * source[s0 + q], then t1 * source[s1 + q], then t2 * source[s2 + q],
    for q < length: one pass over the sums for three taps, each added in its order."""
    for q in range(length):
        total = sums[at + uint64(q)]
        total += t0 * source[s0 + uint64(q)]
        total += t1 * source[s1 + uint64(q)]
        total += t2 * source[s2 + uint64(q)]
        sums[at + uint64(q)] = total


@njit(inline="always", boundscheck=False)
def _two_taps(sums, at, source, t0, s0, t1, s1, length):
    """``_three_taps`` for two taps."""
    for q in range(length):
        total = sums[at + uint64(q)]
        total += t0 * source[s0 + uint64(q)]
        total += t1 * source[s1 + uint64(q)]
        sums[at + uint64(q)] = total


@njit(inline="always", boundscheck=False)
def _one_tap(sums, at, source, t0, s0, length):
    """``_three_taps`` for one tap."""
    for q in range(length):
        sums[at + uint64(q)] += t0 * source[s0 + uint64(q)]


@njit(inline="always", boundscheck=False)
def _add_taps(sums, at, source, weights, starts, count, length):
    """For k < count in order: sums[at + q] += weights[k] * source[starts[k] + q], q < length,
    three taps to a pass."""
    for k in range(0, count, 3):
        left = count - k
        if left >= 3:
            _three_taps(sums, at, source, weights[k], starts[k], weights[k + 1], starts[k + 1],
                        weights[k + 2], starts[k + 2], length)  # fmt: skip
        elif left == 2:
            _two_taps(
                sums, at, source, weights[k], starts[k], weights[k + 1], starts[k + 1], length
            )
        else:
            _one_tap(sums, at, source, weights[k], starts[k], length)


@njit(inline="always")
def _tap_starts(kh, kw, stride, dilation, wq, phase):
    """Where each tap (a, b), row by row, reads the phase planes (``phase_planes.tap``)."""
    starts = np.empty(kh * kw, np.uint64)
    for k in range(kh * kw):
        starts[k] = phase_planes.tap(k // kw, k % kw, stride, dilation, wq, phase)
    return starts


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
    per_group, count = o // c, kh * kw
    starts = _tap_starts(kh, kw, stride, dilation, wq, phase)
    source, taps, target = x.reshape(-1), weight.reshape(-1), out.reshape(-1)
    tasks = n * o
    ranges = min(tasks, RANGES)
    for part in prange(ranges):
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        sums = np.empty(length, np.float32)
        for task in range(part * tasks // ranges, (part + 1) * tasks // ranges):
            sample, channel = task // o, task % o
            start = (sample * c + channel // per_group) * height * width
            phase_planes.split(source, start, height, width, planes, stride, padding, wq, phase)
            sums[:] = 0
            _add_taps(sums, uint64(0), planes, taps[channel * count :], starts, count, length)
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


@njit(inline="always")
def _taps_by_plane(starts, planes, phase):
    """The taps in order of their phase plane, row by row within each ((count,) indices), and
    where each plane's taps begin in it ((planes + 1,) bounds)."""
    order = np.argsort(starts // uint64(phase), kind="mergesort")  # stable: row by row kept
    bounds = np.zeros(planes + 1, np.int64)
    for k in range(starts.size):
        bounds[starts[k] // uint64(phase) + uint64(1)] += 1
    for plane in range(planes):
        bounds[plane + 1] += bounds[plane]
    return order, bounds


@njit(inline="always")
def _gathered_taps(taps, out_channels, starts, order, phase, front):
    """Each output channel's tap weights in ``order`` ((O, count)), and where each tap, in that
    order, reads the gradient grid ((count,)): value p of its plane takes grid value p - shift
    (its shift within the plane), at front + p - shift in a grid whose values start at
    ``front``."""
    count = starts.size
    weights = np.empty((out_channels, count), np.float32)
    reads = np.empty(count, np.uint64)
    for k in range(count):
        tap = order[k]
        reads[k] = uint64(front) - starts[tap] % uint64(phase)
        for oc in range(out_channels):
            weights[oc, k] = taps[oc * count + tap]
    return weights, reads


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
    per_group, count, phases = o // c, kh * kw, stride[0] * stride[1]
    starts = _tap_starts(kh, kw, stride, dilation, wq, phase)
    order, bounds = _taps_by_plane(starts, phases, phase)
    front = 0  # the largest shift of a tap within its plane: the grid's leading zeros
    for k in range(count):
        front = max(front, np.int64(starts[k] % uint64(phase)))
    source, target = grad.reshape(-1), out.reshape(-1)
    weights, reads = _gathered_taps(weight.reshape(-1), o, starts, order, phase, front)
    tasks = n * c
    ranges = min(tasks, RANGES)
    for part in prange(ranges):
        planes = np.empty(phases * phase, np.float32)
        # zeros outside the gradient's values, which every task writes at the same places
        grid = np.zeros(front + phase, np.float32)  # (length <= phase: the grid fits)
        for task in range(part * tasks // ranges, (part + 1) * tasks // ranges):
            sample, channel = task // c, task % c
            planes[:] = 0
            for m in range(per_group):
                oc = channel * per_group + m
                phase_planes.spread(source, (sample * o + oc) * ho * wo, ho, wo, grid[front:], wq)
                # each phase plane += its taps (in order) times the grid shifted to where
                # each reads: the scatter of the grid through the taps, written as a gather
                for plane in range(phases):
                    low, high = bounds[plane], bounds[plane + 1]
                    _add_taps(planes, uint64(plane * phase), grid, weights[oc, low:high],
                              reads[low:high], high - low, phase)  # fmt: skip
            phase_planes.join(
                planes, target, task * height * width, height, width, stride, padding, wq, phase
            )


# ----- the weight gradient ------------------------------------------------------------------------


@njit(nogil=True, boundscheck=False, cache=True, fastmath={"reassoc", "contract"})
def _shifted_dots(grid, planes, s0, s1, s2, length):
    """The float32 sums of grid[q] * planes[s + q] for q < length and s = s0, s1, s2, in one
    pass, in vector lanes (reassociated)."""
    total0 = total1 = total2 = np.float32(0.0)
    for q in range(length):
        value = grid[uint64(q)]
        total0 += value * planes[s0 + uint64(q)]
        total1 += value * planes[s1 + uint64(q)]
        total2 += value * planes[s2 + uint64(q)]
    return total0, total1, total2


@njit(parallel=True, nogil=True, boundscheck=False, cache=True)
def depthwise_weight_grad(x, grad, out, stride, padding, dilation):
    """out[o, 0, a, b] = the sum over the samples and the outputs (i, j) of grad[n, o, i, j] *
    x[n, o // (O / C), i*sh + a*dh - ph, j*sw + b*dw - pw] (zero outside the image). One output
    channel per task, so its sums do not depend on the thread count: per sample and tap a
    float32 dot product in vector lanes (three taps to a pass), added up over the samples in
    float64."""
    n, c, height, width = x.shape
    o, ho, wo = grad.shape[1], grad.shape[2], grad.shape[3]
    kh, kw = out.shape[2], out.shape[3]
    wq, phase, length = phase_planes.geometry(
        height, width, ho, wo, kh, kw, stride, padding, dilation
    )
    per_group, count = o // c, kh * kw
    starts = _tap_starts(kh, kw, stride, dilation, wq, phase)
    source, gradient, target = x.reshape(-1), grad.reshape(-1), out.reshape(-1)
    for oc in prange(o):
        channel = oc // per_group
        totals = np.zeros(count, np.float64)
        planes = np.zeros(stride[0] * stride[1] * phase, np.float32)
        spread = np.zeros(length, np.float32)
        for sample in range(n):
            start = (sample * c + channel) * height * width
            phase_planes.split(source, start, height, width, planes, stride, padding, wq, phase)
            phase_planes.spread(gradient, (sample * o + oc) * ho * wo, ho, wo, spread, wq)
            for k in range(0, count, 3):  # a missing third (or second) tap repeats the last
                last = count - 1
                sums = _shifted_dots(spread, planes, starts[k], starts[min(k + 1, last)],
                                     starts[min(k + 2, last)], length)  # fmt: skip
                for j in range(min(3, count - k)):
                    totals[k + j] += sums[j]
        for tap in range(count):
            target[oc * count + tap] = np.float32(totals[tap])
