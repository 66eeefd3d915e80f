"""Three-dimensional pooling as functions, as PyTorch's: ``max_pool3d``, ``avg_pool3d``,
``adaptive_avg_pool3d``, ``adaptive_max_pool3d`` on volumes (N, C, D, H, W) or unbatched
(C, D, H, W), and ``max_unpool3d``, max pooling's partial inverse.

Every window of a volume is a depth window of height-width windows, and its maximum, sum and
mean can be taken one after the other. So each 3-D pool here is the 2-D pool of ``pool.py``
twice, with no primitive of its own:

1. over (H, W) of every depth slice, the slices side by side as channels:
   (N, C * D, H, W) -> (N, C * D, Ho, Wo);
2. over depth, each slice's pooled plane laid out as one row of an image with a (kd, 1) window:
   (N, C, D, Ho * Wo) -> (N, C, Do, Ho * Wo).

This is exact. The first maximum of a window in (d, h, w) order lies in the first slice that
holds the window's maximum, at that slice's first maximum: the winner PyTorch picks, and the one
the gradient reaches. An average's divisor is a depth count times a height-width count, as
PyTorch's is. Gradients of any order, tracing and ONNX export come from the 2-D ops; the two
passes cost kh * kw passes over the volume and kd over the smaller pooled planes, not
kd * kh * kw.
"""

from __future__ import annotations

from collections.abc import Callable

from ...autograd.tensor import Tensor
from ...backend.device import array_namespace
from ...errors import ShapeError
from ...ops import pool as pool_ops
from ._args import _batched
from .pool import (
    _adaptive_sizes,
    adaptive_avg_pool2d,
    adaptive_max_pool2d,
    avg_pool2d,
    max_pool2d,
)
from .unpool import _default_size, _output_size, _unpool

__all__ = [
    "max_pool3d",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "max_unpool3d",
]


# ----- arguments ------------------------------------------------------------------------------


def _triple(value, name: str, op: str) -> tuple[int, int, int]:
    """``3`` -> ``(3, 3, 3)``; ``(1, 2, 3)`` stays; ``(3,)`` -> ``(3, 3, 3)``; else refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value, value)
    values = tuple(value)
    if len(values) == 1:
        values = values * 3
    if len(values) != 3 or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ShapeError(
            f"[{op}] {name} must be an int or a tuple of three ints, got {value!r}",
            help=f"e.g. {name}=2 or {name}=(1, 2, 2) for (depth, height, width)",
        )
    return values


def _pool_geometry(op: str, x: Tensor, kernel, stride, padding, dilation, ceil_mode) -> tuple:
    """Validate pooling arguments for x (N, C, D, H, W); return the stride (``kernel`` when
    None)."""
    stride = kernel if stride is None else stride
    if min(kernel + stride + dilation) < 1 or min(padding) < 0:
        raise ShapeError(
            f"[{op}] invalid kernel_size={kernel}, stride={stride}, padding={padding}, "
            f"dilation={dilation}",
            help="kernel_size, stride and dilation must be positive and padding non-negative",
        )
    if any(p > k // 2 for p, k in zip(padding, kernel)):
        raise ShapeError(
            f"[{op}] padding {padding} must be at most half of kernel_size {kernel}",
            help="reduce the padding: a window made only of padding has no value",
        )
    out = tuple(
        pool_ops.pool_output_size(
            x.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode
        )
        for a in range(3)
    )
    if min(out) < 1:
        raise ShapeError(
            f"[{op}] kernel_size {kernel} (dilation {dilation}, padding {padding}) is larger "
            f"than the input {tuple(x.shape)}: output size {out} would be empty",
            help="use a smaller kernel or a larger input",
        )
    return stride


def _one_element(kernel, stride, padding) -> bool:
    """Whether windows of this geometry along some axes are single elements, one per input
    element: pooling over those axes leaves the input as it is."""
    return all(k == 1 for k in kernel + stride) and not any(padding)


# ----- the two passes -------------------------------------------------------------------------


def _two_passes(
    x: Tensor,
    plane_pool: Callable | None,
    depth_pool: Callable | None,
    return_indices: bool = False,
):
    """x (N, C, D, H, W) -> (N, C, Do, Ho, Wo): ``plane_pool`` on every depth slice
    ((N, C * D, H, W) -> (N, C * D, Ho, Wo)), then ``depth_pool`` along depth
    ((N, C, D, Ho * Wo) -> (N, C, Do, Ho * Wo), windows (kd, 1)); None skips a pass whose
    windows are single elements. With ``return_indices`` the pools return (values, indices) and
    so does this, the indices flat positions ``d * H * W + h * W + w`` (N, C, Do, Ho, Wo)."""
    n, c, d, h, w = x.shape
    xp = array_namespace(x.array)
    planes = x.reshape(n, c * d, h, w)
    if plane_pool is not None:
        planes = plane_pool(planes)
    elif return_indices:
        planes = planes, Tensor(xp.broadcast_to(xp.arange(h * w).reshape(h, w), planes.shape))
    if return_indices:
        planes, plane_indices = planes
    ho, wo = planes.shape[2:]
    depth = planes.reshape(n, c, d, ho * wo)
    if depth_pool is not None:
        depth = depth_pool(depth)
    elif return_indices:
        positions = xp.arange(d * ho * wo).reshape(d, ho * wo)
        depth = depth, Tensor(xp.broadcast_to(positions, depth.shape))
    if return_indices:
        depth, depth_indices = depth
    out = depth.reshape(n, c, depth.shape[2], ho, wo)
    if not return_indices:
        return out
    # the depth pass names a winner's slice; the plane pass its position inside that slice
    slice_of = depth_indices.array // (ho * wo)  # (N, C, Do, Ho * Wo)
    within = xp.take_along_axis(plane_indices.array.reshape(n, c, d, ho * wo), slice_of, axis=2)
    indices = (slice_of * (h * w) + within).reshape(out.shape)
    return out, Tensor(indices.astype(xp.int64, copy=False))


def _unbatched(result, added: bool):
    """Drop the batch axis ``_batched`` added, from a Tensor or a (values, indices) pair."""
    if not added:
        return result
    if isinstance(result, tuple):
        return result[0].squeeze(0), Tensor(result[1].array[0])
    return result.squeeze(0)


# ----- max and average pooling ----------------------------------------------------------------


def max_pool3d(
    input: Tensor,  # noqa: A002 - PyTorch's name
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum over each (dilated) window of a volume: (N, C, D, H, W) -> (N, C, Do, Ho, Wo),
    Do = floor((D + 2*pd - dd*(kd - 1) - 1) / sd) + 1 (ceil with ``ceil_mode``), Ho and Wo
    alike. Padding counts as -inf. With ``return_indices`` also the flat position
    ``d * H * W + h * W + w`` of each maximum (int64), as ``max_unpool3d`` takes it.

    The gradient goes to the first maximum of each window in (d, h, w) order (NaN counts as the
    maximum).
    """
    op = "max_pool3d"
    x, added = _batched(input, 3, op)
    kernel = _triple(kernel_size, "kernel_size", op)
    stride = None if stride is None or stride == () else _triple(stride, "stride", op)
    padding = _triple(padding, "padding", op)
    dilation = _triple(dilation, "dilation", op)
    stride = _pool_geometry(op, x, kernel, stride, padding, dilation, ceil_mode)
    # depth first, then the (height, width) pairs of the plane pass
    kd, sd, pd, dd = kernel[0], stride[0], padding[0], dilation[0]
    k_hw, s_hw, p_hw, d_hw = kernel[1:], stride[1:], padding[1:], dilation[1:]

    def plane_pool(planes: Tensor):
        return max_pool2d(planes, k_hw, s_hw, p_hw, d_hw, ceil_mode, return_indices)

    def depth_pool(depth: Tensor):
        return max_pool2d(depth, (kd, 1), (sd, 1), (pd, 0), (dd, 1), ceil_mode, return_indices)

    result = _two_passes(
        x,
        None if _one_element(k_hw, s_hw, p_hw) else plane_pool,
        None if _one_element((kd,), (sd,), (pd,)) else depth_pool,
        return_indices,
    )
    return _unbatched(result, added)


def avg_pool3d(
    input: Tensor,  # noqa: A002
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window of a volume: (N, C, D, H, W) -> (N, C, Do, Ho, Wo), sizes as
    in max_pool3d.

    Padding counts as zeros; ``count_include_pad`` decides whether it counts in the divisor;
    ``divisor_override`` replaces the divisor altogether (the window sums are divided by it).
    """
    op = "avg_pool3d"
    x, added = _batched(input, 3, op)
    kernel = _triple(kernel_size, "kernel_size", op)
    stride = None if stride is None or stride == () else _triple(stride, "stride", op)
    padding = _triple(padding, "padding", op)
    stride = _pool_geometry(op, x, kernel, stride, padding, (1, 1, 1), ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise ValueError(f"[{op}] divisor_override must be non-zero")
    kd, sd, pd = kernel[0], stride[0], padding[0]
    k_hw, s_hw, p_hw = kernel[1:], stride[1:], padding[1:]
    # with an override both passes sum (a divisor of 1), and the sums are divided at the end
    divisor = None if divisor_override is None else 1

    def plane_pool(planes: Tensor) -> Tensor:
        return avg_pool2d(planes, k_hw, s_hw, p_hw, ceil_mode, count_include_pad, divisor)

    def depth_pool(depth: Tensor) -> Tensor:
        return avg_pool2d(depth, (kd, 1), (sd, 1), (pd, 0), ceil_mode, count_include_pad, divisor)

    out = _two_passes(
        x,
        None if _one_element(k_hw, s_hw, p_hw) else plane_pool,
        None if _one_element((kd,), (sd,), (pd,)) else depth_pool,
    )
    if divisor_override is not None:
        out = out / float(divisor_override)
    return _unbatched(out, added)


# ----- adaptive pooling -----------------------------------------------------------------------


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """The mean over windows that tile the volume into ``output_size`` (an int, a triple, None
    keeping a size): (N, C, D, H, W) -> (N, C, od, oh, ow). Window i along an axis of size S
    spans [floor(i * S / o), ceil((i + 1) * S / o)), as PyTorch's."""
    op = "adaptive_avg_pool3d"
    x, added = _batched(input, 3, op)
    od, oh, ow = _adaptive_sizes(op, x, output_size, 3)
    d, h, w = x.shape[2:]
    if od == oh == ow == 1:  # a global average: rows of d * h * w values, summed as rows
        return _unbatched(x.mean(axis=(2, 3, 4), keepdims=True), added)
    out = _two_passes(
        x,
        None if (oh, ow) == (h, w) else lambda planes: adaptive_avg_pool2d(planes, (oh, ow)),
        None if od == d else lambda depth: adaptive_avg_pool2d(depth, (od, oh * ow)),
    )
    return _unbatched(out, added)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):  # noqa: A002
    """The maximum over windows that tile the volume into ``output_size`` (an int, a triple,
    None keeping a size): (N, C, D, H, W) -> (N, C, od, oh, ow); with ``return_indices`` also
    the flat positions ``d * H * W + h * W + w`` (int64). The gradient goes to each window's
    first maximum in (d, h, w) order."""
    op = "adaptive_max_pool3d"
    x, added = _batched(input, 3, op)
    od, oh, ow = _adaptive_sizes(op, x, output_size, 3)
    d, h, w = x.shape[2:]

    def plane_pool(planes: Tensor):
        return adaptive_max_pool2d(planes, (oh, ow), return_indices)

    def depth_pool(depth: Tensor):
        return adaptive_max_pool2d(depth, (od, oh * ow), return_indices)

    result = _two_passes(
        x,
        None if (oh, ow) == (h, w) else plane_pool,
        None if od == d else depth_pool,
        return_indices,
    )
    return _unbatched(result, added)


# ----- unpooling ------------------------------------------------------------------------------


def max_unpool3d(
    input: Tensor,  # noqa: A002
    indices: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    output_size=None,
) -> Tensor:
    """(N, C, D, H, W) pooled values and their ``indices`` (from ``max_pool3d(...,
    return_indices=True)``) -> (N, C, Do, Ho, Wo) zeros with each value at its index; the sizes
    are ``output_size`` or (D - 1) * stride - 2 * padding + kernel_size, Ho and Wo alike."""
    op = "max_unpool3d"
    kernel = _triple(kernel_size, "kernel_size", op)
    step = kernel if stride is None else _triple(stride, "stride", op)
    pad = _triple(padding, "padding", op)
    default = tuple(
        _default_size(input.shape[-3 + axis], kernel[axis], step[axis], pad[axis])
        for axis in range(3)
    )
    return _unpool(op, input, indices, _output_size(op, output_size, default))
