"""Array kernels of 2-D resizing as two sparse axis maps: each output row of a plane is a few
weighted input rows (the height axis's taps), and each of its pixels a few weighted pixels of
that row (the width axis's). ``columns`` (m, K) index the input along the axis, the value n (one
past the end) standing for a zero; ``weights`` (m, K) are float32. The compiled twin
(``compiled/separable_resize.py``) runs output rows on numba's threads, both axes in one pass
over each row. Where rows grow (upsampling, the gradient of downsampling),
``resize_planes_width_first`` applies the width map first, so that its scalar gathers run on the
fewer input rows and the height map's weighted rows on the longer output ones. Registered
against the resize records in ``accel/resize.py``.
"""

from __future__ import annotations

from ...ops import resize
from .compiled import compiled_twin


@compiled_twin("separable_resize.resize_planes")
def resize_planes(xp, x, columns_h, weights_h, columns_w, weights_w, out) -> None:
    """out (planes, mh, mw) = the height map, then the width map, applied to x (planes, h, w):
    the record's gathers (``resize.along``), products and sums in its order."""
    for axis, columns, weights in ((1, columns_h, weights_h), (2, columns_w, weights_w)):
        x = resize.along(xp, x, (columns, weights, False, True), axis)
    out[...] = x


@compiled_twin("separable_resize.resize_planes_width_first")
def resize_planes_width_first(xp, x, columns_h, weights_h, columns_w, weights_w, out) -> None:
    """``resize_planes`` with the width map applied first, then the height map."""
    for axis, columns, weights in ((2, columns_w, weights_w), (1, columns_h, weights_h)):
        x = resize.along(xp, x, (columns, weights, False, True), axis)
    out[...] = x
