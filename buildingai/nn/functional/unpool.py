"""``max_unpool1d`` and ``max_unpool2d``: max pooling's partial inverse, with PyTorch's
signatures. Each pooled value goes back to the position ``indices`` (from
``max_pool*d(..., return_indices=True)``) names in its plane; every other position is zero. One
``scatter`` per call, so the gradient is the matching gather."""

from __future__ import annotations

from ...autograd.tensor import Tensor
from ...errors import ShapeError
from ...functions.creation import zeros
from ...functions.scattering import scatter
from ._args import _pair, _single

__all__ = ["max_unpool1d", "max_unpool2d"]


def _default_size(size: int, kernel: int, stride: int, padding: int) -> int:
    return (size - 1) * stride - 2 * padding + kernel


def _unpool(op: str, input: Tensor, indices: Tensor, out_spatial: tuple) -> Tensor:  # noqa: A002
    spatial = len(out_spatial)
    added = input.ndim == spatial + 1
    if added:
        input, indices = input.unsqueeze(0), indices.unsqueeze(0)  # noqa: A001
    if input.ndim != spatial + 2 or tuple(indices.shape) != tuple(input.shape):
        raise ShapeError(
            f"[{op}] expects input (N, C, *{spatial} sizes) or (C, ...) and indices of its shape, "
            f"got {tuple(input.shape)} and {tuple(indices.shape)}"
        )
    n, c = input.shape[:2]
    plane = 1
    for size in out_spatial:
        plane *= size
    flat_indices = indices.reshape(n, c, -1)
    if flat_indices.numel() and (int(flat_indices.max().item()) >= plane or
                                 int(flat_indices.min().item()) < 0):  # fmt: skip
        raise ShapeError(
            f"[{op}] an index in indices lies outside the output plane of {plane} positions "
            f"({out_spatial})",
            help="pass the indices max pooling returned, and the output_size it was given",
        )
    flat = zeros(n, c, plane, dtype=input.dtype, device=input.device)
    out = scatter(flat, 2, flat_indices, input.reshape(n, c, -1)).reshape(n, c, *out_spatial)
    return out.squeeze(0) if added else out


def _output_size(op: str, given, default: tuple) -> tuple:
    if given is None:
        return default
    given = tuple(int(size) for size in given)[-len(default) :]
    if len(given) != len(default):
        raise ShapeError(f"[{op}] output_size {given} must end with {len(default)} spatial sizes")
    return given


def max_unpool2d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    indices: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    output_size=None,
) -> Tensor:
    """(N, C, H, W) pooled values and their ``indices`` -> (N, C, Ho, Wo) zeros with each value
    at its index; (Ho, Wo) is ``output_size`` or (H - 1) * stride - 2 * padding + kernel_size."""
    op = "max_unpool2d"
    kernel = _pair(kernel_size, "kernel_size", op)
    step = kernel if stride is None else _pair(stride, "stride", op)
    pad = _pair(padding, "padding", op)
    default = tuple(
        _default_size(input.shape[-2 + axis], kernel[axis], step[axis], pad[axis])
        for axis in range(2)
    )
    return _unpool(op, input, indices, _output_size(op, output_size, default))


def max_unpool1d(
    input: Tensor,  # noqa: A002
    indices: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    output_size=None,
) -> Tensor:
    """(N, C, L) pooled values and their ``indices`` -> (N, C, Lo), as ``max_unpool2d``."""
    op = "max_unpool1d"
    kernel = _single(kernel_size, "kernel_size", op)
    step = kernel if stride is None else _single(stride, "stride", op)
    pad = _single(padding, "padding", op)
    default = (_default_size(input.shape[-1], kernel, step, pad),)
    return _unpool(op, input, indices, _output_size(op, output_size, default))
