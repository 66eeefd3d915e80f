"""Max-pooling primitives: ``max_pool2d`` and the two adjoints its gradients are made of.

``max_pool2d(x)`` takes the maximum over each (dilated, padded) window of x (N, C, H, W). Which
element won is described by ``choice`` (N, C, Ho, Wo): the offset ``i * kw + j`` inside the
window of its first maximum in row-major order, NaN counting as the maximum, as in PyTorch. The
gradient of max pooling is ``max_pool2d_scatter(grad, choice)``, which puts each output gradient
on its window's winner (adding where overlapping windows share one). The scatter's gradient is
``max_pool2d_gather(upstream, choice)``, which reads the winners, and the gather's gradient is
the scatter again, so derivatives of any order are these records.

All three work one kernel offset at a time: kh * kw whole-array passes over strided views of the
(padded) image, with no transposed copy of the windows and no advanced indexing. ``choice`` is
found only when a gradient is asked for, from the saved input and output.

Attributes (normalised by ``nn.functional``): ``kernel``, ``stride``, ``padding`` (per side),
``dilation`` as ``(h, w)`` int pairs, ``ceil_mode`` a bool; the scatter's ``input_size`` is the
spatial ``(H, W)`` of the image it produces.
"""

from __future__ import annotations

import numpy as np

from .abstract import DimExpr, SymbolicSizeError, bytes_of, memory_cost, simplify
from .base import Op
from .conv import floor_divide_size


def pool_output_size(
    size: int, kernel: int, stride: int, padding: int, dilation: int, ceil: bool
) -> int:
    """Output length along one axis, as PyTorch computes it: with ``ceil`` a last partial window
    counts, unless it would start in the right padding."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _infer_pool_size(size, kernel, stride, padding, dilation, ceil, axis_name: str):
    """``pool_output_size`` on a size that may be symbolic (see ``conv.floor_divide_size``). In
    ceil mode the last-window test must be decidable: it is when the symbol cancels out (the
    window start and the padded end grow together, as for stride 1)."""
    what = f"the pooled {axis_name} of input size {size!r} with stride {stride}"
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    if not ceil:
        return floor_divide_size("max_pool2d", span, stride, what) + 1
    if isinstance(span, DimExpr) and span.coefficient % stride:
        raise SymbolicSizeError(
            f"[max_pool2d] {what} in ceil mode: ceil(({span!r}) / {stride}) depends on the "
            "remainder of the symbolic size",
            help="give that dimension a fixed size in the TensorSpec, or use ceil_mode=False "
            "with a stride that divides its coefficient",
        )
    out = -floor_divide_size("max_pool2d", -span, stride, what) + 1
    overhang = simplify((out - 1) * stride - (size + padding))
    if isinstance(overhang, DimExpr):
        raise SymbolicSizeError(
            f"[max_pool2d] {what} in ceil mode: whether the last window starts in the padding "
            f"depends on the symbolic size ({overhang!r} >= 0?)",
            help="give that dimension a fixed size in the TensorSpec, or use ceil_mode=False",
        )
    return out - 1 if overhang >= 0 else out


def padded_size(size_hw, out_hw, kernel, stride, padding, dilation) -> tuple[int, int]:
    """The padded image's (H', W'): the left/top padding and the image, then on the right/bottom
    as far as the last window reaches (ceil mode may reach past the symmetric padding)."""
    return tuple(
        max(
            padding[a] + size_hw[a],
            (out_hw[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1,
        )
        for a in range(2)
    )


def window_offsets(kernel, stride, dilation, out_hw):
    """``(index, i, j, rows, cols)`` for every window offset: the slices of the padded image that
    hold element (i, j) of every window, an (Ho, Wo) strided view."""
    for i in range(kernel[0]):
        top = i * dilation[0]
        rows = slice(top, top + stride[0] * (out_hw[0] - 1) + 1, stride[0])
        for j in range(kernel[1]):
            left = j * dilation[1]
            cols = slice(left, left + stride[1] * (out_hw[1] - 1) + 1, stride[1])
            yield i * kernel[1] + j, i, j, rows, cols


def _pad(xp, x, padded_hw, padding, fill):
    """x (N, C, H, W) inside a ``fill``-valued (N, C, H', W') at offset ``padding``."""
    if tuple(padded_hw) == tuple(x.shape[2:]):
        return x
    padded = xp.full(x.shape[:2] + tuple(padded_hw), fill, dtype=x.dtype)
    ph, pw = padding
    padded[:, :, ph : ph + x.shape[2], pw : pw + x.shape[3]] = x
    return padded


def _lowest(xp, dtype):
    """The padding value of max pooling: below (or equal to) every element."""
    return -xp.inf if dtype.kind in "fV" else xp.iinfo(dtype).min


def _real(xp, size_hw, out_hw, i, j, stride, padding, dilation):
    """(Ho, Wo) bool: whether element (i, j) of each window lies in the image (not padding), or
    None when it always does."""
    masks = []
    for a, offset in enumerate((i, j)):
        position = xp.arange(out_hw[a]) * stride[a] + offset * dilation[a] - padding[a]
        masks.append((position >= 0) & (position < size_hw[a]))
    if bool(masks[0].all()) and bool(masks[1].all()):
        return None
    return masks[0][:, None] & masks[1][None, :]


def choice_dtype(xp, kernel):
    return xp.int8 if kernel[0] * kernel[1] <= 127 else xp.int32


def window_choice(xp, x, out, kernel, stride, padding, dilation):
    """(N, C, Ho, Wo): the offset ``i * kw + j`` of each window's first maximum, given x and the
    pooled ``out``. Padding never wins: a window whose real elements are all -inf picks its
    first real element, as PyTorch does."""
    out_hw = out.shape[2:]
    size_hw = x.shape[2:]
    padded = _pad(
        xp, x, padded_size(size_hw, out_hw, kernel, stride, padding, dilation), padding, 0
    )
    # NaN is the maximum (out holds it, and x == NaN is false): test for it only when present.
    has_nan = x.dtype.kind in "fV" and bool(xp.isnan(out).any())
    choice = xp.zeros(out.shape, dtype=choice_dtype(xp, kernel))
    found = None  # whether a window's maximum was seen at an earlier offset
    for index, i, j, rows, cols in window_offsets(kernel, stride, dilation, out_hw):
        view = padded[:, :, rows, cols]
        winner = view == out
        if has_nan:
            winner |= xp.isnan(view)
        real = _real(xp, size_hw, out_hw, i, j, stride, padding, dilation)
        if real is not None:
            winner &= real
        if found is None:
            found = winner  # offset 0: choice is already 0 there
            continue
        # The first maximum: add this offset where no earlier one won (a bool-times-int
        # product is cheaper than a masked assignment).
        first = winner & ~found
        choice += first * choice.dtype.type(index)
        found |= winner
    return choice


def pooled_indices(xp, choice, size_hw, kernel, stride, padding, dilation):
    """The flat positions ``h * W + w`` in x (N, C, H, W) of the chosen elements (int64)."""
    offset = choice.astype(xp.int64)
    ho, wo = choice.shape[2:]
    rows = xp.arange(ho).reshape(-1, 1) * stride[0] - padding[0] + offset // kernel[1] * dilation[0]
    cols = xp.arange(wo) * stride[1] - padding[1] + offset % kernel[1] * dilation[1]
    return rows * size_hw[1] + cols


# ----- the records --------------------------------------------------------------------------------


def window_maxima(xp, x, out_hw, kernel, stride, padding, dilation):
    """(N, C, Ho, Wo): the maximum over each window of x (N, C, H, W), padding counting as
    -inf; NaN is the maximum of any window that holds one."""
    geometry = padded_size(x.shape[2:], out_hw, kernel, stride, padding, dilation)
    padded = _pad(xp, x, geometry, padding, _lowest(xp, x.dtype))
    out = None
    for _, _, _, rows, cols in window_offsets(kernel, stride, dilation, out_hw):
        view = padded[:, :, rows, cols]
        if out is None:
            out = view.copy()
        else:
            xp.maximum(out, view, out=out)  # NaN propagates: it is the maximum
    return out


def scatter_to_windows(xp, grad, choice, input_size, kernel, stride, padding, dilation):
    """(N, C, H, W), (H, W) = ``input_size``: zeros with each value of grad (N, C, Ho, Wo) added
    at its window's chosen element (``choice``, an offset ``i * kw + j``); overlapping windows
    add, and a choice on the padding is dropped."""
    out_hw = grad.shape[2:]
    geometry = padded_size(input_size, out_hw, kernel, stride, padding, dilation)
    padded = xp.zeros(grad.shape[:2] + geometry, dtype=grad.dtype)
    for index, _, _, rows, cols in window_offsets(kernel, stride, dilation, out_hw):
        padded[:, :, rows, cols] += xp.where(choice == index, grad, 0)
    ph, pw = padding
    return padded[:, :, ph : ph + input_size[0], pw : pw + input_size[1]]


class MaxPool2d(Op):
    """The maximum over each window: x (N, C, H, W) -> (N, C, Ho, Wo), Ho from
    ``pool_output_size``. Padding counts as -inf. The gradient goes to each window's first
    maximum."""

    name = "max_pool2d"
    save_inputs, save_output = True, True

    def forward(self, ctx, xp, x, *, kernel, stride, padding, dilation, ceil_mode):
        size_hw = x.shape[2:]
        out_hw = tuple(
            pool_output_size(size_hw[a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode)
            for a in range(2)
        )
        return window_maxima(xp, x, out_hw, kernel, stride, padding, dilation)

    def infer(self, x, *, kernel, stride, padding, dilation, ceil_mode):
        out_hw = tuple(
            _infer_pool_size(
                x.shape[2 + a], kernel[a], stride[a], padding[a], dilation[a], ceil_mode, "HW"[a]
            )
            for a in range(2)
        )
        return x.with_shape((*x.shape[:2], *out_hw))

    def cost(self, x, *, kernel, stride, padding, dilation, ceil_mode):
        out = self.infer(
            x, kernel=kernel, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil_mode
        )
        return memory_cost((x,), out, kernel[0] * kernel[1])  # one comparison per window element

    def backward(self, ctx, grad):
        (x,) = ctx.inputs
        attrs = ctx.attrs
        geometry = {k: attrs[k] for k in ("kernel", "stride", "padding", "dilation")}
        choice = MAX_POOL2D_CHOICE(x, ctx.output, **geometry)  # integers: a constant of the graph
        return (max_pool2d_scatter(grad, choice, tuple(x.shape[2:]), **geometry),)

    def to_onnx(self, emit, inputs, output, attrs):
        (ph, pw), (kh, kw) = attrs["padding"], attrs["kernel"]
        (sh, sw), (dh, dw) = attrs["stride"], attrs["dilation"]
        emit.node(
            "MaxPool",
            inputs,
            output,
            kernel_shape=[int(kh), int(kw)],
            strides=[int(sh), int(sw)],
            pads=[int(ph), int(pw), int(ph), int(pw)],
            dilations=[int(dh), int(dw)],
            ceil_mode=int(bool(attrs["ceil_mode"])),
        )


class MaxPool2dChoice(Op):
    """Which element of each window won max pooling: x (N, C, H, W) and the pooled ``out``
    (N, C, Ho, Wo) -> ``choice`` (N, C, Ho, Wo), the offset ``i * kw + j`` of each window's first
    maximum (int8, or int32 for windows of more than 127 elements); see ``window_choice``.

    Not differentiable (an integer output). No ONNX mapping: it serves only the gradient of max
    pooling, and training graphs are not exported.
    """

    name = "max_pool2d_choice"
    differentiable = False

    def forward(self, ctx, xp, x, out, *, kernel, stride, padding, dilation):
        return window_choice(xp, x, out, kernel, stride, padding, dilation)

    def infer(self, x, out, *, kernel, stride, padding, dilation):
        return out.with_dtype(choice_dtype(np, kernel))

    def cost(self, x, out, *, kernel, stride, padding, dilation):
        # a comparison, a mask and an update per window element
        return memory_cost(
            (x, out),
            self.infer(x, out, kernel=kernel, stride=stride, padding=padding, dilation=dilation),
            3 * kernel[0] * kernel[1],
        )


class MaxPool2dScatter(Op):
    """The gradient of max pooling: grad (N, C, Ho, Wo) put on the chosen element of each window
    (``choice`` (N, C, Ho, Wo), an offset ``i * kw + j``) of a zero image (N, C, H, W),
    (H, W) = ``input_size``; overlapping windows add."""

    name = "max_pool2d_scatter"

    def forward(self, ctx, xp, grad, choice, *, input_size, kernel, stride, padding, dilation):
        return scatter_to_windows(xp, grad, choice, input_size, kernel, stride, padding, dilation)

    def infer(self, grad, choice, *, input_size, kernel, stride, padding, dilation):
        return grad.with_shape((*grad.shape[:2], *input_size))

    def cost(self, grad, choice, *, input_size, kernel, stride, padding, dilation):
        out = self.infer(
            grad,
            choice,
            input_size=input_size,
            kernel=kernel,
            stride=stride,
            padding=padding,
            dilation=dilation,
        )
        # every output gradient is added once to the zeroed image
        return grad.numel, bytes_of(grad, choice), out.nbytes

    def backward(self, ctx, upstream):
        _, choice = ctx.inputs
        attrs = dict(ctx.attrs)
        del attrs["input_size"]
        return max_pool2d_gather(upstream, choice, **attrs), None


class MaxPool2dGather(Op):
    """The chosen element of each window: x (N, C, H, W), ``choice`` (N, C, Ho, Wo) (an offset
    ``i * kw + j``) -> (N, C, Ho, Wo)."""

    name = "max_pool2d_gather"

    def forward(self, ctx, xp, x, choice, *, kernel, stride, padding, dilation):
        out_hw = choice.shape[2:]
        padded = _pad(
            xp, x, padded_size(x.shape[2:], out_hw, kernel, stride, padding, dilation), padding, 0
        )
        out = xp.empty(x.shape[:2] + tuple(out_hw), dtype=x.dtype)
        for index, _, _, rows, cols in window_offsets(kernel, stride, dilation, out_hw):
            view = padded[:, :, rows, cols]
            if index == 0:
                out[...] = view
            else:
                xp.copyto(out, view, where=choice == index)
        return out

    def infer(self, x, choice, *, kernel, stride, padding, dilation):
        return x.with_shape((*x.shape[:2], *choice.shape[2:]))

    def cost(self, x, choice, *, kernel, stride, padding, dilation):
        out = self.infer(
            x, choice, kernel=kernel, stride=stride, padding=padding, dilation=dilation
        )
        return memory_cost((x, choice), out, kernel[0] * kernel[1])  # a select per offset

    def backward(self, ctx, upstream):
        x, choice = ctx.inputs
        attrs = ctx.attrs
        return max_pool2d_scatter(upstream, choice, tuple(x.shape[2:]), **attrs), None


MAX_POOL2D, MAX_POOL2D_CHOICE = MaxPool2d(), MaxPool2dChoice()
MAX_POOL2D_SCATTER, MAX_POOL2D_GATHER = MaxPool2dScatter(), MaxPool2dGather()


# The backward rules call the records through dispatch, so that they are recorded when a
# higher-order graph is being built.
def max_pool2d_scatter(grad, choice, input_size, *, kernel, stride, padding, dilation):
    return MAX_POOL2D_SCATTER(
        grad,
        choice,
        input_size=tuple(input_size),
        kernel=kernel,
        stride=stride,
        padding=padding,
        dilation=dilation,
    )


def max_pool2d_gather(x, choice, *, kernel, stride, padding, dilation):
    return MAX_POOL2D_GATHER(
        x, choice, kernel=kernel, stride=stride, padding=padding, dilation=dilation
    )
