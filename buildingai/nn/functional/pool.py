"""Pooling as functions: max, average and adaptive pooling in 1-D and 2-D.

Every pool but max pooling is a composite of differentiable primitives, so gradients of any order
need no new backward code:

- max pooling is the ``max_pool2d`` primitive (``ops/pool.py``), whose gradient puts each output
  gradient on its window's first maximum, one kernel offset at a time;
- average pooling is a depthwise convolution with a constant kernel, divided by each window's
  element count;
- adaptive average pooling is a reshape-mean when the sizes divide, else a product with
  averaging matrices ``A_h @ x @ A_w.T``; adaptive max pooling gathers like max pooling.

Arguments follow ``torch.nn.functional``. Inputs are (N, C, H, W) / (N, C, L), or unbatched
(C, H, W) / (C, L).
"""

from __future__ import annotations

import numpy as np

from ...autograd.dispatch import apply
from ...autograd.tensor import Tensor
from ...backend.device import array_namespace
from ...errors import ShapeError
from ...functions.shape import pad as _pad
from ...ops import conv as conv_ops
from ...ops import pool as pool_ops
from ...ops import resize as resize_ops
from ._args import _batched, _pair, _single

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
]


# ----- arguments ------------------------------------------------------------------------------


_pool_size = pool_ops.pool_output_size  # output length along one axis, as PyTorch computes it


def _pool_geometry(op: str, x: Tensor, kernel, stride, padding, dilation, ceil_mode):
    """Validate pooling arguments; return the output (Ho, Wo)."""
    stride = kernel if stride is None else stride
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = kernel, stride, padding, dilation
    if min(kh, kw, sh, sw, dh, dw) < 1 or min(ph, pw) < 0:
        raise ShapeError(
            f"[{op}] invalid kernel_size={kernel}, stride={stride}, padding={padding}, "
            f"dilation={dilation}",
            help="kernel_size, stride and dilation must be positive and padding non-negative",
        )
    if ph > kh // 2 or pw > kw // 2:
        raise ShapeError(
            f"[{op}] padding {padding} must be at most half of kernel_size {kernel}",
            help="reduce the padding: a window made only of padding has no value",
        )
    shape = x.shape
    out = (
        _pool_size(shape[2], kh, sh, ph, dh, ceil_mode),
        _pool_size(shape[3], kw, sw, pw, dw, ceil_mode),
    )
    if out[0] < 1 or out[1] < 1:
        raise ShapeError(
            f"[{op}] kernel_size {kernel} (dilation {dilation}, padding {padding}) is larger "
            f"than the input {tuple(x.shape)}: output size {out} would be empty",
            help="use a smaller kernel or a larger input",
        )
    return stride, out


# ----- max pooling ----------------------------------------------------------------------------


def _gather_positions(x: Tensor, rows, cols) -> Tensor:
    """``x[n, c, rows[n, c, i, j], cols[n, c, i, j]]``: a differentiable gather of one element per
    output position (its gradient adds into those positions)."""
    xp = array_namespace(x.array)
    n, c = x.shape[:2]
    batch = xp.arange(n).reshape(n, 1, 1, 1)
    channel = xp.arange(c).reshape(1, c, 1, 1)
    return x.getitem((batch, channel, rows, cols))


def _gather_maxima(x: Tensor, rows, cols, added: bool, return_indices: bool):
    """The max-pooling result from the winners' positions rows, cols (N, C, Ho, Wo): the
    gathered values, without the batch axis if ``added``, and with ``return_indices`` also
    their flat positions ``row * W + col`` in x (N, C, H, W) (int64)."""
    out = _gather_positions(x, rows, cols)
    if added:
        out = out.squeeze(0)
    if not return_indices:
        return out
    indices = rows * x.shape[3] + cols
    return out, Tensor(indices[0] if added else indices)


def max_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum over each (dilated) window: (N, C, H, W) -> (N, C, Ho, Wo), with
    Ho = floor((H + 2*ph - dh*(kh - 1) - 1) / sh) + 1 (ceil with ``ceil_mode``). Padding counts as
    -inf. With ``return_indices`` also the flat position ``h * W + w`` of each maximum (int64).

    The gradient goes to the first maximum of each window (NaN counts as the maximum).
    """
    op = "max_pool2d"
    x, added = _batched(input, 2, op)
    kernel = _pair(kernel_size, "kernel_size", op)
    stride = None if stride is None or stride == () else _pair(stride, "stride", op)
    padding = _pair(padding, "padding", op)
    dilation = _pair(dilation, "dilation", op)
    stride, _ = _pool_geometry(op, x, kernel, stride, padding, dilation, ceil_mode)
    geometry = dict(kernel=kernel, stride=stride, padding=padding, dilation=dilation)
    out = apply(pool_ops.MAX_POOL2D, x, ceil_mode=ceil_mode, **geometry)
    if return_indices:
        xp = array_namespace(x.array)
        choice = pool_ops.window_choice(xp, x.array, out.array, **geometry)
        indices = Tensor(pool_ops.pooled_indices(xp, choice, x.shape[2:], **geometry))
    if added:
        out = out.squeeze(0)
    if not return_indices:
        return out
    return out, (Tensor(indices.array[0]) if added else indices)


def max_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode: bool = False,
    return_indices: bool = False,
):
    """The maximum over each window of a sequence: (N, C, L) -> (N, C, Lo); max_pool2d on a
    height-1 image. With ``return_indices`` also the position of each maximum (int64)."""
    op = "max_pool1d"
    x, added = _batched(input, 1, op)
    stride = None if stride is None or stride == () else (1, _single(stride, "stride", op))
    result = max_pool2d(
        x.unsqueeze(2),
        (1, _single(kernel_size, "kernel_size", op)),
        stride,
        (0, _single(padding, "padding", op)),
        (1, _single(dilation, "dilation", op)),
        ceil_mode,
        return_indices,
    )
    if return_indices:
        out, indices = result
        out, indices = out.squeeze(2), Tensor(indices.array[:, :, 0])
        return (out[0], Tensor(indices.array[0])) if added else (out, indices)
    out = result.squeeze(2)
    return out.squeeze(0) if added else out


# ----- average pooling ------------------------------------------------------------------------


def _window_counts(size: int, out: int, kernel: int, stride: int, padding: int, include_pad):
    """How many elements each window along one axis averages (NumPy, length ``out``)."""
    start = np.arange(out) * stride - padding
    end = np.minimum(start + kernel, size + padding)  # windows never count beyond the padding
    if not include_pad:
        start, end = np.maximum(start, 0), np.minimum(end, size)
    return end - start


def _area_means(x: Tensor, out_hw: tuple) -> Tensor:
    """x (N, C, H, W) averaged over adaptive windows to ``out_hw``: the ``interpolate`` record in
    mode "area" (PyTorch's area mode is adaptive average pooling), whose registered kernels run
    the windows as two separable passes (docs/design_notes/performance.md)."""
    return apply(
        resize_ops.INTERPOLATE, x, size=tuple(out_hw), mode="area", align_corners=False, scales=None
    )


def _concrete(*sizes) -> bool:
    """Whether ``sizes`` are plain ints: a size that freezing keeps symbolic (an int subclass)
    cannot set another op's attribute."""
    return all(type(size) is int for size in sizes)


def avg_pool2d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    """The mean over each window: (N, C, H, W) -> (N, C, Ho, Wo), Ho as in max_pool2d.

    Padding counts as zeros; ``count_include_pad`` decides whether it counts in the divisor;
    ``divisor_override`` replaces the divisor altogether.
    """
    op = "avg_pool2d"
    x, added = _batched(input, 2, op)
    kernel = _pair(kernel_size, "kernel_size", op)
    stride = None if stride is None or stride == () else _pair(stride, "stride", op)
    padding = _pair(padding, "padding", op)
    stride, out_hw = _pool_geometry(op, x, kernel, stride, padding, (1, 1), ceil_mode)
    h, w = x.shape[2:]
    # Zero padding reaching as far as the last window (beyond the symmetric one in ceil mode).
    extra = [
        max(0, (out_hw[a] - 1) * stride[a] + kernel[a] - padding[a] - size - padding[a])
        for a, size in enumerate((h, w))
    ]
    if out_hw == (1, 1) and kernel == (h, w) and padding == (0, 0):
        # one window, the whole map (a network's global average): rows of h * w values,
        # summed as rows, where the convolution below walks one window of h * w taps
        if divisor_override is None:
            out = x.mean(axis=(2, 3), keepdims=True)
        elif divisor_override == 0:
            raise ValueError(f"[{op}] divisor_override must be non-zero")
        else:
            out = x.sum(axis=(2, 3), keepdims=True) / float(divisor_override)
        return out.squeeze(0) if added else out
    tiles = stride == kernel and padding == (0, 0) and not (extra[0] or extra[1])
    if tiles and divisor_override is None and _concrete(h, w):
        # windows side by side, none partial: adaptive windows of the first oh * kh rows and
        # ow * kw columns (the rest, fewer than a window, is dropped as the windows drop it)
        covered = (out_hw[0] * kernel[0], out_hw[1] * kernel[1])
        if covered != (h, w):
            x = x[:, :, : covered[0], : covered[1]]
        out = _area_means(x, out_hw)
        return out.squeeze(0) if added else out
    if extra[0] or extra[1]:
        x = _pad(x, (0, extra[1], 0, extra[0]))
    # The window sums: a depthwise convolution with a kernel of ones.
    channels = x.shape[1]
    xp = array_namespace(x.array)
    ones = Tensor(xp.ones((channels, 1) + kernel, dtype=x.dtype))
    sums = apply(
        conv_ops.CONV2D, x, ones, stride=stride, padding=padding, dilation=(1, 1), groups=channels
    )
    if divisor_override is not None:
        if divisor_override == 0:
            raise ValueError(f"[{op}] divisor_override must be non-zero")
        out = sums / float(divisor_override)
    elif not (padding[0] or padding[1] or extra[0] or extra[1]):
        out = sums / float(kernel[0] * kernel[1])  # every window inside the image: all full
    else:
        counts = np.outer(
            _window_counts(h, out_hw[0], kernel[0], stride[0], padding[0], count_include_pad),
            _window_counts(w, out_hw[1], kernel[1], stride[1], padding[1], count_include_pad),
        )
        if (counts == kernel[0] * kernel[1]).all():
            out = sums / float(kernel[0] * kernel[1])
        else:
            out = sums * Tensor(xp.asarray(1.0 / counts, dtype=x.dtype))
    return out.squeeze(0) if added else out


def avg_pool1d(
    input: Tensor,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    """The mean over each window of a sequence: (N, C, L) -> (N, C, Lo)."""
    op = "avg_pool1d"
    x, added = _batched(input, 1, op)
    stride = None if stride is None or stride == () else (1, _single(stride, "stride", op))
    out = avg_pool2d(
        x.unsqueeze(2),
        (1, _single(kernel_size, "kernel_size", op)),
        stride,
        (0, _single(padding, "padding", op)),
        ceil_mode,
        count_include_pad,
    ).squeeze(2)
    return out.squeeze(0) if added else out


# ----- adaptive pooling -----------------------------------------------------------------------


def _adaptive_sizes(op: str, x: Tensor, output_size, spatial: int) -> tuple[int, ...]:
    if isinstance(output_size, int) or output_size is None:
        output_size = (output_size,) * spatial
    sizes = tuple(x.shape[2 + a] if s is None else s for a, s in enumerate(output_size))
    if len(sizes) != spatial or min(sizes) < 1:
        raise ShapeError(
            f"[{op}] output_size must be {spatial} positive int(s) (or None to keep a size), "
            f"got {output_size!r}"
        )
    if min(x.shape[2:]) < 1:
        raise ShapeError(f"[{op}] cannot pool an empty input {tuple(x.shape)}")
    return sizes


def _adaptive_bounds(size: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's windows: start = floor(i*size/out), end = ceil((i+1)*size/out)."""
    index = np.arange(out)
    return index * size // out, -(-(index + 1) * size // out)


def _averaging_matrix(size: int, out: int, xp, dtype):
    """(out, size): row i averages the input elements of window i."""
    start, end = _adaptive_bounds(size, out)
    positions = np.arange(size)
    inside = (positions >= start[:, None]) & (positions < end[:, None])
    return Tensor(xp.asarray(inside / (end - start)[:, None], dtype=dtype))


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """The mean over windows that tile the input into ``output_size`` (an int, a pair, None
    keeping a size): (N, C, H, W) -> (N, C, oh, ow)."""
    op = "adaptive_avg_pool2d"
    x, added = _batched(input, 2, op)
    oh, ow = _adaptive_sizes(op, x, output_size, 2)
    n, c, h, w = x.shape
    if oh == ow == 1:  # a global average: rows of h * w values, summed as rows
        out = x.mean(axis=(2, 3), keepdims=True)
    elif _concrete(h, w):
        out = _area_means(x, (oh, ow))
    elif h % oh == 0 and w % ow == 0:
        # Equal windows: a reshape and a mean, with no averaging matrices to build or multiply.
        out = x.reshape(n, c, oh, h // oh, ow, w // ow).mean(axis=(3, 5))
    else:
        xp = array_namespace(x.array)
        rows = _averaging_matrix(h, oh, xp, x.dtype)  # (oh, H)
        cols = _averaging_matrix(w, ow, xp, x.dtype)  # (ow, W)
        out = rows @ x @ cols.swapaxes(0, 1)
    return out.squeeze(0) if added else out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """The mean over windows that tile a sequence into ``output_size``: (N, C, L) -> (N, C, o)."""
    op = "adaptive_avg_pool1d"
    x, added = _batched(input, 1, op)
    (size,) = _adaptive_sizes(op, x, _as_tuple(output_size), 1)
    out = adaptive_avg_pool2d(x.unsqueeze(2), (1, size)).squeeze(2)
    return out.squeeze(0) if added else out


def _as_tuple(output_size):
    return (output_size,) if isinstance(output_size, int) or output_size is None else output_size


def _adaptive_candidates(size: int, out: int, xp):
    """(out, longest window) input positions of each window; short windows repeat their last
    position, which leaves the maximum (and its first occurrence) unchanged."""
    start, end = _adaptive_bounds(size, out)
    longest = int((end - start).max())
    positions = np.minimum(start[:, None] + np.arange(longest), end[:, None] - 1)
    return xp.asarray(positions)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over windows that tile the input into ``output_size``:
    (N, C, H, W) -> (N, C, oh, ow); with ``return_indices`` also the flat positions (int64)."""
    op = "adaptive_max_pool2d"
    x, added = _batched(input, 2, op)
    oh, ow = _adaptive_sizes(op, x, output_size, 2)
    h, w = x.shape[2:]
    if _concrete(h, w) and h % oh == 0 and w % ow == 0:
        # windows side by side, none shared (a global maximum among them): max pooling with
        # the window as its stride, whose kernels scan each window once
        window = (h // oh, w // ow)
        return max_pool2d(input, window, window, return_indices=return_indices)
    xp = array_namespace(x.array)
    row_choices = _adaptive_candidates(h, oh, xp)  # (oh, kh)
    col_choices = _adaptive_candidates(w, ow, xp)  # (ow, kw)
    kh, kw = row_choices.shape[1], col_choices.shape[1]
    # (N, C, oh, ow, kh, kw): every candidate of every window, gathered on the raw array.
    values = x.array[:, :, row_choices[:, None, :, None], col_choices[None, :, None, :]]
    n, c = x.shape[:2]
    best = xp.argmax(values.reshape(n, c, oh, ow, kh * kw), axis=-1)
    # the winner's row and column: its window's start plus its offset there (a short window's
    # repeated last candidate is its last position). Computed from best, so that a trace's
    # mark on the values reaches them: freezing refuses these data-dependent positions.
    row_start, row_end = (xp.asarray(bound)[:, None] for bound in _adaptive_bounds(h, oh))
    col_start, col_end = (xp.asarray(bound) for bound in _adaptive_bounds(w, ow))
    rows = xp.minimum(row_start + best // kw, row_end - 1)
    cols = xp.minimum(col_start + best % kw, col_end - 1)
    return _gather_maxima(x, rows, cols, added, return_indices)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """The maximum over windows that tile a sequence into ``output_size``: (N, C, L) -> (N, C, o)."""
    op = "adaptive_max_pool1d"
    x, added = _batched(input, 1, op)
    (size,) = _adaptive_sizes(op, x, _as_tuple(output_size), 1)
    out, indices = adaptive_max_pool2d(x.unsqueeze(2), (1, size), return_indices=True)
    out, indices = out.squeeze(2), indices.array[:, :, 0]
    if added:
        out, indices = out.squeeze(0), indices[0]
    return (out, Tensor(indices)) if return_indices else out
