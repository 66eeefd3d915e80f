"""Sliding windows as columns (``unfold``, im2col) and columns summed back into an image
(``fold``, col2im), with PyTorch's signatures; the records are in ``ops/unfold.py``."""

from __future__ import annotations

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...ops import unfold as ops
from ._args import _pair

__all__ = ["fold", "unfold"]


def _geometry(op: str, kernel_size, dilation, padding, stride) -> dict:
    return dict(
        kernel=_pair(kernel_size, "kernel_size", op),
        stride=_pair(stride, "stride", op),
        padding=_pair(padding, "padding", op),
        dilation=_pair(dilation, "dilation", op),
    )


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """Every sliding window of an image as a column: input (N, C, H, W), or (C, H, W) ->
    (N, C * kh * kw, L), or (C * kh * kw, L), with L = Ho * Wo windows, Ho = floor((H + 2*ph -
    dh*(kh - 1) - 1) / sh) + 1 (likewise Wo), as a convolution counts them. Column i * Wo + j
    holds window (i, j), its rows ordered (channel, kernel row, kernel column), padding zeros.

    A convolution is ``weight.view(O, -1) @ unfold(x, k)`` reshaped to (N, O, Ho, Wo)."""
    if input.ndim not in (3, 4):
        raise ShapeError(
            f"[unfold] expects a 4-D input (N, C, H, W) or a 3-D one (C, H, W), got "
            f"{tuple(input.shape)}",
            help="for one (H, W) map, x.unsqueeze(0) makes it a one-channel image",
        )
    added = input.ndim == 3
    x = input.unsqueeze(0) if added else input
    out = apply(ops.UNFOLD, x, **_geometry("unfold", kernel_size, dilation, padding, stride))
    return out.squeeze(0) if added else out


def fold(
    input: Tensor,  # noqa: A002 - PyTorch's name
    output_size,
    kernel_size,
    dilation=1,
    padding=0,
    stride=1,
) -> Tensor:
    """Columns summed back into an image, the adjoint of ``unfold``: input (N, C * kh * kw, L),
    or (C * kh * kw, L) -> (N, C, H, W), or (C, H, W), (H, W) = ``output_size``; each column's
    values are added at the pixels of its window, overlapping windows adding up and values
    on the padding dropped. L must be the number of windows ``unfold`` finds in (H, W)."""
    if input.ndim not in (2, 3):
        raise ShapeError(
            f"[fold] expects a 3-D input (N, C * kh * kw, L) or a 2-D one (C * kh * kw, L), "
            f"got {tuple(input.shape)}"
        )
    added = input.ndim == 2
    columns = input.unsqueeze(0) if added else input
    geometry = _geometry("fold", kernel_size, dilation, padding, stride)
    size = _pair(output_size, "output_size", "fold")
    out = apply(ops.FOLD, columns, output_size=size, **geometry)
    return out.squeeze(0) if added else out
