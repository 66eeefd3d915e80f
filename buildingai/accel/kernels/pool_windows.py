"""Max pooling for any window geometry (padding, dilation, overlapping windows, ceil mode), as
the NumPy references of the compiled twins in ``compiled/pool_windows.py``: each window's
maximum, which element of it won, and the gradient put back on that element. All three are
the records' own functions (``ops/pool.py``) written into given arrays; the twins do the same
per (sample, channel) plane, scanning each window once instead of one strided pass per window
offset.
"""

from __future__ import annotations

from ...ops.pool import scatter_to_windows, window_choice, window_maxima
from .compiled import compiled_twin

PARAMS = ("size", "stride", "padding", "dilation")


@compiled_twin("pool_windows.padded_window_max", params=PARAMS)
def padded_window_max(xp, x, out, *, size, stride, padding, dilation) -> None:
    """``window_maxima`` into ``out`` (N, C, Ho, Wo); ``size`` is the window's (kh, kw)."""
    out[...] = window_maxima(xp, x, out.shape[2:], size, stride, padding, dilation)


@compiled_twin("pool_windows.padded_first_max", params=PARAMS)
def padded_first_max(xp, x, out, choice, *, size, stride, padding, dilation) -> None:
    """``window_choice`` into ``choice`` (N, C, Ho, Wo): the offset i * kw + j of each window's
    first element of the image equal to its maximum ``out`` (or NaN); ``size`` is (kh, kw)."""
    choice[...] = window_choice(xp, x, out, size, stride, padding, dilation)


@compiled_twin("pool_windows.padded_scatter", params=PARAMS)
def padded_scatter(xp, grad, choice, image, *, size, stride, padding, dilation) -> None:
    """``scatter_to_windows`` into ``image`` (N, C, H, W): zeros plus each value of grad (N, C,
    Ho, Wo) at its window's chosen element; overlapping windows add."""
    input_size = image.shape[2:]
    image[...] = scatter_to_windows(xp, grad, choice, input_size, size, stride, padding, dilation)
