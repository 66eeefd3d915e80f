"""Array kernels of nearest resizing by whole factors: each pixel repeated into an fh x fw
block (the forward), and each block of the gradient summed back onto its pixel. Arrays are
(rows, width) views, one row per image row of every sample and channel; the compiled twins
(``compiled/pixel_repeat.py``) write and read each block in one pass on numba's threads.
Registered against the resize records in ``accel/resize.py``.
"""

from __future__ import annotations

from .compiled import compiled_twin


@compiled_twin("pixel_repeat.repeat_pixels", ("fh", "fw"))
def repeat_pixels(xp, x, out, *, fh, fw) -> None:
    """out (rows * fh, width * fw) = each x (rows, width) pixel repeated into an fh x fw block."""
    rows, width = x.shape
    out.reshape(rows, fh, width, fw)[...] = x[:, None, :, None]


@compiled_twin("pixel_repeat.sum_pixel_blocks", ("fh", "fw"))
def sum_pixel_blocks(xp, grad, out, *, fh, fw) -> None:
    """out (rows, width) = the sum of each fh x fw block of grad (rows * fh, width * fw): the
    block's columns first (over its fh rows), then across them, as the record adds them."""
    rows, width = out.shape
    columns = grad.reshape(rows, fh, width * fw).sum(axis=1)
    xp.sum(columns.reshape(rows, width, fw), axis=2, out=out)
