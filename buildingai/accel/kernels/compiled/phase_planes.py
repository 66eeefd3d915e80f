"""Phase planes: a padded image plane laid out so that every tap of a strided, dilated window
is one contiguous loop (the depthwise convolution's and max pooling's twins use them).

An image plane is copied once, padded, into sh * sw phase planes (stride (sh, sw)): phase (r,
s) holds the padded pixels (u * sh + r, v * sw + s) at (u, v), in rows of Wq = ceil(Wp / sw)
(Wp = W + 2 pw, or wider where the windows reach further). Output (i, j) sits at i * Wq + j of
a grid of the same width, and tap (a, b) reads phase (a dh mod sh, b dw mod sw) at the grid
position plus one fixed shift, (a dh div sh) * Wq + (b dw div sw). So each tap is one long loop
over Ho * Wq contiguous values that vectorises whole; the Wq - Wo columns of each grid row past
the outputs are computed and dropped (their reads run past a phase's last row by at most (kw -
1) dw div sw values, which each phase keeps as a margin). At stride 1 the one phase is the
padded plane itself. The padding's places hold whatever the planes were filled with first.
"""

from __future__ import annotations

from numba import njit, uint64


@njit(inline="always")
def geometry(height, width, ho, wo, kh, kw, stride, padding, dilation):
    """(wq, phase, length): the phase planes' row length, the values one phase
    takes with its margin, and the grid's Ho * Wq positions."""
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    # the padded image as far as the windows reach (beyond H + 2 ph where a stride's phases
    # round up)
    hp = max(height + 2 * ph, (ho - 1) * sh + (kh - 1) * dh + 1)
    wp = max(width + 2 * pw, (wo - 1) * sw + (kw - 1) * dw + 1)
    hq, wq = -(-hp // sh), -(-wp // sw)
    return wq, hq * wq + (kw - 1) * dw // sw, ho * wq


@njit(inline="always")
def tap(a, b, stride, dilation, wq, phase):
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
def split(source, start, height, width, planes, stride, padding, wq, phase):
    """The (H, W) plane of ``source`` (flat) at ``start`` into the phase planes' pixels; the
    padding's places are left as they are (zeros)."""
    _copy(planes, source, start, height, width, stride, padding, wq, phase, True)


@njit(inline="always", boundscheck=False)
def join(planes, target, start, height, width, stride, padding, wq, phase):
    """``split`` backwards: the image's pixels of the phase planes into ``target`` (flat) at
    ``start``, the padding's places dropped."""
    _copy(planes, target, start, height, width, stride, padding, wq, phase, False)


@njit(inline="always", boundscheck=False)
def _copy(planes, image, start, height, width, stride, padding, wq, phase, into_planes):
    """The image's pixels between ``image`` (flat, the plane at ``start``) and the phase
    planes, in the direction ``into_planes`` says. Phase by phase and row by row: each row a
    loop of strided accesses on the image and contiguous ones on the planes, with no division
    per pixel."""
    (sh, sw), (ph, pw) = stride, padding
    if sw == 2:
        _copy_pairs(planes, image, start, height, width, sh, padding, wq, phase, into_planes)
        return
    for r in range(sh):
        for s in range(sw):
            plane = uint64((r * sw + s) * phase)
            low, high = _columns(s, sw, pw, width, wq)
            for u in range(phase // wq):
                row = u * sh + r - ph
                if row < 0 or row >= height:
                    continue
                at, line = plane + uint64(u * wq), uint64(start + row * width + s - pw)
                if into_planes:
                    for v in range(low, high):
                        planes[at + uint64(v)] = image[line + uint64(v * sw)]
                else:
                    for v in range(low, high):
                        image[line + uint64(v * sw)] = planes[at + uint64(v)]


@njit(inline="always", boundscheck=False)
def spread(source, start, ho, wo, grid, wq):
    """The (Ho, Wo) plane of ``source`` at ``start`` into the first Wo columns of ``grid``'s
    rows of Wq; the other columns stay as they are (zeros)."""
    for i in range(ho):
        at, line = uint64(i * wq), uint64(start + i * wo)
        for j in range(wo):
            grid[at + uint64(j)] = source[line + uint64(j)]


@njit(inline="always", boundscheck=False)
def _copy_pairs(planes, image, start, height, width, sh, padding, wq, phase, into_planes):
    """``_copy`` at column stride 2: both column phases of an image row in one loop over its
    pairs of pixels, whose interleaved accesses vectorise (a loop per phase, reading every
    other pixel, does not); the one or two pixels at each end that only one phase holds
    after."""
    ph, pw = padding
    even, odd = _columns(0, 2, pw, width, wq), _columns(1, 2, pw, width, wq)
    low, high = max(even[0], odd[0]), max(max(even[0], odd[0]), min(even[1], odd[1]))
    for r in range(sh):
        for u in range(phase // wq):
            row = u * sh + r - ph
            if row < 0 or row >= height:
                continue
            # padded column p of the row is image[line + p]; phase s holds p = 2 v + s at v
            first = uint64(2 * r * phase + u * wq)
            second, line = first + uint64(phase), uint64(start + row * width - pw)
            if into_planes:
                for v in range(low, high):
                    planes[first + uint64(v)] = image[line + uint64(2 * v)]
                    planes[second + uint64(v)] = image[line + uint64(2 * v + 1)]
            else:
                for v in range(low, high):
                    image[line + uint64(2 * v)] = planes[first + uint64(v)]
                    image[line + uint64(2 * v + 1)] = planes[second + uint64(v)]
            for s, (begin, end) in ((0, even), (1, odd)):
                base = first + uint64(s * phase)
                for ends in ((begin, min(low, end)), (max(high, begin), end)):
                    for v in range(ends[0], ends[1]):
                        if into_planes:
                            planes[base + uint64(v)] = image[line + uint64(2 * v + s)]
                        else:
                            image[line + uint64(2 * v + s)] = planes[base + uint64(v)]
