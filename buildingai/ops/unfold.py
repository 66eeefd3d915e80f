"""Sliding windows: as columns and back, ``unfold`` (im2col) and ``fold`` (col2im), PyTorch's
``F.unfold`` and ``F.fold``; and along one axis, ``unfold_axis``, ``Tensor.unfold``.

``unfold`` takes an image x (N, C, H, W) to columns (N, C * kh * kw, L): column l = i * Wo + j
holds the window of output position (i, j), the zero-padded pixels (i * sh + a * dh - ph,
j * sw + b * dw - pw), in rows ordered (c, a, b). (Ho, Wo) is a convolution's output size, and L
= Ho * Wo. ``fold`` is its adjoint: it adds each column's values back at the pixels of its
window in an (N, C, H, W) image (overlapping windows add, values on the padding are dropped).
So each is the other's gradient, and derivatives of any order are these two records.

Attributes (normalised by ``nn.functional``): ``kernel``, ``stride``, ``padding`` (per side)
and ``dilation`` as ``(h, w)`` int pairs; fold's ``output_size`` is the image's ``(H, W)``.

``unfold_axis`` copies every window of ``size`` elements at each ``step`` along ``axis`` into a
new last axis; its adjoint adds them back, and again each is the other's gradient.
"""

from __future__ import annotations

import numpy as np

from ..backend.device import strided_view
from ..errors import BuildingAIError, ShapeError
from .abstract import ValueSpec, memory_cost
from .base import Op
from .conv import (
    _check_attrs,
    _check_dtypes,
    _infer_output_hw,
    col2im,
    floor_divide_size,
    pad_image,
    windows,
)
from .families import CopyOp


def _check_float(op: str, x) -> None:
    _check_dtypes(op, x, x, ("input", "input"))  # (one operand: checked once)


def _describe(kernel, stride, padding, dilation) -> str:
    return (
        f"kernel_size={tuple(kernel)}, stride={tuple(stride)}, padding={tuple(padding)}, "
        f"dilation={tuple(dilation)}"
    )


def blocks(op: str, size_hw, kernel, stride, padding, dilation) -> tuple:
    """The (Ho, Wo) windows an image of ``size_hw`` holds, sizes possibly symbolic; raises
    ShapeError naming ``op`` where there is none."""
    out_hw = _infer_output_hw(op, size_hw, kernel, stride, padding, dilation)
    if any(isinstance(size, int) and size < 1 for size in out_hw):
        raise ShapeError(
            f"[{op}] an image of size {tuple(size_hw)} holds no window of "
            f"{_describe(kernel, stride, padding, dilation)}: the windows would be {out_hw}",
            help="use a smaller kernel_size or dilation, or more padding",
        )
    return out_hw


class Unfold(Op):
    """Every sliding window of an image as a column: x (N, C, H, W) -> (N, C * kh * kw, L)."""

    name = "unfold"
    save_inputs = False  # linear: the gradient needs only the image's size

    def check(self, x, *, kernel, stride, padding, dilation):
        if x.ndim != 4:
            raise ShapeError(
                f"[unfold] input must be 4-D (N, C, H, W), got {tuple(x.shape)}",
                help="add a batch dimension with x.unsqueeze(0) for a single image",
            )
        _check_attrs("unfold", stride, padding, dilation, 1)
        if min(kernel) < 1:
            raise ShapeError(f"[unfold] kernel_size must be positive, got {tuple(kernel)}")
        blocks("unfold", x.shape[2:], kernel, stride, padding, dilation)
        _check_float("unfold", x)

    def forward(self, ctx, xp, x, *, kernel, stride, padding, dilation):
        ctx.input_size = tuple(x.shape[2:])
        n, c = x.shape[:2]
        out_hw = blocks(self.name, x.shape[2:], kernel, stride, padding, dilation)
        view = windows(xp, pad_image(xp, x, padding), kernel, out_hw, stride, dilation)
        # (N, C, kh, kw, Ho, Wo): rows (c, a, b) and columns (i, j) in order; the one copy
        return view.reshape(n, c * kernel[0] * kernel[1], out_hw[0] * out_hw[1])

    def infer(self, x, *, kernel, stride, padding, dilation):
        ho, wo = blocks(self.name, x.shape[2:], kernel, stride, padding, dilation)
        shape = (x.shape[0], x.shape[1] * kernel[0] * kernel[1], ho * wo)
        return ValueSpec(shape, x.dtype, x.device)

    def cost(self, x, *, kernel, stride, padding, dilation):
        out = self.infer(x, kernel=kernel, stride=stride, padding=padding, dilation=dilation)
        return memory_cost((x,), out, 0)  # a copy

    def backward(self, ctx, grad):
        return (FOLD(grad, output_size=ctx.input_size, **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        """Zero padding, then one strided Slice per window offset, stacked and reshaped: ONNX
        has no im2col operator. Each Slice ends at a count from the axis's end, so the image's
        size may be symbolic."""
        (kh, kw), (sh, sw) = attrs["kernel"], attrs["stride"]
        (ph, pw), (dh, dw) = attrs["padding"], attrs["dilation"]
        x = inputs[0]
        if ph or pw:
            x = emit.node("Pad", [x, emit.ints([0, 0, ph, pw, 0, 0, ph, pw])], mode="constant")
        # the last window along an axis ends (k - 1 - a) * d before the padded axis's end
        large = np.iinfo(np.int64).max
        taps = []
        for a in range(kh):
            for b in range(kw):
                ends = [-(kh - 1 - a) * dh or large, -(kw - 1 - b) * dw or large]
                tap = emit.node(
                    "Slice",
                    [x, emit.ints([a * dh, b * dw]), emit.ints(ends), emit.ints([2, 3]),
                     emit.ints([sh, sw])],
                )  # fmt: skip
                taps.append(emit.unsqueeze(tap, [2]))
        stacked = emit.node("Concat", taps, axis=2)  # (N, C, kh * kw, Ho, Wo)
        channels = emit.shapes[inputs[0]][1]
        emit.node("Reshape", [stacked, emit.ints([0, channels * kh * kw, -1])], output)


class Fold(Op):
    """The adjoint of ``unfold``: columns (N, C * kh * kw, L) added into an image (N, C, H, W),
    (H, W) = ``output_size``; overlapping windows add."""

    name = "fold"
    save_inputs = False

    def check(self, columns, *, output_size, kernel, stride, padding, dilation):
        if columns.ndim != 3:
            raise ShapeError(
                f"[fold] input must be 3-D (N, C * kh * kw, L), got {tuple(columns.shape)}",
                help="add a batch dimension with x.unsqueeze(0) for a single input",
            )
        _check_attrs("fold", stride, padding, dilation, 1)
        if min(kernel) < 1 or min(output_size) < 1:
            raise ShapeError(
                f"[fold] kernel_size and output_size must be positive, got "
                f"kernel_size={tuple(kernel)}, output_size={tuple(output_size)}"
            )
        taps = kernel[0] * kernel[1]
        if columns.shape[1] % taps:
            raise ShapeError(
                f"[fold] input {tuple(columns.shape)}: its dimension 1 ({columns.shape[1]}) "
                f"must be divisible by the kernel's {kernel[0]} * {kernel[1]} = {taps} positions",
                help="the input is laid out (N, C * kh * kw, L), as unfold returns it",
            )
        ho, wo = blocks("fold", output_size, kernel, stride, padding, dilation)
        if columns.shape[2] != ho * wo:
            raise ShapeError(
                f"[fold] input {tuple(columns.shape)} has {columns.shape[2]} blocks, but "
                f"output_size={tuple(output_size)} with "
                f"{_describe(kernel, stride, padding, dilation)} holds {ho} * {wo} = {ho * wo}",
                help="fold takes the output_size of the image unfold was given",
            )
        _check_float("fold", columns)

    def forward(self, ctx, xp, columns, *, output_size, kernel, stride, padding, dilation):
        n, rows, _ = columns.shape
        c = rows // (kernel[0] * kernel[1])
        ho, wo = blocks(self.name, output_size, kernel, stride, padding, dilation)
        # col2im sums in its (C, kh, kw, N, Ho, Wo) order: a view of the columns
        laid = columns.reshape(n, c, kernel[0], kernel[1], ho, wo).transpose(1, 2, 3, 0, 4, 5)
        return col2im(xp, laid, tuple(output_size), stride, padding, dilation)

    def infer(self, columns, *, output_size, kernel, stride, padding, dilation):
        channels = columns.shape[1] // (kernel[0] * kernel[1])
        return ValueSpec((columns.shape[0], channels, *output_size), columns.dtype, columns.device)

    def cost(self, columns, *, output_size, kernel, stride, padding, dilation):
        out = self.infer(
            columns,
            output_size=output_size,
            kernel=kernel,
            stride=stride,
            padding=padding,
            dilation=dilation,
        )
        return memory_cost((columns,), out, 1)  # one addition per column value

    def backward(self, ctx, grad):
        attrs = {k: v for k, v in ctx.attrs.items() if k != "output_size"}
        return (UNFOLD(grad, **attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        if emit.opset < 18:
            raise BuildingAIError(
                f"[fold] ONNX's Col2Im needs opset 18 or later, the export asked for {emit.opset}",
                help="export with opset=18",
            )
        (ph, pw) = attrs["padding"]
        emit.node(
            "Col2Im",
            [inputs[0], emit.ints(attrs["output_size"]), emit.ints(attrs["kernel"])],
            output,
            dilations=[int(d) for d in attrs["dilation"]],
            pads=[int(ph), int(pw), int(ph), int(pw)],
            strides=[int(s) for s in attrs["stride"]],
        )


UNFOLD, FOLD = Unfold(), Fold()


# ----- windows along one axis: Tensor.unfold ------------------------------------------------------


def window_count(op: str, length, size: int, step: int):
    """How many windows of ``size`` at every ``step`` fit in ``length`` (possibly symbolic)."""
    what = f"the windows of size {size}, step {step}, in a dimension of size {length!r}"
    return floor_divide_size(op, length - size, step, what) + 1


def _check_windows(op: str, ndim: int, length, axis: int, size: int, step: int) -> None:
    if ndim == 0 or size < 0 or step < 1:
        raise ShapeError(
            f"[{op}] cannot take windows of size {size} at step {step} along dimension {axis} "
            f"of a {ndim}-D tensor",
            help="size must be non-negative, step positive, and the tensor at least 1-D",
        )
    if isinstance(length, int) and size > length:
        raise ShapeError(
            f"[{op}] windows of size {size} do not fit in dimension {axis} of size {length}",
            help=f"use a size of at most {length}",
        )


class UnfoldAxis(CopyOp):
    """Windows along one axis, as ``Tensor.unfold(dimension, size, step)``: x (..., L, ...) ->
    (..., n, ..., size) with n = (L - size) // step + 1 in place of L; element [..., i, ...,
    k] is x[..., i * step + k, ...]. A copy: the windows overlap where step < size."""

    name = "unfold_axis"
    save_inputs = False  # a copy: the gradient needs only L

    def check(self, x, *, axis, size, step):
        _check_windows(self.name, x.ndim, x.shape[axis] if x.ndim else 0, axis, size, step)

    def forward(self, ctx, xp, x, *, axis, size, step):
        ctx.length = x.shape[axis]
        count = (x.shape[axis] - size) // step + 1
        shape = x.shape[:axis] + (count,) + x.shape[axis + 1 :] + (size,)
        strides = list(x.strides) + [x.strides[axis]]
        strides[axis] *= step
        return xp.ascontiguousarray(strided_view(xp, x, shape, tuple(strides)))

    def infer(self, x, *, axis, size, step):
        _check_windows(self.name, x.ndim, x.shape[axis] if x.ndim else 0, axis, size, step)
        count = window_count(self.name, x.shape[axis], size, step)
        return x.with_shape((*x.shape[:axis], count, *x.shape[axis + 1 :], size))

    def backward(self, ctx, grad):
        return (UNFOLD_AXIS_ADJOINT(grad, length=ctx.length, **ctx.attrs),)

    def to_onnx(self, emit, inputs, output, attrs):
        """One Gather of every window's positions along the axis, whose (n, size) index puts
        the window's axis after n; a Transpose moves it last."""
        axis, size, step = attrs["axis"], attrs["size"], attrs["step"]
        shape = emit.shapes[inputs[0]]
        if not isinstance(shape[axis], int):
            raise BuildingAIError(
                f"[unfold_axis] exporting windows along dimension {axis} needs its size fixed, "
                f"got {shape[axis]!r}",
                help="give that dimension a fixed size in the TensorSpec",
            )
        count = (shape[axis] - size) // step + 1
        positions = np.arange(count)[:, None] * step + np.arange(size)[None, :]
        gathered = emit.node("Gather", [inputs[0], emit.constant(positions)], axis=axis)
        rank = len(shape) + 1
        order = [a for a in range(rank) if a != axis + 1] + [axis + 1]
        emit.node("Transpose", [gathered], output, perm=order)


class UnfoldAxisAdjoint(Op):
    """The gradient of ``unfold_axis``: windows grad (..., n, ..., size) added back into zeros
    (..., L, ...), L = ``length``, where overlapping windows share elements."""

    name = "unfold_axis_adjoint"
    save_inputs = False

    def forward(self, ctx, xp, grad, *, length, axis, size, step):
        count = grad.shape[axis]
        out = xp.zeros(grad.shape[:axis] + (length,) + grad.shape[axis + 1 : -1], grad.dtype)
        line, windows = xp.moveaxis(out, axis, -1), xp.moveaxis(grad, axis, -2)  # views
        if size <= count:  # one strided add per position in the window
            for k in range(size):
                line[..., k : k + step * (count - 1) + 1 : step] += windows[..., k]
        else:  # one add per window
            for i in range(count):
                line[..., i * step : i * step + size] += windows[..., i, :]
        return out

    def infer(self, grad, *, length, axis, size, step):
        return grad.with_shape((*grad.shape[:axis], length, *grad.shape[axis + 1 : -1]))

    def cost(self, grad, *, length, axis, size, step):
        out = self.infer(grad, length=length, axis=axis, size=size, step=step)
        return memory_cost((grad,), out, 1)  # one addition per window element

    def backward(self, ctx, upstream):
        attrs = {k: v for k, v in ctx.attrs.items() if k != "length"}
        return (UNFOLD_AXIS(upstream, **attrs),)


UNFOLD_AXIS, UNFOLD_AXIS_ADJOINT = UnfoldAxis(), UnfoldAxisAdjoint()
